//! [`Navigate`]: what an interactive front end asks of a tree beyond its
//! walks: a node's place (ancestors, position, thread), a node from an
//! event id, handles that outlive the reader's nodes, and pre-order
//! iterators a search resumes from. The lazy reader answers from its
//! lookups; [`Postprocessed`](super::Postprocessed) from the reader's,
//! mapped through the view. The viewer, the service and the searches' find
//! next and previous run on any `Navigate`.

use crate::common::{EventId, ThreadId};
use crate::error::Result;
use crate::read::{ChildCount, NodeHandle};
use crate::tree::{TraceTree, page_of};

/// What [`Navigate::thread_nodes`] and [`Navigate::following`] return, for
/// their implementations.
pub(crate) type PreOrder<'a, N> = Box<dyn Iterator<Item = Result<(N, usize)>> + 'a>;

/// A [`TraceTree`] a front end moves about in, node by node, and searches
/// ([`SearchOptions::search`](crate::search::SearchOptions::search)).
/// Implemented by this crate's trees only (the lazy reader and its
/// post-processed view): the search's walk behind it is internal.
// Sealed by its crate-private supertrait.
#[allow(private_bounds)]
pub trait Navigate: TraceTree + super::Walk {
    /// The thread a node belongs to.
    fn node_thread(&self, node: Self::Node) -> ThreadId;

    /// A handle naming `node` across readers of the same trace (a client
    /// keeps it; [`resolve_handle`](Self::resolve_handle) gives the node
    /// back).
    fn handle(&self, node: Self::Node) -> NodeHandle;

    /// The node a handle names; an [`Error::NoSuchNode`](crate::Error::NoSuchNode)
    /// when none does.
    fn resolve_handle(&self, handle: NodeHandle) -> Result<Self::Node>;

    /// The containers above `node`, outermost first.
    fn ancestors(&self, node: Self::Node) -> Result<Vec<Self::Node>>;

    /// The container `node` is in; `None` at the top of its thread.
    fn parent(&self, node: Self::Node) -> Result<Option<Self::Node>> {
        Ok(self.ancestors(node)?.pop())
    }

    /// `node`'s place among its parent's children (or its thread's roots).
    fn position(&self, node: Self::Node) -> Result<usize>;

    /// The node of the tracepoint with this event id, `None` when there is
    /// none (or the tree does not show it).
    fn node_by_event(&self, event: EventId) -> Result<Option<Self::Node>>;

    /// How many top-level tracepoints a thread has.
    fn root_count(&self, thread: ThreadId) -> Result<usize> {
        Ok(self.roots(thread)?.len())
    }

    /// A thread's top-level tracepoints `[from, from + count)`.
    fn roots_range(&self, thread: ThreadId, from: usize, count: usize) -> Result<Vec<Self::Node>> {
        Ok(page_of(self.roots(thread)?, from, count))
    }

    /// A node's child count when it is cheap to know, else a lower bound
    /// ([`child_count`](TraceTree::child_count) counts).
    fn quick_child_count(&self, node: Self::Node) -> Result<ChildCount> {
        self.child_count(node).map(ChildCount::Exact)
    }

    /// A node's last child.
    fn last_child(&self, node: Self::Node) -> Result<Option<Self::Node>> {
        Ok(self.children(node)?.pop())
    }

    /// Whether the trace is a diff (its tracepoints carry diff statuses).
    fn is_diff(&self) -> Result<bool>;

    /// A thread's recorded name.
    fn thread_name(&self, thread: ThreadId) -> Option<String>;

    /// Every node of `thread` in pre-order, with its depth (the thread's
    /// top-level tracepoints at 0).
    fn thread_nodes(
        &self,
        thread: ThreadId,
    ) -> Box<dyn Iterator<Item = Result<(Self::Node, usize)>> + '_>;

    /// The nodes after `node` in its thread's pre-order: its descendants,
    /// then its later siblings' subtrees, then those of its ancestors'
    /// later siblings; each with its depth, as
    /// [`thread_nodes`](Self::thread_nodes) gives it.
    #[allow(clippy::type_complexity)]
    fn following(
        &self,
        node: Self::Node,
    ) -> Result<Box<dyn Iterator<Item = Result<(Self::Node, usize)>> + '_>>;
}
