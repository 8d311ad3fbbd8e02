//! Safe to kill: a child process streams a trace from three threads with
//! small blocks and is killed with SIGKILL mid-write. What it leaves opens as
//! a crashed recorder's trace with every block that reached the file, in the
//! eager loader and in the lazy reader (with the index left behind, and
//! rebuilding); the index rebuilt from the data agrees with the eager loader,
//! and the index the writer left is a prefix of the rebuilt one (also when
//! cut further).

#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tracetree::TraceBytes;
use tracetree::common::PhysicalOffset;
use tracetree::lowlevel::IndexCell;
use tracetree::lowlevel::RebuiltIndex;
use tracetree::model::Type;
use tracetree::read::RebuildOptions;
use tracetree::read::{EagerTrace, IndexChoice, IndexProblem, IndexStatus, LazyTraceReader};
use tracetree::write::{
    CallOutcome, CallSpec, CodeLocationSpec, FieldSpec, MethodSpec, StreamingOptions,
    StreamingWriter, ThreadRecorder, ValueSpec,
};

use tracetree_testkit::lazy;
use tracetree_testkit::stream::complete_blocks;

/// Set in the child's environment: the path to stream to.
const CHILD: &str = "TRACETREE_STREAM_CRASH_CHILD";
const BLOCK_SIZE: usize = 16 << 10;

/// The child: streams from three threads until killed. Run as a test of
/// this binary, it returns at once unless the parent set [`CHILD`].
#[test]
fn child_streams_until_killed() {
    let Some(path) = std::env::var_os(CHILD) else {
        return;
    };
    let mut options = StreamingOptions::default();
    options.block_size = BLOCK_SIZE;
    let writer = StreamingWriter::create_with_options(PathBuf::from(path), options).unwrap();
    let run = MethodSpec::new("app.Worker", "run", vec![], Type::Void);
    let step = MethodSpec::new("app.Worker", "step", vec![Type::Int], Type::Int);
    let field = FieldSpec::new("app.Worker", "total", Type::Long);
    std::thread::scope(|scope| {
        for t in 0..3 {
            let mut thread = writer.new_thread(format!("worker-{t}")).unwrap();
            let (run, step, field) = (&run, &step, &field);
            scope.spawn(move || {
                let at = CodeLocationSpec::access("Worker.kt", "app.Worker", "step", 10 + t);
                let receiver = ValueSpec::object("app.Worker", t);
                // Never exits: the kill leaves it without a footer.
                thread
                    .enter_call(None, CallSpec::new(run).on(receiver.clone()))
                    .unwrap();
                for i in 0i64.. {
                    let call = CallSpec::new(step)
                        .on(receiver.clone())
                        .with_argument(i as i32);
                    thread.enter_call(Some(&at), call).unwrap();
                    for k in 0..4 {
                        thread
                            .write_field(Some(&at), field, receiver.clone(), ValueSpec::Long(i + k))
                            .unwrap();
                    }
                    thread.exit_call(CallOutcome::returned(i as i32)).unwrap();
                    if i % 64 == 0 {
                        // Keep the file from growing too fast between polls.
                        std::thread::sleep(Duration::from_micros(200));
                    }
                }
            });
        }
    });
}

/// Waits until the file at `path` is at least `len` bytes long.
fn wait_for(path: &Path, len: u64) {
    let start = Instant::now();
    while std::fs::metadata(path).map_or(0, |m| m.len()) < len {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the child wrote {} bytes in a minute",
            std::fs::metadata(path).map_or(0, |m| m.len())
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Cells with the fields that carry meaning.
fn normalized(cells: impl IntoIterator<Item = IndexCell>) -> Vec<IndexCell> {
    cells.into_iter().map(IndexCell::canonical).collect()
}

#[test]
fn a_killed_writer_leaves_every_written_block() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("killed.trace");
    let index_path = dir.path().join("killed.trace.idx");
    // The child test's name in this binary: its module path without the crate.
    let (_, module) = module_path!().split_once("::").unwrap();
    let child_test = format!("{module}::child_streams_until_killed");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", &child_test, "--test-threads=1"])
        .env(CHILD, &path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Dozens of blocks per thread.
    wait_for(&path, 100 * BLOCK_SIZE as u64);
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success(), "the child was killed");
    let data = std::fs::read(&path).unwrap();
    let index = std::fs::read(&index_path).unwrap();

    // The eager loader keeps every complete block.
    let blocks = complete_blocks(&data);
    assert!(blocks.len() > 50, "{} blocks", blocks.len());
    let eager = EagerTrace::load(TraceBytes::from_vec(data.clone())).unwrap();
    let report = eager.report();
    assert!(report.missing_eof, "{report:?}");
    assert!(report.dropped_blocks <= 1, "{report:?}");
    assert_eq!(eager.threads().len(), 3);
    let loaded_blocks: usize = eager.threads().iter().map(|t| t.blocks).sum();
    assert_eq!(
        loaded_blocks,
        blocks.len(),
        "every complete block is loaded"
    );
    assert!(
        eager.threads().iter().all(|t| t.blocks > 10),
        "{:?}",
        eager.threads()
    );
    // Each thread's `run` call and perhaps one `step` never got a footer.
    assert!(
        (3..=6).contains(&report.unfinished_containers),
        "{report:?}"
    );
    // No thread names: the writer writes them when the trace ends.
    assert!(
        eager
            .threads()
            .iter()
            .all(|t| eager.context().thread_name(t.id).is_none())
    );

    // The lazy reader opens it too — with the index left behind, and
    // rebuilding — and sees the same trees.
    let lazy = LazyTraceReader::open(&path).unwrap();
    // The index is used, unless the kill came while the I/O thread wrote a
    // block: a write the kill cut short (the kernel stops a write between
    // pages for a fatal signal), or a block written without its cells yet.
    // Then bytes after the last indexed block make the reader rebuild.
    let indexed_end = normalized(IndexCell::parse_file(&index).unwrap().0)
        .iter()
        .filter_map(|c| match c {
            IndexCell::Block { end, .. } => Some(end.get() + 1),
            _ => None,
        })
        .max()
        .unwrap_or(16);
    let expected = if indexed_end == data.len() as u64 {
        IndexStatus::Used { complete: false }
    } else {
        IndexStatus::Rebuilt(IndexProblem::Uncovered {
            at: PhysicalOffset::new(indexed_end),
            bytes: data.len() as u64 - indexed_end,
        })
    };
    assert_eq!(lazy.report().status, expected, "{:?}", lazy.report());
    assert_eq!(&lazy.report().data, report);
    let nodes = lazy::assert_same_tree(&lazy, &eager, "killed");
    assert_eq!(nodes, eager.nodes().len());
    let lazy = LazyTraceReader::options()
        .index(IndexChoice::Rebuild)
        .open(&path)
        .unwrap();
    lazy::assert_same_tree(&lazy, &eager, "killed, rebuilt");

    // The rebuild from the data alone agrees with the eager loader.
    let rebuilt = RebuiltIndex::build(&data, RebuildOptions::default()).unwrap();
    assert_eq!(rebuilt.report, *report);
    assert_eq!(rebuilt.blocks, blocks.len());
    assert_eq!(rebuilt.unfinished.len(), report.unfinished_containers);
    for unfinished in &rebuilt.unfinished {
        let node = eager
            .find_event(unfinished.event)
            .expect("an unfinished node");
        assert!(eager.node(node).is_unfinished());
    }

    // The index left behind has no footer and is a prefix of the rebuilt
    // one, short of at most the last block's cells; so is any cut of it.
    let rebuilt = normalized(rebuilt.cells().copied());
    let (written, has_footer) = IndexCell::parse_file(&index).unwrap();
    assert!(!has_footer);
    let written = normalized(written);
    assert_eq!(written[..], rebuilt[..written.len()]);
    let block_cells = written
        .iter()
        .filter(|c| matches!(c, IndexCell::Block { .. }))
        .count();
    assert!(
        block_cells + 1 >= blocks.len(),
        "{block_cells} of {} blocks",
        blocks.len()
    );
    for cut in [16, 17, 16 + 21 * 7 + 5, index.len() / 2, index.len() - 1] {
        let (cells, has_footer) = IndexCell::parse_file(&index[..cut]).unwrap();
        assert!(!has_footer);
        let cells = normalized(cells);
        assert_eq!(cells[..], written[..cells.len()], "index cut at {cut}");
        assert_eq!(cells.len(), (cut - 16) / 21);
    }
}

/// A closed trace's index cut anywhere in its footer, or in a cell, reads
/// as an index without a footer holding the cells before the cut.
#[test]
fn a_truncated_index_keeps_its_whole_cells() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("closed.trace");
    let mut options = StreamingOptions::default();
    options.block_size = 256;
    let writer = StreamingWriter::create_with_options(&path, options).unwrap();
    let mut thread = writer.new_thread("main").unwrap();
    let method = MethodSpec::new("A", "m", vec![], Type::Void);
    for _ in 0..50 {
        thread.enter_call(None, CallSpec::new(&method)).unwrap();
        thread.exit_call(CallOutcome::VOID).unwrap();
    }
    thread.finish().unwrap();
    writer.close().unwrap();
    let index = std::fs::read(dir.path().join("closed.trace.idx")).unwrap();
    let (cells, has_footer) = IndexCell::parse_file(&index).unwrap();
    assert!(has_footer);
    assert_eq!(IndexCell::count_file(&index).unwrap(), (cells.len(), true));
    for cut in 16..index.len() {
        let (got, has_footer) = IndexCell::parse_file(&index[..cut]).unwrap();
        assert!(!has_footer, "cut at {cut}");
        let counted = IndexCell::count_file(&index[..cut]).unwrap();
        assert_eq!(counted, (got.len(), false), "counted, cut at {cut}");
        // A cut inside the footer gives every cell before it.
        let whole = ((cut - 16) / 21).min(cells.len());
        assert_eq!(got[..], cells[..whole], "cut at {cut}");
    }
}
