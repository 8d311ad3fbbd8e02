//! The lookup sidecar (`TRACE.ttlookup`): written after a first open, used
//! on reopen with the same tree as the eager loader, rejected when the data
//! or index file changed, never a panic when it is corrupt, and never an
//! error when it cannot be written.

use std::fs::{self, File, FileTimes};
use std::path::{Path, PathBuf};

use tracetree::generate::raw::{self, Crash, SynthOptions};
use tracetree::read::{
    EagerTrace, IndexChoice, IndexProblem, IndexStatus, LazyTraceReader, SidecarOutcome,
    SidecarPolicy, SidecarProblem,
};

use tracetree_testkit::lazy::{
    assert_same_tree, expand_all, reference_traces, sidecar_dir, sidecar_of, testdata_traces,
    with_sidecar,
};
use tracetree_testkit::synth::blocks_trace;

/// Copies `trace` (and its index, if any) into `dir`.
fn copy_trace(trace: &Path, dir: &Path) -> PathBuf {
    let path = dir.join(trace.file_name().unwrap());
    fs::copy(trace, &path).unwrap();
    if LazyTraceReader::index_path(trace).exists() {
        fs::copy(
            LazyTraceReader::index_path(trace),
            LazyTraceReader::index_path(&path),
        )
        .unwrap();
    }
    path
}

fn outcome(reader: &LazyTraceReader) -> SidecarOutcome {
    reader.report().sidecar.clone().unwrap()
}

fn rejected(reader: &LazyTraceReader) -> Option<SidecarProblem> {
    reader.report().sidecar_rejected.clone()
}

/// A generated multi-block trace on disk.
fn synth_trace(dir: &Path, crash: Option<Crash>) -> PathBuf {
    blocks_trace(dir, crash, 256 << 10)
}

/// The blocks of the trace at `path`, as its index lists them.
fn blocks_of(path: &Path) -> Vec<(u64, u64)> {
    let index = fs::read(LazyTraceReader::index_path(path)).unwrap();
    tracetree_testkit::layout::index_blocks(&index)
}

/// Opens `path` twice: the first open writes the sidecar, the second uses
/// it; both read as the eager loader does and report the same.
fn written_then_used(path: &Path) {
    let name = path.display().to_string();
    let eager = EagerTrace::open(path).unwrap();
    let first = with_sidecar(path).open(path).unwrap();
    assert_eq!(outcome(&first), SidecarOutcome::Written, "{name}");
    // None there, or an older one made for other files.
    assert!(matches!(
        rejected(&first),
        Some(SidecarProblem::Missing(_) | SidecarProblem::Stale(_))
    ));
    assert!(sidecar_of(path).exists());
    let second = with_sidecar(path).open(path).unwrap();
    assert_eq!(outcome(&second), SidecarOutcome::Used, "{name}");
    assert!(second.report().sidecar_used());
    assert_eq!(rejected(&second), None);
    let (a, b) = (first.report(), second.report());
    match (&a.status, &b.status) {
        // A broken index's problem is kept as text.
        (IndexStatus::Rebuilt(then), IndexStatus::Rebuilt(IndexProblem::Recorded(text))) => {
            assert_eq!(&then.to_string(), text, "{name}")
        }
        (then, now) => assert_eq!(then, now, "{name}"),
    }
    assert_eq!(a.blocks, b.blocks, "{name}");
    assert_eq!(a.references, b.references, "{name}");
    assert_eq!(a.containers, b.containers, "{name}");
    assert_eq!(a.repaired_containers, b.repaired_containers, "{name}");
    assert_eq!(&b.data, eager.report(), "{name}");
    assert_eq!(first.thread_problems(), second.thread_problems(), "{name}");
    assert_eq!(first.threads(), second.threads(), "{name}");
    assert_eq!(
        first.count_tracepoints().unwrap(),
        second.count_tracepoints().unwrap(),
        "{name}"
    );
    // Nothing is built on first use: the tables come from the mapping.
    assert_eq!(second.lookup_heap_bytes(), b.blocks * 40, "{name}");
    assert_same_tree(&second, &eager, &name);
}

#[test]
fn testdata_and_reference_traces_read_the_same_through_the_sidecar() {
    let mut traces = testdata_traces();
    traces.extend(reference_traces());
    assert!(!traces.is_empty());
    for trace in traces {
        let dir = tempfile::tempdir().unwrap();
        let path = copy_trace(&trace, dir.path());
        written_then_used(&path);
        // Without the index: rebuilt, written, then used with the same
        // rebuild reason.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("alone.trace");
        fs::copy(&trace, &path).unwrap();
        written_then_used(&path);
        let reopened = with_sidecar(&path).open(&path).unwrap();
        assert!(matches!(
            reopened.report().status,
            IndexStatus::Rebuilt(IndexProblem::Missing(_))
        ));
        // The index is required: a rebuild's sidecar is not enough.
        let required = with_sidecar(&path).index(IndexChoice::Require).open(&path);
        assert!(matches!(
            required,
            Err(tracetree::Error::BrokenIndex { .. })
        ));
    }
}

#[test]
fn crashed_traces_keep_their_report_through_the_sidecar() {
    for half_written_block in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let path = synth_trace(dir.path(), Some(Crash { half_written_block }));
        written_then_used(&path);
        fs::remove_file(LazyTraceReader::index_path(&path)).unwrap();
        written_then_used(&path);
    }
}

/// Sets `path`'s modification time back to `stamp`'s.
fn keep_mtime(path: &Path, stamp: std::time::SystemTime) {
    File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_times(FileTimes::new().set_modified(stamp))
        .unwrap();
}

/// After `change`, the sidecar is not used, and the reader agrees with one
/// that never looks at a sidecar.
fn assert_rejected_after(path: &Path, change: impl FnOnce(&Path)) {
    let first = with_sidecar(path).open(path).unwrap();
    assert_eq!(outcome(&first), SidecarOutcome::Written);
    assert!(
        with_sidecar(path)
            .open(path)
            .unwrap()
            .report()
            .sidecar_used()
    );
    change(path);
    let plain = with_sidecar(path).sidecar(SidecarPolicy::Off).open(path);
    let reopened = with_sidecar(path)
        .sidecar(SidecarPolicy::ReadOnly)
        .open(path);
    match (plain, reopened) {
        (Ok(plain), Ok(reopened)) => {
            assert!(!reopened.report().sidecar_used());
            assert!(
                matches!(
                    rejected(&reopened),
                    Some(SidecarProblem::Stale(_) | SidecarProblem::Malformed { .. })
                ),
                "{:?}",
                rejected(&reopened)
            );
            assert_eq!(plain.report().status, reopened.report().status);
            assert_eq!(plain.report().data, reopened.report().data);
            assert_same_tree(&reopened, &plain, "changed");
        }
        (Err(_), Err(_)) => {}
        (plain, reopened) => panic!(
            "a sidecar-less open gave {:?}, the reopen {:?}",
            plain.map(|r| r.report().clone()),
            reopened.map(|r| r.report().clone())
        ),
    }
}

#[test]
fn a_changed_data_file_makes_the_sidecar_stale() {
    // One byte appended.
    let dir = tempfile::tempdir().unwrap();
    let path = synth_trace(dir.path(), None);
    assert_rejected_after(&path, |path| {
        let mut data = fs::read(path).unwrap();
        data.push(0);
        fs::write(path, data).unwrap();
    });
    // Truncated by one byte, and to half.
    for keep in [1, 2] {
        let dir = tempfile::tempdir().unwrap();
        let path = synth_trace(dir.path(), None);
        assert_rejected_after(&path, |path| {
            let data = fs::read(path).unwrap();
            let len = if keep == 1 {
                data.len() - 1
            } else {
                data.len() / 2
            };
            fs::write(path, &data[..len]).unwrap();
        });
    }
    // A byte of a block header flipped (the thread id of a middle block,
    // and its kind byte), with the modification time put back: the framing
    // check sees it.
    for at_in_header in [4, 0] {
        let dir = tempfile::tempdir().unwrap();
        let path = synth_trace(dir.path(), None);
        let blocks = blocks_of(&path);
        let (start, _) = blocks[blocks.len() / 2];
        assert_rejected_after(&path, |path| {
            let mtime = fs::metadata(path).unwrap().modified().unwrap();
            let mut data = fs::read(path).unwrap();
            data[start as usize + at_in_header] ^= 1;
            fs::write(path, data).unwrap();
            keep_mtime(path, mtime);
        });
    }
    // The byte before a block's end (its last object), mtime put back.
    let dir = tempfile::tempdir().unwrap();
    let path = synth_trace(dir.path(), None);
    let (_, end) = blocks_of(&path)[1];
    assert_rejected_after(&path, |path| {
        let mtime = fs::metadata(path).unwrap().modified().unwrap();
        let mut data = fs::read(path).unwrap();
        data[end as usize - 1] ^= 0x40;
        fs::write(path, data).unwrap();
        keep_mtime(path, mtime);
    });
    // A payload byte rewritten: only the modification time tells.
    let dir = tempfile::tempdir().unwrap();
    let path = synth_trace(dir.path(), None);
    assert_rejected_after(&path, |path| {
        let data = fs::read(path).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        fs::write(path, data).unwrap();
    });
}

#[test]
fn a_changed_index_makes_the_sidecar_stale() {
    // A byte appended.
    let dir = tempfile::tempdir().unwrap();
    let path = synth_trace(dir.path(), None);
    assert_rejected_after(&path, |path| {
        let mut index = fs::read(LazyTraceReader::index_path(path)).unwrap();
        index.push(0);
        fs::write(LazyTraceReader::index_path(path), index).unwrap();
    });
    // A byte of the last cell flipped, mtime put back.
    let dir = tempfile::tempdir().unwrap();
    let path = synth_trace(dir.path(), None);
    assert_rejected_after(&path, |path| {
        let index = LazyTraceReader::index_path(path);
        let mtime = fs::metadata(&index).unwrap().modified().unwrap();
        let mut bytes = fs::read(&index).unwrap();
        let at = bytes.len() - 40;
        bytes[at] ^= 1;
        fs::write(&index, bytes).unwrap();
        keep_mtime(&index, mtime);
    });
    // Removed.
    let dir = tempfile::tempdir().unwrap();
    let path = synth_trace(dir.path(), None);
    assert_rejected_after(&path, |path| {
        fs::remove_file(LazyTraceReader::index_path(path)).unwrap()
    });
    // Appeared, where there was none.
    let dir = tempfile::tempdir().unwrap();
    let path = synth_trace(dir.path(), None);
    let index = fs::read(LazyTraceReader::index_path(&path)).unwrap();
    fs::remove_file(LazyTraceReader::index_path(&path)).unwrap();
    assert_rejected_after(&path, |path| {
        fs::write(LazyTraceReader::index_path(path), &index).unwrap()
    });
    assert!(
        with_sidecar(&path)
            .open(&path)
            .unwrap()
            .report()
            .index_used()
    );
}

#[test]
fn stamps_that_vouch_for_the_data_spare_reading_every_block() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("small-blocks.trace");
    let options = SynthOptions {
        threads: 2,
        bytes: 256 << 10,
        block_bytes: 2 << 10,
        seed: 5,
        block_cell_last: false,
        crash: None,
    };
    raw::write_files(&options, &path).unwrap();
    let eager = EagerTrace::open(&path).unwrap();
    let blocks = eager.threads().iter().map(|t| t.blocks).sum::<usize>();
    assert!(blocks > 40);
    // Just written: every block's framing is read.
    with_sidecar(&path).open(&path).unwrap();
    let racy = with_sidecar(&path).open(&path).unwrap();
    let report = racy.report().clone();
    assert_eq!(report.sidecar, Some(SidecarOutcome::Used));
    assert_eq!(report.framing_checked, blocks);
    // Once the data's ctime is well in the past, the stamps can vouch for
    // the data. A read-only open still reads every block (it writes
    // nothing)...
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let sidecar_bytes = fs::read(sidecar_of(&path)).unwrap();
    let read_only = || {
        with_sidecar(&path)
            .sidecar(SidecarPolicy::ReadOnly)
            .open(&path)
            .unwrap()
    };
    let report = read_only().report().clone();
    assert_eq!(report.sidecar, Some(SidecarOutcome::Used));
    assert_eq!(report.framing_checked, blocks);
    assert_eq!(fs::read(sidecar_of(&path)).unwrap(), sidecar_bytes);
    // ... the first read-write open reads every block once more and
    // re-stamps the sidecar in place (its `stamped_at` only), ...
    let restamping = with_sidecar(&path).open(&path).unwrap();
    let report = restamping.report().clone();
    assert_eq!(report.sidecar, Some(SidecarOutcome::Used));
    assert_eq!(report.framing_checked, blocks);
    let restamped = fs::read(sidecar_of(&path)).unwrap();
    assert_eq!(restamped.len(), sidecar_bytes.len());
    let differing: Vec<usize> = (0..restamped.len())
        .filter(|&i| restamped[i] != sidecar_bytes[i])
        .collect();
    assert!(!differing.is_empty() && differing.iter().all(|i| (192..200).contains(i)));
    // ... and every later open, read-only too, reads only a sample.
    for trusted in [with_sidecar(&path).open(&path).unwrap(), read_only()] {
        let report = trusted.report();
        assert_eq!(report.sidecar, Some(SidecarOutcome::Used));
        // The sample: 32 blocks (and the last one).
        assert!(report.framing_checked <= 32 + 1);
        assert_same_tree(&trusted, &eager, "trusted stamps");
    }
    assert_eq!(fs::read(sidecar_of(&path)).unwrap(), restamped);
    // Any write moves the ctime, even with the mtime put back (here the
    // same bytes are written again).
    let mtime = fs::metadata(&path).unwrap().modified().unwrap();
    let data = fs::read(&path).unwrap();
    fs::write(&path, data).unwrap();
    keep_mtime(&path, mtime);
    let reopened = with_sidecar(&path)
        .sidecar(SidecarPolicy::ReadOnly)
        .open(&path)
        .unwrap();
    assert!(matches!(
        rejected(&reopened),
        Some(SidecarProblem::Stale(_))
    ));
    assert_same_tree(&reopened, &eager, "rewritten");
}

/// xorshift64.
fn rng(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed | 1;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

#[test]
fn a_corrupt_sidecar_never_panics() {
    let dir = tempfile::tempdir().unwrap();
    let path = blocks_trace(dir.path(), None, 32 << 10);
    let eager = EagerTrace::open(&path).unwrap();
    assert_eq!(
        outcome(&with_sidecar(&path).open(&path).unwrap()),
        SidecarOutcome::Written
    );
    let sidecar = sidecar_of(&path);
    let good = fs::read(&sidecar).unwrap();
    eprintln!("sidecar of {} bytes", good.len());
    let read_only = || {
        with_sidecar(&path)
            .sidecar(SidecarPolicy::ReadOnly)
            .open(&path)
            .unwrap()
    };
    // Every prefix: rejected (the recorded length differs), falls back.
    for len in 0..good.len() {
        fs::write(&sidecar, &good[..len]).unwrap();
        let reader = read_only();
        assert!(!reader.report().sidecar_used(), "prefix {len}");
        assert!(
            matches!(rejected(&reader), Some(SidecarProblem::Malformed { .. })),
            "prefix {len}: {:?}",
            rejected(&reader)
        );
        assert!(reader.report().index_used());
        if len.is_multiple_of(509) {
            assert_same_tree(&reader, &eager, "after a truncated sidecar");
        }
    }
    // Single random byte flips anywhere: either rejected and the tree is
    // the eager one, or used and every expansion gives a value or a typed
    // error.
    let mut next = rng(7);
    let mut used = 0;
    for round in 0..400u32 {
        let mut bytes = good.clone();
        let at = (next() % bytes.len() as u64) as usize;
        bytes[at] ^= 1 << (next() % 8);
        fs::write(&sidecar, &bytes).unwrap();
        let reader = read_only();
        if reader.report().sidecar_used() {
            used += 1;
            let _ = expand_all(&reader);
        } else if round.is_multiple_of(16) {
            assert_same_tree(&reader, &eager, "after a flipped sidecar");
        }
    }
    // Flips in the container arrays are not looked for at open.
    assert!(used > 0);
    // The container arrays overwritten with garbage (the header intact):
    // used, and never a panic.
    for seed in 1..40 {
        let mut next = rng(seed);
        let mut bytes = good.clone();
        let from = bytes.len() / 2;
        for byte in &mut bytes[from..] {
            if next().is_multiple_of(4) {
                *byte = next() as u8;
            }
        }
        fs::write(&sidecar, &bytes).unwrap();
        let reader = read_only();
        assert!(reader.report().sidecar_used());
        let _ = expand_all(&reader);
        for thread in reader.thread_ids() {
            let _ = reader.walk_thread(thread, tracetree::read::WalkDetail::Full, |_| Ok(true));
        }
    }
    // A good sidecar again is used.
    fs::write(&sidecar, &good).unwrap();
    assert!(read_only().report().sidecar_used());
}

#[test]
fn an_unwritable_sidecar_is_reported_not_an_error() {
    // A read-only sidecar directory.
    let dir = tempfile::tempdir().unwrap();
    let path = synth_trace(dir.path(), None);
    let eager = EagerTrace::open(&path).unwrap();
    let lookups = sidecar_dir(&path);
    fs::create_dir_all(&lookups).unwrap();
    let mut permissions = fs::metadata(&lookups).unwrap().permissions();
    permissions.set_readonly(true);
    fs::set_permissions(&lookups, permissions.clone()).unwrap();
    let reader = with_sidecar(&path).open(&path);
    #[allow(clippy::permissions_set_readonly_false)]
    permissions.set_readonly(false);
    fs::set_permissions(&lookups, permissions).unwrap();
    let reader = reader.unwrap();
    assert!(
        matches!(outcome(&reader), SidecarOutcome::NotWritten(_)),
        "{:?}",
        outcome(&reader)
    );
    assert!(!sidecar_of(&path).exists());
    assert_same_tree(&reader, &eager, "read-only directory");
    // A directory where the sidecar would go.
    fs::create_dir_all(sidecar_of(&path)).unwrap();
    let reader = with_sidecar(&path).open(&path).unwrap();
    assert!(matches!(outcome(&reader), SidecarOutcome::NotWritten(_)));
    assert!(matches!(
        rejected(&reader),
        Some(SidecarProblem::Missing(_))
    ));
    assert_same_tree(&reader, &eager, "sidecar path taken");
    // No temporary file is left behind.
    let names: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 3, "{names:?}");
}

#[test]
fn policies_off_and_read_only_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = synth_trace(dir.path(), None);
    let off = with_sidecar(&path)
        .sidecar(SidecarPolicy::Off)
        .open(&path)
        .unwrap();
    assert_eq!(off.report().sidecar, None);
    let read_only = with_sidecar(&path)
        .sidecar(SidecarPolicy::ReadOnly)
        .open(&path)
        .unwrap();
    assert_eq!(outcome(&read_only), SidecarOutcome::Skipped);
    assert!(!sidecar_of(&path).exists());
    // A rebuild asked for neither uses nor writes one.
    with_sidecar(&path).open(&path).unwrap();
    let modified = fs::metadata(sidecar_of(&path)).unwrap().modified().unwrap();
    let rebuilt = with_sidecar(&path)
        .index(IndexChoice::Rebuild)
        .open(&path)
        .unwrap();
    assert!(!rebuilt.report().sidecar_used());
    assert_eq!(outcome(&rebuilt), SidecarOutcome::Skipped);
    assert_eq!(
        fs::metadata(sidecar_of(&path)).unwrap().modified().unwrap(),
        modified
    );
    // Read-only uses a valid one.
    let read_only = with_sidecar(&path)
        .sidecar(SidecarPolicy::ReadOnly)
        .open(&path)
        .unwrap();
    assert!(read_only.report().sidecar_used());
}

#[test]
fn a_sidecar_directory_keeps_within_its_budget() {
    let dir = tempfile::tempdir().unwrap();
    let lookups = dir.path().join("lookups");
    let traces: Vec<PathBuf> = (0..3)
        .map(|i| {
            let folder = dir.path().join(format!("t{i}"));
            fs::create_dir(&folder).unwrap();
            synth_trace(&folder, None)
        })
        .collect();
    let options = || {
        LazyTraceReader::options()
            .sidecar_dir(Some(lookups.clone()))
            .defer_sidecar(None)
            .sidecar_budget(1)
    };
    let sidecars: Vec<PathBuf> = traces
        .iter()
        .map(|trace| LazyTraceReader::sidecar_path(&lookups, trace))
        .collect();
    for (i, trace) in traces.iter().enumerate() {
        let reader = options().open(trace).unwrap();
        assert_eq!(outcome(&reader), SidecarOutcome::Written);
        // The one just written stays; the budget evicts every older one.
        for (j, sidecar) in sidecars.iter().enumerate() {
            assert_eq!(sidecar.exists(), j == i, "after opening trace {i}");
        }
    }
    // A budget they all fit in keeps them all.
    for trace in &traces {
        LazyTraceReader::options()
            .sidecar_dir(Some(lookups.clone()))
            .defer_sidecar(None)
            .open(trace)
            .unwrap();
    }
    assert!(sidecars.iter().all(|s| s.exists()));
    // Nothing was written beside the traces.
    for trace in &traces {
        let beside = fs::read_dir(trace.parent().unwrap()).unwrap().count();
        assert_eq!(beside, 2, "{}", trace.display());
    }
}
