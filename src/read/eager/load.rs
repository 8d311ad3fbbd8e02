//! The load: the index rebuild's discovery and stitch find the blocks and
//! write their node records, numbered in each block, window by window;
//! each window's records are renumbered into the trace's in parallel, then
//! the children's ranges are laid out (see the [module docs](super)).

use std::sync::atomic::{AtomicU32, Ordering};

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use super::{
    BYTES_PER_NODE, ESTIMATED_TRACEPOINT_LEN, EagerOptions, EagerTrace, NO_PARENT, NodeId,
    TypeCounts,
};
use crate::common::{PhysicalOffset, ThreadId};
use crate::error::{Error, Result};
use crate::format::{ByteReader, ContextBuilder, DATA_MAGIC, Object, check_file_header};
use crate::model::TracepointType;
use crate::read::ThreadInfo;
use crate::read::rebuild::{NodeBlock, NodeRecord, OFFSET_BITS, node_windows};
use crate::storage::TraceBytes;

/// A thread's roots, blocks, bytes and containers.
#[derive(Default)]
struct ThreadNodes {
    roots: Vec<NodeId>,
    blocks: usize,
    bytes: u64,
    containers: usize,
}

/// What a block leaves for the nodes outside it: children and footers of
/// the containers its thread had open at its start, and its roots.
#[derive(Default)]
struct Leftovers {
    /// Per [`NodeBlock::outer_parents`] entry, the block's children of it.
    outer_children: Vec<u32>,
    /// Footers of those containers: node number, footer offset.
    outer_footers: Vec<(u64, PhysicalOffset)>,
    /// Footers of the block's own nodes too far for their records.
    far_footers: Vec<(u32, u64)>,
    roots: Vec<NodeId>,
    /// The block's tracepoints by type.
    by_type: TypeCounts,
    /// Children of the block's own nodes per part of [`PREFIX_PART`]
    /// nodes, from the part of its first node on.
    part_children: Vec<u32>,
}

/// What the children's layout needs of a block, kept past its window: its
/// nodes, and the containers of earlier blocks it adds children to, each
/// with the children it had before the block.
struct PlacedBlock {
    first_node: u64,
    tracepoints: u32,
    /// Outer parent, its children before this block; in the order the
    /// block's top-level tracepoints meet them.
    outer: Vec<(u32, u32)>,
}

/// What the windows build.
struct Pass<'a> {
    bytes: &'a [u8],
    context: ContextBuilder,
    /// The nodes' records: the first `filled` are the nodes so far.
    slots: Vec<NodeRecord>,
    filled: usize,
    blocks: Vec<PlacedBlock>,
    threads: FxHashMap<ThreadId, ThreadNodes>,
    by_type: TypeCounts,
    /// The nodes' children counted per part of [`PREFIX_PART`] nodes as
    /// they are added: the parts' sums of the prefix sum.
    part_children: Vec<u32>,
    /// Footers too far for their records (see [`EagerTrace::far_footers`]).
    far_footers: Vec<(u32, u64)>,
    /// The most nodes the memory budget leaves room for.
    max_nodes: u64,
    budget: Option<u64>,
}

/// Loads `data` (see [`EagerTrace::load_with`]).
pub(super) fn load(data: TraceBytes, options: EagerOptions) -> Result<EagerTrace> {
    load_estimating(data, options, true)
}

/// [`load`], checking the estimate first when `estimate` says so (else
/// only the nodes' count during the pass).
pub(super) fn load_estimating(
    data: TraceBytes,
    options: EagerOptions,
    estimate: bool,
) -> Result<EagerTrace> {
    let (data, zero_filled_bytes) = data.without_zero_tail();
    let bytes = data.as_slice();
    check_file_header(bytes, DATA_MAGIC)?;
    let data_len = data.len();
    // The records' offsets (`NodeRecord`).
    if data_len >> OFFSET_BITS != 0 {
        return Err(Error::limit(
            "bytes of data for the eager loader (read the trace with the lazy reader)",
            data_len,
            (1u64 << OFFSET_BITS) - 1,
        ));
    }
    if let Some(budget) = options.memory_budget.filter(|_| estimate) {
        let needed = EagerTrace::estimated_memory(data_len);
        if needed > budget {
            return Err(Error::OverMemoryBudget { needed, budget });
        }
    }
    let max_nodes = options
        .memory_budget
        .map_or(u64::from(NO_PARENT), |budget| {
            (budget.saturating_sub(data_len) / BYTES_PER_NODE).min(u64::from(NO_PARENT))
        });
    // The estimated nodes, zeroed pages first touched by the workers that
    // fill them (else the vector grows as the windows come).
    let estimated = (data_len / ESTIMATED_TRACEPOINT_LEN).min(max_nodes) as usize;
    let slots: Vec<NodeRecord> = zerocopy::FromZeros::new_vec_zeroed(estimated).unwrap_or_default();
    let mut pass = Pass {
        bytes,
        context: ContextBuilder::new(),
        slots,
        filled: 0,
        blocks: Vec::new(),
        threads: FxHashMap::default(),
        by_type: [0; TracepointType::ALL.len()],
        part_children: Vec::new(),
        far_footers: Vec::new(),
        max_nodes,
        budget: options.memory_budget,
    };
    let outcome = node_windows(bytes, &mut |blocks| pass.add_window(blocks))?;
    let mut report = outcome.report;
    report.zero_filled_bytes = zero_filled_bytes;
    let mut by_thread: Vec<(ThreadId, ThreadNodes)> = pass.threads.into_iter().collect();
    by_thread.sort_by_key(|(thread, _)| *thread);
    let (threads, roots) = by_thread
        .into_iter()
        .map(|(id, nodes)| {
            let info = ThreadInfo {
                id,
                blocks: nodes.blocks,
                bytes: nodes.bytes,
                containers: nodes.containers,
            };
            (info, nodes.roots)
        })
        .unzip();
    let mut slots = pass.slots;
    slots.truncate(pass.filled);
    let mut part_children = pass.part_children;
    part_children.resize(slots.len().div_ceil(PREFIX_PART), 0);
    let children = children_ranges(&mut slots, &part_children, &pass.blocks)?;
    let by_type = pass.by_type;
    let mut far_footers = pass.far_footers;
    far_footers.sort_unstable();
    Ok(EagerTrace {
        context: pass.context.build(data),
        threads,
        roots,
        slots,
        far_footers,
        children,
        report,
        by_type,
    })
}

impl Pass<'_> {
    /// Adds a window's blocks: their nodes filled in parallel, then what
    /// each leaves to nodes outside it, and their reference objects, in
    /// file order.
    fn add_window(&mut self, blocks: &[NodeBlock<'_>]) -> Result<()> {
        let first = self.filled as u64;
        let nodes: u64 = blocks
            .iter()
            .map(|block| u64::from(block.tracepoints))
            .sum();
        if first + nodes > self.max_nodes {
            return Err(self.too_many());
        }
        self.filled += nodes as usize;
        let parts = self.filled.div_ceil(PREFIX_PART);
        if self.part_children.len() < parts {
            self.part_children.resize(parts, 0);
        }
        if self.slots.len() < self.filled {
            // More nodes than estimated.
            let blank = NodeRecord::new(PhysicalOffset(0), TracepointType::MethodCall, NO_PARENT);
            self.slots.resize(self.filled, blank);
        }
        // Each block's nodes, a slice of their own.
        let mut rest = &mut self.slots[first as usize..self.filled];
        let mut parts = Vec::with_capacity(blocks.len());
        for block in blocks {
            debug_assert_eq!(block.first_node, first + (nodes - rest.len() as u64));
            let (part, after) = rest.split_at_mut(block.tracepoints as usize);
            parts.push((block, part));
            rest = after;
        }
        let leftovers: Vec<Leftovers> = parts
            .into_par_iter()
            .with_min_len(4)
            .map(|(block, part)| fill_block(block, part))
            .collect();
        for (block, leftovers) in blocks.iter().zip(leftovers) {
            let mut outer = Vec::new();
            for (&parent, &count) in block.outer_parents.iter().zip(&leftovers.outer_children) {
                let slot = &mut self.slots[parent as usize];
                if count > 0 {
                    outer.push((parent as u32, slot.children));
                }
                slot.children += count;
                self.part_children[parent as usize / PREFIX_PART] += count;
            }
            let first_part = block.first_node as usize / PREFIX_PART;
            for (sum, count) in self.part_children[first_part..]
                .iter_mut()
                .zip(&leftovers.part_children)
            {
                *sum += count;
            }
            self.blocks.push(PlacedBlock {
                first_node: block.first_node,
                tracepoints: block.tracepoints,
                outer,
            });
            for (node, footer) in leftovers.outer_footers {
                if !self.slots[node as usize].set_footer(footer) {
                    self.far_footers.push((node as u32, footer.0));
                }
            }
            self.far_footers.extend(leftovers.far_footers);
            let thread = self.threads.entry(block.thread).or_default();
            thread.blocks += 1;
            thread.bytes += block.payload_len();
            thread.containers += TracepointType::ALL
                .iter()
                .filter(|kind| kind.is_container())
                .map(|&kind| leftovers.by_type[kind as usize] as usize)
                .sum::<usize>();
            thread.roots.extend(leftovers.roots);
            for (all, block) in self.by_type.iter_mut().zip(leftovers.by_type) {
                *all += block;
            }
            // Reference objects: few, decoded once for the context (the
            // discovery checked that they skip).
            for offset in block.references() {
                let start = offset.0 as usize;
                let mut reader = ByteReader::new(&self.bytes[start..], offset.0);
                let object = Object::decode(&mut reader, None)?;
                self.context.add_decoded(object, offset);
            }
        }
        Ok(())
    }

    /// The error for one node more than the budget (or the node ids) allow.
    fn too_many(&self) -> Error {
        let nodes = self.max_nodes + 1;
        let needed = (self.bytes.len() as u64).saturating_add(nodes * BYTES_PER_NODE);
        match self.budget {
            Some(budget) if needed > budget => Error::OverMemoryBudget { needed, budget },
            // Said as the limit it is: the lazy reader has none.
            _ => Error::limit(
                "tracepoints for the eager loader (read the trace with the lazy reader)",
                nodes,
                self.max_nodes,
            ),
        }
    }
}

/// Fills a block's node records (`part`: one per tracepoint, in order)
/// with those the discovery wrote, numbered in the block: a parent in the
/// block gets its number in the trace; one among the containers its thread
/// had open at the block's start is looked up, its children and footers
/// left to the caller; without one, the node is a root.
fn fill_block(block: &NodeBlock<'_>, part: &mut [NodeRecord]) -> Leftovers {
    let first = block.first_node;
    let first_part = first as usize / PREFIX_PART;
    let parts = (first as usize + part.len()).div_ceil(PREFIX_PART) - first_part;
    let mut leftovers = Leftovers {
        outer_children: vec![0; block.outer_parents.len()],
        ..Leftovers::default()
    };
    debug_assert_eq!(block.nodes.len(), part.len());
    // Below `u32::MAX` nodes (`Pass::max_nodes`): the sums fit.
    let (local, base) = (block.tracepoints, first as u32);
    // A parent outside the block: rare (at the block's top level).
    let mut outside = |next: usize, parent: u32| -> u32 {
        let closed = (u32::MAX - parent) as usize;
        match block.outer_parents.get(closed) {
            Some(&outer) => {
                leftovers.outer_children[closed] += 1;
                outer as u32
            }
            None => {
                leftovers.roots.push(NodeId(base + next as u32));
                NO_PARENT
            }
        }
    };
    let mut by_type: TypeCounts = [0; TracepointType::ALL.len()];
    // The nodes part by part of the prefix sum, each part's children summed.
    let mut part_children = vec![0; parts];
    let mut next = 0usize;
    for sum in part_children.iter_mut() {
        let until = (((first as usize + next) / PREFIX_PART + 1) * PREFIX_PART - first as usize)
            .min(part.len());
        let mut children = 0u32;
        for (node, slot) in block.nodes[next..until].iter().zip(&mut part[next..until]) {
            let parent = if node.parent < local {
                node.parent + base
            } else {
                outside(next, node.parent)
            };
            by_type[node.type_byte()] += 1;
            *slot = node.with_parent(parent);
            children += node.children;
            next += 1;
        }
        *sum += children;
    }
    leftovers.by_type = by_type;
    leftovers.part_children = part_children;
    leftovers.far_footers = (block.far_footers.iter())
        .map(|&(_, node, footer)| (base + node, footer))
        .collect();
    for (closed, &footer) in block.outer_footers.iter().enumerate() {
        if let Some(&outer) = block.outer_parents.get(closed) {
            leftovers
                .outer_footers
                .push((outer, PhysicalOffset(footer)));
        }
    }
    leftovers
}

/// Nodes per part of the prefix sum.
const PREFIX_PART: usize = 1 << 16;

/// Turns the nodes' child counts into ranges of the flat children array
/// it returns (see the [module docs](super)), in parallel: the counts'
/// prefix sum in parts (`part_children`: each part's sum, counted as the
/// nodes were added, so that the slots are read once here), then each
/// block's children placed by their rank among their parent's (counted in
/// the block, after the children its outer parents had before it), every
/// child written once.
fn children_ranges(
    slots: &mut [NodeRecord],
    part_children: &[u32],
    blocks: &[PlacedBlock],
) -> Result<Vec<u32>> {
    let mut starts = Vec::with_capacity(part_children.len());
    let mut end = 0u32;
    for &sum in part_children {
        starts.push(end);
        end += sum;
    }
    slots
        .par_chunks_mut(PREFIX_PART)
        .zip(starts)
        .for_each(|(part, mut at)| {
            for slot in part {
                let count = slot.children;
                slot.children = at;
                at += count;
            }
        });
    // Zeroed pages from the allocator, touched by the workers that place.
    let mut children = vec![0u32; end as usize];
    let placed: &mut [AtomicU32] = zerocopy::transmute_mut!(children.as_mut_slice());
    let placed: &[AtomicU32] = placed;
    let slots: &[NodeRecord] = slots;
    let misplaced = blocks
        .par_iter()
        .map_init(Vec::new, |next, block| {
            place_block(block, slots, placed, next)
        })
        .any(|placed| !placed);
    if misplaced {
        return Err(Error::internal(
            "the eager loader's children did not match their parents' counts",
        ));
    }
    Ok(children)
}

/// Writes a block's nodes into their parents' ranges of `children`;
/// `next` is scratch. False if a node's place is not where the counts
/// said (a bug).
fn place_block(
    block: &PlacedBlock,
    slots: &[NodeRecord],
    children: &[AtomicU32],
    next: &mut Vec<u32>,
) -> bool {
    let first = block.first_node as usize;
    let Some(nodes) = slots.get(first..first + block.tracepoints as usize) else {
        return false;
    };
    // Per node of the block so far, where its next child goes: its range's
    // start, moved on by each child placed (a parent precedes its children).
    next.clear();
    next.resize(nodes.len(), 0);
    // A slice, whose place the stores below cannot move.
    let next = next.as_mut_slice();
    // The outer parent met last, and its children in the block so far.
    let mut outer = 0usize;
    let mut outer_rank = 0u32;
    for index in 0..nodes.len().min(next.len()) {
        let slot = nodes[index];
        next[index] = slot.children;
        let parent = slot.parent as usize;
        if slot.parent == NO_PARENT {
            continue;
        }
        let at = if parent >= first {
            let Some(free) = next.get_mut(parent - first) else {
                return false;
            };
            let at = *free;
            // Wraps only past `u32::MAX`, where no child can be placed.
            *free = at.wrapping_add(1);
            at as usize
        } else {
            while block
                .outer
                .get(outer)
                .is_some_and(|&(outer_parent, _)| outer_parent as usize != parent)
            {
                outer += 1;
                outer_rank = 0;
            }
            let Some(&(_, before)) = block.outer.get(outer) else {
                return false;
            };
            outer_rank += 1;
            slots[parent].children as usize + (before + outer_rank - 1) as usize
        };
        let Some(place) = children.get(at) else {
            return false;
        };
        place.store((first + index) as u32, Ordering::Relaxed);
    }
    true
}
