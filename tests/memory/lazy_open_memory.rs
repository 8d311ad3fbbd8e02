//! The first open of a trace without a sidecar (and, below, a table built
//! on first use) reads every cell of the
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

use tracetree::LazyTraceReader;
use tracetree::read::{SidecarOutcome, SidecarPolicy};

use tracetree::generate::Shape;
use tracetree_testkit::{files, memory, synth};

#[test]
fn a_first_open_keeps_a_window_of_the_files_resident() {
    let _alone = memory::alone();
    const WINDOW: u64 = 1 << 20;
    let dir = tempfile::tempdir().unwrap();
    let path = synth::synth_trace(dir.path(), "open-memory-256m", 256 << 20, 11);
    let files = std::fs::metadata(&path).unwrap().len()
        + std::fs::metadata(LazyTraceReader::index_path(&path))
            .unwrap()
            .len();
    // The sidecar written next to the trace, then a scratch one (read-only
    // policy): both encode the same sections.
    for policy in [SidecarPolicy::ReadWrite, SidecarPolicy::ReadOnly] {
        let Some((reader, grown)) = memory::open_peak(&path, policy, WINDOW) else {
            return;
        };
        let sidecar = reader.report().sidecar.clone().unwrap();
        let expected = match policy {
            SidecarPolicy::ReadWrite => SidecarOutcome::Written,
            _ => SidecarOutcome::Skipped,
        };
        assert_eq!(sidecar, expected);
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

/// A thread's table built on first use (no sidecar) reads its cells
/// twice, once to put them in start order and once, in pieces that two
/// threads take in turn, to check their footers, reading a page of nearly
/// every block of the thread. Each pass releases behind it, and each piece
/// releases what it left behind when done, so building every table grows
/// the peak by a few windows and the tables themselves, not by the size of
/// the index or the data.
#[test]
fn tables_built_on_first_use_keep_a_few_windows_resident() {
    let _alone = memory::alone();
    const WINDOW: u64 = 1 << 20;
    let dir = tempfile::tempdir().unwrap();
    let path = synth::synth_trace(dir.path(), "build-memory-256m", 256 << 20, 11);
    let index = std::fs::metadata(LazyTraceReader::index_path(&path))
        .unwrap()
        .len();
    let reader = tracetree::read::LazyTraceReader::options()
        .sidecar(SidecarPolicy::Off)
        .resident_window(Some(WINDOW))
        .open(&path)
        .unwrap();
    let (problems, grown) = memory::peak_growth(|| reader.build_lookups());
    assert!(problems.is_empty());
    let Some(grown) = grown else {
        return;
    };
    // Per thread (two, built at once): the ordering pass over the index and
    // two footer passes over the index and the data, five windows, each
    // widened by a 2 MiB page-cache folio on either side; the tables on the
    // heap (4 bytes a container, and as much while they are built), and
    // slack for the allocator and the test harness.
    let containers = reader.report().containers as u64;
    let allowance = 2 * 5 * (WINDOW + (4 << 20)) + 8 * containers + (8 << 20);
    eprintln!(
        "{index} bytes of index, {containers} containers; building every table grew \
         the peak by {grown} bytes (allowed {allowance})"
    );
    assert!(
        grown <= allowance,
        "building the tables grew the peak by {grown} bytes, allowed {allowance}"
    );
}

/// A large call's children are counted in runs on several threads, each
/// worker scanning forward and releasing behind it; the cuts between runs
/// are read apart from those scans. Counting the children of the largest
/// root of a 320 MB trace grows the peak by a few windows, not by the
/// call's size.
#[test]
fn children_counted_in_runs_keep_a_few_windows_resident() {
    let _alone = memory::alone();
    const WINDOW: u64 = 1 << 20;
    let dir = tempfile::tempdir().unwrap();
    let path = files::generated(dir.path(), Shape::Mixed, 1, 320 << 20, None);
    let reader = tracetree::read::LazyTraceReader::options()
        .sidecar(SidecarPolicy::Off)
        .resident_window(Some(WINDOW))
        .open(&path)
        .unwrap();
    assert!(reader.build_lookups().is_empty());
    let mut roots = Vec::new();
    for thread in reader.thread_ids() {
        roots.extend(reader.roots(thread).unwrap());
    }
    // Its content in MiB, about: the runs of 1 MiB it is cut into.
    let mib = |root| {
        reader
            .sibling_cuts(root, 1 << 20)
            .unwrap()
            .map_or(0, |cuts| cuts.len())
    };
    let largest = roots.into_iter().max_by_key(|&root| mib(root)).unwrap();
    assert!(mib(largest) > 64, "no root large enough");
    reader.clear_cache();
    let (count, grown) = memory::peak_growth(|| reader.child_count(largest).unwrap());
    let Some(grown) = grown else {
        return;
    };
    // Per worker (as many as cores, up to 8 here): its scan's window and
    // the blocks at its ends, widened by a 2 MiB folio on either side; a
    // window of cuts read at random; slack for the allocator, the samples
    // and the test harness.
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(8)) as u64;
    let allowance = (workers + 1) * (WINDOW + (6 << 20)) + (8 << 20);
    eprintln!(
        "{} MiB of content, {count} children: counting them grew the peak by {grown} \
         bytes (allowed {allowance})",
        mib(largest)
    );
    assert!(
        grown <= allowance,
        "counting grew the peak by {grown} bytes, allowed {allowance}"
    );
}
