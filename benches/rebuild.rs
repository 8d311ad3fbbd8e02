//! The parallel index rebuild on 1 and 2 threads, and the eager loader,
//! against a raw scan of the same mapped bytes, all in the same run.
//!
//! ```text
//! TRACETREE_BENCH_SIZE=1GB cargo bench --bench rebuild
//! ```

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tracetree::TraceBytes;
use tracetree::read::EagerTrace;
use tracetree::read::rebuild::{RebuildOptions, rebuild_index};

mod support;

use support::{bench_size, raw_scan, trace};

fn rebuild(c: &mut Criterion) {
    let size = bench_size();
    let data = TraceBytes::map(trace(size)).unwrap();
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
            let options = RebuildOptions {
                threads,
                chunk_size: 0,
            };
            b.iter(|| rebuild_index(black_box(data.as_slice()), options).unwrap())
        });
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
