//! The view as a [`Navigate`]: a node's place found from its raw one.
//!
//! A view node's handle is the handle of the raw child it stands for
//! (`at`), so a handle names the same node in every reader of the trace,
//! raw or post-processed. The view's path to a raw node is read off the
//! raw ancestors, outermost first: each is decided as the view decides a
//! child, and the path goes on below the raw node the decision shows (a
//! replaced call shows a descendant on the same chain). A raw node whose
//! path runs into a dropped node, or below a call that became a leaf, is
//! hidden by the view. Positions and the pre-order scan children lists as
//! [`TraceTree::children`] lists them ([`Children`]); a pre-order resumed
//! after a node does not show it again in its list's repeated slots, so a
//! find next never meets the same node twice.

use crate::common::{EventId, ThreadId};
use crate::error::{Error, NodeProblem, Result};
use crate::read::{ChildCount, NodeHandle};
use crate::tree::{Navigate, PreOrder, TraceTree};

use super::slots::Children;
use super::{CHAIN_LIMIT, PostNode, Postprocessed, SCAN_PAGE};

impl<T: Navigate> Postprocessed<T> {
    /// The view's path from the top down to the node standing for raw
    /// node `raw`, or showing it; `None` when the view hides it.
    fn path_to(&self, raw: T::Node) -> Result<Option<Vec<PostNode<T::Node>>>> {
        let mut chain = self.inner.ancestors(raw)?;
        chain.push(raw);
        let mut path = Vec::new();
        let mut at = 0;
        while at < chain.len() {
            let Some(node) = self.resolve(chain[at], CHAIN_LIMIT)? else {
                return Ok(None);
            };
            path.push(node);
            match chain[at..].iter().position(|&step| step == node.inner) {
                Some(shown) => at += shown + 1,
                // The raw node itself, become a leaf below it.
                None if at + 1 == chain.len() => at += 1,
                None => return Ok(None),
            }
        }
        Ok(Some(path))
    }

    /// The view's path down to `node`, itself last.
    fn path_of(&self, node: PostNode<T::Node>) -> Result<Vec<PostNode<T::Node>>> {
        match self.path_to(node.at)? {
            Some(path) if path.last() == Some(&node) => Ok(path),
            _ => Err(self.hidden(node.at)),
        }
    }

    fn hidden(&self, raw: T::Node) -> Error {
        let handle = self.inner.handle(raw);
        Error::NoSuchNode(NodeProblem::Hidden {
            thread: handle.thread,
            at: handle.offset,
        })
    }

    /// The children of `parent`, or `thread`'s roots.
    fn siblings(
        &self,
        thread: ThreadId,
        parent: Option<PostNode<T::Node>>,
    ) -> Result<Level<'_, T>> {
        Ok(match parent {
            Some(parent) => Level::Children(Children::new(self, parent)?),
            None => Level::Roots(self.roots(thread)?.into_iter()),
        })
    }
}

impl<T: Navigate> Navigate for Postprocessed<T> {
    fn node_thread(&self, node: Self::Node) -> ThreadId {
        self.inner.node_thread(node.at)
    }

    fn handle(&self, node: Self::Node) -> NodeHandle {
        self.inner.handle(node.at)
    }

    fn resolve_handle(&self, handle: NodeHandle) -> Result<Self::Node> {
        let raw = self.inner.resolve_handle(handle)?;
        match self.path_to(raw)?.and_then(|path| path.last().copied()) {
            Some(node) if node.at == raw => Ok(node),
            _ => Err(self.hidden(raw)),
        }
    }

    fn ancestors(&self, node: Self::Node) -> Result<Vec<Self::Node>> {
        let mut path = self.path_of(node)?;
        path.pop();
        Ok(path)
    }

    fn position(&self, node: Self::Node) -> Result<usize> {
        let parent = self.ancestors(node)?.last().copied();
        let thread = self.node_thread(node);
        for (index, sibling) in self.siblings(thread, parent)?.enumerate() {
            if sibling? == node {
                return Ok(index);
            }
        }
        Err(Error::NoSuchNode(NodeProblem::NotAChild(
            self.inner.handle(node.at).offset,
        )))
    }

    fn node_by_event(&self, event: EventId) -> Result<Option<Self::Node>> {
        let Some(raw) = self.inner.node_by_event(event)? else {
            return Ok(None);
        };
        Ok(self
            .path_to(raw)?
            .and_then(|path| path.last().copied())
            .filter(|node| node.inner == raw))
    }

    /// Exact for lists of up to a page of raw children (kept by the view
    /// once counted); past that, at least 1 once a kept child is found
    /// (the view's count takes a scan: [`child_count`](TraceTree::child_count)).
    fn quick_child_count(&self, node: Self::Node) -> Result<ChildCount> {
        if !self.is_container(node)? {
            return Ok(ChildCount::Exact(0));
        }
        match self.inner.quick_child_count(node.inner)? {
            ChildCount::Exact(n) if n <= SCAN_PAGE => self
                .memo
                .counts
                .get(self.inner.handle(node.inner), || self.child_count(node))
                .map(ChildCount::Exact),
            _ => Ok(match self.scan_children(node, 1, |_| {})? {
                0 => ChildCount::Exact(0),
                _ => ChildCount::AtLeast(1),
            }),
        }
    }

    fn last_child(&self, node: Self::Node) -> Result<Option<Self::Node>> {
        let mut last = None;
        for child in Children::new(self, node)? {
            last = Some(child?);
        }
        Ok(last)
    }

    fn is_diff(&self) -> Result<bool> {
        self.inner.is_diff()
    }

    fn thread_name(&self, thread: ThreadId) -> Option<String> {
        self.inner.thread_name(thread)
    }

    fn thread_nodes(&self, thread: ThreadId) -> PreOrder<'_, Self::Node> {
        Box::new(ViewPreOrder {
            view: self,
            levels: match self.siblings(thread, None) {
                Ok(roots) => vec![(roots, 0)],
                Err(error) => vec![(Level::Failed(Some(error)), 0)],
            },
        })
    }

    fn following(&self, node: Self::Node) -> Result<PreOrder<'_, Self::Node>> {
        let thread = self.node_thread(node);
        let mut chain = self.ancestors(node)?;
        chain.push(node);
        let mut levels = Vec::with_capacity(chain.len() + 1);
        let mut parent = None;
        for (depth, &step) in chain.iter().enumerate() {
            let mut level = self.siblings(thread, parent)?;
            if !level.pass(step)? {
                return Err(Error::NoSuchNode(NodeProblem::NotAChild(
                    self.inner.handle(step.at).offset,
                )));
            }
            levels.push((level, depth));
            parent = Some(step);
        }
        levels.push((Level::Children(Children::new(self, node)?), chain.len()));
        Ok(Box::new(ViewPreOrder { view: self, levels }))
    }
}

/// One list a pre-order of the view is in.
enum Level<'v, T: TraceTree> {
    Roots(std::vec::IntoIter<PostNode<T::Node>>),
    Children(Children<'v, T>),
    /// A list that could not be read: its error, once.
    Failed(Option<Error>),
}

impl<T: TraceTree> Level<'_, T> {
    /// Skips the list up to `node`; false when it is not in it.
    fn pass(&mut self, node: PostNode<T::Node>) -> Result<bool> {
        match self {
            Level::Roots(roots) => Ok(roots.any(|root| root == node)),
            Level::Children(children) => children.pass(node),
            Level::Failed(error) => Err(error
                .take()
                .unwrap_or_else(|| Error::internal("a failed list of the view read twice"))),
        }
    }

    fn next(&mut self) -> Option<Result<PostNode<T::Node>>> {
        match self {
            Level::Roots(roots) => roots.next().map(Ok),
            Level::Children(children) => children.next(),
            Level::Failed(error) => error.take().map(Err),
        }
    }
}

impl<T: TraceTree> Iterator for Level<'_, T> {
    type Item = Result<PostNode<T::Node>>;

    fn next(&mut self) -> Option<Self::Item> {
        Level::next(self)
    }
}

/// The view's nodes in pre-order, a list per open container.
struct ViewPreOrder<'v, T: TraceTree> {
    view: &'v Postprocessed<T>,
    levels: Vec<(Level<'v, T>, usize)>,
}

impl<T: TraceTree> Iterator for ViewPreOrder<'_, T> {
    type Item = Result<(PostNode<T::Node>, usize)>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let (level, depth) = self.levels.last_mut()?;
            let depth = *depth;
            let node = match level.next() {
                None => {
                    self.levels.pop();
                    continue;
                }
                Some(Err(error)) => return Some(Err(error)),
                Some(Ok(node)) => node,
            };
            let below = match Children::new(self.view, node) {
                Ok(children) => Level::Children(children),
                Err(error) => Level::Failed(Some(error)),
            };
            self.levels.push((below, depth + 1));
            return Some(Ok((node, depth)));
        }
    }
}
