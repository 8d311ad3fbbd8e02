//! Finding nodes and children: a thread's roots, a node's data (`node`),
//! its children by page, its parent and a node by event id (this file);
//! the scopes those are listed in and the scans of unindexed children
//! (`scopes.rs`); short calls and parents read whole from one read of their
//! bytes (`short.rs`), and container headers found from their cells
//! (`headers.rs`); ancestors, positions, last children and quick counts
//! (`navigate.rs`); handles that outlive a reader and the paged iterators
//! (`iterate.rs`).
//!
//! Invariant: a lookup through the index's cells that the data contradicts
//! distrusts the thread's table and answers again from a scan
//! (`trusting`), so a damaged index costs time, never a wrong answer.

mod headers;
mod iterate;
mod navigate;
mod scopes;
mod short;

pub use iterate::NodeHandle;
pub use navigate::ChildCount;

use crate::read::lazy::*;

impl LazyTraceReader {
    /// A thread's top-level tracepoints (normally its one root call).
    pub fn roots(&self, thread: ThreadId) -> Result<Vec<LazyNode>> {
        self.roots_range(thread, 0, usize::MAX)
    }

    /// A thread's first top-level tracepoint: its root call.
    pub fn root(&self, thread: ThreadId) -> Result<Option<LazyNode>> {
        Ok(self.roots_range(thread, 0, 1)?.pop())
    }

    /// A node's tracepoint, footer and content range. A short call is read
    /// whole from one read of its bytes, and its first page of children
    /// cached with it (see `short.rs`).
    pub fn node(&self, node: LazyNode) -> Result<Arc<NodeData>> {
        self.own(node)?;
        let key = Key::Node {
            slot: node.slot,
            at: node.at.0,
        };
        let mut first_page = None;
        let entry = self.cache.get_or_build(key, || {
            let data = match self.node_at_once(node) {
                Some((data, page)) => {
                    first_page = page;
                    data
                }
                None => self.decode_node(node)?,
            };
            Ok(Entry::Node(Arc::new(data)))
        })?;
        let data = match entry.into_node() {
            Some(data) => data,
            // Node keys hold nodes; the fallback only keeps this total.
            None => return self.decode_node(node).map(Arc::new),
        };
        if let (Some(page), Some(scope)) = (first_page, Self::scope_of(node, &data)) {
            let key = self.page_key(scope, 0);
            if !self.cache.contains(&key) {
                self.cache.insert(key, Entry::Page(page));
            }
        }
        Ok(data)
    }

    /// How many direct children a node has. The first call on a container
    /// scans its content once (skipping the children's own subtrees).
    pub fn child_count(&self, node: LazyNode) -> Result<usize> {
        match Self::scope_of(node, &*self.node(node)?) {
            Some(scope) => self.scope_count(scope),
            None => Ok(0),
        }
    }

    /// A node's direct children, in order.
    pub fn children(&self, node: LazyNode) -> Result<Vec<LazyNode>> {
        self.children_range(node, 0, usize::MAX)
    }

    /// The direct children `[from, from + count)` of a node (fewer at the
    /// end). Scans only the pages of children asked for, plus, for pages
    /// after the first, one scan of the content to find where pages start.
    pub fn children_range(
        &self,
        node: LazyNode,
        from: usize,
        count: usize,
    ) -> Result<Vec<LazyNode>> {
        match Self::scope_of(node, &*self.node(node)?) {
            Some(scope) => self.scope_children(scope, from, count),
            None => Ok(Vec::new()),
        }
    }

    /// The container a node is a direct child of; `None` for top-level nodes.
    pub fn parent(&self, node: LazyNode) -> Result<Option<LazyNode>> {
        self.trusting(|| self.parent_once(node))
    }

    /// Runs a lookup through the container tables; if it made the reader
    /// distrust a thread's cells (they contradicted the data), runs it
    /// again over the tables found by scanning.
    fn trusting<T>(&self, f: impl Fn() -> Result<T>) -> Result<T> {
        let before = self.lookup.distrusted();
        match f() {
            Err(_) if self.lookup.distrusted() != before => f(),
            result => result,
        }
    }

    fn parent_once(&self, node: LazyNode) -> Result<Option<LazyNode>> {
        let slot = self.own(node)?;
        // From the bytes near the node where it can (`short.rs`), else
        // through the container table and the headers.
        if let Some(parent) = self.parent_near(node) {
            return Ok(parent);
        }
        let (table, cells) = self.containers(slot)?;
        let mut enclosing = table.last_starting_at_or_before(cells, node.at);
        while let Some(k) = enclosing {
            if node.at < table.end(cells, k) {
                break;
            }
            enclosing = table.parent(cells, k);
        }
        // Its header must end where its cell says its content starts
        // (otherwise the thread's cells are distrusted and the call
        // retried), so its content can be scanned from there.
        let (found, mut scope) = match enclosing {
            Some(k) => (
                Some(self.container_node(slot, k)?),
                self.container_scope(slot, k)?,
            ),
            None => (None, self.top_scope(slot)),
        };
        // A container without a trusted cell may lie between that
        // container and the node: one the index has no cell for, or one
        // whose cell's start was moved past the node (nothing contradicts
        // such a cell until a lookup goes through it). The headers decide:
        // the last direct child before the node, if it is a container
        // holding the node, is a nearer ancestor.
        let mut parent = found;
        while let Some(at) = self.last_child_before_near(scope, node.at)? {
            let child = self.node_at(slot, at);
            match self.scope(child)? {
                Some(inner) if inner.start <= node.at && node.at < inner.end => {
                    parent = Some(child);
                    scope = inner;
                }
                _ => break,
            }
        }
        Ok(parent)
    }

    /// The node of the tracepoint with event id `event`.
    ///
    /// A container is found through the index; a leaf through the
    /// containers around it, which needs event ids to ascend in each
    /// thread's pre-order (they do in what real recorders write). A thread
    /// where they do not is searched by a sequential scan.
    pub fn node_by_event(&self, event: EventId) -> Result<Option<LazyNode>> {
        self.trusting(|| self.node_by_event_once(event))
    }

    fn node_by_event_once(&self, event: EventId) -> Result<Option<LazyNode>> {
        let threads = self.lookup.blocks.thread_count();
        for slot in 0..threads {
            let (table, cells) = self.containers(slot)?;
            if let Some(k) = table.find_event(cells, event) {
                let node = self.container_node(slot, k)?;
                if self.stream(slot).header(node.at)?.event != event {
                    return Err(self.contradicted(
                        slot,
                        format!("the cell of event id {event} leads to another container"),
                    ));
                }
                return Ok(Some(node));
            }
        }
        // Threads where the container before `event` is nearest first.
        let mut candidates: Vec<(u64, usize, Option<usize>)> = Vec::new();
        let mut unordered = Vec::new();
        for slot in 0..threads {
            let (table, cells) = self.containers(slot)?;
            if !table.events_ascend() {
                unordered.push(slot);
                continue;
            }
            let before = table.last_event_below(cells, event);
            let gap = before.map_or(u64::MAX, |k| {
                (event.0 as i64 - table.event(cells, k).0 as i64) as u64
            });
            candidates.push((gap, slot, before));
        }
        candidates.sort_unstable();
        for (_, slot, before) in candidates {
            // The tracepoint is a child of that container or of one of its
            // ancestors, or at the top level.
            let (table, cells) = self.containers(slot)?;
            let mut container = before;
            loop {
                let scope = match container {
                    Some(k) => self.container_scope(slot, k)?,
                    None => self.top_scope(slot),
                };
                let found = self.find_by_event_in(scope, event);
                if let Some(node) = self.through_cell(slot, container, found)? {
                    return Ok(Some(node));
                }
                match container {
                    Some(k) => container = table.parent(cells, k),
                    None => break,
                }
            }
        }
        for slot in unordered {
            let mut found = None;
            self.walk_thread(
                self.lookup.blocks.thread(slot).thread,
                WalkDetail::Headers,
                |walked| {
                    if walked.header.event == event {
                        found = Some(walked.node);
                    }
                    Ok(found.is_none())
                },
            )?;
            if found.is_some() {
                return Ok(found);
            }
        }
        Ok(None)
    }
}
