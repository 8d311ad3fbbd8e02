//! Threads sharing one lazy reader, as an IDE's threads expanding nodes
//! do: mixed random operations a second (a node decoded, its child count,
//! its first 16 children, its parent) with 1, 2, 4 and 8 threads, with the
//! resident window (the default) and without it. Each sample clears the
//! cache first and runs 4,000 operations on nodes drawn from 20,000
//! sampled uniformly, so most operations miss the cache. The threads live
//! across a sample's iterations, as an IDE's worker threads live across
//! requests, and start each iteration together: spawning them for every
//! iteration (11 ms at 4,000 operations) cost 10–20% at 4 and 8 threads on
//! 2 cores, which is thread creation's, not the reader's. The baseline is
//! the same operations on one thread. Results: BENCHMARKS.md.
//!
//! ```text
//! TRACETREE_BENCH_SIZE=300MB cargo bench --bench concurrency   # 64 MB by default
//! ```

use std::hint::black_box;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tracetree::generate::Shape;
use tracetree::read::{LazyNode, LazyTraceReader, WalkDetail};

mod support;

/// Nodes sampled from the trace.
const SAMPLED: usize = 20_000;
/// Operations per sample, shared out between the threads.
const OPERATIONS: usize = 4_000;

/// `SAMPLED` nodes chosen uniformly (reservoir sampling over a headers
/// walk), the same every run.
fn sample(reader: &LazyTraceReader) -> Vec<LazyNode> {
    let (mut nodes, mut seen, mut state) = (Vec::with_capacity(SAMPLED), 0u64, 7u64);
    for thread in reader.thread_ids() {
        reader
            .walk_thread(thread, WalkDetail::Headers, |walked| {
                seen += 1;
                if nodes.len() < SAMPLED {
                    nodes.push(walked.node);
                } else if let Some(slot) = nodes.get_mut((next(&mut state) % seen) as usize) {
                    *slot = walked.node;
                }
                Ok(true)
            })
            .unwrap();
    }
    nodes
}

/// SplitMix64.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `count` operations on random nodes of `nodes`, seeded by `seed`.
fn operate(reader: &LazyTraceReader, nodes: &[LazyNode], count: usize, seed: u64) -> usize {
    let mut state = seed;
    let mut out = 0;
    for _ in 0..count {
        let random = next(&mut state);
        let node = nodes[(random % nodes.len() as u64) as usize];
        out += match (random >> 32) % 4 {
            0 => reader.node(node).unwrap().tracepoint().event().get() as usize,
            1 => reader.child_count(node).unwrap(),
            2 => reader.children_range(node, 0, 16).unwrap().len(),
            _ => reader.parent(node).unwrap().is_some() as usize,
        };
    }
    out
}

fn concurrency(c: &mut Criterion) {
    let size = support::bench_size();
    let (trace, _) = support::generated(Shape::Mixed, 2, size);
    let mut group = c.benchmark_group(format!("concurrency-{}MB", size >> 20));
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10))
        .throughput(Throughput::Elements(OPERATIONS as u64));
    for (window, label) in [
        (
            Some(tracetree::read::LazyOptions::DEFAULT_RESIDENT_WINDOW),
            "window",
        ),
        (None, "no window"),
    ] {
        let reader = support::with_sidecar()
            .resident_window(window)
            .open(&trace)
            .unwrap();
        let nodes = sample(&reader);
        for threads in [1usize, 2, 4, 8] {
            group.bench_function(format!("{threads} threads, {label}"), |b| {
                b.iter_custom(|iterations| {
                    let barrier = Barrier::new(threads + 1);
                    let mut total = Duration::ZERO;
                    std::thread::scope(|scope| {
                        for t in 0..threads {
                            let (reader, nodes, barrier) = (&reader, &nodes, &barrier);
                            scope.spawn(move || {
                                for iteration in 0..iterations {
                                    let seed = iteration * 64 + t as u64;
                                    barrier.wait();
                                    black_box(operate(reader, nodes, OPERATIONS / threads, seed));
                                    barrier.wait();
                                }
                            });
                        }
                        for _ in 0..iterations {
                            reader.clear_cache();
                            let start = Instant::now();
                            barrier.wait();
                            barrier.wait();
                            total += start.elapsed();
                        }
                    });
                    total
                });
            });
        }
    }
    group.finish();
}

criterion_group!(benches, concurrency);
criterion_main!(benches);
