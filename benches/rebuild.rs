//! The parallel index rebuild on 1 and 2 threads, whole and in windows,
//! against a raw scan of the same mapped bytes, all in the same run.
//!
//! ```text
//! TRACETREE_BENCH_SIZE=1GB cargo bench --bench rebuild
//! TRACETREE_BENCH_TRACE=/path/to/some.trace cargo bench --bench rebuild
//! ```
//!
//! The trace is `TRACETREE_BENCH_TRACE` when set, else a `tracetree gen`
//! mixed trace of `TRACETREE_BENCH_SIZE` (64 MB by default; 2 producer
//! threads, 1 MiB blocks, seed 1), generated once into
//! `target/bench-traces/` (the one `benches/sizes.rs` uses).

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tracetree::TraceBytes;
use tracetree::generate::Shape;
use tracetree::lowlevel::RebuiltIndex;
use tracetree::read::EagerTrace;
use tracetree::read::RebuildOptions;

mod support;

use support::{bench_size, generated, raw_scan};

fn rebuild(c: &mut Criterion) {
    let path = match std::env::var_os("TRACETREE_BENCH_TRACE") {
        Some(path) => PathBuf::from(path),
        None => generated(Shape::Mixed, 2, bench_size()).0,
    };
    let data = TraceBytes::map(&path).unwrap();
    raw_scan(data.as_slice()); // warm the page cache
    let mut group = c.benchmark_group(format!("rebuild/{}MB", data.len() >> 20));
    group.throughput(Throughput::Bytes(data.len()));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    group.bench_function("raw_scan (baseline)", |b| {
        b.iter(|| raw_scan(black_box(data.as_slice())))
    });
    for threads in [1, 2] {
        group.bench_function(format!("rebuild {threads} thread(s)"), |b| {
            let mut options = RebuildOptions::default();
            options.threads = threads;
            options.chunk_size = 0;
            // The ~160 MB of cells per GB are dropped outside the timing.
            b.iter_with_large_drop(|| {
                RebuiltIndex::build(black_box(data.as_slice()), options).unwrap()
            })
        });
    }
    // In windows (what `tracetree index` and an open without an index run):
    // each window's cells are dropped inside the timing, as they are there.
    for window in [RebuildOptions::DEFAULT_WINDOW, 16 << 20] {
        group.bench_function(
            format!("rebuild 2 threads in {} MiB windows", window >> 20),
            |b| {
                let mut options = RebuildOptions::default();
                options.threads = 2;
                options.chunk_size = 0;
                b.iter(|| {
                    let mut cells = 0;
                    options
                        .rebuild_windowed(
                            black_box(data.as_slice()),
                            window,
                            &|_| {},
                            &mut |window, _| {
                                cells += window.iter().map(|run| run.len()).sum::<usize>();
                                Ok(())
                            },
                        )
                        .unwrap();
                    cells
                })
            },
        );
    }
    if data.len() <= 256 << 20 {
        group.bench_function("eager load", |b| {
            b.iter(|| EagerTrace::load(black_box(data.clone())).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, rebuild);
criterion_main!(benches);
