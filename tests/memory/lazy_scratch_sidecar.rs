//! The lookup heap stays bounded when no sidecar can be written next to
//! the trace (a read-only directory, or `SidecarPolicy::ReadOnly`): the
//! lookups are written to an unlinked scratch file and mapped from there,
//! so the process's anonymous memory (heap) after opening does not grow
//! with the trace, and nothing is written next to the trace. (With
//! `defer_sidecar(None)`: within that bound, tables stay on the heap.)
//!
//! The test runs alone, so that `RssAnon` is this
//! test's alone. `TRACETREE_SCRATCH_TRACE=PATH` (a trace with its `.idx`)
//! also prints the figures of every policy for that trace.

use std::path::{Path, PathBuf};

use tracetree::read::{IndexChoice, LazyTraceReader, SidecarOutcome, SidecarPolicy};

use tracetree_testkit::lazy::sidecar_of;
use tracetree_testkit::memory::{self, rss_anon};
use tracetree_testkit::synth;

/// A generated trace of about `bytes`, made in `dir`.
fn trace(dir: &Path, bytes: u64) -> PathBuf {
    synth::synth_trace(dir, &format!("scratch-{bytes}"), bytes, 9)
}

/// `trace` and its index, symlinked into a new read-only directory.
fn read_only_copy(trace: &Path, dir: &Path) -> PathBuf {
    let linked = dir.join("t.trace");
    std::os::unix::fs::symlink(trace, &linked).unwrap();
    std::os::unix::fs::symlink(
        LazyTraceReader::index_path(trace),
        LazyTraceReader::index_path(&linked),
    )
    .unwrap();
    let mut permissions = std::fs::metadata(dir).unwrap().permissions();
    permissions.set_readonly(true);
    std::fs::set_permissions(dir, permissions).unwrap();
    linked
}

fn make_writable(dir: &Path) {
    let mut permissions = std::fs::metadata(dir).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    permissions.set_readonly(false);
    std::fs::set_permissions(dir, permissions).unwrap();
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    found.sort();
    found
}

/// Readers held at once per measurement: the tables built while opening
/// are freed once mapped back, but the allocator keeps some of that memory
/// (in the arenas of the threads that built them; it serves later opens),
/// which the first policy measured pays once (up to ~12 MB at 192 MB, ~50
/// MB at 1 GB seen); tables that stay on the heap add up per reader.
const READERS: usize = 10;

/// Opens `path` with `policy` (building every table), tables never kept
/// on the heap.
fn open(path: &Path, policy: SidecarPolicy) -> LazyTraceReader {
    let reader = LazyTraceReader::options()
        .sidecar(policy)
        .defer_sidecar(None)
        .index(IndexChoice::UseOrRebuild)
        .cache_bytes(64 << 10)
        .open(path)
        .unwrap();
    assert!(reader.build_lookups().is_empty());
    reader
}

/// How much `RssAnon` grew while opening [`READERS`] readers of `path`
/// with `policy` and holding them, and the readers. One reader is opened
/// and dropped first, so that what the allocator keeps from building the
/// tables (up to about twice the tables) is not counted.
fn open_growth(path: &Path, policy: SidecarPolicy) -> (u64, Vec<LazyTraceReader>) {
    drop(open(path, policy));
    let before = rss_anon().unwrap();
    let readers: Vec<_> = (0..READERS).map(|_| open(path, policy)).collect();
    let after = rss_anon().unwrap();
    (after.saturating_sub(before), readers)
}

#[test]
fn lookup_heap_does_not_grow_with_the_trace_without_a_writable_directory() {
    let _alone = memory::alone();
    if rss_anon().is_none() {
        eprintln!("no /proc/self/status: skipped");
        return;
    }
    let traces = tempfile::tempdir().unwrap();
    let (small, large) = (
        trace(traces.path(), 8 << 20),
        trace(traces.path(), 192 << 20),
    );
    let mut growth = Vec::new();
    for path in [&small, &large] {
        let dir = tempfile::tempdir().unwrap();
        let linked = read_only_copy(path, dir.path());
        let listed = entries(dir.path());
        for policy in [
            SidecarPolicy::ReadWrite,
            SidecarPolicy::ReadOnly,
            SidecarPolicy::Off,
        ] {
            let (grown, readers) = open_growth(&linked, policy);
            for reader in &readers {
                let report = reader.report();
                if policy == SidecarPolicy::Off {
                    assert!(report.sidecar.is_none());
                    continue;
                }
                assert!(report.sidecar.is_some(), "{report:?}");
                assert!(
                    report.sidecar != Some(SidecarOutcome::Written),
                    "{report:?}"
                );
                assert!(report.scratch, "{policy:?}: {report:?}");
                // The tables are mapped: the heap holds per-block entries.
                let (heap, blocks) = (reader.lookup_heap_bytes(), reader.report().blocks);
                assert!(heap <= 64 * blocks + (64 << 10), "{policy:?}: {heap} B");
                // The trace reads through the mapped scratch tables.
                let root = reader.root(reader.thread_ids()[0]).unwrap().unwrap();
                assert!(reader.child_count(root).unwrap() > 0);
            }
            drop(readers);
            growth.push((policy, grown));
        }
        assert_eq!(
            entries(dir.path()),
            listed,
            "nothing written next to the trace"
        );
        assert!(!sidecar_of(&linked).exists());
        make_writable(dir.path());
    }
    // Tables on the heap cost 4 bytes per container per reader (~7 MB
    // per reader at 192 MB, ~70 MB for ten): allow three readers' worth
    // over the small trace's growth, for what the allocator keeps.
    let containers = open(&large, SidecarPolicy::Off).report().containers as u64;
    let allowed = 3 * 4 * containers;
    eprintln!(
        "RssAnon growth for {READERS} readers: {growth:?}; large trace: {containers} containers"
    );
    for i in 0..3 {
        let ((policy, small_growth), (_, large_growth)) = (growth[i], growth[i + 3]);
        let bounded = large_growth <= small_growth + allowed;
        // `Off` keeps the tables on the heap: the measure must see them.
        assert_eq!(
            bounded,
            policy != SidecarPolicy::Off,
            "{policy:?}: heap grew by {large_growth} B on the large trace, {small_growth} B on the small one (bound: {allowed} B more)"
        );
    }
    // Last: its opens leave the allocator memory that would hide growth.
    if let Some(path) = std::env::var_os("TRACETREE_SCRATCH_TRACE") {
        report(Path::new(&path));
    }
}

/// Prints each policy's heap growth for `path` in a read-only directory:
/// [`READERS`] readers held at once, and one reader's lookup heap. (The
/// first policy's figure includes what the allocator keeps, see
/// [`READERS`].)
fn report(path: &Path) {
    let dir = tempfile::Builder::new()
        .prefix("lazyfix-")
        .tempdir_in(path.parent().unwrap())
        .unwrap();
    let linked = read_only_copy(path, dir.path());
    for policy in [
        SidecarPolicy::ReadWrite,
        SidecarPolicy::ReadOnly,
        SidecarPolicy::Off,
    ] {
        let (grown, readers) = open_growth(&linked, policy);
        eprintln!(
            "{}: {policy:?}: RssAnon +{:.1} MB for {READERS} readers; lookup heap {:.1} MB per reader; scratch: {:?}",
            path.display(),
            grown as f64 / 1e6,
            readers[0].lookup_heap_bytes() as f64 / 1e6,
            readers[0]
                .report()
                .sidecar
                .as_ref()
                .map(|_| readers[0].report().scratch)
        );
    }
    make_writable(dir.path());
}
