//! Held-out-style checks of issues #3–#5, through the public API and the
//! CLI, against an independent validator (`heldout::validator`, its
//! own byte walker over FORMAT-NOTES.md): traces the streaming writer wrote
//! from many producer threads at once, with tiny blocks (some ending right
//! after a call header), deep and wide; the dump writer's copies; damaged
//! indexes (deleted, truncated, a corrupted cell of each kind) and data cut
//! at every byte. The lazy reader's dump and pages of children must show
//! exactly the structure of the complete blocks.

use std::path::Path;

use tracetree::LazyTraceReader;
use tracetree::generate::Shape;
use tracetree::read::{EagerTrace, IndexStatus};
use tracetree::write::{DumpOptions, DumpWriter};

use tracetree_testkit::heldout::validator::{self, Walked};
use tracetree_testkit::heldout::{
    assert_same, check_pages, children_by_event, dump, open_lazy, streamed,
};
use tracetree_testkit::{files, heldout};

fn read(path: &Path) -> (Vec<u8>, Vec<u8>) {
    (
        std::fs::read(path).unwrap(),
        std::fs::read(LazyTraceReader::index_path(path)).unwrap(),
    )
}

/// Checks one trace on disk whose data's complete blocks are `walked`: the
/// lazy reader's dump and pages, and the eager loader's dump.
fn check_reads(path: &Path, walked: &Walked, pages: usize, what: &str) {
    let lazy = open_lazy(path, 1 << 20).unwrap_or_else(|e| panic!("{what}: open: {e}"));
    let found = dump(&lazy).unwrap_or_else(|e| panic!("{what}: lazy dump: {e}"));
    assert_same(&found, &walked.nodes, &format!("{what} (lazy)"));
    let report = &lazy.report().data;
    assert_eq!(
        report.unfinished_containers, walked.unfinished,
        "{what}: unfinished"
    );
    assert_eq!(report.missing_eof, !walked.eof, "{what}: missing EOF");
    if pages > 0 {
        let lazy = open_lazy(path, 1 << 16).unwrap();
        check_pages(&lazy, &children_by_event(&walked.nodes), pages, 7, what);
    }
    let eager = EagerTrace::open(path).unwrap_or_else(|e| panic!("{what}: eager: {e}"));
    assert_same(
        &dump(&eager).unwrap(),
        &walked.nodes,
        &format!("{what} (eager)"),
    );
}

/// Small streamed traces of every shape, from up to 16 producers at once,
/// with blocks of 64–256 bytes.
const CASES: [(Shape, usize, usize, u64); 6] = [
    (Shape::Mixed, 8, 64, 60_000),
    (Shape::Threads, 16, 97, 80_000),
    (Shape::Deep, 2, 128, 60_000),
    (Shape::Wide, 3, 256, 80_000),
    (Shape::Mixed, 4, 200, 50_000),
    (Shape::Deep, 5, 73, 40_000),
];

#[test]
fn streamed_traces_pass_the_validator_and_read_as_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let mut header_ends = 0;
    for (i, (shape, threads, block, size)) in CASES.into_iter().enumerate() {
        let what = format!("{shape} ×{threads}, blocks of {block}");
        let path = streamed(
            dir.path(),
            &format!("s{i}"),
            shape,
            threads,
            block,
            size,
            i as u64 + 1,
        );
        let (data, index) = read(&path);
        let walked = validator::validate(&data, &index).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(walked.blocks > threads, "{what}: {} blocks", walked.blocks);
        header_ends += walked.blocks_ending_in_a_header;
        check_reads(&path, &walked, 40, &what);

        // The dump writer's copy of it passes too, and reads the same.
        let eager = EagerTrace::open(&path).unwrap();
        let copy = dir.path().join(format!("d{i}.trace"));
        DumpWriter::from_trace(&eager, DumpOptions::default())
            .unwrap()
            .save(&copy)
            .unwrap();
        let (data, index) = read(&copy);
        let copied = validator::validate(&data, &index)
            .unwrap_or_else(|e| panic!("{what}, dump writer's copy: {e}"));
        let strip = |nodes: &[validator::Flat]| -> Vec<_> {
            nodes
                .iter()
                .map(|n| (n.depth, n.event, n.kind, n.children))
                .collect()
        };
        assert_eq!(
            strip(&copied.nodes),
            strip(&walked.nodes),
            "{what}: dump copy"
        );
        check_reads(&copy, &copied, 10, &format!("{what}, dump copy"));
    }
    // Recorded by hand from many threads, with leaves too big for a block
    // now and then, so blocks end right after a call header.
    for (i, (threads, block, depth)) in [(12, 64, 40), (3, 150, 400), (6, 256, 8)]
        .into_iter()
        .enumerate()
    {
        let what = format!("recorded ×{threads}, blocks of {block}, depth {depth}");
        let path = dir.path().join(format!("r{i}.trace"));
        let writer = heldout::streaming_writer(&path, block);
        heldout::record_concurrently(&writer, threads, 600, depth, i as u64, || {});
        writer.close().unwrap();
        let (data, index) = read(&path);
        let walked = validator::validate(&data, &index).unwrap_or_else(|e| panic!("{what}: {e}"));
        header_ends += walked.blocks_ending_in_a_header;
        check_reads(&path, &walked, 40, &what);
    }
    assert!(
        header_ends > 0,
        "no block ended right after a container header"
    );
}

/// What a killed writer leaves: the files copied while producers record
/// (the data after the index, and the other way round) open with every
/// complete block, and the index's cells are the data's.
#[test]
fn snapshots_of_a_live_writer_open_with_their_complete_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.trace");
    let writer = heldout::streaming_writer(&path, 128);
    let mut snapshots = Vec::new();
    heldout::record_concurrently(&writer, 6, 4_000, 30, 3, || {
        for k in 0..12 {
            std::thread::sleep(std::time::Duration::from_millis(3));
            let copy = dir.path().join(format!("snap{k}.trace"));
            if k % 2 == 0 {
                std::fs::copy(
                    LazyTraceReader::index_path(&path),
                    LazyTraceReader::index_path(&copy),
                )
                .unwrap();
                std::fs::copy(&path, &copy).unwrap();
            } else {
                std::fs::copy(&path, &copy).unwrap();
                std::fs::copy(
                    LazyTraceReader::index_path(&path),
                    LazyTraceReader::index_path(&copy),
                )
                .unwrap();
            }
            snapshots.push(copy);
        }
    });
    writer.close().unwrap();
    for copy in snapshots {
        let (data, index) = read(&copy);
        let walked = validator::walk(&data).unwrap();
        let what = format!(
            "{} ({} bytes, {} blocks)",
            copy.display(),
            data.len(),
            walked.blocks
        );
        if let Ok((cells, _)) = validator::index_cells(&index) {
            let expected: std::collections::HashSet<_> = walked.cells.iter().collect();
            let outside = cells.iter().filter(|cell| !expected.contains(cell)).count();
            // Only cells of blocks past the data's end may be missing there.
            assert!(
                outside == 0 || data.len() < std::fs::metadata(&path).unwrap().len() as usize,
                "{what}"
            );
        }
        check_reads(&copy, &walked, 10, &what);
    }
}

#[test]
fn reference_traces_pass_the_validator() {
    let Some(dir) = files::reference_traces() else {
        return;
    };
    for name in files::COMPLETE_REFERENCE_TRACES {
        let path = dir.join(format!("{name}.trace"));
        let (data, index) = read(&path);
        let walked = validator::validate(&data, &index).unwrap_or_else(|e| panic!("{name}: {e}"));
        check_reads(&path, &walked, 20, name);
    }
    // The crashed one: 15 complete blocks, 15 calls without footers.
    let path = dir.join("crashed.trace");
    let (data, index) = read(&path);
    let walked = validator::walk(&data).unwrap();
    assert_eq!(
        (walked.blocks, walked.unfinished, walked.eof),
        (15, 15, false)
    );
    let (cells, footer) = validator::index_cells(&index).unwrap();
    assert!(!footer);
    let expected: std::collections::HashSet<_> = walked.cells.iter().collect();
    assert!(
        cells.iter().all(|cell| expected.contains(cell)),
        "crashed: index cell not in the data"
    );
    check_reads(&path, &walked, 20, "crashed");
}

/// A small deterministic pseudo-random sequence.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
}

const CELL: usize = 21;
const INDEX_HEADER: usize = 16;

#[test]
fn damaged_indexes_read_as_the_data() {
    let dir = tempfile::tempdir().unwrap();
    let source = streamed(dir.path(), "src", Shape::Mixed, 4, 128, 40_000, 11);
    let (data, index) = read(&source);
    let walked = validator::validate(&data, &index).unwrap();
    let path = dir.path().join("t.trace");
    std::fs::write(&path, &data).unwrap();
    let check = |index: Option<&[u8]>, what: &str| {
        match index {
            Some(index) => std::fs::write(LazyTraceReader::index_path(&path), index).unwrap(),
            None => {
                let _ = std::fs::remove_file(LazyTraceReader::index_path(&path));
            }
        }
        check_reads(&path, &walked, 8, what);
        let lazy = open_lazy(&path, 1 << 20).unwrap();
        let rebuilt = matches!(lazy.report().status, IndexStatus::Rebuilt(_));
        rebuilt || !lazy.build_lookups().is_empty()
    };
    assert!(check(None, "index deleted"));
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for _ in 0..25 {
        let len = rng.below(index.len());
        check(Some(&index[..len]), &format!("index cut to {len} bytes"));
    }
    // A corrupted cell of each kind, each field.
    let cells = (index.len() - INDEX_HEADER - CELL - 8) / CELL;
    let mut by_kind: std::collections::BTreeMap<u8, Vec<usize>> = Default::default();
    for c in 0..cells {
        by_kind
            .entry(index[INDEX_HEADER + c * CELL])
            .or_default()
            .push(c);
    }
    assert!(by_kind.contains_key(&8) && by_kind.contains_key(&10) && by_kind.len() >= 6);
    for (&kind, list) in &by_kind {
        for _ in 0..3 {
            let c = list[rng.below(list.len())];
            let at = INDEX_HEADER + c * CELL;
            // (field offset, width, delta); a reference cell's end is unused.
            let fields: &[(usize, usize, i64)] = if kind == 8 {
                &[
                    (1, 4, 1),
                    (5, 8, 1),
                    (5, 8, -1),
                    (5, 8, 3),
                    (13, 8, 1),
                    (13, 8, -2),
                    (13, 8, 5),
                ]
            } else if kind == 10 {
                &[(1, 4, 1), (5, 8, 1), (5, 8, -5), (13, 8, 1), (13, 8, -1)]
            } else {
                &[(1, 4, 1), (1, 4, -1), (5, 8, 1), (5, 8, -1)]
            };
            for &(offset, width, delta) in fields {
                let mut bad = index.clone();
                let field = &mut bad[at + offset..at + offset + width];
                let value = field.iter().fold(0i64, |v, &b| (v << 8) | b as i64);
                let value = value.wrapping_add(delta);
                for (i, b) in field.iter_mut().enumerate() {
                    *b = (value >> (8 * (width - 1 - i))) as u8;
                }
                let what = format!("cell {c} (kind {kind}) field +{offset} {delta:+}");
                let mut detected = check(Some(&bad), &what);
                if kind == 8 && offset < 13 {
                    // A container's start and event id are checked when a
                    // lookup uses them: finding it (and its neighbour) by
                    // event id gives the right nodes either way.
                    let lazy = open_lazy(&path, 1 << 20).unwrap();
                    let event = i32::from_be_bytes(index[at + 1..at + 5].try_into().unwrap());
                    for event in [event, event.wrapping_add(delta as i32)] {
                        if let Some(node) = lazy
                            .node_by_event(tracetree::common::EventId::new(event))
                            .unwrap()
                        {
                            assert_eq!(
                                lazy.node(node).unwrap().tracepoint().event().get(),
                                event,
                                "{what}"
                            );
                            lazy.parent(node).unwrap();
                        }
                    }
                    detected |= !lazy.thread_problems().is_empty();
                }
                // A container's event id may go unnoticed (nothing uses it
                // wrongly).
                if !(kind == 8 && offset == 1) {
                    assert!(detected, "{what}: not detected");
                }
            }
            for other in [8u8, 9, 11, 12, 13, 255] {
                if other != kind {
                    let mut bad = index.clone();
                    bad[at] = other;
                    let what = format!("cell {c} kind byte {kind} → {other}");
                    assert!(check(Some(&bad), &what), "{what}: not detected");
                }
            }
        }
    }
    // The footer: EOF cell and magic.
    for at in [index.len() - 29, index.len() - 1] {
        let mut bad = index.clone();
        bad[at] ^= 0x40;
        check(Some(&bad), &format!("footer byte {at}"));
    }
}

#[test]
fn data_cut_at_every_byte_opens_with_its_complete_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let dir = keep(dir);
    let source = streamed(dir.path(), "src", Shape::Mixed, 3, 64, 2_500, 5);
    let path = dir.path().join("t.trace");
    let (data, index) = read(&source);
    let full = validator::validate(&data, &index).unwrap();
    assert!(full.blocks >= 12, "{} blocks", full.blocks);
    let mut rng = Rng(77);
    let lengths: Vec<usize> = (16..data.len().min(3_000))
        .chain((0..150).map(|_| 16 + rng.below(data.len() - 16)))
        .collect();
    for len in lengths {
        let cut = &data[..len];
        let walked = validator::walk(cut).unwrap();
        std::fs::write(&path, cut).unwrap();
        // The full index (cells beyond the cut), none, or the prefix a
        // killed writer leaves (the cells of the complete blocks).
        let prefix = INDEX_HEADER
            + CELL * (walked.cells.len()).min((index.len() - INDEX_HEADER - CELL - 8) / CELL);
        let choice = len % 3;
        match choice {
            0 => std::fs::write(LazyTraceReader::index_path(&path), &index).unwrap(),
            1 => {
                let _ = std::fs::remove_file(LazyTraceReader::index_path(&path));
            }
            _ => std::fs::write(LazyTraceReader::index_path(&path), &index[..prefix]).unwrap(),
        }
        let what = format!("data cut to {len} bytes (index choice {choice})");
        check_reads(&path, &walked, if len % 97 == 0 { 5 } else { 0 }, &what);
        let lazy = open_lazy(&path, 1 << 20).unwrap();
        let report = &lazy.report().data;
        let eof = walked.eof as usize;
        assert_eq!(
            report.dropped_bytes as usize + report.trailing_bytes as usize,
            len - walked.complete_end - eof,
            "{what}: dropped bytes"
        );
        assert_eq!(
            report.dropped_blocks,
            usize::from(len > walked.complete_end + eof),
            "{what}"
        );
    }
}

/// `HELDOUT_KEEP=DIR` keeps a test's files in DIR (to reproduce a failure).
fn keep(dir: tempfile::TempDir) -> Kept {
    match std::env::var_os("HELDOUT_KEEP") {
        Some(path) => {
            std::fs::create_dir_all(&path).unwrap();
            Kept::Path(path.into())
        }
        None => Kept::Temp(dir),
    }
}

enum Kept {
    Temp(tempfile::TempDir),
    Path(std::path::PathBuf),
}

impl Kept {
    fn path(&self) -> &Path {
        match self {
            Kept::Temp(dir) => dir.path(),
            Kept::Path(path) => path,
        }
    }
}
