//! Handles an embedder can keep, and iterators over a node's children,
//! its subtree, and everything after it in its thread.
//!
//! A [`NodeHandle`] is a node's thread and logical offset: plain numbers
//! that stay valid for the same trace in a later process (a bookmark, an
//! IDE's selection), where a [`LazyNode`] is meaningful only to the reader
//! that made it. [`LazyTraceReader::resolve_handle`] checks that the offset is
//! where one of the thread's tracepoints starts.
//!
//! The iterators ask the reader for a page of children at a time
//! (`children_range`), so they start at once on a call with millions of
//! children and hold one page per open level: memory O(depth × page).
//! [`PreOrder`] is a stack of such pages. Started at a node's children it
//! is the node's subtree ([`LazyTraceReader::subtree`]); started at the
//! siblings after each of a node's ancestors and after the node itself it
//! is the rest of the thread ([`LazyTraceReader::following`]), which is
//! how a find-next resumes from the last hit. For a whole thread or
//! subtree, [`LazyTraceReader::walk_subtree`] reads the stream once and is
//! faster; these serve a few steps at a time.

use crate::common::{LogicalOffset, ThreadId};
use crate::error::{Error, NodeProblem, Result};
use crate::read::lazy::{LazyNode, LazyTraceReader};

/// Children asked of the reader at a time.
const ITERATOR_PAGE: usize = 256;

/// A node's address that outlives its reader: its thread and the logical
/// offset of its tracepoint in that thread's stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeHandle {
    /// The node's thread.
    pub thread: ThreadId,
    /// Where its tracepoint starts in the thread's logical stream.
    pub offset: LogicalOffset,
}

/// Whose children a [`Children`] iterator lists.
#[derive(Debug, Clone, Copy)]
enum Parent {
    Thread(ThreadId),
    Node(LazyNode),
}

/// The children of a node, or a thread's top-level tracepoints, in order,
/// a page at a time ([`LazyTraceReader::children_iter`],
/// [`LazyTraceReader::roots_iter`]).
#[derive(Debug)]
pub(crate) struct Children<'r> {
    reader: &'r LazyTraceReader,
    parent: Parent,
    /// The index of the first child in `page`.
    next: usize,
    page: std::vec::IntoIter<LazyNode>,
    done: bool,
}

impl<'r> Children<'r> {
    fn new(reader: &'r LazyTraceReader, parent: Parent, from: usize) -> Self {
        Children {
            reader,
            parent,
            next: from,
            page: Vec::new().into_iter(),
            done: false,
        }
    }
}

impl Iterator for Children<'_> {
    type Item = Result<LazyNode>;

    fn next(&mut self) -> Option<Result<LazyNode>> {
        if let Some(node) = self.page.next() {
            return Some(Ok(node));
        }
        if self.done {
            return None;
        }
        let page = match self.parent {
            Parent::Thread(thread) => self.reader.roots_range(thread, self.next, ITERATOR_PAGE),
            Parent::Node(node) => self.reader.children_range(node, self.next, ITERATOR_PAGE),
        };
        match page {
            Ok(page) => {
                self.done = page.len() < ITERATOR_PAGE;
                self.next += page.len();
                self.page = page.into_iter();
                self.page.next().map(Ok)
            }
            Err(error) => {
                self.done = true;
                Some(Err(error))
            }
        }
    }
}

/// Nodes in pre-order with their depths: a node's subtree
/// ([`LazyTraceReader::subtree`]) or what follows a node in its thread
/// ([`LazyTraceReader::following`]).
#[derive(Debug)]
struct PreOrder<'r> {
    reader: &'r LazyTraceReader,
    /// The node to give first (a subtree's root), with its depth.
    first: Option<(LazyNode, usize)>,
    /// Open levels, innermost last: the children still to visit, and
    /// their depth.
    levels: Vec<(Children<'r>, usize)>,
}

impl Iterator for PreOrder<'_> {
    type Item = Result<(LazyNode, usize)>;

    fn next(&mut self) -> Option<Result<(LazyNode, usize)>> {
        if let Some((node, depth)) = self.first.take() {
            self.levels
                .push((Children::new(self.reader, Parent::Node(node), 0), depth + 1));
            return Some(Ok((node, depth)));
        }
        loop {
            let (children, depth) = self.levels.last_mut()?;
            let depth = *depth;
            match children.next() {
                Some(Ok(node)) => {
                    self.levels
                        .push((Children::new(self.reader, Parent::Node(node), 0), depth + 1));
                    return Some(Ok((node, depth)));
                }
                Some(Err(error)) => {
                    self.levels.clear();
                    return Some(Err(error));
                }
                None => {
                    self.levels.pop();
                }
            }
        }
    }
}

impl LazyTraceReader {
    /// The handle of `node`, to keep beyond this reader.
    pub fn handle(&self, node: LazyNode) -> NodeHandle {
        NodeHandle {
            thread: self.node_thread(node),
            offset: node.offset(),
        }
    }

    /// The node a handle names, checked: its thread must be in the trace
    /// and a tracepoint must start at its offset, else
    /// [`Error::NoSuchNode`]. Costs what [`position`](Self::position) costs.
    pub fn resolve_handle(&self, handle: NodeHandle) -> Result<LazyNode> {
        let Some(slot) = self.lookup.blocks.slot(handle.thread) else {
            return Err(Error::NoSuchNode(NodeProblem::NoThread(handle.thread)));
        };
        let end = self.top_scope(slot).end;
        if handle.offset >= end {
            return Err(Error::NoSuchNode(NodeProblem::PastStreamEnd {
                thread: handle.thread,
                at: handle.offset,
                end,
            }));
        }
        let node = self.node_at(slot, handle.offset);
        self.position(node)?;
        Ok(node)
    }

    /// `node`'s direct children in order, a page at a time.
    pub fn children_iter(&self, node: LazyNode) -> impl Iterator<Item = Result<LazyNode>> + '_ {
        Children::new(self, Parent::Node(node), 0)
    }

    /// `thread`'s top-level tracepoints in order, a page at a time.
    pub fn roots_iter(&self, thread: ThreadId) -> impl Iterator<Item = Result<LazyNode>> + '_ {
        Children::new(self, Parent::Thread(thread), 0)
    }

    /// `node` and its descendants in pre-order, with their depths below
    /// `node` (`node` at 0).
    pub fn subtree(&self, node: LazyNode) -> impl Iterator<Item = Result<(LazyNode, usize)>> + '_ {
        PreOrder {
            reader: self,
            first: Some((node, 0)),
            levels: Vec::new(),
        }
    }

    /// Every node of `thread` in pre-order, with its depth.
    pub fn thread_nodes(
        &self,
        thread: ThreadId,
    ) -> impl Iterator<Item = Result<(LazyNode, usize)>> + '_ {
        PreOrder {
            reader: self,
            first: None,
            levels: vec![(Children::new(self, Parent::Thread(thread), 0), 0)],
        }
    }

    /// The nodes after `node` in its thread's pre-order, with their depths
    /// in the thread's tree: `node`'s descendants, then its later
    /// siblings' subtrees, then those of its ancestors' later siblings.
    /// A search resumes here from its last hit.
    pub fn following(
        &self,
        node: LazyNode,
    ) -> Result<impl Iterator<Item = Result<(LazyNode, usize)>> + '_> {
        let thread = self.node_thread(node);
        let mut chain = self.ancestors(node)?;
        chain.push(node);
        let mut levels = Vec::with_capacity(chain.len() + 1);
        let mut parent = Parent::Thread(thread);
        for (depth, &step) in chain.iter().enumerate() {
            let after = self.position(step)? + 1;
            levels.push((Children::new(self, parent, after), depth));
            parent = Parent::Node(step);
        }
        levels.push((Children::new(self, parent, 0), chain.len()));
        Ok(PreOrder {
            reader: self,
            first: None,
            levels,
        })
    }
}
