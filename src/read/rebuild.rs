//! Rebuilding an index from the data file alone, in parallel.
//!
//! The data file has no block lengths, so blocks are found by parsing. The
//! rebuild runs in three steps:
//!
//! 1. **Discover** (parallel, rayon): the file is cut into chunks. The first
//!    chunk starts at the first block; every other chunk looks for its first
//!    `BLOCK_START` byte right after a `BLOCK_END` byte (every block but the
//!    file's first follows one) from which a whole block parses and is
//!    followed by another block, `EOF` or the end of the data, then follows
//!    that chain of blocks to the end of its chunk. Each block is *summarized* into its
//!    chunk's flat arrays: its cells in write order (containers opened and
//!    closed in the block paired there, with offsets relative to its
//!    payload), the footers closing containers of earlier blocks, and the
//!    containers it leaves open. A footer that closes a container opened in
//!    an earlier block of the thread cannot be decoded without knowing that
//!    container's type, so the summary *assumes* the type whose footer
//!    decodes and is followed by a valid object, and records the assumption.
//! 2. **Stitch** (sequential, over the blocks' records only): starting at
//!    the first block, each next block must start where the previous one
//!    ended. A summary is used only if it starts exactly there and every
//!    assumed footer type equals the type on top of the thread's stack of
//!    open containers; otherwise the block is summarized again exactly (with
//!    the known stack). So a wrong guess, or a chunk that started on a false
//!    `BLOCK_START`, costs time, never correctness. Each thread's logical
//!    offsets are its running payload length: the stitch records each
//!    block's base and where the cells of crossing containers land.
//! 3. **Finish** (parallel, run by run): the cells stay in the chunks'
//!    arrays. Each run of consecutive blocks of one chunk is finished in
//!    place — container offsets made logical, the cells of crossing
//!    containers filled in — and the result is the list of runs
//!    ([`RebuiltCells`]), so no cell is copied (but for the rare run that is
//!    not consecutive in its chunk). The cells come in the streaming
//!    writer's order (a block's `BLOCK_START` cell, then its cells in write
//!    order, containers at their footers); the containers that never got a
//!    footer are listed apart.

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::error::{DecodeError, DecodeErrorKind, Error, Result};
use crate::format::object::peek_kind_and_id;
use crate::format::offset::{EventId, LogicalOffset, PhysicalOffset, ThreadId};
use crate::format::skip::{skip_object, try_skip};
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
    pub cells: RebuiltCells,
    /// Containers without footers, which have no cells.
    pub unfinished: Vec<UnfinishedContainer>,
    /// Complete blocks.
    pub blocks: usize,
    /// What the data file lacked.
    pub report: LoadReport,
}

/// A rebuilt index's cells: runs that, one after the other, are the cells
/// in the streaming writer's order. Each run is cells that the rebuild's
/// workers finished in place (one run per chunk of the data file, as a
/// rule), so that the rebuild does not copy them into one array.
#[derive(Debug, Clone, Default)]
pub struct RebuiltCells {
    runs: Vec<Run>,
    len: usize,
}

/// A run of cells: the `used` range of an array.
#[derive(Debug, Clone, Default)]
struct Run {
    cells: Vec<IndexCell>,
    used: std::ops::Range<usize>,
}

impl Run {
    fn cells(&self) -> &[IndexCell] {
        &self.cells[self.used.clone()]
    }
}

impl RebuiltCells {
    fn new(runs: Vec<Run>) -> RebuiltCells {
        let len = runs.iter().map(|run| run.used.len()).sum();
        RebuiltCells { runs, len }
    }

    /// The number of cells.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no cells.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The cells in order.
    pub fn iter(&self) -> impl Iterator<Item = &IndexCell> {
        self.runs().flatten()
    }

    /// The runs, whose concatenation is the cells.
    pub fn runs(&self) -> impl Iterator<Item = &[IndexCell]> {
        self.runs.iter().map(Run::cells)
    }

    /// The cells in one array (a copy).
    pub fn into_vec(self) -> Vec<IndexCell> {
        let mut cells = Vec::with_capacity(self.len);
        self.runs().for_each(|run| cells.extend_from_slice(run));
        cells
    }
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
    let mut runs = Vec::new();
    let outcome = rebuild_index_windowed(data, options, u64::MAX, progress, &mut |cells, _| {
        runs.extend(cells.runs);
        Ok(())
    })?;
    Ok(RebuiltIndex {
        cells: RebuiltCells::new(runs),
        unfinished: outcome.unfinished,
        blocks: outcome.blocks,
        report: outcome.report,
    })
}

/// A window for [`rebuild_index_windowed`] that bounds its heap without
/// slowing it: 128 MiB of data, whose cells take ~24 bytes per container or
/// reference object (about 20 MB for a mixed trace; the windows' chunks
/// reserve a cell per 64 bytes, touched only as filled).
pub const DEFAULT_WINDOW: u64 = 128 << 20;

/// Rebuilds the index of `data` in windows of `window` bytes straight into
/// an index file's bytes: header, each window's cells as they are made (in
/// the streaming writer's order), and a footer, written to `out`; calls
/// `done` with the data each window covered (to release its pages).
/// Returns what the rebuild found and the number of cells written. The
/// heap holds one window's cells. I/O errors are [`Error::Stream`].
pub fn write_rebuilt_index(
    data: &[u8],
    options: RebuildOptions,
    window: u64,
    progress: &(dyn Fn(u64) + Sync),
    out: &mut (dyn std::io::Write + Send),
    done: &(dyn Fn(std::ops::Range<u64>) + Sync),
) -> Result<(RebuildOutcome, usize)> {
    out.write_all(&crate::format::file_header(crate::format::INDEX_MAGIC))?;
    let mut cells = 0;
    let outcome =
        rebuild_index_windowed(data, options, window, progress, &mut |window, covered| {
            cells += window.len();
            window.iter().try_for_each(|cell| cell.encode(out))?;
            done(covered);
            Ok(())
        })?;
    crate::format::index::encode_index_footer(out, -1, -1)?;
    Ok((outcome, cells))
}

/// What a windowed rebuild returns besides the cells it gave its sink.
#[derive(Debug, Clone)]
pub struct RebuildOutcome {
    /// Containers without footers, which have no cells.
    pub unfinished: Vec<UnfinishedContainer>,
    /// Complete blocks.
    pub blocks: usize,
    /// What the data file lacked.
    pub report: LoadReport,
}

/// Rebuilds the index of `data` one window of about `window` bytes of data
/// at a time, so that the heap holds one window's cells, not the file's:
/// each window is discovered in parallel and stitched onto the state the
/// windows before it left (each thread's logical length and open
/// containers), then its finished cells go to `sink` (in the streaming
/// writer's order, each window's after the previous one's) with the range
/// of data they cover, and are dropped. A window ends at the end of the
/// block that straddles its nominal end. `window` of `u64::MAX` is one
/// window: [`rebuild_index_observed`].
pub fn rebuild_index_windowed(
    data: &[u8],
    options: RebuildOptions,
    window: u64,
    progress: &(dyn Fn(u64) + Sync),
    sink: &mut (dyn FnMut(RebuiltCells, std::ops::Range<u64>) -> Result<()> + Send),
) -> Result<RebuildOutcome> {
    check_file_header(data, DATA_MAGIC)?;
    let threads = if options.threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        options.threads
    };
    let len = data.len() as u64;
    let window = window.max(1);
    let mut rebuild = || -> Result<RebuildOutcome> {
        let mut stitch = Stitch::default();
        loop {
            let start = stitch.at.0;
            let end = start.saturating_add(window).min(len);
            let last = end == len;
            let body = end - start;
            let chunk_size = if options.chunk_size > 0 {
                options.chunk_size
            } else {
                (body / (threads as u64 * 32)).max(1 << 20)
            };
            let chunks: Vec<(u64, u64)> = (0..body.div_ceil(chunk_size).max(1))
                .map(|i| {
                    let from = start + i * chunk_size;
                    (from, (from + chunk_size).min(end))
                })
                .collect();
            let parallel = threads > 1 && chunks.len() > 1;
            // A window's first chunk starts where the previous window's
            // last block ended: a known boundary.
            let discover = |(i, &(from, to)): (usize, &(u64, u64))| {
                discover_chunk(data, from, to, i == 0, progress)
            };
            let summaries = if parallel {
                chunks.par_iter().enumerate().map(discover).collect()
            } else {
                chunks.iter().enumerate().map(discover).collect()
            };
            let until = if last { u64::MAX } else { end };
            let cells = stitch.window(data, summaries, until, parallel)?;
            sink(cells, start..stitch.at.0.min(len))?;
            if stitch.done || last {
                return Ok(stitch.outcome());
            }
        }
    };
    // The pool this runs in (rayon's global one, usually) serves when it
    // has the threads asked for: its workers, and the memory their
    // allocator arenas already hold, are reused from call to call.
    if threads == 1 || options.threads == 0 || threads == rayon::current_num_threads() {
        rebuild()
    } else {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .map_err(|e| Error::Usage(format!("cannot start {threads} threads: {e}")))?
            .install(rebuild)
    }
}

/// What discovery found in one chunk (or the stitch re-read exactly):
/// its blocks, and their cells and crossing containers in flat arrays that
/// each block has a range of (no allocation per block).
#[derive(Debug, Default)]
struct Summaries {
    blocks: Vec<BlockSummary>,
    /// The blocks' cells, each block's in write order after its
    /// `BLOCK_START` cell. A container cell's offsets are relative to its
    /// block's payload (the stitch adds the thread's logical length before
    /// the block); one closing a container of an earlier block is a
    /// placeholder whose id and start the stitch fills in.
    cells: Vec<IndexCell>,
    /// Footers closing containers of earlier blocks: the placeholder cell's
    /// index within its block's cells, and the type assumed (or known) for
    /// the container. They come before any of the block's `opens`.
    outers: Vec<(u32, TracepointType)>,
    /// Containers the block leaves open, outermost first: event, type,
    /// content start relative to the block's payload.
    opens: Vec<(EventId, TracepointType, u64)>,
}

impl Summaries {
    fn lengths(&self) -> [usize; 3] {
        [self.cells.len(), self.outers.len(), self.opens.len()]
    }

    /// Forgets what a failed summary added.
    fn truncate(&mut self, [cells, outers, opens]: [usize; 3]) {
        self.cells.truncate(cells);
        self.outers.truncate(outers);
        self.opens.truncate(opens);
    }
}

#[derive(Debug, Clone)]
struct BlockSummary {
    thread: ThreadId,
    start: PhysicalOffset,
    end: PhysicalOffset,
    cells: std::ops::Range<usize>,
    outers: std::ops::Range<usize>,
    opens: std::ops::Range<usize>,
}

impl BlockSummary {
    fn payload_len(&self) -> u64 {
        self.end.0 - self.start.0 - BLOCK_HEADER_LEN
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
/// plausible `BLOCK_START` (one right after a `BLOCK_END` byte); the stitch
/// step parses such gaps exactly.
fn discover_chunk(
    data: &[u8],
    start: u64,
    end: u64,
    exact_start: bool,
    progress: &(dyn Fn(u64) + Sync),
) -> Summaries {
    // Room for a cell per 64 bytes (a mixed trace has one per ~160): the
    // cells are not copied again and again as the vector grows (pages the
    // chunk does not fill are never touched).
    let mut out = Summaries {
        cells: Vec::with_capacity(((end - start) / 64) as usize),
        ..Summaries::default()
    };
    let mut at = start;
    // Whether `at` is known to be a block boundary (the chunk's exact start,
    // or just after a block of the chain).
    let mut on_boundary = exact_start;
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
                progress(after - block.start.0);
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
    out
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
/// bytes that do not decode. On failure `out` may hold a partial summary:
/// the caller truncates it.
fn summarize_speculatively(
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
fn summarize(
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
    let [cells_from, outers_from, _] = out.lengths();
    // The block's own cell; its end is known at its `BLOCK_END`.
    out.cells.push(IndexCell {
        kind: ObjectKind::BlockStart,
        id: thread.0,
        start: at.0 as i64,
        end: 0,
    });
    let payload = from + BLOCK_HEADER_LEN as usize;
    // Containers opened in this block and still open: event, type, content
    // start relative to the payload.
    let mut local: Vec<(EventId, TracepointType, u64)> = Vec::new();
    let mut outer_closed = 0usize;
    let mut position = payload;
    loop {
        let bytes = &data[position..];
        let relative = (position - payload) as u64;
        let mut outer_type = None;
        let open = match local.last() {
            Some(&(_, innermost, _)) => Some(innermost),
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
            ObjectKind::Tracepoint => {
                if let Some(header) = object.header
                    && header.tracepoint_type.is_container()
                {
                    local.push((
                        header.event,
                        header.tracepoint_type,
                        (position - payload) as u64,
                    ));
                }
            }
            ObjectKind::TracepointFooter => match local.pop() {
                Some((event, _, start)) => out.cells.push(IndexCell {
                    kind: ObjectKind::Tracepoint,
                    id: event.0,
                    start: start as i64,
                    end: relative as i64,
                }),
                None => {
                    outer_closed += 1;
                    // `open` was the assumed (or known) type: a footer
                    // without one does not skip.
                    if let Some(assumed) = outer_type {
                        out.outers
                            .push(((out.cells.len() - cells_from) as u32, assumed));
                    }
                    out.cells.push(IndexCell {
                        kind: ObjectKind::Tracepoint,
                        id: 0,
                        start: 0,
                        end: relative as i64,
                    });
                }
            },
            ObjectKind::BlockEnd => {
                let end = position as u64 - 1;
                out.cells[cells_from].end = end as i64;
                let opens_from = out.opens.len();
                out.opens.extend_from_slice(&local);
                return Ok(Step::Block(BlockSummary {
                    thread,
                    start: at,
                    end: PhysicalOffset(end),
                    cells: cells_from..out.cells.len(),
                    outers: outers_from..out.outers.len(),
                    opens: opens_from..out.opens.len(),
                }));
            }
            ObjectKind::BlockStart | ObjectKind::Eof => {
                return Err(DecodeError::new(
                    position as u64 - len as u64,
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
                    out.cells.push(IndexCell {
                        kind,
                        id,
                        start: offset as i64,
                        end: -1,
                    });
                }
            }
        }
    }
}

/// Guesses the type of the container the footer at the start of `bytes`
/// (at `offset`) closes: the first type whose footer decodes and is
/// followed by a valid object (or another footer). The stitch step
/// verifies every guess.
fn assume_footer_type(bytes: &[u8], offset: u64) -> Option<TracepointType> {
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

#[derive(Default)]
struct ThreadState {
    thread: ThreadId,
    logical_len: u64,
    open: Vec<(EventId, TracepointType, LogicalOffset)>,
}

/// A block's cells in the result: the summaries (`sources` index: a
/// chunk's, or one the stitch re-read exactly) and the range of their cells
/// that are the block's, with `base` to add to container offsets and the
/// range of `patches` that fill in its placeholder cells.
#[derive(Debug, Clone)]
struct Segment {
    source: usize,
    cells: std::ops::Range<usize>,
    base: u64,
    patches: std::ops::Range<usize>,
}

/// Fills in a placeholder cell (one closing a container of an earlier
/// block): its index in its block's cells, the container's event and
/// logical content start.
type Patch = (u32, EventId, LogicalOffset);

/// What the stitch carries from one window of the data to the next.
struct Stitch {
    threads: Vec<ThreadState>,
    slots: FxHashMap<ThreadId, usize>,
    report: LoadReport,
    /// Where the next block starts.
    at: PhysicalOffset,
    blocks: usize,
    /// Whether the data's end (`EOF`, the end of the bytes, or a truncated
    /// block) was reached.
    done: bool,
}

impl Default for Stitch {
    fn default() -> Self {
        Stitch {
            threads: Vec::new(),
            slots: FxHashMap::default(),
            report: LoadReport::default(),
            at: PhysicalOffset(FILE_HEADER_LEN),
            blocks: 0,
            done: false,
        }
    }
}

impl Stitch {
    /// Stitches the blocks from `self.at` on that start before `until`,
    /// using the chunks' summaries (in file order) where they hold: decides,
    /// block by block, which summary holds and each thread's logical
    /// offsets (sequential, but reading only the blocks' records and
    /// crossing containers), then makes the blocks' cells final where they
    /// are, in parallel when `parallel`.
    fn window(
        &mut self,
        data: &[u8],
        mut sources: Vec<Summaries>,
        until: u64,
        parallel: bool,
    ) -> Result<RebuiltCells> {
        let chunks = sources.len();
        let Stitch {
            threads,
            slots,
            report,
            at,
            ..
        } = self;
        let mut segments: Vec<Segment> = Vec::new();
        let mut patches: Vec<Patch> = Vec::new();
        // The next speculative summary to look at: chunk, block.
        let (mut chunk, mut next) = (0usize, 0usize);
        while at.0 < until {
            // Move to the first summary starting at or after `at`.
            while chunk < chunks {
                match sources[chunk].blocks.get(next) {
                    Some(block) if block.start < *at => next += 1,
                    Some(_) => break,
                    None => (chunk, next) = (chunk + 1, 0),
                }
            }
            let speculative = sources[..chunks]
                .get(chunk)
                .and_then(|summaries| summaries.blocks.get(next))
                .filter(|block| {
                    if block.start != *at {
                        return false;
                    }
                    let open = slots
                        .get(&block.thread)
                        .map_or(&[][..], |&slot| &threads[slot].open[..]);
                    let mut expected = open.iter().rev().map(|&(_, ty, _)| ty);
                    sources[chunk].outers[block.outers.clone()]
                        .iter()
                        .all(|&(_, ty)| expected.next() == Some(ty))
                });
            let (source, index) = match speculative {
                Some(_) => (chunk, next),
                None => {
                    let thread = read_block_thread(data, *at);
                    let stack: Vec<TracepointType> = thread
                        .and_then(|thread| slots.get(&thread))
                        .map(|&slot| threads[slot].open.iter().map(|&(_, ty, _)| ty).collect())
                        .unwrap_or_default();
                    let mut exact = Summaries::default();
                    match summarize(data, *at, Outer::Known(&stack), &mut exact)? {
                        Step::Block(block) => {
                            exact.blocks.push(block);
                            sources.push(exact);
                            (sources.len() - 1, 0)
                        }
                        Step::Eof(offset) => {
                            report.trailing_bytes = data.len() as u64 - offset.0 - 1;
                            self.done = true;
                            break;
                        }
                        Step::End => {
                            report.missing_eof = true;
                            self.done = true;
                            break;
                        }
                        Step::Truncated(start) => {
                            report.missing_eof = true;
                            report.dropped_blocks = 1;
                            report.dropped_bytes = data.len() as u64 - start.0;
                            self.done = true;
                            break;
                        }
                    }
                }
            };
            let summaries = &sources[source];
            let block = &summaries.blocks[index];
            let slot = *slots.entry(block.thread).or_insert_with(|| {
                threads.push(ThreadState {
                    thread: block.thread,
                    ..ThreadState::default()
                });
                threads.len() - 1
            });
            let state = &mut threads[slot];
            let base = state.logical_len;
            let patches_from = patches.len();
            for &(cell, _) in &summaries.outers[block.outers.clone()] {
                // Verified above, or summarized exactly: a container is open.
                if let Some((event, _, start)) = state.open.pop() {
                    patches.push((cell, event, start));
                }
            }
            state.open.extend(
                summaries.opens[block.opens.clone()]
                    .iter()
                    .map(|&(event, ty, start)| (event, ty, LogicalOffset(base + start))),
            );
            state.logical_len += block.payload_len();
            segments.push(Segment {
                source,
                cells: block.cells.clone(),
                base,
                patches: patches_from..patches.len(),
            });
            *at = PhysicalOffset(block.end.0 + 1);
        }
        self.blocks += segments.len();
        Ok(finish_cells(&mut sources, &segments, &patches, parallel))
    }

    /// The containers left open (never finished), and what the data lacked.
    fn outcome(mut self) -> RebuildOutcome {
        self.threads.sort_by_key(|t| t.thread);
        let unfinished: Vec<UnfinishedContainer> = self
            .threads
            .iter()
            .flat_map(|t| {
                t.open
                    .iter()
                    .map(
                        move |&(event, tracepoint_type, content_start)| UnfinishedContainer {
                            thread: t.thread,
                            event,
                            tracepoint_type,
                            content_start,
                        },
                    )
            })
            .collect();
        self.report.unfinished_containers = unfinished.len();
        RebuildOutcome {
            unfinished,
            blocks: self.blocks,
            report: self.report,
        }
    }
}

/// The cells of `segments`, made final: container offsets made logical and
/// placeholder cells filled in. Consecutive segments of one source form a
/// run. A run of consecutive cells of a source that no other run uses (a
/// chunk's blocks, but for the first when it was a false start: the usual
/// case) is finished in place, without a copy; the others are copied out of
/// their sources. Runs are finished in parallel when `parallel`.
fn finish_cells(
    sources: &mut [Summaries],
    segments: &[Segment],
    patches: &[Patch],
    parallel: bool,
) -> RebuiltCells {
    let groups: Vec<&[Segment]> = segments.chunk_by(|a, b| a.source == b.source).collect();
    let mut runs_of = vec![0usize; sources.len()];
    for group in &groups {
        runs_of[group[0].source] += 1;
    }
    // The arrays of the runs finished in place, taken out of their sources.
    let taken: Vec<Option<Vec<IndexCell>>> = groups
        .iter()
        .map(|group| {
            let source = group[0].source;
            let consecutive = group.windows(2).all(|w| w[0].cells.end == w[1].cells.start);
            (consecutive && runs_of[source] == 1)
                .then(|| std::mem::take(&mut sources[source].cells))
        })
        .collect();
    let sources: &[Summaries] = sources;
    let finish = |(group, taken): (&[Segment], Option<Vec<IndexCell>>)| {
        let mut run = match taken {
            Some(cells) => Run {
                cells,
                used: group[0].cells.start..group[group.len() - 1].cells.end,
            },
            None => {
                let cells: Vec<IndexCell> = group
                    .iter()
                    .flat_map(|segment| &sources[segment.source].cells[segment.cells.clone()])
                    .copied()
                    .collect();
                let used = 0..cells.len();
                Run { cells, used }
            }
        };
        let mut at = run.used.start;
        for segment in group {
            let cells = &mut run.cells[at..at + segment.cells.len()];
            at += segment.cells.len();
            let base = segment.base as i64;
            for cell in cells.iter_mut() {
                if cell.kind == ObjectKind::Tracepoint {
                    cell.start += base;
                    cell.end += base;
                }
            }
            for &(index, event, start) in &patches[segment.patches.clone()] {
                let cell = &mut cells[index as usize];
                cell.id = event.0;
                cell.start = start.0 as i64;
            }
        }
        run
    };
    let runs: Vec<Run> = if parallel {
        groups.into_par_iter().zip(taken).map(finish).collect()
    } else {
        groups.into_iter().zip(taken).map(finish).collect()
    };
    RebuiltCells::new(runs)
}

/// The thread id of the block starting at `at`, if a `BLOCK_START` is there.
fn read_block_thread(data: &[u8], at: PhysicalOffset) -> Option<ThreadId> {
    match crate::format::object::peek_kind_and_id(data, at.0) {
        Some((ObjectKind::BlockStart, id)) => Some(ThreadId(id)),
        _ => None,
    }
}
