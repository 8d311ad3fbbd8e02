//! Cutting a call's children into runs of siblings without counting them,
//! for the parallel printers.
//!
//! Cutting by child number (`children_range`) needs the call's child
//! index: a scan that skips every child, which for a root of a million
//! children is most of a core's work while a print is being planned. The
//! container table already knows where each container's content starts and
//! ends, so [`LazyTraceReader::sibling_cuts`] cuts after child *containers*
//! instead: for every `bytes` of the call's content, the first container
//! starting there or after, climbed up the table to the call's direct child
//! that holds it; the run ends after that child's footer. A footer's length
//! depends on its container's type, which the index does not hold, so the
//! child's header is found by searching back from its content start: a
//! tracepoint of a container type carrying the cell's thread and event ids
//! whose encoding ends exactly there.
//!
//! Cuts are taken from cells nothing has contradicted, and the walk of
//! each run checks that it ends between siblings (`walk_range`), so a cell
//! that lies makes an error, never a misplaced line.

use super::{LazyNode, LazyTraceReader};
use crate::common::{EventId, LogicalOffset, ThreadId};
use crate::error::Result;
use crate::format::{ByteReader, ObjectKind};
use crate::model::{Tracepoint, TracepointType};
use crate::read::lookup::stream::Stream;

/// The longest container header searched for behind its content (a call's
/// receiver and arguments included); a child with a longer one leaves its
/// parent to be cut by child number.
const MAX_HEADER: usize = 64 * 1024;
/// Bytes of a container's header at least: the kind byte, the common
/// header, the child-status count and a 4-byte field.
const MIN_HEADER: usize = 20;
/// A run more than this many times the length asked for (around a child
/// too large to cut inside) leaves the call to be cut by child number,
/// which cuts into such a child.
const LONGEST_RUN: u64 = 8;

impl LazyTraceReader {
    /// The children of `node` that begin runs of its children of about
    /// `bytes` of its content each (the first run begins with its first
    /// child), found through the container table without counting the
    /// children. `None` where they are not found so: a leaf, a call with
    /// less than four runs' worth of content, a thread whose cells were
    /// contradicted, a run that would be far longer than `bytes`; cut by
    /// child number then ([`children_range`](Self::children_range)).
    ///
    /// A cut may stand on a reference object between two children; a walk
    /// from it skips it. The walk of each run is [`walk_visit_siblings`
    /// ](Self::walk_visit_siblings).
    pub fn sibling_cuts(&self, node: LazyNode, bytes: u64) -> Result<Option<Vec<LazyNode>>> {
        let bytes = bytes.max(1);
        let Some(scope) = self.scope(node)? else {
            return Ok(None);
        };
        let slot = scope.slot;
        let longest = bytes.saturating_mul(LONGEST_RUN);
        if scope.end.0.saturating_sub(scope.start.0) < bytes.saturating_mul(4)
            || !self.lookup.trusted(slot)
        {
            return Ok(None);
        }
        let (table, cells) = self.containers(slot)?;
        let Some(parent) = table.find_start(cells, scope.start, None) else {
            return Ok(None);
        };
        let thread = self.lookup.blocks.thread(slot).thread;
        let mut stream = self.stream(slot);
        let mut cuts = Vec::new();
        let mut last = scope.start;
        loop {
            let target = last + bytes;
            if target >= scope.end {
                break;
            }
            let k = table.first_starting_at_or_after(cells, target);
            if k >= table.len() || table.start(cells, k) >= scope.end {
                break;
            }
            let mut child = k;
            loop {
                match table.parent(cells, child) {
                    Some(up) if up == parent => break,
                    Some(up) => child = up,
                    None => return Ok(None),
                }
            }
            let end = table.end(cells, child);
            if end >= scope.end {
                break;
            }
            let start = table.start(cells, child);
            let event = table.event(cells, child);
            let Some(container) = container_type(&mut stream, start, thread, event)? else {
                return Ok(None);
            };
            let cut = end + stream.footer_len(end, container)?;
            if cut >= scope.end {
                break;
            }
            if cut.0 - last.0 > longest {
                return Ok(None);
            }
            cuts.push(self.node_at(slot, cut));
            last = cut;
        }
        Ok((scope.end.0 - last.0 <= longest).then_some(cuts))
    }
}

/// The type of `thread`'s container with event id `event` whose content
/// starts at `start`, read from its header, found by searching back from
/// `start` (shortest first); `None` when no such header within
/// [`MAX_HEADER`] bytes ends there.
fn container_type(
    stream: &mut Stream<'_>,
    start: LogicalOffset,
    thread: ThreadId,
    event: EventId,
) -> Result<Option<TracepointType>> {
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
            return Ok(Some(container));
        }
    }
    Ok(None)
}
