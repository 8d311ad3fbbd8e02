//! [`TraceTree`]: a trace seen as one tree of tracepoints per thread,
//! whichever reader produced it. The printer and the JSON dump walk any
//! `TraceTree`, so the eager loader and the lazy reader print alike.

use crate::error::Result;
use crate::format::offset::ThreadId;
use crate::model::{Footer, TraceContext, Tracepoint};
use crate::read::{EagerTrace, NodeId};

/// A forest of tracepoints, one tree per thread.
pub trait TraceTree {
    /// A handle to one node; cheap to copy.
    type Node: Copy;

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
}

impl TraceTree for EagerTrace {
    type Node = NodeId;

    fn context(&self) -> &TraceContext {
        EagerTrace::context(self)
    }

    fn thread_ids(&self) -> Vec<ThreadId> {
        self.threads().iter().map(|thread| thread.thread).collect()
    }

    fn roots(&self, thread: ThreadId) -> Result<Vec<NodeId>> {
        Ok(self
            .threads()
            .iter()
            .find(|t| t.thread == thread)
            .map(|t| t.roots.clone())
            .unwrap_or_default())
    }

    fn visit<R>(
        &self,
        node: NodeId,
        f: impl FnOnce(&Tracepoint<'_>, Option<&Footer<'_>>) -> R,
    ) -> Result<R> {
        let node = self.node(node);
        Ok(f(&node.tracepoint, node.footer.as_ref()))
    }

    fn child_count(&self, node: NodeId) -> Result<usize> {
        Ok(self.node(node).children.len())
    }

    fn children(&self, node: NodeId) -> Result<Vec<NodeId>> {
        Ok(self.node(node).children.clone())
    }
}
