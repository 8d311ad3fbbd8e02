//! `search` against the headers walk of the same reader: by name (a table
//! lookup a tracepoint, every tracepoint decoded) and by printed line
//! (every line rendered), on the generated mixed trace of
//! `TRACETREE_BENCH_SIZE` bytes (64 MB by default, 2 threads walked in
//! parallel). Criterion reports bytes of trace per second.
//!
//! Run with `cargo bench --bench search`.

mod support;

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tracetree::search::SearchOptions;

fn bench(c: &mut Criterion) {
    let (bytes, reader) = support::mixed_reader();
    let mut group = c.benchmark_group("search");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    group.throughput(Throughput::Bytes(bytes));
    group.bench_function("headers_walk_baseline", |b| {
        b.iter(|| black_box(support::walk_headers_parallel(&reader)))
    });
    let names = SearchOptions::new("WorkerKt.compute");
    group.bench_function("names", |b| {
        b.iter(|| black_box(names.search(&reader, &|_| {}).unwrap().total))
    });
    let mut text = SearchOptions::new("4242");
    text.text = true;
    group.bench_function("text", |b| {
        b.iter(|| black_box(text.search(&reader, &|_| {}).unwrap().total))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
