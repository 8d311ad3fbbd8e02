//! The rebuild's blocks with their tracepoints: what the eager loader
//! builds its nodes from. The same discovery and stitch as an index
//! rebuild, the discovery also writing each block's node records (parent,
//! footer, children counted), numbered in the block, as it skips the
//! objects; each stitched window is handed over as [`NodeBlock`]s in file
//! order while the next window is discovered.

use super::stitch::Stitched;
use super::{RebuildOptions, RebuildOutcome, stitch_windows};
use crate::common::{PhysicalOffset, ThreadId};
use crate::error::{Error, Result};
use crate::format::IndexCell;
use crate::model::TracepointType;
use crate::read::lookup::block_table::BlockInfo;

/// One node's record: where its tracepoint and footer start, its type,
/// its parent and its children. The discovery writes it numbered in its
/// block ([`NodeBlock::nodes`]), the eager loader keeps it renumbered in
/// the trace (children: their count, then where they start in its flat
/// array).
#[derive(
    Debug,
    Clone,
    Copy,
    zerocopy::FromBytes,
    zerocopy::IntoBytes,
    zerocopy::Immutable,
    zerocopy::KnownLayout,
)]
#[repr(C)]
pub(crate) struct NodeRecord {
    /// The tracepoint's offset (the low [`OFFSET_BITS`]), its type (the next
    /// 4 bits) and its footer's distance from the tracepoint (the top 20: 0
    /// for none, [`FAR`] for one kept aside).
    packed: u64,
    /// The parent's index.
    pub(crate) parent: u32,
    /// Its children (their count, or where they start).
    pub(crate) children: u32,
}

/// Bits of a tracepoint's offset in a [`NodeRecord`]: nodes are collected
/// from data files below 2^40 bytes (1 TiB).
pub(crate) const OFFSET_BITS: u32 = 40;
/// Where a [`NodeRecord`]'s footer distance starts.
const DISTANCE_SHIFT: u32 = OFFSET_BITS + 4;
/// The footer distance of a [`NodeRecord`] whose footer is kept aside.
pub(crate) const FAR: u64 = (1 << (64 - DISTANCE_SHIFT)) - 1;

impl NodeRecord {
    /// The record of a tracepoint of type `tracepoint_type` at `tracepoint`
    /// (below 2^[`OFFSET_BITS`]), with no footer or children yet.
    #[inline(always)]
    pub(crate) fn new(
        tracepoint: PhysicalOffset,
        tracepoint_type: TracepointType,
        parent: u32,
    ) -> NodeRecord {
        NodeRecord {
            packed: tracepoint.0 | (tracepoint_type as u64) << OFFSET_BITS,
            parent,
            children: 0,
        }
    }

    /// This record with parent `parent`.
    #[inline(always)]
    pub(crate) fn with_parent(self, parent: u32) -> NodeRecord {
        NodeRecord { parent, ..self }
    }

    /// Where the tracepoint starts.
    pub(crate) fn tracepoint(&self) -> PhysicalOffset {
        PhysicalOffset(self.packed & ((1 << OFFSET_BITS) - 1))
    }

    /// The tracepoint's type.
    pub(crate) fn tracepoint_type(&self) -> TracepointType {
        TracepointType::ALL[self.type_byte()]
    }

    /// The tracepoint's type's byte (its index in [`TracepointType::ALL`]).
    #[inline(always)]
    pub(crate) fn type_byte(&self) -> usize {
        (self.packed >> OFFSET_BITS & 0xF) as usize
    }

    /// The footer's distance from the tracepoint: 0 for none, [`FAR`] for
    /// one kept aside.
    pub(crate) fn footer_distance(&self) -> u64 {
        self.packed >> DISTANCE_SHIFT
    }

    /// Records the footer at `at` (after the tracepoint); false when it is
    /// too far to be kept in the record (it is then marked [`FAR`], and
    /// the caller keeps it aside).
    #[inline(always)]
    pub(crate) fn set_footer(&mut self, at: PhysicalOffset) -> bool {
        let distance = at.0 - self.tracepoint().0;
        let near = distance < FAR;
        self.packed |= if near { distance } else { FAR } << DISTANCE_SHIFT;
        near
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
    /// The footers of its own containers too far for their records (marked
    /// [`FAR`]): the block's first record in its summaries, the node's
    /// number in the block, the footer's offset.
    pub(crate) far_footers: &'w [(usize, u32, u64)],
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

/// Data per window of [`node_windows`]: its summaries (a record of 16
/// bytes per tracepoint) stay small beside the nodes the loader keeps (20
/// bytes each), two windows at a time.
const NODE_WINDOW: u64 = 32 << 20;

/// Discovers and stitches `data`'s blocks as [`RebuiltIndex::build`](super::RebuiltIndex::build)
/// does, one window of [`NODE_WINDOW`] at a time, and gives each
/// window's blocks to `visit` in file order (while the next window is
/// discovered). Returns what the rebuild found: the containers left open,
/// the blocks, and what the data lacked. `data` is below 2^[`OFFSET_BITS`]
/// bytes (the records' offsets).
pub(crate) fn node_windows(
    data: &[u8],
    visit: &mut (dyn FnMut(&[NodeBlock<'_>]) -> Result<()> + Send),
) -> Result<RebuildOutcome> {
    if (data.len() as u64) >> OFFSET_BITS != 0 {
        return Err(Error::limit(
            "bytes of data to collect nodes from",
            data.len(),
            (1u64 << OFFSET_BITS) - 1,
        ));
    }
    stitch_windows(
        data,
        RebuildOptions::default(),
        NODE_WINDOW,
        true,
        &|_| {},
        &mut |stitched: &mut Stitched, _| {
            let blocks: Vec<NodeBlock<'_>> = stitched
                .segments
                .iter()
                .map(|segment| {
                    let source = &stitched.sources[segment.source];
                    // Grouped by block, in the order of their blocks'
                    // first records (a block without records has none).
                    let far = &source.far_footers;
                    let start = segment.nodes.start;
                    let far_footers = if segment.nodes.is_empty() {
                        &far[..0]
                    } else {
                        &far[far.partition_point(|f| f.0 < start)
                            ..far.partition_point(|f| f.0 <= start)]
                    };
                    NodeBlock {
                        thread: segment.thread,
                        first_node: segment.first_node,
                        tracepoints: segment.tracepoints,
                        nodes: &source.nodes[segment.nodes.clone()],
                        far_footers,
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
