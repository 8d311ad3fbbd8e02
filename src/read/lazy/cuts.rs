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
//! child's header is found by searching back from its content start
//! (`headers`); a child whose header is not found so leaves its parent to
//! be cut by child number.
//!
//! Cuts are taken from cells nothing has contradicted, and the walk of
//! each run checks that it ends between siblings (`walk_range`), so a cell
//! that lies makes an error, never a misplaced line.

use super::headers::container_header;
use super::{LazyNode, LazyTraceReader};
use crate::error::Result;

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
            let Some((_, container)) = container_header(&mut stream, start, thread, event)? else {
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
