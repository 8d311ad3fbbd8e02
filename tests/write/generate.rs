//! Generated traces have the shape asked for and are the same for a seed;
//! a generated trace 200,000 calls deep goes through every reader, printer,
//! dump and rebuild on a small stack.

use std::collections::BTreeSet;

use tracetree::TraceBytes;
use tracetree::generate::{Shape, ThreadGenerator};
use tracetree::lowlevel::IndexCell;
use tracetree::lowlevel::RebuiltIndex;
use tracetree::print::{PrintOptions, write_jsonl};
use tracetree::read::RebuildOptions;
use tracetree::read::{EagerTrace, IndexChoice, LazyTraceReader};
use tracetree::tree::TraceTree;
use tracetree::write::{DumpOptions, DumpWriter, TraceRecorder};

use tracetree_testkit::files::generated;
use tracetree_testkit::stack::on_small_stack;
use tracetree_testkit::stream::Count;

fn generate(shape: Shape, seed: u64, threads: u64, tracepoints: usize) -> (Vec<u8>, Vec<u8>) {
    let mut writer = DumpWriter::new();
    for t in 0..threads {
        let id = writer.add_thread(format!("worker-{t}")).unwrap();
        let mut generator = ThreadGenerator::new(shape, seed, t, threads);
        let start = writer.tracepoint_count();
        let mut emitted = 0usize;
        generator
            .run(&mut writer.thread(id).unwrap(), || {
                emitted += 256;
                emitted >= tracepoints
            })
            .unwrap();
        assert!(writer.tracepoint_count() > start);
    }
    writer.to_bytes().unwrap()
}

fn max_depth<T: TraceTree>(trace: &T) -> usize {
    let mut deepest = 0;
    for thread in trace.thread_ids() {
        let roots = trace.roots(thread).unwrap();
        trace
            .walk(&roots, |_, depth| {
                deepest = deepest.max(depth);
                Ok(())
            })
            .unwrap();
    }
    deepest
}

#[test]
fn same_seed_same_bytes_other_seed_other_bytes() {
    let a = generate(Shape::Mixed, 7, 2, 5_000);
    assert_eq!(a, generate(Shape::Mixed, 7, 2, 5_000));
    assert_ne!(a.0, generate(Shape::Mixed, 8, 2, 5_000).0);
}

#[test]
fn mixed_shape_has_every_common_kind_and_moderate_depth() {
    let (data, _) = generate(Shape::Mixed, 1, 1, 20_000);
    let trace = EagerTrace::load(TraceBytes::from_vec(data)).unwrap();
    let kinds: std::collections::BTreeSet<_> = trace
        .nodes()
        .map(|n| n.tracepoint().tracepoint_type())
        .collect();
    assert!(kinds.len() >= 8, "{kinds:?}");
    let depth = max_depth(&trace);
    // Calls nest at most 12 deep under the root; a loop and its iteration add two.
    assert!((3..=15).contains(&depth), "depth {depth}");
}

#[test]
fn wide_shape_is_one_call_with_all_the_children() {
    let (data, _) = generate(Shape::Wide, 1, 1, 50_000);
    let trace = EagerTrace::load(TraceBytes::from_vec(data)).unwrap();
    let root = trace.roots(trace.thread_ids()[0]).unwrap()[0];
    let fill = trace.children(root).unwrap();
    assert_eq!(fill.len(), 1);
    assert!(trace.child_count(fill[0]).unwrap() >= 45_000);
}

#[test]
fn deep_shape_nests_deeply() {
    let (data, _) = generate(Shape::Deep, 1, 1, 60_000);
    let trace = EagerTrace::load(TraceBytes::from_vec(data)).unwrap();
    assert!(max_depth(&trace) >= 25_000);
}

fn jsonl<T: TraceTree>(trace: &T) -> Vec<u8> {
    let mut out = Vec::new();
    write_jsonl(trace, None, &mut out).unwrap();
    out
}

#[test]
fn a_generated_trace_200_000_calls_deep_reads_prints_dumps_and_rebuilds_on_a_small_stack() {
    let dir = tempfile::tempdir().unwrap();
    // ~40 bytes per level (a call and a local write): 20 MB is more than
    // one whole recursion; 64 KiB blocks make each call span many blocks.
    let path = generated(dir.path(), Shape::Deep, 1, 20 << 20, Some(64 << 10));
    let data = std::fs::read(&path).unwrap();
    let index = std::fs::read(path.with_extension("trace.idx")).unwrap();
    on_small_stack(|| {
        let lazy = LazyTraceReader::open(&path).unwrap();
        let depth = max_depth(&lazy);
        assert!(depth >= Shape::DEEP_RECURSION, "depth {depth}");

        // Print and dump, lazily and eagerly.
        let mut printed = Count::default();
        PrintOptions::default().print(&lazy, &mut printed).unwrap();
        let eager = EagerTrace::load(TraceBytes::from_vec(data.clone())).unwrap();
        let mut printed_eagerly = Count::default();
        PrintOptions::default()
            .print(&eager, &mut printed_eagerly)
            .unwrap();
        assert_eq!(printed.0, printed_eagerly.0);
        // Indentation alone: 2 spaces per level, for every level.
        let levels = Shape::DEEP_RECURSION as u64;
        assert!(printed.0 > levels * (levels - 1), "{} bytes", printed.0);
        let dumped = jsonl(&lazy);
        assert_eq!(dumped, jsonl(&eager));
        assert!(dumped.len() > 2 * Shape::DEEP_RECURSION * 50);

        // Down to the deepest call (`recurse(n)` writes `i`, then calls
        // `recurse(n + 1)`), then its parent and a lookup by event id.
        let thread = lazy.thread_ids()[0];
        let root = lazy.root(thread).unwrap().unwrap();
        let mut node = lazy.children_range(root, 0, 1).unwrap()[0];
        for _ in 1..Shape::DEEP_RECURSION {
            node = lazy.children_range(node, 1, 1).unwrap()[0];
        }
        let event = lazy.node(node).unwrap().tracepoint().header.event;
        assert_eq!(lazy.node_by_event(event).unwrap(), Some(node));
        let parent = lazy.parent(node).unwrap().unwrap();
        assert_eq!(lazy.children_range(parent, 1, 1).unwrap()[0], node);
        assert_eq!(lazy.child_count(node).unwrap(), 1);

        // The parallel rebuild gives the writer's cells; the lazy reader's
        // own rebuild reads the same tree.
        let written: BTreeSet<IndexCell> = IndexCell::parse_file(&index)
            .unwrap()
            .0
            .into_iter()
            .map(IndexCell::canonical)
            .collect();
        for threads in [1, 2] {
            let mut options = RebuildOptions::default();
            options.threads = threads;
            options.chunk_size = 1 << 20;
            let rebuilt = RebuiltIndex::build(&data, options).unwrap();
            let rebuilt: BTreeSet<IndexCell> =
                rebuilt.cells().copied().map(IndexCell::canonical).collect();
            assert!(rebuilt == written, "{threads} thread(s)");
        }
        let scanned = LazyTraceReader::options()
            .index(IndexChoice::Rebuild)
            .open(&path)
            .unwrap();
        assert_eq!(jsonl(&scanned), dumped);

        // The collect-and-dump writer copies it.
        let (copy, _) = DumpWriter::from_trace(&lazy, DumpOptions::default())
            .unwrap()
            .to_bytes()
            .unwrap();
        let copy = EagerTrace::load(TraceBytes::from_vec(copy)).unwrap();
        assert_eq!(jsonl(&copy), dumped);
    });
}
