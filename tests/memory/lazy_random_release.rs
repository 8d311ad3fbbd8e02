//! Random access keeps mapped pages bounded too: expanding calls all over a
//! trace (as an IDE does, click by click) releases what it mapped once it
//! could have mapped a window's worth, instead of leaving every page it
//! touched resident. The test runs alone, so that `RssFile` is this
//! test's alone.

use std::path::Path;

use tracetree::read::{LazyNode, LazyTraceReader, WalkDetail};

use tracetree_testkit::memory::{self, rss_file};
use tracetree_testkit::synth;

/// Expands `picks` containers spread over the trace (each: its children,
/// and the first child decoded) from a cleared cache; returns the largest
/// growth of the mapped file pages seen, sampled after every expansion.
fn random_expansions(dir: &Path, window: Option<u64>, picks: usize) -> Option<u64> {
    let path = synth::synth_trace(dir, "random-release", 32 << 20, 7);
    // The containers, found by a reader of their own: dropping it unmaps
    // what its walk read.
    let mut containers: Vec<LazyNode> = Vec::new();
    {
        let finder = LazyTraceReader::open(&path).unwrap();
        for thread in finder.thread_ids() {
            finder
                .walk_thread(thread, WalkDetail::Headers, |walked| {
                    if walked.header.tracepoint_type.is_container() {
                        containers.push(walked.node);
                    }
                    Ok(true)
                })
                .unwrap();
        }
    }
    assert!(containers.len() > picks);
    // Lookups mapped from a scratch file at open, not built on the heap
    // when first used (building reads the footers through the data).
    let reader = LazyTraceReader::options()
        .resident_window(window)
        .defer_sidecar(None)
        .open(&path)
        .unwrap();
    assert!(reader.build_lookups().is_empty());
    let before = rss_file()?;
    let mut grown = 0;
    // A fixed stride through the containers: every part of both threads.
    let stride = containers.len() / picks;
    for (i, &node) in containers.iter().step_by(stride).enumerate() {
        if i % 64 == 0 {
            reader.clear_cache();
        }
        let children = reader.children(node).unwrap();
        if let Some(&first) = children.first() {
            reader.node(first).unwrap();
        }
        grown = grown.max(rss_file()?.saturating_sub(before));
    }
    Some(grown)
}

#[test]
fn random_expansions_keep_a_window_of_mapped_pages() {
    let _alone = memory::alone();
    const WINDOW: u64 = 1 << 20;
    let dir = tempfile::tempdir().unwrap();
    // First without a window (this also maps the program's own code the
    // expansions run, which counts as file pages too).
    let Some(unbounded) = random_expansions(dir.path(), None, 2000) else {
        eprintln!("no /proc/self/status: skipped");
        return;
    };
    let bounded = random_expansions(dir.path(), Some(WINDOW), 2000).unwrap();
    eprintln!("mapped pages grew {unbounded} bytes without a window, {bounded} with 1 MiB");
    // With the window every few blocks entered at random release every
    // page; what can stay is the blocks being read and the kernel's
    // mapping around them (up to a 2 MiB folio on either side).
    assert!(
        bounded <= 12 << 20,
        "random expansions left {bounded} bytes mapped with a 1 MiB window"
    );
    // Without it they map most of the 32 MB trace: the measurement sees
    // the pages (the test could fail).
    assert!(
        unbounded >= 2 * bounded && unbounded >= 16 << 20,
        "without a window only {unbounded} bytes were mapped (with: {bounded})"
    );
}

/// A node's parent under a resident window is found from copies (its cells,
/// its parent's header and the children before it, read by `pread`), so
/// parents asked for all over a trace map no page of the data or the
/// index, even with a window large enough to keep every page mapping
/// would touch.
#[test]
fn parents_found_at_random_map_nothing() {
    let _alone = memory::alone();
    let dir = tempfile::tempdir().unwrap();
    let path = synth::synth_trace(dir.path(), "random-parents", 32 << 20, 7);
    // Found by a reader of their own: dropping it unmaps what its walk read.
    let nodes = tracetree_testkit::lazy::all_nodes(&LazyTraceReader::open(&path).unwrap());
    let reader = LazyTraceReader::options()
        .resident_window(Some(1 << 30))
        .open(&path)
        .unwrap();
    assert!(reader.build_lookups().is_empty());
    let stride = nodes.len() / 2000;
    // The first few map the code they run.
    for &node in nodes.iter().step_by(stride).take(20) {
        reader.parent(node).unwrap();
    }
    let Some(before) = rss_file() else {
        eprintln!("no /proc/self/status: skipped");
        return;
    };
    for &node in nodes.iter().step_by(stride) {
        reader.parent(node).unwrap();
    }
    let grown = rss_file().unwrap().saturating_sub(before);
    eprintln!("2,000 parents grew the mapped pages by {grown} bytes");
    // Through the mappings they grow by over 30 MB (each lookup maps 64 KiB
    // of data around what it reads, and pages of the index); from copies
    // by some hundred KB (the rare parent found through the mappings).
    assert!(grown <= 4 << 20, "2,000 parents mapped {grown} bytes");
}
