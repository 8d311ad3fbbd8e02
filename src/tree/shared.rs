//! A borrowed or shared tree is the tree: `&T` and `Arc<T>` are
//! [`TraceTree`]s (and [`Navigate`]s) that hand every call to `T`, so a view
//! such as [`Postprocessed`](super::Postprocessed) can borrow its reader
//! or share it with other threads.

use std::sync::Arc;

use crate::common::{EventId, ThreadId};
use crate::error::Result;
use crate::format::TraceContext;
use crate::model::{Footer, Tracepoint};
use crate::read::{ChildCount, NodeHandle, RawSubtree, Visit, VisitDetail};
use crate::tree::{Navigate, PreOrder, Prune, TraceTree};

macro_rules! delegate {
    ($($ty:ty: $($bound:path)?),*) => {$(
        impl<T: TraceTree $(+ $bound)?> TraceTree for $ty {
            type Node = T::Node;

            fn context(&self) -> &TraceContext {
                (**self).context()
            }

            fn thread_ids(&self) -> Vec<ThreadId> {
                (**self).thread_ids()
            }

            fn roots(&self, thread: ThreadId) -> Result<Vec<T::Node>> {
                (**self).roots(thread)
            }

            fn visit<R>(
                &self,
                node: T::Node,
                f: impl FnOnce(&Tracepoint<'_>, Option<&Footer<'_>>) -> R,
            ) -> Result<R> {
                (**self).visit(node, f)
            }

            fn child_count(&self, node: T::Node) -> Result<usize> {
                (**self).child_count(node)
            }

            fn children(&self, node: T::Node) -> Result<Vec<T::Node>> {
                (**self).children(node)
            }

            fn children_range(
                &self,
                node: T::Node,
                from: usize,
                count: usize,
            ) -> Result<Vec<T::Node>> {
                (**self).children_range(node, from, count)
            }

            fn walk(
                &self,
                roots: &[T::Node],
                f: impl FnMut(T::Node, usize) -> Result<()>,
            ) -> Result<()> {
                (**self).walk(roots, f)
            }

            fn walk_visit(
                &self,
                roots: &[T::Node],
                max_depth: Option<usize>,
                detail: VisitDetail,
                f: impl FnMut(Visit<'_, T::Node>) -> Result<()>,
            ) -> Result<()> {
                (**self).walk_visit(roots, max_depth, detail, f)
            }

            fn walk_visit_children(
                &self,
                parent: T::Node,
                from: usize,
                count: usize,
                max_depth: Option<usize>,
                detail: VisitDetail,
                f: impl FnMut(Visit<'_, T::Node>) -> Result<()>,
            ) -> Result<()> {
                (**self).walk_visit_children(parent, from, count, max_depth, detail, f)
            }

            fn sibling_cuts(&self, node: T::Node, bytes: u64) -> Result<Option<Vec<T::Node>>> {
                (**self).sibling_cuts(node, bytes)
            }

            fn walk_visit_siblings(
                &self,
                parent: T::Node,
                first: Option<T::Node>,
                next: Option<T::Node>,
                max_depth: Option<usize>,
                detail: VisitDetail,
                f: impl FnMut(Visit<'_, T::Node>) -> Result<()>,
            ) -> Result<()> {
                (**self).walk_visit_siblings(parent, first, next, max_depth, detail, f)
            }

            fn raw_subtree(&self, node: T::Node) -> Result<Option<RawSubtree<'_>>> {
                (**self).raw_subtree(node)
            }

            fn subtree_source(&self, node: T::Node) -> Result<Option<RawSubtree<'_>>> {
                (**self).subtree_source(node)
            }

            fn walk_visit_pruned(
                &self,
                roots: &[T::Node],
                detail: VisitDetail,
                f: impl FnMut(Visit<'_, T::Node>) -> Result<Prune>,
            ) -> Result<()> {
                (**self).walk_visit_pruned(roots, detail, f)
            }
        }

        impl<T: Navigate $(+ $bound)?> Navigate for $ty {
            fn node_thread(&self, node: T::Node) -> ThreadId {
                (**self).node_thread(node)
            }

            fn handle(&self, node: T::Node) -> NodeHandle {
                (**self).handle(node)
            }

            fn resolve_handle(&self, handle: NodeHandle) -> Result<T::Node> {
                (**self).resolve_handle(handle)
            }

            fn ancestors(&self, node: T::Node) -> Result<Vec<T::Node>> {
                (**self).ancestors(node)
            }

            fn parent(&self, node: T::Node) -> Result<Option<T::Node>> {
                (**self).parent(node)
            }

            fn position(&self, node: T::Node) -> Result<usize> {
                (**self).position(node)
            }

            fn node_by_event(&self, event: EventId) -> Result<Option<T::Node>> {
                (**self).node_by_event(event)
            }

            fn root_count(&self, thread: ThreadId) -> Result<usize> {
                (**self).root_count(thread)
            }

            fn roots_range(
                &self,
                thread: ThreadId,
                from: usize,
                count: usize,
            ) -> Result<Vec<T::Node>> {
                (**self).roots_range(thread, from, count)
            }

            fn quick_child_count(&self, node: T::Node) -> Result<ChildCount> {
                (**self).quick_child_count(node)
            }

            fn last_child(&self, node: T::Node) -> Result<Option<T::Node>> {
                (**self).last_child(node)
            }

            fn is_diff(&self) -> Result<bool> {
                (**self).is_diff()
            }

            fn thread_name(&self, thread: ThreadId) -> Option<String> {
                (**self).thread_name(thread)
            }

            fn thread_nodes(&self, thread: ThreadId) -> PreOrder<'_, T::Node> {
                (**self).thread_nodes(thread)
            }

            fn following(&self, node: T::Node) -> Result<PreOrder<'_, T::Node>> {
                (**self).following(node)
            }
        }
    )*};
}

delegate!(&T:, Arc<T>: Send);
