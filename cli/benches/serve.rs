//! `tracetree serve --stdio` as a client sees it: a client process's
//! requests over real pipes, beside a baseline measured in the same run,
//! the same work done in-process through the library (what the protocol,
//! the pipes and the worker hand-off add).
//!
//! The trace is a generated wide one (each thread's root holds one call
//! with millions of children) of `TRACETREE_BENCH_SIZE` (default `100MB`),
//! written once into `target/bench-traces/` (the name the other benchmarks
//! give it) with its lookups cached by an `info` first. Cases: `open` (a
//! `trace/open` without the tracepoint count, then `trace/close`) beside
//! `LazyOptions::open`; `page` (a `trace/children` page of 200 at a random
//! start in the wide call) beside `children_range` and each child's line
//! and count. Criterion gives the medians; then the median and p99 of
//! `PAGES` pages at random starts are printed for the server and the
//! library alike; the time to a search's first streamed hit (a
//! `partialResultToken` search, cancelled once the hit arrives) beside the
//! library's `search_each` reaching its first hit; and the throughput of
//! `CLIENTS` clients at once (each its own server process, as IDE windows
//! run them), each beside one client alone.
//!
//! `cargo bench -p tracetree-cli --bench serve`;
//! `TRACETREE_BENCH_SIZE=10GB` for the figures.

use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use lsp_server::{Message, Request, RequestId};
use serde_json::{Value, json};
use tracetree::print::{Parent, TextFormatter};
use tracetree::read::{LazyOptions, LazyTraceReader};
use tracetree::search::SearchOptions;

/// Pages timed for the printed median and p99.
const PAGES: usize = 10_000;
/// Clients at once in the throughput case.
const CLIENTS: usize = 4;
/// Pages each client asks for in the throughput cases.
const CLIENT_PAGES: usize = 2_000;
/// Children per page.
const PAGE: usize = 200;
/// Searches timed to their first streamed hit, per pattern.
const FIRST_HITS: usize = 20;

fn binary() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_tracetree"))
}

fn trace() -> (PathBuf, tempfile::TempDir) {
    let size = std::env::var("TRACETREE_BENCH_SIZE").unwrap_or_else(|_| "100MB".into());
    let bytes = tracetree::generate::parse_size(&size).expect("TRACETREE_BENCH_SIZE like 1GB");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-traces");
    std::fs::create_dir_all(&dir).expect("target/bench-traces");
    let trace = dir.join(format!("gen-wide-2t-{bytes}.trace"));
    if !trace.exists() {
        let status = Command::new(binary())
            .args(["gen", "--shape", "wide", "--threads", "2", "--size"])
            .arg(bytes.to_string())
            .arg(&trace)
            .status()
            .expect("tracetree gen");
        assert!(status.success());
    }
    let cache = tempfile::tempdir().expect("a cache directory");
    let status = Command::new(binary())
        .env("TRACETREE_CACHE_DIR", cache.path())
        .arg("info")
        .arg(&trace)
        .stdout(Stdio::null())
        .status()
        .expect("tracetree info");
    assert!(status.success());
    (trace, cache)
}

/// A server and its pipes.
struct Client {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    next: i32,
}

impl Client {
    fn start(cache: &Path) -> Client {
        let mut child = Command::new(binary())
            .args(["serve", "--stdio"])
            .env("TRACETREE_CACHE_DIR", cache)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("tracetree serve");
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap());
        let mut client = Client {
            child,
            input,
            output,
            next: 0,
        };
        client.call("initialize", json!({}));
        client
    }

    /// The time from sending a streamed `trace/search` to its first
    /// `$/progress` hit; the search is then cancelled and its answer read.
    fn first_hit(&mut self, mut params: Value) -> Duration {
        self.next += 1;
        let id = RequestId::from(self.next);
        let token = format!("hits-{}", self.next);
        params["partialResultToken"] = json!(token);
        let began = Instant::now();
        Message::Request(Request::new(id.clone(), "trace/search".into(), params))
            .write(&mut self.input)
            .unwrap();
        self.input.flush().unwrap();
        let mut first = None;
        loop {
            match Message::read(&mut self.output).unwrap() {
                Some(Message::Notification(note))
                    if note.method == "$/progress" && note.params["token"] == json!(token) =>
                {
                    let hits = note.params["value"]["hits"].as_array().map(Vec::len);
                    if first.is_none() && hits.unwrap_or(0) > 0 {
                        first = Some(began.elapsed());
                        Message::Notification(lsp_server::Notification::new(
                            "$/cancelRequest".into(),
                            json!({"id": self.next}),
                        ))
                        .write(&mut self.input)
                        .unwrap();
                        self.input.flush().unwrap();
                    }
                }
                Some(Message::Response(response)) => {
                    assert_eq!(response.id, id);
                    return first.expect("a streamed hit before the search's answer");
                }
                Some(Message::Notification(note)) if note.method == "$/progress" => {
                    panic!("a hit of an answered search: {:?}", note.params)
                }
                Some(_) => {}
                None => panic!("the server closed its output during a search"),
            }
        }
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = RequestId::from(self.next);
        Message::Request(Request::new(id.clone(), method.into(), params))
            .write(&mut self.input)
            .unwrap();
        self.input.flush().unwrap();
        loop {
            if let Some(Message::Response(response)) = Message::read(&mut self.output).unwrap() {
                assert_eq!(response.id, id);
                return response.response_result.expect(method);
            }
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.call("shutdown", Value::Null);
        let _ = Message::Notification(lsp_server::Notification::new("exit".into(), Value::Null))
            .write(&mut self.input);
        let _ = self.child.wait();
    }
}

/// A small deterministic generator for the pages' starts.
struct Starts(u64);

impl Starts {
    fn next(&mut self, below: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % below.max(1) as u64) as usize
    }
}

/// The page the library gives in-process: children, their lines and
/// quick counts, as the server computes each row.
fn library_page(reader: &LazyTraceReader, wide: tracetree::LazyNode, start: usize) -> usize {
    let parent = Parent::of(reader.node(wide).unwrap().tracepoint());
    let mut formatter = TextFormatter::new(reader.context(), true);
    let mut line = String::new();
    let page = reader.children_range(wide, start, PAGE).unwrap();
    for &child in &page {
        let data = reader.node(child).unwrap();
        line.clear();
        formatter
            .write_tracepoint(&mut line, data.tracepoint(), data.footer(), parent)
            .unwrap();
        reader.quick_child_count(child).unwrap();
    }
    page.len()
}

/// The time `search_each` takes to hand over its first hit in-process;
/// the search is then stopped.
fn library_first_hit(reader: &LazyTraceReader, pattern: &str, text: bool) -> Duration {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut options = SearchOptions::new(pattern);
    options.text = text;
    options.stop = Some(stop.clone());
    let first = std::sync::Mutex::new(None);
    let began = Instant::now();
    options
        .search_each(reader, &|_| {}, &|_| {
            first.lock().unwrap().get_or_insert_with(|| began.elapsed());
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        })
        .unwrap();
    first.into_inner().unwrap().expect("a hit")
}

fn p99(mut times: Vec<Duration>) -> (Duration, Duration) {
    times.sort();
    (times[times.len() / 2], times[times.len() * 99 / 100])
}

fn bench(c: &mut Criterion) {
    let (trace, cache) = trace();
    let mut client = Client::start(cache.path());
    let options = LazyOptions::default().sidecar_dir(Some(cache.path().join("lookups")));
    let reader = options.open(&trace).unwrap();
    let thread = reader.thread_ids()[0];
    let root = reader.roots(thread).unwrap()[0];
    let wide = reader.children_range(root, 0, 1).unwrap()[0];
    let children = reader.child_count(wide).unwrap();
    let opened = client.call(
        "trace/open",
        json!({"path": trace, "options": {"countTracepoints": false}}),
    );
    let t = opened["trace"].as_str().unwrap().to_string();
    let wide_handle = {
        let h = reader.handle(wide);
        format!("{}:{}", h.thread.get(), h.offset.get())
    };
    let mut group = c.benchmark_group("serve");
    group.sample_size(30);
    group.bench_function("open/server", |b| {
        b.iter(|| {
            let opened = client.call(
                "trace/open",
                json!({"path": trace, "options": {"countTracepoints": false}}),
            );
            client.call("trace/close", json!({"trace": opened["trace"]}));
        })
    });
    group.bench_function("open/library", |b| b.iter(|| options.open(&trace).unwrap()));
    let mut starts = Starts(0x9E37_79B9_7F4A_7C15);
    group.sample_size(200);
    group.bench_function("page-200/server", |b| {
        b.iter(|| {
            let start = starts.next(children - PAGE);
            client.call(
                "trace/children",
                json!({"trace": t, "node": wide_handle, "start": start, "count": PAGE}),
            )
        })
    });
    group.bench_function("page-200/library", |b| {
        b.iter(|| library_page(&reader, wide, starts.next(children - PAGE)))
    });
    group.finish();
    let (mut server, mut library) = (Vec::new(), Vec::new());
    for _ in 0..PAGES {
        let start = starts.next(children - PAGE);
        let began = Instant::now();
        page(&mut client, &t, &wide_handle, start);
        server.push(began.elapsed());
        let began = Instant::now();
        library_page(&reader, wide, start);
        library.push(began.elapsed());
    }
    let (server_median, server_p99) = p99(server);
    let (library_median, library_p99) = p99(library);
    eprintln!(
        "pages of {PAGE} over {PAGES} random starts in {children} children: server median \
         {server_median:?}, p99 {server_p99:?}; library median {library_median:?}, p99 {library_p99:?}"
    );
    for (pattern, text) in [("value", false), ("item.value = 7", true)] {
        let (mut server, mut library) = (Vec::new(), Vec::new());
        for _ in 0..FIRST_HITS {
            server.push(client.first_hit(json!({
                "trace": t, "pattern": pattern, "text": text
            })));
            library.push(library_first_hit(&reader, pattern, text));
        }
        let (server_median, server_p99) = p99(server);
        let (library_median, _) = p99(library);
        eprintln!(
            "first streamed hit of {pattern:?} (text {text}), {FIRST_HITS} searches: server median \
             {server_median:?}, p99 {server_p99:?}; library's first hit median {library_median:?}"
        );
    }
    drop(client);
    let alone = throughputs(1, &trace, cache.path(), &wide_handle, children)[0];
    let together = throughputs(CLIENTS, &trace, cache.path(), &wide_handle, children);
    let shown: Vec<String> = together
        .iter()
        .map(|pages| format!("{pages:.0} ({:.2})", pages / alone))
        .collect();
    eprintln!(
        "pages of {PAGE} a second, {CLIENT_PAGES} pages each: one client alone {alone:.0}; \
         {CLIENTS} clients at once (each beside alone) {}",
        shown.join(", ")
    );
}

/// A `trace/children` page of the wide call.
fn page(client: &mut Client, trace: &str, wide: &str, start: usize) -> Value {
    client.call(
        "trace/children",
        json!({"trace": trace, "node": wide, "start": start, "count": PAGE}),
    )
}

/// The pages a second of each of `clients` clients paging the wide call
/// at once, each through its own server.
fn throughputs(
    clients: usize,
    trace: &Path,
    cache: &Path,
    wide: &str,
    children: usize,
) -> Vec<f64> {
    let ready = std::sync::Barrier::new(clients);
    std::thread::scope(|scope| {
        let running: Vec<_> = (0..clients)
            .map(|n| {
                let ready = &ready;
                scope.spawn(move || {
                    let mut client = Client::start(cache);
                    let opened = client.call(
                        "trace/open",
                        json!({"path": trace, "options": {"countTracepoints": false}}),
                    );
                    let t = opened["trace"].as_str().unwrap().to_string();
                    let mut starts = Starts(0x2545_F491_4F6C_DD1D ^ n as u64);
                    // The call's child index is built by the first page
                    // past its first: not timed.
                    page(&mut client, &t, wide, children / 2);
                    ready.wait();
                    let began = Instant::now();
                    for _ in 0..CLIENT_PAGES {
                        page(&mut client, &t, wide, starts.next(children - PAGE));
                    }
                    CLIENT_PAGES as f64 / began.elapsed().as_secs_f64()
                })
            })
            .collect();
        running.into_iter().map(|t| t.join().unwrap()).collect()
    })
}

criterion_group!(benches, bench);
criterion_main!(benches);
