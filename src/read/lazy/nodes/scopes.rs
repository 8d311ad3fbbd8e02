//! Finding things: a node's scope, pages of its children, child indexes,
//! parents and nodes by event id, through the lookups.
//!
//! - **Nodes.** A `LazyNode` is (thread slot, logical offset of its
//!   tracepoint), tagged with its trace's id, so another trace's reader
//!   refuses it; `NodeHandle` is the untagged pair. A container's content
//!   starts right after its header; the container table gives its end
//!   (binary search by start; a forward scan passes a hint and gallops from
//!   the last hit, so a scan costs O(1) probes per child call). Objects
//!   never span blocks, so every decode works on one block's bytes.
//! - **Children.** A call's direct children are found by scanning its own
//!   content with `format::skip`: a leaf is stepped over, a child call
//!   jumped over to its footer through the table, reference objects
//!   skipped. Child offsets are kept in pages of 1,024; pages after the
//!   first need the *child index*, made by one scan of the content: the
//!   child count and a checkpoint (number, offset, event id) at the first
//!   child of every *stride*-th page. The stride doubles whenever the
//!   checkpoints would outgrow their share of the cache, so an index stays
//!   small; a page is scanned from the last checkpoint before it. A call
//!   whose children fit in one page needs no index. Very long calls are
//!   counted in runs of siblings on several threads (`cuts.rs`).
//! - **Parent.** Of the containers starting at or before a node and ending
//!   after it, the last by start is the candidate (per-chunk maximum ends
//!   speed the backward search). Headers then confirm it: the candidate's
//!   last direct child before the node, if it is a container holding the
//!   node (one without a cell, or whose cell's start moved), is a nearer
//!   ancestor, and so on down (`headers.rs`).
//! - **By event id.** A container through the table (event ids ascend in
//!   pre-order in what recorders write: a binary search; otherwise a
//!   sorted copy made on first use), then its header among its parent's
//!   children. A leaf: the last container before it in event order, then
//!   that container's or an ancestor's children, searched by event id page
//!   by page. Threads whose ids do not ascend are scanned.
//!
//! Invariant: a cell's start and event id are checked against the header
//! whenever a lookup goes through them; a mismatch distrusts the thread's
//! cells (its containers are found by scanning) and the call is retried
//! once (`LazyTraceReader::trusting`).

use std::collections::HashMap;
use std::sync::Arc;

pub use cache::NodeData;

use crate::common::{EventId, LogicalOffset};
use crate::error::{Error, NodeProblem, Result};
use crate::format::{Object, ObjectKind};
use crate::model::{TracepointHeader, TracepointType};
use crate::read::lazy::*;
use crate::read::lookup::IndexProblem;
use crate::read::lookup::containers::{CellView, ContainerTable};
use crate::read::lookup::stream::{Stream, scan_unindexed, unexpected};
use crate::storage::{ByteSource, Reads};
use cache::{Checkpoint, ChildIndex, Entry, Key, PAGE};

impl LazyTraceReader {
    pub(in crate::read::lazy) fn containers(
        &self,
        slot: usize,
    ) -> Result<(&ContainerTable, CellView<'_>)> {
        self.containers_read(slot, Reads::Lend)
    }

    /// Thread `slot`'s container table, its cells read as the reader's
    /// random reads are ([`Reads`], chosen at open).
    pub(in crate::read::lazy) fn random_containers(
        &self,
        slot: usize,
    ) -> Result<(&ContainerTable, CellView<'_>)> {
        self.containers_read(slot, self.reads)
    }

    fn containers_read(
        &self,
        slot: usize,
        reads: Reads,
    ) -> Result<(&ContainerTable, CellView<'_>)> {
        if !self.lookup.is_built(slot) {
            // Building reads every cell of the thread, and checks a footer
            // byte in the data per container (a page of nearly every
            // block): release them after.
            let built = self
                .lookup
                .containers_read(self.data.as_slice(), slot, reads);
            self.release_all();
            return built;
        }
        self.lookup
            .containers_read(self.data.as_slice(), slot, reads)
    }

    /// Releases every page of the data and lookup mappings (with a resident
    /// window).
    pub(in crate::read::lazy) fn release_all(&self) {
        if let Some(resident) = &self.resident {
            resident.release_all();
        }
    }

    pub(in crate::read::lazy) fn resolved_is_empty(&self) -> bool {
        self.resolved
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
    }

    /// The data file's bytes, read as random reads are ([`Reads`]).
    pub(in crate::read::lazy) fn source(&self) -> ByteSource<'_> {
        ByteSource::new(&self.data, self.reads)
    }

    pub(in crate::read::lazy) fn scan(&self, slot: usize) -> Result<Scan<'_>> {
        self.scan_through(slot, self.stream(slot), Reads::Lend)
    }

    /// A scan of thread `slot` through `stream` (the thread's, or a copy of
    /// part of it), its container cells read as `reads` says.
    pub(in crate::read::lazy) fn scan_through<'r>(
        &'r self,
        slot: usize,
        stream: Stream<'r>,
        reads: Reads,
    ) -> Result<Scan<'r>> {
        let (table, cells) = self.containers_read(slot, reads)?;
        Ok(Scan {
            slot,
            stream,
            table,
            cells,
            hint: None,
            run: None,
        })
    }

    /// A scan that goes forward, releasing what it leaves behind.
    pub(in crate::read::lazy) fn forward_scan(&self, slot: usize) -> Result<Scan<'_>> {
        let mut scan = self.scan(slot)?;
        scan.stream = scan.stream.releasing(self.resident.as_ref());
        Ok(scan)
    }

    /// Thread `slot`'s stream for random reads: it counts the blocks it
    /// enters, and reads objects alone as random reads do ([`Reads`]).
    pub(in crate::read::lazy) fn stream(&self, slot: usize) -> Stream<'_> {
        self.lookup
            .stream(self.data.as_slice(), slot)
            .counted(self.resident.as_ref())
            .reading(self.source())
    }

    pub(in crate::read::lazy) fn top_scope(&self, slot: usize) -> Scope {
        Scope {
            slot,
            start: LogicalOffset(0),
            end: LogicalOffset(self.lookup.blocks.thread(slot).len),
        }
    }

    pub(in crate::read::lazy) fn container_scope(&self, slot: usize, k: usize) -> Result<Scope> {
        let (table, cells) = self.containers(slot)?;
        Ok(Scope {
            slot,
            start: table.start(cells, k),
            end: table.end(cells, k),
        })
    }

    pub(in crate::read::lazy) fn scope(&self, node: LazyNode) -> Result<Option<Scope>> {
        Ok(Self::scope_of(node, &*self.node(node)?))
    }

    /// The scope of `node`'s children, given its data; `None` for a leaf.
    pub(in crate::read::lazy) fn scope_of(node: LazyNode, data: &NodeData) -> Option<Scope> {
        data.content.map(|content| Scope {
            slot: node.slot as usize,
            start: content.start,
            end: content.end,
        })
    }

    /// The end of a container the index has no cell for, by scanning.
    pub(in crate::read::lazy) fn resolve(
        &self,
        slot: usize,
        start: LogicalOffset,
        container: TracepointType,
        event: EventId,
    ) -> Result<LogicalOffset> {
        let known = |resolved: &HashMap<_, _>| resolved.get(&(slot, start)).copied();
        if let Some(end) = known(&self.resolved.read().unwrap_or_else(|e| e.into_inner())) {
            return Ok(end);
        }
        let (table, cells) = self.containers(slot)?;
        let mut stream = self.stream(slot);
        let found = scan_unindexed(
            &mut stream,
            &mut table.ends_by_start(cells),
            start,
            Some((container, event.0)),
        )?;
        let mut resolved = self.resolved.write().unwrap_or_else(|e| e.into_inner());
        for container in found {
            resolved.insert((slot, container.start), container.end);
        }
        known(&resolved).ok_or(Error::NoSuchNode(NodeProblem::NoContainerEnd(start)))
    }

    pub(in crate::read::lazy) fn decode_node(&self, node: LazyNode) -> Result<NodeData> {
        // A node asked for on its own may lie anywhere in the file: its
        // bytes and its container's cells are read as random reads are.
        let slot = node.slot as usize;
        let mut scan = self.scan_through(slot, self.stream(slot), self.reads)?;
        let mut buffer = Vec::new();
        let (object, len) = scan.stream.object_alone(node.at, None, &mut buffer)?;
        let Object::Tracepoint(tracepoint) = object else {
            let kind = object.kind();
            return Err(unexpected(
                &mut scan.stream,
                node.at,
                kind,
                "expected a tracepoint at a node's offset",
            ));
        };
        let tracepoint = tracepoint.into_owned();
        let start = node.at + len;
        let content = self.content_of(&mut scan, start, &tracepoint.header)?;
        let footer = match content.filter(|content| content.finished) {
            Some(content) => Some(self.footer_alone(
                &mut scan.stream,
                content.end,
                tracepoint.tracepoint_type(),
            )?),
            None => None,
        };
        Ok(NodeData {
            tracepoint,
            footer,
            content,
        })
    }

    /// The footer at `end` of a container of type `container` in
    /// `stream`'s thread, read on its own ([`Stream::footer_alone`]).
    pub(in crate::read::lazy) fn footer_alone(
        &self,
        stream: &mut Stream<'_>,
        end: LogicalOffset,
        container: TracepointType,
    ) -> Result<Footer<'static>> {
        let mut buffer = Vec::new();
        let (footer, _) = stream.footer_alone(end, container, &mut buffer)?;
        Ok(footer.into_owned())
    }

    /// Calls `f` with each direct child of `scope` from offset `from` on,
    /// until `f` returns false; returns the offset after the last child
    /// seen (when `f` stops the scan, at most the next child's offset).
    /// Children are skipped, not decoded; a child container's subtree is
    /// jumped over through its content range.
    pub(in crate::read::lazy) fn scan_children(
        &self,
        scope: Scope,
        from: LogicalOffset,
        f: impl FnMut(LogicalOffset, &TracepointHeader) -> bool,
    ) -> Result<LogicalOffset> {
        self.scan_children_after(scope, from, None, f)
    }

    /// [`scan_children`](Self::scan_children), the containers met looked
    /// up in the container table from entry `hint` on (a container known
    /// to start before `from`, such as the scope's own).
    pub(in crate::read::lazy) fn scan_children_after(
        &self,
        scope: Scope,
        from: LogicalOffset,
        hint: Option<usize>,
        mut f: impl FnMut(LogicalOffset, &TracepointHeader) -> bool,
    ) -> Result<LogicalOffset> {
        // A short call's children are read at once where they can be
        // (`short.rs`), before any is given; else the scope is scanned.
        if let Some((children, end)) = self.short_children(scope, from) {
            for (i, (at, header)) in children.iter().enumerate() {
                if !f(*at, header) {
                    return Ok(children.get(i + 1).map_or(end, |&(next, _)| next));
                }
            }
            return Ok(end);
        }
        let mut scan = self.forward_scan(scope.slot)?;
        scan.hint = hint;
        self.scan_children_in(&mut scan, scope, from, f)
    }

    /// [`scan_children`](Self::scan_children) through `scan`, a scan of
    /// the scope's thread that may go on to later scopes.
    pub(in crate::read::lazy) fn scan_children_in(
        &self,
        scan: &mut Scan<'_>,
        scope: Scope,
        from: LogicalOffset,
        mut f: impl FnMut(LogicalOffset, &TracepointHeader) -> bool,
    ) -> Result<LogicalOffset> {
        let mut at = from;
        while at < scope.end {
            let (skipped, len) = scan.stream.skip(at, None)?;
            match (skipped.kind, skipped.header) {
                (ObjectKind::Tracepoint, Some(header)) => {
                    let child = at;
                    at = match self.content_of(scan, at + len, &header)? {
                        None => at + len,
                        Some(content) if content.finished => {
                            let footer = scan
                                .stream
                                .footer_len(content.end, header.tracepoint_type)?;
                            content.end + footer
                        }
                        Some(content) => content.end,
                    };
                    if !f(child, &header) {
                        break;
                    }
                }
                (kind, _) if kind.is_reference() => at = at + len,
                (kind, _) => {
                    return Err(unexpected(
                        &mut scan.stream,
                        at,
                        kind,
                        "among a container's children",
                    ));
                }
            }
        }
        Ok(at)
    }

    /// How many children a scope has and where its pages start; scans the
    /// scope once, keeping the pages it passes while they take at most a
    /// quarter of the cache.
    pub(in crate::read::lazy) fn child_index(&self, scope: Scope) -> Result<Arc<ChildIndex>> {
        let entry = self.cache.get_or_build(self.index_key(scope), || {
            Ok(Entry::Index(Arc::new(self.scan_child_index(scope)?)))
        })?;
        // Index keys hold child indexes; the fallback only keeps this total.
        entry
            .into_index()
            .map_or_else(|| self.scan_child_index(scope).map(Arc::new), Ok)
    }

    /// Scans a scope for its child index (see [`child_index`](Self::child_index)).
    fn scan_child_index(&self, scope: Scope) -> Result<ChildIndex> {
        let most = (self.cache.index_budget() / 2 / size_of::<(LogicalOffset, EventId)>()).max(16);
        if let Some(index) = self.child_index_in_runs(scope, most)? {
            return Ok(index);
        }
        let keep_pages = self.cache.budget() / 4 / (PAGE * size_of::<LogicalOffset>());
        let mut checkpoints: Vec<Checkpoint> = Vec::new();
        let mut stride = 1;
        let mut page: Vec<LogicalOffset> = Vec::with_capacity(PAGE);
        let mut count = 0;
        let keep = |number: usize, page: &[LogicalOffset]| {
            if number < keep_pages {
                let key = self.page_key(scope, number);
                if !self.cache.contains(&key) {
                    self.cache.insert(key, Entry::Page(page.into()));
                }
            }
        };
        self.scan_children(scope, scope.start, |at, header| {
            if count % (PAGE * stride) == 0 {
                checkpoints.push(Checkpoint {
                    child: count,
                    at,
                    event: header.event,
                });
                if checkpoints.len() > most {
                    // Keep every other checkpoint: twice the stride.
                    checkpoints = checkpoints.iter().step_by(2).copied().collect();
                    stride *= 2;
                }
            }
            page.push(at);
            count += 1;
            if page.len() == PAGE {
                keep(count / PAGE - 1, &page);
                page.clear();
            }
            true
        })?;
        if !page.is_empty() {
            keep(count / PAGE, &page);
        }
        Ok(ChildIndex { count, checkpoints })
    }

    /// The scope's child index, if the cache still holds it.
    pub(in crate::read::lazy) fn cached_child_index(
        &self,
        scope: Scope,
    ) -> Option<Arc<ChildIndex>> {
        match self.cache.get(&self.index_key(scope)) {
            Some(Entry::Index(index)) => Some(index),
            _ => None,
        }
    }

    fn index_key(&self, scope: Scope) -> Key {
        Key::Index {
            slot: scope.slot as u32,
            start: scope.start.0,
        }
    }

    pub(in crate::read::lazy) fn page_key(&self, scope: Scope, page: usize) -> Key {
        Key::Page {
            slot: scope.slot as u32,
            start: scope.start.0,
            page: page as u32,
        }
    }

    /// Page `page` of a scope's child addresses. A page after the first is
    /// scanned from the checkpoint before it; the pages passed on the way
    /// are cached too (walks ask for pages in order).
    pub(in crate::read::lazy) fn page(
        &self,
        scope: Scope,
        page: usize,
    ) -> Result<Arc<[LogicalOffset]>> {
        let entry = self.cache.get_or_build(self.page_key(scope, page), || {
            Ok(Entry::Page(self.scan_page(scope, page)?))
        })?;
        // Page keys hold pages; the fallback only keeps this total.
        entry
            .into_page()
            .map_or_else(|| self.scan_page(scope, page), Ok)
    }

    /// Scans a scope for its page `page` (see [`page`](Self::page)),
    /// caching the pages it passes on the way.
    fn scan_page(&self, scope: Scope, page: usize) -> Result<Arc<[LogicalOffset]>> {
        // Where the scan starts, the first page it fills, and how many
        // children it passes before that page.
        let (from, mut number, mut skip) = if page == 0 {
            (scope.start, 0, 0)
        } else {
            let index = self.child_index(scope)?;
            let checkpoint = match index.last_passing(|c| c.child <= page * PAGE) {
                Some((checkpoint, _)) if page < index.pages() => checkpoint,
                _ => return Ok(Arc::from([])),
            };
            let first = checkpoint.child.div_ceil(PAGE);
            (checkpoint.at, first, first * PAGE - checkpoint.child)
        };
        let mut children = Vec::with_capacity(PAGE.min(64));
        let mut wanted = None;
        self.scan_children(scope, from, |at, _| {
            if skip > 0 {
                skip -= 1;
                return true;
            }
            children.push(at);
            if children.len() < PAGE {
                return true;
            }
            let full: Arc<[LogicalOffset]> = std::mem::take(&mut children).into();
            if number == page {
                wanted = Some(full);
                return false;
            }
            self.cache
                .insert(self.page_key(scope, number), Entry::Page(full));
            number += 1;
            true
        })?;
        Ok(match wanted {
            Some(full) => full,
            None if number == page => children.into(),
            None => Arc::from([]),
        })
    }

    /// How a scope's children are paged: one page, or the child index of
    /// several. Only scopes with more than one page get a child index.
    pub(in crate::read::lazy) fn paging(&self, scope: Scope) -> Result<Paging> {
        let first = self.page(scope, 0)?;
        if first.len() < PAGE {
            Ok(Paging::One(first))
        } else {
            Ok(Paging::Many(self.child_index(scope)?))
        }
    }

    /// How many direct children a scope has.
    pub(in crate::read::lazy) fn scope_count(&self, scope: Scope) -> Result<usize> {
        if scope.start >= scope.end {
            return Ok(0);
        }
        Ok(match self.paging(scope)? {
            Paging::One(page) => page.len(),
            Paging::Many(index) => index.count,
        })
    }

    /// The children `[from, from + count)` of a scope.
    pub(in crate::read::lazy) fn scope_children(
        &self,
        scope: Scope,
        from: usize,
        count: usize,
    ) -> Result<Vec<LazyNode>> {
        let mut out = Vec::new();
        if count == 0 || scope.start >= scope.end {
            return Ok(out);
        }
        let end = from.saturating_add(count);
        let slot = scope.slot as u32;
        let mut page = from / PAGE;
        loop {
            let children = self.page(scope, page)?;
            let first = page * PAGE;
            let (low, high) = (from.max(first) - first, (end - first).min(children.len()));
            if low < high {
                let slot = slot as usize;
                out.extend(children[low..high].iter().map(|&at| self.node_at(slot, at)));
            }
            if children.len() < PAGE || end <= first + PAGE {
                return Ok(out);
            }
            page += 1;
        }
    }

    /// The node of the `k`-th container of thread `slot`: its header is
    /// searched back from its content (`headers`), or else found among its
    /// parent's children (the index knows only where its content starts).
    pub(in crate::read::lazy) fn container_node(&self, slot: usize, k: usize) -> Result<LazyNode> {
        self.container_node_checking(slot, k, true)
    }

    /// [`container_node`](Self::container_node); with `check_parent`, a
    /// failed scan of the parent's content checks the parent's cell
    /// ([`through_cell`](Self::through_cell), one level: no recursion up a
    /// deep chain of corrupt scopes).
    pub(in crate::read::lazy) fn container_node_checking(
        &self,
        slot: usize,
        k: usize,
        check_parent: bool,
    ) -> Result<LazyNode> {
        if let Some(at) = self.header_of_cell(slot, k) {
            return Ok(self.node_at(slot, at));
        }
        let (table, cells) = self.containers(slot)?;
        // The parent's scope comes from its cell until it is left for a
        // container in between.
        let parent = table.parent(cells, k);
        let mut checked = parent.filter(|_| check_parent);
        let mut scope = match parent {
            Some(j) => self.container_scope(slot, j)?,
            None => self.top_scope(slot),
        };
        let start = table.start(cells, k);
        let missing = || {
            self.contradicted(
                slot,
                format!(
                    "no header for the container whose content starts at {start} in thread {}",
                    self.lookup.blocks.thread(slot).thread
                ),
            )
        };
        loop {
            let found = self.last_child_before(scope, start);
            let at = self
                .through_cell(slot, checked.take(), found)?
                .ok_or_else(missing)?;
            let node = self.node_at(slot, at);
            let (skipped, len) = self.stream(slot).skip(at, None)?;
            if !skipped
                .header
                .is_some_and(|h| h.tracepoint_type.is_container())
            {
                return Err(missing());
            }
            if at + len == start {
                return Ok(node);
            }
            // A container the index has no cell for lies in between.
            match self.scope(node)? {
                // `<=`: an unfinished container's content may end where a
                // header written last (its child's content) starts.
                Some(inner) if inner.start < start && start <= inner.end => scope = inner,
                _ => return Err(missing()),
            }
        }
    }

    /// `result` of scanning the content of thread `slot`'s `k`-th container
    /// from where its cell says the content starts. On an error, checks
    /// that start (a header must end there): if it contradicts the data,
    /// the thread's cells are distrusted and that is the error (the public
    /// call then retries); otherwise the data is corrupt and the error is
    /// the scan's. Costs nothing unless the scan failed.
    pub(in crate::read::lazy) fn through_cell<T>(
        &self,
        slot: usize,
        k: Option<usize>,
        result: Result<T>,
    ) -> Result<T> {
        match (result, k) {
            (Err(error), Some(k)) => {
                self.container_node_checking(slot, k, false)?;
                Err(error)
            }
            (result, _) => result,
        }
    }

    /// The error for a lookup whose container cell contradicts the data;
    /// the thread's cells are distrusted from then on (see
    /// [`LazyTraceReader::trusting`]).
    pub(in crate::read::lazy) fn contradicted(&self, slot: usize, what: String) -> Error {
        let problem = IndexProblem::Inconsistent(what.clone());
        self.lookup.distrust(self.data.as_slice(), slot, problem);
        Error::NoSuchNode(NodeProblem::Contradicted(what))
    }

    /// The last direct child of `scope` that starts before `start`.
    pub(in crate::read::lazy) fn last_child_before(
        &self,
        scope: Scope,
        start: LogicalOffset,
    ) -> Result<Option<LogicalOffset>> {
        match self.paging(scope)? {
            Paging::One(page) => Ok(last_before(&page, start)),
            Paging::Many(index) => {
                let Some((_, pages)) = index.last_passing(|c| c.at < start) else {
                    return Ok(None);
                };
                let mut found = None;
                for number in pages {
                    let page = self.page(scope, number)?;
                    match page.first() {
                        Some(&first) if first < start => found = last_before(&page, start),
                        _ => break,
                    }
                }
                Ok(found)
            }
        }
    }

    /// The node with event id `event` among the direct children of `scope`
    /// (whose event ids must ascend), or among the descendants of a child
    /// container the index has no cell for.
    pub(in crate::read::lazy) fn find_by_event_in(
        &self,
        mut scope: Scope,
        event: EventId,
    ) -> Result<Option<LazyNode>> {
        loop {
            let candidate = match self.search_children_by_event(scope, event)? {
                Ok(found) => return Ok(Some(found)),
                Err(None) => return Ok(None),
                Err(Some(before)) => before,
            };
            // The child before `event` may hold it, if the index has no cell
            // for it (otherwise the search started from inside it).
            let (table, cells) = self.containers(scope.slot)?;
            match self.scope(candidate)? {
                Some(inner) if table.find_start(cells, inner.start, None).is_none() => {
                    scope = inner
                }
                _ => return Ok(None),
            }
        }
    }

    /// Searches the direct children of `scope` by event id: the child with
    /// `event`, or else the last child with a smaller one.
    pub(in crate::read::lazy) fn search_children_by_event(
        &self,
        scope: Scope,
        event: EventId,
    ) -> Result<std::result::Result<LazyNode, Option<LazyNode>>> {
        if scope.start >= scope.end {
            return Ok(Err(None));
        }
        let node = |at| self.node_at(scope.slot, at);
        let mut stream = self.stream(scope.slot);
        let pages = match self.paging(scope)? {
            Paging::One(_) => 0..1,
            Paging::Many(index) => {
                let Some((_, pages)) = index.last_passing(|c| c.event <= event) else {
                    return Ok(Err(None));
                };
                pages
            }
        };
        let mut before = None;
        for number in pages {
            let children = self.page(scope, number)?;
            // Binary search by event id, decoding only headers.
            let (mut low, mut high) = (0, children.len());
            while low < high {
                let middle = (low + high) / 2;
                let found = stream.header(children[middle])?.event;
                if found == event {
                    return Ok(Ok(node(children[middle])));
                }
                if found < event {
                    low = middle + 1;
                } else {
                    high = middle;
                }
            }
            if low > 0 {
                before = Some(node(children[low - 1]));
            }
            if low < children.len() {
                break; // a later child has a greater event id
            }
        }
        Ok(Err(before))
    }
}
