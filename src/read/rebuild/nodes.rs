//! The rebuild's blocks with their tracepoints: what the eager loader
//! builds its nodes from. The same discovery and stitch as an index
//! rebuild, the discovery also writing each block's node records (parent,
//! footer, children counted), numbered in the block, as it skips the
//! objects; each stitched window is handed over as [`NodeBlock`]s in file
//! order while the next window is discovered.

use super::stitch::Stitched;
use super::{RebuildOptions, RebuildOutcome, stitch_windows};
use crate::common::{PhysicalOffset, ThreadId};
use crate::error::Result;
use crate::format::IndexCell;
use crate::model::TracepointType;
use crate::read::lookup::block_table::BlockInfo;

/// One node's record as the discovery writes it, with numbers local to its
/// block ([`NodeBlock::nodes`]): offsets into the data, its parent and its
/// children. The eager loader packs it into its own record.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NodeRecord {
    /// The tracepoint's kind byte ([`NodeRecord::tracepoint`]).
    pub(crate) offset: u64,
    /// The tracepoint's type (the top byte) and its footer's offset (the
    /// other 56 bits; 0, the file header's, for none).
    pub(crate) type_and_footer: u64,
    /// The parent's index.
    pub(crate) parent: u32,
    /// Its children in the block.
    pub(crate) children: u32,
}

/// The bits of [`NodeRecord::type_and_footer`] that hold the footer's offset.
const FOOTER_BITS: u64 = (1 << 56) - 1;

impl NodeRecord {
    /// The record of a tracepoint of type `tracepoint_type` at `tracepoint`
    /// (below 2^56), with no footer or children yet.
    #[inline(always)]
    pub(crate) fn new(
        tracepoint: PhysicalOffset,
        tracepoint_type: TracepointType,
        parent: u32,
    ) -> NodeRecord {
        NodeRecord {
            offset: tracepoint.0,
            type_and_footer: (tracepoint_type as u64) << 56,
            parent,
            children: 0,
        }
    }

    /// Where the tracepoint starts.
    pub(crate) fn tracepoint(&self) -> PhysicalOffset {
        PhysicalOffset(self.offset)
    }

    /// The tracepoint's type.
    pub(crate) fn tracepoint_type(&self) -> TracepointType {
        TracepointType::ALL[(self.type_and_footer >> 56) as usize]
    }

    /// Where the footer starts.
    pub(crate) fn footer(&self) -> Option<PhysicalOffset> {
        let at = self.type_and_footer & FOOTER_BITS;
        (at != 0).then_some(PhysicalOffset(at))
    }

    /// Records the footer at `at` (below 2^56).
    #[inline(always)]
    pub(crate) fn set_footer(&mut self, at: PhysicalOffset) {
        self.type_and_footer |= at.0 & FOOTER_BITS;
    }
}

/// A block-local [`NodeRecord::parent`] for the `closed`-th container of the
/// thread's earlier blocks (0: the innermost open at the block's start):
/// counted down from `u32::MAX`, above any local number.
#[inline(always)]
pub(crate) fn outer_parent(closed: usize) -> u32 {
    u32::MAX - closed as u32
}

/// One block, stitched, with its tracepoints' node records.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NodeBlock<'w> {
    /// The block's thread.
    pub(crate) thread: ThreadId,
    /// The number of its first tracepoint in the file (every thread's
    /// tracepoints numbered in file order).
    pub(crate) first_node: u64,
    /// Its tracepoints.
    pub(crate) tracepoints: u32,
    /// Its tracepoints' records in order, numbered in the block: a parent
    /// below [`tracepoints`](Self::tracepoints) is one of the block's
    /// tracepoints, another is an [`outer_parent`]; `children` counts the
    /// children in the block; a footer is set if the block closes the
    /// container.
    pub(crate) nodes: &'w [NodeRecord],
    /// Where the footers of the containers of [`outer_parents`](Self::outer_parents)
    /// that the block closes start, innermost first.
    pub(crate) outer_footers: &'w [u64],
    /// The numbers of the containers its thread had open at its start,
    /// innermost first: as many as the block closes, plus the one its
    /// top-level tracepoints then belong to (if any).
    pub(crate) outer_parents: &'w [u64],
    /// Its index cells as discovered (reference cells carry physical
    /// offsets).
    cells: &'w [IndexCell],
}

impl<'w> NodeBlock<'w> {
    /// The bytes of its payload: what it adds to its thread's logical
    /// stream.
    pub(crate) fn payload_len(&self) -> u64 {
        self.cells
            .iter()
            .find_map(|cell| match *cell {
                IndexCell::Block { thread, start, end } => {
                    Some(BlockInfo { thread, start, end }.payload_len())
                }
                _ => None,
            })
            .unwrap_or(0)
    }

    /// The offsets of its reference objects, in order.
    pub(crate) fn references(&self) -> impl Iterator<Item = PhysicalOffset> + 'w {
        self.cells.iter().filter_map(|cell| match *cell {
            IndexCell::Reference { at, .. } => Some(at),
            _ => None,
        })
    }
}

/// Data per window of [`node_windows`]: its summaries (a record of 24
/// bytes per tracepoint) stay small beside the nodes the loader keeps (28
/// bytes each), two windows at a time.
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
                        nodes: &source.nodes[segment.nodes.clone()],
                        outer_footers: &source.outer_footers[segment.outer_footers.clone()],
                        outer_parents: &stitched.outer_parents[segment.outer_parents.clone()],
                        cells: &source.cells[segment.cells.clone()],
                    }
                })
                .collect();
            visit(&blocks)
        },
    )
}
