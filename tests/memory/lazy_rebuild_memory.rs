//! Opening a trace without its index rebuilds the index from the data in
//! windows, into an unlinked scratch file that is then mapped as the
//! reader's cells: the heap holds one window's cells at a time, the data
//! pages of each window are released when it is done, and the sidecar's
//! arrays are written straight from the scratch index's cells — a crashed
//! recorder's calls that never got a footer interleaved with them. So the
//! open's peak resident set grows by a few windows, not by the size of the
//! trace (it held every rebuilt cell and every table on the heap before:
//! 431 MB for a 1 GB trace; a crashed recorder's trace then still built
//! every thread's table on the heap).
//!
//! The peak is the kernel's high-water mark (`VmHWM`), reset through
//! `/proc/self/clear_refs`; without it (not Linux) the test says so and
//! checks nothing. The test runs alone so that no other test's memory
//! shares the process's mark.

use tracetree::LazyTraceReader;
use tracetree::generate::raw::Crash;
use tracetree::read::{IndexStatus, SidecarOutcome, SidecarPolicy};

use tracetree_testkit::{memory, synth};

#[test]
fn opening_without_an_index_keeps_a_window_resident() {
    let _alone = memory::alone();
    const WINDOW: u64 = 1 << 20;
    let traces = tempfile::tempdir().unwrap();
    let crashed = Crash {
        half_written_block: true,
    };
    for (name, trace, crash) in [
        (
            "complete",
            synth::synth_trace(traces.path(), "open-memory-256m", 256 << 20, 11),
            None,
        ),
        (
            "crashed",
            synth::synth_trace_ending(traces.path(), "crashed-256m", 256 << 20, 13, Some(crashed)),
            Some(crashed),
        ),
    ] {
        let size = std::fs::metadata(&trace).unwrap().len();
        // The same data with no index beside it.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("no-index.trace");
        std::os::unix::fs::symlink(&trace, &path).unwrap();
        assert!(!LazyTraceReader::index_path(&path).exists());
        for policy in [SidecarPolicy::ReadWrite, SidecarPolicy::ReadOnly] {
            let Some((reader, grown)) = memory::open_peak(&path, policy, WINDOW) else {
                return;
            };
            let report = reader.report();
            assert!(
                matches!(report.status, IndexStatus::Rebuilt(_)),
                "{name}: {:?}",
                report.status
            );
            let expected = match policy {
                SidecarPolicy::ReadWrite => SidecarOutcome::Written,
                _ => SidecarOutcome::Skipped,
            };
            assert_eq!(report.sidecar.clone().unwrap(), expected);
            match crash {
                None => assert!(report.data.is_complete(), "{:?}", report.data),
                Some(_) => {
                    assert!(report.data.missing_eof, "{:?}", report.data);
                    assert!(report.data.dropped_bytes > 0, "{:?}", report.data);
                    assert!(report.data.unfinished_containers >= 2, "{:?}", report.data);
                }
            }
            // The rebuild's window (4 MiB, the smallest) of data and of
            // cells (reserved at a cell per 64 bytes), with a 2 MiB
            // page-cache folio on either side; then what a first open with
            // an index keeps (`lazy_open_memory`): per thread a window over
            // the data and one over the index, each widened by 2 MiB on
            // either side; and slack for the writer's buffers, the
            // allocator and the test harness.
            let rebuild = (4 << 20) + (4 << 20) / 64 * 24 + (4 << 20);
            let allowance = rebuild + 2 * 2 * (WINDOW + (4 << 20)) + (8 << 20);
            eprintln!(
                "{name}, {policy:?}: {size} bytes of data, {} containers; peak resident set \
                 grew {grown} bytes (allowed {allowance})",
                report.containers
            );
            assert!(
                grown <= allowance,
                "{name}, {policy:?}: the open's peak grew {grown} bytes, allowed {allowance}"
            );
            assert!(allowance < size / 4, "the trace is too small to tell");
        }
    }
}
