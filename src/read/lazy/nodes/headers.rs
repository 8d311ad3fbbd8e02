//! Finding a container's header from its cell, without its parent's
//! child index.
//!
//! A cell holds a container's event id and content range, not where its
//! header starts: the header ends exactly where the content starts, and
//! its length depends on the call's receiver and arguments. The header is
//! found by searching back from the content start, shortest first, for a
//! tracepoint of a container type carrying the thread's and the cell's
//! event ids whose encoding ends exactly there ([`container_header`]).
//! Only a header whose own last bytes encode another such header (a
//! crafted file) can mislead it, and then to an offset inside the real
//! header that decodes to the same container.
//!
//! With its header, a child container's footer can be stepped over, which
//! gives a point between siblings: [`LazyTraceReader::last_child_before_near`]
//! finds the last direct child of a call before an offset by scanning
//! forward from the end of the last child container the table knows
//! before it, instead of building the call's child index (a scan of every
//! child: a root of a million children costs milliseconds, where a parent
//! is asked for in microseconds). Only cells nothing has contradicted are
//! used; anything that does not fit falls back to the child index.

use crate::common::{EventId, LogicalOffset, ThreadId};
use crate::error::Result;
use crate::format::{ByteReader, ObjectKind};
use crate::model::{Tracepoint, TracepointType};
use crate::read::lazy::{LazyTraceReader, Scope};
use crate::read::lookup::stream::Stream;

/// The longest container header searched for behind its content (a call's
/// receiver and arguments included).
const MAX_HEADER: usize = 64 * 1024;
/// Bytes of a container's header at least: the kind byte, the common
/// header, the child-status count and a 4-byte field.
const MIN_HEADER: usize = 20;
/// Direct children scanned forward from a point between siblings before
/// the child index is used instead.
const NEAR_CHILDREN: usize = 4096;

/// The header of `thread`'s container with event id `event` whose content
/// starts at `start`: its offset and type, found by searching back from
/// `start` (shortest first); `None` when no such header within
/// [`MAX_HEADER`] bytes ends there.
pub(in crate::read::lazy) fn container_header(
    stream: &mut Stream<'_>,
    start: LogicalOffset,
    thread: ThreadId,
    event: EventId,
) -> Result<Option<(LogicalOffset, TracepointType)>> {
    let before = stream.bytes_before(start)?;
    let Some(latest) = before.len().checked_sub(MIN_HEADER) else {
        return Ok(None);
    };
    let earliest = before.len().saturating_sub(MAX_HEADER);
    let (thread_bytes, event_bytes) = (thread.0.to_be_bytes(), event.0.to_be_bytes());
    for at in (earliest..=latest).rev() {
        // Kind, type, code location, thread, event, diff status.
        let header = &before[at..];
        if header[0] != ObjectKind::Tracepoint as u8
            || header[6..10] != thread_bytes
            || header[10..14] != event_bytes
        {
            continue;
        }
        let Some(container) = TracepointType::from_byte(header[1]).filter(|t| t.is_container())
        else {
            continue;
        };
        let mut reader = ByteReader::new(&header[1..], 0);
        if Tracepoint::decode(&mut reader).is_ok() && reader.position() == header.len() - 1 {
            let length = (before.len() - at) as u64;
            return Ok(Some((LogicalOffset(start.0 - length), container)));
        }
    }
    Ok(None)
}

impl LazyTraceReader {
    /// The header of thread `slot`'s `k`-th container, searched back from
    /// its content ([`container_header`]); `None` when the thread's cells
    /// were contradicted or no header is found so.
    pub(in crate::read::lazy) fn header_of_cell(
        &self,
        slot: usize,
        k: usize,
    ) -> Option<LogicalOffset> {
        if !self.lookup.trusted(slot) {
            return None;
        }
        let (table, cells) = self.containers(slot).ok()?;
        let start = table.start(cells, k);
        let found = self.cell_header(&mut self.stream(slot), slot, k, start);
        found.ok().flatten().map(|(at, _)| at)
    }

    /// [`container_header`] of thread `slot`'s `k`-th container, whose
    /// content starts at `start`, searched for in `stream` (the thread's,
    /// or a copy of bytes before the content) with its cell's event id.
    pub(in crate::read::lazy) fn cell_header(
        &self,
        stream: &mut Stream<'_>,
        slot: usize,
        k: usize,
        start: LogicalOffset,
    ) -> Result<Option<(LogicalOffset, TracepointType)>> {
        let (table, cells) = self.random_containers(slot)?;
        let thread = self.lookup.blocks.thread(slot).thread;
        container_header(stream, start, thread, table.event(cells, k))
    }

    /// Where thread `slot`'s `k`-th container begins (its header, found
    /// from its cell) and where it ends (after its footer, whose length
    /// the header's type gives): a point between its siblings on either
    /// side. `None` when its header is not found so.
    pub(in crate::read::lazy) fn container_span(
        &self,
        stream: &mut Stream<'_>,
        slot: usize,
        k: usize,
    ) -> Result<Option<(LogicalOffset, LogicalOffset)>> {
        let (table, cells) = self.containers(slot)?;
        let (start, end) = (table.start(cells, k), table.end(cells, k));
        let Some((header, container)) = self.cell_header(stream, slot, k, start)? else {
            return Ok(None);
        };
        Ok(Some((header, end + stream.footer_len(end, container)?)))
    }

    /// The last direct child of `scope` that starts before `start`
    /// ([`last_child_before`](Self::last_child_before)), scanned from the
    /// point between siblings that [`sibling_boundary_before`
    /// ](Self::sibling_boundary_before) finds, when there is one and fewer
    /// than [`NEAR_CHILDREN`] children lie between; through the scope's
    /// pages otherwise.
    pub(in crate::read::lazy) fn last_child_before_near(
        &self,
        scope: Scope,
        start: LogicalOffset,
    ) -> Result<Option<LogicalOffset>> {
        if let Some((from, previous)) = self.sibling_boundary_before(scope, start) {
            let (mut last, mut seen, mut whole) = (previous, 0, true);
            let scanned = self.scan_children(scope, from, |child, _| {
                if child >= start {
                    return false;
                }
                seen += 1;
                whole = seen <= NEAR_CHILDREN;
                last = Some(child);
                whole
            });
            if scanned.is_ok() && whole {
                return Ok(last);
            }
        }
        self.last_child_before(scope, start)
    }

    /// A point between the direct children of `scope` at or before `start`,
    /// and the child that ends there: the end of the footer of the last
    /// child container the table knows before `start`, or the scope's start
    /// (and no child) when it knows none. `None` when the thread's cells
    /// were contradicted or do not fit.
    fn sibling_boundary_before(
        &self,
        scope: Scope,
        start: LogicalOffset,
    ) -> Option<(LogicalOffset, Option<LogicalOffset>)> {
        let slot = scope.slot;
        if !self.lookup.trusted(slot) {
            return None;
        }
        let (table, cells) = self.containers(slot).ok()?;
        // No container's content starts at a thread's first byte.
        let parent = match scope.start.0 {
            0 => None,
            _ => Some(table.find_start(cells, scope.start, None)?),
        };
        let Some(last) = table.last_starting_at_or_before(cells, start) else {
            return Some((scope.start, None));
        };
        if Some(last) == parent {
            return Some((scope.start, None));
        }
        let child = table.child_holding(cells, last, parent)?;
        if table.end(cells, child) >= start {
            return None;
        }
        let (header, from) = self
            .container_span(&mut self.stream(slot), slot, child)
            .ok()??;
        (from <= start).then_some((from, Some(header)))
    }
}
