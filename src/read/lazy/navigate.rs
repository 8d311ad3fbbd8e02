//! Finding one's way around a node, for viewers and IDEs: a thread's top
//! level a page at a time, a node's ancestors, its place among its
//! siblings.
//!
//! A node's place is found by bisection over its parent's children,
//! which lie in stream order: each probe asks for one child by index
//! ([`LazyTraceReader::children_range`]), so finding it costs about
//! log₂(children) lookups in the parent's page index, never a scan of
//! its siblings.

use super::{LazyNode, LazyTraceReader, Paging};
use crate::common::ThreadId;
use crate::error::Result;

impl LazyTraceReader {
    /// How many top-level tracepoints `thread` has (0 for a thread the
    /// trace does not have).
    pub fn root_count(&self, thread: ThreadId) -> Result<usize> {
        let Some(slot) = self.lookup.blocks.slot(thread) else {
            return Ok(0);
        };
        let scope = self.top_scope(slot);
        if scope.start >= scope.end {
            return Ok(0);
        }
        Ok(match self.paging(scope)? {
            Paging::One(page) => page.len(),
            Paging::Many(index) => index.count,
        })
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

    /// The place of `node` among its parent's children, or among its
    /// thread's top-level tracepoints: the `i` for which
    /// `children_range(parent, i, 1)` (or `roots_range`) gives `node`.
    pub fn position(&self, node: LazyNode) -> Result<usize> {
        let parent = self.parent(node)?;
        let thread = self.node_thread(node);
        let count = match parent {
            Some(parent) => self.child_count(parent)?,
            None => self.root_count(thread)?,
        };
        let nth = |i: usize| -> Result<Option<LazyNode>> {
            Ok(match parent {
                Some(parent) => self.children_range(parent, i, 1)?,
                None => self.roots_range(thread, i, 1)?,
            }
            .pop())
        };
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
            _ => Err(crate::error::Error::NoSuchNode(format!(
                "no child of its parent starts at offset {}",
                node.at
            ))),
        }
    }
}
