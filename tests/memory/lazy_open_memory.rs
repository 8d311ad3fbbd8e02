//! The first open of a trace without a sidecar reads every cell of the
//! index (the table build, its footer checks, the sidecar's sections) and a
//! page of nearly every block (the footer checks, the sidecar's framing
//! checksum). Those passes release the pages behind them every resident
//! window, and the sidecar's arrays are written straight from the cells,
//! so the open's peak resident set grows by a few windows, not by the size
//! of the files or the number of containers.
//!
//! The peak is the kernel's high-water mark (`VmHWM`), reset before each
//! open through `/proc/self/clear_refs`; without it (not Linux) the test
//! says so and checks nothing. The test runs alone so that no other test's
//! memory shares the process's mark.

use tracetree::read::{SidecarOutcome, SidecarPolicy, index_path};

use tracetree_testkit::{memory, synth};

#[test]
fn a_first_open_keeps_a_window_of_the_files_resident() {
    let _alone = memory::alone();
    const WINDOW: u64 = 1 << 20;
    let dir = tempfile::tempdir().unwrap();
    let path = synth::synth_trace(dir.path(), "open-memory-256m", 256 << 20, 11);
    let files = std::fs::metadata(&path).unwrap().len()
        + std::fs::metadata(index_path(&path)).unwrap().len();
    // The sidecar written next to the trace, then a scratch one (read-only
    // policy): both encode the same sections.
    for policy in [SidecarPolicy::ReadWrite, SidecarPolicy::ReadOnly] {
        let Some((reader, grown)) = memory::open_peak(&path, policy, WINDOW) else {
            return;
        };
        let sidecar = reader.report().sidecar.as_ref().unwrap();
        let expected = match policy {
            SidecarPolicy::ReadWrite => SidecarOutcome::Written,
            _ => SidecarOutcome::Skipped,
        };
        assert_eq!(sidecar.outcome, expected);
        // Per thread (two, checked in parallel), a window for its pass over
        // the data and one for its pass over the index, each widened by a
        // 2 MiB page-cache folio on either side, and slack for the writer's
        // buffers, the allocator and the test harness. No tables: the
        // sidecar's arrays are written straight from the index's cells
        // (that they are is the unit test
        // `streamed_arrays_equal_those_of_built_tables`); measured here
        // 8–17 MB, and 40–79 MB before the passes released behind them.
        let containers = reader.report().containers as u64;
        let allowance = 2 * 2 * (WINDOW + (4 << 20)) + (8 << 20);
        eprintln!(
            "{policy:?}: {files} bytes of trace and index, {containers} containers; \
             peak resident set grew {grown} bytes (allowed {allowance})"
        );
        assert!(
            grown <= allowance,
            "{policy:?}: the open's peak grew {grown} bytes, allowed {allowance}"
        );
        assert!(allowance < files / 2, "the trace is too small to tell");
    }
}
