//! Flame graphs and sandwiches checked against counts made here over the
//! rows of `dump` (written from the eager loader, another reader than the
//! one the flame graph walks); pruning and bounds; bad inputs.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use serde_json::Value as Json;

use tracetree::common::ThreadId;
use tracetree::export::stacks::flame::{FlameGraph, FlameOptions};
use tracetree::generate::Shape;
use tracetree::read::{EagerTrace, LazyNode, LazyTraceReader, WalkDetail};
use tracetree::write_jsonl;

use tracetree_testkit::files::generated;

use super::{damaged_readers, sample_tree, traces};

/// One row of `dump --format jsonl`.
struct Row {
    thread: i32,
    depth: usize,
    event: i32,
    /// A container's frame name.
    frame: Option<String>,
    samples: Option<u64>,
}

/// The dump's rows of `trace`, read by the eager loader.
fn dump_rows(trace: &Path) -> Vec<Row> {
    let eager = EagerTrace::open(trace).unwrap();
    let mut text = Vec::new();
    write_jsonl(&eager, None, &mut text).unwrap();
    String::from_utf8(text)
        .unwrap()
        .lines()
        .map(|line| {
            let row: Json = serde_json::from_str(line).unwrap();
            let kind = row["kind"].as_str().unwrap();
            let frame = match kind {
                "method_call" => Some(row["method"].as_str().unwrap().to_string()),
                "loop" | "loop_iteration" => Some(kind.to_string()),
                _ => None,
            };
            Row {
                thread: row["thread"].as_i64().unwrap() as i32,
                depth: row["depth"].as_u64().unwrap() as usize,
                event: row["event_id"].as_i64().unwrap() as i32,
                frame,
                samples: row["samples"].as_u64(),
            }
        })
        .collect()
}

/// Paths (frame names, outermost first) → (total, self).
type Widths = BTreeMap<Vec<String>, (u64, u64)>;

/// What the rows say: a flame graph's widths, and the sandwich of one
/// frame's callers and callees.
#[derive(Default)]
struct Counted {
    flame: Widths,
    callers: Widths,
    callees: Widths,
}

struct Open {
    name: String,
    samples: Option<u64>,
    own: u64,
    children: u64,
}

/// Counts the flame graph of `rows` (one scope: its first row's depth is
/// the top) below the path `root`, and the sandwich of `method` with
/// callers ending at `outer`.
fn count(rows: &[Row], root: &[String], method: &str, outer: Option<&str>, into: &mut Counted) {
    let mut stack: Vec<Open> = Vec::new();
    let mut top_self = 0u64;
    let base = rows.first().map_or(0, |r| r.depth);
    let close = |stack: &mut Vec<Open>, into: &mut Counted| {
        let frame = stack.pop().unwrap();
        let mut total = frame.own + frame.children;
        if let Some(samples) = frame.samples {
            total = total.max(samples);
        }
        let own = total - frame.children;
        let mut path = root.to_vec();
        path.extend(stack.iter().map(|f| f.name.clone()));
        path.push(frame.name.clone());
        let entry = into.flame.entry(path).or_default();
        entry.0 += total;
        entry.1 += own;
        if let Some(parent) = stack.last_mut() {
            parent.children += total;
        }
        // The sandwich: the outermost open call of `method`, if any.
        let names: Vec<&str> = stack
            .iter()
            .map(|f| f.name.as_str())
            .chain([frame.name.as_str()])
            .collect();
        if let Some(at) = names.iter().position(|n| *n == method) {
            let entry = into
                .callees
                .entry(names[at..].iter().map(|s| s.to_string()).collect())
                .or_default();
            entry.0 += total;
            entry.1 += own;
            if at == names.len() - 1 {
                let inverted: Vec<String> = names
                    .iter()
                    .rev()
                    .map(|s| s.to_string())
                    .chain(outer.map(str::to_string))
                    .collect();
                for end in 1..=inverted.len() {
                    let entry = into.callers.entry(inverted[..end].to_vec()).or_default();
                    entry.0 += total;
                    if end == inverted.len() {
                        entry.1 += total;
                    }
                }
            }
        }
        total
    };
    let mut scope_total = 0;
    for row in rows {
        let depth = row.depth - base;
        while stack.len() > depth {
            let total = close(&mut stack, into);
            if stack.is_empty() {
                scope_total += total;
            }
        }
        match &row.frame {
            Some(name) => stack.push(Open {
                name: name.clone(),
                samples: row.samples,
                own: u64::from(row.samples.is_none()),
                children: 0,
            }),
            None => match stack.last_mut() {
                Some(parent) => parent.own += 1,
                None => top_self += 1,
            },
        }
    }
    while !stack.is_empty() {
        let total = close(&mut stack, into);
        if stack.is_empty() {
            scope_total += total;
        }
    }
    if !root.is_empty() {
        let entry = into.flame.entry(root.to_vec()).or_default();
        entry.0 += scope_total + top_self;
        entry.1 += top_self;
    }
}

/// A summary's frames as paths → (total, self), checking on the way that
/// each frame's total is its self, other and kept children's totals.
fn widths(graph: &FlameGraph) -> Widths {
    consistent(graph);
    let mut paths: Vec<Vec<String>> = Vec::new();
    let mut widths = Widths::new();
    for frame in &graph.frames {
        let mut path = match frame.parent {
            Some(parent) => paths[parent as usize].clone(),
            None => Vec::new(),
        };
        path.push(frame.name.to_string());
        paths.push(path.clone());
        assert!(
            widths
                .insert(path, (frame.total, frame.self_weight))
                .is_none(),
            "a path twice"
        );
    }
    widths
}

/// Every frame's total is its self, its other and its kept children's
/// totals; depths and parents agree; pre-order.
fn consistent(graph: &FlameGraph) {
    let mut shown = vec![0u64; graph.frames.len()];
    for (at, frame) in graph.frames.iter().enumerate() {
        match frame.parent {
            None => assert_eq!((at, frame.depth), (0, 0)),
            Some(parent) => {
                let parent = parent as usize;
                assert!(parent < at, "a parent after its child");
                assert_eq!(graph.frames[parent].depth + 1, frame.depth);
                shown[parent] += frame.total;
            }
        }
    }
    for (frame, shown) in graph.frames.iter().zip(shown) {
        assert_eq!(
            frame.total,
            frame.self_weight + frame.other + shown,
            "{frame:?}"
        );
    }
}

fn all_frames() -> FlameOptions {
    flame_options(|o| {
        o.min_fraction = 0.0;
        o.max_frames = FlameOptions::MAX_FRAMES;
    })
}

/// The default options changed as `change` says.
fn flame_options(change: impl FnOnce(&mut FlameOptions)) -> FlameOptions {
    let mut options = FlameOptions::default();
    change(&mut options);
    options
}

fn thread_names(reader: &LazyTraceReader) -> BTreeMap<i32, String> {
    reader
        .thread_ids()
        .into_iter()
        .map(|t| {
            let name = reader
                .thread_name(t)
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| format!("thread {t}"));
            (t.get(), name)
        })
        .collect()
}

/// The most frequent call name in `rows` (a method worth a sandwich).
fn busiest_method(rows: &[Row]) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for row in rows {
        if let Some(name) = &row.frame {
            *counts.entry(name).or_default() += 1;
        }
    }
    counts
        .into_iter()
        .filter(|(name, _)| *name != "loop" && *name != "loop_iteration")
        .max_by_key(|&(name, n)| (n, std::cmp::Reverse(name)))
        .map(|(name, _)| name.to_string())
        .unwrap_or_else(|| "loop".into())
}

#[test]
fn widths_equal_counts_over_dump_rows() {
    let dir = tempfile::tempdir().unwrap();
    for trace in traces(dir.path()) {
        let rows = dump_rows(&trace);
        let reader = LazyTraceReader::open(&trace).unwrap();
        let names = thread_names(&reader);
        let method = busiest_method(&rows);
        // The whole trace, under `all`.
        let mut want = Counted::default();
        let mut all_total = 0;
        for (&thread, name) in &names {
            let own: Vec<Row> = rows
                .iter()
                .filter(|r| r.thread == thread)
                .map(r_clone)
                .collect();
            let root = vec![FlameGraph::ALL_THREADS.to_string(), name.clone()];
            count(&own, &root, &method, Some(name), &mut want);
            all_total += want.flame.get(&root).map_or(0, |w| w.0);
        }
        if names.len() > 1 {
            want.flame
                .insert(vec![FlameGraph::ALL_THREADS.into()], (all_total, 0));
        } else {
            // One thread: its frame is the root.
            want.flame = want
                .flame
                .into_iter()
                .map(|(p, w)| (p[1..].to_vec(), w))
                .collect();
        }
        let got = FlameGraph::build(&reader, &all_frames(), &|_| {}).unwrap();
        assert_eq!(got.tracepoints, rows.len() as u64, "{trace:?}");
        assert_eq!(widths(&got), want.flame, "{trace:?}");
        assert!(!got.stopped && !got.truncated && got.left_out == 0);
        let sandwich = FlameGraph::sandwich(&reader, &method, &all_frames(), &|_| {}).unwrap();
        check_sandwich(&sandwich, &want, &method);
        // Each thread alone: the thread's frame is the root.
        for (&thread, name) in &names {
            let own: Vec<Row> = rows
                .iter()
                .filter(|r| r.thread == thread)
                .map(r_clone)
                .collect();
            let mut want = Counted::default();
            count(
                &own,
                std::slice::from_ref(name),
                &method,
                Some(name),
                &mut want,
            );
            let mut options = all_frames();
            options.threads = Some(vec![ThreadId::new(thread)]);
            let got = FlameGraph::build(&reader, &options, &|_| {}).unwrap();
            assert_eq!(widths(&got), want.flame, "{trace:?} thread {thread}");
        }
    }
}

/// A sandwich equals the counted one (a method never met: its root alone,
/// weighing nothing).
fn check_sandwich(got: &(FlameGraph, FlameGraph), want: &Counted, method: &str) {
    let (callers, callees) = got;
    assert_eq!(callers.total(), callees.total(), "{method}");
    if want.callers.is_empty() {
        assert_eq!(callers.total(), 0, "{method}");
        assert_eq!((callers.frames.len(), callees.frames.len()), (1, 1));
        return;
    }
    assert_eq!(widths(callers), want.callers, "{method}");
    assert_eq!(widths(callees), want.callees, "{method}");
}

fn r_clone(row: &Row) -> Row {
    Row {
        thread: row.thread,
        depth: row.depth,
        event: row.event,
        frame: row.frame.clone(),
        samples: row.samples,
    }
}

/// The node of `event`.
fn node_of(reader: &LazyTraceReader, event: i32) -> LazyNode {
    reader
        .node_by_event(tracetree::common::EventId::new(event))
        .unwrap()
        .unwrap()
}

#[test]
fn a_node_s_flame_and_sandwich_equal_counts_over_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let trace = generated(dir.path(), Shape::Mixed, 2, 512 << 10, Some(32 << 10));
    let rows = dump_rows(&trace);
    let reader = LazyTraceReader::open(&trace).unwrap();
    // A container at each of the first depths, and a leaf.
    let mut picked = Vec::new();
    for depth in 0..4 {
        if let Some(at) = rows
            .iter()
            .position(|r| r.depth == depth && r.frame.is_some() && r.thread == 1)
        {
            picked.push(at);
        }
    }
    picked.push(rows.iter().position(|r| r.frame.is_none()).unwrap());
    assert!(picked.len() >= 4);
    for at in picked {
        let depth = rows[at].depth;
        let end = rows[at + 1..]
            .iter()
            .position(|r| r.depth <= depth || r.thread != rows[at].thread)
            .map_or(rows.len(), |n| at + 1 + n);
        let subtree: Vec<Row> = rows[at..end].iter().map(r_clone).collect();
        let method = busiest_method(&subtree);
        let mut want = Counted::default();
        count(&subtree, &[], &method, None, &mut want);
        let node = node_of(&reader, rows[at].event);
        let mut options = all_frames();
        options.node = Some(node);
        let got = FlameGraph::build(&reader, &options, &|_| {}).unwrap();
        assert_eq!(got.tracepoints, subtree.len() as u64);
        if rows[at].frame.is_none() {
            // A leaf: its kind's frame, weighing 1.
            assert_eq!(got.frames.len(), 1);
            assert_eq!((got.total(), got.frames[0].self_weight), (1, 1));
            continue;
        }
        assert_eq!(widths(&got), want.flame, "event {}", rows[at].event);
        let sandwich = FlameGraph::sandwich(&reader, &method, &options, &|_| {}).unwrap();
        check_sandwich(&sandwich, &want, &method);
    }
}

#[test]
fn sample_trees_weigh_their_samples() {
    let dir = tempfile::tempdir().unwrap();
    let trace = sample_tree(dir.path());
    let reader = LazyTraceReader::open(&trace).unwrap();
    let got = FlameGraph::build(&reader, &all_frames(), &|_| {}).unwrap();
    let want: Widths = [
        (vec!["all"], (15, 0)),
        (vec!["all", "main"], (10, 0)),
        (vec!["all", "main", "S.a"], (10, 1)),
        (vec!["all", "main", "S.a", "S.b"], (6, 2)),
        (vec!["all", "main", "S.a", "S.b", "S.c"], (4, 4)),
        (vec!["all", "main", "S.a", "S.d"], (3, 3)),
        (vec!["all", "other"], (5, 0)),
        (vec!["all", "other", "S.a"], (5, 5)),
    ]
    .into_iter()
    .map(|(p, w)| (p.into_iter().map(String::from).collect(), w))
    .collect();
    assert_eq!(widths(&got), want);
    // Widest first: main before other, S.b before S.d.
    let order: Vec<&str> = got.frames.iter().map(|f| &*f.name).collect();
    assert_eq!(
        order,
        ["all", "main", "S.a", "S.b", "S.c", "S.d", "other", "S.a"]
    );
    let (callers, callees) = FlameGraph::sandwich(&reader, "S.b", &all_frames(), &|_| {}).unwrap();
    let callers: Vec<(&str, u64)> = callers.frames.iter().map(|f| (&*f.name, f.total)).collect();
    assert_eq!(callers, [("S.b", 6), ("S.a", 6), ("main", 6)]);
    assert_eq!(callees.frames.len(), 2);
    assert_eq!(callees.frames[1].total, 4);
}

#[test]
fn pruning_keeps_widths_adding_up() {
    let dir = tempfile::tempdir().unwrap();
    let trace = generated(dir.path(), Shape::Mixed, 3, 1 << 20, Some(64 << 10));
    let reader = LazyTraceReader::open(&trace).unwrap();
    let full = FlameGraph::build(&reader, &all_frames(), &|_| {}).unwrap();
    let full_widths = widths(&full);
    for (fraction, max_frames) in [
        (0.01, FlameOptions::MAX_FRAMES),
        (0.0, 7),
        (0.001, 40),
        (1.0, 10),
    ] {
        let mut options = FlameOptions::default();
        options.min_fraction = fraction;
        options.max_frames = max_frames;
        let got = FlameGraph::build(&reader, &options, &|_| {}).unwrap();
        consistent(&got);
        assert_eq!(got.total(), full.total());
        assert!(got.frames.len() <= max_frames);
        assert_eq!(
            got.frames.len() as u64 + got.left_out,
            full.frames.len() as u64
        );
        let threshold = ((fraction * full.total() as f64).ceil() as u64).max(1);
        assert_eq!(got.threshold, threshold);
        // Each kept frame is as wide as in the full graph and over the
        // threshold; what is left out is in `other`.
        for (path, width) in widths(&got) {
            assert_eq!(full_widths[&path], width);
            assert!(width.0 >= threshold);
        }
        // Widest first: nothing left out is wider than the narrowest kept
        // below the root, among frames whose parent was kept.
        if got.left_out > 0 && got.frames.len() == max_frames {
            let narrowest = got.frames.iter().map(|f| f.total).min().unwrap();
            let kept = widths(&got);
            for (path, width) in &full_widths {
                let parent_kept = kept.contains_key(&path[..path.len() - 1]);
                if !kept.contains_key(path) && parent_kept {
                    assert!(width.0 <= narrowest, "{path:?} left out");
                }
            }
        }
    }
    // Few paths kept while walking: the rest is `other`, totals unchanged.
    for max_paths in [1, 5, 100] {
        let mut options = all_frames();
        options.max_paths = max_paths;
        let got = FlameGraph::build(&reader, &options, &|_| {}).unwrap();
        consistent(&got);
        assert!(got.truncated);
        assert_eq!(got.total(), full.total());
        assert!(got.frames.len() <= max_paths + 1);
        let (callers, callees) =
            FlameGraph::sandwich(&reader, &full.frames[3].name, &options, &|_| {}).unwrap();
        consistent(&callers);
        consistent(&callees);
        assert_eq!(callers.total(), callees.total());
    }
}

#[test]
fn bad_options_are_errors_and_a_stop_ends_the_walk() {
    let dir = tempfile::tempdir().unwrap();
    let trace = generated(dir.path(), Shape::Mixed, 2, 256 << 10, None);
    let reader = LazyTraceReader::open(&trace).unwrap();
    let other =
        LazyTraceReader::open(tracetree_testkit::files::testdata("all-types.trace")).unwrap();
    let mut foreign = None;
    other
        .walk_thread(other.thread_ids()[0], WalkDetail::Headers, |w| {
            foreign = Some(w.node);
            Ok(w.depth < 2)
        })
        .unwrap();
    let bad = [
        flame_options(|o| o.min_fraction = f64::NAN),
        flame_options(|o| o.min_fraction = -0.5),
        flame_options(|o| o.min_fraction = 1.5),
        flame_options(|o| o.min_fraction = f64::INFINITY),
        flame_options(|o| o.max_frames = 0),
        flame_options(|o| o.max_frames = FlameOptions::MAX_FRAMES + 1),
        flame_options(|o| o.max_frames = usize::MAX),
        flame_options(|o| o.max_paths = 0),
        flame_options(|o| o.threads = Some(vec![ThreadId::new(i32::MAX)])),
        flame_options(|o| o.node = foreign),
    ];
    for options in &bad {
        assert!(
            FlameGraph::build(&reader, options, &|_| {}).is_err(),
            "{options:?}"
        );
        assert!(
            FlameGraph::sandwich(&reader, "x", options, &|_| {}).is_err(),
            "{options:?}"
        );
    }
    assert!(FlameGraph::sandwich(&reader, "", &FlameOptions::default(), &|_| {}).is_err());
    // A node outside the threads asked for.
    let node = reader.roots_range(reader.thread_ids()[1], 0, 1).unwrap()[0];
    let mut options = FlameOptions::default();
    options.node = Some(node);
    options.threads = Some(vec![reader.thread_ids()[0]]);
    assert!(FlameGraph::build(&reader, &options, &|_| {}).is_err());
    // A method the trace lacks: empty, not an error.
    let (callers, callees) =
        FlameGraph::sandwich(&reader, "No.such", &FlameOptions::default(), &|_| {}).unwrap();
    assert_eq!((callers.total(), callees.frames.len()), (0, 1));
    // Stopped before it starts: each walk ends at its first tracepoint.
    let mut options = FlameOptions::default();
    options.stop = Some(Arc::new(AtomicBool::new(true)));
    let got = FlameGraph::build(&reader, &options, &|_| {}).unwrap();
    assert!(got.stopped);
    assert!(got.tracepoints <= reader.thread_ids().len() as u64);
    consistent(&got);
    // Progress adds up to the tracepoints walked.
    let walked = std::sync::atomic::AtomicU64::new(0);
    let got = FlameGraph::build(&reader, &FlameOptions::default(), &|n| {
        walked.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    })
    .unwrap();
    assert_eq!(walked.into_inner(), got.tracepoints);
}

#[test]
fn damaged_traces_give_errors_or_partial_graphs_never_panics() {
    let mut outcomes = [0usize; 2];
    for reader in damaged_readers() {
        let result = FlameGraph::build(&reader, &FlameOptions::default(), &|_| {});
        if let Ok(graph) = &result {
            consistent(graph);
        }
        outcomes[usize::from(result.is_ok())] += 1;
        let _ = FlameGraph::sandwich(&reader, "loop", &FlameOptions::default(), &|_| {});
    }
    assert!(outcomes[1] > 0, "nothing summarized: {outcomes:?}");
}
