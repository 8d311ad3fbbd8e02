//! A short call's node and children, and a node's parent, from one read
//! of the bytes around them: the random reads of the lazy reader.
//!
//! A node not in the cache is read whole where it is short: one read of
//! [`SHORT_CALL`] bytes from its header (through the reader's
//! [`ByteSource`](crate::storage::ByteSource): copied under a resident
//! window, so that nothing is mapped that must be counted and released,
//! else lent) holds most calls whole, parsed object by object, entering
//! every container and leaving it at its footer, so no cell is read
//! (`short_call`); a longer call takes its cells first
//! (`ContainerTable::run_from`: the search and the run after it in one
//! read where the cells lie close), then the call in one read (at most
//! [`MAX_CONTENT`] bytes; longer calls take the footer alone). The node and
//! its first page of children are decoded and cached together
//! (`node_at_once`). A node's parent (`parent_near`) takes the cells of up
//! to [`BEHIND`] containers before the node in one read
//! (`ContainerTable::run_before`): the last one ending after the node holds
//! it; the widest one between that and the node is its last child
//! container before the node, and stepping over the children from there
//! must end exactly at the node.
//!
//! Invariant: whatever these reads do not cover (a long call, more
//! containers than the run holds, a container without a cell, a read past
//! the bytes read, bad bytes) gives `None` before any child is given, and
//! the caller takes the general way (`scopes.rs`): the bytes are the
//! file's either way, so the answers are the same, and errors are
//! reported by the general way, with their offsets in the file.

use std::sync::Arc;

use crate::format::Object;
use crate::read::lazy::*;
use crate::read::lookup::block_table::ThreadBlocks;

/// The bytes copied from a call's header on to read it whole without its
/// cells ([`LazyTraceReader::short_call`]): nine calls in ten of a
/// mixed trace end within them.
const SHORT_CALL: u64 = 2 << 10;

/// The longest content scanned from a copy.
const MAX_CONTENT: u64 = 64 << 10;

/// The containers whose cells a scan copies first.
const FIRST_CONTAINERS: usize = 16;

/// The most containers whose cells a scan copies: enough for any call of
/// [`MAX_CONTENT`] bytes but one of tiny calls.
const MAX_CONTAINERS: usize = 2048;

/// The containers before a node whose cells a parent search copies (its
/// parent among them, else the search goes the general way).
const BEHIND: usize = 64;

/// The bytes before a container's content copied to find its header in (a
/// longer header is found the general way).
const HEADER_ROOM: u64 = 512;

/// The longest stretch of a parent's content before a node stepped over
/// from the content's start; further, from the end of its last child
/// container before the node.
const SHORT_SCAN: u64 = 4 << 10;

/// The bytes after a short call's content copied with it for its footer
/// ([`LazyTraceReader::expand_from_cells`]); a longer footer is copied on its
/// own.
const FOOTER_ROOM: u64 = 512;

impl LazyTraceReader {
    /// The direct children of a short call's `scope` from `from` on, with
    /// the offset after the last, from one read (see the module); `None`
    /// when they cannot be read so.
    pub(in crate::read::lazy) fn short_children(
        &self,
        scope: Scope,
        from: LogicalOffset,
    ) -> Option<(Vec<(LogicalOffset, TracepointHeader)>, LogicalOffset)> {
        let len = scope.end.0.checked_sub(from.0)?;
        if len == 0 || len > MAX_CONTENT {
            return None;
        }
        let (table, cells) = self.random_containers(scope.slot).ok()?;
        let mut run = table.run_from(cells, from, FIRST_CONTAINERS);
        if !table.extend_run(cells, &mut run, scope.end, MAX_CONTAINERS) {
            return None;
        }
        let blocks = self.lookup.blocks.thread(scope.slot);
        let (bytes, copy) = blocks.read_range(self.source(), from..scope.end)?;
        let mut scan = self.copy_scan(scope.slot, Stream::new(&bytes, &copy), run)?;
        let mut children = Vec::new();
        let end = self.scan_children_in(&mut scan, scope, from, |at, header| {
            children.push((at, *header));
            true
        });
        Some((children, end.ok()?))
    }

    /// A node and, for a call, its first page of children (`None` when
    /// their scan did not finish) read at once: a short call from one
    /// read, else its cells and the call (see the module). `None` when it
    /// cannot be read so: the caller decodes the node on its own.
    pub(in crate::read::lazy) fn node_at_once(
        &self,
        node: LazyNode,
    ) -> Option<(NodeData, Option<Arc<[LogicalOffset]>>)> {
        match self.short_call(node) {
            Some(ShortCall::Whole(data, page)) => Some((data, page)),
            Some(ShortCall::Longer(tracepoint, len)) => {
                self.expand_from_cells(node, Some((tracepoint, len)))
            }
            None => self.expand_from_cells(node, None),
        }
    }

    /// A call's node and its first page of children from one copy of
    /// [`SHORT_CALL`] bytes, its content parsed without its cells (see the
    /// module), or, when the parse does not reach its end in the copy, its
    /// tracepoint alone; `None` when the node does not decode (the caller
    /// reads it another way, which reports what is wrong) or the thread's
    /// cells are no longer trusted. A leaf is decoded from the copy too.
    fn short_call(&self, node: LazyNode) -> Option<ShortCall> {
        // A thread whose cells were contradicted answers from its rescanned
        // table, or with the rescan's error, as every other lookup does.
        if !self.lookup.trusted(node.slot as usize) {
            return None;
        }
        let blocks = self.lookup.blocks.thread(node.slot as usize);
        let to = LogicalOffset(node.at.0.saturating_add(SHORT_CALL).min(blocks.len));
        let (bytes, copy, tracepoint, header_len) = match self.call_bytes(node, to)? {
            CallBytes::Leaf(leaf) => return Some(ShortCall::Whole(leaf, None)),
            CallBytes::Call(bytes, copy, tracepoint, len) => (bytes, copy, tracepoint, len),
        };
        let mut stream = Stream::new(&bytes, &copy);
        let container = tracepoint.header.tracepoint_type;
        let start = node.at + header_len;
        // The containers entered and not yet left, the call's own first;
        // as many as the copy's objects at most.
        let mut open = vec![container];
        let mut children = Vec::new();
        let mut at = start;
        // The copy's end (an object cut there, or past it) or bytes that do
        // not parse: the cells find the end, and any error, instead.
        let end = loop {
            let skipped = (at < to)
                .then(|| stream.skip(at, open.last().copied()).ok())
                .flatten();
            let Some((skipped, len)) = skipped else {
                return Some(ShortCall::Longer(tracepoint, header_len));
            };
            match (skipped.kind, skipped.header) {
                (ObjectKind::Tracepoint, Some(header)) => {
                    if open.len() == 1 && children.len() < PAGE {
                        children.push(at);
                    }
                    if header.tracepoint_type.is_container() {
                        open.push(header.tracepoint_type);
                    }
                }
                (ObjectKind::TracepointFooter, _) => {
                    open.pop();
                    if open.is_empty() {
                        break at;
                    }
                }
                (kind, _) if kind.is_reference() => {}
                _ => return Some(ShortCall::Longer(tracepoint, header_len)),
            }
            at = at + len;
        };
        let footer = match stream.footer(end, container) {
            Ok((footer, _)) => footer.into_owned(),
            Err(_) => return Some(ShortCall::Longer(tracepoint, header_len)),
        };
        let data = NodeData {
            tracepoint,
            footer: Some(footer),
            content: Some(ContentRange {
                start,
                end,
                finished: true,
            }),
        };
        Some(ShortCall::Whole(data, Some(Arc::from(children))))
    }

    /// A call's node and its first page of children (`None` when the scan
    /// of its children did not finish from the copy), from its cells and
    /// one copy of the call (see the module), or of its content when its
    /// tracepoint is `known` (with its length); a call longer than
    /// [`MAX_CONTENT`] from its cells and a copy of its footer, when its
    /// tracepoint is known. `None` when it cannot be read so. A leaf is
    /// decoded from the copy too (no page).
    fn expand_from_cells(
        &self,
        node: LazyNode,
        known: Option<(Tracepoint<'static>, u64)>,
    ) -> Option<(NodeData, Option<Arc<[LogicalOffset]>>)> {
        let slot = node.slot as usize;
        let (table, cells) = self.random_containers(slot).ok()?;
        // The first container starting after the node's offset is its own
        // when it is a container with a cell (no other container's content
        // can start inside its header): checked against the header below.
        let mut run = table.run_from(cells, node.at + 1, FIRST_CONTAINERS + 1);
        let (start, end) = run.range(0)?;
        let blocks = self.lookup.blocks.thread(slot);
        let content_len = end.0.checked_sub(node.at.0)?;
        if content_len > MAX_CONTENT {
            let (tracepoint, len) = known?;
            if node.at + len != start {
                return None;
            }
            let finished = end.0 < blocks.len;
            let footer = if finished {
                let container = tracepoint.header.tracepoint_type;
                Some(
                    self.footer_alone(&mut self.stream(slot), end, container)
                        .ok()?,
                )
            } else {
                None
            };
            let content = ContentRange {
                start,
                end,
                finished,
            };
            let data = NodeData {
                tracepoint,
                footer,
                content: Some(content),
            };
            return Some((data, None));
        }
        let to = LogicalOffset(end.0.saturating_add(FOOTER_ROOM).min(blocks.len));
        // A tracepoint the first copy decoded is not decoded again: the
        // copy starts at its content.
        let (bytes, copy, tracepoint, len) = match known {
            Some((tracepoint, len)) if node.at + len == start => {
                let (bytes, copy) = blocks.read_range(self.source(), start..to)?;
                (bytes, copy, tracepoint, len)
            }
            Some(_) => return None,
            None => match self.call_bytes(node, to)? {
                CallBytes::Leaf(leaf) => return Some((leaf, None)),
                CallBytes::Call(bytes, copy, tracepoint, len) => (bytes, copy, tracepoint, len),
            },
        };
        let mut stream = Stream::new(&bytes, &copy);
        let container = tracepoint.header.tracepoint_type;
        if node.at + len != start {
            return None;
        }
        let content = ContentRange {
            start,
            end,
            finished: end < stream.len(),
        };
        let footer = if content.finished {
            let footer = match stream.footer(end, container) {
                Ok((footer, _)) => footer.into_owned(),
                // Longer than the room left for it: copied on its own.
                Err(_) if to.0 < blocks.len => self
                    .footer_alone(&mut self.stream(slot), end, container)
                    .ok()?,
                Err(_) => return None,
            };
            Some(footer)
        } else {
            None
        };
        let scope = Scope { slot, start, end };
        let covered = table.extend_run(cells, &mut run, end, MAX_CONTAINERS + 1);
        let page = covered.then(|| {
            let mut scan = self.copy_scan(slot, stream, run)?;
            let mut children = Vec::new();
            self.scan_children_in(&mut scan, scope, start, |at, _| {
                children.push(at);
                children.len() < PAGE
            })
            .ok()
            .map(|_| Arc::from(children))
        });
        let data = NodeData {
            tracepoint,
            footer,
            content: Some(content),
        };
        Some((data, page.flatten()))
    }

    /// A copy of `node`'s thread from the node to `to`, and the node
    /// decoded from it: a leaf whole, a call's tracepoint with its length
    /// (its content starts after it); `None` when it does not decode so.
    fn call_bytes(&self, node: LazyNode, to: LogicalOffset) -> Option<CallBytes> {
        let blocks = self.lookup.blocks.thread(node.slot as usize);
        let (bytes, copy) = blocks.read_range(self.source(), node.at..to)?;
        let (object, len) = Stream::new(&bytes, &copy).object(node.at, None).ok()?;
        let Object::Tracepoint(tracepoint) = object else {
            return None;
        };
        let tracepoint = tracepoint.into_owned();
        if !tracepoint.header.tracepoint_type.is_container() {
            return Some(CallBytes::Leaf(NodeData {
                tracepoint,
                footer: None,
                content: None,
            }));
        }
        Some(CallBytes::Call(bytes, copy, tracepoint, len))
    }

    /// The container `node` is a direct child of (`Some(None)` at the top
    /// level), found from copies (see the module); `None` when it cannot
    /// be found so.
    pub(in crate::read::lazy) fn parent_near(&self, node: LazyNode) -> Option<Option<LazyNode>> {
        let slot = node.slot as usize;
        if !self.lookup.trusted(slot) {
            return None;
        }
        let (table, cells) = self.random_containers(slot).ok()?;
        let run = table.run_before(cells, node.at, BEHIND);
        // Of the containers starting at or before the node, those holding
        // it end after it: the last of them is the innermost. Of those
        // after it, the widest is its last child container before the
        // node (the others lie inside that one).
        let (parent, last_child, in_run) = match run.ranges().rposition(|(_, end)| end > node.at) {
            Some(i) => (
                Some((run.position() + i, run.range(i)?.0)),
                run.widest_from(i + 1),
                true,
            ),
            None => {
                let before = table.holding_before(cells, run.position(), node.at)?;
                let widest = [before.widest, run.widest_from(0)].into_iter().flatten();
                (
                    before.holding,
                    widest.max_by_key(|&(_, (_, end))| end),
                    false,
                )
            }
        };
        let scope = Scope {
            slot,
            start: parent.map_or(LogicalOffset(0), |(_, start)| start),
            end: node.at,
        };
        let distance = node.at.0.checked_sub(scope.start.0)?;
        let blocks = self.lookup.blocks.thread(slot);
        let header = match last_child {
            // Far from the parent's content start (or with containers
            // between the two that the run does not hold): stepped over
            // from the end of that child's footer.
            Some((j, (start, end))) if !in_run || distance > SHORT_SCAN => {
                if node.at.0.checked_sub(end.0)? > MAX_CONTENT {
                    return None;
                }
                let (_, container) = self.header_before(slot, j, start)?;
                let (bytes, copy) = blocks.read_range(self.source(), end..node.at)?;
                let mut stream = Stream::new(&bytes, &copy);
                let from = end + stream.footer_len(end, container).ok()?;
                self.reaches(self.copy_scan(slot, stream, run)?, scope, from)?;
                match parent {
                    Some((k, start)) => Some(self.header_before(slot, k, start)?.0),
                    None => None,
                }
            }
            // From the parent's content start, in one copy with its header.
            _ if distance > MAX_CONTENT => return None,
            _ => {
                let from = LogicalOffset(scope.start.0.saturating_sub(HEADER_ROOM));
                if from == node.at {
                    return Some(None);
                }
                let (bytes, copy) = blocks.read_range(self.source(), from..node.at)?;
                let mut stream = Stream::new(&bytes, &copy);
                let header = match parent {
                    Some((k, start)) => {
                        Some(self.cell_header(&mut stream, slot, k, start).ok()??.0)
                    }
                    None => None,
                };
                self.reaches(self.copy_scan(slot, stream, run)?, scope, scope.start)?;
                header
            }
        };
        Some(header.map(|at| self.node_at(slot, at)))
    }

    /// The header of thread `slot`'s `k`-th container, whose content
    /// starts at `start`, and its type: searched for in a copy of the
    /// [`HEADER_ROOM`] bytes before its content.
    fn header_before(
        &self,
        slot: usize,
        k: usize,
        start: LogicalOffset,
    ) -> Option<(LogicalOffset, TracepointType)> {
        let from = LogicalOffset(start.0.saturating_sub(HEADER_ROOM));
        let (bytes, copy) = self
            .lookup
            .blocks
            .thread(slot)
            .read_range(self.source(), from..start)?;
        let mut stream = Stream::new(&bytes, &copy);
        self.cell_header(&mut stream, slot, k, start).ok().flatten()
    }

    /// A scan of a copy of part of thread `slot` (`stream`), its
    /// containers looked up in `run`.
    fn copy_scan<'r>(&'r self, slot: usize, stream: Stream<'r>, run: Run) -> Option<Scan<'r>> {
        let scan = self.scan_through(slot, stream, self.reads).ok()?;
        Some(Scan {
            run: Some(run),
            ..scan
        })
    }

    /// Whether stepping over `scope`'s children from `from` (a point
    /// between them) ends exactly at the scope's end.
    fn reaches(&self, mut scan: Scan<'_>, scope: Scope, from: LogicalOffset) -> Option<()> {
        let end = self.scan_children_in(&mut scan, scope, from, |_, _| true);
        (end.ok()? == scope.end).then_some(())
    }
}

/// What a copy of [`SHORT_CALL`] bytes gave of a node
/// ([`LazyTraceReader::short_call`]).
enum ShortCall {
    /// The node whole, and a call's first page of children.
    Whole(NodeData, Option<Arc<[LogicalOffset]>>),
    /// A call that does not end within the copy: its tracepoint and length.
    Longer(Tracepoint<'static>, u64),
}

/// A node decoded from a copy ([`LazyTraceReader::call_bytes`]).
enum CallBytes {
    /// A leaf, whole.
    Leaf(NodeData),
    /// A call: the copy's bytes and blocks, its tracepoint and length.
    Call(Vec<u8>, ThreadBlocks, Tracepoint<'static>, u64),
}
