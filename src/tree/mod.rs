//! [`TraceTree`]: a trace seen as one tree of tracepoints per thread,
//! whichever reader produced it. The printer and the JSON dump walk any
//! `TraceTree`, so the eager loader and the lazy reader print alike.

use crate::common::ThreadId;
use crate::error::{Error, Result};
use crate::format::TraceContext;
use crate::model::{Footer, Tracepoint};
use crate::read::{EagerTrace, NodeId, RawSubtree};
pub use crate::read::{Visit, VisitDetail};

mod copy;
mod lazy;
mod navigate;
mod postprocess;
mod search_walk;
mod shared;

pub use navigate::Navigate;
pub(crate) use navigate::PreOrder;
pub use postprocess::{PostNode, Postprocessed};
pub(crate) use search_walk::{SearchStep, Walk};

/// A forest of tracepoints, one tree per thread. Shared between threads:
/// the printers format parts of one tree on several.
pub trait TraceTree: Sync {
    /// A handle to one node; cheap to copy, and sent to other threads.
    type Node: Copy + Send + Sync + PartialEq;

    /// The trace's reference objects.
    fn context(&self) -> &TraceContext;

    /// The recorded threads, ascending by thread id.
    fn thread_ids(&self) -> Vec<ThreadId>;

    /// A thread's top-level tracepoints (normally its one root call).
    fn roots(&self, thread: ThreadId) -> Result<Vec<Self::Node>>;

    /// Calls `f` with a node's tracepoint and footer (`None` for leaves and
    /// for containers that were never finished).
    fn visit<R>(
        &self,
        node: Self::Node,
        f: impl FnOnce(&Tracepoint<'_>, Option<&Footer<'_>>) -> R,
    ) -> Result<R>;

    /// How many direct children a node has, without loading them.
    fn child_count(&self, node: Self::Node) -> Result<usize>;

    /// A node's direct children, in order.
    fn children(&self, node: Self::Node) -> Result<Vec<Self::Node>>;

    /// The children `[from, from + count)` of a node (fewer at the end).
    /// Readers that can page children override this.
    fn children_range(
        &self,
        node: Self::Node,
        from: usize,
        count: usize,
    ) -> Result<Vec<Self::Node>> {
        Ok(page_of(self.children(node)?, from, count))
    }

    /// Walks the trees under `roots` depth-first in pre-order, without
    /// recursion (a trace may nest hundreds of thousands of calls deep),
    /// calling `f` with each node and its depth (0 at `roots`). Nothing is
    /// decoded but what finding children takes.
    fn walk(
        &self,
        roots: &[Self::Node],
        mut f: impl FnMut(Self::Node, usize) -> Result<()>,
    ) -> Result<()>
    where
        Self: Sized,
    {
        walk(self, roots, None, |step| match step {
            WalkStep::Node { node, depth } => f(node, depth),
            WalkStep::Folded { .. } => Ok(()),
        })
    }

    /// Walks the trees under `roots` as [`walk`](Self::walk) does, calling `f` with each
    /// node's tracepoint and footer, and with its direct child count when
    /// `detail` asks for it (leaves by their headers only when it asks for
    /// no leaf bodies and the reader can skip them); children deeper than
    /// `max_depth` are reported as one [`Visit::Folded`] per parent. What
    /// the printer and the JSON dump run; readers that can stream a
    /// subtree override it (the default visits each node
    /// [`walk`](Self::walk) meets).
    fn walk_visit(
        &self,
        roots: &[Self::Node],
        max_depth: Option<usize>,
        detail: VisitDetail,
        mut f: impl FnMut(Visit<'_, Self::Node>) -> Result<()>,
    ) -> Result<()>
    where
        Self: Sized,
    {
        walk(self, roots, max_depth, |step| match step {
            WalkStep::Node { node, depth } => {
                let children = if detail.child_counts {
                    Some(self.child_count(node)?)
                } else {
                    None
                };
                self.visit(node, |tracepoint, footer| {
                    f(Visit::Node {
                        node,
                        depth,
                        tracepoint,
                        footer,
                        children,
                    })
                })?
            }
            WalkStep::Folded { count, depth } => f(Visit::Folded { count, depth }),
        })
    }

    /// Walks the trees under `parent`'s children `[from, from + count)` as
    /// [`walk_visit`](Self::walk_visit) walks them given as roots (depths
    /// relative to them). What the parallel printers run on a range of a
    /// wide call's children; readers that can stream a stretch of siblings
    /// in one pass override it (the default pages the children in and
    /// walks them as roots).
    fn walk_visit_children(
        &self,
        parent: Self::Node,
        from: usize,
        count: usize,
        max_depth: Option<usize>,
        detail: VisitDetail,
        f: impl FnMut(Visit<'_, Self::Node>) -> Result<()>,
    ) -> Result<()>
    where
        Self: Sized,
    {
        let children = self.children_range(parent, from, count)?;
        self.walk_visit(&children, max_depth, detail, f)
    }

    /// The children of `node` that begin runs of its children of about
    /// `bytes` of trace each (the first run begins with its first child),
    /// for readers that find them without counting the children (the
    /// printers cut a large call's children into such runs); `None` where
    /// the reader does not (the default), and the printers cut by child
    /// number ([`child_count`](Self::child_count),
    /// [`walk_visit_children`](Self::walk_visit_children)).
    fn sibling_cuts(&self, node: Self::Node, bytes: u64) -> Result<Option<Vec<Self::Node>>> {
        let _ = (node, bytes);
        Ok(None)
    }

    /// The encoded objects of `node`'s subtree as the trace holds them,
    /// for a reader that reads the trace's own bytes (the lazy reader);
    /// `None` (the default) for other readers, for views that show
    /// something else than the bytes, and for a container that never
    /// finished. Comparing or copying bytes this way skips decoding.
    fn raw_subtree(&self, node: Self::Node) -> Result<Option<RawSubtree<'_>>> {
        let _ = node;
        Ok(None)
    }

    /// The encoded objects the subtree of `node` *below* it is shown from:
    /// two nodes whose sources are the same bytes (but for thread and event
    /// ids) over tables that agree have the same descendants. A reader of
    /// the trace's own bytes gives [`raw_subtree`](Self::raw_subtree) (the
    /// default); a view that shows a node's descendants from one raw
    /// node's subtree alone gives that subtree; `None` where there is none.
    fn subtree_source(&self, node: Self::Node) -> Result<Option<RawSubtree<'_>>> {
        self.raw_subtree(node)
    }

    /// Walks the trees under `roots` as [`walk_visit`](Self::walk_visit)
    /// does (no depth limit), `f` saying after each node whether to go on
    /// in pre-order or leave the rest of a container on its path unread
    /// ([`Prune`]). Readers that can skip a subtree skip it; the others
    /// (the default) walk it, and `f` is handed its nodes all the same.
    fn walk_visit_pruned(
        &self,
        roots: &[Self::Node],
        detail: VisitDetail,
        mut f: impl FnMut(Visit<'_, Self::Node>) -> Result<Prune>,
    ) -> Result<()>
    where
        Self: Sized,
    {
        self.walk_visit(roots, None, detail, |visit| f(visit).map(|_| ()))
    }

    /// Walks the trees of `parent`'s children from `first` (its first
    /// child when `None`) up to, not including, `next` (to its last when
    /// `None`), as [`walk_visit`](Self::walk_visit) does: `first` and
    /// `next` are children, or cuts [`sibling_cuts`](Self::sibling_cuts)
    /// gave.
    fn walk_visit_siblings(
        &self,
        parent: Self::Node,
        first: Option<Self::Node>,
        next: Option<Self::Node>,
        max_depth: Option<usize>,
        detail: VisitDetail,
        f: impl FnMut(Visit<'_, Self::Node>) -> Result<()>,
    ) -> Result<()>
    where
        Self: Sized,
    {
        let children = self.children(parent)?;
        let place = |node: Option<Self::Node>, or: usize| match node {
            Some(node) => children
                .iter()
                .position(|&child| child == node)
                .ok_or(Error::NoSuchNode(crate::error::NodeProblem::NoChild(or))),
            None => Ok(or),
        };
        let from = place(first, 0)?;
        let to = place(next, children.len())?.max(from);
        self.walk_visit(&children[from..to], max_depth, detail, f)
    }
}

/// What a [`TraceTree::walk_visit_pruned`] does after a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prune {
    /// On in pre-order.
    Go,
    /// The rest of the container at this depth on the path to the node
    /// just visited (the node itself, at its own depth) is left unread; the
    /// walk goes on after it.
    Leave(usize),
}

/// The children `[from, from + count)` of a whole list (fewer at its end).
pub(crate) fn page_of<N>(mut children: Vec<N>, from: usize, count: usize) -> Vec<N> {
    let end = from.saturating_add(count).min(children.len());
    children.truncate(end);
    children.split_off(from.min(end))
}

/// One step of a depth-first, pre-order [`walk`]: a node, or the children
/// a depth limit folds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WalkStep<N> {
    /// A node at `depth` (a thread's top-level tracepoints are at depth 0).
    Node {
        /// The node.
        node: N,
        /// Its depth.
        depth: usize,
    },
    /// `count` children of a node at `depth - 1` that the walk does not
    /// enter because of its depth limit.
    Folded {
        /// How many children were not entered.
        count: usize,
        /// The depth they would have had.
        depth: usize,
    },
}

/// The threads `wanted` names, ascending and without repeats, each checked
/// against `all` (a trace's threads); all of them when `wanted` is `None`.
/// An id the trace does not have is an [`Error::InvalidArgument`] naming the
/// trace's threads, the same for every reader and command. Ids are the
/// recorded ones: the printed header `# Thread N` is thread N − 1.
pub(crate) fn select_threads(
    all: &[ThreadId],
    wanted: Option<&[ThreadId]>,
) -> Result<Vec<ThreadId>> {
    let Some(wanted) = wanted else {
        return Ok(all.to_vec());
    };
    if let Some(unknown) = wanted.iter().find(|t| !all.contains(t)) {
        let known: Vec<String> = all.iter().map(ToString::to_string).collect();
        return Err(Error::invalid(
            "thread",
            format!(
                "the trace has no thread {unknown} (its threads: {}; `# Thread N` in the \
                 printed text is thread N-1)",
                known.join(", ")
            ),
        ));
    }
    let mut wanted = wanted.to_vec();
    wanted.sort_unstable();
    wanted.dedup();
    Ok(wanted)
}

/// Children fetched at once while walking, so a call with millions of
/// children is walked in bounded memory.
const WALK_PAGE: usize = 4096;

struct Frame<N> {
    node: N,
    next_child: usize,
    child_count: usize,
    page: std::vec::IntoIter<N>,
}

/// [`TraceTree::walk`], children deeper than `max_depth` reported as one
/// [`WalkStep::Folded`] per parent.
pub(crate) fn walk<T: TraceTree>(
    tree: &T,
    roots: &[T::Node],
    max_depth: Option<usize>,
    mut f: impl FnMut(WalkStep<T::Node>) -> Result<()>,
) -> Result<()> {
    for &root in roots {
        let mut stack: Vec<Frame<T::Node>> = Vec::new();
        let mut pending = Some(root);
        loop {
            if let Some(node) = pending.take() {
                let depth = stack.len();
                f(WalkStep::Node { node, depth })?;
                let child_count = tree.child_count(node)?;
                if child_count > 0 {
                    if max_depth.is_some_and(|max| depth >= max) {
                        f(WalkStep::Folded {
                            count: child_count,
                            depth: depth + 1,
                        })?;
                    } else {
                        stack.push(Frame {
                            node,
                            next_child: 0,
                            child_count,
                            page: Vec::new().into_iter(),
                        });
                    }
                }
            }
            let Some(frame) = stack.last_mut() else {
                break;
            };
            if let Some(child) = frame.page.next() {
                pending = Some(child);
            } else if frame.next_child < frame.child_count {
                let page = tree.children_range(frame.node, frame.next_child, WALK_PAGE)?;
                if page.is_empty() {
                    stack.pop();
                    continue;
                }
                frame.next_child += page.len();
                frame.page = page.into_iter();
            } else {
                stack.pop();
            }
        }
    }
    Ok(())
}

impl TraceTree for EagerTrace {
    type Node = NodeId;

    fn context(&self) -> &TraceContext {
        EagerTrace::context(self)
    }

    fn thread_ids(&self) -> Vec<ThreadId> {
        self.threads().iter().map(|thread| thread.id).collect()
    }

    fn roots(&self, thread: ThreadId) -> Result<Vec<NodeId>> {
        Ok(self.thread_roots(thread).to_vec())
    }

    fn visit<R>(
        &self,
        node: NodeId,
        f: impl FnOnce(&Tracepoint<'_>, Option<&Footer<'_>>) -> R,
    ) -> Result<R> {
        let node = self.node(node);
        let tracepoint = node.try_tracepoint()?;
        let footer = node.try_footer()?;
        Ok(f(&tracepoint, footer.as_ref()))
    }

    fn child_count(&self, node: NodeId) -> Result<usize> {
        Ok(self.children_of(node).len())
    }

    fn children(&self, node: NodeId) -> Result<Vec<NodeId>> {
        Ok(self.children_of(node).to_vec())
    }

    fn children_range(&self, node: NodeId, from: usize, count: usize) -> Result<Vec<NodeId>> {
        let children = self.children_of(node);
        let from = from.min(children.len());
        let end = from.saturating_add(count).min(children.len());
        Ok(children[from..end].to_vec())
    }
}
