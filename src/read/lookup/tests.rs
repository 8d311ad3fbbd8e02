//! The repair of crashed recorders' indexes: the cell cursor against the
//! tables, on generated and reference traces; which cells' footers a table
//! build reads.

use std::path::Path;

use super::containers::PostOrderCursor;
use super::stream::{Stream, scan_unindexed};
use super::*;
use crate::common::LogicalOffset;
use crate::format::ObjectKind;
use crate::format::index::RawIndexCell;
use crate::generate::raw::{Crash, SynthOptions, generate};
use crate::read::rebuild::rebuild_to_scratch;
use crate::storage::TraceBytes;

/// A crashed recorder's trace, and its footer-less index loaded.
fn crashed(
    threads: usize,
    block_bytes: usize,
    seed: u64,
    dump_order: bool,
) -> (Vec<u8>, LoadedIndex) {
    let (data, index) = generate(&SynthOptions {
        threads,
        bytes: 1 << 20,
        block_bytes,
        seed,
        block_cell_last: dump_order,
        crash: Some(Crash {
            half_written_block: false,
        }),
    });
    let mapped = TraceBytes::from_vec(data.clone());
    let loaded = load_index(&mapped, TraceBytes::from_vec(index), None).unwrap();
    (data, loaded)
}

#[test]
fn the_cell_cursor_finds_the_containers_the_table_finds() {
    for (threads, block_bytes, seed, dump_order) in [
        (1, 1 << 10, 1, false),
        (3, 700, 2, false),
        (4, 16 << 10, 3, false),
        (2, 300, 4, false),
        (2, 700, 5, true),
    ] {
        let (data, loaded) = crashed(threads, block_bytes, seed, dump_order);
        let lookup = loaded.lookup;
        for slot in 0..lookup.blocks.thread_count() {
            let by_cursor = lookup.missing_containers(&data, slot).unwrap();
            // The cursor needed no table (the recorder's order).
            assert!(dump_order || lookup.streams(slot), "seed {seed}");
            let (table, view) = lookup.containers(&data, slot).unwrap();
            let mut stream = Stream::new(&data, lookup.blocks.thread(slot));
            let ends = &mut table.ends_by_start(view);
            let by_table = scan_unindexed(&mut stream, ends, LogicalOffset(0), None).unwrap();
            assert!(!by_cursor.is_empty(), "seed {seed}: the root is unfinished");
            assert_eq!(by_cursor, by_table, "seed {seed}, slot {slot}");
        }
    }
}

#[test]
fn the_reference_recorders_crashed_trace_is_repaired_without_tables() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/reference-traces");
    let (Ok(data), Ok(index)) = (
        std::fs::read(dir.join("crashed.trace")),
        std::fs::read(dir.join("crashed.trace.idx")),
    ) else {
        eprintln!(
            "skipped: reference traces folder {} not found",
            dir.display()
        );
        return;
    };
    let data = TraceBytes::from_vec(data);
    let loaded = load_index(&data, TraceBytes::from_vec(index), None).unwrap();
    assert!(!loaded.complete);
    let lookup = &loaded.lookup;
    let mut found = 0;
    for slot in 0..lookup.blocks.thread_count() {
        found += lookup
            .missing_containers(data.as_slice(), slot)
            .unwrap()
            .len();
        // The scan read the recorder's cells alongside: no table built.
        assert!(lookup.streams(slot), "thread slot {slot}");
    }
    // The 15 calls the eager loader reports unfinished.
    assert_eq!(found, 15);
}

#[test]
fn the_cell_cursor_refuses_cells_out_of_post_order() {
    let lookup = crashed(2, 700, 6, false).1.lookup;
    let cells = lookup.file.slice();
    let (ranges, count) = lookup.unbuilt_ranges(0).unwrap();
    let pass = || lookup.file.pass(None);
    assert!(PostOrderCursor::new(cells, &ranges, count, pass()).is_some());
    // A wrong count, or runs cut short.
    assert!(PostOrderCursor::new(cells, &ranges, count + 1, pass()).is_none());
    assert!(PostOrderCursor::new(cells, &ranges, count - 1, pass()).is_none());
    // Two neighbouring container cells swapped: ends no longer ascend.
    let mut swapped: Vec<RawIndexCell> = cells.to_vec();
    let container = |k: usize| swapped[k].kind == ObjectKind::Tracepoint as u8;
    let k = ranges
        .iter()
        .flat_map(|&(from, to)| from as usize..to as usize - 1)
        .find(|&k| container(k) && container(k + 1))
        .unwrap();
    swapped.swap(k, k + 1);
    assert!(PostOrderCursor::new(&swapped, &ranges, count, pass()).is_none());
}

/// An index file's cells have their footers read when a table is built;
/// the cells the rebuild wrote to its scratch index do not: it found each
/// at its footer.
#[test]
fn only_an_index_files_cells_have_their_footers_read() {
    let (data, index) = generate(&SynthOptions {
        threads: 2,
        bytes: 256 << 10,
        block_bytes: 4096,
        ..SynthOptions::default()
    });
    let data = TraceBytes::from_vec(data);
    let rebuilt = rebuild_to_scratch(&data, None, &|_| {}, None)
        .unwrap()
        .expect("a scratch index");
    let loaded = load_index(&data, TraceBytes::from_vec(index), None).unwrap();
    assert_eq!(rebuilt.lookup.threads.len(), 2);
    for (name, loaded, read) in [("rebuilt", &rebuilt, false), ("loaded", &loaded, true)] {
        for (slot, thread) in loaded.lookup.threads.iter().enumerate() {
            assert!(!thread.ranges.is_empty(), "{name}: thread {slot}");
            let unchecked = loaded.lookup.unchecked(slot, &thread.ranges);
            assert_eq!(!unchecked.is_empty(), read, "{name}: thread {slot}");
        }
    }
}
