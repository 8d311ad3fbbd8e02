//! The deferred sidecar (`LazyOptions::defer_sidecar`, the default): a
//! first open with an index builds lookups on demand and leaves a note of
//! the files' stamps; the next open of the same files writes the sidecar,
//! and later ones use it. Any change to the files, or a damaged note, makes
//! the next open a first one again; a rebuild, or tables over the bound,
//! write the sidecar at once.

use std::fs::{self, File, FileTimes};
use std::path::Path;
use std::time::{Duration, SystemTime};

use tracetree::read::{EagerTrace, LazyOptions, LazyTraceReader, SidecarOutcome, SidecarProblem};
use tracetree::tree::TraceTree;

use tracetree_testkit::lazy::{assert_same_tree, sidecar_dir, sidecar_of};
use tracetree_testkit::synth::blocks_trace;

fn deferring(path: &Path) -> LazyOptions {
    LazyTraceReader::options().sidecar_dir(Some(sidecar_dir(path)))
}

fn open(path: &Path) -> (SidecarOutcome, Option<SidecarProblem>, LazyTraceReader) {
    let reader = deferring(path).open(path).unwrap();
    let report = reader.report().clone();
    (report.sidecar.unwrap(), report.sidecar_rejected, reader)
}

#[test]
fn a_first_open_defers_the_sidecar_to_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let path = blocks_trace(dir.path(), None, 256 << 10);
    let eager = EagerTrace::open(&path).unwrap();

    let (outcome, rejected, first) = open(&path);
    assert_eq!(outcome, SidecarOutcome::Deferred);
    assert!(matches!(rejected, Some(SidecarProblem::Missing(_))));
    // No table was built up front; each is built when needed.
    let up_front = first.lookup_heap_bytes();
    assert_same_tree(&eager, &first, "deferred first open");
    assert!(first.lookup_heap_bytes() > up_front);
    let note = fs::read(sidecar_of(&path)).unwrap();
    // The note's magic (docs/FORMAT.md).
    assert_eq!(note[..8], *b"TTOPENED");
    assert!(
        note.len() < 4096,
        "a note is a header: {} bytes",
        note.len()
    );

    let (outcome, rejected, second) = open(&path);
    assert_eq!(outcome, SidecarOutcome::Written);
    assert_eq!(rejected, Some(SidecarProblem::Deferred));
    assert_same_tree(&eager, &second, "second open");
    let (outcome, rejected, third) = open(&path);
    assert_eq!(outcome, SidecarOutcome::Used);
    assert_eq!(rejected, None);
    assert_same_tree(&eager, &third, "third open");
}

#[test]
fn a_note_for_other_files_or_a_damaged_one_defers_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = blocks_trace(dir.path(), None, 64 << 10);
    assert_eq!(open(&path).0, SidecarOutcome::Deferred);
    // The index changed since the note: a first open again.
    let later = SystemTime::now() + Duration::from_secs(5);
    File::options()
        .write(true)
        .open(LazyTraceReader::index_path(&path))
        .unwrap()
        .set_times(FileTimes::new().set_modified(later))
        .unwrap();
    let (outcome, rejected, _) = open(&path);
    assert_eq!(outcome, SidecarOutcome::Deferred);
    assert!(
        matches!(rejected, Some(SidecarProblem::Stale(_))),
        "{rejected:?}"
    );
    // Every cut and every flipped byte of the note: an open that reads as
    // the eager loader does, never a panic.
    let eager = EagerTrace::open(&path).unwrap();
    let note = fs::read(sidecar_of(&path)).unwrap();
    let mut damaged: Vec<Vec<u8>> = (0..note.len()).map(|len| note[..len].to_vec()).collect();
    damaged.extend((0..note.len()).map(|at| {
        let mut bytes = note.clone();
        bytes[at] ^= 0x41;
        bytes
    }));
    for bytes in damaged {
        fs::write(sidecar_of(&path), &bytes).unwrap();
        let (outcome, rejected, reader) = open(&path);
        let again = rejected != Some(SidecarProblem::Deferred);
        assert_eq!(outcome == SidecarOutcome::Deferred, again, "{rejected:?}");
        assert_eq!(reader.thread_ids(), TraceTree::thread_ids(&eager));
    }
    let (_, _, reader) = open(&path);
    assert_same_tree(&eager, &reader, "after damaged notes");
}

#[test]
fn rebuilds_and_large_tables_write_the_sidecar_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = blocks_trace(dir.path(), None, 64 << 10);
    // Tables over the bound.
    let reader = deferring(&path).defer_sidecar(Some(0)).open(&path).unwrap();
    assert_eq!(reader.report().sidecar, Some(SidecarOutcome::Written));
    // No index: the rebuild's lookups are written at once.
    fs::remove_file(sidecar_of(&path)).unwrap();
    fs::remove_file(LazyTraceReader::index_path(&path)).unwrap();
    let (outcome, _, _) = open(&path);
    assert_eq!(outcome, SidecarOutcome::Written);
    assert_eq!(open(&path).0, SidecarOutcome::Used);
}
