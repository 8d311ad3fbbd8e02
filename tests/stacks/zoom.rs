//! A flame graph zoomed into one frame (`FlameOptions::path`) walks only
//! the calls on that path, and its frames are those the whole scope's walk
//! gives below the frame, field for field, at the same threshold: on the
//! fixture traces, generated ones (recursion whose path repeats a method,
//! one wide call) and a sample tree; under `all`, a thread and a node.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use tracetree::export::stacks::flame::{FlameFrame, FlameGraph, FlameOptions};
use tracetree::generate::Shape;
use tracetree::read::LazyTraceReader;

use tracetree_testkit::files::generated;

use super::traces;

/// The frames of `whole` in the subtree of its frame `at`, rooted there.
fn below(whole: &FlameGraph, at: usize) -> Vec<FlameFrame> {
    let top = &whole.frames[at];
    let end = whole.frames[at + 1..]
        .iter()
        .position(|f| f.depth <= top.depth)
        .map_or(whole.frames.len(), |n| at + 1 + n);
    whole.frames[at..end]
        .iter()
        .map(|f| FlameFrame {
            depth: f.depth - top.depth,
            parent: f
                .parent
                .filter(|_| f.depth > top.depth)
                .map(|p| p - at as u32),
            ..f.clone()
        })
        .collect()
}

/// The path of names below the root to the frame `at`.
fn path_of(graph: &FlameGraph, at: usize) -> Vec<String> {
    let mut path = Vec::new();
    let mut frame = &graph.frames[at];
    while let Some(parent) = frame.parent {
        path.push(frame.name.to_string());
        frame = &graph.frames[parent as usize];
    }
    path.reverse();
    path
}

/// Zooms into frames of the scope `base` names (at most `most`, spread
/// over the graph), at fractions of the whole; each zoomed graph equals
/// the whole graph below its frame. Returns how many paths repeated a
/// name (recursion).
fn zooms_equal_the_whole(
    reader: &LazyTraceReader,
    base: &FlameOptions,
    samples: bool,
    most: usize,
) -> usize {
    let mut recursive = 0;
    for fraction in [0.0, 0.002] {
        let mut whole_options = base.clone();
        whole_options.min_fraction = fraction;
        whole_options.max_frames = FlameOptions::MAX_FRAMES;
        let whole = FlameGraph::build(reader, &whole_options, &|_| {}).unwrap();
        assert!(!whole.truncated);
        let step = (whole.frames.len() / most).max(1);
        for at in (1..whole.frames.len()).step_by(step) {
            let frame = &whole.frames[at];
            if frame.total == 0 {
                continue;
            }
            let mut options = whole_options.clone();
            let path = path_of(&whole, at);
            options.path = path.clone();
            // The whole graph's threshold, as a fraction of the frame's.
            options.min_fraction = (whole.threshold as f64 - 0.5) / frame.total as f64;
            let zoomed = FlameGraph::build(reader, &options, &|_| {}).unwrap();
            assert_eq!(zoomed.frames, below(&whole, at), "{path:?}");
            assert_eq!(zoomed.threshold, whole.threshold);
            assert!(!zoomed.stopped && !zoomed.truncated);
            if !samples {
                // Only the calls on the path were walked.
                assert_eq!(zoomed.tracepoints, frame.total, "{path:?}");
            }
            if (1..path.len()).any(|i| path[..i].contains(&path[i])) {
                recursive += 1;
            }
        }
    }
    recursive
}

fn every_thread() -> FlameOptions {
    FlameOptions::default()
}

#[test]
fn zoomed_widths_equal_the_whole_walk_s_below_the_path() {
    let dir = tempfile::tempdir().unwrap();
    for trace in traces(dir.path()) {
        let samples = trace.file_name().is_some_and(|n| n == "samples.trace");
        let reader = LazyTraceReader::open(&trace).unwrap();
        // Every thread (under `all` when there are several), then a few
        // alone and their first roots.
        zooms_equal_the_whole(&reader, &every_thread(), samples, 16);
        for thread in reader.thread_ids().into_iter().take(3) {
            let mut options = every_thread();
            options.threads = Some(vec![thread]);
            zooms_equal_the_whole(&reader, &options, samples, 6);
            // A node's scope: the thread's first root.
            let mut options = every_thread();
            options.node = reader.roots_range(thread, 0, 1).unwrap().first().copied();
            zooms_equal_the_whole(&reader, &options, samples, 6);
        }
    }
}

#[test]
fn zooms_into_recursion_wide_calls_and_many_calls_equal_the_whole() {
    let dir = tempfile::tempdir().unwrap();
    for (shape, size) in [
        (Shape::Deep, 6 << 20),
        (Shape::Wide, 3 << 20),
        (Shape::Mixed, 12 << 20),
    ] {
        let shaped = dir.path().join(shape.to_string());
        std::fs::create_dir_all(&shaped).unwrap();
        let trace = generated(&shaped, shape, 1, size, Some(64 << 10));
        let reader = LazyTraceReader::open(&trace).unwrap();
        let recursive = zooms_equal_the_whole(&reader, &every_thread(), false, 24);
        if shape == Shape::Deep {
            assert!(recursive > 0, "no path repeated a method");
        }
    }
}

/// A path nothing is on gives its frame alone, weighing nothing; a stop
/// ends the descent; a sandwich takes no path.
#[test]
fn a_path_off_the_trace_is_empty_a_stop_ends_it_a_sandwich_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let trace = generated(dir.path(), Shape::Mixed, 2, 256 << 10, None);
    let reader = LazyTraceReader::open(&trace).unwrap();
    let whole = FlameGraph::build(&reader, &every_thread(), &|_| {}).unwrap();
    let deepest = (0..whole.frames.len())
        .max_by_key(|&at| whole.frames[at].depth)
        .unwrap();
    let deep = path_of(&whole, deepest);
    let mut options = every_thread();
    options.path = vec!["no such thread".into()];
    let got = FlameGraph::build(&reader, &options, &|_| {}).unwrap();
    assert_eq!(got.frames.len(), 1);
    assert_eq!((&*got.frames[0].name, got.total()), ("no such thread", 0));
    assert_eq!(got.tracepoints, 0);
    let mut off = deep.clone();
    off.push("No.such".into());
    options.path = off;
    let got = FlameGraph::build(&reader, &options, &|_| {}).unwrap();
    assert_eq!((&*got.frames[0].name, got.total()), ("No.such", 0));
    options.path = deep.clone();
    options.stop = Some(Arc::new(AtomicBool::new(true)));
    let got = FlameGraph::build(&reader, &options, &|_| {}).unwrap();
    assert!(got.stopped);
    let mut options = every_thread();
    options.path = deep;
    assert!(FlameGraph::sandwich(&reader, "loop", &options, &|_| {}).is_err());
    assert!(reader.thread_ids().len() > 1);
    check_dir_untouched(dir.path());
}

/// The test wrote only the trace (and its index) into its directory.
fn check_dir_untouched(dir: &Path) {
    let names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().all(|n| n.starts_with("mixed.trace")),
        "{names:?}"
    );
}
