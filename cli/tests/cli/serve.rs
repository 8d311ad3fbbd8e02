//! `tracetree serve --stdio`: whole sessions driven by clients that are not
//! ours (Python's standard library, Node's `vscode-jsonrpc`, a JDK-only
//! Java client), and hostile clients: malformed messages, unknown methods,
//! wrong parameters, closed traces, stale handles, thousands of requests
//! in flight, cancellation, a client that disconnects mid-search, a file
//! cut short while open.

use std::collections::BTreeMap;
use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use lsp_server::{Message, Notification, Request, RequestId, Response};
use serde_json::{Value, json};
use tracetree::generate::Shape;
use tracetree_testkit::{files, skip};

use crate::commands::bundled;

/// How long a test waits for an answer before it fails (never asserted
/// as a speed: a stuck server fails the test instead of hanging it).
const PATIENCE: Duration = Duration::from_secs(120);

/// A server process and the messages it wrote.
struct Server {
    child: Child,
    input: Option<ChildStdin>,
    /// Each message's JSON (the reader of `lsp-server` refuses a
    /// response with `"id": null`, which a malformed message gets).
    messages: Receiver<Value>,
    next_id: i32,
}

impl Server {
    /// `tracetree serve --stdio ARGS`, with its cache in `cache`.
    fn start(cache: &Path, args: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_tracetree"))
            .args(["serve", "--stdio"])
            .args(args)
            .env("TRACETREE_CACHE_DIR", cache)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let output = child.stdout.take().unwrap();
        let (sender, messages) = channel();
        std::thread::spawn(move || {
            let mut output = BufReader::new(output);
            while let Some(message) = read_frame(&mut output) {
                if sender.send(message).is_err() {
                    return;
                }
            }
        });
        Server {
            input: child.stdin.take(),
            child,
            messages,
            next_id: 0,
        }
    }

    /// A started server, initialized.
    fn initialized(cache: &Path, args: &[&str]) -> Server {
        let mut server = Server::start(cache, args);
        let init = server.call("initialize", json!({"capabilities": {}}));
        assert_eq!(init["serverInfo"]["name"], "tracetree");
        server
    }

    fn write_raw(&mut self, bytes: &[u8]) {
        let input = self.input.as_mut().unwrap();
        input.write_all(bytes).unwrap();
        input.flush().unwrap();
    }

    fn send(&mut self, message: Message) {
        message.write(self.input.as_mut().unwrap()).unwrap();
    }

    /// Sends a request; returns its id.
    fn start_request(&mut self, method: &str, params: Value) -> RequestId {
        self.next_id += 1;
        let id = RequestId::from(self.next_id);
        self.send(Message::Request(Request::new(
            id.clone(),
            method.into(),
            params,
        )));
        id
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(Message::Notification(Notification::new(
            method.into(),
            params,
        )));
    }

    /// The next message, as JSON.
    fn raw(&mut self) -> Value {
        self.messages.recv_timeout(PATIENCE).expect("a message")
    }

    /// The next response (notifications before it are kept in `seen`).
    fn response(&mut self, seen: &mut Vec<Notification>) -> Response {
        loop {
            let message = serde_json::from_value(self.raw()).expect("a JSON-RPC message");
            match message {
                Message::Response(response) => return response,
                Message::Notification(notification) => seen.push(notification),
                Message::Request(request) => panic!("the server asked {request:?}"),
            }
        }
    }

    /// The answer to the request `id`.
    fn answer(&mut self, id: &RequestId) -> Result<Value, lsp_server::ResponseError> {
        let response = self.response(&mut Vec::new());
        assert_eq!(&response.id, id, "answers come in order here");
        response.response_result
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.start_request(method, params);
        self.answer(&id)
            .unwrap_or_else(|e| panic!("{method}: {e:?}"))
    }

    /// The error `method` gets.
    fn error(&mut self, method: &str, params: Value) -> lsp_server::ResponseError {
        let id = self.start_request(method, params);
        self.answer(&id).expect_err(method)
    }

    /// Shuts down and exits; the exit status.
    fn finish(mut self) -> std::process::ExitStatus {
        assert_eq!(self.call("shutdown", Value::Null), Value::Null);
        self.notify("exit", Value::Null);
        self.wait()
    }

    fn wait(mut self) -> std::process::ExitStatus {
        drop(self.input.take());
        for _ in 0..1200 {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        panic!("the server did not exit");
    }
}

/// The JSON of the next message `output` frames, `None` at its end.
fn read_frame(output: &mut impl std::io::BufRead) -> Option<Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if output.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(value) = line.strip_prefix("Content-Length: ") {
            length = value.parse::<usize>().ok();
        }
    }
    let mut body = vec![0; length?];
    output.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

/// A framed message with any body.
fn framed(body: &str) -> Vec<u8> {
    format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

/// A trace big enough that a search over its lines takes a while.
fn big_trace(dir: &Path) -> PathBuf {
    files::generated(dir, Shape::Mixed, 2, 24 << 20, None)
}

/// A server with [`big_trace`] (made in `dir`) open, and the trace's id.
fn serving_big_trace(dir: &Path, cache: &Path) -> (Server, String) {
    let trace = big_trace(dir);
    let mut server = Server::initialized(cache, &[]);
    let opened = server.call(
        "trace/open",
        json!({"path": trace, "options": {"countTracepoints": false}}),
    );
    let t = opened["trace"].as_str().unwrap().to_string();
    (server, t)
}

#[test]
fn a_python_client_drives_a_whole_session() {
    if Command::new("python3").arg("--version").output().is_err() {
        skip::cannot_run("no python3 on PATH");
        return;
    }
    let client = files::repository().join("cli/tests/clients/python/session.py");
    run_client("python3", &[client.as_os_str()]);
}

/// Runs `program SCRIPT TRACETREE TRACE MORE...` (`args` is `SCRIPT,
/// MORE...`) on each bundled trace; it must print `ok` alone.
fn run_client(program: &str, args: &[&std::ffi::OsStr]) {
    for name in ["multi-thread.trace", "all-types.trace"] {
        let cache = tempfile::tempdir().unwrap();
        // The script, the server and the trace, then the other arguments.
        let (before, after) = args.split_at(1.min(args.len()));
        let out = Command::new(program)
            .args(before)
            .arg(env!("CARGO_BIN_EXE_tracetree"))
            .arg(files::testdata(name))
            .args(after)
            .env("TRACETREE_CACHE_DIR", cache.path())
            .output()
            .unwrap();
        assert!(
            out.status.success() && out.stdout == b"ok\n",
            "{program} on {name}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn malformed_messages_are_answered_and_the_session_goes_on() {
    let cache = tempfile::tempdir().unwrap();
    let mut server = Server::start(cache.path(), &[]);
    // Before initialize.
    let early = server.error("trace/open", json!({"path": "x"}));
    assert_eq!(early.code, -32002, "{early:?}");
    // Not JSON: answered with id null (which lsp-server's reader refuses,
    // so the raw text is read here).
    server.write_raw(&framed("{\"jsonrpc\": \"2.0\", \"id\": 1, \"meth"));
    let parse_error = server.raw();
    assert_eq!(parse_error["id"], Value::Null, "{parse_error}");
    assert_eq!(parse_error["error"]["code"], -32700, "{parse_error}");
    // JSON, but no request: answered with its id.
    server.write_raw(&framed(r#"{"jsonrpc":"2.0","id":77,"params":[]}"#));
    let mut seen = Vec::new();
    let invalid = server.response(&mut seen);
    assert_eq!(invalid.id, RequestId::from(77));
    assert_eq!(invalid.response_result.unwrap_err().code, -32600);
    let init = server.call("initialize", json!({}));
    assert!(init["limits"]["maxMessageBytes"].as_u64().unwrap() > 0);
    let unknown = server.error("trace/frobnicate", json!({}));
    assert_eq!(unknown.code, -32601);
    assert!(unknown.message.contains("trace/frobnicate"), "{unknown:?}");
    assert_eq!(server.finish().code(), Some(0));
}

#[test]
fn a_message_over_the_limit_ends_the_session_cleanly() {
    let cache = tempfile::tempdir().unwrap();
    let mut server = Server::initialized(cache.path(), &[]);
    server.write_raw(b"Content-Length: 99999999999\r\n\r\n{}");
    assert_eq!(server.wait().code(), Some(0));
}

#[test]
fn wrong_parameters_name_their_field() {
    let (_dir, trace) = bundled();
    let cache = tempfile::tempdir().unwrap();
    let mut server = Server::initialized(cache.path(), &[]);
    let opened = server.call("trace/open", json!({"path": trace}));
    let t = opened["trace"].as_str().unwrap().to_string();
    for (method, params, field) in [
        (
            "trace/roots",
            json!({"trace": t, "thread": "main", "count": 1}),
            "thread",
        ),
        ("trace/roots", json!({"trace": t, "thread": 0}), "count"),
        (
            "trace/children",
            json!({"trace": t, "node": 5, "count": 1}),
            "node",
        ),
        (
            "trace/children",
            json!({"trace": t, "node": "x:y", "count": 1}),
            "node",
        ),
        (
            "trace/roots",
            json!({"trace": t, "thread": 0, "count": 1_000_000}),
            "count",
        ),
        (
            "trace/search",
            json!({"trace": t, "pattern": "a", "kinds": ["call"]}),
            "kinds[0]",
        ),
        (
            "trace/open",
            json!({"path": trace, "options": {"strict": "yes"}}),
            "options.strict",
        ),
        (
            "trace/open",
            json!({"path": trace, "options": {"from": "csv"}}),
            "options.from",
        ),
    ] {
        let error = server.error(method, params.clone());
        assert_eq!(error.code, -32602, "{method} {params}: {error:?}");
        assert_eq!(error.data.as_ref().unwrap()["field"], field, "{error:?}");
        assert!(error.message.contains(field), "{error:?}");
    }
    // `from` reads a file as the format it names: a v22 trace read as
    // Blinky text is no Blinky line, a damaged import.
    let as_blinky = server.call(
        "trace/open",
        json!({"path": trace, "options": {"from": "blinky"}}),
    );
    assert_eq!(as_blinky["status"], "damaged", "{as_blinky}");
    assert_eq!(as_blinky["threads"], json!([]), "{as_blinky}");
    let warning = as_blinky["warnings"][0].as_str().unwrap();
    assert!(warning.contains("damaged tail"), "{as_blinky}");
    let not_a_trace = server.error("trace/open", json!({"path": "/no/such/file.trace"}));
    assert_eq!(not_a_trace.code, -32014, "{not_a_trace:?}");
    assert!(not_a_trace.message.contains("/no/such/file.trace"));
    assert_eq!(server.finish().code(), Some(0));
}

#[test]
fn closed_traces_and_stale_handles_are_errors_naming_them() {
    let (_dir, trace) = bundled();
    let cache = tempfile::tempdir().unwrap();
    let mut server = Server::initialized(cache.path(), &[]);
    let t = server.call("trace/open", json!({"path": trace}))["trace"]
        .as_str()
        .unwrap()
        .to_string();
    let root = server.call("trace/roots", json!({"trace": t, "thread": 0, "count": 1}));
    let handle = root["nodes"][0]["handle"].as_str().unwrap().to_string();
    // A handle one byte into the node names no tracepoint start.
    let (thread, offset) = handle.split_once(':').unwrap();
    let stale = format!("{thread}:{}", offset.parse::<u64>().unwrap() + 1);
    let error = server.error(
        "trace/children",
        json!({"trace": t, "node": stale, "count": 1}),
    );
    assert_eq!(error.code, -32011, "{error:?}");
    assert!(
        error.message.contains(&t) && error.message.contains(&stale),
        "{error:?}"
    );
    let far = server.error("trace/node", json!({"trace": t, "node": "0:99999999"}));
    assert_eq!(far.code, -32011, "{far:?}");
    let no_event = server.error(
        "trace/nodeByEvent",
        json!({"trace": t, "thread": 0, "eventId": 987654}),
    );
    assert_eq!(no_event.code, -32011, "{no_event:?}");
    server.call("trace/close", json!({"trace": t}));
    let closed = server.error(
        "trace/children",
        json!({"trace": t, "node": handle, "count": 1}),
    );
    assert_eq!(closed.code, -32010, "{closed:?}");
    assert!(closed.message.contains(&t), "{closed:?}");
    assert_eq!(
        server.error("trace/close", json!({"trace": t})).code,
        -32010
    );
    // `exit` without `shutdown`: status 1, as LSP says.
    server.notify("exit", Value::Null);
    assert_eq!(server.wait().code(), Some(1));
}

#[test]
fn ten_thousand_requests_in_flight_each_get_one_answer() {
    let (_dir, trace) = bundled();
    let cache = tempfile::tempdir().unwrap();
    let mut server = Server::initialized(cache.path(), &[]);
    let again = server.error("initialize", json!({}));
    assert_eq!(again.code, -32600, "{again:?}");
    let t = server.call("trace/open", json!({"path": trace}))["trace"]
        .as_str()
        .unwrap()
        .to_string();
    // Requests written from one thread while answers are read here.
    let mut input = server.input.take().unwrap();
    let first = server.next_id + 1;
    let writer = std::thread::spawn(move || {
        for id in first..first + 10_000 {
            let params = json!({"trace": t, "thread": id % 4, "count": 2});
            let request = Request::new(id.into(), "trace/roots".into(), params);
            Message::Request(request).write(&mut input).unwrap();
        }
        input
    });
    let mut answered = std::collections::HashSet::new();
    let (mut pages, mut refused) = (0, 0);
    while answered.len() < 10_000 {
        let response = server.response(&mut Vec::new());
        assert!(
            answered.insert(response.id.clone()),
            "{:?} answered twice",
            response.id
        );
        match response.response_result {
            Ok(page) => {
                assert!(!page["nodes"].as_array().unwrap().is_empty());
                pages += 1;
            }
            Err(error) => {
                assert_eq!(error.code, -32015, "{error:?}");
                refused += 1;
            }
        }
    }
    assert_eq!(pages + refused, 10_000);
    assert!(pages > 0);
    server.input = Some(writer.join().unwrap());
    server.next_id = first + 10_000;
    assert_eq!(server.finish().code(), Some(0));
}

#[test]
fn twenty_traces_open_at_once_and_the_limit_is_an_error() {
    let (_dir, trace) = bundled();
    let cache = tempfile::tempdir().unwrap();
    let mut server = Server::start(cache.path(), &[]);
    let init = server.call("initialize", json!({}));
    let most = init["limits"]["maxOpenTraces"].as_u64().unwrap();
    assert!(most >= 20);
    let mut ids = Vec::new();
    for _ in 0..most {
        let opened = server.call(
            "trace/open",
            json!({"path": trace, "options": {"countTracepoints": false}}),
        );
        ids.push(opened["trace"].as_str().unwrap().to_string());
    }
    let over = server.error("trace/open", json!({"path": trace}));
    assert_eq!(over.code, -32015, "{over:?}");
    for t in &ids {
        let roots = server.call("trace/roots", json!({"trace": t, "thread": 1, "count": 5}));
        assert_eq!(roots["total"], 1);
    }
    server.call("trace/close", json!({"trace": ids[0]}));
    server.call("trace/open", json!({"path": trace}));
    assert_eq!(server.finish().code(), Some(0));
}

#[test]
fn a_cancelled_search_answers_request_cancelled_while_pages_go_on() {
    let (dir, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (mut server, t) = serving_big_trace(dir.path(), cache.path());
    // Searching every printed line for text no line holds: a whole walk.
    let search = server.start_request(
        "trace/search",
        json!({"trace": t, "pattern": "no line holds this", "text": true}),
    );
    // A page is served while the search runs.
    let page = server.start_request("trace/roots", json!({"trace": t, "thread": 0, "count": 10}));
    let mut seen = Vec::new();
    let first = server.response(&mut seen);
    assert_eq!(first.id, page, "the page waited for the search");
    server.notify("$/cancelRequest", json!({"id": search}));
    let cancelled = server.response(&mut seen);
    assert_eq!(cancelled.id, search);
    assert_eq!(cancelled.response_result.unwrap_err().code, -32800);
    assert_eq!(server.finish().code(), Some(0));
}

/// An open that rebuilds the lookups of a trace without its index stops
/// when cancelled: answered -32800, nothing left in the cache, the server
/// still serving (the rebuild's stop itself: `a_stop_ends_an_open_that_
/// rebuilds_the_lookups` in the library's tests).
#[test]
fn a_cancelled_open_stops_its_rebuild() {
    let dir = tempfile::tempdir().unwrap();
    let trace = files::generated(dir.path(), Shape::Mixed, 2, 256 << 20, None);
    std::fs::remove_file(tracetree::LazyTraceReader::index_path(&trace)).unwrap();
    let cache = tempfile::tempdir().unwrap();
    let mut server = Server::initialized(cache.path(), &[]);
    let open = server.start_request("trace/open", json!({"path": trace}));
    // Under way (a rebuild of 256 MB, then a count of its tracepoints).
    std::thread::sleep(Duration::from_millis(30));
    let cancelled_at = std::time::Instant::now();
    server.notify("$/cancelRequest", json!({"id": open}));
    let error = server.answer(&open).expect_err("a cancelled open");
    // Said, not asserted: how long the stop took.
    eprintln!(
        "the open answered {:?} after its cancel",
        cancelled_at.elapsed()
    );
    assert_eq!(error.code, -32800, "{}", error.message);
    let lookups = cache.path().join("lookups");
    let left = std::fs::read_dir(&lookups).map_or(0, |files| files.count());
    assert_eq!(left, 0, "a cancelled open writes no sidecar");
    let opened = server.call("trace/open", json!({"path": trace}));
    assert!(opened["tracepoints"].as_u64().unwrap() > 0);
    assert_eq!(server.finish().code(), Some(0));
}

#[test]
fn a_client_gone_mid_search_leaves_the_server_exiting_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let trace = big_trace(dir.path());
    let before = crate::listing(dir.path());
    let cache = tempfile::tempdir().unwrap();
    let mut server = Server::initialized(cache.path(), &[]);
    let opened = server.call(
        "trace/open",
        json!({"path": trace, "options": {"countTracepoints": false, "noCache": true}}),
    );
    let t = opened["trace"].as_str().unwrap().to_string();
    server.start_request(
        "trace/search",
        json!({"trace": t, "pattern": "no line holds this", "text": true}),
    );
    // The client goes: its end of both pipes closes.
    let status = server.wait();
    assert_eq!(status.code(), Some(0));
    assert_eq!(crate::listing(dir.path()), before, "left beside the trace");
}

#[test]
fn a_file_cut_short_while_open_gives_errors_not_a_crash() {
    let (dir, trace) = bundled();
    let cache = tempfile::tempdir().unwrap();
    let mut server = Server::initialized(cache.path(), &[]);
    let opened = server.call(
        "trace/open",
        json!({"path": trace, "options": {"noMmap": true}}),
    );
    let t = opened["trace"].as_str().unwrap().to_string();
    let mut handles = Vec::new();
    for thread in opened["threads"].as_array().unwrap() {
        let roots = server.call(
            "trace/roots",
            json!({"trace": t, "thread": thread["id"], "count": 10}),
        );
        for node in roots["nodes"].as_array().unwrap() {
            handles.push(node["handle"].as_str().unwrap().to_string());
        }
    }
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&trace)
        .unwrap();
    file.set_len(64).unwrap();
    let mut errors = 0;
    for handle in &handles {
        for method in ["trace/children", "trace/node"] {
            let id =
                server.start_request(method, json!({"trace": t, "node": handle, "count": 100}));
            if let Err(error) = server.answer(&id) {
                assert!(
                    [-32011, -32012, -32014].contains(&error.code),
                    "{method}: {error:?}"
                );
                errors += 1;
            }
        }
    }
    // What was read before may still be served from the reader's cache;
    // what was not is an error. Either way the server answers on.
    let _ = errors;
    let search = server.start_request(
        "trace/search",
        json!({"trace": t, "pattern": "run", "text": true}),
    );
    let _ = server.answer(&search);
    // Opened again, it is what a crashed recorder leaves: damaged.
    let again = server.call("trace/open", json!({"path": trace}));
    assert_eq!(again["status"], "damaged", "{again}");
    assert!(!again["warnings"].as_array().unwrap().is_empty(), "{again}");
    assert_eq!(server.finish().code(), Some(0));
    drop(dir);
}

#[test]
fn the_checked_in_schema_is_current() {
    let (ok, schema, error) = crate::tracetree(&["serve", "--print-schema"]);
    assert!(ok, "{error}");
    let path = files::repository().join("docs/protocol.schema.json");
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        schema == checked_in,
        "docs/protocol.schema.json is not what the server's types give: refresh it with\n  \
         cargo run --release -p tracetree-cli -- serve --print-schema > docs/protocol.schema.json"
    );
    let schema: Value = serde_json::from_str(&schema).unwrap();
    // Every method the server lists has its messages in the schema.
    let cache = tempfile::tempdir().unwrap();
    let mut server = Server::start(cache.path(), &[]);
    let init = server.call("initialize", json!({}));
    for method in init["capabilities"]["methods"].as_array().unwrap() {
        let method = method.as_str().unwrap();
        assert!(schema["x-methods"][method].is_object(), "{method}");
    }
    assert_eq!(server.finish().code(), Some(0));
}

#[test]
fn a_node_client_on_vscode_jsonrpc_drives_a_whole_session() {
    let client = files::repository().join("cli/tests/clients/node");
    if Command::new("node").arg("--version").output().is_err() {
        skip::cannot_run("no node on PATH (Node.js)");
        return;
    }
    if !client.join("node_modules/vscode-jsonrpc").is_dir() {
        skip::cannot_run("vscode-jsonrpc is not installed: run `npm ci` in cli/tests/clients/node");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let big = big_trace(dir.path());
    let script = client.join("session.js");
    run_client("node", &[script.as_os_str(), big.as_os_str()]);
}

#[test]
fn the_java_example_client_drives_a_session() {
    if Command::new("javac").arg("-version").output().is_err() {
        skip::cannot_run("no JDK (javac) on PATH");
        return;
    }
    let classes = tempfile::tempdir().unwrap();
    let source = files::repository().join("examples/java/TraceClient.java");
    let compiled = Command::new("javac")
        .arg("-d")
        .arg(classes.path())
        .arg(&source)
        .output()
        .unwrap();
    assert!(
        compiled.status.success(),
        "{}",
        String::from_utf8_lossy(&compiled.stderr)
    );
    let (_dir, trace) = bundled();
    let cache = tempfile::tempdir().unwrap();
    let out = Command::new("java")
        .arg("-cp")
        .arg(classes.path())
        .arg("TraceClient")
        .arg(env!("CARGO_BIN_EXE_tracetree"))
        .arg(&trace)
        .env("TRACETREE_CACHE_DIR", cache.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.ends_with("ok\n"),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Each thread's first line is print's first line of that thread.
    let (_, printed, _) = crate::tracetree(&["print", "--verbose", &trace]);
    let firsts: Vec<&str> = printed
        .lines()
        .zip(printed.lines().skip(1))
        .filter(|(header, _)| header.starts_with("# Thread "))
        .map(|(_, first)| first)
        .collect();
    let shown: Vec<&str> = stdout
        .lines()
        .filter(|line| line.starts_with("thread "))
        .map(|line| {
            line.split_once(": ")
                .unwrap()
                .1
                .rsplit_once(" (")
                .unwrap()
                .0
        })
        .collect();
    assert_eq!(shown, firsts);
    let (_, hits, _) = crate::tracetree(&["search", &trace, "start", "--json"]);
    assert!(
        stdout.contains(&format!("hits for start: {}\n", hits.lines().count())),
        "{stdout}"
    );
}

#[test]
fn a_followed_trace_tells_its_growth_and_handles_carry_over() {
    use crate::view::{index_written, multi_thread_in_small_blocks};

    let dir = tempfile::tempdir().unwrap();
    let (data, index) = multi_thread_in_small_blocks();
    let trace = dir.path().join("growing.trace");
    let idx = tracetree::LazyTraceReader::index_path(&trace);
    let cache = tempfile::tempdir().unwrap();
    let mut server = Server::initialized(cache.path(), &[]);
    // The first cut whose view shows thread 0's root with some of its 8
    // children: the call is not finished yet.
    let (cut, t, root, shown) = (1..20)
        .find_map(|step| {
            let cut = data.len() * step / 20;
            std::fs::write(&trace, &data[..cut]).unwrap();
            std::fs::write(&idx, &index[..index_written(&index, cut)]).unwrap();
            let id = server.start_request(
                "trace/open",
                json!({"path": trace, "options": {"growing": true}}),
            );
            let opened = server.answer(&id).ok()?;
            assert_eq!(opened["status"], "growing");
            let t = opened["trace"].as_str()?.to_string();
            let id =
                server.start_request("trace/roots", json!({"trace": t, "thread": 0, "count": 1}));
            let roots = server.answer(&id).ok()?;
            let root = roots["nodes"][0]["handle"].as_str()?.to_string();
            let id = server.start_request(
                "trace/children",
                json!({"trace": t, "node": root, "count": 100}),
            );
            let shown = server.answer(&id).ok()?["nodes"].as_array()?.len();
            (shown > 0 && shown < 8).then_some((cut, t, root, shown))
        })
        .expect("a cut inside the first thread's root call");
    let not_growing = server.call(
        "trace/open",
        json!({"path": files::testdata("multi-thread.trace")}),
    );
    let refused = server.error("trace/follow", json!({"trace": not_growing["trace"]}));
    assert_eq!(refused.code, -32602, "{refused:?}");
    assert_eq!(
        server.call("trace/follow", json!({"trace": t})),
        Value::Null
    );
    // The recorder finishes: the rest of both files lands, appended.
    let append = |path: &Path, bytes: &[u8]| {
        let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
        file.write_all(bytes).unwrap();
    };
    append(&trace, &data[cut..]);
    append(&idx, &index[index_written(&index, cut)..]);
    let grown = loop {
        let message = server.raw();
        if message["method"] == "trace/grown" {
            break message["params"].clone();
        }
    };
    assert_eq!(grown["trace"], t.as_str(), "{grown}");
    assert_eq!(grown["threads"].as_array().unwrap().len(), 4, "{grown}");
    let children = server.call(
        "trace/children",
        json!({"trace": t, "node": root, "count": 100}),
    );
    let now = children["nodes"].as_array().unwrap().len();
    assert!(now == 8 && now > shown, "{children}");
    server.call("trace/close", json!({"trace": t}));
    assert_eq!(server.finish().code(), Some(0));
}

#[test]
fn searches_and_finds_keep_the_changes_of_a_diff() {
    let dir = tempfile::tempdir().unwrap();
    let pair = tracetree_testkit::diffs::diff_pair(dir.path(), 60_000, 2, 0.03);
    let cache = tempfile::tempdir().unwrap();
    let mut server = Server::initialized(cache.path(), &[]);
    let open = |server: &mut Server, path: &Path| {
        server.call("trace/open", json!({"path": path}))["trace"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let t = open(&mut server, &pair.diff);
    let all = json!(["added", "removed", "edited"]);
    let found = server.call(
        "trace/search",
        json!({"trace": t, "diff": all, "max": 100000}),
    );
    let hits = found["hits"].as_array().unwrap();
    let summed: u64 = pair
        .summary
        .threads
        .iter()
        .map(|t| t.added + t.removed + 2 * t.edited)
        .sum();
    assert_eq!(found["total"], summed);
    assert_eq!(hits.len() as u64, summed);
    let added = server.call("trace/search", json!({"trace": t, "diff": ["added"]}));
    let texts = added["hits"].as_array().unwrap();
    assert!(!texts.is_empty());
    assert!(
        texts
            .iter()
            .all(|h| h["text"].as_str().unwrap().starts_with("+ "))
    );
    // findNext and findPrevious with the same filter step through the
    // changes of a thread, as a page's next and previous change do.
    let thread = hits[0]["thread"].as_i64().unwrap();
    let in_thread: Vec<&Value> = hits.iter().filter(|h| h["thread"] == thread).collect();
    let mut next = server.call(
        "trace/findNext",
        json!({"trace": t, "thread": thread, "diff": all}),
    );
    let mut stepped = Vec::new();
    while let Some(hit) = next["hit"].as_object() {
        stepped.push(hit["eventId"].clone());
        let from = hit["handle"].clone();
        next = server.call(
            "trace/findNext",
            json!({"trace": t, "from": from, "diff": all}),
        );
    }
    let expected: Vec<Value> = in_thread.iter().map(|h| h["eventId"].clone()).collect();
    assert_eq!(stepped, expected);
    let last = in_thread.last().unwrap()["handle"].clone();
    let previous = server.call(
        "trace/findPrevious",
        json!({"trace": t, "from": last, "diff": all}),
    );
    assert_eq!(previous["hit"]["eventId"], expected[expected.len() - 2]);
    // From a thread's end, findPrevious finds its last change.
    let from_end = server.call(
        "trace/findPrevious",
        json!({"trace": t, "thread": thread, "diff": all}),
    );
    assert_eq!(from_end["hit"]["eventId"], expected[expected.len() - 1]);
    // A change that is not one, and a plain trace, are errors.
    let wrong = server.error("trace/search", json!({"trace": t, "diff": ["moved"]}));
    assert_eq!(wrong.code, -32602, "{wrong:?}");
    assert!(wrong.message.contains("diff"), "{wrong:?}");
    let plain = open(&mut server, &pair.left);
    let refused = server.error("trace/search", json!({"trace": plain, "diff": ["added"]}));
    assert!(refused.message.contains("not a diff"), "{refused:?}");
    assert!(server.finish().success());
}

#[test]
fn a_diff_node_names_its_counterparts_in_the_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let pair = tracetree_testkit::diffs::diff_pair(dir.path(), 60_000, 2, 0.03);
    let cache = tempfile::tempdir().unwrap();
    let mut server = Server::initialized(cache.path(), &[]);
    let mut open = |path: &Path| {
        let opened = server.call("trace/open", json!({"path": path}));
        let threads: Vec<i64> = opened["threads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_i64().unwrap())
            .collect();
        (opened["trace"].as_str().unwrap().to_string(), threads)
    };
    let (t, _) = open(&pair.diff);
    let (left, left_threads) = open(&pair.left);
    let (right, right_threads) = open(&pair.right);
    let changes = server.call(
        "trace/search",
        json!({"trace": t, "diff": ["added", "removed", "edited"], "max": 100000}),
    );
    let mut seen = std::collections::BTreeSet::new();
    for hit in changes["hits"].as_array().unwrap() {
        let node = server.call("trace/node", json!({"trace": t, "node": hit["handle"]}));
        let status = node["diffStatus"].as_str().unwrap().to_string();
        let origin = &node["origin"];
        let sides = [
            ("left", &left, &left_threads),
            ("right", &right, &right_threads),
        ];
        for (side, input, threads) in sides {
            let expected = match status.as_str() {
                "added" => side == "right",
                "removed" => side == "left",
                _ => true,
            };
            assert_eq!(
                origin[side].is_object(),
                expected,
                "{status} {side}: {node}"
            );
            if !expected || !seen.insert((status.clone(), side)) {
                continue;
            }
            // The counterpart is the same tracepoint, but for the marker.
            let at = &origin[side];
            let thread = threads[at["threadIndex"].as_u64().unwrap() as usize];
            let found = server.call(
                "trace/nodeByEvent",
                json!({"trace": input, "thread": thread, "eventId": at["eventId"]}),
            );
            let text = found["text"].as_str().unwrap();
            // An edit's side shows its own input's line; the other differs.
            let edited = status.starts_with("edited");
            if !edited || (status == "edited_old") == (side == "left") {
                assert_eq!(
                    &node["text"].as_str().unwrap()[2..],
                    text,
                    "{status} {side}"
                );
            }
        }
    }
    assert!(
        seen.len() >= 6,
        "changes of every kind on both sides: {seen:?}"
    );
    let plain = server.call(
        "trace/roots",
        json!({"trace": left, "thread": left_threads[0], "count": 1}),
    );
    let node = server.call(
        "trace/node",
        json!({"trace": left, "node": plain["nodes"][0]["handle"]}),
    );
    assert!(node.get("origin").is_none(), "{node}");
    assert!(server.finish().success());
}

/// Frame paths (names, outermost first) → (total, self), counted over
/// `tracetree dump`'s rows of `thread` (all threads under `all` when
/// `None`), as a flame graph weighs them: each tracepoint 1, under the
/// calls and loops around it.
fn dump_widths(
    cache: &Path,
    trace: &Path,
    opened: &Value,
    thread: Option<i64>,
) -> BTreeMap<Vec<String>, (u64, u64)> {
    let (ok, dump, error) = crate::tracetree_cached(
        cache,
        &["dump", trace.to_str().unwrap(), "--format", "jsonl"],
    );
    assert!(ok, "{error}");
    // Threads are named as `trace/open` lists them.
    let names: BTreeMap<i64, String> = opened["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let id = t["id"].as_i64().unwrap();
            let name = match t["name"].as_str() {
                Some(name) if !name.is_empty() => name.to_string(),
                _ => format!("thread {id}"),
            };
            (id, name)
        })
        .collect();
    let mut widths: BTreeMap<Vec<String>, (u64, u64)> = BTreeMap::new();
    let mut add = |path: &[String], own: bool| {
        for end in 1..=path.len() {
            let entry = widths.entry(path[..end].to_vec()).or_default();
            entry.0 += 1;
            if own && end == path.len() {
                entry.1 += 1;
            }
        }
    };
    // The open frames by depth, under the root path.
    let mut open: Vec<String> = Vec::new();
    for line in dump.lines() {
        let row: Value = serde_json::from_str(line).unwrap();
        let row_thread = row["thread"].as_i64().unwrap();
        if thread.is_some_and(|t| t != row_thread) {
            continue;
        }
        let name = names
            .get(&row_thread)
            .cloned()
            .unwrap_or_else(|| format!("thread {row_thread}"));
        let mut root = vec![name];
        if thread.is_none() {
            root.insert(0, "all".to_string());
        }
        let depth = row["depth"].as_u64().unwrap() as usize;
        open.truncate(depth);
        let kind = row["kind"].as_str().unwrap();
        let frame = match kind {
            "method_call" => Some(row["method"].as_str().unwrap().to_string()),
            "loop" | "loop_iteration" => Some(kind.to_string()),
            _ => None,
        };
        let mut path = root;
        path.extend(open.iter().cloned());
        if let Some(frame) = frame {
            path.push(frame.clone());
            open.push(frame);
        }
        add(&path, true);
    }
    widths
}

/// A flame result's frames as paths → (total, self), checking that each
/// frame's total is its self, other and children's totals.
fn flame_widths(result: &Value) -> BTreeMap<Vec<String>, (u64, u64)> {
    let frames = result["frames"].as_array().unwrap();
    let mut paths: Vec<Vec<String>> = Vec::new();
    let mut shown = vec![0u64; frames.len()];
    let mut widths = BTreeMap::new();
    for frame in frames {
        let mut path = match frame["parent"].as_u64() {
            Some(parent) => {
                shown[parent as usize] += frame["total"].as_u64().unwrap();
                paths[parent as usize].clone()
            }
            None => Vec::new(),
        };
        path.push(frame["name"].as_str().unwrap().to_string());
        paths.push(path.clone());
        let total = frame["total"].as_u64().unwrap();
        let own = frame["self"].as_u64().unwrap();
        widths.insert(path, (total, own));
    }
    for (frame, shown) in frames.iter().zip(shown) {
        assert_eq!(
            frame["total"].as_u64().unwrap(),
            frame["self"].as_u64().unwrap() + frame["other"].as_u64().unwrap() + shown,
            "{frame}"
        );
    }
    widths
}

#[test]
fn flame_graphs_widths_equal_counts_over_dump() {
    let dir = tempfile::tempdir().unwrap();
    let trace = files::generated(dir.path(), Shape::Mixed, 2, 1 << 20, Some(64 << 10));
    let cache = tempfile::tempdir().unwrap();
    let mut server = Server::initialized(cache.path(), &[]);
    let opened = server.call("trace/open", json!({"path": trace}));
    let t = opened["trace"].as_str().unwrap().to_string();
    let all = json!({"trace": t, "minFraction": 0.0, "maxFrames": 100000});
    let whole = server.call("trace/flame", all.clone());
    assert_eq!(whole["frames"][0]["name"], "all");
    assert_eq!(whole["tracepoints"], opened["tracepoints"]);
    assert_eq!(
        flame_widths(&whole),
        dump_widths(cache.path(), &trace, &opened, None)
    );
    let one = server.call(
        "trace/flame",
        json!({"trace": t, "thread": 1, "minFraction": 0.0, "maxFrames": 100000}),
    );
    assert_eq!(
        flame_widths(&one),
        dump_widths(cache.path(), &trace, &opened, Some(1))
    );
    // A node: its subtree, rooted at its frame.
    let roots = server.call("trace/roots", json!({"trace": t, "thread": 1, "count": 1}));
    let node = roots["nodes"][0]["handle"].as_str().unwrap().to_string();
    let of_node = server.call(
        "trace/flame",
        json!({"trace": t, "node": node, "minFraction": 0.0, "maxFrames": 100000}),
    );
    let expected: BTreeMap<_, _> = dump_widths(cache.path(), &trace, &opened, Some(1))
        .into_iter()
        .filter(|(path, _)| path.len() >= 2)
        .filter(|(path, _)| path[1] == of_node["frames"][0]["name"])
        .map(|(path, width)| (path[1..].to_vec(), width))
        .collect();
    if roots["total"] == 1 {
        assert_eq!(flame_widths(&of_node), expected);
    }
    // A zoom by path: only the calls on it walked, the whole graph's frames
    // below it, rooted at its last frame.
    let widths = flame_widths(&whole);
    let (path, _) = widths
        .iter()
        .filter(|(path, _)| path.len() == 4)
        .max_by_key(|(_, width)| width.0)
        .unwrap();
    let zoomed = server.call(
        "trace/flame",
        json!({"trace": t, "path": &path[1..], "minFraction": 0.0, "maxFrames": 100000}),
    );
    let below: BTreeMap<_, _> = widths
        .iter()
        .filter(|(inner, _)| inner.starts_with(path))
        .map(|(inner, width)| (inner[path.len() - 1..].to_vec(), *width))
        .collect();
    assert_eq!(flame_widths(&zoomed), below);
    assert_eq!(zoomed["tracepoints"], json!(below[&path[3..]].0));
    // A page's width: frames narrower than a pixel are left out, widths
    // still add up, with progress reported.
    let id = server.start_request(
        "trace/flame",
        json!({"trace": t, "width": 300, "maxFrames": 50, "workDoneToken": "w"}),
    );
    let mut seen = Vec::new();
    let response = server.response(&mut seen);
    assert_eq!(response.id, id);
    let narrow = response.response_result.unwrap();
    let kinds: Vec<&str> = seen
        .iter()
        .filter(|n| n.method == "$/progress")
        .filter_map(|n| n.params["value"]["kind"].as_str())
        .collect();
    assert_eq!(kinds.first(), Some(&"begin"));
    assert_eq!(kinds.last(), Some(&"end"));
    let frames = narrow["frames"].as_array().unwrap();
    assert!(frames.len() <= 50);
    let root = frames[0]["total"].as_u64().unwrap();
    assert_eq!(root, whole["frames"][0]["total"].as_u64().unwrap());
    assert_eq!(narrow["threshold"].as_u64().unwrap(), root.div_ceil(300));
    let full = flame_widths(&whole);
    for (path, width) in flame_widths(&narrow) {
        assert_eq!(full[&path], width, "{path:?}");
        assert!(width.0 * 300 >= root);
    }
    assert_eq!(server.finish().code(), Some(0));
}

#[test]
fn a_sandwich_weighs_a_method_s_outermost_calls() {
    let (_dir, trace) = bundled();
    let cache = tempfile::tempdir().unwrap();
    let mut server = Server::initialized(cache.path(), &[]);
    let opened = server.call("trace/open", json!({"path": trace}));
    let t = opened["trace"].as_str().unwrap().to_string();
    let whole = server.call("trace/flame", json!({"trace": t, "minFraction": 0.0}));
    // Every frame of the flame graph: its sandwich's sides weigh the sum
    // of its outermost frames' totals.
    let frames = whole["frames"].as_array().unwrap();
    let widths = flame_widths(&whole);
    // The frames below the threads' (which are no calls).
    let mut names: Vec<&str> = frames
        .iter()
        .filter(|f| f["depth"].as_u64().unwrap() >= 2)
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    names.sort();
    names.dedup();
    assert!(names.len() > 3);
    for name in &names {
        let outermost: u64 = widths
            .iter()
            .filter(|(path, _)| path.last().unwrap() == name)
            .filter(|(path, _)| !path[..path.len() - 1].iter().any(|p| p == name))
            .map(|(_, width)| width.0)
            .sum();
        let sandwich = server.call(
            "trace/sandwich",
            json!({"trace": t, "method": name, "minFraction": 0.0}),
        );
        for side in ["callers", "callees"] {
            assert_eq!(sandwich[side]["frames"][0]["name"], *name);
            assert_eq!(
                sandwich[side]["frames"][0]["total"].as_u64().unwrap(),
                outermost,
                "{name} {side}"
            );
            flame_widths(&sandwich[side]);
        }
    }
    assert_eq!(server.finish().code(), Some(0));
}

#[test]
fn flame_requests_with_bad_parameters_name_their_field() {
    let (_dir, trace) = bundled();
    let cache = tempfile::tempdir().unwrap();
    let mut server = Server::initialized(cache.path(), &[]);
    let opened = server.call("trace/open", json!({"path": trace}));
    let t = opened["trace"].as_str().unwrap().to_string();
    let cases = [
        (
            json!({"trace": t, "width": 100, "minFraction": 0.1}),
            -32602,
            "width",
        ),
        (json!({"trace": t, "width": 0}), -32602, "width"),
        (json!({"trace": t, "width": -3}), -32602, "width"),
        (
            json!({"trace": t, "minFraction": 1.5}),
            -32602,
            "minFraction",
        ),
        (
            json!({"trace": t, "minFraction": "x"}),
            -32602,
            "minFraction",
        ),
        (json!({"trace": t, "maxFrames": 0}), -32602, "maxFrames"),
        (
            json!({"trace": t, "maxFrames": 1u64 << 40}),
            -32602,
            "maxFrames",
        ),
        (json!({"trace": t, "thread": 999}), -32602, "thread"),
        (json!({"trace": t, "node": "9:99999"}), -32011, ""),
        (json!({"trace": t, "node": "not a handle"}), -32602, "node"),
        (json!({"trace": "t99"}), -32010, ""),
    ];
    for (params, code, field) in cases {
        let error = server.error("trace/flame", params.clone());
        assert_eq!(error.code, code, "{params}: {error:?}");
        if !field.is_empty() {
            assert_eq!(error.data.as_ref().unwrap()["field"], field, "{params}");
        }
    }
    let roots = server.call("trace/roots", json!({"trace": t, "thread": 0, "count": 1}));
    let node = roots["nodes"][0]["handle"].as_str().unwrap();
    let error = server.error(
        "trace/flame",
        json!({"trace": t, "node": node, "thread": 1}),
    );
    assert_eq!(error.data.unwrap()["field"], "node");
    let error = server.error("trace/sandwich", json!({"trace": t, "method": ""}));
    assert_eq!(error.data.unwrap()["field"], "method");
    let error = server.error("trace/sandwich", json!({"trace": t}));
    assert_eq!(error.data.unwrap()["field"], "method");
    // A method the trace lacks: its root alone, weighing nothing.
    let none = server.call("trace/sandwich", json!({"trace": t, "method": "No.such"}));
    assert_eq!(none["callers"]["frames"][0]["total"], 0);
    assert_eq!(server.finish().code(), Some(0));
}

#[test]
fn a_cancelled_flame_graph_answers_request_cancelled() {
    let (dir, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (mut server, t) = serving_big_trace(dir.path(), cache.path());
    // Two slow searches hold the long lane's workers; the flame graph
    // waits behind them, is cancelled, and never starts.
    let slow = json!({"trace": t, "pattern": "no line holds this", "text": true});
    let searches = [
        server.start_request("trace/search", slow.clone()),
        server.start_request("trace/search", slow),
    ];
    let flame = server.start_request("trace/flame", json!({"trace": t}));
    let sandwich = server.start_request("trace/sandwich", json!({"trace": t, "method": "loop"}));
    for id in [&flame, &sandwich].into_iter().chain(&searches) {
        server.notify("$/cancelRequest", json!({"id": id}));
    }
    let mut seen = Vec::new();
    for _ in 0..4 {
        let response = server.response(&mut seen);
        assert_eq!(
            response.response_result.unwrap_err().code,
            -32800,
            "{:?}",
            response.id
        );
    }
    // The service goes on: the same flame graph, uncancelled.
    let graph = server.call("trace/flame", json!({"trace": t, "width": 100}));
    assert!(graph["frames"][0]["total"].as_u64().unwrap() > 0);
    assert_eq!(server.finish().code(), Some(0));
}

#[test]
fn a_trace_opened_postprocessed_is_served_as_the_view_with_the_same_handles() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wrapped.trace");
    crate::diff::write_call(&path, true);
    let cache = tempfile::tempdir().unwrap();
    let mut server = Server::initialized(cache.path(), &[]);
    let open = |server: &mut Server, postprocess: bool| {
        server.call(
            "trace/open",
            json!({"path": path, "options": {"postprocess": postprocess}}),
        )["trace"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (raw, view) = (open(&mut server, false), open(&mut server, true));
    let first_child = |server: &mut Server, t: &str| {
        let roots = server.call("trace/roots", json!({"trace": t, "thread": 0, "count": 10}));
        let root = roots["nodes"][0]["handle"].clone();
        let children = server.call(
            "trace/children",
            json!({"trace": t, "node": root, "count": 10}),
        );
        assert_eq!(children["total"], 1, "{children}");
        (root, children["nodes"][0].clone())
    };
    let (raw_root, wrapper) = first_child(&mut server, &raw);
    let (root, call) = first_child(&mut server, &view);
    assert!(wrapper["text"].as_str().unwrap().contains("callMe$default"));
    assert!(wrapper["hasChildren"].as_bool().unwrap());
    // The view shows the inner call, under the wrapper's handle.
    assert_eq!(call["eventId"], 2, "{call}");
    assert!(
        !call["text"].as_str().unwrap().contains("$default"),
        "{call}"
    );
    assert!(!call["hasChildren"].as_bool().unwrap(), "{call}");
    assert_eq!((&root, &call["handle"]), (&raw_root, &wrapper["handle"]));
    // The handle comes back as the same node: detail, path, place, event.
    let handle = call["handle"].clone();
    let node = server.call("trace/node", json!({"trace": view, "node": handle}));
    for field in ["handle", "eventId", "text", "depth"] {
        assert_eq!(node[field], call[field], "{field}");
    }
    assert_eq!(node["method"], "A.callMe");
    let above = server.call("trace/ancestors", json!({"trace": view, "node": handle}));
    assert_eq!(above["nodes"][0]["handle"], root);
    let place = server.call("trace/position", json!({"trace": view, "node": handle}));
    assert_eq!(
        (place["parent"].clone(), place["index"].clone()),
        (root, json!(0))
    );
    let by_event = |server: &mut Server, event: i32| {
        server.call(
            "trace/nodeByEvent",
            json!({"trace": view, "thread": 0, "eventId": event}),
        )
    };
    assert_eq!(by_event(&mut server, 2), call);
    let hidden = server.error(
        "trace/nodeByEvent",
        json!({"trace": view, "thread": 0, "eventId": 1}),
    );
    assert_eq!(hidden.code, -32011, "{hidden:?}");
    // Searches and finds see the view.
    let found = server.call("trace/search", json!({"trace": view, "pattern": "callMe"}));
    assert_eq!(found["total"], 1, "{found}");
    assert_eq!(found["hits"][0]["handle"], handle);
    let wrapped = server.call(
        "trace/search",
        json!({"trace": view, "pattern": "callMe$default"}),
    );
    assert_eq!(wrapped["total"], 0, "{wrapped}");
    let next = server.call(
        "trace/findNext",
        json!({"trace": view, "thread": 0, "pattern": "callMe"}),
    );
    assert_eq!(next["hit"]["handle"], handle);
    let after = server.call(
        "trace/findNext",
        json!({"trace": view, "from": handle, "pattern": ""}),
    );
    assert!(after["hit"].is_null(), "{after}");
    // Flame graphs, sandwiches and exports walk the view: the pair is one
    // frame, `A.callMe`, under `Main.run`.
    let frames = |graph: &Value| -> Vec<(String, u64, u64)> {
        graph["frames"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                let name = f["name"].as_str().unwrap().to_string();
                (
                    name,
                    f["total"].as_u64().unwrap(),
                    f["self"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    let graph = server.call("trace/flame", json!({"trace": view, "width": 100}));
    assert_eq!(graph["tracepoints"], 2, "{graph}");
    assert_eq!(
        frames(&graph),
        [
            ("main".to_string(), 2, 0),
            ("Main.run".to_string(), 2, 1),
            ("A.callMe".to_string(), 1, 1)
        ],
        "{graph}"
    );
    let raw_graph = server.call("trace/flame", json!({"trace": raw, "width": 100}));
    assert_eq!(raw_graph["tracepoints"], 3, "{raw_graph}");
    let node_graph = server.call("trace/flame", json!({"trace": view, "node": handle}));
    assert_eq!(frames(&node_graph), [("A.callMe".to_string(), 1, 1)]);
    let sandwich = server.call(
        "trace/sandwich",
        json!({"trace": view, "method": "A.callMe", "width": 100}),
    );
    assert_eq!(
        frames(&sandwich["callers"]),
        [
            ("A.callMe".to_string(), 1, 0),
            ("Main.run".to_string(), 1, 0),
            ("main".to_string(), 1, 1)
        ],
        "{sandwich}"
    );
    let folded = dir.path().join("view.folded");
    let exported = server.call(
        "trace/export",
        json!({"trace": view, "format": "folded", "output": folded}),
    );
    assert_eq!(exported["tracepoints"], 2, "{exported}");
    assert_eq!(
        std::fs::read_to_string(&folded).unwrap(),
        "main;Main.run 1\nmain;Main.run;A.callMe 1\n"
    );
    assert!(server.finish().success());
}
