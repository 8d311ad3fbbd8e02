//! `diff_traces` on two generated mixed traces of `TRACETREE_BENCH_SIZE`
//! bytes each (64 MB by default, 2 threads): a trace against itself, and
//! against a copy with 1% of its leaves changed or left out (scattered),
//! beside the raw scan of both files in the same run; and, as recorded
//! (`postprocess` off), the trace against a second name of its files.
//! Criterion reports bytes of both inputs per second.
//!
//! Run with `cargo bench --bench diff`; `TRACETREE_BENCH_SIZE=10GB cargo
//! bench --bench diff` makes (once, in `target/bench-traces`) and diffs a
//! 10 GB pair: the generator and the mutated copy both stream.

mod support;

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tracetree::diff::{DiffInput, DiffOptions, diff_traces};
use tracetree::generate::{Shape, mutate};
use tracetree::{FileAccess, LazyTraceReader, TraceBytes};

/// The mutated copy of `trace`, made on first use beside it.
fn mutated(trace: &std::path::Path) -> PathBuf {
    let path = trace.with_extension("mutated.trace");
    if !path.exists() {
        let reader = LazyTraceReader::open(trace).unwrap();
        let partial = path.with_extension("partial");
        let mutations = mutate(&reader, 0.01, 7, &partial).unwrap();
        let mut partial_index = partial.clone().into_os_string();
        partial_index.push(".idx");
        let mut index = path.clone().into_os_string();
        index.push(".idx");
        std::fs::rename(&partial_index, &index).unwrap();
        std::fs::rename(&partial, &path).unwrap();
        eprintln!("mutated copy: {mutations:?}");
    }
    path
}

fn bench(c: &mut Criterion) {
    let (left, _) = support::generated(Shape::Mixed, 2, support::bench_size());
    let right = mutated(&left);
    let bytes = |path: &std::path::Path| std::fs::metadata(path).unwrap().len();
    let (left_bytes, right_bytes) = (bytes(&left), bytes(&right));
    let scratch = tempfile::tempdir().unwrap();
    let out = scratch.path().join("bench.packedtrace");
    let left_reader = support::with_sidecar().open(&left).unwrap();
    let right_reader = support::with_sidecar().open(&right).unwrap();
    let input = |trace| DiffInput::new(trace, "bench");
    let options = DiffOptions::default();

    let mut group = c.benchmark_group("diff");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.throughput(Throughput::Bytes(2 * left_bytes));
    let left_data = TraceBytes::open(&left, FileAccess::Map).unwrap();
    group.bench_function("raw_scan_both_baseline", |b| {
        b.iter(|| {
            black_box(support::raw_scan(left_data.as_slice()))
                ^ black_box(support::raw_scan(left_data.as_slice()))
        })
    });
    group.bench_function("identical", |b| {
        b.iter(|| {
            let summary =
                diff_traces(input(&left_reader), input(&left_reader), &options, &out).unwrap();
            black_box(summary.tracepoints)
        })
    });
    let mut recorded = DiffOptions::default();
    recorded.postprocess = false;
    let copy = left.with_extension("copy.trace");
    if !copy.exists() || !LazyTraceReader::index_path(&copy).exists() {
        // A second name of the same files (a copy where links fail): another
        // reader of the same bytes, without a second 10 GB on disk.
        let index = LazyTraceReader::index_path(&left);
        let copy_index = LazyTraceReader::index_path(&copy);
        for (from, to) in [(&index, &copy_index), (&left, &copy)] {
            let _ = std::fs::remove_file(to);
            if std::fs::hard_link(from, to).is_err() {
                std::fs::copy(from, to).unwrap();
            }
        }
    }
    let copy_reader = support::with_sidecar().open(&copy).unwrap();
    group.bench_function("identical_as_recorded", |b| {
        b.iter(|| {
            let summary =
                diff_traces(input(&left_reader), input(&copy_reader), &recorded, &out).unwrap();
            black_box(summary.tracepoints)
        })
    });
    group.throughput(Throughput::Bytes(left_bytes + right_bytes));
    let right_data = TraceBytes::open(&right, FileAccess::Map).unwrap();
    group.bench_function("raw_scan_both_baseline_mutated", |b| {
        b.iter(|| {
            black_box(support::raw_scan(left_data.as_slice()))
                ^ black_box(support::raw_scan(right_data.as_slice()))
        })
    });
    group.bench_function("one_percent_changed", |b| {
        b.iter(|| {
            let summary =
                diff_traces(input(&left_reader), input(&right_reader), &options, &out).unwrap();
            black_box(summary.tracepoints)
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
