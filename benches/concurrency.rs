//! Threads sharing one lazy reader, as an IDE's threads expanding nodes
//! do: mixed random operations a second (a node decoded, its child count,
//! its first 16 children, its parent) with 1, 2, 4 and 8 threads, with the
//! resident window (the default) and without it. Each sample clears the
//! cache first and runs 40,000 operations on nodes drawn from 200,000
//! sampled uniformly, so most operations miss the cache. The threads live
//! across a sample's iterations, as an IDE's worker threads live across
//! requests, start each iteration together and take its operations from
//! one counter, as workers take requests from one queue: every thread
//! count runs the identical operations, and none waits idle for another
//! to finish a larger share. Each iteration wakes every thread twice,
//! which costs 8 threads about 75 µs more than 2 on 2 cores (bare
//! barriers: 110–117 against 34–46 µs), so an iteration is long enough for
//! that to stay below 0.2%: with 4,000 operations it cost 4 and 8 threads
//! 1–8% of 2 threads' figure. The baseline is the same operations on one
//! thread. Results: BENCHMARKS.md.
//!
//! ```text
//! TRACETREE_BENCH_SIZE=300MB cargo bench --bench concurrency   # 64 MB by default
//! ```

use std::hint::black_box;
use std::sync::Barrier;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tracetree::generate::Shape;
use tracetree::read::{LazyNode, LazyTraceReader, WalkDetail};

mod support;

/// Nodes sampled from the trace.
const SAMPLED: usize = 200_000;
/// Operations per sample, taken by the threads from one counter.
const OPERATIONS: usize = 40_000;

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

/// Operations `seed + i` on random nodes of `nodes` for each `i` the
/// thread takes from `next_operation` below `OPERATIONS`.
fn operate(
    reader: &LazyTraceReader,
    nodes: &[LazyNode],
    next_operation: &AtomicUsize,
    seed: u64,
) -> usize {
    let mut out = 0;
    loop {
        let i = next_operation.fetch_add(1, Ordering::Relaxed);
        if i >= OPERATIONS {
            return out;
        }
        let mut state = seed + i as u64;
        let random = next(&mut state);
        let node = nodes[(random % nodes.len() as u64) as usize];
        out += match (random >> 32) % 4 {
            0 => reader.node(node).unwrap().tracepoint().event().get() as usize,
            1 => reader.child_count(node).unwrap(),
            2 => reader.children_range(node, 0, 16).unwrap().len(),
            _ => reader.parent(node).unwrap().is_some() as usize,
        };
    }
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
                    let next_operation = AtomicUsize::new(0);
                    let mut total = Duration::ZERO;
                    std::thread::scope(|scope| {
                        for _ in 0..threads {
                            let (reader, nodes, barrier, next_operation) =
                                (&reader, &nodes, &barrier, &next_operation);
                            scope.spawn(move || {
                                for iteration in 0..iterations {
                                    let seed = iteration * OPERATIONS as u64;
                                    barrier.wait();
                                    black_box(operate(reader, nodes, next_operation, seed));
                                    barrier.wait();
                                }
                            });
                        }
                        for _ in 0..iterations {
                            reader.clear_cache();
                            next_operation.store(0, Ordering::Relaxed);
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
