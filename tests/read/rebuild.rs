//! The parallel rebuild produces the index the recorder wrote (as a set of
//! cells; reference cells' unused end field aside), whatever the chunking.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};

use tracetree::TraceBytes;
use tracetree::lowlevel::RebuiltIndex;
use tracetree::lowlevel::{IndexCell, ObjectKind};
use tracetree::read::EagerTrace;
use tracetree::read::RebuildOptions;

use tracetree_testkit::files;

/// The canonical cells, as a set.
fn normalized(cells: impl IntoIterator<Item = IndexCell>) -> BTreeSet<IndexCell> {
    cells.into_iter().map(IndexCell::canonical).collect()
}

fn written_cells(index: &[u8]) -> BTreeSet<IndexCell> {
    normalized(IndexCell::parse_file(index).unwrap().0)
}

const OPTION_SETS: [RebuildOptions; 4] = [
    RebuildOptions::new().with_threads(1),
    RebuildOptions::new().with_threads(2),
    // Tiny chunks: most chunks start inside a block and must find one.
    RebuildOptions::new().with_threads(2).with_chunk_size(997),
    RebuildOptions::new().with_threads(2).with_chunk_size(64),
];

#[test]
fn rebuilt_index_equals_the_written_one() {
    let Some(dir) = files::reference_traces() else {
        return;
    };
    for name in files::COMPLETE_REFERENCE_TRACES
        .into_iter()
        .chain(["crashed"])
    {
        let data = std::fs::read(dir.join(format!("{name}.trace"))).unwrap();
        let index = std::fs::read(dir.join(format!("{name}.trace.idx"))).unwrap();
        let expected = written_cells(&index);
        for options in OPTION_SETS {
            if options.chunk_size == 64 && data.len() > 1 << 20 {
                continue;
            }
            let rebuilt = RebuiltIndex::build(&data, options).unwrap();
            let ours = normalized(rebuilt.cells().copied());
            assert_eq!(ours.len(), rebuilt.cell_count(), "{name}: duplicate cells");
            assert_eq!(ours, expected, "{name} with {options:?}");
            assert_windows_agree(name, &data, options, 5_003, &rebuilt);
        }
    }
}

/// Asserts that every option set rebuilds `index` from `data`, cell for
/// cell, and that a rebuild in windows gives the same cells in the same
/// order.
fn assert_rebuilds_written(name: &str, data: &[u8], index: &[u8]) {
    let expected = written_cells(index);
    for options in OPTION_SETS {
        let rebuilt = RebuiltIndex::build(data, options).unwrap();
        let ours = normalized(rebuilt.cells().copied());
        assert_eq!(ours.len(), rebuilt.cell_count(), "{name}: duplicate cells");
        assert_eq!(ours, expected, "{name} with {options:?}");
        for window in [1, 3_001, 64 << 10] {
            assert_windows_agree(name, data, options, window, &rebuilt);
        }
    }
}

/// Asserts that rebuilding `data` in windows of `window` bytes gives
/// `whole`'s cells in its order, its unfinished containers and its report,
/// the windows' data ranges following one another.
fn assert_windows_agree(
    name: &str,
    data: &[u8],
    options: RebuildOptions,
    window: u64,
    whole: &RebuiltIndex,
) {
    let mut cells = Vec::new();
    let mut covered = 16u64;
    let done = AtomicU64::new(0);
    let progress = |bytes| {
        done.fetch_add(bytes, Ordering::Relaxed);
    };
    let outcome = options
        .rebuild_windowed(data, window, &progress, &mut |window, range| {
            assert_eq!(range.start, covered, "{name}: windows follow one another");
            covered = range.end;
            cells.extend(window.iter().flat_map(|run| run.iter().copied()));
            Ok(())
        })
        .unwrap();
    let what = format!("{name} in windows of {window} with {options:?}");
    assert!(cells.iter().eq(whole.cells()), "{what}: cells");
    assert_eq!(outcome.unfinished, whole.unfinished, "{what}");
    assert_eq!(outcome.blocks, whole.blocks, "{what}");
    assert_eq!(outcome.report, whole.report, "{what}");
    // A progress bar of the data's length ends full, not past it.
    assert_eq!(done.into_inner(), data.len() as u64, "{what}: progress");
}

#[test]
fn workers_are_capped_by_cores_and_by_the_data() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let asked = |threads| RebuildOptions::new().with_threads(threads);
    assert_eq!(asked(5000).workers(2_700), 1, "one chunk of work");
    assert_eq!(asked(0).workers(0), 1, "never 0");
    assert_eq!(
        asked(100_000).workers(1 << 40),
        cores * RebuildOptions::MAX_WORKERS_PER_CORE,
        "a few per core"
    );
    assert_eq!(
        asked(2).workers(1 << 40),
        2.min(cores * RebuildOptions::MAX_WORKERS_PER_CORE)
    );
    assert_eq!(
        asked(3).workers(2 * RebuildOptions::MIN_CHUNK + 1),
        3.min(cores * RebuildOptions::MAX_WORKERS_PER_CORE)
    );
}

#[test]
fn rebuilt_index_equals_the_bundled_testdata_index() {
    for name in ["all-types", "multi-thread"] {
        let path = files::testdata(&format!("{name}.trace"));
        let data = std::fs::read(&path).unwrap();
        let index = std::fs::read(tracetree::LazyTraceReader::index_path(&path)).unwrap();
        assert_rebuilds_written(name, &data, &index);
    }
}

/// Four generated threads streamed concurrently in 4 KiB blocks: many
/// interleaved blocks, containers spanning blocks, headers ending blocks.
#[test]
fn rebuilt_index_equals_the_streaming_writers_index() {
    use tracetree::generate::{Shape, ThreadGenerator};
    use tracetree::write::{StreamingOptions, StreamingWriter};

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("streamed.trace");
    let mut options = StreamingOptions::default();
    options.block_size = 4 << 10;
    let writer = StreamingWriter::create_with_options(&path, options).unwrap();
    std::thread::scope(|scope| {
        for (t, shape) in [Shape::Mixed, Shape::Deep, Shape::Wide, Shape::Threads]
            .into_iter()
            .enumerate()
        {
            let mut thread = writer.new_thread(format!("worker-{t}")).unwrap();
            scope.spawn(move || {
                let mut rounds = 0;
                ThreadGenerator::new(shape, 3, t as u64, 4)
                    .run(&mut thread, || {
                        rounds += 1;
                        rounds > 40
                    })
                    .unwrap();
                thread.finish().unwrap();
            });
        }
    });
    let summary = writer.close().unwrap();
    assert!(summary.blocks > 20, "{summary:?}");
    let data = std::fs::read(&path).unwrap();
    let index = std::fs::read(tracetree::LazyTraceReader::index_path(&path)).unwrap();
    assert_rebuilds_written("streamed", &data, &index);
}

#[test]
fn rebuild_reports_what_a_crashed_recorder_left() {
    let Some(dir) = files::reference_traces() else {
        return;
    };
    let data = std::fs::read(dir.join("crashed.trace")).unwrap();
    let rebuilt = RebuiltIndex::build(&data, RebuildOptions::default()).unwrap();
    let eager = EagerTrace::load(TraceBytes::from_vec(data)).unwrap();
    assert_eq!(rebuilt.report, *eager.report());
    assert_eq!(rebuilt.unfinished.len(), 15);
    assert_eq!(rebuilt.blocks, 15);
    for unfinished in &rebuilt.unfinished {
        assert!(
            eager
                .find_event(unfinished.event)
                .is_some_and(|n| eager.node(n).is_unfinished())
        );
    }
    let block_cells = rebuilt
        .cells()
        .filter(|c| c.kind() == ObjectKind::BlockStart)
        .count();
    assert_eq!(block_cells, 15);
}

#[test]
fn every_truncation_rebuilds_like_the_eager_loader() {
    let Some(dir) = files::reference_traces() else {
        return;
    };
    let data = std::fs::read(dir.join("all-types-stream.trace")).unwrap();
    for len in (16..data.len()).step_by(7) {
        let cut = &data[..len];
        let eager = EagerTrace::load(TraceBytes::from_vec(cut.to_vec())).unwrap();
        let rebuilt = RebuiltIndex::build(
            cut,
            RebuildOptions::new().with_threads(2).with_chunk_size(256),
        )
        .unwrap();
        assert_eq!(rebuilt.report, *eager.report(), "cut at {len}");
        let containers = eager
            .nodes()
            .filter(|n| n.tracepoint().is_container())
            .count();
        let cells = rebuilt
            .cells()
            .filter(|c| c.kind() == ObjectKind::Tracepoint)
            .count();
        assert_eq!(cells + rebuilt.unfinished.len(), containers, "cut at {len}");
        let mut options = RebuildOptions::default();
        options.threads = 2;
        options.chunk_size = 128;
        assert_windows_agree(&format!("cut at {len}"), cut, options, 700, &rebuilt);
    }
}
