//! The load: one pass over the blocks building the node records, then the
//! children's ranges (see the [module docs](super)).

use std::collections::HashMap;

use super::{
    BYTES_PER_NODE, EagerOptions, EagerThread, EagerTrace, LoadReport, NO_PARENT, NodeId, Slot,
};
use crate::common::{PhysicalOffset, ThreadId};
use crate::error::{Error, Result};
use crate::format::skip::Skipped;
use crate::format::{ByteReader, ContextBuilder, DATA_MAGIC, FILE_HEADER_LEN, ObjectKind};
use crate::format::{Object, check_file_header};
use crate::model::TracepointType;
use crate::read::block::{BlockStep, DecodedBlock, decode_block};
use crate::storage::TraceBytes;

/// A thread's state during the pass.
#[derive(Default)]
struct ThreadState {
    roots: Vec<NodeId>,
    /// Its open containers' nodes, innermost last.
    open: Vec<u32>,
    /// Their types, as [`decode_block`] keeps them.
    open_types: Vec<TracepointType>,
    blocks: usize,
}

/// What the pass builds.
struct Pass<'a> {
    bytes: &'a [u8],
    context: ContextBuilder,
    slots: Vec<Slot>,
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
    if let Some(budget) = options.memory_budget.filter(|_| estimate) {
        let needed = EagerTrace::estimated_memory(data_len);
        if needed > budget {
            return Err(Error::OverMemoryBudget { needed, budget });
        }
    }
    let mut pass = Pass {
        bytes,
        context: ContextBuilder::new(),
        slots: Vec::new(),
        max_nodes: options
            .memory_budget
            .map_or(u64::from(NO_PARENT), |budget| {
                (budget.saturating_sub(data_len) / BYTES_PER_NODE).min(u64::from(NO_PARENT))
            }),
        budget: options.memory_budget,
    };
    let mut thread_index: HashMap<ThreadId, usize> = HashMap::new();
    let mut threads: Vec<(ThreadId, ThreadState)> = Vec::new();
    let mut report = LoadReport {
        zero_filled_bytes,
        ..LoadReport::default()
    };
    let mut at = PhysicalOffset(FILE_HEADER_LEN);
    loop {
        let mut block_thread = None;
        let step = decode_block::<Skipped>(bytes, at, |thread| {
            let index = *thread_index.entry(thread).or_insert_with(|| {
                threads.push((thread, ThreadState::default()));
                threads.len() - 1
            });
            block_thread = Some(index);
            &mut threads[index].1.open_types
        });
        match step {
            Ok(BlockStep::Block(block)) => {
                let state = &mut threads[block_thread.expect("set for every block")].1;
                at = block.next();
                pass.add_block(block, state)?;
            }
            Ok(BlockStep::Eof(offset)) => {
                report.trailing_bytes = data_len - offset.0 - 1;
                break;
            }
            Ok(BlockStep::End) => {
                report.missing_eof = true;
                break;
            }
            Ok(BlockStep::Truncated { start }) => {
                report.drop_truncated(start, data_len);
                break;
            }
            Err(error) => {
                report.drop_damaged(at, data_len, error);
                break;
            }
        }
    }
    // A thread first seen in a dropped half-written block has no blocks.
    threads.retain(|(_, state)| state.blocks > 0);
    threads.sort_by_key(|(thread, _)| *thread);
    report.unfinished_containers = threads.iter().map(|(_, s)| s.open.len()).sum();
    let threads = threads
        .into_iter()
        .map(|(thread, state)| EagerThread {
            thread,
            roots: state.roots,
            blocks: state.blocks,
        })
        .collect();
    let Pass {
        context, mut slots, ..
    } = pass;
    let children = children_ranges(&mut slots);
    Ok(EagerTrace {
        context: context.build(data),
        threads,
        slots,
        children,
        report,
    })
}

impl Pass<'_> {
    /// Adds a complete block's tracepoints, footers and reference objects.
    fn add_block(&mut self, block: DecodedBlock<Skipped>, state: &mut ThreadState) -> Result<()> {
        state.blocks += 1;
        for (offset, object) in block.objects {
            match object.kind {
                ObjectKind::Tracepoint => {
                    if self.slots.len() as u64 >= self.max_nodes {
                        return Err(self.too_many());
                    }
                    let id = self.slots.len() as u32;
                    let parent = state.open.last().copied();
                    match parent {
                        Some(parent) => self.slots[parent as usize].children += 1,
                        None => state.roots.push(NodeId(id)),
                    }
                    let tracepoint_type = object
                        .header
                        .expect("a skipped tracepoint has its header")
                        .tracepoint_type;
                    if tracepoint_type.is_container() {
                        state.open.push(id);
                    }
                    let parent = parent.unwrap_or(NO_PARENT);
                    self.slots.push(Slot::new(offset, tracepoint_type, parent));
                }
                ObjectKind::TracepointFooter => {
                    // decode_block only reads a footer with an open container.
                    if let Some(closed) = state.open.pop() {
                        self.slots[closed as usize].set_footer(offset);
                    }
                }
                _ => {
                    // Reference objects: few, decoded once for the context
                    // (the skip checked that they decode).
                    let start = offset.0 as usize;
                    let mut reader = ByteReader::new(&self.bytes[start..], offset.0);
                    let object = Object::decode(&mut reader, None)?;
                    self.context.add_decoded(object, offset);
                }
            }
        }
        Ok(())
    }

    /// The error for one node more than the budget (or the node ids) allow.
    fn too_many(&self) -> Error {
        let nodes = self.slots.len() as u64 + 1;
        let needed = (self.bytes.len() as u64).saturating_add(nodes * BYTES_PER_NODE);
        match self.budget {
            Some(budget) if needed > budget => Error::OverMemoryBudget { needed, budget },
            // Said as the limit it is: the lazy reader has none.
            _ => Error::limit(
                "tracepoints for the eager loader (read the trace with the lazy reader)",
                self.slots.len() as u64 + 1,
                self.max_nodes,
            ),
        }
    }
}

/// Turns the nodes' child counts into ranges of the flat children array
/// it returns (see the [module docs](super)).
fn children_ranges(slots: &mut [Slot]) -> Vec<NodeId> {
    let mut end = 0u32;
    for slot in slots.iter_mut() {
        end += slot.children;
        slot.children = end;
    }
    let mut children = vec![NodeId(0); end as usize];
    for index in (0..slots.len()).rev() {
        let parent = slots[index].parent;
        if parent != NO_PARENT {
            let parent = &mut slots[parent as usize];
            parent.children -= 1;
            children[parent.children as usize] = NodeId(index as u32);
        }
    }
    children
}
