//! A crashed recorder's trace opened with its own index, which has no
//! footer and no cell for the calls that never finished: the open repairs
//! each thread by scanning its top level (an unfinished root call's
//! content is nearly all of it), skipping every container with a cell by
//! reading the cells alongside, with no table. That scan releases the
//! pages behind it every resident window, as walks do, and the cells and
//! the scan's finds then stream into the sidecar, so the open's peak
//! resident set grows by a few windows, not by the size of the data (it
//! mapped all of it before: 975 MB of max RSS for an 850 MB trace) nor by
//! the number of containers (it built every thread's table on the heap).
//!
//! The peak is the kernel's high-water mark (`VmHWM`), reset before each
//! open through `/proc/self/clear_refs`; without it (not Linux) the test
//! says so and checks nothing. The test runs alone so that no other
//! test's memory shares the process's mark.

use tracetree::LazyTraceReader;
use tracetree::generate::raw::Crash;
use tracetree::read::{IndexStatus, SidecarPolicy};

use tracetree_testkit::{memory, synth};

#[test]
fn repairing_a_crashed_recorders_index_keeps_a_window_of_the_data_resident() {
    let _alone = memory::alone();
    const WINDOW: u64 = 1 << 20;
    let dir = tempfile::tempdir().unwrap();
    let crash = Crash {
        half_written_block: false,
    };
    let path = synth::synth_trace_ending(dir.path(), "repair-256m", 256 << 20, 17, Some(crash));
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(LazyTraceReader::index_path(&path).exists());
    for policy in [SidecarPolicy::ReadWrite, SidecarPolicy::ReadOnly] {
        let Some((reader, grown)) = memory::open_peak(&path, policy, WINDOW) else {
            return;
        };
        let report = reader.report();
        assert_eq!(
            report.status,
            IndexStatus::Used { complete: false },
            "the repair is what this measures"
        );
        assert!(report.data.missing_eof, "{:?}", report.data);
        assert!(report.data.unfinished_containers >= 2, "{:?}", report.data);
        assert!(report.repaired_containers >= 2, "{report:?}");
        // What a first open with an index keeps (`lazy_open_memory`): per
        // thread a window over the data and one over the index, each
        // widened by a 2 MiB page-cache folio on either side; and slack
        // for the writer's buffers, the allocator and the test harness.
        // The scan's cursor keeps 32 bytes per 256 containers.
        let containers = report.containers as u64;
        let allowance = 2 * 2 * (WINDOW + (4 << 20)) + containers / 8 + (8 << 20);
        eprintln!(
            "{policy:?}: {size} bytes of data, {containers} containers; peak resident set \
             grew {grown} bytes (allowed {allowance})"
        );
        assert!(
            grown <= allowance,
            "{policy:?}: the open's peak grew {grown} bytes, allowed {allowance}"
        );
        assert!(allowance < size / 4, "the trace is too small to tell");
    }
}
