//! Everything built from the data alone: the parallel index rebuild (this
//! file, `discover.rs`, `stitch.rs`; the eager loader's nodes, `nodes.rs`),
//! a whole index file written or checked (`index_file.rs`: `tracetree
//! index`), a random-access reader's lookups rebuilt when the index is
//! missing or broken (`lookups.rs`), and a growing trace's lookups extended
//! over the data appended since (`extend.rs`, for a refresh).
//!
//! The data file has no block lengths, so blocks are found by parsing:
//!
//! 1. **Discover** (parallel): the file is cut into chunks (about 32 per
//!    worker, at least 1 MiB and 4 blocks). A chunk after the first starts
//!    at a `BLOCK_START` byte right after a `BLOCK_END` byte from which a
//!    whole block parses and is followed by another block, `EOF` or the
//!    end. Each block is *summarized* by skipping its objects: its cells in
//!    write order, the footers closing containers of earlier blocks (their
//!    type *assumed*, with backtracking), the containers it leaves open.
//! 2. **Stitch** (sequential, over the blocks' records only): each block
//!    must start where the previous ended, and a summary is used only if
//!    every assumed footer type equals the type on top of its thread's
//!    stack of open containers; otherwise the block is parsed again
//!    exactly. A wrong guess costs time, never correctness.
//! 3. **Finish** (parallel): base offsets and crossing cells filled in
//!    place, then the containers that never got a footer, and what the data
//!    lacked (the eager loader's `LoadReport`).
//!
//! **Windows.** `rebuild_index_windowed` runs the three steps one window of
//! the data at a time: the stitch carries each thread's logical length and
//! open containers to the next window, which ends where the block
//! straddling its nominal end ends; its cells go to a sink while the
//! workers discover the next, so the heap holds about one window's cells.
//!
//! **Invariants.** The rebuilt cells equal the recorder's as a set
//! (`IndexCell::canonical`) for every reference trace, chunking and
//! windowing, and every windowing gives the same cells in the same order
//! (`tests/read/rebuild.rs`). This layer imports `read::lookup`, never the
//! reverse, and never `read::lazy`.

mod discover;
mod extend;
mod index_file;
mod lookups;
mod nodes;
mod stitch;

use discover::*;
use stitch::*;

pub(crate) use extend::growing_view;
pub use index_file::IndexFile;
pub(crate) use lookups::*;
pub(crate) use nodes::{FAR, NodeBlock, NodeRecord, OFFSET_BITS, node_windows};

use rayon::prelude::*;

use crate::common::{EventId, LogicalOffset, ThreadId};
use crate::error::{Error, Result};
use crate::format::index::CELL_LEN;
use crate::format::{DATA_MAGIC, FILE_HEADER_LEN, IndexCell, check_file_header};
use crate::model::TracepointType;
use crate::read::LoadReport;

/// How to rebuild.
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct RebuildOptions {
    /// Worker threads; 0 uses every core. Capped by
    /// [`workers`](Self::workers).
    pub threads: usize,
    /// Bytes per discovery chunk; 0 chooses from the file size and threads.
    pub chunk_size: u64,
}

pub(crate) const MIN_CHUNK: u64 = RebuildOptions::MIN_CHUNK;
const MAX_WORKERS_PER_CORE: usize = RebuildOptions::MAX_WORKERS_PER_CORE;

impl RebuildOptions {
    /// The defaults (every core, chunks chosen from the file size), as a
    /// constant expression.
    pub const fn new() -> Self {
        RebuildOptions {
            threads: 0,
            chunk_size: 0,
        }
    }

    /// These options with `threads` workers (0: every core).
    pub const fn with_threads(mut self, threads: usize) -> Self {
        self.threads = threads;
        self
    }

    /// These options with discovery chunks of `bytes` (0: chosen from the
    /// file size and the threads).
    pub const fn with_chunk_size(mut self, bytes: u64) -> Self {
        self.chunk_size = bytes;
        self
    }

    /// The smallest discovery chunk chosen when
    /// [`chunk_size`](Self::chunk_size) is 0: a worker's unit of work.
    pub const MIN_CHUNK: u64 = 1 << 20;

    /// Workers per core a rebuild starts at most: more only add threads
    /// (each with its stack and allocator arena) that wait for a core.
    pub const MAX_WORKERS_PER_CORE: usize = 4;

    /// A window for [`RebuildOptions::rebuild_windowed`] that bounds its heap
    /// without slowing it: 128 MiB of data, whose cells take ~24 bytes per
    /// container or reference object (about 20 MB for a mixed trace; the
    /// windows' chunks reserve a cell per 64 bytes, touched only as
    /// filled).
    pub const DEFAULT_WINDOW: u64 = 128 << 20;

    /// The workers a rebuild of `data_len` bytes runs on: the threads
    /// asked for (every core for 0), but at most
    /// [`MAX_WORKERS_PER_CORE`](Self::MAX_WORKERS_PER_CORE) per core and at
    /// most one per discovery chunk (a chunk is at least
    /// [`MIN_CHUNK`](Self::MIN_CHUNK) bytes, or
    /// [`chunk_size`](Self::chunk_size)), never 0.
    /// Asking for thousands of threads would otherwise start them all, for
    /// a trace of a few kilobytes too.
    pub fn workers(&self, data_len: u64) -> usize {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let asked = if self.threads == 0 {
            cores
        } else {
            self.threads
        };
        let chunk = if self.chunk_size > 0 {
            self.chunk_size
        } else {
            MIN_CHUNK
        };
        let units = usize::try_from(data_len.div_ceil(chunk)).unwrap_or(usize::MAX);
        asked
            .min(cores.saturating_mul(MAX_WORKERS_PER_CORE))
            .min(units)
            .max(1)
    }
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

/// An index rebuilt from a data file: its cells (none when a windowed
/// rebuild gave them to its sink: [`RebuildOptions::rebuild_windowed`]), and
/// what the rebuild found in the data.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RebuiltIndex {
    /// The cells, in the streaming writer's order.
    cells: RebuiltCells,
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
pub(crate) struct RebuiltCells {
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
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The runs, whose concatenation is the cells.
    pub(crate) fn runs(&self) -> impl Iterator<Item = &[IndexCell]> {
        self.runs.iter().map(Run::cells)
    }

    /// The cells in one array (a copy).
    pub(crate) fn into_vec(self) -> Vec<IndexCell> {
        let mut cells = Vec::with_capacity(self.len);
        self.runs().for_each(|run| cells.extend_from_slice(run));
        cells
    }
}

impl RebuiltIndex {
    /// Rebuilds the index of the data file `data`.
    pub fn build(data: &[u8], options: RebuildOptions) -> Result<RebuiltIndex> {
        rebuild_index_observed(data, options, &|_| {})
    }

    /// The cells in order.
    pub fn cells(&self) -> impl Iterator<Item = &IndexCell> {
        self.cells.runs().flatten()
    }

    /// The number of cells.
    pub fn cell_count(&self) -> usize {
        self.cells.len()
    }

    /// What a rebuild found, with its `cells` (none when they went to a sink).
    fn from_outcome(outcome: RebuildOutcome, cells: RebuiltCells) -> RebuiltIndex {
        RebuiltIndex {
            cells,
            unfinished: outcome.unfinished,
            blocks: outcome.blocks,
            report: outcome.report,
        }
    }
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
    Ok(RebuiltIndex::from_outcome(outcome, RebuiltCells::new(runs)))
}

/// [`RebuildOptions::DEFAULT_WINDOW`].
pub(crate) const DEFAULT_WINDOW: u64 = RebuildOptions::DEFAULT_WINDOW;

/// Rebuilds the index of `data` in windows of `window` bytes straight into
/// an index file's bytes: header, each window's cells as they are made (in
/// the streaming writer's order), and a footer, written to `out`; calls
/// `done` with the data each window covered (to release its pages; an
/// error from it, such as [`Error::Cancelled`], ends the rebuild).
/// Returns what the rebuild found and the number of cells written. The
/// heap holds one window's cells. `seen` gets the cells as they are
/// written, in runs whose concatenation is them (while the workers
/// discover the next window). I/O errors are [`Error::Io`] without a path.
pub fn write_rebuilt_index(
    data: &[u8],
    options: RebuildOptions,
    window: u64,
    progress: &(dyn Fn(u64) + Sync),
    out: &mut (dyn std::io::Write + Send),
    seen: &mut (dyn FnMut(&[IndexCell]) + Send),
    done: &(dyn Fn(std::ops::Range<u64>) -> Result<()> + Sync),
) -> Result<(RebuildOutcome, usize)> {
    out.write_all(&crate::format::file_header(crate::format::INDEX_MAGIC))?;
    let mut cells = 0;
    // Cells are encoded into pieces of at least `out`'s buffer (1 MiB for
    // `tracetree index`), which it writes without copying them; appended
    // 64 KiB at a time, they never outgrow the capacity reserved here.
    const WRITE_BYTES: usize = 1 << 20;
    const CELLS_APPENDED: usize = (64 << 10) / CELL_LEN;
    let mut bytes = Vec::with_capacity(WRITE_BYTES + CELLS_APPENDED * CELL_LEN);
    let outcome =
        rebuild_index_windowed(data, options, window, progress, &mut |window, covered| {
            cells += window.len();
            for run in window.runs() {
                seen(run);
                for piece in run.chunks(CELLS_APPENDED) {
                    IndexCell::encode_all_into(piece, &mut bytes);
                    if bytes.len() >= WRITE_BYTES {
                        out.write_all(&bytes)?;
                        bytes.clear();
                    }
                }
            }
            done(covered)
        })?;
    out.write_all(&bytes)?;
    crate::format::index::encode_index_footer(out, -1, -1)?;
    Ok((outcome, cells))
}

/// What a windowed rebuild returns besides the cells it gave its sink.
#[derive(Debug, Clone)]
pub(crate) struct RebuildOutcome {
    /// Containers without footers, which have no cells.
    pub unfinished: Vec<UnfinishedContainer>,
    /// Complete blocks.
    pub blocks: usize,
    /// What the data file lacked.
    pub report: LoadReport,
}

impl RebuildOptions {
    /// Rebuilds the index of `data` one window of about `window` bytes of
    /// data at a time, so that the heap holds one window's cells, not the
    /// file's: each window is discovered in parallel and stitched onto the
    /// state the windows before it left (each thread's logical length and
    /// open containers), then its finished cells go to `sink` (in the
    /// streaming writer's order, each window's after the previous one's)
    /// with the range of data they cover, and are dropped. A window's cells
    /// come as runs whose concatenation is them. A window ends at
    /// the end of the block that straddles its nominal end; `sink` gets a
    /// window's cells while the next window is discovered. `window` of
    /// `u64::MAX` is one window. The index returned holds no cells (they
    /// went to `sink`), only what the rebuild found.
    // The sink's type says what it gets: runs of cells, and the data they cover.
    #[allow(clippy::type_complexity)]
    pub fn rebuild_windowed(
        self,
        data: &[u8],
        window: u64,
        progress: &(dyn Fn(u64) + Sync),
        sink: &mut (dyn FnMut(&[&[IndexCell]], std::ops::Range<u64>) -> Result<()> + Send),
    ) -> Result<RebuiltIndex> {
        let outcome =
            rebuild_index_windowed(data, self, window, progress, &mut |cells, covered| {
                let runs: Vec<&[IndexCell]> = cells.runs().collect();
                sink(&runs, covered)
            })?;
        Ok(RebuiltIndex::from_outcome(outcome, RebuiltCells::default()))
    }
}

/// [`RebuildOptions::rebuild_windowed`].
pub(crate) fn rebuild_index_windowed(
    data: &[u8],
    options: RebuildOptions,
    window: u64,
    progress: &(dyn Fn(u64) + Sync),
    sink: &mut (dyn FnMut(RebuiltCells, std::ops::Range<u64>) -> Result<()> + Send),
) -> Result<RebuildOutcome> {
    let parallel = options.workers(data.len() as u64) > 1;
    stitch_windows(
        data,
        options,
        window,
        false,
        progress,
        &mut |stitched, covered| {
            let cells = finish_cells(
                &mut stitched.sources,
                &stitched.segments,
                &stitched.patches,
                parallel,
            );
            sink(cells, covered)
        },
    )
}

/// The windows of a rebuild: each window of `data` discovered in parallel
/// and stitched onto the state the windows before it left, then given to
/// `sink` (with the range of data it covers) while the next window is
/// discovered. With `collect_nodes` the summaries also hold every
/// tracepoint's node record, for [`node_windows`]. A window's summaries,
/// once its sink is done with them, are emptied and reused by a later
/// window's chunks: their memory is allocated and first touched once.
fn stitch_windows(
    data: &[u8],
    options: RebuildOptions,
    window: u64,
    collect_nodes: bool,
    progress: &(dyn Fn(u64) + Sync),
    sink: &mut (dyn FnMut(&mut Stitched, std::ops::Range<u64>) -> Result<()> + Send),
) -> Result<RebuildOutcome> {
    check_file_header(data, DATA_MAGIC)?;
    let len = data.len() as u64;
    let threads = options.workers(len);
    let window = window.max(1);
    // Summaries the sink is done with, for the next chunks to fill: at
    // most a window's chunks' (the stitch's exact re-reads come after
    // them, and are dropped past that).
    let spare: std::sync::Mutex<Vec<Summaries>> = std::sync::Mutex::default();
    let most_spare = threads.saturating_mul(32) + 1;
    let reuse = || {
        let mut spare = spare.lock().unwrap_or_else(|e| e.into_inner());
        spare.pop().unwrap_or_default()
    };
    let mut sink = |mut stitched: Stitched, covered| {
        let sunk = sink(&mut stitched, covered);
        let mut spare = spare.lock().unwrap_or_else(|e| e.into_inner());
        spare.append(&mut stitched.sources);
        spare.truncate(most_spare);
        sunk
    };
    let mut rebuild = || -> Result<RebuildOutcome> {
        let mut stitch = Stitch {
            collect_nodes,
            ..Stitch::default()
        };
        // The file header, which no chunk covers.
        progress(stitch.at.0.min(len));
        // The previous window's cells, given to `sink` while the next
        // window is discovered.
        let mut pending: Option<(Stitched, std::ops::Range<u64>)> = None;
        loop {
            let start = stitch.at.0;
            let end = start.saturating_add(window).min(len);
            let last = end == len;
            let body = end - start;
            let chunk_size = if options.chunk_size > 0 {
                options.chunk_size
            } else {
                // At least four of the blocks seen so far: a chunk after
                // the first searches for its first boundary, about half a
                // block, and a chunk shorter than a block may hold no block
                // start at all. But two chunks a worker at least.
                let typical_block = (stitch.at.0 - FILE_HEADER_LEN) / stitch.blocks.max(1) as u64;
                let chunk = (body / (threads as u64 * 32)).max(MIN_CHUNK);
                let most = (body / (threads as u64 * 2)).max(chunk);
                (4 * typical_block).clamp(chunk, most)
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
            let discover = |(i, &chunk): (usize, &(u64, u64))| {
                discover_chunk(data, chunk, i == 0, collect_nodes, progress, reuse())
            };
            let mut write_pending = || match pending.take() {
                Some((cells, covered)) => sink(cells, covered),
                None => Ok(()),
            };
            let (summaries, written) = if parallel {
                rayon::join(
                    || chunks.par_iter().enumerate().map(discover).collect(),
                    write_pending,
                )
            } else {
                let written = write_pending();
                (chunks.iter().enumerate().map(discover).collect(), written)
            };
            written?;
            let until = if last { u64::MAX } else { end };
            let cells = stitch.window(data, summaries, until)?;
            let covered = stitch.at.0.min(len);
            if stitch.done || last {
                sink(cells, start..covered)?;
                // Progress adds up to the data's length exactly.
                progress(len.saturating_sub(end.max(covered)));
                return Ok(stitch.outcome());
            }
            pending = Some((cells, start..covered));
            // The block straddling the window's end, past what its chunks
            // reported.
            progress(covered.saturating_sub(end));
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
            .map_err(|e| Error::invalid("threads", format!("cannot start {threads}: {e}")))?
            .install(rebuild)
    }
}
