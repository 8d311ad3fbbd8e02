//! The eager loader: reads a whole data file (no index needed) into a
//! [`TraceContext`] and one tree per thread.
//!
//! It accepts what real recorders write (duplicated reference objects,
//! either cell order) and what crashed recorders leave (no `EOF`, a
//! half-written last block, calls without footers), and reports what it
//! dropped in a [`LoadReport`].

use std::collections::HashMap;
use std::path::Path;

use crate::common::{EventId, PhysicalOffset, ThreadId};
use crate::error::Result;
use crate::format::{ContextBuilder, TraceContext};
use crate::format::{DATA_MAGIC, FILE_HEADER_LEN, Object, check_file_header};
use crate::model::{Footer, Tracepoint, TracepointType};
use crate::read::block::{BlockStep, decode_block};
use crate::storage::TraceBytes;
use crate::storage::packed::PackedTrace;

/// A node of an eagerly loaded tree, by position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u32);

/// A tracepoint with its footer and children.
#[derive(Debug, Clone)]
pub struct EagerNode {
    /// The tracepoint.
    pub tracepoint: Tracepoint<'static>,
    /// The footer of a container; `None` for leaves and for containers the
    /// recorder never finished.
    pub footer: Option<Footer<'static>>,
    /// The children, in order.
    pub children: Vec<NodeId>,
    /// The parent; `None` for a thread's top-level tracepoints.
    pub parent: Option<NodeId>,
}

impl EagerNode {
    /// Whether this is a container whose footer was never written.
    pub fn is_unfinished(&self) -> bool {
        self.tracepoint.is_container() && self.footer.is_none()
    }
}

/// One recorded thread.
#[derive(Debug, Clone)]
pub struct EagerThread {
    /// The thread id of its blocks.
    pub thread: ThreadId,
    /// Its top-level tracepoints (normally one root call).
    pub roots: Vec<NodeId>,
    /// How many blocks it has.
    pub blocks: usize,
}

/// What a load found missing or dropped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadReport {
    /// The data file has no `EOF` object.
    pub missing_eof: bool,
    /// Bytes of a half-written last block that were dropped.
    pub dropped_bytes: u64,
    /// Half-written blocks dropped (0 or 1).
    pub dropped_blocks: usize,
    /// Containers that never got their footer.
    pub unfinished_containers: usize,
    /// Bytes after the `EOF` object (ignored).
    pub trailing_bytes: u64,
    /// Zeros at the end of the file, after the last bytes written (power
    /// loss, a filesystem allocating ahead), read as its end
    /// ([`TraceBytes::without_zero_tail`]).
    pub zero_filled_bytes: u64,
}

impl LoadReport {
    /// Whether the trace was complete.
    pub fn is_complete(&self) -> bool {
        *self == LoadReport::default()
    }
}

/// A whole trace in memory.
#[derive(Debug)]
pub struct EagerTrace {
    context: TraceContext,
    threads: Vec<EagerThread>,
    nodes: Vec<EagerNode>,
    report: LoadReport,
}

#[derive(Default)]
struct ThreadState {
    roots: Vec<NodeId>,
    open: Vec<NodeId>,
    open_types: Vec<TracepointType>,
    blocks: usize,
}

impl EagerTrace {
    /// Loads the data file at `path` (its index, if any, is not used), or
    /// the data entry of the packed trace at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let bytes = TraceBytes::map(path)?;
        if PackedTrace::looks_packed(bytes.as_slice()) {
            return Self::load(PackedTrace::from_bytes(path, bytes)?.data()?);
        }
        Self::load(bytes)
    }

    /// Loads a data file's bytes.
    pub fn load(data: TraceBytes) -> Result<Self> {
        let (data, zero_filled_bytes) = data.without_zero_tail();
        let bytes = data.as_slice();
        check_file_header(bytes, DATA_MAGIC)?;
        let mut context = ContextBuilder::new();
        let mut nodes: Vec<EagerNode> = Vec::new();
        let mut thread_index: HashMap<ThreadId, usize> = HashMap::new();
        let mut threads: Vec<(ThreadId, ThreadState)> = Vec::new();
        let mut report = LoadReport {
            zero_filled_bytes,
            ..LoadReport::default()
        };
        let mut at = PhysicalOffset(FILE_HEADER_LEN);
        loop {
            let mut block_thread = None;
            let step = decode_block(bytes, at, |thread| {
                let index = *thread_index.entry(thread).or_insert_with(|| {
                    threads.push((thread, ThreadState::default()));
                    threads.len() - 1
                });
                block_thread = Some(index);
                &mut threads[index].1.open_types
            })?;
            match step {
                BlockStep::Block(block) => {
                    let state = &mut threads[block_thread.expect("set for every block")].1;
                    state.blocks += 1;
                    at = block.next();
                    for (offset, object) in block.objects {
                        match object {
                            Object::Tracepoint(tracepoint) => {
                                let id = NodeId(nodes.len() as u32);
                                let parent = state.open.last().copied();
                                match parent {
                                    Some(parent) => nodes[parent.0 as usize].children.push(id),
                                    None => state.roots.push(id),
                                }
                                if tracepoint.is_container() {
                                    state.open.push(id);
                                }
                                nodes.push(EagerNode {
                                    tracepoint: tracepoint.into_owned(),
                                    footer: None,
                                    children: Vec::new(),
                                    parent,
                                });
                            }
                            Object::Footer(footer) => {
                                // decode_block only decodes a footer with an open container.
                                if let Some(closed) = state.open.pop() {
                                    nodes[closed.0 as usize].footer = Some(footer.into_owned());
                                }
                            }
                            reference => context.add_decoded(reference, offset),
                        }
                    }
                }
                BlockStep::Eof(offset) => {
                    report.trailing_bytes = data.len() - offset.0 - 1;
                    break;
                }
                BlockStep::End => {
                    report.missing_eof = true;
                    break;
                }
                BlockStep::Truncated { start } => {
                    report.missing_eof = true;
                    report.dropped_blocks = 1;
                    report.dropped_bytes = data.len() - start.0;
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
        Ok(EagerTrace {
            context: context.build(data),
            threads,
            nodes,
            report,
        })
    }

    /// The reference objects.
    pub fn context(&self) -> &TraceContext {
        &self.context
    }

    /// The threads, ascending by thread id.
    pub fn threads(&self) -> &[EagerThread] {
        &self.threads
    }

    /// A node.
    pub fn node(&self, id: NodeId) -> &EagerNode {
        &self.nodes[id.0 as usize]
    }

    /// All nodes, in file order (each thread's nodes in pre-order).
    pub fn nodes(&self) -> &[EagerNode] {
        &self.nodes
    }

    /// The node of the tracepoint with event id `event`.
    pub fn find_event(&self, event: EventId) -> Option<NodeId> {
        self.nodes
            .iter()
            .position(|node| node.tracepoint.event() == event)
            .map(|index| NodeId(index as u32))
    }

    /// What the load dropped or found missing.
    pub fn report(&self) -> &LoadReport {
        &self.report
    }
}
