//! The lazy reader as a [`TraceTree`]: node-by-node access through its
//! cache, whole-tree walks streamed through its threads' data.

use crate::common::{EventId, ThreadId};
use crate::error::Result;
use crate::format::TraceContext;
use crate::model::{Footer, Tracepoint};
use crate::read::Flow;
use crate::read::{
    ChildCount, LazyNode, LazyTraceReader, NodeHandle, RawSubtree, Visit, VisitDetail,
};
use crate::tree::{Navigate, PreOrder, Prune, TraceTree};

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

    fn raw_subtree(&self, node: LazyNode) -> Result<Option<RawSubtree<'_>>> {
        LazyTraceReader::raw_subtree(self, node)
    }

    /// Jumps over a subtree left, to its footer, in the stream.
    fn walk_visit_pruned(
        &self,
        roots: &[LazyNode],
        detail: VisitDetail,
        mut f: impl FnMut(Visit<'_, LazyNode>) -> Result<Prune>,
    ) -> Result<()> {
        self.walk_visit_roots(roots, None, detail, &mut |visit| {
            Ok(match f(visit)? {
                Prune::Go => Flow::Go,
                Prune::Leave(depth) => Flow::Leave(depth),
            })
        })
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

impl Navigate for LazyTraceReader {
    fn node_thread(&self, node: LazyNode) -> ThreadId {
        LazyTraceReader::node_thread(self, node)
    }

    fn handle(&self, node: LazyNode) -> NodeHandle {
        LazyTraceReader::handle(self, node)
    }

    fn resolve_handle(&self, handle: NodeHandle) -> Result<LazyNode> {
        LazyTraceReader::resolve_handle(self, handle)
    }

    fn ancestors(&self, node: LazyNode) -> Result<Vec<LazyNode>> {
        LazyTraceReader::ancestors(self, node)
    }

    fn parent(&self, node: LazyNode) -> Result<Option<LazyNode>> {
        LazyTraceReader::parent(self, node)
    }

    fn position(&self, node: LazyNode) -> Result<usize> {
        LazyTraceReader::position(self, node)
    }

    fn node_by_event(&self, event: EventId) -> Result<Option<LazyNode>> {
        LazyTraceReader::node_by_event(self, event)
    }

    fn root_count(&self, thread: ThreadId) -> Result<usize> {
        LazyTraceReader::root_count(self, thread)
    }

    fn roots_range(&self, thread: ThreadId, from: usize, count: usize) -> Result<Vec<LazyNode>> {
        LazyTraceReader::roots_range(self, thread, from, count)
    }

    fn quick_child_count(&self, node: LazyNode) -> Result<ChildCount> {
        LazyTraceReader::quick_child_count(self, node)
    }

    fn last_child(&self, node: LazyNode) -> Result<Option<LazyNode>> {
        LazyTraceReader::last_child(self, node)
    }

    fn is_diff(&self) -> Result<bool> {
        LazyTraceReader::is_diff(self)
    }

    fn thread_name(&self, thread: ThreadId) -> Option<String> {
        LazyTraceReader::thread_name(self, thread)
    }

    fn thread_nodes(&self, thread: ThreadId) -> PreOrder<'_, LazyNode> {
        Box::new(LazyTraceReader::thread_nodes(self, thread))
    }

    fn following(&self, node: LazyNode) -> Result<PreOrder<'_, LazyNode>> {
        Ok(Box::new(LazyTraceReader::following(self, node)?))
    }
}
