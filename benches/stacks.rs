//! Call-stack exports (folded, speedscope, Chrome, Perfetto) against the
//! headers walk of the same reader, on the generated mixed trace of
//! `TRACETREE_BENCH_SIZE` bytes (64 MB by default, 2 threads walked in
//! parallel). Criterion reports bytes of trace per second; the output
//! goes to a temporary directory, replaced at each iteration, and its
//! size is printed once per format.
//!
//! Run with `cargo bench --bench stacks`.

mod support;

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tracetree::export::stacks::{StackFormat, StackOptions};
use tracetree::read::WalkDetail;

fn bench(c: &mut Criterion) {
    let (bytes, reader) = support::mixed_reader();
    let out = tempfile::tempdir().unwrap();
    let mut group = c.benchmark_group("stacks");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    group.throughput(Throughput::Bytes(bytes));
    group.bench_function("headers_walk_baseline", |b| {
        b.iter(|| black_box(support::walk_headers_parallel(&reader)))
    });
    group.bench_function("full_walk", |b| {
        b.iter(|| black_box(support::walk_parallel(&reader, WalkDetail::Full)))
    });
    group.bench_function("containers_walk", |b| {
        b.iter(|| black_box(support::walk_parallel(&reader, WalkDetail::Containers)))
    });
    for format in [
        StackFormat::Folded,
        StackFormat::Speedscope,
        StackFormat::Chrome,
        StackFormat::Perfetto,
    ] {
        let mut options = StackOptions::new(format, "bench");
        options.force = true;
        let path = out.path().join(format.name());
        let summary = options.export(&reader, &path, &|_| {}).unwrap();
        eprintln!(
            "{}: {} bytes, {} records, {} frames",
            format.name(),
            summary.bytes,
            summary.events,
            summary.frames
        );
        group.bench_function(format.name(), |b| {
            b.iter(|| black_box(options.export(&reader, &path, &|_| {}).unwrap()))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
