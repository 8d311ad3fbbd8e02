//! The lazy reader as a [`TraceTree`]: node-by-node access through its
//! cache, whole-tree walks streamed through its threads' data.

use crate::common::ThreadId;
use crate::error::Result;
use crate::format::TraceContext;
use crate::model::{Footer, Tracepoint};
use crate::read::{LazyNode, LazyTraceReader, Visit, VisitDetail};
use crate::tree::TraceTree;

impl TraceTree for LazyTraceReader {
    type Node = LazyNode;

    fn context(&self) -> &TraceContext {
        LazyTraceReader::context(self)
    }

    fn thread_ids(&self) -> Vec<ThreadId> {
        LazyTraceReader::thread_ids(self)
    }

    fn roots(&self, thread: ThreadId) -> Result<Vec<LazyNode>> {
        LazyTraceReader::roots(self, thread)
    }

    fn visit<R>(
        &self,
        node: LazyNode,
        f: impl FnOnce(&Tracepoint<'_>, Option<&Footer<'_>>) -> R,
    ) -> Result<R> {
        let data = self.node(node)?;
        Ok(f(&data.tracepoint, data.footer.as_ref()))
    }

    fn child_count(&self, node: LazyNode) -> Result<usize> {
        LazyTraceReader::child_count(self, node)
    }

    fn children(&self, node: LazyNode) -> Result<Vec<LazyNode>> {
        LazyTraceReader::children(self, node)
    }

    fn children_range(&self, node: LazyNode, from: usize, count: usize) -> Result<Vec<LazyNode>> {
        LazyTraceReader::children_range(self, node, from, count)
    }

    /// Reads each root's subtree once through its thread's stream, decoding
    /// in place and caching nothing, instead of loading every node and
    /// child list through the cache.
    fn walk_visit(
        &self,
        roots: &[LazyNode],
        max_depth: Option<usize>,
        detail: VisitDetail,
        mut f: impl FnMut(Visit<'_, LazyNode>) -> Result<()>,
    ) -> Result<()> {
        self.walk_visit_roots(roots, max_depth, detail, &mut f)
    }

    /// Reads the stretch of the parent's content that holds those children
    /// in one pass, as [`walk_visit`](TraceTree::walk_visit) reads a root's
    /// subtree: one walk, not one per child.
    fn walk_visit_children(
        &self,
        parent: LazyNode,
        from: usize,
        count: usize,
        max_depth: Option<usize>,
        detail: VisitDetail,
        mut f: impl FnMut(Visit<'_, LazyNode>) -> Result<()>,
    ) -> Result<()> {
        self.walk_visit_children_of(parent, from, count, max_depth, detail, &mut f)
    }

    /// Cuts after child containers found through the container table
    /// ([`LazyTraceReader::sibling_cuts`]), without counting the children.
    fn sibling_cuts(&self, node: LazyNode, bytes: u64) -> Result<Option<Vec<LazyNode>>> {
        LazyTraceReader::sibling_cuts(self, node, bytes)
    }

    /// Reads the run's stretch of the parent's content in one pass.
    fn walk_visit_siblings(
        &self,
        parent: LazyNode,
        first: Option<LazyNode>,
        next: Option<LazyNode>,
        max_depth: Option<usize>,
        detail: VisitDetail,
        mut f: impl FnMut(Visit<'_, LazyNode>) -> Result<()>,
    ) -> Result<()> {
        LazyTraceReader::walk_visit_siblings(self, parent, first, next, max_depth, detail, &mut f)
    }
}
