//! Benchmarks of the lazy reader against a raw scan of the same mapped bytes.
//!
//! The trace is generated once into `target/bench-traces/` (2 threads, 1 MiB
//! blocks; each thread's root call holds one wide call with millions of
//! children at GB sizes). Its size comes from `TRACETREE_BENCH_SIZE`
//! (suffix KB, MB or GB; default 64MB):
//!
//! ```text
//! TRACETREE_BENCH_SIZE=1GB cargo bench --bench lazy
//! ```
//!
//! The open benchmarks run without the lookup sidecar, and with it
//! ("sidecar present"; it is written once, timed, before them).
//!
//! Besides criterion's report, a summary (sizes, lookup memory, resident
//! memory after a traversal) goes to stderr. Results: BENCHMARKS.md.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rayon::prelude::*;
use tracetree::TraceBytes;
use tracetree::common::ThreadId;
use tracetree::print::{PrintOptions, write_jsonl};
use tracetree::read::{
    IndexChoice, LazyOptions, LazyTraceReader, SidecarOutcome, SidecarPolicy, WalkDetail,
};
use tracetree::tree::TraceTree;

mod support;

use support::{
    bench_size, raw_scan, status_bytes, trace, walk_headers, walk_headers_parallel, walk_tracetree,
};

const MB: u64 = 1 << 20;

/// Options that neither read nor write the lookup sidecar, so the other
/// benchmarks measure the index path.
fn no_sidecar() -> LazyOptions {
    LazyTraceReader::options().sidecar(SidecarPolicy::Off)
}

/// Decodes every tracepoint and footer of `threads` in place.
fn full_decode(reader: &LazyTraceReader, threads: &[ThreadId]) -> u64 {
    let mut nodes = 0u64;
    for &thread in threads {
        reader
            .walk_thread(thread, WalkDetail::Full, |walked| {
                nodes += walked.tracepoint.is_some() as u64;
                Ok(true)
            })
            .unwrap();
    }
    nodes
}

fn lazy(c: &mut Criterion) {
    let size = bench_size();
    let path = trace(size);
    let data = TraceBytes::map(&path).unwrap();
    let len = data.len();
    let label = if len >= 1 << 30 {
        format!("{:.1}GB", len as f64 / (1u64 << 30) as f64)
    } else {
        format!("{}MB", len / MB)
    };
    let reader = no_sidecar().open(&path).unwrap();
    assert!(reader.report().index_used());
    let thread = reader.thread_ids()[0];
    let root = reader.root(thread).unwrap().unwrap();
    let wide = reader.children_range(root, 0, 1).unwrap()[0];
    let wide_content = reader.node(wide).unwrap().content().unwrap();
    let wide_bytes = wide_content.end.get() - wide_content.start.get();
    let wide_children = reader.child_count(wide).unwrap();
    let nodes = walk_headers(&reader);
    eprintln!(
        "trace {label}: {len} bytes, {} threads, {} blocks, {} containers, {nodes} tracepoints; \
         index {} bytes; lookup structures {} bytes of heap; wide call: {wide_children} children in {wide_bytes} bytes",
        reader.thread_ids().len(),
        reader.report().blocks,
        reader.report().containers,
        std::fs::metadata(LazyTraceReader::index_path(&path))
            .unwrap()
            .len(),
        reader.lookup_heap_bytes(),
    );

    let mut group = c.benchmark_group(format!("lazy-{label}"));
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(if len > 256 * MB { 20 } else { 5 }));

    group.throughput(Throughput::Bytes(len));
    group.bench_function("raw_scan (baseline)", |b| {
        b.iter(|| raw_scan(black_box(data.as_slice())))
    });
    // Closing (unmapping) is not part of opening: readers drop untimed.
    group.bench_function("open (index present)", |b| {
        b.iter_with_large_drop(|| no_sidecar().open(&path).unwrap())
    });
    // The sidecar: written once (timed here), then used by every open.
    let _ = std::fs::remove_file(LazyTraceReader::sidecar_path(
        &support::sidecar_dir(),
        &path,
    ));
    let started = std::time::Instant::now();
    let first = support::with_sidecar().open(&path).unwrap();
    let written = started.elapsed();
    assert_eq!(
        first.report().sidecar.clone().unwrap(),
        SidecarOutcome::Written
    );
    drop(first);
    eprintln!(
        "first open writing the sidecar: {:.0} ms; sidecar {} bytes",
        written.as_secs_f64() * 1e3,
        std::fs::metadata(LazyTraceReader::sidecar_path(
            &support::sidecar_dir(),
            &path
        ))
        .unwrap()
        .len()
    );
    assert!(
        support::with_sidecar()
            .open(&path)
            .unwrap()
            .report()
            .sidecar_used()
    );
    group.bench_function("open (sidecar present)", |b| {
        b.iter_with_large_drop(|| support::with_sidecar().open(&path).unwrap())
    });
    group.bench_function("open + build every thread's container table", |b| {
        b.iter_with_large_drop(|| {
            let reader = no_sidecar().open(&path).unwrap();
            reader.build_lookups();
            reader
        })
    });
    group.bench_function("traversal: headers, sequential", |b| {
        b.iter(|| walk_headers(&reader))
    });
    // Every node with its header, the threads walked in parallel.
    group.bench_function("traversal: headers, threads in parallel", |b| {
        b.iter(|| walk_headers_parallel(&reader))
    });
    group.bench_function("traversal: full decode, sequential", |b| {
        b.iter(|| full_decode(&reader, &reader.thread_ids()))
    });
    group.bench_function("traversal: full decode, threads in parallel", |b| {
        b.iter(|| {
            reader
                .walk_threads(
                    WalkDetail::Full,
                    |_| 0u64,
                    |nodes, walked| {
                        *nodes += walked.tracepoint.is_some() as u64;
                        Ok(true)
                    },
                )
                .unwrap()
                .iter()
                .sum::<u64>()
        })
    });
    // What `print` and `dump` run: TraceTree::walk_visit over every root,
    // with a small cache (the walk streams; the cache serves random access).
    let small = no_sidecar().cache_bytes(1 << 20).open(&path).unwrap();
    group.bench_function("traversal: TraceTree walk_visit, 1 MiB cache", |b| {
        b.iter(|| walk_tracetree(&small, &small.thread_ids()))
    });
    // The printers themselves, on every core, into a sink.
    group.bench_function("print --verbose to a sink, 1 MiB cache", |b| {
        let mut options = PrintOptions::default();
        options.verbose = true;
        b.iter(|| options.print(&small, &mut std::io::sink()).unwrap())
    });
    group.bench_function("dump --format jsonl to a sink, 1 MiB cache", |b| {
        b.iter(|| write_jsonl(&small, None, &mut std::io::sink()).unwrap())
    });
    group.bench_function(
        "traversal: TraceTree walk_visit, threads in parallel, 1 MiB cache",
        |b| {
            b.iter(|| {
                small
                    .thread_ids()
                    .par_iter()
                    .map(|&thread| walk_tracetree(&small, &[thread]))
                    .sum::<u64>()
            })
        },
    );
    if len <= 256 * MB {
        group.bench_function(
            "traversal: TraceTree walk + visit node by node (cached), 1 MiB cache",
            |b| {
                b.iter(|| {
                    let mut nodes = 0u64;
                    for thread in small.thread_ids() {
                        let roots = small.roots(thread).unwrap();
                        small
                            .walk(&roots, |node, _| {
                                nodes += small.visit(node, |t, _| t.event().get() as u64 & 1)?;
                                Ok(())
                            })
                            .unwrap();
                    }
                    nodes
                })
            },
        );
        group.bench_function("open (rebuild by scan)", |b| {
            b.iter_with_large_drop(|| {
                no_sidecar()
                    .index(IndexChoice::Rebuild)
                    .open(&path)
                    .unwrap()
            })
        });
    }

    group.throughput(Throughput::Bytes(wide_bytes));
    group.bench_function("wide call: all children, cold cache", |b| {
        b.iter(|| {
            reader.clear_cache();
            reader.children(wide).unwrap().len()
        })
    });
    group.throughput(Throughput::Elements(1000));
    let open_and_expand = |options: LazyOptions| {
        let reader = options.open(&path).unwrap();
        let root = reader.root(thread).unwrap().unwrap();
        let wide = reader.children_range(root, 0, 1).unwrap()[0];
        let children = reader.children_range(wide, 0, 1000).unwrap();
        (reader, children)
    };
    group.bench_function("open + first 1000 children of the wide call", |b| {
        b.iter_with_large_drop(|| open_and_expand(no_sidecar()))
    });
    group.bench_function(
        "open + first 1000 children of the wide call (sidecar present)",
        |b| b.iter_with_large_drop(|| open_and_expand(support::with_sidecar())),
    );
    group.bench_function("wide call: first 1000 children, cold cache", |b| {
        b.iter(|| {
            reader.clear_cache();
            reader.children_range(wide, 0, 1000).unwrap().len()
        })
    });
    reader.children_range(wide, 0, 1000).unwrap();
    group.bench_function("wide call: first 1000 children, warm", |b| {
        b.iter(|| reader.children_range(wide, 0, 1000).unwrap().len())
    });
    reader.child_count(wide).unwrap();
    let middle = wide_children / 2;
    reader.children_range(wide, middle, 1000).unwrap();
    group.bench_function("wide call: 1000 children from the middle, warm", |b| {
        b.iter(|| reader.children_range(wide, middle, 1000).unwrap().len())
    });
    group.finish();

    // Resident memory of a full-decode traversal, threads in parallel, with
    // the default resident window and with none (the bounds themselves are
    // asserted by tests/memory/lazy_memory.rs, one test at a time; here, the
    // mapped file pages a traversal leaves resident).
    for (what, window) in [
        ("default window", Some(LazyOptions::DEFAULT_RESIDENT_WINDOW)),
        ("no window", None),
    ] {
        let small = LazyTraceReader::options()
            .cache_bytes(1 << 20)
            .resident_window(window)
            .open(&path)
            .unwrap();
        small.build_lookups();
        let file = status_bytes("RssFile:");
        let peak = std::sync::atomic::AtomicU64::new(file);
        let nodes: u64 = small
            .walk_threads(
                WalkDetail::Full,
                |_| 0u64,
                |nodes, _| {
                    *nodes += 1;
                    if nodes.is_multiple_of(1 << 16) {
                        peak.fetch_max(
                            status_bytes("RssFile:"),
                            std::sync::atomic::Ordering::Relaxed,
                        );
                    }
                    Ok(true)
                },
            )
            .unwrap()
            .iter()
            .sum();
        eprintln!(
            "full traversal, threads in parallel, {what}: {nodes} nodes; lookup tables {} MB of heap; \
             mapped file pages resident (RssFile) grew by up to {} MB during the walk, {} MB after",
            small.lookup_heap_bytes() / MB as usize,
            peak.into_inner().saturating_sub(file) / MB,
            status_bytes("RssFile:").saturating_sub(file) / MB,
        );
    }
}

criterion_group!(benches, lazy);
criterion_main!(benches);
