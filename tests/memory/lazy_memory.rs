//! Memory stays bounded: walking every node of a generated trace through
//! `TraceTree` with a tiny cache keeps the cache within its budget and the
//! process's anonymous memory (heap) within the budget plus a small
//! allowance, however large the trace; the streaming walks (`walk_thread`,
//! and `walk_visit`, which print and dump run) do not grow it.
//!
//! The default test uses an 8 MB trace. The large one is ignored; run it with
//! a size (suffix KB, MB or GB) in release mode:
//!
//! ```text
//! TRACETREE_MEMORY_TEST_SIZE=1GB cargo test --release --test memory lazy_memory -- --ignored
//! ```
//!
//! The trace is generated into the test's temporary directory.

use std::path::{Path, PathBuf};

use tracetree::read::{LazyOptions, LazyTraceReader, SidecarPolicy, WalkDetail};
use tracetree::tree::{TraceTree, Visit, VisitDetail};

use tracetree_testkit::lazy::{sidecar_of, with_sidecar};
use tracetree_testkit::memory::{alone, proc_status as status, rss_anon, rss_file};
use tracetree_testkit::synth;

/// A generated trace of about `bytes`, made in `dir`.
fn trace(dir: &Path, bytes: u64) -> PathBuf {
    synth::synth_trace(dir, &format!("memory-{bytes}"), bytes, 5)
}

fn walk_bounded(bytes: u64) {
    let _alone = alone();
    const BUDGET: usize = 256 << 10;
    let dir = tempfile::tempdir().unwrap();
    let path = trace(dir.path(), bytes);
    let reader = LazyTraceReader::options()
        .cache_bytes(BUDGET)
        .open(&path)
        .unwrap();
    // The lookup tables (4 bytes per container) are built on first use;
    // they are accounted separately from the walk's memory.
    assert!(reader.build_lookups().is_empty());
    let before = rss_anon();
    let mut peak = before;
    let mut nodes = 0u64;
    let mut deepest = 0;
    for thread in reader.thread_ids() {
        let roots = reader.roots(thread).unwrap();
        reader
            .walk(&roots, |node, depth| {
                nodes += 1;
                deepest = deepest.max(depth);
                reader.visit(node, |tracepoint, _| tracepoint.event())?;
                if nodes.is_multiple_of(4096) {
                    let stats = reader.cache_stats();
                    assert!(stats.bytes <= BUDGET, "{stats:?}");
                    peak = peak.max(rss_anon());
                }
                Ok(())
            })
            .unwrap();
    }
    let stats = reader.cache_stats();
    assert!(stats.peak_bytes <= BUDGET, "{stats:?}");
    assert!(
        stats.evictions > 0,
        "the walk must have needed more than the budget"
    );
    assert!(stats.entries < BUDGET / 64, "{stats:?}");
    // The same count as a sequential walk.
    let mut walked = 0u64;
    for thread in reader.thread_ids() {
        reader
            .walk_thread(thread, WalkDetail::Headers, |_| {
                walked += 1;
                Ok(true)
            })
            .unwrap();
    }
    assert_eq!(walked, nodes);
    // A full-decode walk holds only the open containers.
    let before_full = rss_anon();
    let mut full = 0u64;
    for thread in reader.thread_ids() {
        reader
            .walk_thread(thread, WalkDetail::Full, |walked| {
                full += walked.tracepoint.is_some() as u64;
                Ok(true)
            })
            .unwrap();
    }
    assert_eq!(full, nodes);
    if let (Some(before), Some(after)) = (before_full, rss_anon()) {
        let grown = after.saturating_sub(before);
        eprintln!("full-decode walk: heap grew {grown} bytes");
        assert!(
            grown <= 8 << 20,
            "full-decode walk grew the heap by {grown} bytes"
        );
    }
    // What print and dump run: walk_visit streams each root, with child
    // counts; it caches nothing and holds only the open containers.
    let before_visit = rss_anon();
    let mut visited = 0u64;
    let mut visit_peak = before_visit;
    for thread in reader.thread_ids() {
        let roots = reader.roots(thread).unwrap();
        reader
            .walk_visit(&roots, None, VisitDetail::with_child_counts(), |step| {
                if let Visit::Node { .. } = step {
                    visited += 1;
                    if visited.is_multiple_of(4096) {
                        visit_peak = visit_peak.max(rss_anon());
                    }
                }
                Ok(())
            })
            .unwrap();
    }
    assert_eq!(visited, nodes);
    if let (Some(before), Some(peak)) = (before_visit, visit_peak) {
        let grown = peak.saturating_sub(before);
        eprintln!("walk_visit: heap grew {grown} bytes");
        assert!(
            grown <= 8 << 20,
            "walk_visit grew the heap by {grown} bytes"
        );
    }
    if let (Some(before), Some(peak)) = (before, peak) {
        // Budget, the walk's pages of children (O(depth)), allocator slack.
        let allowance = BUDGET as u64 + deepest as u64 * (128 << 10) + (8 << 20);
        let grown = peak.saturating_sub(before);
        eprintln!(
            "{bytes} bytes, {nodes} nodes, depth {deepest}: heap grew {grown} bytes (allowed {allowance}); lookups {} bytes",
            reader.lookup_heap_bytes()
        );
        assert!(
            grown <= allowance,
            "heap grew {grown} bytes, allowed {allowance}"
        );
    }
}

/// Full traversals with a small resident window: the mapped pages they
/// leave resident (data, index or sidecar) stay within a window per walker
/// plus the blocks being read, however large the trace; the heap within
/// the cache budget plus a small allowance.
fn traversal_resident(bytes: u64, window: u64) {
    let _alone = alone();
    const BUDGET: usize = 256 << 10;
    const BLOCK: u64 = 1 << 20;
    let dir = tempfile::tempdir().unwrap();
    let path = trace(dir.path(), bytes);
    // Opened twice: first without the sidecar (heap tables over the mapped
    // index), then with it (tables mapped from the sidecar, written by the
    // first open with it if missing).
    for sidecar in [SidecarPolicy::Off, SidecarPolicy::ReadWrite] {
        let reader = with_sidecar(&path)
            .cache_bytes(BUDGET)
            .sidecar(sidecar)
            .resident_window(Some(window))
            .open(&path)
            .unwrap();
        assert!(reader.build_lookups().is_empty());
        let (Some(file_before), Some(anon_before)) = (rss_file(), rss_anon()) else {
            return;
        };
        let mut file_peak = file_before;
        let mut anon_peak = anon_before;
        let mut sample = || {
            file_peak = file_peak.max(rss_file().unwrap_or(0));
            anon_peak = anon_peak.max(rss_anon().unwrap_or(0));
        };
        // Threads one after the other, then all at once (2 walkers), as
        // print and info do.
        let mut nodes = 0u64;
        for thread in reader.thread_ids() {
            let roots = reader.roots(thread).unwrap();
            reader
                .walk_visit(&roots, None, VisitDetail::default(), |_| {
                    nodes += 1;
                    if nodes.is_multiple_of(1 << 14) {
                        sample();
                    }
                    Ok(())
                })
                .unwrap();
        }
        let sequential_peak = file_peak;
        let counted = std::sync::atomic::AtomicU64::new(0);
        let per_thread = reader
            .walk_threads(
                WalkDetail::Headers,
                |_| 0u64,
                |n, _| {
                    *n += 1;
                    if n.is_multiple_of(1 << 14) {
                        let file = rss_file().unwrap_or(0);
                        counted.fetch_max(file, std::sync::atomic::Ordering::Relaxed);
                    }
                    Ok(true)
                },
            )
            .unwrap();
        assert_eq!(per_thread.iter().sum::<u64>(), nodes);
        file_peak = file_peak.max(counted.into_inner());
        let walkers = reader.thread_ids().len() as u64;
        let file_grown = file_peak.saturating_sub(file_before);
        let anon_grown = anon_peak.saturating_sub(anon_before);
        // Per walker: its window, the block it is in and the one it
        // released from, and the 64 KiB fault-around edges of the other
        // threads' blocks around each of its blocks (released with them).
        // Shared: the lookups' pages touched since the last release by any
        // walker (their share of a window: the index or sidecar is read
        // about in step with the data); slack for footers read ahead.
        const FAULT_AROUND: u64 = 64 << 10;
        let lookups = match sidecar {
            SidecarPolicy::Off => LazyTraceReader::index_path(&path),
            _ => sidecar_of(&path),
        };
        let lookups = std::fs::metadata(lookups).unwrap().len();
        let data = std::fs::metadata(&path).unwrap().len();
        let edges = window.div_ceil(BLOCK) * 2 * FAULT_AROUND;
        let allowed = walkers * (window + 2 * BLOCK + edges)
            + (window as f64 * lookups as f64 / data as f64) as u64
            + (4 << 20);
        eprintln!(
            "{bytes} bytes, sidecar {sidecar:?}: {nodes} nodes; mapped pages grew {file_grown} bytes \
             (allowed {allowed}; threads in turn {}), heap {anon_grown} bytes; lookup heap {} bytes; VmHWM {} MB",
            sequential_peak.saturating_sub(file_before),
            reader.lookup_heap_bytes(),
            status("VmHWM:").unwrap_or(0) >> 20,
        );
        assert!(
            file_grown <= allowed,
            "mapped pages grew {file_grown} bytes, allowed {allowed}"
        );
        assert!(anon_grown <= 8 << 20, "heap grew {anon_grown} bytes");
        if sidecar == SidecarPolicy::ReadWrite {
            assert!(reader.report().sidecar_used() || reader.lookup_heap_bytes() < (1 << 20));
        }
    }
}

#[test]
fn walking_everything_with_a_tiny_cache_stays_bounded() {
    walk_bounded(8 << 20);
}

#[test]
fn full_traversals_leave_a_window_of_mapped_pages() {
    // 32 MB through 256 KiB windows: without releasing, the mapped trace
    // alone would be four times the allowance.
    traversal_resident(32 << 20, 256 << 10);
}

/// At 1 GB this once failed for two walkers in parallel (+60–96 MB): the
/// walks before them had each left their last window resident (a walk now
/// releases it when it ends), and on the index path `build_lookups` left
/// the data pages its footer checks touched (now released). Later it
/// failed again (+51–81 MB) where the page cache held the trace in large
/// folios, which map the other thread's blocks with a walker's own: the
/// window is now counted in bytes of the file, not of the thread's stream.
#[test]
#[ignore = "large: set TRACETREE_MEMORY_TEST_SIZE (e.g. 1GB) and run with --release --ignored"]
fn full_traversals_of_a_large_trace_leave_a_window_of_mapped_pages() {
    let size = std::env::var("TRACETREE_MEMORY_TEST_SIZE").unwrap_or_else(|_| "256MB".into());
    traversal_resident(
        tracetree::generate::parse_size(&size)
            .expect("TRACETREE_MEMORY_TEST_SIZE: a size like 1GB"),
        LazyOptions::DEFAULT_RESIDENT_WINDOW,
    );
}

#[test]
#[ignore = "large: set TRACETREE_MEMORY_TEST_SIZE (e.g. 1GB) and run with --release --ignored"]
fn walking_a_large_trace_stays_bounded() {
    let size = std::env::var("TRACETREE_MEMORY_TEST_SIZE").unwrap_or_else(|_| "256MB".into());
    walk_bounded(
        tracetree::generate::parse_size(&size)
            .expect("TRACETREE_MEMORY_TEST_SIZE: a size like 1GB"),
    );
}
