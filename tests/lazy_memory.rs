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
//! TRACETREE_MEMORY_TEST_SIZE=1GB cargo test --release --test lazy_memory -- --ignored
//! ```
//!
//! The trace is generated once into `target/test-traces/`.

use std::path::PathBuf;

use tracetree::read::synth::{self, SynthOptions};
use tracetree::read::{LazyTraceReader, WalkDetail};
use tracetree::tree::{TraceTree, Visit, WalkStep, walk};

/// The process's resident anonymous memory in bytes (Linux), or `None`.
fn rss_anon() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("RssAnon:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// A generated trace of about `bytes`, made once under `target/test-traces`.
fn trace(bytes: u64) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/test-traces");
    let options = SynthOptions {
        threads: 2,
        bytes,
        block_bytes: 1 << 20,
        seed: 5,
        ..SynthOptions::default()
    };
    synth::cached(&dir, &format!("memory-{bytes}"), &options).unwrap()
}

fn walk_bounded(bytes: u64) {
    const BUDGET: usize = 256 << 10;
    let path = trace(bytes);
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
        walk(&reader, &roots, None, |step| {
            if let WalkStep::Node { node, depth } = step {
                nodes += 1;
                deepest = deepest.max(depth);
                reader.visit(node, |tracepoint, _| tracepoint.event())?;
                if nodes.is_multiple_of(4096) {
                    let stats = reader.cache_stats();
                    assert!(stats.bytes <= BUDGET, "{stats:?}");
                    peak = peak.max(rss_anon());
                }
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
            .walk_visit(&roots, None, true, |step| {
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

#[test]
fn walking_everything_with_a_tiny_cache_stays_bounded() {
    walk_bounded(8 << 20);
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
