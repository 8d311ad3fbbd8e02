//! Finding one's way around a node, for viewers and IDEs: a thread's top
//! level a page at a time, a node's ancestors, its place among its
//! siblings, and its child count as far as it is known without a scan.
//!
//! Counting a container's children scans its content once (skipping the
//! children's own subtrees): milliseconds for thousands of children, a
//! fraction of a second for tens of millions. [`ChildCount`] lets a viewer
//! show a row at once and leave that scan to a thread of its own.
//!
//! A node's place is found by bisection over its parent's children,
//! which lie in stream order: each probe asks for one child by index
//! ([`LazyTraceReader::children_range`]), so finding it costs about
//! log₂(children) lookups in the parent's page index, never a scan of
//! its siblings.

use crate::common::ThreadId;
use crate::error::{Error, NodeProblem, Result};
use crate::model::DiffStatus;
use crate::read::lazy::cache::PAGE;
use crate::read::lazy::{LazyNode, LazyTraceReader};
use crate::storage::diff_map::DiffMap;

/// A node's number of direct children, as far as
/// [`LazyTraceReader::quick_child_count`] knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildCount {
    /// Exactly this many.
    Exact(usize),
    /// At least this many (a page of children or more);
    /// [`LazyTraceReader::child_count`] counts the rest.
    AtLeast(usize),
}

impl ChildCount {
    /// The exact count, when known.
    pub fn exact(self) -> Option<usize> {
        match self {
            ChildCount::Exact(n) => Some(n),
            ChildCount::AtLeast(_) => None,
        }
    }

    /// The count, or its lower bound.
    pub fn at_least(self) -> usize {
        match self {
            ChildCount::Exact(n) | ChildCount::AtLeast(n) => n,
        }
    }
}

impl LazyTraceReader {
    /// How many direct children `node` has, without scanning its content:
    /// exact when they fit in its first page of children or were counted
    /// before (and the count is still cached), a lower bound otherwise.
    /// Costs at most that first page.
    pub fn quick_child_count(&self, node: LazyNode) -> Result<ChildCount> {
        let Some(scope) = self.scope(node)? else {
            return Ok(ChildCount::Exact(0));
        };
        if scope.start >= scope.end {
            return Ok(ChildCount::Exact(0));
        }
        if let Some(index) = self.cached_child_index(scope) {
            return Ok(ChildCount::Exact(index.count));
        }
        let first = self.page(scope, 0)?.len();
        Ok(if first < PAGE {
            ChildCount::Exact(first)
        } else {
            ChildCount::AtLeast(first)
        })
    }

    /// How many top-level tracepoints `thread` has (0 for a thread the
    /// trace does not have).
    pub fn root_count(&self, thread: ThreadId) -> Result<usize> {
        match self.lookup.blocks.slot(thread) {
            Some(slot) => self.scope_count(self.top_scope(slot)),
            None => Ok(0),
        }
    }

    /// The top-level tracepoints `[from, from + count)` of `thread` (fewer
    /// at the end), as [`children_range`](Self::children_range) pages a
    /// call's children.
    pub fn roots_range(
        &self,
        thread: ThreadId,
        from: usize,
        count: usize,
    ) -> Result<Vec<LazyNode>> {
        match self.lookup.blocks.slot(thread) {
            Some(slot) => self.scope_children(self.top_scope(slot), from, count),
            None => Ok(Vec::new()),
        }
    }

    /// A packed diff's map back to its two inputs: the left and right
    /// events (and threads) each of its tracepoints was made from, as the
    /// recorder library's reader gives them; `None` for a trace that is
    /// not a packed diff.
    pub fn diff_map(&self) -> Option<&DiffMap> {
        self.diff_map.as_ref()
    }

    /// Whether the trace is a diff (`tracetree diff`'s, or the recorder
    /// library's): its tracepoints carry diff statuses. Looks at the first
    /// tracepoint of each thread until one tells, and below a first
    /// tracepoint without a status at its first child (a diff's virtual
    /// root `<diff>.<root>()` has none); `false` for a trace without
    /// tracepoints.
    pub fn is_diff(&self) -> Result<bool> {
        for thread in self.thread_ids() {
            let Some(&root) = self.roots_range(thread, 0, 1)?.first() else {
                continue;
            };
            let status = self.node(root)?.tracepoint().header.diff_status;
            if status != DiffStatus::None {
                return Ok(true);
            }
            let first_child = self.children_range(root, 0, 1)?;
            return match first_child.first() {
                Some(&child) => {
                    Ok(self.node(child)?.tracepoint().header.diff_status != DiffStatus::None)
                }
                None => Ok(false),
            };
        }
        Ok(false)
    }

    /// The containers enclosing `node`, outermost (a top-level tracepoint)
    /// first; empty for a top-level node.
    pub fn ancestors(&self, node: LazyNode) -> Result<Vec<LazyNode>> {
        let mut ancestors = Vec::new();
        let mut at = node;
        while let Some(parent) = self.parent(at)? {
            ancestors.push(parent);
            at = parent;
        }
        ancestors.reverse();
        Ok(ancestors)
    }

    /// The last direct child of `node`; `None` for a leaf or a container
    /// without children. Costs a [`child_count`](Self::child_count) and
    /// the last page of children, both cached.
    pub fn last_child(&self, node: LazyNode) -> Result<Option<LazyNode>> {
        self.trusting(|| {
            let Some(last) = self.child_count(node)?.checked_sub(1) else {
                return Ok(None);
            };
            match self.children_range(node, last, 1)?.pop() {
                Some(child) => Ok(Some(child)),
                None => Err(self.contradicted(
                    node.slot as usize,
                    format!(
                        "the container at {} counts {} children but has no child {last}",
                        node.at,
                        last + 1
                    ),
                )),
            }
        })
    }

    /// The last node of `node`'s subtree in pre-order (the one with the
    /// greatest event id under it): `node` itself when it has no children,
    /// else the last descendant of its [`last_child`](Self::last_child).
    pub fn last_descendant(&self, node: LazyNode) -> Result<LazyNode> {
        let mut at = node;
        while let Some(child) = self.last_child(at)? {
            at = child;
        }
        Ok(at)
    }

    /// The place of `node` among its parent's children, or among its
    /// thread's top-level tracepoints: the `i` for which
    /// `children_range(parent, i, 1)` (or `roots_range`) gives `node`.
    pub fn position(&self, node: LazyNode) -> Result<usize> {
        // Its parent's children, or its thread's top level.
        let scope = match self.parent(node)? {
            Some(parent) => self.scope(parent)?,
            None => Some(self.top_scope(node.slot as usize)),
        };
        let Some(scope) = scope else {
            return Err(Error::NoSuchNode(NodeProblem::NotAChild(node.at)));
        };
        let count = self.scope_count(scope)?;
        let nth = |i: usize| Ok::<_, Error>(self.scope_children(scope, i, 1)?.pop());
        // The first child at or after the node's offset.
        let (mut low, mut high) = (0, count);
        while low < high {
            let mid = low + (high - low) / 2;
            match nth(mid)? {
                Some(child) if child.at < node.at => low = mid + 1,
                _ => high = mid,
            }
        }
        match nth(low)? {
            Some(child) if child == node => Ok(low),
            _ => Err(Error::NoSuchNode(NodeProblem::NotAChild(node.at))),
        }
    }
}
