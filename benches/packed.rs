//! Packed traces opened in place against the reference's way of reading
//! them (copying the data and index entries to temporary files, then
//! opening those), on the generated mixed trace of `TRACETREE_BENCH_SIZE`
//! bytes (64 MB by default) packed with every entry stored, and packed as
//! the recorder packs (the JDK's `ZipOutputStream` at level 0, made with
//! `tests/read/Pack.java` when `java` runs). Baselines in the same run: a
//! raw scan of the pack's mapped bytes, the same open and the same dump
//! of the plain trace.
//!
//! Run with `cargo bench --bench packed` (`TRACETREE_BENCH_SIZE=1GB` for
//! the figure in `BENCHMARKS.md`).

mod support;

use std::hint::black_box;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use tracetree::generate::Shape;
use tracetree::print::write_jsonl;
use tracetree::read::LazyTraceReader;
use tracetree::storage::TraceBytes;
use tracetree::storage::packed::PackedTrace;
use tracetree_testkit::files::jdk_pack;

fn bench(c: &mut Criterion) {
    let (trace, _) = support::generated(Shape::Mixed, 2, support::bench_size());
    let packed = trace.with_extension("packedtrace");
    if !packed.exists() {
        PackedTrace::write(
            &packed,
            "bench\n",
            &trace,
            &LazyTraceReader::index_path(&trace),
        )
        .unwrap();
    }
    let scratch = tempfile::tempdir_in(support::trace_dir()).unwrap();
    // Warm the page cache with both files.
    let mapped = TraceBytes::map(&packed).unwrap();
    black_box(support::raw_scan(mapped.as_slice()));
    black_box(support::raw_scan(
        TraceBytes::map(&trace).unwrap().as_slice(),
    ));

    let mut group = c.benchmark_group("packed");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    group.bench_function("raw scan of the pack (baseline)", |b| {
        b.iter(|| black_box(support::raw_scan(mapped.as_slice())))
    });
    // Lookups built at each open (no sidecar directory: an unlinked scratch
    // sidecar), as a first open does.
    group.bench_function("open the plain trace, no sidecar", |b| {
        b.iter(|| black_box(LazyTraceReader::open(&trace).unwrap().thread_ids()))
    });
    group.bench_function("open the pack in place, no sidecar", |b| {
        b.iter(|| black_box(LazyTraceReader::open(&packed).unwrap().thread_ids()))
    });
    group.bench_function("copy the entries to temporary files, then open", |b| {
        b.iter(|| copy_then_open(&packed, scratch.path()))
    });
    group.bench_function("open the pack in place, sidecar present", |b| {
        support::with_sidecar().open(&packed).unwrap();
        b.iter(|| black_box(support::with_sidecar().open(&packed).unwrap().thread_ids()))
    });
    group.finish();

    let Some(level0) = level0_pack(&trace) else {
        eprintln!("SKIPPED: no `java` to pack the trace as the recorder does");
        return;
    };
    let mut group = c.benchmark_group("packed level 0");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    group.bench_function("open the level-0 pack in place, no sidecar", |b| {
        b.iter(|| black_box(LazyTraceReader::open(&level0).unwrap().thread_ids()))
    });
    group.bench_function(
        "copy the level-0 entries to temporary files, then open",
        |b| b.iter(|| copy_then_open(&level0, scratch.path())),
    );
    group.bench_function("open the level-0 pack in place, sidecar present", |b| {
        support::with_sidecar().open(&level0).unwrap();
        b.iter(|| black_box(support::with_sidecar().open(&level0).unwrap().thread_ids()))
    });
    let dump = |path: &Path| {
        let reader = support::with_sidecar().open(path).unwrap();
        let mut out = std::io::sink();
        write_jsonl(&reader, None, &mut out).unwrap();
    };
    // An IDE's use: 1,000 random containers expanded whole, cold cache
    // (as `benches/sizes.rs` does), on the plain trace and the pack.
    for (name, path) in [
        ("the plain trace (baseline)", &trace),
        ("the level-0 pack", &level0),
    ] {
        let reader = support::with_sidecar().open(path).unwrap();
        let nodes = support::random_containers(&reader, 1000);
        group.bench_function(format!("1,000 random expansions of {name}"), |b| {
            b.iter(|| black_box(support::expand_cold(&reader, &nodes)))
        });
    }
    group.bench_function("dump the plain trace (baseline)", |b| {
        b.iter(|| dump(&trace))
    });
    group.bench_function("dump the level-0 pack in place", |b| {
        b.iter(|| dump(&level0))
    });
    group.finish();
}

/// The reference's way: the pack's data and index entries copied to
/// files in `scratch`, then opened.
fn copy_then_open(packed: &Path, scratch: &Path) {
    let pack = PackedTrace::open(packed).unwrap();
    let data_path = scratch.join("trace.trace");
    let mut data = std::fs::File::create(&data_path).unwrap();
    let mut index = std::fs::File::create(LazyTraceReader::index_path(&data_path)).unwrap();
    pack.unpack(&mut data, &mut index).unwrap();
    data.flush().unwrap();
    black_box(LazyTraceReader::open(&data_path).unwrap().thread_ids());
}

/// `trace` packed by the JDK at level 0 beside it (made once), or `None`
/// when `java` does not run.
fn level0_pack(trace: &Path) -> Option<PathBuf> {
    let packed = trace.with_extension("level0.packedtrace");
    if packed.exists() {
        return Some(packed);
    }
    let partial = trace.with_extension("level0.partial");
    let index = LazyTraceReader::index_path(trace);
    if !jdk_pack("deflate0", &partial, "bench\n", trace, Some(&index), None) {
        return None;
    }
    std::fs::rename(&partial, &packed).unwrap();
    Some(packed)
}

criterion_group!(benches, bench);
criterion_main!(benches);
