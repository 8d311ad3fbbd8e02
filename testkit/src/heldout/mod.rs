//! Helpers of the held-out-style tests: the independent validator, traces
//! written by the streaming writer's concurrent producers, and comparisons
//! of what the readers show with what the data's complete blocks hold.

pub mod validator;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use tracetree::common::EventId;
use tracetree::generate::{GenerateOptions, Shape, generate_file};
use tracetree::print::write_jsonl;
use tracetree::read::{IndexChoice, LazyTraceReader, SidecarPolicy};
use tracetree::tree::TraceTree;

use validator::Flat;

/// A streamed trace of `shape` at `dir/NAME.trace`: `threads` producers
/// recording at once into blocks of `block_size` payload bytes.
pub fn streamed(
    dir: &Path,
    name: &str,
    shape: Shape,
    threads: usize,
    block_size: usize,
    size: u64,
    seed: u64,
) -> PathBuf {
    let path = dir.join(format!("{name}.trace"));
    let options = GenerateOptions {
        size,
        threads,
        shape,
        seed,
        block_size: Some(block_size),
    };
    generate_file(&path, &options, |_| {}).unwrap();
    path
}

/// The structure a JSON-lines dump shows.
pub fn parse_jsonl(text: &[u8]) -> Vec<Flat> {
    std::str::from_utf8(text)
        .unwrap()
        .lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let kind = v["kind"].as_str().unwrap().to_owned();
            Flat {
                thread: v["thread"].as_i64().unwrap() as i32,
                depth: v["depth"].as_u64().unwrap() as usize,
                event: v["event_id"].as_i64().unwrap() as i32,
                kind: Box::leak(kind.into_boxed_str()),
                children: v["children"].as_u64().unwrap() as usize,
                unfinished: v.get("unfinished").and_then(|u| u.as_bool()) == Some(true),
            }
        })
        .collect()
}

/// The lazy reader's dump of any tree, as structure.
pub fn dump<T: TraceTree>(tree: &T) -> tracetree::Result<Vec<Flat>> {
    let mut out = Vec::new();
    write_jsonl(tree, None, &mut out)?;
    Ok(parse_jsonl(&out))
}

/// Opens `path` lazily, without the sidecar (so each case sees its files).
pub fn open_lazy(path: &Path, cache_bytes: usize) -> tracetree::Result<LazyTraceReader> {
    LazyTraceReader::options()
        .sidecar(SidecarPolicy::Off)
        .index(IndexChoice::UseOrRebuild)
        .cache_bytes(cache_bytes)
        .open(path)
}

/// Asserts that two structures are equal, naming the first difference.
pub fn assert_same(found: &[Flat], expected: &[Flat], what: &str) {
    if let Some(i) = (0..found.len().min(expected.len())).find(|&i| found[i] != expected[i]) {
        panic!(
            "{what}: node {i} differs: found {:?}, expected {:?}",
            found[i], expected[i]
        );
    }
    assert_eq!(found.len(), expected.len(), "{what}: node counts differ");
}

/// Each container's children's event ids, from a pre-order structure.
pub fn children_by_event(nodes: &[Flat]) -> HashMap<i32, Vec<i32>> {
    let mut out: HashMap<i32, Vec<i32>> = HashMap::new();
    let mut stack: Vec<(usize, i32)> = Vec::new();
    for node in nodes {
        while stack.last().is_some_and(|&(d, _)| d >= node.depth) {
            stack.pop();
        }
        if let Some(&(_, parent)) = stack.last() {
            out.entry(parent).or_default().push(node.event);
        }
        if node.children > 0 || node.kind == "method_call" || node.kind.starts_with("loop") {
            out.entry(node.event).or_default();
        }
        stack.push((node.depth, node.event));
    }
    out
}

/// Checks pages of children (`[from, from + count)`) of up to `limit`
/// containers against `expected` (by event id), through `node_by_event`.
pub fn check_pages(
    reader: &LazyTraceReader,
    expected: &HashMap<i32, Vec<i32>>,
    limit: usize,
    seed: u64,
    what: &str,
) {
    let mut containers: Vec<_> = expected.iter().collect();
    containers.sort_unstable_by_key(|(event, _)| **event);
    let step = (containers.len() / limit.max(1)).max(1);
    let mut rng = seed | 1;
    for (event, children) in containers.into_iter().step_by(step) {
        let node = reader
            .node_by_event(EventId::new(*event))
            .unwrap_or_else(|e| panic!("{what}: node_by_event({event}): {e}"))
            .unwrap_or_else(|| panic!("{what}: no node with event {event}"));
        assert_eq!(
            reader.node(node).unwrap().tracepoint().event().get(),
            *event,
            "{what}"
        );
        assert_eq!(
            reader.child_count(node).unwrap(),
            children.len(),
            "{what}: count of {event}"
        );
        for _ in 0..3 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let from = (rng as usize) % (children.len() + 2);
            let count = (rng >> 20) as usize % 1500 + 1;
            let page = reader.children_range(node, from, count).unwrap();
            let got: Vec<i32> = page
                .iter()
                .map(|&n| reader.node(n).unwrap().tracepoint().event().get())
                .collect();
            let low = from.min(children.len());
            let high = from.saturating_add(count).min(children.len());
            assert_eq!(
                got,
                children[low..high],
                "{what}: children of {event} [{from}, +{count})"
            );
        }
    }
}

use tracetree::model::Type;
use tracetree::write::{
    CallOutcome, CallSpec, CodeLocationSpec, FieldSpec, MethodSpec, StreamingOptions,
    StreamingWriter, ThreadRecorder, ValueSpec, VariableSpec,
};

/// Records a pseudo-random program of `steps` tracepoints per thread into
/// `writer` from `threads` producer threads at once: calls nested up to
/// `depth` deep, loops, leaves, and now and then a leaf too big for a block
/// (so blocks end right after a call header). `snapshot` runs on the
/// calling thread while they record.
pub fn record_concurrently(
    writer: &StreamingWriter,
    threads: usize,
    steps: usize,
    depth: usize,
    seed: u64,
    snapshot: impl FnOnce(),
) {
    let method = MethodSpec::new("app.Worker", "step", vec![Type::Int], Type::Int);
    let field = FieldSpec::new("app.Worker", "total", Type::Long);
    let local = VariableSpec::new("x", Type::Int);
    std::thread::scope(|scope| {
        for t in 0..threads {
            let mut thread = writer.new_thread(format!("worker-{t}")).unwrap();
            let (method, field, local) = (&method, &field, &local);
            scope.spawn(move || {
                let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (t as u64 + 1);
                let mut next = move |n: u64| {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    rng % n
                };
                let at = CodeLocationSpec::line("Worker.kt", "app.Worker", "step", 10 + t as i32);
                let receiver = ValueSpec::object("app.Worker", t as i32);
                // 0 = call, 1 = loop, 2 = iteration
                let mut open: Vec<u8> = Vec::new();
                for i in 0..steps {
                    let room = open.len() < depth;
                    match next(10) {
                        0..=2 if room => {
                            let call = CallSpec::new(method)
                                .on(receiver.clone())
                                .with_argument(i as i32);
                            thread.enter_call(Some(&at), call).unwrap();
                            open.push(0);
                        }
                        3 if room => {
                            thread.enter_loop(Some(&at), i as i32).unwrap();
                            thread.enter_iteration().unwrap();
                            open.extend([1, 2]);
                        }
                        4 | 5 if !open.is_empty() => match open.pop().unwrap() {
                            0 => thread.exit_call(CallOutcome::returned(i as i32)).unwrap(),
                            _ => {
                                thread.exit_iteration().unwrap();
                                open.pop();
                                thread.exit_loop(1).unwrap();
                            }
                        },
                        6 => {
                            let big = "y".repeat(next(400) as usize);
                            thread
                                .throw(Some(&at), ValueSpec::string(big.as_str()))
                                .unwrap();
                        }
                        7 => {
                            thread
                                .write_local(Some(&at), local, ValueSpec::Int(i as i32))
                                .unwrap();
                        }
                        _ => {
                            thread
                                .write_field(
                                    Some(&at),
                                    field,
                                    receiver.clone(),
                                    ValueSpec::Long(i as i64),
                                )
                                .unwrap();
                        }
                    }
                }
                while let Some(kind) = open.pop() {
                    match kind {
                        0 => thread.exit_call(CallOutcome::VOID).unwrap(),
                        _ => {
                            thread.exit_iteration().unwrap();
                            open.pop();
                            thread.exit_loop(1).unwrap();
                        }
                    }
                }
            });
        }
        snapshot();
    });
}

/// A streaming writer to `path` with blocks of `block_size` bytes.
pub fn streaming_writer(path: &Path, block_size: usize) -> StreamingWriter {
    let mut options = StreamingOptions::default();
    options.block_size = block_size;
    options.flush_threshold = 0;
    options.queue_capacity = 2;
    StreamingWriter::create_with_options(path, options).unwrap()
}
