//! Refreshing a growing trace: a trace written by the streaming writer in
//! small blocks grows on disk a step at a time (cut anywhere, in the middle
//! of a block or of an index cell, its index lagging its data); after each
//! step the refreshed reader must read exactly as a fresh open of the same
//! bytes, having read only what was appended.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;

use tracetree::generate::{Shape, ThreadGenerator};
use tracetree::print::PrintOptions;
use tracetree::read::{LazyOptions, LazyTraceReader};
use tracetree::write::{StreamingOptions, StreamingWriter};
use tracetree_testkit::layout::CELL_LEN;
use tracetree_testkit::lazy::assert_same_tree;

/// A finished trace of two threads (deep and mixed calls) in 512-byte
/// blocks: its data and index bytes.
fn finished_trace(dir: &Path) -> (Vec<u8>, Vec<u8>) {
    let path = dir.join("finished.trace");
    let mut options = StreamingOptions::default();
    options.block_size = 512;
    options.flush_threshold = 64;
    let writer = StreamingWriter::create_with_options(&path, options).unwrap();
    std::thread::scope(|scope| {
        for (t, shape) in [Shape::Deep, Shape::Mixed].into_iter().enumerate() {
            let mut thread = writer.new_thread(format!("worker-{t}")).unwrap();
            scope.spawn(move || {
                let mut rounds = 0;
                ThreadGenerator::new(shape, 5, t as u64, 2)
                    .run(&mut thread, || {
                        rounds += 1;
                        rounds > 12
                    })
                    .unwrap();
                thread.finish().unwrap();
            });
        }
    });
    writer.close().unwrap();
    let data = std::fs::read(&path).unwrap();
    let index = std::fs::read(LazyTraceReader::index_path(&path)).unwrap();
    (data, index)
}

/// The index bytes a recorder has written once `data_len` bytes of data are
/// on disk: the cells of every block whose `BLOCK_END` is in them.
fn index_written(data: &[u8], index: &[u8], data_len: usize) -> usize {
    let cells = &index[16..index.len().saturating_sub(CELL_LEN + 8)];
    let mut written = 16;
    for (n, cell) in cells.chunks_exact(CELL_LEN).enumerate() {
        if cell[0] == tracetree::common::ObjectKind::BlockStart as u8 {
            let end = i64::from_be_bytes(cell[13..21].try_into().unwrap());
            if end as usize >= data_len.min(data.len()) {
                break;
            }
        }
        written = 16 + (n + 1) * CELL_LEN;
    }
    written
}

fn append(path: &Path, bytes: &[u8]) {
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    file.write_all(bytes).unwrap();
}

fn text(reader: &LazyTraceReader) -> String {
    let mut out = Vec::new();
    PrintOptions::default().print(reader, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// The refreshed reader reads as a fresh open of the same files.
fn assert_same_as_fresh(refreshed: &LazyTraceReader, path: &Path, what: &str) {
    let fresh = LazyOptions::default().open_growing(path).unwrap();
    let (ours, theirs) = (refreshed.report(), fresh.report());
    assert_eq!(ours.blocks, theirs.blocks, "{what}");
    assert_eq!(ours.references, theirs.references, "{what}");
    assert_eq!(ours.containers, theirs.containers, "{what}");
    assert_eq!(
        ours.repaired_containers, theirs.repaired_containers,
        "{what}"
    );
    assert_eq!(ours.data, theirs.data, "{what}");
    assert_same_tree(refreshed, &fresh, what);
    assert_eq!(text(refreshed), text(&fresh), "{what}");
}

#[test]
fn a_refreshed_trace_reads_as_a_fresh_open_of_the_grown_files() {
    let dir = tempfile::tempdir().unwrap();
    let (data, index) = finished_trace(dir.path());
    assert!(data.len() > 40 * 512, "{}", data.len());
    let path = dir.path().join("growing.trace");
    let idx = LazyTraceReader::index_path(&path);
    // The first step: a few blocks.
    let (mut data_at, mut index_at) = (0, 0);
    let mut grow = |to: usize, lag: usize| {
        let to = to.min(data.len());
        let index_to = index_written(&data, &index, to)
            .saturating_sub(lag)
            .max(index_at);
        append(&path, &data[data_at..to]);
        append(&idx, &index[index_at..index_to]);
        (data_at, index_at) = (to, index_to);
    };
    grow(data.len() / 20, 0);
    let mut reader = LazyOptions::default().open_growing(&path).unwrap();
    assert_same_as_fresh(&reader, &path, "first view");
    let mut extended = 0;
    let mut unfinished_seen = 0;
    for step in 1..19usize {
        // Cut anywhere; every other step with the index some cells (and a
        // part of one) behind.
        let to = data.len() * (step + 1) / 20 + step * 37;
        grow(to, if step % 2 == 1 { 3 * CELL_LEN + 7 } else { 0 });
        let what = format!("step {step}");
        let old_view = reader.report().blocks;
        let Some((refreshed, report)) = reader.refresh().unwrap() else {
            continue;
        };
        assert_eq!(report.reopened, None, "{what}: {report:?}");
        let new = refreshed.report().blocks - old_view;
        assert_eq!(report.new_blocks, new, "{what}");
        // Only what was appended, the old last block and cell, and the
        // headers are read.
        let appended = report.new_data_bytes + (report.new_cells * CELL_LEN) as u64;
        assert!(
            report.bytes_read <= appended + 32 + 4096 + CELL_LEN as u64,
            "{what}: {report:?}"
        );
        assert!(report.new_data_bytes > 0, "{what}");
        assert_same_as_fresh(&refreshed, &path, &what);
        // Nodes carry over through their handles.
        let thread = reader.thread_ids()[0];
        if let Some(&root) = reader.roots(thread).unwrap().first() {
            let handle = reader.handle(root);
            let moved = refreshed.resolve_handle(handle).unwrap();
            assert!(refreshed.node(root).is_err(), "{what}");
            assert_eq!(
                refreshed.node(moved).unwrap().tracepoint(),
                reader.node(root).unwrap().tracepoint(),
                "{what}"
            );
        }
        unfinished_seen += refreshed.report().data.unfinished_containers;
        reader = refreshed;
        extended += 1;
    }
    assert!(extended > 10, "{extended}");
    assert!(unfinished_seen > 0);
    // The recorder finishes: the index gets its footer, the view is the
    // whole files, opened afresh.
    grow(data.len(), 0);
    append(&idx, &index[index_at..]);
    let (done, done_report) = reader.refresh().unwrap().expect("the trace grew");
    assert!(done_report.reopened.is_some());
    let whole = LazyTraceReader::open(&path).unwrap();
    assert!(whole.report().data.is_complete());
    assert_same_tree(&done, &whole, "finished");
    assert!(done.refresh().unwrap().is_none());
}

#[test]
fn a_shrunk_or_rewritten_trace_is_opened_again() {
    let dir = tempfile::tempdir().unwrap();
    let (data, index) = finished_trace(dir.path());
    let path = dir.path().join("growing.trace");
    let idx = LazyTraceReader::index_path(&path);
    let half = data.len() / 2;
    std::fs::write(&path, &data[..half]).unwrap();
    std::fs::write(&idx, &index[..index_written(&data, &index, half)]).unwrap();
    let reader = LazyOptions::default().open_growing(&path).unwrap();
    assert!(reader.refresh().unwrap().is_none(), "nothing changed");

    // Truncated to a quarter.
    let quarter = data.len() / 4;
    std::fs::write(&path, &data[..quarter]).unwrap();
    std::fs::write(&idx, &index[..index_written(&data, &index, quarter)]).unwrap();
    let (shrunk, shrunk_report) = reader.refresh().unwrap().expect("the files changed");
    let why = shrunk_report.reopened.clone().expect("opened again");
    assert!(why.contains("shrank"), "{why}");
    assert_same_as_fresh(&shrunk, &path, "shrunk");

    // Grown again, but a byte of the old last block changed.
    let reader = shrunk;
    let last = reader.report().blocks;
    assert!(last > 0);
    let mut changed = data[..half].to_vec();
    let cut = index_written(&data, &index, quarter);
    let last_end = index[16..cut]
        .chunks_exact(CELL_LEN)
        .rev()
        .find(|cell| cell[0] == tracetree::common::ObjectKind::BlockStart as u8)
        .map(|cell| i64::from_be_bytes(cell[13..21].try_into().unwrap()) as usize)
        .unwrap();
    changed[last_end - 1] ^= 0x55;
    std::fs::write(&path, &changed).unwrap();
    std::fs::write(&idx, &index[..index_written(&data, &index, half)]).unwrap();
    let (_, rewritten) = reader.refresh().unwrap().expect("the files changed");
    assert!(rewritten.reopened.is_some(), "{:?}", rewritten);
}
