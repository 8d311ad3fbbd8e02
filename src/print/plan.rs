//! How a trace's output is cut into work units for the parallel printers.
//!
//! A thread's tree is cut near its top: a top-level call with a few
//! children becomes its own line and one part per child (cut again, a few
//! levels down), one with many children its own line and ranges of them.
//! Ranges by child number need the children counted, a scan of the call's
//! content; where the reader can cut a call's children into runs of about
//! [`RUN_BYTES`] without counting them ([`TraceTree::sibling_cuts`]: the
//! lazy reader cuts after child containers), the parts are those runs
//! instead, and only the dump (whose line for the call gives its count)
//! counts the children. Threads are cut on several threads at once.
//! Each part carries the depth it starts at and, for the text form, what
//! its ancestors tell their children ([`Parent`]), so the parts print
//! exactly as one walk of the whole tree does.

use std::sync::Arc;

use crate::common::ThreadId;
use crate::error::Result;
use crate::print::parent::Parent;
use crate::tree::{TraceTree, Visit, VisitDetail};
use crate::turns::in_turns;

/// Levels below a thread's top-level tracepoints where cutting stops.
const CUT_LEVELS: usize = 6;
/// A node with at most this many children is cut child by child (each cut
/// again); one with more is cut into ranges of children.
const FEW_CHILDREN: usize = 8;
/// Children per range: enough that a range's walk outweighs setting it up,
/// few enough that its text (about a [`CHUNK_BYTES`] of typical calls)
/// fits the buffers a worker may fill ahead of the one being written.
///
/// [`CHUNK_BYTES`]: crate::print::ordered::CHUNK_BYTES
pub(crate) const CHILDREN_PER_RANGE: usize = 1024;
/// Bytes of trace per run of siblings, where the reader cuts a node's
/// children into runs without counting them ([`TraceTree::sibling_cuts`]).
/// Each run's walk starts and ends in a block of the data that the runs
/// beside it read too (and release behind them): runs of 1 MiB fault about
/// 40% fewer pages over a whole print than runs of 256 KiB, and print a
/// 1 GB trace 7% faster; 4 MiB runs fault more again.
pub(crate) const RUN_BYTES: u64 = 1024 * 1024;

/// Where a part's tracepoints come from.
#[derive(Debug, Clone)]
pub enum Source<N> {
    /// The thread header before a top-level tracepoint (text form only).
    Header {
        /// The top-level tracepoint.
        root: N,
    },
    /// One node's own line, without its children, and its child count
    /// when the cutting counted them.
    Line(N, Option<usize>),
    /// The whole trees under these nodes (siblings, in order).
    Trees(Vec<N>),
    /// The whole trees under `parent`'s children from `first` (its first
    /// child when `None`) up to `next` (its last when `None`): a run
    /// [`TraceTree::sibling_cuts`] gave.
    Siblings {
        /// Whose children.
        parent: N,
        /// Where the run begins.
        first: Option<N>,
        /// Where the next run begins.
        next: Option<N>,
    },
    /// The whole trees under `parent`'s children `[from, from + count)`.
    Children {
        /// Whose children.
        parent: N,
        /// The first child.
        from: usize,
        /// How many.
        count: usize,
    },
}

/// One work unit: a part of one thread's output.
#[derive(Debug, Clone)]
pub struct Part<N> {
    /// The thread (as the walk names it, before the header's numbering).
    pub thread: ThreadId,
    /// Where its tracepoints come from.
    pub source: Source<N>,
    /// The depth of its first tracepoints.
    pub depth: usize,
    /// What each ancestor tells its children (empty for the JSON dump).
    pub parents: Arc<Vec<Parent>>,
}

/// What the cutting needs to know of the output.
#[derive(Debug, Clone, Copy)]
pub struct Cut {
    /// Headers before each top-level tracepoint (the text form).
    pub headers: bool,
    /// Keep the ancestors' [`Parent`]s (the text form).
    pub parents: bool,
    /// Depths below which children fold (and are never cut).
    pub max_depth: Option<usize>,
    /// A cut node's line needs its child count (the JSON dump): it is
    /// counted while cutting, on the threads that cut.
    pub line_counts: bool,
    /// Bytes of trace per run of siblings (the printers: [`RUN_BYTES`]).
    pub run_bytes: u64,
    /// Children per range where they are cut by number (the printers:
    /// [`CHILDREN_PER_RANGE`]).
    pub children_per_range: usize,
}

/// The parts of `threads`' output, in output order. With more than one
/// worker, threads are cut on up to `workers` threads at once: cutting a
/// thread counts its top calls' children, a scan of each, which would
/// otherwise leave every core but one idle until the printing starts.
pub fn plan<T: TraceTree>(
    tree: &T,
    threads: &[ThreadId],
    cut: Cut,
    workers: usize,
) -> Result<Vec<Part<T::Node>>> {
    let workers = workers.min(threads.len());
    if workers <= 1 {
        let mut parts = Vec::new();
        for &thread in threads {
            parts.extend(plan_thread(tree, thread, cut)?);
        }
        return Ok(parts);
    }
    let cuts = in_turns(
        workers,
        threads.len(),
        || (),
        |(), i| plan_thread(tree, threads[i], cut),
        |_| false,
    );
    let mut parts = Vec::new();
    for cut in cuts.into_iter().flatten() {
        parts.extend(cut?);
    }
    Ok(parts)
}

/// The parts of one thread's output, in output order.
fn plan_thread<T: TraceTree>(tree: &T, thread: ThreadId, cut: Cut) -> Result<Vec<Part<T::Node>>> {
    let mut parts = Vec::new();
    let roots = tree.roots(thread)?;
    let empty = Arc::new(Vec::new());
    for &root in &roots {
        if cut.headers {
            parts.push(Part {
                thread,
                source: Source::Header { root },
                depth: 0,
                parents: empty.clone(),
            });
        }
        cut_node(tree, thread, root, 0, &empty, cut, &mut parts)?;
    }
    Ok(parts)
}

/// The parts of the tree under `node` (one of `thread`'s), in output
/// order, depths relative to the node's: the cutting of a thread's trees,
/// from one node (the flame graph of a node walks them on several cores).
pub(crate) fn plan_node<T: TraceTree>(
    tree: &T,
    thread: ThreadId,
    node: T::Node,
    cut: Cut,
) -> Result<Vec<Part<T::Node>>> {
    let mut parts = Vec::new();
    cut_node(
        tree,
        thread,
        node,
        0,
        &Arc::new(Vec::new()),
        cut,
        &mut parts,
    )?;
    Ok(parts)
}

/// Cuts the tree under `node` (at `depth`, below `parents`) into parts.
fn cut_node<T: TraceTree>(
    tree: &T,
    thread: ThreadId,
    node: T::Node,
    depth: usize,
    parents: &Arc<Vec<Parent>>,
    cut: Cut,
    parts: &mut Vec<Part<T::Node>>,
) -> Result<()> {
    let whole = |parts: &mut Vec<Part<T::Node>>| {
        parts.push(Part {
            thread,
            source: Source::Trees(vec![node]),
            depth,
            parents: parents.clone(),
        });
    };
    let folds = cut.max_depth.is_some_and(|max| depth >= max);
    if depth >= CUT_LEVELS || folds {
        whole(parts);
        return Ok(());
    }
    let runs = tree.sibling_cuts(node, cut.run_bytes)?;
    // Counted here, on the threads cutting the tree, when the children are
    // cut by number or the node's line needs the count (the dump's).
    let count = match (&runs, cut.line_counts) {
        (Some(_), false) => None,
        _ => Some(tree.child_count(node)?),
    };
    if count == Some(0) {
        whole(parts);
        return Ok(());
    }
    parts.push(Part {
        thread,
        source: Source::Line(node, count),
        depth,
        parents: parents.clone(),
    });
    let below = if cut.parents {
        let mut below = parents.as_ref().clone();
        below.push(tree.visit(node, |tracepoint, _| Parent::of(tracepoint))?);
        Arc::new(below)
    } else {
        parents.clone()
    };
    let count = match (runs, count) {
        (Some(runs), _) => {
            let mut first = None;
            for next in runs.into_iter().map(Some).chain([None]) {
                parts.push(Part {
                    thread,
                    source: Source::Siblings {
                        parent: node,
                        first,
                        next,
                    },
                    depth: depth + 1,
                    parents: below.clone(),
                });
                first = next;
            }
            return Ok(());
        }
        (None, Some(count)) => count,
        (None, None) => return Ok(()),
    };
    if count <= FEW_CHILDREN {
        for child in tree.children(node)? {
            cut_node(tree, thread, child, depth + 1, &below, cut, parts)?;
        }
        return Ok(());
    }
    let per_range = cut.children_per_range.max(1);
    for from in (0..count).step_by(per_range) {
        parts.push(Part {
            thread,
            source: Source::Children {
                parent: node,
                from,
                count: per_range.min(count - from),
            },
            depth: depth + 1,
            parents: below.clone(),
        });
    }
    Ok(())
}

impl<N: Copy> Part<N> {
    /// Walks the part's trees as [`TraceTree::walk_visit`] does, depths
    /// relative to the part's; `max_depth` is the whole print's (headers
    /// and lines are not walked).
    pub fn walk<T: TraceTree<Node = N>>(
        &self,
        tree: &T,
        max_depth: Option<usize>,
        detail: VisitDetail,
        f: impl FnMut(Visit<'_, N>) -> Result<()>,
    ) -> Result<()> {
        let max_depth = max_depth.map(|max| max.saturating_sub(self.depth));
        match &self.source {
            Source::Header { .. } | Source::Line(..) => Ok(()),
            Source::Trees(nodes) => tree.walk_visit(nodes, max_depth, detail, f),
            Source::Siblings {
                parent,
                first,
                next,
            } => tree.walk_visit_siblings(*parent, *first, *next, max_depth, detail, f),
            Source::Children {
                parent,
                from,
                count,
            } => tree.walk_visit_children(*parent, *from, *count, max_depth, detail, f),
        }
    }
}
