//! `tracetree serve --http`: hostile requests refused (no token, a wrong
//! one, a foreign Host or Origin, paths out of the served set, an
//! oversized body), and the tree a page walks over HTTP equal to
//! `print --verbose`'s lines. The HTTP client is the standard library's
//! `TcpStream` writing HTTP/1.1 by hand, so that a test can send what no
//! browser would (any Host header).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use tracetree::generate::Shape;
use tracetree_testkit::files;

use crate::tracetree_cached;

/// A `serve --http` process; ended (by its handle) when dropped.
pub struct Web {
    child: Child,
    /// The page's URL as printed.
    pub url: String,
    /// The port it listens on.
    pub port: u16,
    /// The session's token.
    pub token: String,
    next_id: u64,
}

impl Web {
    /// `tracetree ARGS` (a command that serves over HTTP), its cache in
    /// `cache`.
    pub fn start(cache: &Path, args: &[&str]) -> Web {
        let mut child = Command::new(env!("CARGO_BIN_EXE_tracetree"))
            .args(args)
            .env("TRACETREE_CACHE_DIR", cache)
            // `view --web` opens no browser: the command fails, the URL
            // is printed all the same.
            .env("BROWSER", "/nonexistent/browser")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line.trim().to_string();
        assert!(
            url.starts_with("http://127.0.0.1:"),
            "no URL printed: {url:?}"
        );
        let rest = &url["http://127.0.0.1:".len()..];
        let port = rest[..rest.find('/').unwrap()].parse().unwrap();
        let token = url.split("token=").nth(1).unwrap().to_string();
        Web {
            child,
            url,
            port,
            token,
            next_id: 1,
        }
    }

    /// `127.0.0.1:PORT`.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// A request with these headers and body: its status and body.
    pub fn raw(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> (u16, String, String) {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(120)))
            .unwrap();
        let mut request = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
        if !headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("host"))
        {
            request.push_str(&format!("Host: {}\r\n", self.host()));
        }
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        // A refused body may be left unread: the answer is read all the same.
        let _ = stream
            .write_all(request.as_bytes())
            .and_then(|()| stream.write_all(body));
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer);
        let answer = String::from_utf8_lossy(&answer).into_owned();
        let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
        let status = head
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let body = if head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked")
        {
            dechunk(body)
        } else {
            body.to_string()
        };
        (status, head.to_string(), body)
    }

    /// A JSON-RPC request with the token: the whole answer.
    pub fn post(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let auth = format!("Bearer {}", self.token);
        let (status, _, text) = self.raw(
            "POST",
            "/rpc",
            &[
                ("Authorization", &auth),
                ("Content-Type", "application/json"),
            ],
            body.to_string().as_bytes(),
        );
        assert_eq!(status, 200, "{method}: {text}");
        let answer: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(answer["id"], json!(id));
        answer
    }

    /// A method's result (it must succeed).
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let answer = self.post(method, params);
        assert!(answer["error"].is_null(), "{method}: {answer}");
        answer["result"].clone()
    }

    /// A method's error (it must fail).
    pub fn error(&mut self, method: &str, params: Value) -> Value {
        let answer = self.post(method, params);
        assert!(answer["result"].is_null(), "{method}: {answer}");
        answer["error"].clone()
    }
}

impl Drop for Web {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || rest.len() < size {
            break;
        }
        out.push_str(&rest[..size]);
        body = rest[size..].trim_start_matches("\r\n");
    }
    out
}

/// Every line of the tree walked over HTTP as `print --verbose` writes
/// it: thread headers, then each node indented by its depth.
pub fn walked_lines(web: &mut Web, trace: &str, threads: &Value) -> Vec<String> {
    let mut lines = Vec::new();
    for thread in threads.as_array().unwrap() {
        let id = thread["id"].as_i64().unwrap();
        lines.push(format!(
            "# Thread {} ({})",
            id + 1,
            thread["name"].as_str().unwrap()
        ));
        let roots = web.call(
            "trace/roots",
            json!({"trace": trace, "thread": id, "start": 0, "count": 10_000}),
        );
        // Depth first, without recursion: (node, next child page start).
        let mut stack: Vec<Value> = roots["nodes"].as_array().unwrap().clone();
        stack.reverse();
        while let Some(node) = stack.pop() {
            let depth = node["depth"].as_u64().unwrap() as usize;
            lines.push(format!(
                "{}{}",
                "  ".repeat(depth),
                node["text"].as_str().unwrap()
            ));
            if node["hasChildren"].as_bool().unwrap() {
                let mut children = Vec::new();
                loop {
                    let page = web.call(
                        "trace/children",
                        json!({"trace": trace, "node": node["handle"], "start": children.len(), "count": 10_000}),
                    );
                    let nodes = page["nodes"].as_array().unwrap();
                    children.extend(nodes.iter().cloned());
                    if nodes.len() < 10_000 {
                        break;
                    }
                }
                stack.extend(children.into_iter().rev());
            }
        }
    }
    lines
}

/// `got` equals `want`, else the first line that differs is named.
pub fn same_lines(got: &[String], want: &[String], what: &str) {
    if let Some(at) = (0..got.len().max(want.len())).find(|&i| got.get(i) != want.get(i)) {
        panic!(
            "{what}: line {} differs ({} lines against {}): {:?} against {:?}",
            at + 1,
            got.len(),
            want.len(),
            got.get(at),
            want.get(at)
        );
    }
}

fn print_lines(cache: &Path, trace: &Path) -> Vec<String> {
    let (ok, out, err) = tracetree_cached(cache, &["print", "--verbose", trace.to_str().unwrap()]);
    assert!(ok, "{err}");
    out.lines().map(str::to_string).collect()
}

/// A served folder with a trace in it, a secret file beside it, and a
/// symbolic link out of it.
fn served_folder(dir: &Path) -> (PathBuf, PathBuf) {
    let root = dir.join("served");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    for suffix in ["", ".idx"] {
        std::fs::copy(
            files::testdata(&format!("multi-thread.trace{suffix}")),
            root.join(format!("sub/inside.trace{suffix}")),
        )
        .unwrap();
    }
    let secret = dir.join("secret.trace");
    std::fs::copy(files::testdata("all-types.trace"), &secret).unwrap();
    std::fs::copy(
        files::testdata("all-types.trace.idx"),
        dir.join("secret.trace.idx"),
    )
    .unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(&secret, root.join("escape.trace")).unwrap();
    (root, secret)
}

/// What a case is, the path it asks, its headers and the status it gets.
type Case<'a> = (&'a str, &'a str, Vec<(&'a str, &'a str)>, u16);

#[test]
fn requests_without_the_token_or_from_elsewhere_are_refused() {
    let cache = tempfile::tempdir().unwrap();
    let trace = files::testdata("multi-thread.trace");
    let web = Web::start(cache.path(), &["serve", "--http", trace.to_str().unwrap()]);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}).to_string();
    let init = init.as_bytes();
    let bearer = format!("Bearer {}", web.token);
    let wrong = format!("Bearer {}", "0".repeat(web.token.len()));
    let own_origin = format!("http://{}", web.host());
    let with_token = format!("/rpc?token={}", web.token);
    let events_token = format!("/events?token={}", web.token);
    let rebinding = format!("evil.example:{}", web.port);
    let cases: [Case; 9] = [
        ("no token", "/rpc", vec![], 401),
        (
            "a wrong token",
            "/rpc",
            vec![("Authorization", &wrong)],
            401,
        ),
        ("a wrong token in the query", "/rpc?token=abc", vec![], 401),
        (
            "a foreign Host",
            "/rpc",
            vec![("Authorization", &bearer), ("Host", "evil.example:80")],
            403,
        ),
        (
            "a rebinding Host with the server's port",
            "/rpc",
            vec![("Authorization", &bearer), ("Host", &rebinding)],
            403,
        ),
        (
            "a foreign Origin",
            "/rpc",
            vec![
                ("Authorization", &bearer),
                ("Origin", "http://evil.example"),
            ],
            403,
        ),
        ("events without the token", "/events", vec![], 401),
        (
            "the token in the query",
            &with_token,
            vec![("Origin", &own_origin)],
            200,
        ),
        (
            "the token as a bearer",
            "/rpc",
            vec![("Authorization", &bearer)],
            200,
        ),
    ];
    for (what, path, headers, status) in cases {
        let (got, _, body) = web.raw("POST", path, &headers, init);
        assert_eq!(got, status, "{what}: {body}");
        if status == 200 {
            assert!(body.contains("\"served\""), "{what}: {body}");
        }
    }
    // The event stream answers with the token (its first bytes suffice).
    let mut stream = TcpStream::connect(("127.0.0.1", web.port)).unwrap();
    write!(
        stream,
        "GET {events_token} HTTP/1.1\r\nHost: {}\r\n\r\n",
        web.host()
    )
    .unwrap();
    let mut status = String::new();
    BufReader::new(stream).read_line(&mut status).unwrap();
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    // The page itself needs no token, and carries the policy.
    let (status, head, page) = web.raw("GET", "/", &[], b"");
    assert_eq!(status, 200);
    assert!(page.contains("<script type=\"module\" src=\"/app.js\">"));
    let head = head.to_ascii_lowercase();
    for header in [
        "content-security-policy: default-src 'none'; script-src 'self'",
        "frame-ancestors 'none'",
        "x-content-type-options: nosniff",
        "referrer-policy: no-referrer",
    ] {
        assert!(head.contains(header), "{header}: {head}");
    }
    assert!(!page.contains("http://") && !page.contains("https://"));
    // An oversized body is refused before it is read.
    let big = vec![b' '; 2 << 20];
    let (status, _, _) = web.raw("POST", "/rpc", &[("Authorization", &bearer)], &big);
    assert_eq!(status, 413);
}

#[test]
fn only_the_served_traces_and_files_under_the_root_open() {
    let dir = tempfile::tempdir().unwrap();
    let (root, secret) = served_folder(dir.path());
    let named = files::testdata("all-types.trace");
    let mut web = Web::start(
        dir.path(),
        &[
            "serve",
            "--http",
            "--root",
            root.to_str().unwrap(),
            named.to_str().unwrap(),
        ],
    );
    let init = web.call("initialize", json!({}));
    assert_eq!(init["served"]["root"], json!(true));
    assert_eq!(
        init["served"]["traces"][0]["name"],
        json!(named.to_str().unwrap())
    );
    let open = |web: &mut Web, path: &str| {
        web.post(
            "trace/open",
            json!({"path": path, "options": {"countTracepoints": false}}),
        )
    };
    // The page's menu: what lies under the root, not the link out of it,
    // and each one opens.
    let listed = web.call("trace/files", Value::Null);
    assert_eq!(listed["files"], json!(["sub/inside.trace"]), "{listed}");
    assert_eq!(listed["truncated"], json!(false));
    let inside = open(&mut web, "sub/inside.trace");
    assert!(inside["error"].is_null(), "{inside}");
    assert!(open(&mut web, named.to_str().unwrap())["error"].is_null());
    let dotdot = format!("../{}", secret.file_name().unwrap().to_str().unwrap());
    let refused = [
        dotdot.as_str(),
        "sub/../../secret.trace",
        secret.to_str().unwrap(),
        "/etc/passwd",
        "escape.trace",
        "",
    ];
    for path in refused {
        let answer = open(&mut web, path);
        assert_eq!(answer["error"]["code"], json!(-32602), "{path}: {answer}");
        assert_eq!(answer["error"]["data"]["field"], json!("path"), "{path}");
    }
    // Choosing where the server writes is not taken over HTTP.
    let error = web.error(
        "trace/open",
        json!({"path": "sub/inside.trace", "options": {"cacheDir": dir.path().to_str().unwrap()}}),
    );
    assert_eq!(error["data"]["field"], json!("options.cacheDir"));
    let t = inside["result"]["trace"].as_str().unwrap().to_string();
    let output = dir.path().join("out.folded");
    let error = web.error(
        "trace/export",
        json!({"trace": t, "output": output.to_str().unwrap(), "format": "folded"}),
    );
    assert_eq!(error["code"], json!(-32601));
    assert!(!output.exists());
    // The page cannot end the server.
    let error = web.error("shutdown", Value::Null);
    assert_eq!(error["code"], json!(-32600));
    // A served trace opened again (a reloaded page) is the same open trace.
    let again = open(&mut web, "sub/inside.trace");
    assert_eq!(again["result"]["trace"], json!(t));
    // Without --root, files under no root are refused.
    drop(web);
    let mut web = Web::start(dir.path(), &["serve", "--http", named.to_str().unwrap()]);
    let answer = open(&mut web, root.join("sub/inside.trace").to_str().unwrap());
    assert_eq!(answer["error"]["code"], json!(-32602), "{answer}");
    assert_eq!(web.call("trace/files", Value::Null)["files"], json!([]));
}

#[test]
fn the_tree_over_http_is_print_verbose() {
    let dir = tempfile::tempdir().unwrap();
    let generated = files::generated(dir.path(), Shape::Mixed, 3, 256 << 10, None);
    let wide = files::generated(dir.path(), Shape::Wide, 1, 600 << 10, None);
    for trace in [
        files::testdata("multi-thread.trace"),
        files::testdata("all-types.trace"),
        generated,
        wide,
    ] {
        let cache = tempfile::tempdir().unwrap();
        let name = trace.to_str().unwrap();
        let mut web = Web::start(cache.path(), &["serve", "--http", name]);
        let opened = web.call("trace/open", json!({"path": name}));
        let t = opened["trace"].as_str().unwrap().to_string();
        let lines = walked_lines(&mut web, &t, &opened["threads"]);
        // `print` heads each root with its thread (named when the trace
        // has more than one root): the nodes' lines are compared.
        let nodes = |lines: &[String]| -> Vec<String> {
            lines
                .iter()
                .filter(|l| !l.starts_with("# Thread "))
                .cloned()
                .collect()
        };
        same_lines(
            &nodes(&lines),
            &nodes(&print_lines(cache.path(), &trace)),
            name,
        );
        // The details of a node, its ancestors and its position.
        let thread = opened["threads"][0]["id"].clone();
        let roots = web.call(
            "trace/roots",
            json!({"trace": t, "thread": thread, "count": 1}),
        );
        let root = roots["nodes"][0]["handle"].clone();
        let node = web.call("trace/node", json!({"trace": t, "node": root}));
        assert_eq!(node["handle"], root);
        assert_eq!(node["diffStatus"], json!("none"));
        assert!(node.get("diff").is_none(), "{node}");
    }
}

#[test]
fn view_web_serves_the_traces_it_is_given() {
    let cache = tempfile::tempdir().unwrap();
    let a = files::testdata("multi-thread.trace");
    let b = files::testdata("all-types.trace");
    let mut web = Web::start(
        cache.path(),
        &["view", "--web", a.to_str().unwrap(), b.to_str().unwrap()],
    );
    let init = web.call("initialize", json!({}));
    let names: Vec<&str> = init["served"]["traces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, [a.to_str().unwrap(), b.to_str().unwrap()]);
    assert!(web.url.contains("?token="));
}

#[test]
fn a_search_over_http_is_cancelled_by_a_posted_cancel() {
    let dir = tempfile::tempdir().unwrap();
    let big = files::generated(dir.path(), Shape::Mixed, 2, 24 << 20, None);
    let mut web = Web::start(dir.path(), &["serve", "--http", big.to_str().unwrap()]);
    let opened = web.call(
        "trace/open",
        json!({"path": big.to_str().unwrap(), "options": {"countTracepoints": false}}),
    );
    let t = opened["trace"].as_str().unwrap().to_string();
    let id = "search-1";
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "trace/search",
        "params": {"trace": t, "pattern": "no such text anywhere", "text": true}});
    let auth = format!("Bearer {}", web.token);
    let port = web.port;
    let searching = std::thread::spawn({
        let auth = auth.clone();
        let web = WebClient { port };
        move || web.post_raw(&auth, &body.to_string())
    });
    // Cancelled until answered: the search stops within a tracepoint.
    let cancel = json!({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": id}});
    while !searching.is_finished() {
        let (status, _, _) = web.raw(
            "POST",
            "/rpc",
            &[("Authorization", &auth)],
            cancel.to_string().as_bytes(),
        );
        assert_eq!(status, 204);
        std::thread::sleep(Duration::from_millis(20));
    }
    let answer: Value = serde_json::from_str(&searching.join().unwrap()).unwrap();
    assert_eq!(answer["error"]["code"], json!(-32800), "{answer}");
    // The session goes on.
    let roots = web.call(
        "trace/roots",
        json!({"trace": t, "thread": opened["threads"][0]["id"], "count": 1}),
    );
    assert_eq!(roots["nodes"].as_array().unwrap().len(), 1);
}

/// A second client of a [`Web`] on another thread.
struct WebClient {
    port: u16,
}

impl WebClient {
    fn post_raw(&self, auth: &str, body: &str) -> String {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        write!(
            stream,
            "POST /rpc HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: {auth}\r\n\
             Connection: close\r\nContent-Length: {}\r\n\r\n{body}",
            self.port,
            body.len()
        )
        .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer
            .split_once("\r\n\r\n")
            .map(|(_, body)| body.to_string())
            .unwrap_or_default()
    }
}

/// Chromium, as Debian installs it.
const CHROMIUM: &str = "/usr/bin/chromium";

#[test]
fn the_viewer_in_a_real_browser_shows_print_s_tree_pages_searches_and_links() {
    use tracetree_testkit::skip;
    let client = files::repository().join("cli/tests/clients/browser");
    if Command::new("node").arg("--version").output().is_err() {
        skip::cannot_run("no node on PATH (Node.js) to drive the browser");
        return;
    }
    if !client.join("node_modules/playwright-core").is_dir() {
        skip::cannot_run(
            "playwright-core is not installed to drive the browser: run `npm ci` in \
             cli/tests/clients/browser",
        );
        return;
    }
    if !Path::new(CHROMIUM).exists() {
        skip::cannot_run("no browser: /usr/bin/chromium is missing (apt-get install chromium)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mixed = files::generated(dir.path(), Shape::Mixed, 2, 64 << 10, None);
    // Some 290,000 children: more rows than a page can lay out at their
    // height, so the list maps its scroll bar.
    let wide = files::generated(dir.path(), Shape::Wide, 1, 8 << 20, None);
    let cache = dir.path().join("cache");
    let mut printed = Vec::new();
    for trace in [&mixed, &wide] {
        let (ok, out, err) =
            tracetree_cached(&cache, &["print", "--verbose", trace.to_str().unwrap()]);
        assert!(ok, "{err}");
        let file = trace.with_extension("print.txt");
        std::fs::write(&file, out).unwrap();
        printed.push(file);
    }
    // The rows the flame graph's widths are counted over.
    let (ok, dump, err) = tracetree_cached(
        &cache,
        &["dump", mixed.to_str().unwrap(), "--format", "jsonl"],
    );
    assert!(ok, "{err}");
    let dump_file = mixed.with_extension("dump.jsonl");
    std::fs::write(&dump_file, dump).unwrap();
    let pattern = "compute";
    let (_, hits, _) = tracetree_cached(
        &cache,
        &["search", mixed.to_str().unwrap(), pattern, "--json"],
    );
    assert!(!hits.is_empty(), "the generated trace has no {pattern}");
    let hits_file = dir.path().join("hits.jsonl");
    std::fs::write(&hits_file, hits).unwrap();
    // A diff trace, and its changes in the order `search --diff` lists them.
    let diffs = dir.path().join("diff");
    std::fs::create_dir_all(&diffs).unwrap();
    let pair = tracetree_testkit::diffs::diff_pair(&diffs, 60_000, 2, 0.03);
    let (ok, changes, err) = tracetree_cached(
        &cache,
        &["search", pair.diff.to_str().unwrap(), "--diff", "--json"],
    );
    assert!(ok, "{err}");
    let changes_file = dir.path().join("changes.jsonl");
    std::fs::write(&changes_file, changes).unwrap();
    let shots = dir.path().join("shots");
    std::fs::create_dir_all(&shots).unwrap();
    let web = Web::start(
        &cache,
        &[
            "serve",
            "--http",
            mixed.to_str().unwrap(),
            wide.to_str().unwrap(),
            pair.diff.to_str().unwrap(),
        ],
    );
    // A server of a folder only: the page lists and opens what lies in it.
    let served = dir.path().join("served");
    std::fs::create_dir_all(served.join("sub")).unwrap();
    std::fs::copy(&mixed, served.join("sub/mixed.trace")).unwrap();
    let folder = Web::start(
        &cache,
        &["serve", "--http", "--root", served.to_str().unwrap()],
    );
    let config = json!({
        "url": web.url,
        "root": {"url": folder.url, "file": "sub/mixed.trace", "print": printed[0]},
        "chromium": CHROMIUM,
        "shots": shots,
        "mixed": {"name": mixed, "print": printed[0], "dump": dump_file},
        "wide": {"name": wide, "print": printed[1]},
        "search": {"pattern": pattern, "hits": hits_file},
        "diff": {"name": pair.diff, "changes": changes_file},
    });
    let config_file = dir.path().join("config.json");
    std::fs::write(&config_file, config.to_string()).unwrap();
    let out = Command::new("node")
        .arg(client.join("viewer.mjs"))
        .arg(&config_file)
        .current_dir(&client)
        .env("HOME", dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success() && out.stdout == b"ok\n",
        "the browser test: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    for shot in [
        "tree",
        "wide",
        "search",
        "deep-link",
        "flame",
        "flame-zoomed",
        "flame-deep",
        "sandwich",
        "diff",
        "root",
    ] {
        assert!(shots.join(format!("{shot}.png")).is_file(), "{shot}.png");
    }
}

#[test]
fn progress_and_partial_results_stream_from_events() {
    let dir = tempfile::tempdir().unwrap();
    let trace = files::generated(dir.path(), Shape::Mixed, 2, 256 << 10, None);
    let name = trace.to_str().unwrap();
    let mut web = Web::start(dir.path(), &["serve", "--http", name]);
    let opened = web.call("trace/open", json!({"path": name}));
    let t = opened["trace"].as_str().unwrap().to_string();
    // The stream, read on a thread of its own, line by line.
    let mut stream = TcpStream::connect(("127.0.0.1", web.port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .unwrap();
    write!(
        stream,
        "GET /events?token={} HTTP/1.1\r\nHost: {}\r\n\r\n",
        web.token,
        web.host()
    )
    .unwrap();
    let (lines, events) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { return };
            if lines.send(line).is_err() {
                return;
            }
        }
    });
    // The stream is open once its headers came.
    loop {
        let line = events.recv_timeout(Duration::from_secs(120)).unwrap();
        if line.is_empty() {
            break;
        }
    }
    let found = web.call(
        "trace/search",
        json!({"trace": t, "pattern": "compute", "workDoneToken": "w1", "partialResultToken": "p1"}),
    );
    let total = found["total"].as_u64().unwrap();
    assert!(total > 0 && found["hits"] == json!([]), "{found}");
    // Everything was sent before the answer: read until the progress ends.
    let mut streamed = 0;
    let mut kinds = Vec::new();
    while !kinds.contains(&"end".to_string()) {
        let line = events.recv_timeout(Duration::from_secs(120)).unwrap();
        let Some(data) = line.strip_prefix("data: ") else {
            continue;
        };
        let message: Value = serde_json::from_str(data).unwrap();
        assert_eq!(message["method"], json!("$/progress"), "{message}");
        match message["params"]["token"].as_str().unwrap() {
            "p1" => streamed += message["params"]["value"]["hits"].as_array().unwrap().len(),
            "w1" => kinds.push(
                message["params"]["value"]["kind"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            ),
            other => panic!("token {other}"),
        }
    }
    assert_eq!(kinds.first().map(String::as_str), Some("begin"));
    assert_eq!(streamed as u64, total);
}

#[test]
fn rows_of_a_diff_trace_carry_their_status() {
    let dir = tempfile::tempdir().unwrap();
    let mut sides = Vec::new();
    for seed in ["1", "2"] {
        let side = dir.path().join(format!("side-{seed}.trace"));
        let (ok, _, err) = tracetree_cached(
            dir.path(),
            &[
                "gen",
                side.to_str().unwrap(),
                "--size",
                "16KB",
                "--seed",
                seed,
            ],
        );
        assert!(ok, "{err}");
        sides.push(side);
    }
    let diff = dir.path().join("diff.packedtrace");
    let (ok, _, err) = tracetree_cached(
        dir.path(),
        &[
            "diff",
            sides[0].to_str().unwrap(),
            sides[1].to_str().unwrap(),
            "-o",
            diff.to_str().unwrap(),
        ],
    );
    assert!(ok, "{err}");
    let name = diff.to_str().unwrap();
    let mut web = Web::start(dir.path(), &["serve", "--http", name]);
    let opened = web.call("trace/open", json!({"path": name}));
    let t = opened["trace"].as_str().unwrap().to_string();
    let roots = web.call(
        "trace/roots",
        json!({"trace": t, "thread": opened["threads"][0]["id"], "count": 1}),
    );
    let root = &roots["nodes"][0];
    let children = web.call(
        "trace/children",
        json!({"trace": t, "node": root["handle"], "count": 10_000}),
    );
    let mut seen = std::collections::BTreeSet::new();
    for node in children["nodes"].as_array().unwrap() {
        let detail = web.call("trace/node", json!({"trace": t, "node": node["handle"]}));
        assert_eq!(node["diff"], detail["diffStatus"], "{node}");
        // The diff marks of print's line agree.
        let mark = node["text"].as_str().unwrap().chars().next().unwrap();
        let expected = match node["diff"].as_str().unwrap() {
            "removed" => '-',
            "added" => '+',
            "edited_old" | "edited_new" => '!',
            _ => mark,
        };
        assert_eq!(mark, expected, "{node}");
        seen.insert(node["diff"].as_str().unwrap().to_string());
    }
    assert!(
        seen.contains("removed") && seen.contains("added"),
        "{seen:?}"
    );
}

#[test]
fn a_server_on_every_address_says_whom_it_serves_and_does_so() {
    let dir = tempfile::tempdir().unwrap();
    let trace = files::generated(dir.path(), Shape::Mixed, 1, 64 << 10, None);
    let mut web = Web::start(
        dir.path(),
        &["serve", "--http=0.0.0.0:0", trace.to_str().unwrap()],
    );
    let auth = format!("Bearer {}", web.token);
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#;
    let (status, _, _) = web.raw("POST", "/rpc", &[("Authorization", &auth)], body);
    assert_eq!(status, 200, "a request naming 127.0.0.1 is served");
    let elsewhere = format!("192.0.2.7:{}", web.port);
    let (status, _, _) = web.raw(
        "POST",
        "/rpc",
        &[("Authorization", &auth), ("Host", &elsewhere)],
        body,
    );
    assert_eq!(status, 403, "a request naming another address is not");
    let _ = web.child.kill();
    let mut said = String::new();
    web.child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut said)
        .unwrap();
    assert!(
        said.contains("listening on 0.0.0.0:") && said.contains("only requests naming 127.0.0.1"),
        "{said}"
    );
}
