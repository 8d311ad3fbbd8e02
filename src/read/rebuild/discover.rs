//! Discovery: each chunk of the data file summarized on its own, from a
//! guessed first block (steps 1 and 2 of the module above).

use super::nodes::{NodeRecord, outer_parent};
use crate::common::{EventId, LogicalOffset, PhysicalOffset, ThreadId};
use crate::error::{DecodeError, DecodeErrorKind, Result};
use crate::format::object::peek_kind_and_id;
use crate::format::skip::{skip_object, try_skip, try_skip_footer, try_skip_tracepoint};
use crate::format::{BLOCK_HEADER_LEN, ByteReader, IndexCell, Object, ObjectKind};
use crate::model::{TracepointHeader, TracepointType};

/// What discovery found in one chunk (or the stitch re-read exactly):
/// its blocks, and their cells and crossing containers in flat arrays that
/// each block has a range of (no allocation per block).
#[derive(Debug, Default)]
pub(super) struct Summaries {
    pub(super) blocks: Vec<BlockSummary>,
    /// The blocks' cells, each block's in write order after its
    /// `BLOCK_START` cell. A container cell's offsets are relative to its
    /// block's payload (the stitch adds the thread's logical length before
    /// the block); one closing a container of an earlier block is a
    /// placeholder whose id and start the stitch fills in.
    pub(super) cells: Vec<IndexCell>,
    /// Footers closing containers of earlier blocks: the placeholder cell's
    /// index within its block's cells, and the type assumed (or known) for
    /// the container. They come before any of the block's `opens`.
    pub(super) outers: Vec<(u32, TracepointType)>,
    /// Containers the block leaves open, outermost first: event, type,
    /// content start relative to the block's payload, and the container's
    /// number among the block's tracepoints.
    pub(super) opens: Vec<(EventId, TracepointType, u64, u32)>,
    /// Whether the blocks' tracepoints get node records in `nodes` (for
    /// the eager loader; `cells` then holds no cells of containers closed
    /// in their own block).
    pub(super) collect_nodes: bool,
    /// With `collect_nodes`, each block's tracepoints' records in file
    /// order, numbered in the block (see [`NodeBlock::nodes`](super::NodeBlock)).
    pub(super) nodes: Vec<NodeRecord>,
    /// With `collect_nodes`, the offset of each footer of `outers`.
    pub(super) outer_footers: Vec<u64>,
    /// With `collect_nodes`, the footers too far for their records (see
    /// [`NodeBlock::far_footers`](super::NodeBlock)), block by block.
    pub(super) far_footers: Vec<(usize, u32, u64)>,
}

impl Summaries {
    /// Summaries writing their tracepoints' node records when `collect_nodes`.
    pub(super) fn new(collect_nodes: bool) -> Summaries {
        Summaries {
            collect_nodes,
            ..Summaries::default()
        }
    }

    pub(super) fn lengths(&self) -> [usize; 4] {
        [
            self.cells.len(),
            self.outers.len(),
            self.opens.len(),
            self.nodes.len(),
        ]
    }

    /// These summaries emptied, their arrays' memory kept for the next
    /// chunk's (already touched pages are not faulted in again).
    fn recycled(mut self, collect_nodes: bool) -> Summaries {
        self.far_footers.clear();
        self.truncate([0; 4]);
        self.blocks.clear();
        self.collect_nodes = collect_nodes;
        self
    }

    /// Forgets what a failed summary added.
    pub(super) fn truncate(&mut self, [cells, outers, opens, nodes]: [usize; 4]) {
        self.cells.truncate(cells);
        self.outers.truncate(outers);
        self.outer_footers.truncate(outers);
        self.opens.truncate(opens);
        self.nodes.truncate(nodes);
        while self.far_footers.last().is_some_and(|far| far.0 >= nodes) {
            self.far_footers.pop();
        }
    }
}

#[derive(Debug, Clone)]
pub(super) struct BlockSummary {
    pub(super) thread: ThreadId,
    pub(super) start: PhysicalOffset,
    pub(super) end: PhysicalOffset,
    pub(super) cells: std::ops::Range<usize>,
    pub(super) outers: std::ops::Range<usize>,
    pub(super) opens: std::ops::Range<usize>,
    /// Its entries in `nodes` (empty unless collected).
    pub(super) nodes: std::ops::Range<usize>,
    /// Its tracepoints.
    pub(super) tracepoints: u32,
}

impl BlockSummary {
    pub(super) fn payload_len(&self) -> u64 {
        self.end.0 - self.start.0 - BLOCK_HEADER_LEN
    }
}

/// The outcome of summarizing at a block boundary.
pub(super) enum Step {
    Block(BlockSummary),
    Eof(PhysicalOffset),
    End,
    Truncated(PhysicalOffset),
}

/// Finds and summarizes the blocks that start in `[start, end)` into
/// `reuse` (summaries of an earlier window, emptied first). Where a
/// block cannot be summarized speculatively, the search resumes at the next
/// plausible `BLOCK_START` (one right after a `BLOCK_END` byte); the stitch
/// step parses such gaps exactly.
pub(super) fn discover_chunk(
    data: &[u8],
    (start, end): (u64, u64),
    exact_start: bool,
    collect_nodes: bool,
    progress: &(dyn Fn(u64) + Sync),
    reuse: Summaries,
) -> Summaries {
    let mut out = reuse.recycled(collect_nodes);
    // Room for a cell per 64 bytes (a mixed trace has one per ~160): the
    // cells are not copied again and again as the vector grows (pages the
    // chunk does not fill are never touched).
    out.cells.reserve(((end - start) / 64) as usize);
    if collect_nodes {
        // A tracepoint per ~32 bytes, as the eager loader estimates.
        out.nodes.reserve(((end - start) / 32) as usize);
    }
    let mut at = start;
    // Whether `at` is known to be a block boundary (the chunk's exact start,
    // or just after a block of the chain).
    let mut on_boundary = exact_start;
    // Progress counts the chunk's own bytes once each, whatever blocks
    // straddle its ends or start falsely in it: the chunks of a rebuild
    // add up to the data's length.
    let mut reported = start;
    let mut report = |upto: u64| {
        let upto = upto.min(end);
        if upto > reported {
            progress(upto - reported);
            reported = upto;
        }
    };
    while at < end {
        if !on_boundary {
            // Every block but the file's first follows a `BLOCK_END`: a
            // `BLOCK_START` byte without one before it is inside a block.
            let Some(found) = memchr::memmem::find(
                &data[at as usize - 1..end as usize],
                &[ObjectKind::BlockEnd as u8, ObjectKind::BlockStart as u8],
            ) else {
                break;
            };
            at += found as u64;
        }
        let before = out.lengths();
        match summarize_speculatively(data, PhysicalOffset(at), &mut out) {
            Ok(Step::Block(block)) if on_boundary || is_boundary(data, block.end.0 + 1) => {
                let after = block.end.0 + 1;
                report(after);
                out.blocks.push(block);
                at = after;
                on_boundary = true;
            }
            _ => {
                out.truncate(before);
                at += 1;
                on_boundary = false;
            }
        }
    }
    report(end);
    out
}

/// Whether a block, `EOF` or the end of the data stands at `offset`.
pub(super) fn is_boundary(data: &[u8], offset: u64) -> bool {
    match data.get(offset as usize) {
        None => offset == data.len() as u64,
        Some(&b) => b == ObjectKind::BlockStart as u8 || b == ObjectKind::Eof as u8,
    }
}

/// What is known of the containers a block's thread left open before it.
pub(super) enum Outer<'s> {
    /// Their types, innermost last.
    Known(&'s [TracepointType]),
    /// Unknown: footers closing them are decoded by assumption. The vector
    /// holds the types to assume for the first footers (forced guesses) and
    /// receives every type assumed.
    Guessed(&'s mut Vec<TracepointType>),
}

/// Footer types in the order they are tried.
pub(super) const FOOTER_CANDIDATES: [TracepointType; 3] = [
    TracepointType::MethodCall,
    TracepointType::LoopIteration,
    TracepointType::Loop,
];

/// Wrong guesses tried per block before leaving it to the exact pass.
pub(super) const MAX_GUESS_ATTEMPTS: usize = 16;

/// Summarizes the block at `at` without knowing its thread's open
/// containers, backtracking over footer-type guesses when a guess leads to
/// bytes that do not decode. On failure `out` may hold a partial summary:
/// the caller truncates it.
pub(super) fn summarize_speculatively(
    data: &[u8],
    at: PhysicalOffset,
    out: &mut Summaries,
) -> Result<Step, DecodeError> {
    let mut forced: Vec<TracepointType> = Vec::new();
    let mut attempts = 0;
    let before = out.lengths();
    loop {
        let mut guesses = forced.clone();
        let error = match summarize(data, at, Outer::Guessed(&mut guesses), out) {
            Ok(step) => return Ok(step),
            Err(error) => error,
        };
        out.truncate(before);
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

/// Summarizes the block at `at` into `out`, given what is known of the
/// containers its thread left open.
pub(super) fn summarize(
    data: &[u8],
    at: PhysicalOffset,
    outer: Outer<'_>,
    out: &mut Summaries,
) -> std::result::Result<Step, DecodeError> {
    // Compiled once per case, so that an index rebuild's loop carries no
    // node records' code.
    if out.collect_nodes {
        summarize_block::<true>(data, at, outer, out)
    } else {
        summarize_block::<false>(data, at, outer, out)
    }
}

/// [`summarize`], writing node records when `COLLECT_NODES` (which
/// `out.collect_nodes` says).
// Long: the per-object loop of the rebuild's hot path, one match over
// object kinds sharing the block's running state.
fn summarize_block<const COLLECT_NODES: bool>(
    data: &[u8],
    at: PhysicalOffset,
    mut outer: Outer<'_>,
    out: &mut Summaries,
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
                PhysicalOffset(at.0),
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
    let [cells_from, outers_from, _, nodes_from] = out.lengths();
    let collect_nodes = COLLECT_NODES;
    let mut tracepoints = 0u32;
    // The block's own cell; its end is known at its `BLOCK_END`.
    out.cells.push(IndexCell::Block {
        thread,
        start: at,
        end: PhysicalOffset(0),
    });
    let payload = from + BLOCK_HEADER_LEN as usize;
    // Containers opened in this block and still open.
    let mut local: Vec<Local> = Vec::new();
    let mut outer_closed = 0usize;
    let mut position = payload;
    loop {
        let bytes = &data[position..];
        // Tracepoints first: most objects are, and they need no container
        // type. Any other object, or a refused tracepoint, goes on below.
        if let Some((header, len)) = try_skip_tracepoint(bytes) {
            add_tracepoint::<COLLECT_NODES>(
                header,
                position,
                (position + len - payload) as u64,
                &mut local,
                &mut tracepoints,
                outer_closed,
                &mut out.nodes,
            );
            position += len;
            continue;
        }
        let relative = (position - payload) as u64;
        // Then footers of the block's own containers, whose type is known.
        if let Some(&container) = local.last()
            && let Some(len) = try_skip_footer(bytes, container.1)
        {
            local.pop();
            close_local::<COLLECT_NODES>(
                container,
                position,
                relative,
                &mut out.cells,
                (&mut out.nodes, nodes_from, &mut out.far_footers),
            );
            position += len;
            continue;
        }
        let mut outer_type = None;
        let open = match local.last() {
            Some(&(_, innermost, _, _, _)) => Some(innermost),
            None if bytes.first() == Some(&(ObjectKind::TracepointFooter as u8)) => {
                let assumed = match &mut outer {
                    Outer::Known(stack) => stack
                        .len()
                        .checked_sub(outer_closed + 1)
                        .map(|index| stack[index]),
                    Outer::Guessed(guesses) => match guesses.get(outer_closed) {
                        Some(&forced) => Some(forced),
                        None => {
                            let guess = assume_footer_type(bytes, position as u64);
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
        let (object, len) = match try_skip(bytes, open) {
            Some(skipped) => skipped,
            // Refused (bad bytes, or a footer with no container open):
            // decoded, which gives the error.
            None => {
                let mut reader = ByteReader::new(bytes, position as u64);
                match skip_object(&mut reader, open) {
                    Ok(object) => (object, reader.position()),
                    Err(DecodeError {
                        kind: DecodeErrorKind::UnexpectedEnd { .. },
                        ..
                    }) => return Ok(Step::Truncated(at)),
                    Err(error) => return Err(error),
                }
            }
        };
        position += len;
        match object.kind {
            ObjectKind::Tracepoint => match object.header {
                Some(header) => add_tracepoint::<COLLECT_NODES>(
                    header,
                    position - len,
                    (position - payload) as u64,
                    &mut local,
                    &mut tracepoints,
                    outer_closed,
                    &mut out.nodes,
                ),
                None => tracepoints += 1,
            },
            ObjectKind::TracepointFooter => match local.pop() {
                // Offsets relative to the block's payload until the stitch
                // makes them logical.
                Some(container) => close_local::<COLLECT_NODES>(
                    container,
                    position - len,
                    relative,
                    &mut out.cells,
                    (&mut out.nodes, nodes_from, &mut out.far_footers),
                ),
                None => {
                    outer_closed += 1;
                    // `open` was the assumed (or known) type: a footer
                    // without one does not skip.
                    if let Some(assumed) = outer_type {
                        out.outers
                            .push(((out.cells.len() - cells_from) as u32, assumed));
                        if collect_nodes {
                            out.outer_footers.push((position - len) as u64);
                        }
                    }
                    out.cells.push(IndexCell::Container {
                        event: EventId(0),
                        start: LogicalOffset(0),
                        end: LogicalOffset(relative),
                    });
                }
            },
            ObjectKind::BlockEnd => {
                let end = position as u64 - 1;
                if let IndexCell::Block { end: cell_end, .. } = &mut out.cells[cells_from] {
                    *cell_end = PhysicalOffset(end);
                }
                let opens_from = out.opens.len();
                out.opens
                    .extend(local.iter().map(|&(event, ty, start, node, children)| {
                        if collect_nodes {
                            out.nodes[nodes_from + node as usize].children = children;
                        }
                        (event, ty, start, node)
                    }));
                return Ok(Step::Block(BlockSummary {
                    thread,
                    start: at,
                    end: PhysicalOffset(end),
                    cells: cells_from..out.cells.len(),
                    outers: outers_from..out.outers.len(),
                    opens: opens_from..out.opens.len(),
                    nodes: nodes_from..out.nodes.len(),
                    tracepoints,
                }));
            }
            ObjectKind::BlockStart | ObjectKind::Eof => {
                return Err(DecodeError::new(
                    PhysicalOffset(position as u64 - len as u64),
                    DecodeErrorKind::UnexpectedObject {
                        found: object.kind,
                        context: "inside a block",
                    },
                ));
            }
            kind => {
                // A reference object: its id follows the kind byte(s).
                let offset = position as u64 - len as u64;
                if let Some((_, id)) = peek_kind_and_id(data, offset) {
                    out.cells.push(IndexCell::Reference {
                        kind,
                        id,
                        at: PhysicalOffset(offset),
                        end: -1,
                    });
                }
            }
        }
    }
}

/// A container opened in the block being summarized and still open: event,
/// type, content start relative to the payload, number among the block's
/// tracepoints, and children so far (counted when collecting nodes).
type Local = (EventId, TracepointType, u64, u32, u32);

/// Adds the block's next tracepoint, whose kind byte is at `offset` and
/// whose content (a container's) starts at `content` relative to the
/// block's payload: its node record when `COLLECT_NODES`, and a container
/// to `local`.
#[inline(always)]
fn add_tracepoint<const COLLECT_NODES: bool>(
    header: TracepointHeader,
    offset: usize,
    content: u64,
    local: &mut Vec<Local>,
    tracepoints: &mut u32,
    outer_closed: usize,
    nodes: &mut Vec<NodeRecord>,
) {
    if COLLECT_NODES {
        // Its parent: the innermost container open, in the block (which
        // counts it) or before it.
        let parent = match local.last_mut() {
            Some((_, _, _, parent, children)) => {
                *children += 1;
                *parent
            }
            None => outer_parent(outer_closed),
        };
        let offset = PhysicalOffset(offset as u64);
        nodes.push(NodeRecord::new(offset, header.tracepoint_type, parent));
    }
    if header.tracepoint_type.is_container() {
        local.push((
            header.event,
            header.tracepoint_type,
            content,
            *tracepoints,
            0,
        ));
    }
    *tracepoints += 1;
}

/// The summaries' node records, where the block's start, and the footers
/// too far for their records.
type BlockNodes<'s> = (
    &'s mut Vec<NodeRecord>,
    usize,
    &'s mut Vec<(usize, u32, u64)>,
);

/// Closes `container`, opened in the block, at its footer (at `footer`, at
/// `end` relative to the block's payload): its node record gets its
/// children and footer when `COLLECT_NODES` (the nodes are the eager
/// loader's cells), else it gets its cell, with offsets relative to the
/// block's payload until the stitch makes them logical.
#[inline(always)]
fn close_local<const COLLECT_NODES: bool>(
    (event, _, start, node, children): Local,
    footer: usize,
    end: u64,
    cells: &mut Vec<IndexCell>,
    (nodes, nodes_from, far_footers): BlockNodes<'_>,
) {
    if COLLECT_NODES {
        let record = &mut nodes[nodes_from + node as usize];
        record.children = children;
        if !record.set_footer(PhysicalOffset(footer as u64)) {
            far_footers.push((nodes_from, node, footer as u64));
        }
    } else {
        cells.push(IndexCell::Container {
            event,
            start: LogicalOffset(start),
            end: LogicalOffset(end),
        });
    }
}

/// Guesses the type of the container the footer at the start of `bytes`
/// (at `offset`) closes: the first type whose footer decodes and is
/// followed by a valid object (or another footer). The stitch step
/// verifies every guess.
pub(super) fn assume_footer_type(bytes: &[u8], offset: u64) -> Option<TracepointType> {
    FOOTER_CANDIDATES.into_iter().find(|&candidate| {
        let mut probe = ByteReader::new(bytes, offset);
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
