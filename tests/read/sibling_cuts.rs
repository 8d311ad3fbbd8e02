//! Runs of siblings cut through the container table (what the parallel
//! printers walk instead of ranges of counted children) cover a call's
//! children exactly: walked one after another they give the walk of all
//! its children, on generated traces of every shape, with blocks small
//! enough that many children's headers end at a block's edge, and on
//! traces a crashed recorder left with calls never finished.

use tracetree::generate::Shape;
use tracetree::generate::raw::{self, Crash, SynthOptions};
use tracetree::read::{LazyNode, LazyTraceReader, Visit};
use tracetree::tree::{TraceTree, VisitDetail};
use tracetree_testkit::files;
use tracetree_testkit::lazy::open_in_memory;

/// Depth, event id and whether a footer came, of each node `walk` visits.
fn steps(
    walk: impl FnOnce(&mut dyn FnMut(Visit<'_, LazyNode>) -> tracetree::Result<()>),
) -> Vec<(usize, i32, bool)> {
    let mut steps = Vec::new();
    walk(&mut |step| {
        if let Visit::Node {
            depth,
            tracepoint,
            footer,
            ..
        } = step
        {
            steps.push((depth, tracepoint.event().get(), footer.is_some()));
        }
        Ok(())
    });
    steps
}

/// Checks the runs, cut every `bytes`, of each call of `reader` down to
/// `levels` below the roots; returns how many were cut into more than one
/// run.
fn check_calls(reader: &LazyTraceReader, bytes: u64, levels: usize, name: &str) -> usize {
    let mut cut = 0;
    let mut level: Vec<LazyNode> = Vec::new();
    for thread in reader.thread_ids() {
        level.extend(TraceTree::roots(reader, thread).unwrap());
    }
    for _ in 0..=levels {
        let mut below = Vec::new();
        for &node in &level {
            if reader.child_count(node).unwrap() <= 64 {
                below.extend(reader.children(node).unwrap());
            }
            let Some(cuts) = reader.sibling_cuts(node, bytes).unwrap() else {
                continue;
            };
            let whole = steps(|f| {
                reader
                    .walk_visit_children(node, 0, usize::MAX, None, VisitDetail::default(), f)
                    .unwrap()
            });
            let mut runs = Vec::new();
            let mut first = None;
            for next in cuts.iter().copied().map(Some).chain([None]) {
                runs.extend(steps(|f| {
                    reader
                        .walk_visit_siblings(node, first, next, None, VisitDetail::default(), f)
                        .unwrap()
                }));
                first = next;
            }
            assert!(!whole.is_empty(), "{name}: a cut call with no children");
            assert_eq!(runs, whole, "{name}: runs of {node:?}");
            cut += usize::from(!cuts.is_empty());
        }
        level = below;
    }
    cut
}

#[test]
fn runs_cover_the_children_of_generated_roots() {
    let dir = tempfile::tempdir().unwrap();
    for shape in [Shape::Mixed, Shape::Wide, Shape::Threads, Shape::Deep] {
        let path = files::generated(dir.path(), shape, 2, 2 << 20, Some(4096));
        let reader = LazyTraceReader::open(&path).unwrap();
        let cut = check_calls(&reader, 16 << 10, 0, &shape.to_string());
        // A wide root's children are leaves, with no container to cut
        // after; a deep one's few children are too large to cut around.
        if matches!(shape, Shape::Mixed | Shape::Threads) {
            assert!(cut > 0, "{shape}: no root was cut");
        }
    }
}

#[test]
fn runs_cover_the_children_of_synthetic_calls_crashed_or_not() {
    for (threads, block_bytes) in [(1, 4096), (3, 700)] {
        for crash in [
            None,
            Some(Crash {
                half_written_block: false,
            }),
        ] {
            let options = SynthOptions {
                threads,
                bytes: 600 << 10,
                block_bytes,
                seed: 7 + threads as u64,
                block_cell_last: false,
                crash,
            };
            let (data, index) = raw::generate(&options);
            let reader = open_in_memory(&data, Some(&index), 64 << 20).unwrap();
            let cut = check_calls(&reader, 2 << 10, 4, &format!("{options:?}"));
            assert!(cut > 0, "{options:?}: no call was cut");
        }
    }
}

#[test]
fn small_calls_and_leaves_are_not_cut() {
    let dir = tempfile::tempdir().unwrap();
    let path = files::generated(dir.path(), Shape::Mixed, 1, 256 << 10, None);
    let reader = LazyTraceReader::open(&path).unwrap();
    let root = TraceTree::roots(&reader, reader.thread_ids()[0]).unwrap()[0];
    // Less than four runs' worth of content.
    assert_eq!(reader.sibling_cuts(root, 1 << 20).unwrap(), None);
    let leaf = reader
        .children_range(root, 0, 64)
        .unwrap()
        .into_iter()
        .find(|&child| reader.child_count(child).unwrap() == 0)
        .unwrap();
    assert_eq!(reader.sibling_cuts(leaf, 16).unwrap(), None);
}

/// A call of more than 8 MiB gets its child index from runs of siblings
/// counted on several threads; every page of it, read through that index,
/// is the eager tree's (one trace with blocks of 4 KiB: headers at blocks'
/// edges), and its children are found again by event id, parent and place. A crashed recorder's calls are not cut (its repaired cells are
/// not trusted), so they are scanned whole.
#[test]
fn child_indexes_counted_in_runs_page_like_the_eager_tree() {
    let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let generated = files::generated(one.path(), Shape::Mixed, 1, 24 << 20, Some(4096));
    let two_threads = files::generated(two.path(), Shape::Mixed, 2, 40 << 20, None);
    for path in [generated, two_threads] {
        let reader = LazyTraceReader::open(&path).unwrap();
        let eager = tracetree::read::EagerTrace::open(&path).unwrap();
        let what = path.display().to_string();
        let (mut lazy_roots, mut eager_roots) = (Vec::new(), Vec::new());
        for thread in reader.thread_ids() {
            lazy_roots.extend(TraceTree::roots(&reader, thread).unwrap());
            eager_roots.extend(TraceTree::roots(&eager, thread).unwrap());
        }
        let mut large = 0;
        for (&node, &same) in lazy_roots.iter().zip(&eager_roots) {
            let cuts = reader.sibling_cuts(node, 1 << 20).unwrap();
            large += usize::from(cuts.is_some_and(|cuts| cuts.len() >= 8));
            let count = reader.child_count(node).unwrap();
            assert_eq!(count, eager.child_count(same).unwrap(), "{what}");
            let events = |tree: &dyn Fn(usize, usize) -> Vec<i32>, from| tree(from, 3);
            let lazy = |from, n| {
                reader
                    .children_range(node, from, n)
                    .unwrap()
                    .into_iter()
                    .map(|child| reader.node(child).unwrap().tracepoint().event().get())
                    .collect::<Vec<_>>()
            };
            let eager_events = |from, n| {
                TraceTree::children_range(&eager, same, from, n)
                    .unwrap()
                    .into_iter()
                    .map(|child| eager.node(child).tracepoint().event().get())
                    .collect::<Vec<_>>()
            };
            for from in (0..count)
                .step_by(1021)
                .chain([count.saturating_sub(1), count])
            {
                assert_eq!(
                    events(&lazy, from),
                    events(&eager_events, from),
                    "{what}: children from {from}"
                );
                // Found again through the same index: by event id (its
                // checkpoints' events), as a parent's child and by place.
                let Some(child) = reader.children_range(node, from, 1).unwrap().pop() else {
                    continue;
                };
                let event = reader.node(child).unwrap().tracepoint().event();
                assert_eq!(reader.node_by_event(event).unwrap(), Some(child), "{what}");
                assert_eq!(reader.parent(child).unwrap(), Some(node), "{what}");
                assert_eq!(reader.position(child).unwrap(), from, "{what}");
            }
        }
        assert!(large > 0, "{what}: no call large enough to count in runs");
    }
}
