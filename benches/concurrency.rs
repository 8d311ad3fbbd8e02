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
//! thread. Criterion measures each thread count in turn, so the machine's
//! other load can move one count against another; the paired rounds that
//! follow (`paired_rounds`) measure every count in each round and take the
//! ratios within it. Results: BENCHMARKS.md.
//!
//! ```text
//! TRACETREE_BENCH_SIZE=300MB cargo bench --bench concurrency   # 64 MB by default
//! TRACETREE_CONCURRENCY_ROUNDS=0 cargo bench --bench concurrency  # criterion only
//! ```

use std::hint::black_box;
use std::sync::Barrier;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tracetree::generate::Shape;
use tracetree::read::{LazyNode, LazyOptions, LazyTraceReader};

mod support;

/// Nodes sampled from the trace.
const SAMPLED: usize = 200_000;
/// Operations per pass, taken by the threads from one counter.
const OPERATIONS: usize = 40_000;
/// Thread counts measured.
const THREADS: [usize; 4] = [1, 2, 4, 8];
/// Passes per thread count in each paired round.
const ROUND_PASSES: u64 = 4;

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
        let random = support::next_random(&mut state);
        let node = nodes[(random % nodes.len() as u64) as usize];
        out += match (random >> 32) % 4 {
            0 => reader.node(node).unwrap().tracepoint().event().get() as usize,
            1 => reader.child_count(node).unwrap(),
            2 => reader.children_range(node, 0, 16).unwrap().len(),
            _ => reader.parent(node).unwrap().is_some() as usize,
        };
    }
}

/// The time `threads` threads take to run `passes` passes of `OPERATIONS`
/// operations, each on a cleared cache (pass `p` runs the operations of
/// seed `p * OPERATIONS`). The threads start once and wait at a barrier
/// before and after each pass; only the passes are timed.
fn timed_passes(
    reader: &LazyTraceReader,
    nodes: &[LazyNode],
    threads: usize,
    passes: u64,
) -> Duration {
    let barrier = Barrier::new(threads + 1);
    let next_operation = AtomicUsize::new(0);
    let mut total = Duration::ZERO;
    std::thread::scope(|scope| {
        for _ in 0..threads {
            let (barrier, next_operation) = (&barrier, &next_operation);
            scope.spawn(move || {
                for pass in 0..passes {
                    let seed = pass * OPERATIONS as u64;
                    barrier.wait();
                    black_box(operate(reader, nodes, next_operation, seed));
                    barrier.wait();
                }
            });
        }
        for _ in 0..passes {
            reader.clear_cache();
            next_operation.store(0, Ordering::Relaxed);
            let start = Instant::now();
            barrier.wait();
            barrier.wait();
            total += start.elapsed();
        }
    });
    total
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
        (Some(LazyOptions::DEFAULT_RESIDENT_WINDOW), "window"),
        (None, "no window"),
    ] {
        let reader = support::with_sidecar()
            .resident_window(window)
            .open(&trace)
            .unwrap();
        let nodes = support::random_nodes(&reader, SAMPLED, |_| true);
        for threads in THREADS {
            group.bench_function(format!("{threads} threads, {label}"), |b| {
                b.iter_custom(|passes| timed_passes(&reader, &nodes, threads, passes));
            });
        }
    }
    group.finish();
}

/// Paired rounds, resident window on: each round measures every thread
/// count (`ROUND_PASSES` passes each, the order rotated from round to
/// round), and each ratio is taken within its round, so a change in the
/// machine's other load between rounds moves both sides of a ratio
/// alike. Writes its table to stderr and
/// `target/bench-traces/concurrency-SIZE.md`. `TRACETREE_CONCURRENCY_ROUNDS`
/// sets the rounds (15; 0 skips them).
fn paired_rounds(_: &mut Criterion) {
    let rounds: usize = std::env::var("TRACETREE_CONCURRENCY_ROUNDS")
        .ok()
        .and_then(|rounds| rounds.parse().ok())
        .unwrap_or(15);
    if rounds == 0 {
        return;
    }
    let size = support::bench_size();
    let (trace, _) = support::generated(Shape::Mixed, 2, size);
    let reader = support::with_sidecar().open(&trace).unwrap();
    let nodes = support::random_nodes(&reader, SAMPLED, |_| true);
    let operations = (OPERATIONS as u64 * ROUND_PASSES) as f64;
    // Operations a second, per round, per entry of `THREADS`.
    let mut rates = vec![[0.0f64; THREADS.len()]; rounds];
    for (round, rate) in rates.iter_mut().enumerate() {
        for turn in 0..THREADS.len() {
            let which = (round + turn) % THREADS.len();
            let time = timed_passes(&reader, &nodes, THREADS[which], ROUND_PASSES);
            rate[which] = operations / time.as_secs_f64();
        }
    }
    let mut table = format!(
        "Paired rounds, {}MB, resident window on: {rounds} rounds of {} \
         operations per thread count; ratios within each round.\n\n\
         | threads | operations a second (median) | ratio | median | lowest | highest | rounds below 1 |\n\
         |---:|---:|---|---:|---:|---:|---:|\n",
        size >> 20,
        operations,
    );
    for (which, threads) in THREADS.iter().enumerate() {
        let rate = support::median(&mut rates.iter().map(|rate| rate[which]).collect::<Vec<_>>());
        let (against, label) = match which {
            0 => (None, "baseline"),
            1 => (Some(0), "to 1 thread"),
            _ => (Some(1), "to 2 threads"),
        };
        let row = match against {
            None => format!("| {threads} | {rate:.0} | {label} | | | | |\n"),
            Some(base) => {
                let mut ratios: Vec<f64> =
                    rates.iter().map(|rate| rate[which] / rate[base]).collect();
                let below = ratios.iter().filter(|&&ratio| ratio < 1.0).count();
                // Sorted by the median.
                let middle = support::median(&mut ratios);
                let (lowest, highest) = (ratios[0], ratios[ratios.len() - 1]);
                format!(
                    "| {threads} | {rate:.0} | {label} | {middle:.3} | {lowest:.3} | {highest:.3} | {below} of {rounds} |\n"
                )
            }
        };
        table.push_str(&row);
    }
    eprintln!("\n{table}");
    let path = support::trace_dir().join(format!("concurrency-{}MB.md", size >> 20));
    std::fs::write(&path, table).unwrap();
}

criterion_group!(benches, concurrency, paired_rounds);
criterion_main!(benches);
