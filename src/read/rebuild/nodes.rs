//! The rebuild's blocks with their tracepoints: what the eager loader
//! builds its nodes from. The same discovery and stitch as an index
//! rebuild, the summaries also listing each block's tracepoints and
//! footers; each stitched window is handed over as [`NodeBlock`]s in file
//! order while the next window is discovered.

use super::discover::FOOTER_ENTRY;
use super::stitch::Stitched;
use super::{RebuildOptions, RebuildOutcome, stitch_windows};
use crate::common::{PhysicalOffset, ThreadId};
use crate::error::Result;
use crate::format::IndexCell;
use crate::model::TracepointType;

/// One block, stitched, with its tracepoints and footers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NodeBlock<'w> {
    /// The block's thread.
    pub(crate) thread: ThreadId,
    /// The number of its first tracepoint in the file (every thread's
    /// tracepoints numbered in file order).
    pub(crate) first_node: u64,
    /// Its tracepoints.
    pub(crate) tracepoints: u32,
    /// Its tracepoints and footers in order (see [`NodeBlock::entry`]).
    entries: &'w [u64],
    /// The numbers of the containers its thread had open at its start,
    /// innermost first: as many as the block closes, plus the one its
    /// top-level tracepoints then belong to (if any).
    pub(crate) outer_parents: &'w [u64],
    /// Its index cells as discovered (reference cells carry physical
    /// offsets).
    cells: &'w [IndexCell],
}

/// A tracepoint or footer of a [`NodeBlock`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NodeEntry {
    /// A tracepoint of this type starts here.
    Tracepoint(PhysicalOffset, TracepointType),
    /// A footer starts here.
    Footer(PhysicalOffset),
}

impl<'w> NodeBlock<'w> {
    /// Its tracepoints and footers, in order.
    #[inline]
    pub(crate) fn entries(&self) -> impl Iterator<Item = NodeEntry> + 'w {
        self.entries.iter().map(|&entry| {
            let offset = PhysicalOffset(entry >> 8);
            match entry & 0xFF {
                FOOTER_ENTRY => NodeEntry::Footer(offset),
                // Written from a tracepoint type's own byte.
                ty => NodeEntry::Tracepoint(offset, TracepointType::ALL[ty as usize]),
            }
        })
    }

    /// The offsets of its reference objects, in order.
    pub(crate) fn references(&self) -> impl Iterator<Item = PhysicalOffset> + 'w {
        self.cells.iter().filter_map(|cell| match *cell {
            IndexCell::Reference { at, .. } => Some(at),
            _ => None,
        })
    }
}

/// Data per window of [`node_windows`]: its summaries (about 9 bytes per
/// tracepoint) stay small beside the nodes the loader keeps (28 bytes
/// each), two windows at a time.
const NODE_WINDOW: u64 = 32 << 20;

/// Discovers and stitches `data`'s blocks as [`RebuiltIndex::build`](super::RebuiltIndex::build)
/// does, one window of [`NODE_WINDOW`] at a time, and gives each
/// window's blocks to `visit` in file order (while the next window is
/// discovered). Returns what the rebuild found: the containers left open,
/// the blocks, and what the data lacked.
pub(crate) fn node_windows(
    data: &[u8],
    visit: &mut (dyn FnMut(&[NodeBlock<'_>]) -> Result<()> + Send),
) -> Result<RebuildOutcome> {
    stitch_windows(
        data,
        RebuildOptions::default(),
        NODE_WINDOW,
        true,
        &|_| {},
        &mut |stitched: Stitched, _| {
            let blocks: Vec<NodeBlock<'_>> = stitched
                .segments
                .iter()
                .map(|segment| {
                    let source = &stitched.sources[segment.source];
                    NodeBlock {
                        thread: segment.thread,
                        first_node: segment.first_node,
                        tracepoints: segment.tracepoints,
                        entries: &source.nodes[segment.nodes.clone()],
                        outer_parents: &stitched.outer_parents[segment.outer_parents.clone()],
                        cells: &source.cells[segment.cells.clone()],
                    }
                })
                .collect();
            visit(&blocks)
        },
    )
}
