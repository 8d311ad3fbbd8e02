//! The index policy of FORMAT-NOTES ("Our policy"), one test per rule: a
//! broken index is not used, the lookup structures are rebuilt from the data
//! file, the report says why, and the trace reads the same as with the eager
//! loader. Plus the extra rules tracetree applies, and the index choices.

use tracetree::TraceBytes;
use tracetree::generate::raw::{self, SynthOptions};
use tracetree::lowlevel::ObjectKind;
use tracetree::read::{EagerTrace, IndexChoice, IndexProblem, IndexStatus, LazyTraceReader};

use tracetree_testkit::lazy;
use tracetree_testkit::lazy::assert_same_tree;

const HEADER: usize = 16;
const CELL: usize = 21;

struct Sample {
    data: Vec<u8>,
    index: Vec<u8>,
    eager: EagerTrace,
}

fn sample(block_cell_last: bool) -> Sample {
    Sample::generated(2, 96 << 10, 4 << 10, 3, block_cell_last)
}

impl Sample {
    fn generated(
        threads: usize,
        bytes: u64,
        block_bytes: usize,
        seed: u64,
        block_cell_last: bool,
    ) -> Sample {
        let (data, index) = raw::generate(&SynthOptions {
            threads,
            bytes,
            block_bytes,
            seed,
            block_cell_last,
            crash: None,
        });
        let eager = EagerTrace::load(TraceBytes::from_vec(data.clone())).unwrap();
        Sample { data, index, eager }
    }

    fn cells(&self) -> usize {
        (self.index.len() - HEADER - CELL - 8) / CELL
    }

    fn kind(&self, cell: usize) -> u8 {
        self.index[HEADER + cell * CELL]
    }

    /// The first cell of `kind` (and, for references, not a duplicate of
    /// another's position).
    fn find(&self, kind: ObjectKind) -> usize {
        (0..self.cells())
            .find(|&cell| self.kind(cell) == kind as u8)
            .unwrap()
    }

    fn set_i32(index: &mut [u8], cell: usize, field_at: usize, value: i32) {
        let at = HEADER + cell * CELL + field_at;
        index[at..at + 4].copy_from_slice(&value.to_be_bytes());
    }

    fn set_i64(index: &mut [u8], cell: usize, field_at: usize, value: i64) {
        let at = HEADER + cell * CELL + field_at;
        index[at..at + 8].copy_from_slice(&value.to_be_bytes());
    }

    fn get_i64(&self, cell: usize, field_at: usize) -> i64 {
        let at = HEADER + cell * CELL + field_at;
        i64::from_be_bytes(self.index[at..at + 8].try_into().unwrap())
    }

    /// Opens with `index`, checks the index was rebuilt for a problem
    /// `expected` accepts, and that the trace reads as the eager loader's.
    fn assert_rebuilt(&self, index: Option<Vec<u8>>, expected: impl Fn(&IndexProblem) -> bool) {
        let lazy = LazyTraceReader::options()
            .open_bytes(
                TraceBytes::from_vec(self.data.clone()),
                index.clone().map(TraceBytes::from_vec),
            )
            .unwrap();
        match &lazy.report().status {
            IndexStatus::Rebuilt(problem) => {
                assert!(expected(problem), "unexpected problem: {problem}")
            }
            status => panic!("index used: {status:?}"),
        }
        assert_eq!(&lazy.report().data, self.eager.report());
        assert_same_tree(&lazy, &self.eager, "rebuilt");
        // Requiring the index fails instead.
        let required = LazyTraceReader::options()
            .index(IndexChoice::Require)
            .open_bytes(
                TraceBytes::from_vec(self.data.clone()),
                index.map(TraceBytes::from_vec),
            );
        assert!(matches!(
            required,
            Err(tracetree::Error::BrokenIndex { .. })
        ));
    }
}

#[test]
fn a_valid_index_is_used() {
    for block_cell_last in [false, true] {
        let sample = sample(block_cell_last);
        let lazy = LazyTraceReader::options()
            .index(IndexChoice::Require)
            .open_bytes(
                TraceBytes::from_vec(sample.data.clone()),
                Some(TraceBytes::from_vec(sample.index.clone())),
            )
            .unwrap();
        assert_eq!(lazy.report().status, IndexStatus::Used { complete: true });
        assert_eq!(lazy.report().repaired_containers, 0);
        assert_same_tree(&lazy, &sample.eager, "used");
    }
}

#[test]
fn rule_missing_index_file() {
    let sample = sample(false);
    sample.assert_rebuilt(None, |p| matches!(p, IndexProblem::Missing(_)));
    // On disk: a data file without `.idx`.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("alone.trace");
    std::fs::write(&path, &sample.data).unwrap();
    let lazy = LazyTraceReader::open(&path).unwrap();
    assert!(matches!(
        lazy.report().status,
        IndexStatus::Rebuilt(IndexProblem::Missing(_))
    ));
    assert_eq!(lazy.report().path, Some(LazyTraceReader::index_path(&path)));
    assert_same_tree(&lazy, &sample.eager, "missing on disk");
    // With the index next to it, it is used.
    std::fs::write(LazyTraceReader::index_path(&path), &sample.index).unwrap();
    assert!(LazyTraceReader::open(&path).unwrap().report().index_used());
}

#[test]
fn rule_shorter_than_header_and_footer() {
    let sample = sample(false);
    for len in [0, 8, 16, 16 + CELL + 7] {
        let index = sample.index[..len].to_vec();
        sample.assert_rebuilt(Some(index), |p| matches!(p, IndexProblem::TooShort(_)));
    }
}

#[test]
fn rule_magic_or_version_differ() {
    let sample = sample(false);
    let mut index = sample.index.clone();
    index[0] ^= 1;
    sample.assert_rebuilt(Some(index), |p| matches!(p, IndexProblem::Header(_)));
    let mut index = sample.index.clone();
    index[15] = 21;
    sample.assert_rebuilt(Some(index), |p| matches!(p, IndexProblem::Header(_)));
}

#[test]
fn rule_cell_points_outside_the_data_file() {
    let sample = sample(false);
    for kind in [ObjectKind::String, ObjectKind::BlockStart] {
        for offset in [sample.data.len() as i64 + 3, -7, 4] {
            let mut index = sample.index.clone();
            Sample::set_i64(&mut index, sample.find(kind), 5, offset);
            sample.assert_rebuilt(Some(index), |p| {
                matches!(p, IndexProblem::OutOfBounds { .. })
            });
        }
    }
}

#[test]
fn rule_reference_cell_target_differs() {
    let sample = sample(false);
    // Another id.
    let cell = sample.find(ObjectKind::MethodDescriptor);
    let mut index = sample.index.clone();
    Sample::set_i32(&mut index, cell, 1, 999);
    sample.assert_rebuilt(Some(index), |p| {
        matches!(p, IndexProblem::ReferenceMismatch { .. })
    });
    // Another object's offset.
    let other = sample.get_i64(sample.find(ObjectKind::String), 5);
    let mut index = sample.index.clone();
    Sample::set_i64(&mut index, cell, 5, other);
    sample.assert_rebuilt(Some(index), |p| {
        matches!(p, IndexProblem::ReferenceMismatch { .. })
    });
}

#[test]
fn rule_block_cell_does_not_start_a_block_of_its_thread() {
    let sample = sample(false);
    let cell = sample.find(ObjectKind::BlockStart);
    let mut index = sample.index.clone();
    Sample::set_i32(&mut index, cell, 1, 12345);
    sample.assert_rebuilt(Some(index), |p| {
        matches!(p, IndexProblem::BlockMismatch { .. })
    });
    let mut index = sample.index.clone();
    Sample::set_i64(&mut index, cell, 5, sample.get_i64(cell, 5) + 1);
    sample.assert_rebuilt(Some(index), |p| {
        matches!(p, IndexProblem::BlockMismatch { .. })
    });
    // Its end must be the block's BLOCK_END.
    let mut index = sample.index.clone();
    Sample::set_i64(&mut index, cell, 13, sample.get_i64(cell, 13) - 1);
    sample.assert_rebuilt(Some(index), |p| {
        matches!(p, IndexProblem::BlockMismatch { .. })
    });
}

#[test]
fn rule_container_range_outside_its_thread_stream() {
    let sample = sample(false);
    let cell = sample.find(ObjectKind::Tracepoint);
    for (field, value) in [(13, 1 << 40), (5, -1), (5, 0), (13, 0)] {
        let mut index = sample.index.clone();
        Sample::set_i64(&mut index, cell, field, value);
        sample.assert_rebuilt(Some(index), |p| {
            matches!(p, IndexProblem::ContainerOutsideThread { .. })
        });
    }
}

#[test]
fn extra_rule_unknown_or_misplaced_cell_kinds() {
    let sample = sample(false);
    let cell = sample.find(ObjectKind::String);
    let mut index = sample.index.clone();
    index[HEADER + cell * CELL] = 42;
    sample.assert_rebuilt(Some(index), |p| {
        matches!(p, IndexProblem::UnknownKind { .. })
    });
    let mut index = sample.index.clone();
    index[HEADER + cell * CELL] = ObjectKind::BlockEnd as u8;
    sample.assert_rebuilt(Some(index), |p| {
        matches!(p, IndexProblem::UnexpectedKind { .. })
    });
}

#[test]
fn extra_rule_blocks_must_cover_the_data_file() {
    let sample = sample(false);
    let blocks: Vec<usize> = (0..sample.cells())
        .filter(|&c| sample.kind(c) == ObjectKind::BlockStart as u8)
        .collect();
    // A block cell missing from the middle leaves a gap; turning it into
    // a second copy of another block's cell gives the same.
    let mut index = sample.index.clone();
    let (a, b) = (blocks[1], blocks[2]);
    let copy = sample.index[HEADER + b * CELL..HEADER + (b + 1) * CELL].to_vec();
    index[HEADER + a * CELL..HEADER + (a + 1) * CELL].copy_from_slice(&copy);
    sample.assert_rebuilt(Some(index), |p| matches!(p, IndexProblem::Gap(_)));
    // The last block's cell missing leaves data after the last indexed block.
    let last = *blocks.last().unwrap();
    let mut index = sample.index.clone();
    index.drain(HEADER + last * CELL..HEADER + (last + 1) * CELL);
    sample.assert_rebuilt(Some(index), |p| matches!(p, IndexProblem::Uncovered { .. }));
}

#[test]
fn extra_rule_container_ranges_must_nest() {
    let sample = sample(false);
    // Two disjoint containers listed one after the other: moving the
    // first one's end into the second one's content makes them cross.
    let containers: Vec<usize> = (0..sample.cells())
        .filter(|&c| sample.kind(c) == ObjectKind::Tracepoint as u8)
        .collect();
    let (first, second) = containers
        .windows(2)
        .map(|w| (w[0], w[1]))
        .find(|&(a, b)| {
            sample.get_i64(a, 13) < sample.get_i64(b, 5)
                && sample.get_i64(b, 5) + 1 < sample.get_i64(b, 13)
        })
        .unwrap();
    let mut index = sample.index.clone();
    Sample::set_i64(&mut index, first, 13, sample.get_i64(second, 5) + 1);
    // Nesting is checked when a thread's table is built (on first use):
    // the thread's containers are then found by scanning its stream.
    let lazy = LazyTraceReader::options()
        .open_bytes(
            TraceBytes::from_vec(sample.data.clone()),
            Some(TraceBytes::from_vec(index)),
        )
        .unwrap();
    assert!(lazy.report().index_used());
    let problems = lazy.build_lookups();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(matches!(problems[0].1, IndexProblem::Crossing { .. }));
    assert_same_tree(&lazy, &sample.eager, "crossing");
}

#[test]
fn extra_rule_container_cells_need_a_block_cell() {
    let sample = sample(true);
    let cell = sample.find(ObjectKind::Tracepoint);
    let copy = sample.index[HEADER + cell * CELL..HEADER + (cell + 1) * CELL].to_vec();
    let mut index = sample.index.clone();
    let footer_at = index.len() - CELL - 8;
    index.splice(footer_at..footer_at, copy);
    sample.assert_rebuilt(Some(index), |p| {
        matches!(p, IndexProblem::ContainerWithoutBlock { .. })
    });
}

#[test]
fn an_index_without_footer_is_used_when_valid() {
    let sample = sample(false);
    let index = sample.index[..sample.index.len() - CELL - 8].to_vec();
    let lazy = LazyTraceReader::options()
        .open_bytes(
            TraceBytes::from_vec(sample.data.clone()),
            Some(TraceBytes::from_vec(index)),
        )
        .unwrap();
    assert_eq!(lazy.report().status, IndexStatus::Used { complete: false });
    assert_eq!(lazy.report().repaired_containers, 0);
    assert_same_tree(&lazy, &sample.eager, "no footer");
}

#[test]
fn another_trace_index_is_not_used() {
    let sample = sample(false);
    let (_, other) = raw::generate(&SynthOptions {
        threads: 2,
        bytes: 96 << 10,
        block_bytes: 3 << 10,
        seed: 11,
        ..SynthOptions::default()
    });
    sample.assert_rebuilt(Some(other), |_| true);
}

#[test]
fn rebuild_can_be_asked_for() {
    let sample = sample(false);
    let lazy = LazyTraceReader::options()
        .index(IndexChoice::Rebuild)
        .open_bytes(
            TraceBytes::from_vec(sample.data.clone()),
            Some(TraceBytes::from_vec(sample.index.clone())),
        )
        .unwrap();
    assert_eq!(
        lazy.report().status,
        IndexStatus::Rebuilt(IndexProblem::Requested)
    );
    assert_same_tree(&lazy, &sample.eager, "requested");
}

#[test]
fn a_container_cell_missing_from_a_complete_index_is_found_by_scanning() {
    let sample = sample(false);
    // Drop a container cell that has container cells inside it (its
    // children must still be skipped through their own cells).
    let containers: Vec<usize> = (0..sample.cells())
        .filter(|&c| sample.kind(c) == ObjectKind::Tracepoint as u8)
        .collect();
    let cell = containers
        .windows(2)
        .find(|w| sample.get_i64(w[0], 5) > sample.get_i64(w[1], 5))
        .map(|w| w[1])
        .unwrap();
    let mut index = sample.index.clone();
    index.drain(HEADER + cell * CELL..HEADER + (cell + 1) * CELL);
    let lazy = LazyTraceReader::options()
        .open_bytes(
            TraceBytes::from_vec(sample.data.clone()),
            Some(TraceBytes::from_vec(index)),
        )
        .unwrap();
    assert_eq!(lazy.report().status, IndexStatus::Used { complete: true });
    assert_eq!(lazy.report().containers, containers.len() - 1);
    assert_same_tree(&lazy, &sample.eager, "missing cell");
    for node in sample.eager.nodes() {
        let found = lazy
            .node_by_event(node.tracepoint().event())
            .unwrap()
            .unwrap();
        assert_eq!(lazy.node(found).unwrap().tracepoint(), &node.tracepoint());
        let parent = lazy.parent(found).unwrap();
        let parent_event = parent.map(|p| lazy.node(p).unwrap().tracepoint().event());
        let expected = node
            .parent()
            .map(|p| sample.eager.node(p).tracepoint().event());
        assert_eq!(
            parent_event,
            expected,
            "parent of {}",
            node.tracepoint().event()
        );
    }
}

/// The container cells of a sample whose content holds other objects.
fn containers_with_content(sample: &Sample) -> Vec<usize> {
    (0..sample.cells())
        .filter(|&c| sample.kind(c) == ObjectKind::Tracepoint as u8)
        .filter(|&c| sample.get_i64(c, 5) + 1 < sample.get_i64(c, 13))
        .collect()
}

/// Every node's handle, by event id (from a reader with the intact index).
fn handles(sample: &Sample) -> std::collections::HashMap<i32, tracetree::read::LazyNode> {
    let lazy = lazy::open_in_memory(&sample.data, Some(&sample.index), 1 << 20).unwrap();
    let mut handles = std::collections::HashMap::new();
    for thread in lazy.thread_ids() {
        lazy.walk_thread(thread, tracetree::read::WalkDetail::Headers, |walked| {
            handles.insert(walked.header.event.get(), walked.node);
            Ok(true)
        })
        .unwrap();
    }
    handles
}

#[test]
fn a_moved_container_start_gives_every_node_its_eager_parent() {
    let sample = sample(false);
    let handles = handles(&sample);
    let containers = containers_with_content(&sample);
    // Containers spread over the trace; the start moved forward into the
    // content (the container is then cell-less until a lookup through its
    // cell contradicts the data and the thread is rescanned).
    let step = (containers.len() / 6).max(1);
    for &cell in containers.iter().step_by(step) {
        for delta in [1, 2] {
            let mut index = sample.index.clone();
            Sample::set_i64(&mut index, cell, 5, sample.get_i64(cell, 5) + delta);
            for node in sample.eager.nodes() {
                let event = node.tracepoint().event();
                // A fresh reader: nothing looked any container up before.
                let lazy = lazy::open_in_memory(&sample.data, Some(&index), 1 << 20).unwrap();
                let parent = lazy.parent(handles[&event.get()]).unwrap();
                let found = parent.map(|p| lazy.node(p).unwrap().tracepoint().event());
                let expected = node
                    .parent()
                    .map(|p| sample.eager.node(p).tracepoint().event());
                assert_eq!(
                    found, expected,
                    "cell {cell} start {delta:+}: parent of {event}"
                );
            }
        }
    }
}

#[test]
fn a_failed_rescan_gives_the_data_error_to_every_lookup() {
    let sample = sample(false);
    let handles = handles(&sample);
    let intact = lazy::open_in_memory(&sample.data, Some(&sample.index), 1 << 20).unwrap();
    // The cell to move: the first container with content; its thread.
    let cell = containers_with_content(&sample)[0];
    let event = |cell: usize| {
        let at = HEADER + cell * CELL + 1;
        i32::from_be_bytes(sample.index[at..at + 4].try_into().unwrap())
    };
    let moved = event(cell);
    let thread = intact.node_thread(handles[&moved]);
    // The data corrupted far from it: the kind byte of the first object
    // of the thread's last block that starts with a tracepoint.
    let at = (0..sample.cells())
        .filter(|&c| sample.kind(c) == ObjectKind::BlockStart as u8 && event(c) == thread.get())
        .map(|c| sample.get_i64(c, 5) as usize + 5)
        .rfind(|&at| sample.data[at] == ObjectKind::Tracepoint as u8)
        .unwrap();
    let mut data = sample.data.clone();
    data[at] = 0xEE;
    let expected = match intact_walk_error(&data, &sample.index, thread) {
        tracetree::Error::Decode(error) => error,
        other => panic!("walk: {other}"),
    };
    assert_eq!(
        expected.at,
        tracetree::Position::Data(tracetree::common::PhysicalOffset::new(at as u64)),
        "{expected}"
    );

    let mut index = sample.index.clone();
    Sample::set_i64(&mut index, cell, 5, sample.get_i64(cell, 5) + 1);
    let lazy = lazy::open_in_memory(&data, Some(&index), 1 << 20).unwrap();
    assert!(lazy.report().index_used());
    assert!(
        lazy.build_lookups().is_empty(),
        "the cells are trusted at first"
    );
    let check = |what: &str, result: tracetree::Result<()>| match result {
        Err(tracetree::Error::Decode(error)) => assert_eq!(error, expected, "{what}"),
        other => panic!("{what}: expected {expected}, got {other:?}"),
    };
    // Finding the moved container through its cell contradicts the data:
    // the thread is rescanned, which meets the corrupt byte.
    check(
        "node_by_event",
        lazy.node_by_event(tracetree::common::EventId::new(moved))
            .map(drop),
    );
    let problems = lazy.thread_problems();
    assert!(
        matches!(&problems[..], [(t, IndexProblem::Inconsistent(_))] if *t == thread),
        "{problems:?}"
    );
    // From then on every call that needs the thread's table says so
    // (what was cached before came from headers, and stays right).
    lazy.clear_cache();
    let node = handles[&moved];
    check("parent", lazy.parent(node).map(drop));
    check("children", lazy.children(node).map(drop));
    check("child_count", lazy.child_count(node).map(drop));
    check("node", lazy.node(node).map(drop));
    check("roots", lazy.roots(thread).map(drop));
    check(
        "walk_thread",
        lazy.walk_thread(thread, tracetree::read::WalkDetail::Headers, |_| Ok(true)),
    );
    for other in sample.eager.nodes().step_by(97) {
        let event = other.tracepoint().event();
        if intact.node_thread(handles[&event.get()]) == thread {
            check("node_by_event", lazy.node_by_event(event).map(drop));
        }
    }
}

/// The error a walk of `thread` meets in `data` with an index that agrees.
fn intact_walk_error(
    data: &[u8],
    index: &[u8],
    thread: tracetree::common::ThreadId,
) -> tracetree::Error {
    let lazy = lazy::open_in_memory(data, Some(index), 1 << 20).unwrap();
    lazy.walk_thread(thread, tracetree::read::WalkDetail::Headers, |_| Ok(true))
        .unwrap_err()
}

/// A rebuild at open reports its progress, adding up to the data's length
/// (a progress bar of that length ends full); an open by the index reports
/// none.
#[test]
fn a_rebuild_at_open_reports_progress() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    let sample = sample(false);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.trace");
    std::fs::write(&path, &sample.data).unwrap();
    let done = Arc::new(AtomicU64::new(0));
    let open = |done: &Arc<AtomicU64>| {
        let done = Arc::clone(done);
        LazyTraceReader::options()
            .rebuild_progress(move |bytes| {
                done.fetch_add(bytes, Ordering::Relaxed);
            })
            .open(&path)
            .unwrap()
    };
    let reader = open(&done);
    assert!(matches!(reader.report().status, IndexStatus::Rebuilt(_)));
    assert_eq!(done.load(Ordering::Relaxed), sample.data.len() as u64);
    std::fs::write(LazyTraceReader::index_path(&path), &sample.index).unwrap();
    let quiet = Arc::new(AtomicU64::new(0));
    let reader = open(&quiet);
    assert!(matches!(reader.report().status, IndexStatus::Used { .. }));
    assert_eq!(quiet.load(Ordering::Relaxed), 0);
}

/// A stop set while an open rebuilds the lookups ends it after the window
/// of data it is in: the open is `Cancelled`, the progress reported falls
/// short of the data's length, and no sidecar is written; the same open
/// without the stop reads the trace.
#[test]
fn a_stop_ends_an_open_that_rebuilds_the_lookups() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use tracetree::generate::{GenerateOptions, Shape, generate_file};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.trace");
    generate_file(&path, &GenerateOptions::new(64 << 20, Shape::Mixed), |_| {}).unwrap();
    std::fs::remove_file(LazyTraceReader::index_path(&path)).unwrap();
    let len = std::fs::metadata(&path).unwrap().len();
    let lookups = dir.path().join("lookups");
    let options = || {
        LazyTraceReader::options()
            .resident_window(Some(16 << 20))
            .sidecar_dir(Some(lookups.clone()))
            .defer_sidecar(None)
    };
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let stopped = options()
        .stop(Some(Arc::clone(&stop)))
        .rebuild_progress({
            let (stop, done) = (Arc::clone(&stop), Arc::clone(&done));
            move |bytes| {
                done.fetch_add(bytes, Ordering::Relaxed);
                stop.store(true, Ordering::Relaxed);
            }
        })
        .open(&path);
    let Err(error) = stopped else {
        panic!("the stopped open read the trace");
    };
    assert!(
        matches!(error.unwrapped(), tracetree::Error::Cancelled(_)),
        "{error}"
    );
    let done = done.load(Ordering::Relaxed);
    assert!(done > 0 && done < len, "{done} of {len} bytes");
    let written = std::fs::read_dir(&lookups).map_or(0, |files| files.count());
    assert_eq!(written, 0, "nothing written for a stopped open");
    let reader = options()
        .stop(Some(Arc::new(AtomicBool::new(false))))
        .open(&path)
        .unwrap();
    assert!(matches!(reader.report().status, IndexStatus::Rebuilt(_)));
    assert!(reader.count_tracepoints().unwrap().values().sum::<u64>() > 0);
}

/// A thread's footers are checked in pieces of 2^18 cells taken in turn by
/// two threads: a cell that does not end at a footer, in the last piece
/// and in a middle one, is still found, the first one named, and the
/// thread's containers found by scanning read as the eager loader's. And
/// the open, which sums cells up in pieces, still finds a late cell out of
/// its thread.
#[test]
fn a_cell_without_footer_is_found_in_any_piece() {
    let sample = large_sample(false);
    // Containers whose end may move a byte on and still nest: the next
    // container cell (its parent, when it is the last child) ends further.
    let ends: Vec<(usize, i64)> = (0..sample.cells())
        .filter(|&c| sample.kind(c) == ObjectKind::Tracepoint as u8)
        .map(|c| (c, sample.get_i64(c, 13)))
        .collect();
    let containers: Vec<usize> = ends
        .windows(2)
        .filter(|pair| pair[1].1 > pair[0].1 + 1)
        .map(|pair| pair[0].0)
        .collect();
    assert!(
        sample.cells() > 2 << 18,
        "{} cells: too few for several pieces",
        sample.cells()
    );
    let event = |cell: usize| {
        let at = HEADER + cell * CELL + 1;
        i32::from_be_bytes(sample.index[at..at + 4].try_into().unwrap())
    };
    let late = containers[containers.len() - 10];
    let middle = containers[containers.len() / 2];
    for moved in [vec![late], vec![late, middle]] {
        let mut index = sample.index.clone();
        for &cell in &moved {
            // One byte into its footer: still nested, no footer there.
            Sample::set_i64(&mut index, cell, 13, sample.get_i64(cell, 13) + 1);
        }
        let lazy = lazy::open_in_memory(&sample.data, Some(&index), 1 << 20).unwrap();
        let problems = lazy.build_lookups();
        let first = *moved.iter().min().unwrap();
        let named = format!("event id {} has no footer", event(first));
        assert!(
            matches!(&problems[..], [(_, IndexProblem::Inconsistent(what))] if what.contains(&named)),
            "{problems:?}"
        );
        if moved.len() == 2 {
            assert_same_tree(&lazy, &sample.eager, "footers");
        }
    }
    // The open checks cells in pieces too (their sums, then the cells of a
    // piece whose sum fails): a range outside the thread in a late piece,
    // each way it can be, is found, and names its cell, in either order of
    // block cells.
    for sample in [sample, large_sample(true)] {
        let late = (0..sample.cells())
            .rev()
            .filter(|&c| sample.kind(c) == ObjectKind::Tracepoint as u8)
            .nth(10)
            .unwrap();
        for (field, value) in [(13, 1 << 40), (5, -1), (5, 0), (13, 0)] {
            let mut index = sample.index.clone();
            Sample::set_i64(&mut index, late, field, value);
            let lazy = lazy::open_in_memory(&sample.data, Some(&index), 1 << 20).unwrap();
            match &lazy.report().status {
                IndexStatus::Rebuilt(IndexProblem::ContainerOutsideThread { cell, .. }) => {
                    assert_eq!(*cell, late, "field {field}")
                }
                status => panic!("field {field}: {status:?}"),
            }
        }
    }
}

/// A one-thread trace of 64 MB: more than 2^18 index cells.
fn large_sample(block_cell_last: bool) -> Sample {
    Sample::generated(1, 64 << 20, 64 << 10, 11, block_cell_last)
}
