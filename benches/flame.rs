//! Flame graphs and sandwiches (`export::stacks::flame`) of the generated
//! mixed trace of `TRACETREE_BENCH_SIZE` bytes (64 MB by default, 2
//! threads), beside a raw scan of the same mapped bytes and the headers
//! walk of the same reader. Criterion reports bytes of trace per second:
//! the whole trace's cases walk both threads in parallel, the thread's
//! and the node's one thread alone (a thread's bytes are about half the
//! trace's; the throughput counted is the whole trace's for every case, so
//! compare those on the same scope: `containers_walk_one_thread` is the
//! walk alone under the one-thread flame graph, and
//! `flame_one_thread_one_core` the same flame graph as one walk on one
//! core, the baseline of its walk cut across cores).
//!
//! Run with `cargo bench --bench flame`.

mod support;

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tracetree::export::stacks::flame::{FlameGraph, FlameOptions};
use tracetree::read::WalkDetail;
use tracetree::{FileAccess, TraceBytes};

fn bench(c: &mut Criterion) {
    let (bytes, reader) = support::mixed_reader();
    let (path, _) = support::generated(tracetree::generate::Shape::Mixed, 2, support::bench_size());
    let data = TraceBytes::open(&path, FileAccess::Map).unwrap();
    let whole = FlameOptions::default();
    let graph = FlameGraph::build(&reader, &whole, &|_| {}).unwrap();
    let thread = reader.thread_ids()[0];
    let mut one_thread = FlameOptions::default();
    one_thread.threads = Some(vec![thread]);
    // The thread's first root: most of its bytes.
    let node = reader.roots_range(thread, 0, 1).unwrap()[0];
    let mut one_node = FlameOptions::default();
    one_node.node = Some(node);
    // The sandwich of the widest frame below the threads'.
    let method = graph
        .frames
        .iter()
        .filter(|f| f.depth >= 3)
        .max_by_key(|f| f.total)
        .map(|f| f.name.to_string())
        .unwrap();
    eprintln!(
        "flame: {} frames kept of {} paths, root {} tracepoints; sandwich of {method}",
        graph.frames.len(),
        graph.frames.len() as u64 + graph.left_out,
        graph.total()
    );
    let mut group = c.benchmark_group("flame");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    group.throughput(Throughput::Bytes(bytes));
    group.bench_function("raw_scan_baseline", |b| {
        b.iter(|| black_box(support::raw_scan(data.as_slice())))
    });
    group.bench_function("headers_walk_parallel", |b| {
        b.iter(|| black_box(support::walk_headers_parallel(&reader)))
    });
    group.bench_function("flame_whole_trace", |b| {
        b.iter(|| black_box(FlameGraph::build(&reader, &whole, &|_| {}).unwrap()))
    });
    group.bench_function("containers_walk_one_thread", |b| {
        b.iter(|| {
            let mut nodes = 0u64;
            reader
                .walk_thread(thread, WalkDetail::Containers, |_| {
                    nodes += 1;
                    Ok(true)
                })
                .unwrap();
            black_box(nodes)
        })
    });
    group.bench_function("flame_one_thread", |b| {
        b.iter(|| black_box(FlameGraph::build(&reader, &one_thread, &|_| {}).unwrap()))
    });
    // The one walk on one core: the baseline of the cut walks above.
    let one_core = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    group.bench_function("flame_one_thread_one_core", |b| {
        b.iter(|| {
            one_core
                .install(|| black_box(FlameGraph::build(&reader, &one_thread, &|_| {}).unwrap()))
        })
    });
    group.bench_function("flame_one_node", |b| {
        b.iter(|| black_box(FlameGraph::build(&reader, &one_node, &|_| {}).unwrap()))
    });
    group.bench_function("sandwich_whole_trace", |b| {
        b.iter(|| black_box(FlameGraph::sandwich(&reader, &method, &whole, &|_| {}).unwrap()))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
