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
use crate::error::{DecodeError, Result};
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
    /// Bytes dropped from the start of a block that could not be read to
    /// its end (half-written, or damaged: see
    /// [`damage`](Self::damage)) to the end of the data.
    pub dropped_bytes: u64,
    /// Blocks that could not be read to their end (0 or 1): reading stops
    /// there, as nothing after it can be framed for sure.
    pub dropped_blocks: usize,
    /// Why that block could not be read, when it was not merely cut short
    /// by the end of the data: the first malformed object in it (an
    /// unknown kind or code, a count that cannot be). Not kept in
    /// sidecars: a later open that maps one says only that the block was
    /// cut short.
    pub damage: Option<DecodeError>,
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

    /// Records a block the data ends inside (a half-written last block),
    /// dropped from `start` to the data's end at `data_len`.
    pub(crate) fn drop_truncated(&mut self, start: PhysicalOffset, data_len: u64) {
        self.missing_eof = true;
        self.dropped_blocks = 1;
        self.dropped_bytes = data_len.saturating_sub(start.0);
    }

    /// Records a block that could not be decoded (`error`), dropped with
    /// everything after it from `start` to the data's end at `data_len`.
    pub(crate) fn drop_damaged(
        &mut self,
        start: PhysicalOffset,
        data_len: u64,
        error: DecodeError,
    ) {
        self.dropped_blocks = 1;
        self.dropped_bytes = data_len.saturating_sub(start.0);
        self.damage = Some(error);
    }

    /// What the read left out or found missing, and where, in one line
    /// for a user (`None` for a complete trace, even one with calls that
    /// never finished: a recording may stop while calls run). `data_len` is the length
    /// of the data that was read: the data file's less its zero-filled tail
    /// (`context().data().len()` of either reader). A trace without its
    /// end marker may still be being written, or its recorder stopped: the
    /// words fit both.
    pub fn summary(&self, data_len: u64) -> Option<String> {
        let mut parts = Vec::new();
        if self.missing_eof {
            parts.push(
                "no end marker (the recorder is still writing it, or stopped before the end)"
                    .to_string(),
            );
        }
        if self.dropped_blocks > 0 {
            let start = data_len.saturating_sub(self.dropped_bytes);
            let why = match &self.damage {
                Some(error) => format!("is damaged ({error})"),
                None => "is cut short (written halfway, or damaged)".to_string(),
            };
            parts.push(format!(
                "the block at offset {start} {why}: its {} to the end of the data were not read",
                bytes(self.dropped_bytes)
            ));
        }
        if self.trailing_bytes > 0 {
            parts.push(format!(
                "{} after the end marker at offset {} were ignored",
                bytes(self.trailing_bytes),
                data_len.saturating_sub(self.trailing_bytes + 1)
            ));
        }
        if self.zero_filled_bytes > 0 {
            parts.push(format!(
                "its last {} are zeros (left by power loss or written ahead), read as the end \
                 of the data",
                bytes(self.zero_filled_bytes)
            ));
        }
        // Calls still running when a recording stopped are part of a
        // whole trace (and printed as unfinished): said only beside the
        // rest.
        if !parts.is_empty() && self.unfinished_containers > 0 {
            parts.push(format!(
                "{} call(s) or loop(s) not finished",
                self.unfinished_containers
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// `n` bytes, in words.
fn bytes(n: u64) -> String {
    if n == 1 {
        "1 byte".to_string()
    } else {
        format!("{n} bytes")
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
            });
            let step = match step {
                Ok(step) => step,
                Err(error) => {
                    report.drop_damaged(at, data.len(), error);
                    break;
                }
            };
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
                    report.drop_truncated(start, data.len());
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
