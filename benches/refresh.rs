//! Following a growing trace: a refresh after about 1 MB was appended,
//! against opening the grown files again (the growing view afresh, and an
//! open that keeps a sidecar, as a reopen did before refreshes).
//!
//! The trace is `tracetree gen`'s mixed trace of 2 threads (1 GB unless
//! `TRACETREE_BENCH_SIZE` says otherwise), generated once into
//! `target/bench-traces/`. Its files are copied into a temporary directory
//! under `target/` as a recorder would have left them about 1 MB earlier
//! (whole blocks, index without footer, no `EOF`); the reader opened there
//! is then refreshed over the rest, appended. Results: BENCHMARKS.md.
//!
//! ```text
//! cargo bench --bench refresh
//! ```

use std::io::Write;
use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use tracetree::LazyTraceReader;
use tracetree::TraceBytes;
use tracetree::generate::Shape;
use tracetree::read::LazyOptions;
use tracetree_testkit::layout::CELL_LEN;

mod support;

const MB: u64 = 1 << 20;

/// The index's length once the blocks ending before `data_len` have
/// their cells, and the end of the last of them.
fn cells_before(index: &[u8], data_len: u64) -> (usize, u64) {
    let cells = &index[16..index.len() - CELL_LEN - 8];
    let (mut written, mut last_end) = (16, 0);
    for (n, cell) in cells.chunks_exact(CELL_LEN).enumerate() {
        if cell[0] == tracetree::common::ObjectKind::BlockStart as u8 {
            let end = i64::from_be_bytes(cell[13..21].try_into().unwrap()) as u64;
            if end >= data_len {
                break;
            }
            last_end = end;
        }
        written = 16 + (n + 1) * CELL_LEN;
    }
    (written, last_end)
}

fn append(path: &std::path::Path, bytes: &[u8]) {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    file.write_all(bytes).unwrap();
}

fn refresh(c: &mut Criterion) {
    let size = support::bench_size_or("1GB");
    let (source, _) = support::generated(Shape::Mixed, 2, size);
    let data = TraceBytes::map(&source).unwrap();
    let index = TraceBytes::map(LazyTraceReader::index_path(&source)).unwrap();
    let (data, index) = (data.as_slice(), index.as_slice());
    // Grown: every block but the thread-name ones a recorder writes when
    // it closes; before: whole blocks up to about 1 MB before that.
    let (grown_index, grown_end) = cells_before(index, data.len() as u64 - 1);
    let (old_index, old_end) = cells_before(index, grown_end.saturating_sub(MB));
    let dir = tempfile::tempdir_in(concat!(env!("CARGO_MANIFEST_DIR"), "/target")).unwrap();
    let path = dir.path().join("growing.trace");
    let idx = LazyTraceReader::index_path(&path);
    append(&path, &data[..=old_end as usize]);
    append(&idx, &index[..old_index]);
    let old = LazyOptions::default().open_growing(&path).unwrap();
    // As the viewer's follower does: the old tables built (their footers
    // checked), the refreshed reader's built before use.
    let start = std::time::Instant::now();
    old.build_lookups();
    let first_build = start.elapsed().as_secs_f64();
    append(&path, &data[old_end as usize + 1..=grown_end as usize]);
    append(&idx, &index[old_index..grown_index]);
    let (refreshed, report) = old.refresh().unwrap().unwrap();
    // A refreshed reader builds its threads' container tables on first
    // use, from all their cells, as an opened one does.
    let start = std::time::Instant::now();
    refreshed.build_lookups();
    eprintln!(
        "refresh of {} MB of data: {:?}; {} blocks, {} containers, {} unfinished; \
         then its tables built in {:.3} s (the old view's: {first_build:.3} s)",
        grown_end / MB,
        report,
        refreshed.report().blocks,
        refreshed.report().containers,
        refreshed.report().data.unfinished_containers,
        start.elapsed().as_secs_f64(),
    );
    drop(refreshed);

    let mut group = c.benchmark_group(format!("refresh-{}MB", grown_end / MB));
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(10));
    group.bench_function("refresh after ~1 MB appended", |b| {
        b.iter_with_large_drop(|| old.refresh().unwrap().unwrap())
    });
    group.bench_function("open the grown view again (no sidecar)", |b| {
        b.iter_with_large_drop(|| LazyOptions::default().open_growing(&path).unwrap())
    });
    let sidecars = dir.path().join("sidecars");
    group.bench_function("open the grown files, writing a sidecar", |b| {
        b.iter_batched(
            || {
                let _ = std::fs::remove_dir_all(&sidecars);
            },
            |()| {
                LazyOptions::default()
                    .sidecar_dir(Some(sidecars.clone()))
                    .defer_sidecar(None)
                    .open(&path)
                    .unwrap()
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

criterion_group!(benches, refresh);
criterion_main!(benches);
