//! Rebuilding an index from the data file alone, in parallel.
//!
//! The data file has no block lengths, so blocks are found by parsing. The
//! rebuild runs in three steps:
//!
//! 1. **Discover** (parallel, rayon): the file is cut into chunks. The first
//!    chunk starts at the first block; every other chunk looks for its first
//!    `BLOCK_START` byte from which a whole block parses and is followed by
//!    another block, `EOF` or the end of the data, then follows that chain of
//!    blocks to the end of its chunk. Each block is *summarized*: its
//!    reference objects, the containers it opens and the footers it writes.
//!    A footer that closes a container opened in an earlier block of the
//!    thread cannot be decoded without knowing that container's type, so the
//!    summary *assumes* the type whose footer decodes and is followed by a
//!    valid object, and records the assumption.
//! 2. **Stitch** (sequential, one pass over the summaries): starting at the
//!    first block, each next block must start where the previous one ended.
//!    A summary is used only if it starts exactly there and every assumed
//!    footer type equals the type on top of the thread's stack of open
//!    containers; otherwise the block is summarized again exactly (with the
//!    known stack). So a wrong guess, or a chunk that started on a false
//!    `BLOCK_START`, costs time, never correctness. Each thread's logical
//!    offsets are its running payload length.
//! 3. **Emit**: index cells in the streaming writer's order (a block's
//!    `BLOCK_START` cell, then its cells in write order, containers at their
//!    footers), plus the containers that never got a footer.

use rayon::prelude::*;

use crate::error::{DecodeError, DecodeErrorKind, Error, Result};
use crate::format::object::peek_kind_and_id;
use crate::format::offset::{EventId, LogicalOffset, PhysicalOffset, ThreadId};
use crate::format::skip::skip_object;
use crate::format::{
    BLOCK_HEADER_LEN, ByteReader, DATA_MAGIC, FILE_HEADER_LEN, IndexCell, Object, ObjectKind,
    check_file_header,
};
use crate::model::TracepointType;
use crate::read::LoadReport;

/// How to rebuild.
#[derive(Debug, Clone, Copy, Default)]
pub struct RebuildOptions {
    /// Worker threads; 0 uses every core.
    pub threads: usize,
    /// Bytes per discovery chunk; 0 chooses from the file size and threads.
    pub chunk_size: u64,
}

/// A container the recorder opened and never closed (a crashed recorder's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UnfinishedContainer {
    /// Its thread (the block thread id).
    pub thread: ThreadId,
    /// Its event id.
    pub event: EventId,
    /// Its type.
    pub tracepoint_type: TracepointType,
    /// Logical offset of the first byte after its header; its content runs
    /// to the end of the thread's logical stream.
    pub content_start: LogicalOffset,
}

/// An index rebuilt from a data file.
#[derive(Debug, Clone)]
pub struct RebuiltIndex {
    /// The cells, in the streaming writer's order.
    pub cells: Vec<IndexCell>,
    /// Containers without footers, which have no cells.
    pub unfinished: Vec<UnfinishedContainer>,
    /// Complete blocks.
    pub blocks: usize,
    /// What the data file lacked.
    pub report: LoadReport,
}

/// Rebuilds the index of the data file `data`.
pub fn rebuild_index(data: &[u8], options: RebuildOptions) -> Result<RebuiltIndex> {
    rebuild_index_observed(data, options, &|_| {})
}

/// Rebuilds the index of `data`, calling `progress` with the size of each
/// block discovered (from any worker thread), for progress bars.
pub fn rebuild_index_observed(
    data: &[u8],
    options: RebuildOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<RebuiltIndex> {
    check_file_header(data, DATA_MAGIC)?;
    let threads = if options.threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        options.threads
    };
    let body = data.len() as u64 - FILE_HEADER_LEN;
    let chunk_size = if options.chunk_size > 0 {
        options.chunk_size
    } else {
        (body / (threads as u64 * 8)).max(4 << 20)
    };
    let chunks: Vec<(u64, u64)> = (0..body.div_ceil(chunk_size).max(1))
        .map(|i| {
            let start = FILE_HEADER_LEN + i * chunk_size;
            (start, (start + chunk_size).min(data.len() as u64))
        })
        .collect();
    let discover = || -> Vec<BlockSummary> {
        chunks
            .par_iter()
            .enumerate()
            .flat_map_iter(|(i, &(start, end))| discover_chunk(data, start, end, i == 0, progress))
            .collect()
    };
    let summaries = if threads == 1 || chunks.len() == 1 {
        chunks
            .iter()
            .enumerate()
            .flat_map(|(i, &(start, end))| discover_chunk(data, start, end, i == 0, progress))
            .collect()
    } else if options.threads == 0 {
        discover()
    } else {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .map_err(|e| Error::Usage(format!("cannot start {threads} threads: {e}")))?
            .install(discover)
    };
    stitch(data, summaries)
}

/// One entry of a block summary, in write order.
#[derive(Debug, Clone, Copy)]
enum Entry {
    Reference {
        kind: ObjectKind,
        id: i32,
        offset: PhysicalOffset,
    },
    Open {
        event: EventId,
        tracepoint_type: TracepointType,
        /// Content start, relative to the block's payload.
        content_start: u64,
    },
    Close {
        /// Footer position, relative to the block's payload.
        at: u64,
        /// For a footer closing a container of an earlier block: the type
        /// assumed (or known) for it.
        outer: Option<TracepointType>,
    },
}

#[derive(Debug, Clone)]
struct BlockSummary {
    thread: ThreadId,
    start: PhysicalOffset,
    end: PhysicalOffset,
    entries: Vec<Entry>,
}

impl BlockSummary {
    fn payload_len(&self) -> u64 {
        self.end.0 - self.start.0 - BLOCK_HEADER_LEN
    }

    fn outer_types(&self) -> impl Iterator<Item = TracepointType> + '_ {
        self.entries.iter().filter_map(|entry| match entry {
            Entry::Close { outer, .. } => *outer,
            _ => None,
        })
    }
}

/// The outcome of summarizing at a block boundary.
enum Step {
    Block(BlockSummary),
    Eof(PhysicalOffset),
    End,
    Truncated(PhysicalOffset),
}

/// Finds and summarizes the blocks that start in `[start, end)`. Where a
/// block cannot be summarized speculatively, the search resumes at the next
/// plausible `BLOCK_START`; the stitch step parses such gaps exactly.
fn discover_chunk(
    data: &[u8],
    start: u64,
    end: u64,
    exact_start: bool,
    progress: &(dyn Fn(u64) + Sync),
) -> Vec<BlockSummary> {
    let mut chain = Vec::new();
    let mut at = start;
    // Whether `at` is known to be a block boundary (the chunk's exact start,
    // or just after a block of the chain).
    let mut on_boundary = exact_start;
    while at < end {
        if !on_boundary {
            let Some(found) = data[at as usize..end as usize]
                .iter()
                .position(|&b| b == ObjectKind::BlockStart as u8)
            else {
                break;
            };
            at += found as u64;
        }
        match summarize_speculatively(data, PhysicalOffset(at)) {
            Ok(Step::Block(block)) if on_boundary || is_boundary(data, block.end.0 + 1) => {
                let after = block.end.0 + 1;
                progress(after - block.start.0);
                chain.push(block);
                at = after;
                on_boundary = true;
            }
            _ => {
                at += 1;
                on_boundary = false;
            }
        }
    }
    chain
}

/// Whether a block, `EOF` or the end of the data stands at `offset`.
fn is_boundary(data: &[u8], offset: u64) -> bool {
    match data.get(offset as usize) {
        None => offset == data.len() as u64,
        Some(&b) => b == ObjectKind::BlockStart as u8 || b == ObjectKind::Eof as u8,
    }
}

/// What is known of the containers a block's thread left open before it.
enum Outer<'s> {
    /// Their types, innermost last.
    Known(&'s [TracepointType]),
    /// Unknown: footers closing them are decoded by assumption. The vector
    /// holds the types to assume for the first footers (forced guesses) and
    /// receives every type assumed.
    Guessed(&'s mut Vec<TracepointType>),
}

/// Footer types in the order they are tried.
const FOOTER_CANDIDATES: [TracepointType; 3] = [
    TracepointType::MethodCall,
    TracepointType::LoopIteration,
    TracepointType::Loop,
];

/// Wrong guesses tried per block before leaving it to the exact pass.
const MAX_GUESS_ATTEMPTS: usize = 16;

/// Summarizes the block at `at` without knowing its thread's open
/// containers, backtracking over footer-type guesses when a guess leads to
/// bytes that do not decode.
fn summarize_speculatively(data: &[u8], at: PhysicalOffset) -> Result<Step, DecodeError> {
    let mut forced: Vec<TracepointType> = Vec::new();
    let mut attempts = 0;
    loop {
        let mut guesses = forced.clone();
        let error = match summarize(data, at, Outer::Guessed(&mut guesses)) {
            Ok(step) => return Ok(step),
            Err(error) => error,
        };
        attempts += 1;
        // Move the last guess that has an untried alternative to that alternative.
        let retry = (0..guesses.len()).rev().find_map(|i| {
            let tried = FOOTER_CANDIDATES.iter().position(|&t| t == guesses[i])?;
            let next = *FOOTER_CANDIDATES.get(tried + 1)?;
            let mut retry = guesses[..i].to_vec();
            retry.push(next);
            Some(retry)
        });
        match retry {
            Some(retry) if attempts < MAX_GUESS_ATTEMPTS => forced = retry,
            _ => return Err(error),
        }
    }
}

/// Summarizes the block at `at`, given what is known of the containers its
/// thread left open.
fn summarize(
    data: &[u8],
    at: PhysicalOffset,
    mut outer: Outer<'_>,
) -> std::result::Result<Step, DecodeError> {
    let from = usize::try_from(at.0).unwrap_or(usize::MAX).min(data.len());
    let mut reader = ByteReader::new(&data[from..], at.0);
    if reader.is_empty() {
        return Ok(Step::End);
    }
    let thread = match Object::decode(&mut reader, None) {
        Ok(Object::BlockStart(thread)) => thread,
        Ok(Object::Eof) => return Ok(Step::Eof(at)),
        Ok(other) => {
            return Err(DecodeError::new(
                at.0,
                DecodeErrorKind::UnexpectedObject {
                    found: other.kind(),
                    context: "expected BLOCK_START or EOF between blocks",
                },
            ));
        }
        Err(DecodeError {
            kind: DecodeErrorKind::UnexpectedEnd { .. },
            ..
        }) => return Ok(Step::Truncated(at)),
        Err(error) => return Err(error),
    };
    let payload = at.0 + BLOCK_HEADER_LEN;
    let mut local: Vec<TracepointType> = Vec::new();
    let mut outer_closed = 0usize;
    let mut entries = Vec::new();
    loop {
        let offset = reader.offset();
        let relative = offset - payload;
        let innermost = local.last().copied();
        let is_footer = reader.peek_u8() == Some(ObjectKind::TracepointFooter as u8);
        let mut outer_type = None;
        let open = match innermost {
            Some(innermost) => Some(innermost),
            None if is_footer => {
                let assumed = match &mut outer {
                    Outer::Known(stack) => stack
                        .len()
                        .checked_sub(outer_closed + 1)
                        .map(|index| stack[index]),
                    Outer::Guessed(guesses) => match guesses.get(outer_closed) {
                        Some(&forced) => Some(forced),
                        None => {
                            let guess = assume_footer_type(&reader);
                            guesses.extend(guess);
                            guess
                        }
                    },
                };
                outer_type = assumed;
                assumed
            }
            None => None,
        };
        let object = match skip_object(&mut reader, open) {
            Ok(object) => object,
            Err(DecodeError {
                kind: DecodeErrorKind::UnexpectedEnd { .. },
                ..
            }) => return Ok(Step::Truncated(at)),
            Err(error) => return Err(error),
        };
        match object.kind {
            ObjectKind::BlockEnd => {
                return Ok(Step::Block(BlockSummary {
                    thread,
                    start: at,
                    end: PhysicalOffset(offset),
                    entries,
                }));
            }
            ObjectKind::BlockStart | ObjectKind::Eof => {
                return Err(DecodeError::new(
                    offset,
                    DecodeErrorKind::UnexpectedObject {
                        found: object.kind,
                        context: "inside a block",
                    },
                ));
            }
            ObjectKind::Tracepoint => {
                if let Some(header) = object.header
                    && header.tracepoint_type.is_container()
                {
                    local.push(header.tracepoint_type);
                    entries.push(Entry::Open {
                        event: header.event,
                        tracepoint_type: header.tracepoint_type,
                        content_start: reader.offset() - payload,
                    });
                }
            }
            ObjectKind::TracepointFooter => {
                if local.pop().is_none() {
                    outer_closed += 1;
                }
                entries.push(Entry::Close {
                    at: relative,
                    outer: outer_type,
                });
            }
            kind => {
                // A reference object: its id follows the kind byte(s).
                if let Some((_, id)) = peek_kind_and_id(data, offset) {
                    entries.push(Entry::Reference {
                        kind,
                        id,
                        offset: PhysicalOffset(offset),
                    });
                }
            }
        }
    }
}

/// Guesses the type of the container a footer at the reader's position
/// closes: the first type whose footer decodes and is followed by a valid
/// object (or another footer). The stitch step verifies every guess.
fn assume_footer_type(reader: &ByteReader<'_>) -> Option<TracepointType> {
    FOOTER_CANDIDATES.into_iter().find(|&candidate| {
        let mut probe = reader.clone();
        if skip_object(&mut probe, Some(candidate)).is_err() {
            return false;
        }
        match probe.peek_u8() {
            Some(b) if b == ObjectKind::TracepointFooter as u8 => true,
            Some(_) => skip_object(&mut probe, None)
                .is_ok_and(|o| !matches!(o.kind, ObjectKind::BlockStart | ObjectKind::Eof)),
            None => false,
        }
    })
}

#[derive(Default)]
struct ThreadState {
    thread: ThreadId,
    logical_len: u64,
    open: Vec<(EventId, TracepointType, LogicalOffset)>,
}

fn stitch(data: &[u8], mut summaries: Vec<BlockSummary>) -> Result<RebuiltIndex> {
    summaries.sort_by_key(|s| s.start);
    summaries.dedup_by_key(|s| s.start);
    let mut threads: Vec<ThreadState> = Vec::new();
    let mut cells = Vec::new();
    let mut report = LoadReport::default();
    let mut blocks = 0usize;
    let mut at = PhysicalOffset(FILE_HEADER_LEN);
    loop {
        let speculative = summaries
            .binary_search_by_key(&at, |s| s.start)
            .ok()
            .map(|i| &summaries[i]);
        let verified = speculative.filter(|block| {
            let state = threads.iter().find(|t| t.thread == block.thread);
            let open = state.map_or(&[][..], |t| &t.open[..]);
            let mut expected = open.iter().rev().map(|&(_, ty, _)| ty);
            block.outer_types().all(|ty| expected.next() == Some(ty))
        });
        let exact;
        let block = match verified {
            Some(block) => block,
            None => {
                let thread = read_block_thread(data, at);
                let stack: Vec<TracepointType> = threads
                    .iter()
                    .find(|t| Some(t.thread) == thread)
                    .map(|t| t.open.iter().map(|&(_, ty, _)| ty).collect())
                    .unwrap_or_default();
                match summarize(data, at, Outer::Known(&stack))? {
                    Step::Block(block) => {
                        exact = block;
                        &exact
                    }
                    Step::Eof(offset) => {
                        report.trailing_bytes = data.len() as u64 - offset.0 - 1;
                        break;
                    }
                    Step::End => {
                        report.missing_eof = true;
                        break;
                    }
                    Step::Truncated(start) => {
                        report.missing_eof = true;
                        report.dropped_blocks = 1;
                        report.dropped_bytes = data.len() as u64 - start.0;
                        break;
                    }
                }
            }
        };
        blocks += 1;
        let index = match threads.iter().position(|t| t.thread == block.thread) {
            Some(index) => index,
            None => {
                threads.push(ThreadState {
                    thread: block.thread,
                    ..ThreadState::default()
                });
                threads.len() - 1
            }
        };
        let state = &mut threads[index];
        cells.push(IndexCell {
            kind: ObjectKind::BlockStart,
            id: block.thread.0,
            start: block.start.0 as i64,
            end: block.end.0 as i64,
        });
        let base = state.logical_len;
        for entry in &block.entries {
            match *entry {
                Entry::Reference { kind, id, offset } => cells.push(IndexCell {
                    kind,
                    id,
                    start: offset.0 as i64,
                    end: -1,
                }),
                Entry::Open {
                    event,
                    tracepoint_type,
                    content_start,
                } => state
                    .open
                    .push((event, tracepoint_type, LogicalOffset(base + content_start))),
                Entry::Close { at, .. } => {
                    // Verified above, or summarized exactly: a container is open.
                    if let Some((event, _, start)) = state.open.pop() {
                        cells.push(IndexCell {
                            kind: ObjectKind::Tracepoint,
                            id: event.0,
                            start: start.0 as i64,
                            end: (base + at) as i64,
                        });
                    }
                }
            }
        }
        state.logical_len += block.payload_len();
        at = PhysicalOffset(block.end.0 + 1);
    }
    threads.sort_by_key(|t| t.thread);
    let unfinished: Vec<UnfinishedContainer> = threads
        .iter()
        .flat_map(|t| {
            t.open.iter().map(
                move |&(event, tracepoint_type, content_start)| UnfinishedContainer {
                    thread: t.thread,
                    event,
                    tracepoint_type,
                    content_start,
                },
            )
        })
        .collect();
    report.unfinished_containers = unfinished.len();
    Ok(RebuiltIndex {
        cells,
        unfinished,
        blocks,
        report,
    })
}

/// The thread id of the block starting at `at`, if a `BLOCK_START` is there.
fn read_block_thread(data: &[u8], at: PhysicalOffset) -> Option<ThreadId> {
    match crate::format::object::peek_kind_and_id(data, at.0) {
        Some((ObjectKind::BlockStart, id)) => Some(ThreadId(id)),
        _ => None,
    }
}
