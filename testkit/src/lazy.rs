//! Helpers for the lazy reader's tests: tree comparison through `TraceTree`,
//! where the traces are, opening traces held in memory.

use std::path::{Path, PathBuf};

use tracetree::model::{Footer, Tracepoint, TracepointHeader};
use tracetree::read::{LazyNode, LazyOptions, LazyTraceReader, WalkDetail};
use tracetree::tree::{TraceTree, Visit, VisitDetail};

use crate::files::COMPLETE_REFERENCE_TRACES;

/// The sidecar directory of a trace in a test's own temporary folder: a
/// `lookups` folder beside it.
pub fn sidecar_dir(trace: &Path) -> PathBuf {
    trace.parent().unwrap_or(Path::new(".")).join("lookups")
}

/// Options that keep `trace`'s sidecar in [`sidecar_dir`], written at the
/// first open (not deferred to the second: `tests/read/lazy_sidecar.rs`
/// tests the deferral on its own).
pub fn with_sidecar(trace: &Path) -> LazyOptions {
    LazyTraceReader::options()
        .sidecar_dir(Some(sidecar_dir(trace)))
        .defer_sidecar(None)
}

/// Where [`with_sidecar`] keeps `trace`'s sidecar.
pub fn sidecar_of(trace: &Path) -> PathBuf {
    LazyTraceReader::sidecar_path(&sidecar_dir(trace), trace)
}

/// The reference traces present, by path.
pub fn reference_traces() -> Vec<PathBuf> {
    let Some(dir) = crate::files::reference_traces() else {
        return Vec::new();
    };
    COMPLETE_REFERENCE_TRACES
        .iter()
        .chain(&["crashed"])
        .map(|name| dir.join(format!("{name}.trace")))
        .filter(|path| {
            let present = path.exists();
            if !present {
                crate::skip::cannot_run(&format!("{} is missing", path.display()));
            }
            present
        })
        .collect()
}

/// The bundled test traces (`testdata/*.trace`).
pub fn testdata_traces() -> Vec<PathBuf> {
    let dir = crate::files::repository().join("testdata");
    let mut traces: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|e| e == "trace"))
        .collect();
    traces.sort();
    traces
}

/// A lazy reader over a trace held in memory.
pub fn open_in_memory(
    data: &[u8],
    index: Option<&[u8]>,
    cache_bytes: usize,
) -> tracetree::Result<tracetree::read::LazyTraceReader> {
    tracetree::read::LazyTraceReader::options()
        .cache_bytes(cache_bytes)
        .open_bytes(
            tracetree::TraceBytes::from_vec(data.to_vec()),
            index.map(|index| tracetree::TraceBytes::from_vec(index.to_vec())),
        )
}

type Owned = (Tracepoint<'static>, Option<Footer<'static>>);

fn owned<T: TraceTree>(tree: &T, node: T::Node) -> Owned {
    tree.visit(node, |tracepoint, footer| {
        (
            tracepoint.clone().into_owned(),
            footer.cloned().map(Footer::into_owned),
        )
    })
    .expect("visit")
}

/// Asserts that two trees hold the same threads, roots, tracepoints,
/// footers and children, walking both iteratively. Returns the node count.
pub fn assert_same_tree<A: TraceTree, B: TraceTree>(a: &A, b: &B, what: &str) -> usize {
    let threads = a.thread_ids();
    assert_eq!(threads, b.thread_ids(), "{what}: threads");
    let mut nodes = 0;
    for thread in threads {
        let (roots_a, roots_b) = (a.roots(thread).unwrap(), b.roots(thread).unwrap());
        assert_eq!(
            roots_a.len(),
            roots_b.len(),
            "{what}: roots of thread {thread}"
        );
        let mut stack: Vec<(A::Node, B::Node, usize)> = roots_a
            .into_iter()
            .zip(roots_b)
            .map(|(x, y)| (x, y, 0))
            .rev()
            .collect();
        while let Some((x, y, depth)) = stack.pop() {
            nodes += 1;
            let (left, right) = (owned(a, x), owned(b, y));
            assert_eq!(
                left, right,
                "{what}: node {nodes} (thread {thread}, depth {depth})"
            );
            let count = a.child_count(x).unwrap();
            assert_eq!(
                count,
                b.child_count(y).unwrap(),
                "{what}: child count of {:?}",
                left.0.header
            );
            let (children_a, children_b) = (a.children(x).unwrap(), b.children(y).unwrap());
            assert_eq!(
                children_a.len(),
                count,
                "{what}: children of {:?}",
                left.0.header
            );
            assert_eq!(
                children_b.len(),
                count,
                "{what}: children of {:?}",
                left.0.header
            );
            stack.extend(
                children_a
                    .into_iter()
                    .zip(children_b)
                    .map(|(x, y)| (x, y, depth + 1))
                    .rev(),
            );
        }
    }
    for max_depth in [None, Some(0), Some(1), Some(3)] {
        assert_same_walk(a, b, max_depth, what);
    }
    nodes
}

/// One step of `TraceTree::walk_visit`, owned.
#[derive(Debug, PartialEq)]
enum Step {
    Node(usize, Box<Owned>, Option<usize>),
    /// A leaf by its header: as given ([`Visit::Leaf`]), or whole by a
    /// walk asked for no leaf bodies, which may give either.
    Leaf(usize, TracepointHeader, Option<usize>),
    Folded(usize, usize),
}

fn walk_steps<T: TraceTree>(
    tree: &T,
    max_depth: Option<usize>,
    detail: VisitDetail,
) -> Vec<Vec<Step>> {
    let mut threads = Vec::new();
    for thread in tree.thread_ids() {
        let mut steps = Vec::new();
        let roots = tree.roots(thread).unwrap();
        tree.walk_visit(&roots, max_depth, detail, |step| {
            steps.push(match step {
                Visit::Node {
                    depth,
                    tracepoint,
                    children,
                    ..
                } if !detail.leaf_bodies && !tracepoint.is_container() => {
                    Step::Leaf(depth, tracepoint.header, children)
                }
                Visit::Leaf { depth, header, .. } => {
                    Step::Leaf(depth, header, detail.child_counts.then_some(0))
                }
                Visit::Node {
                    depth,
                    tracepoint,
                    footer,
                    children,
                    ..
                } => Step::Node(
                    depth,
                    Box::new((
                        tracepoint.clone().into_owned(),
                        footer.cloned().map(Footer::into_owned),
                    )),
                    children,
                ),
                Visit::Folded { count, depth } => Step::Folded(count, depth),
            });
            Ok(())
        })
        .unwrap();
        threads.push(steps);
    }
    threads
}

/// Asserts that two trees' `walk_visit`s (what the printer and the dump
/// run) meet the same nodes, footers, child counts and folds, whole and
/// with leaves by their headers.
pub fn assert_same_walk<A: TraceTree, B: TraceTree>(
    a: &A,
    b: &B,
    max_depth: Option<usize>,
    what: &str,
) {
    let leaf_headers = VisitDetail {
        child_counts: true,
        leaf_bodies: false,
    };
    for detail in [VisitDetail::with_child_counts(), leaf_headers] {
        assert_same_steps(a, b, max_depth, detail, what);
    }
}

fn assert_same_steps<A: TraceTree, B: TraceTree>(
    a: &A,
    b: &B,
    max_depth: Option<usize>,
    detail: VisitDetail,
    what: &str,
) {
    let (left, right) = (
        walk_steps(a, max_depth, detail),
        walk_steps(b, max_depth, detail),
    );
    assert_eq!(left.len(), right.len(), "{what}: threads");
    for (thread, (x, y)) in left.iter().zip(&right).enumerate() {
        assert_eq!(
            x.len(),
            y.len(),
            "{what}: steps of thread {thread}, depth limit {max_depth:?}, {detail:?}"
        );
        for (i, (p, q)) in x.iter().zip(y).enumerate() {
            assert_eq!(
                p, q,
                "{what}: step {i} of thread {thread}, depth limit {max_depth:?}, {detail:?}"
            );
        }
    }
}

/// A small deterministic pseudo-random generator (xorshift64).
pub struct Rng(pub u64);

impl Rng {
    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        if n == 0 {
            0
        } else {
            (self.0 % n as u64) as usize
        }
    }
}

/// Every eager node's event id, parent's event id and children's event ids.
pub struct EagerIndex {
    pub events: Vec<tracetree::common::EventId>,
    pub by_event: std::collections::HashMap<tracetree::common::EventId, usize>,
}

impl EagerIndex {
    pub fn new(trace: &tracetree::read::EagerTrace) -> Self {
        let events: Vec<_> = trace.nodes().map(|n| n.header().event).collect();
        let by_event = events.iter().enumerate().map(|(i, &e)| (e, i)).collect();
        EagerIndex { events, by_event }
    }
}

/// Every node of a lazy reader, thread by thread in pre-order (a headers
/// walk).
pub fn all_nodes(reader: &LazyTraceReader) -> Vec<LazyNode> {
    let mut nodes = Vec::new();
    for thread in reader.thread_ids() {
        reader
            .walk_thread(thread, WalkDetail::Headers, |walked| {
                nodes.push(walked.node);
                Ok(true)
            })
            .unwrap();
    }
    nodes
}

/// Expands every node of a lazy reader, returning the first error instead
/// of panicking; also asks for each node's parent.
pub fn expand_all(reader: &tracetree::read::LazyTraceReader) -> tracetree::Result<usize> {
    let mut nodes: usize = 0;
    for thread in reader.thread_ids() {
        let mut stack = reader.roots(thread)?;
        while let Some(node) = stack.pop() {
            nodes += 1;
            let data = reader.node(node)?;
            reader.child_count(node)?;
            if nodes.is_multiple_of(16) {
                reader.parent(node)?;
                reader.node_by_event(data.tracepoint().event())?;
            }
            stack.extend(reader.children(node)?);
        }
    }
    Ok(nodes)
}
