//! The lookup structures a random-access reader needs (blocks, reference
//! objects, container ranges), from an index file checked against the data
//! file, or rebuilt by scanning the data file when the index is missing or
//! broken.
//!
//! An index is broken (FORMAT-NOTES, "Our policy") when it is missing or
//! shorter than a header and a footer; its magic or version differ; a cell
//! points outside the data file; a reference cell's target does not start
//! with the same kind and id; a block cell does not start with `BLOCK_START`
//! of its thread; or a container cell's range is not inside its thread's
//! logical stream. tracetree also rejects what would make the reader lose
//! data or misplace children: a block cell whose end is not a `BLOCK_END`,
//! blocks that leave a gap or leave data after the last indexed block
//! (other than `EOF`), cells of kinds an index never holds, and a container
//! cell that belongs to no block cell. All of this is checked in one pass
//! over the cells when the index is opened.
//!
//! Each thread's container table is built from its cells when the thread is
//! first used; cells that overlap without nesting then make that thread's
//! containers be found by scanning its stream instead (reported by
//! [`LazyTraceReader::thread_problems`](crate::read::LazyTraceReader::thread_problems)). An index without footer (a crashed recorder's) is
//! repaired when opened: containers it has no cell for are found by
//! scanning only where they can be (`Lookup::repair_all`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use rayon::prelude::*;

use crate::error::{DecodeError, Error, Result};
use crate::format::bytes::ByteReader;
use crate::format::index::{CELL_LEN, INDEX_FOOTER_LEN, RawIndexCell, parse_index};
use crate::format::object::peek_kind_and_id;
use crate::format::offset::{LogicalOffset, PhysicalOffset, ThreadId};
use crate::format::skip::skip_object;
use crate::format::{BLOCK_HEADER_LEN, FILE_HEADER_LEN, ObjectKind};
use crate::model::ContextBuilder;
use crate::read::block_table::{BlockInfo, BlockSpan, BlockTable};
use crate::read::containers::{
    CellView, ContainerTable, Containers, Converted, FileCells, NestingError, Placed,
    PostOrderCursor, Source, WithMadeCells,
};
use crate::read::eager::LoadReport;
use crate::read::lazy::stream::{Resident, Stream, Unindexed, scan_unindexed};
use crate::read::rebuild::{
    DEFAULT_WINDOW, RebuildOptions, RebuiltIndex, UnfinishedContainer, rebuild_index,
    write_rebuilt_index,
};
use crate::read::sidecar::SidecarReport;
use crate::storage::TraceBytes;

/// The index file of a data file: its path plus `.idx`.
pub fn index_path(data: &Path) -> PathBuf {
    let mut path = data.as_os_str().to_owned();
    path.push(".idx");
    PathBuf::from(path)
}

/// Why an index file was not used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexProblem {
    /// The file could not be opened.
    #[error("missing ({0})")]
    Missing(String),
    /// Shorter than a header and a footer.
    #[error("{0} bytes, shorter than a header and a footer")]
    TooShort(u64),
    /// Bad magic or version.
    #[error("bad header: {0}")]
    Header(DecodeError),
    /// A cell's kind byte is no object kind.
    #[error("cell {cell}: unknown kind byte {kind}")]
    UnknownKind {
        /// The cell's number (0 = the first cell after the header).
        cell: usize,
        /// The kind byte.
        kind: u8,
    },
    /// A cell of a kind an index never lists (a footer, `BLOCK_END`, `EOF`).
    #[error("cell {cell}: an index holds no {kind} cells")]
    UnexpectedKind {
        /// The cell's number.
        cell: usize,
        /// Its kind.
        kind: ObjectKind,
    },
    /// A cell points outside the data file.
    #[error("cell {cell}: offset {offset} is outside the data file")]
    OutOfBounds {
        /// The cell's number.
        cell: usize,
        /// The offset.
        offset: i64,
    },
    /// A reference cell's target has another kind or id.
    #[error("cell {cell}: no {kind} with id {id} at offset {offset}")]
    ReferenceMismatch {
        /// The cell's number.
        cell: usize,
        /// The cell's kind.
        kind: ObjectKind,
        /// The cell's id.
        id: i32,
        /// Where it points.
        offset: u64,
    },
    /// A block cell does not frame a block of its thread.
    #[error("cell {cell}: no block of thread {thread} from offset {start} to {end}")]
    BlockMismatch {
        /// The cell's number.
        cell: usize,
        /// The cell's thread.
        thread: i32,
        /// Where it says the `BLOCK_START` is.
        start: u64,
        /// Where it says the `BLOCK_END` is.
        end: u64,
    },
    /// A container cell comes before any block cell (streaming order) or
    /// after the last (dump order), so its thread is unknown.
    #[error("cell {cell}: container cell belongs to no block cell")]
    ContainerWithoutBlock {
        /// The cell's number.
        cell: usize,
    },
    /// A container cell's range is not inside its thread's logical stream.
    #[error(
        "cell {cell}: range {start}..{end} is not inside thread {thread}'s logical stream of {len} bytes"
    )]
    ContainerOutsideThread {
        /// The cell's number.
        cell: usize,
        /// The thread of the block the cell belongs to.
        thread: i32,
        /// The cell's start.
        start: i64,
        /// The cell's end.
        end: i64,
        /// The stream's length.
        len: u64,
    },
    /// Two container ranges overlap without nesting, or share a footer.
    #[error("cell {cell}: container range overlaps another without nesting")]
    Crossing {
        /// The cell's number.
        cell: usize,
    },
    /// The block cells leave a gap: no block starts where the previous ends.
    #[error("no block cell for the block at offset {0}")]
    Gap(PhysicalOffset),
    /// After the last indexed block the data holds more than `EOF`.
    #[error("{bytes} bytes after the last indexed block (offset {at}) are not EOF")]
    Uncovered {
        /// Offset just after the last indexed block.
        at: PhysicalOffset,
        /// Bytes from there to the end of the file.
        bytes: u64,
    },
    /// A scan of the data contradicted the index.
    #[error("the data contradicts the index: {0}")]
    Inconsistent(String),
    /// The caller asked for a rebuild.
    #[error("rebuild requested")]
    Requested,
    /// The lookups come from a sidecar written after a rebuild; this was
    /// the problem then.
    #[error("{0} (when the lookup sidecar was written)")]
    Recorded(String),
}

/// What a reader did with a trace's index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexStatus {
    /// The index file was valid and used.
    Used {
        /// Whether it ended with its footer (a crashed recorder leaves none).
        complete: bool,
    },
    /// The index was missing or broken (or a rebuild was asked for): the
    /// lookup structures were rebuilt from the data file (in parallel).
    Rebuilt(IndexProblem),
}

/// How a trace's lookup structures were made, and what the data lacked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexReport {
    /// The index file looked for, if any.
    pub path: Option<PathBuf>,
    /// Used or rebuilt, and why.
    pub status: IndexStatus,
    /// Blocks in the data file.
    pub blocks: usize,
    /// Reference object cells (duplicates included).
    pub references: usize,
    /// Containers with a known content range.
    pub containers: usize,
    /// Containers the index file had no cell for (the recorder never
    /// finished them, or closed them after its index was last written),
    /// found by scanning the data.
    pub repaired_containers: usize,
    /// What the data file lacked: `EOF`, a half-written block, footers.
    pub data: LoadReport,
    /// What happened to the lookup sidecar (`None`: not looked for, as
    /// with [`SidecarPolicy::Off`](crate::read::SidecarPolicy::Off) or a
    /// trace opened from bytes).
    pub sidecar: Option<SidecarReport>,
}

impl IndexReport {
    /// Whether the index file was used (directly, or through a sidecar
    /// made from it).
    pub fn index_used(&self) -> bool {
        matches!(self.status, IndexStatus::Used { .. })
    }

    /// Whether the lookups came from the sidecar.
    pub fn sidecar_used(&self) -> bool {
        self.sidecar.as_ref().is_some_and(SidecarReport::used)
    }
}

/// Blocks, reference cells and container tables: what finding things needs.
#[derive(Debug, Default)]
pub(crate) struct Lookup {
    pub(crate) blocks: BlockTable,
    /// The index file's cells (none after a rebuild).
    pub(crate) file: FileCells,
    /// One per thread, in the block table's thread order.
    threads: Vec<ThreadContainers>,
    /// Calls of [`Lookup::distrust`] that replaced a table.
    distrusted: AtomicUsize,
    /// With a resident window: the data file, whose pages a table build's
    /// footer checks release behind them every that many bytes of a
    /// thread's stream ([`Lookup::release_reads`]).
    release_reads: Option<(TraceBytes, u64)>,
}

/// A thread's table, or the error of the scan that should have made it
/// (its cells were not trusted and the data is corrupt): every lookup that
/// needs the table then gives that error.
type Table = std::result::Result<Containers, Error>;

/// One thread's containers: where their cells are until first use, then
/// the table built from them.
#[derive(Debug)]
struct ThreadContainers {
    /// Container cells known at open.
    count: usize,
    source: Mutex<Option<Source>>,
    /// Cells made for containers the index has no cell for (a rebuild's
    /// calls that never finished, a repair's finds), ascending by start:
    /// added to the table when it is built, interleaved when the index's
    /// cells stream ([`WithMadeCells`]).
    made: Vec<RawIndexCell>,
    built: OnceLock<Table>,
    /// The table found by scanning the thread after a lookup through
    /// `built` contradicted the data (it replaces `built` from then on).
    rescanned: OnceLock<Table>,
    /// Why the table was rebuilt by scanning the thread, if it was.
    problem: OnceLock<IndexProblem>,
}

impl ThreadContainers {
    fn new(count: usize, source: Source) -> Self {
        ThreadContainers {
            count,
            source: Mutex::new(Some(source)),
            made: Vec::new(),
            built: OnceLock::new(),
            rescanned: OnceLock::new(),
            problem: OnceLock::new(),
        }
    }
}

impl Lookup {
    fn new(blocks: BlockTable, file: FileCells, sources: Vec<(ThreadId, usize, Source)>) -> Self {
        let mut threads: Vec<Option<ThreadContainers>> =
            (0..blocks.thread_count()).map(|_| None).collect();
        for (thread, count, source) in sources {
            if let Some(slot) = blocks.slot(thread) {
                threads[slot] = Some(ThreadContainers::new(count, source));
            }
        }
        let threads = threads
            .into_iter()
            .map(|thread| {
                thread.unwrap_or_else(|| {
                    ThreadContainers::new(
                        0,
                        Source::Ranges {
                            ranges: Vec::new(),
                            count: 0,
                        },
                    )
                })
            })
            .collect();
        Lookup {
            blocks,
            file,
            threads,
            distrusted: AtomicUsize::new(0),
            release_reads: None,
        }
    }

    /// Makes table builds release the pages of `data` their footer checks
    /// read (one byte per container: a page of nearly every block) every
    /// `window` bytes of a thread's stream, as forward reads do
    /// ([`LazyOptions::resident_window`](crate::read::LazyOptions::resident_window)).
    pub(crate) fn release_reads(&mut self, data: TraceBytes, window: u64) {
        self.release_reads = Some((data, window));
    }

    /// The window set by [`Lookup::release_reads`], if any.
    pub(crate) fn release_window(&self) -> Option<u64> {
        self.release_reads.as_ref().map(|(_, window)| *window)
    }

    /// The lookups of a sidecar: its blocks, and per thread (in the block
    /// table's order) its containers and the problem its cells had.
    pub(crate) fn from_sidecar(
        blocks: BlockTable,
        threads: Vec<(Containers, Option<IndexProblem>)>,
    ) -> Self {
        let threads = threads
            .into_iter()
            .map(|(containers, problem)| ThreadContainers {
                count: containers.table.len(),
                source: Mutex::new(None),
                made: Vec::new(),
                built: OnceLock::from(Ok(containers)),
                rescanned: OnceLock::new(),
                problem: problem.map(OnceLock::from).unwrap_or_default(),
            })
            .collect();
        Lookup {
            blocks,
            file: FileCells::default(),
            threads,
            distrusted: AtomicUsize::new(0),
            release_reads: None,
        }
    }

    /// Thread `slot`'s container table and cells. The table is built on
    /// first use (in start order, from the cells in post-order); if the
    /// cells do not nest, the thread's containers are found by scanning
    /// its stream instead, and the problem is kept ([`LazyTraceReader::thread_problems`](crate::read::LazyTraceReader::thread_problems)).
    /// A scan that fails (the data is corrupt) fails every call for the
    /// thread with the scan's error.
    pub(crate) fn containers(
        &self,
        data: &[u8],
        slot: usize,
    ) -> Result<(&ContainerTable, CellView<'_>)> {
        let thread = &self.threads[slot];
        let table = match thread.rescanned.get() {
            Some(rescanned) => rescanned,
            None => thread.built.get_or_init(|| self.build(data, slot)),
        };
        match table {
            Ok(built) => Ok((&built.table, built.view(self.file.slice()))),
            Err(error) => Err(replay(error)),
        }
    }

    /// Builds thread `slot`'s table from its cells, or by scanning its
    /// stream when the cells do not nest or do not end at footers.
    fn build(&self, data: &[u8], slot: usize) -> Table {
        let thread = &self.threads[slot];
        let source = thread
            .source
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        // No source: an earlier build panicked. Scan instead.
        let Some(source) = source else {
            return self.scan_thread(data, slot);
        };
        // The index's runs of cells, to check their footers once they
        // are known to nest.
        let ranges = match &source {
            Source::Ranges { ranges, .. } => ranges.clone(),
            Source::Made { .. } => Vec::new(),
        };
        let problem = match Containers::build(&self.file, source, self.release_window()) {
            Ok(mut containers) => match self.check_footers(data, slot, &ranges) {
                Ok(()) => {
                    if !thread.made.is_empty() {
                        containers.add(self.file.slice(), thread.made.clone());
                    }
                    return Ok(containers);
                }
                Err(problem) => problem,
            },
            Err(NestingError::SameEnd { cell } | NestingError::Crossing { cell }) => {
                IndexProblem::Crossing {
                    cell: cell as usize,
                }
            }
        };
        let _ = thread.problem.set(problem);
        self.scan_thread(data, slot)
    }

    /// Checks that every container cell of thread `slot` ends at a
    /// `TRACEPOINT_FOOTER` byte in the data (a cell is only written with
    /// its footer); otherwise the thread's containers are found by scanning.
    /// Cells come in the index's order, post-order, where ends ascend: this
    /// reads the thread's stream front to back, one byte per container.
    fn check_footers(
        &self,
        data: &[u8],
        slot: usize,
        ranges: &[(u32, u32)],
    ) -> std::result::Result<(), IndexProblem> {
        let blocks = self.blocks.thread(slot);
        let file = self.file.slice();
        // The block of the last end: ends ascend in post-order, so the
        // search is needed about once per block.
        let mut span: Option<BlockSpan> = None;
        // Where the footers read since the last release begin: logical and
        // physical offset.
        let mut unreleased: Option<(u64, u64)> = None;
        let mut pass = self.file.pass(self.release_window());
        let cells = ranges
            .iter()
            .inspect(|&&(from, _)| pass.at(from))
            .flat_map(|&(from, to)| &file[from as usize..to as usize]);
        for cell in cells.filter(|cell| cell.kind == ObjectKind::Tracepoint as u8) {
            let end = cell.end.get() as u64;
            let inside = |s: &BlockSpan| s.logical.0 <= end && end < s.logical.0 + s.len;
            if !span.as_ref().is_some_and(inside) {
                if let (Some(left), Some((bytes, window))) = (&span, &self.release_reads) {
                    // Leaving block `left`: release what lies behind once
                    // it spans the window (other threads' blocks in
                    // between included).
                    let (logical, physical) =
                        *unreleased.get_or_insert((left.logical.0, left.physical.0));
                    if end.saturating_sub(logical) >= *window {
                        bytes.release_around(physical..left.physical.0 + left.len);
                        unreleased = None;
                    }
                }
                span = blocks.span(LogicalOffset(end));
            }
            let byte = span.as_ref().and_then(|s| {
                let at = s.physical.0 + (end - s.logical.0);
                data.get(at as usize).copied()
            });
            if byte != Some(ObjectKind::TracepointFooter as u8) {
                return Err(IndexProblem::Inconsistent(format!(
                    "the container with event id {} has no footer at its end {end} in thread {}",
                    cell.id.get(),
                    blocks.thread
                )));
            }
        }
        Ok(())
    }

    /// Whether thread `slot`'s containers may stream
    /// ([`Lookup::stream_containers`]): its table is not built, and its
    /// cells are the index file's.
    pub(crate) fn streams(&self, slot: usize) -> bool {
        self.unbuilt_ranges(slot).is_some()
    }

    /// Thread `slot`'s runs of index cells and their container count, while
    /// its table is not built (none for cells made by a scan or a repair).
    fn unbuilt_ranges(&self, slot: usize) -> Option<(Vec<(u32, u32)>, usize)> {
        let thread = &self.threads[slot];
        if thread.built.get().is_some() || thread.rescanned.get().is_some() {
            return None;
        }
        match &*thread.source.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(Source::Ranges { ranges, count }) => Some((ranges.clone(), *count)),
            _ => None,
        }
    }

    /// Thread `slot`'s containers in start order, last first, given to
    /// `place` straight from the index's cells when its table is not built
    /// yet — checked as a build checks them (footers, nesting), but with no
    /// table on the heap. `None` when a table is needed instead: one was
    /// built already, the cells were made by a scan or a repair, or the
    /// check failed (`place` may then have seen part of them; building the
    /// table finds out why).
    pub(crate) fn stream_containers(
        &self,
        data: &[u8],
        slot: usize,
        mut place: impl FnMut(Placed),
    ) -> Option<Converted> {
        let (ranges, count) = self.unbuilt_ranges(slot)?;
        self.check_footers(data, slot, &ranges).ok()?;
        let window = self.release_window();
        let made = &self.threads[slot].made;
        if made.is_empty() {
            return Containers::stream(&self.file, &ranges, count, window, place);
        }
        let mut with = WithMadeCells::new(made, count);
        Containers::stream(&self.file, &ranges, count, window, |placed| {
            with.place(placed, &mut place)
        })?;
        Some(with.finish(&mut place))
    }

    /// Adds cells made for containers of thread `slot` that the index has
    /// no cell for (a rebuild's calls that never finished, a repair's
    /// finds): to its table if one is built, otherwise beside its cells,
    /// with no table built, so that they still stream into a sidecar.
    pub(crate) fn add_made_cells(&mut self, slot: usize, mut cells: Vec<RawIndexCell>) {
        if cells.is_empty() {
            return;
        }
        cells.sort_by_key(|cell| cell.start.get());
        let thread = &mut self.threads[slot];
        match thread.built.get_mut() {
            Some(Ok(built)) => {
                built.add(self.file.slice(), cells);
                // Merging rereads every cell of the thread (their ends):
                // release them at once instead of leaving the thread's share
                // of the index mapped until the open ends.
                if self.release_reads.is_some()
                    && let Some(bytes) = self.file.bytes()
                {
                    bytes.release_all();
                }
            }
            _ => thread.made = cells,
        }
    }

    /// Stops trusting thread `slot`'s container cells after a lookup
    /// through them contradicted the data (a cell's start or event id that
    /// no header has): the thread's containers are found by scanning its
    /// stream instead. Returns whether this call replaced the table (a
    /// caller then retries its lookup once).
    pub(crate) fn distrust(&self, data: &[u8], slot: usize, problem: IndexProblem) -> bool {
        let thread = &self.threads[slot];
        if thread.rescanned.get().is_some() {
            return false;
        }
        let _ = thread.problem.set(problem);
        thread
            .rescanned
            .get_or_init(|| self.scan_thread(data, slot));
        self.distrusted.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// How many times a thread's cells were distrusted so far.
    pub(crate) fn distrusted(&self) -> usize {
        self.distrusted.load(Ordering::Relaxed)
    }

    /// Builds every thread's table, threads in parallel.
    pub(crate) fn build_all(&self, data: &[u8]) {
        (0..self.threads.len()).into_par_iter().for_each(|slot| {
            // A thread whose table failed keeps its error for its lookups.
            let _ = self.containers(data, slot);
        });
    }

    /// Whether thread `slot`'s table is built.
    pub(crate) fn is_built(&self, slot: usize) -> bool {
        self.threads[slot].built.get().is_some()
    }

    /// The mapped files the lookups read in place: the index file, and the
    /// sidecar of tables loaded from one (each once).
    pub(crate) fn mappings(&self) -> Vec<TraceBytes> {
        let mut found: Vec<TraceBytes> = Vec::new();
        let sidecars = self.threads.iter().filter_map(|thread| {
            let flat = thread.built.get()?.as_ref().ok()?.flat.as_ref()?;
            Some(&flat.bytes)
        });
        for bytes in self.file.bytes().into_iter().chain(sidecars) {
            if bytes.is_mapped() && !found.iter().any(|known| known.same(bytes)) {
                found.push(bytes.clone());
            }
        }
        found
    }

    /// Threads whose container cells did not nest, and why.
    pub(crate) fn problems(&self) -> Vec<(ThreadId, IndexProblem)> {
        self.threads
            .iter()
            .enumerate()
            .filter_map(|(slot, thread)| {
                let problem = thread.problem.get()?.clone();
                Some((self.blocks.thread(slot).thread, problem))
            })
            .collect()
    }

    /// Container cells known at open, per thread slot.
    pub(crate) fn container_count(&self, slot: usize) -> usize {
        let thread = &self.threads[slot];
        match thread.rescanned.get().or(thread.built.get()) {
            Some(Ok(built)) => built.table.len(),
            Some(Err(_)) | None => thread.count + thread.made.len(),
        }
    }

    /// Heap bytes of the tables built so far.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.threads
            .iter()
            .map(|thread| {
                let tables = [thread.built.get(), thread.rescanned.get()];
                tables
                    .into_iter()
                    .flatten()
                    .flatten()
                    .map(Containers::heap_bytes)
                    .sum::<usize>()
            })
            .sum()
    }

    /// Finds thread `slot`'s containers by scanning its stream, as if the
    /// index had no cell for any.
    fn scan_thread(&self, data: &[u8], slot: usize) -> Result<Containers> {
        let mut stream = Stream::new(data, self.blocks.thread(slot));
        let found = scan_unindexed(&mut stream, &mut |_| None, LogicalOffset(0), None)?;
        let len = stream.len();
        let (unfinished, finished): (Vec<_>, Vec<_>) = found
            .into_iter()
            .partition(|container| container.end == len);
        let cells = |list: Vec<Unindexed>| {
            list.into_iter()
                .map(|c| container_cell(c.event, c.start, c.end))
                .collect()
        };
        // Unfinished ones come out innermost last: start order.
        Ok(Containers::build(
            &self.file,
            Source::Made {
                finished: cells(finished),
                unfinished: cells(unfinished),
            },
            None,
        )
        .expect("a scan's containers nest"))
    }

    /// Finds the containers each thread's cells lack (never finished, or
    /// finished after the index was last written) and adds them, the
    /// threads in parallel. Returns how many it found and how many of those
    /// were never finished.
    ///
    /// A thread's scan reads its cells alongside, with no table
    /// ([`Lookup::missing_containers`]), and the made cells are kept beside
    /// the cells ([`Lookup::add_made_cells`]), so that the thread still
    /// streams into the sidecar with no table on the heap. (A thread whose
    /// cells are not in the recorder's order is scanned through its table,
    /// which the made cells then join.)
    pub(crate) fn repair_all(&mut self, data: &[u8]) -> Result<(usize, usize)> {
        let found = (0..self.threads.len())
            .into_par_iter()
            .map(|slot| self.missing_containers(data, slot))
            .collect::<Result<Vec<_>>>()?;
        let (mut repaired, mut unfinished) = (0, 0);
        for (slot, found) in found.into_iter().enumerate() {
            let len = LogicalOffset(self.blocks.thread(slot).len);
            unfinished += found.iter().filter(|c| c.end == len).count();
            repaired += found.len();
            let cells = found
                .iter()
                .map(|c| container_cell(c.event, c.start, c.end))
                .collect();
            self.add_made_cells(slot, cells);
        }
        Ok((repaired, unfinished))
    }

    /// The containers thread `slot`'s cells lack, found by scanning its top
    /// level. The scan reads the thread front to back (an unfinished root
    /// call's content is nearly all of it), so it releases behind it as a
    /// walk does. It skips the containers with a cell by reading the cells
    /// forward alongside ([`PostOrderCursor`]), with no table; if the cells
    /// are not as the recorder writes them, or the table is built already,
    /// through the table.
    fn missing_containers(&self, data: &[u8], slot: usize) -> Result<Vec<Unindexed>> {
        let resident = self.release_reads.as_ref().map(|(bytes, window)| Resident {
            window: *window,
            data: bytes.clone(),
            lookups: self.file.bytes().into_iter().cloned().collect(),
            scattered: Mutex::new(Vec::new()),
        });
        let stream = || {
            Stream::new(data, self.blocks.thread(slot))
                .releasing(resident.as_ref())
                .released_at_end()
        };
        if let Some((ranges, count)) = self.unbuilt_ranges(slot) {
            let pass = self.file.pass(self.release_window());
            if let Some(mut cursor) = PostOrderCursor::new(self.file.slice(), &ranges, count, pass)
            {
                let ends = &mut |start: LogicalOffset| cursor.cell_end(start.0).map(LogicalOffset);
                let found = scan_unindexed(&mut stream(), ends, LogicalOffset(0), None);
                if let Ok(found) = found
                    && !cursor.gave_up()
                {
                    return Ok(found);
                }
            }
        }
        let (table, view) = self.containers(data, slot)?;
        scan_unindexed(
            &mut stream(),
            &mut table.ends_by_start(view),
            LogicalOffset(0),
            None,
        )
    }
}

/// A copy of a kept error, for each call that meets it (`Error` is not
/// `Clone`: an I/O error keeps its kind and message).
fn replay(error: &Error) -> Error {
    match error {
        Error::Decode(error) => Error::Decode(error.clone()),
        Error::Io { path, source } => Error::Io {
            path: path.clone(),
            source: std::io::Error::new(source.kind(), source.to_string()),
        },
        Error::Stream(source) => {
            Error::Stream(std::io::Error::new(source.kind(), source.to_string()))
        }
        Error::MissingReference { kind, id } => Error::MissingReference {
            kind: *kind,
            id: *id,
        },
        Error::BrokenIndex(what) => Error::BrokenIndex(what.clone()),
        Error::Usage(what) => Error::Usage(what.clone()),
        Error::NoSuchNode(what) => Error::NoSuchNode(what.clone()),
        Error::StringTooLong { what, len } => Error::StringTooLong { what, len: *len },
    }
}

/// An index file checked against its data file, or a rebuilt one.
pub(crate) struct LoadedIndex {
    pub(crate) lookup: Lookup,
    pub(crate) context: ContextBuilder,
    pub(crate) references: usize,
    pub(crate) data: LoadReport,
    /// Whether the index file had its footer (always true for a rebuild).
    pub(crate) complete: bool,
}

/// Groups container cells by thread as the index orders them.
struct ThreadCells {
    ids: HashMap<ThreadId, usize>,
    /// Per thread: runs of cells `[from, to)` holding its container cells.
    lists: Vec<(ThreadId, Vec<(u32, u32)>)>,
}

impl ThreadCells {
    fn list(&mut self, thread: ThreadId) -> usize {
        *self.ids.entry(thread).or_insert_with(|| {
            self.lists.push((thread, Vec::new()));
            self.lists.len() - 1
        })
    }
}

/// Checks index file `index` against `data` (whose header is checked) and
/// builds the lookup structures from it. With a `window`, the index's
/// pages are released behind the pass every `window` bytes of cells, and
/// the data's pages it peeked at (blocks' edges, reference objects: in
/// file order) every `window` bytes of data, so that opening a large trace
/// does not leave it resident.
pub(crate) fn load_index(
    data: &TraceBytes,
    index: TraceBytes,
    window: Option<u64>,
) -> std::result::Result<LoadedIndex, IndexProblem> {
    load_index_until(data, index, window, 0)
}

/// [`load_index`] for an index whose data ends in `dropped_tail` bytes of a
/// block a crashed recorder did not finish (known to the rebuild that wrote
/// the index): the blocks must cover the data up to them.
fn load_index_until(
    data: &TraceBytes,
    index: TraceBytes,
    window: Option<u64>,
    dropped_tail: u64,
) -> std::result::Result<LoadedIndex, IndexProblem> {
    let release_every = window.map_or(usize::MAX, |window| {
        (usize::try_from(window).unwrap_or(usize::MAX) / CELL_LEN).max(1 << 12)
    });
    let bytes = index.as_slice();
    if (bytes.len() as u64) < FILE_HEADER_LEN + INDEX_FOOTER_LEN as u64 {
        return Err(IndexProblem::TooShort(bytes.len() as u64));
    }
    let parsed = parse_index(bytes).map_err(IndexProblem::Header)?;
    let (cells, complete) = (parsed.cells, parsed.has_footer);
    let data_bytes = data.as_slice();
    let data_len = data.len();
    let in_data = |cell: usize, offset: i64| {
        if offset >= FILE_HEADER_LEN as i64 && (offset as u64) < data_len {
            Ok(offset as u64)
        } else {
            Err(IndexProblem::OutOfBounds { cell, offset })
        }
    };
    // A streaming writer lists a block's cell before the block's other
    // cells, the dump writer after them.
    let block_cell_first = cells
        .first()
        .is_none_or(|cell| cell.kind == ObjectKind::BlockStart as u8);
    let mut blocks = Vec::new();
    let mut context = ContextBuilder::new();
    let mut references = 0;
    let mut placed: Vec<(usize, u64)> = Vec::new();
    let mut by_thread = ThreadCells {
        ids: HashMap::new(),
        lists: Vec::new(),
    };
    // Per list: the logical length of the thread's blocks seen so far, and
    // its runs of cells with the number of container cells in them.
    let mut seen_len: Vec<u64> = Vec::new();
    let mut counts: Vec<usize> = Vec::new();
    // The run since the last block cell: where it starts, its containers,
    // and (streaming order) the list it belongs to.
    let mut run_start = 0u32;
    let mut run_count = 0usize;
    let mut current: Option<usize> = None;
    // The current list's length so far (0 before any block: every container
    // cell then fails the check and is looked at again).
    let mut current_len = 0u64;
    // Container cells whose range is not inside the blocks listed so far;
    // checked again once every block is known.
    let mut recheck: Vec<(usize, u32)> = Vec::new();
    let inside = |raw: &RawIndexCell, len: u64| {
        let (start, end) = (raw.start.get(), raw.end.get());
        start > 0 && start <= end && (end as u64) < len
    };
    let mut data_pass = data.behind(window);
    let mut peeked = |offset: u64| data_pass.at(offset);
    for (cell, raw) in cells.iter().enumerate() {
        if cell % release_every == release_every - 1 {
            index.release(0..FILE_HEADER_LEN + (cell * CELL_LEN) as u64);
        }
        if raw.kind == ObjectKind::Tracepoint as u8 {
            // The common case first: a container cell.
            run_count += 1;
            if block_cell_first && !inside(raw, current_len) {
                let list = current.ok_or(IndexProblem::ContainerWithoutBlock { cell })?;
                recheck.push((list, cell as u32));
            }
            continue;
        }
        let kind = ObjectKind::from_byte(raw.kind).ok_or(IndexProblem::UnknownKind {
            cell,
            kind: raw.kind,
        })?;
        let id = raw.id.get();
        match kind {
            ObjectKind::BlockStart => {
                let start = in_data(cell, raw.start.get())?;
                let end = in_data(cell, raw.end.get())?;
                let mismatch = IndexProblem::BlockMismatch {
                    cell,
                    thread: id,
                    start,
                    end,
                };
                if peek_kind_and_id(data_bytes, start) != Some((ObjectKind::BlockStart, id))
                    || end < start + crate::format::BLOCK_HEADER_LEN
                    || data_bytes[end as usize] != ObjectKind::BlockEnd as u8
                {
                    return Err(mismatch);
                }
                peeked(end);
                let block = BlockInfo {
                    thread: ThreadId(id),
                    start: PhysicalOffset(start),
                    end: PhysicalOffset(end),
                };
                blocks.push(block);
                let list = by_thread.list(ThreadId(id));
                if list == seen_len.len() {
                    seen_len.push(0);
                    counts.push(0);
                }
                seen_len[list] += block.payload_len();
                // The run before this cell ends here: it belongs to the
                // previous block cell (streaming) or to this one (dump).
                let owner = if block_cell_first {
                    current
                } else {
                    Some(list)
                };
                if let Some(owner) = owner {
                    by_thread.lists[owner].1.push((run_start, cell as u32));
                    counts[owner] += run_count;
                    if !block_cell_first {
                        for id in run_start..cell as u32 {
                            let raw = &cells[id as usize];
                            if raw.kind == ObjectKind::Tracepoint as u8
                                && !inside(raw, seen_len[list])
                            {
                                recheck.push((list, id));
                            }
                        }
                    }
                }
                current = Some(list);
                current_len = seen_len[list];
                run_start = cell as u32 + 1;
                run_count = 0;
            }
            kind if kind.is_reference() => {
                let offset = in_data(cell, raw.start.get())?;
                if peek_kind_and_id(data_bytes, offset) != Some((kind, id)) {
                    return Err(IndexProblem::ReferenceMismatch {
                        cell,
                        kind,
                        id,
                        offset,
                    });
                }
                peeked(offset);
                context.add(kind, id, PhysicalOffset(offset));
                placed.push((cell, offset));
                references += 1;
            }
            kind => return Err(IndexProblem::UnexpectedKind { cell, kind }),
        }
    }
    if block_cell_first {
        if let Some(owner) = current {
            by_thread.lists[owner]
                .1
                .push((run_start, cells.len() as u32));
            counts[owner] += run_count;
        }
    } else if run_count > 0 {
        let cell = (run_start as usize..cells.len())
            .find(|&c| cells[c].kind == ObjectKind::Tracepoint as u8)
            .unwrap_or(run_start as usize);
        return Err(IndexProblem::ContainerWithoutBlock { cell });
    }
    let mut report = LoadReport::default();
    blocks.sort_by_key(|block| block.start);
    let mut at = PhysicalOffset(FILE_HEADER_LEN);
    for block in &blocks {
        if block.start != at {
            return Err(IndexProblem::Gap(at));
        }
        at = block.end + 1;
    }
    if dropped_tail > 0 && at.0 == data_len.saturating_sub(dropped_tail) {
        report.missing_eof = true;
        report.dropped_blocks = 1;
        report.dropped_bytes = dropped_tail;
    } else if at.0 == data_len {
        report.missing_eof = true;
    } else if data_bytes[at.0 as usize] == ObjectKind::Eof as u8 {
        report.trailing_bytes = data_len - at.0 - 1;
    } else {
        return Err(IndexProblem::Uncovered {
            at,
            bytes: data_len - at.0,
        });
    }
    // Each reference object lies whole inside a block's payload and is
    // followed by another object or the BLOCK_END: a cell that points a
    // few bytes into an object can read as the right kind and id (the
    // high byte of a small thread id is a THREAD_NAME kind byte).
    let mut data_pass = data.behind(window);
    for (cell, offset) in placed {
        data_pass.at(offset);
        let raw = &cells[cell];
        let block = blocks
            .partition_point(|block| block.start.0 <= offset)
            .checked_sub(1)
            .map(|b| &blocks[b]);
        let whole = block.is_some_and(|block| {
            let Some(object) = data_bytes.get(offset as usize..block.end.0 as usize) else {
                return false;
            };
            let mut reader = ByteReader::new(object, offset);
            offset >= block.start.0 + BLOCK_HEADER_LEN
                && skip_object(&mut reader, None).is_ok()
                && ObjectKind::from_byte(data_bytes[offset as usize + reader.position()])
                    .is_some_and(|next| {
                        next.is_reference()
                            || matches!(
                                next,
                                ObjectKind::Tracepoint
                                    | ObjectKind::TracepointFooter
                                    | ObjectKind::BlockEnd
                            )
                    })
        });
        if !whole {
            return Err(IndexProblem::ReferenceMismatch {
                cell,
                kind: ObjectKind::from_byte(raw.kind).expect("checked above"),
                id: raw.id.get(),
                offset,
            });
        }
    }
    for (list, cell) in recheck {
        let raw = &cells[cell as usize];
        if !inside(raw, seen_len[list]) {
            return Err(IndexProblem::ContainerOutsideThread {
                cell: cell as usize,
                thread: by_thread.lists[list].0.0,
                start: raw.start.get(),
                end: raw.end.get(),
                len: seen_len[list],
            });
        }
    }
    let sources = by_thread
        .lists
        .into_iter()
        .zip(counts)
        .map(|((thread, ranges), count)| (thread, count, Source::Ranges { ranges, count }))
        .collect();
    let mut lookup = Lookup::new(
        BlockTable::new(blocks),
        FileCells::new(index.clone(), cells.len()),
        sources,
    );
    // Tables built during the open (a repair's, a rebuild's unfinished
    // containers) release what their footer checks read, as later ones do.
    if let Some(window) = window {
        lookup.release_reads(data.clone(), window);
    }
    Ok(LoadedIndex {
        lookup,
        context,
        references,
        data: report,
        complete,
    })
}

/// A container cell made in memory.
pub(crate) fn container_cell(event: i32, start: LogicalOffset, end: LogicalOffset) -> RawIndexCell {
    crate::format::IndexCell {
        kind: ObjectKind::Tracepoint,
        id: event,
        start: start.0 as i64,
        end: end.0 as i64,
    }
    .to_raw()
}

/// The smallest window of a rebuild at open ([`rebuild_to_scratch`]),
/// which is the resident window (or [`DEFAULT_WINDOW`] without one): each
/// is cut into chunks of at least 1 MiB for the workers, and ends with a
/// sequential stitch.
pub(crate) const MIN_REBUILD_WINDOW: u64 = 4 << 20;

/// Rebuilds the index of `data` from the data alone, in windows
/// ([`write_rebuilt_index`]), into an unlinked scratch file in the
/// temporary directory — a v22 index with a footer, in the streaming
/// writer's order — and loads that like an index file (`load_index`, every
/// check), so that the cells and tables of a trace opened without its index
/// are page cache the kernel can drop, not heap: the heap holds one
/// window's cells at a time. With a `window` the data's pages are released
/// behind each rebuild window, and `load_index` releases behind its pass.
/// Containers never finished have no cell: the rebuild's list of them is
/// kept beside their threads' cells ([`Lookup::add_made_cells`]), without
/// the scan a crashed recorder's index needs, and without building a table:
/// the cells still stream into the sidecar. `None` when no scratch file
/// could be written or mapped (the caller then rebuilds on the heap); data
/// errors are errors.
pub(crate) fn rebuild_to_scratch(
    data: &TraceBytes,
    window: Option<u64>,
) -> Result<Option<LoadedIndex>> {
    let Ok(file) = tempfile::tempfile_in(std::env::temp_dir()) else {
        return Ok(None);
    };
    let mut out = std::io::BufWriter::with_capacity(1 << 20, &file);
    let written = write_rebuilt_index(
        data.as_slice(),
        RebuildOptions::default(),
        window.map_or(DEFAULT_WINDOW, |window| window.max(MIN_REBUILD_WINDOW)),
        &|_| {},
        &mut out,
        &|covered| {
            if window.is_some() {
                data.release_around(covered);
            }
        },
    );
    let outcome = match written {
        Ok((outcome, _)) => outcome,
        // The scratch file could not be written: the heap serves.
        Err(Error::Stream(_)) => return Ok(None),
        Err(error) => return Err(error),
    };
    let written = out.into_inner().ok();
    let Some(Ok(index)) = written.map(TraceBytes::map_file) else {
        return Ok(None);
    };
    // The rebuild's cells pass every check but for a bug: then the heap
    // rebuild serves.
    let Ok(mut loaded) = load_index_until(data, index, window, outcome.report.dropped_bytes) else {
        return Ok(None);
    };
    let lookup = &mut loaded.lookup;
    let unfinished = unfinished_cells(&lookup.blocks, &outcome.unfinished);
    for (slot, cells) in unfinished.into_iter().enumerate() {
        lookup.add_made_cells(slot, cells);
    }
    loaded.data = outcome.report;
    Ok(Some(loaded))
}

/// Rebuilds the lookup structures from the data file alone, with the
/// parallel rebuild ([`crate::read::rebuild`], the crate's only one).
/// Containers never finished end at the end of their thread's stream.
pub(crate) fn rebuild_lookup(data: &TraceBytes) -> Result<LoadedIndex> {
    let rebuilt = rebuild_index(data.as_slice(), RebuildOptions::default())?;
    Ok(lookup_from_rebuilt(data.as_slice(), rebuilt))
}

/// Cells for a rebuild's containers that never got a footer, per thread
/// slot of `blocks`: each ends at its thread's stream end.
fn unfinished_cells(
    blocks: &BlockTable,
    unfinished: &[UnfinishedContainer],
) -> Vec<Vec<RawIndexCell>> {
    let mut cells: Vec<Vec<RawIndexCell>> = vec![Vec::new(); blocks.thread_count()];
    for container in unfinished {
        if let Some(slot) = blocks.slot(container.thread) {
            let end = blocks.logical_len(container.thread);
            cells[slot].push(container_cell(
                container.event.0,
                container.content_start,
                end,
            ));
        }
    }
    cells
}

/// The lookup structures of a rebuilt index: its cells (in the streaming
/// writer's order, so a thread's container cells come in post-order after
/// their block's cell), plus its unfinished containers.
pub(crate) fn lookup_from_rebuilt(data: &[u8], rebuilt: RebuiltIndex) -> LoadedIndex {
    let blocks = rebuilt
        .cells
        .iter()
        .filter(|cell| cell.kind == ObjectKind::BlockStart)
        .map(|cell| BlockInfo {
            thread: ThreadId(cell.id),
            start: PhysicalOffset(cell.start as u64),
            end: PhysicalOffset(cell.end as u64),
        });
    let block_table = BlockTable::new(blocks);
    let mut finished: Vec<Vec<RawIndexCell>> = vec![Vec::new(); block_table.thread_count()];
    let mut context = ContextBuilder::new();
    let mut references = 0;
    let mut slot = None;
    for cell in rebuilt.cells.iter() {
        match cell.kind {
            ObjectKind::BlockStart => slot = block_table.slot(ThreadId(cell.id)),
            ObjectKind::Tracepoint => {
                if let Some(slot) = slot {
                    finished[slot].push(cell.to_raw());
                }
            }
            kind => {
                context.add(kind, cell.id, PhysicalOffset(cell.start as u64));
                references += 1;
            }
        }
    }
    let unfinished = unfinished_cells(&block_table, &rebuilt.unfinished);
    let sources = finished
        .into_iter()
        .zip(unfinished)
        .enumerate()
        .map(|(slot, (finished, unfinished))| {
            let count = finished.len() + unfinished.len();
            let thread = block_table.thread(slot).thread;
            (
                thread,
                count,
                Source::Made {
                    finished,
                    unfinished,
                },
            )
        })
        .collect();
    let lookup = Lookup::new(block_table, FileCells::default(), sources);
    lookup.build_all(data);
    LoadedIndex {
        lookup,
        context,
        references,
        data: rebuilt.report,
        complete: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::raw::{Crash, SynthOptions, generate};

    /// A crashed recorder's trace, and its footer-less index loaded.
    fn crashed(
        threads: usize,
        block_bytes: usize,
        seed: u64,
        dump_order: bool,
    ) -> (Vec<u8>, LoadedIndex) {
        let (data, index) = generate(&SynthOptions {
            threads,
            bytes: 1 << 20,
            block_bytes,
            seed,
            block_cell_last: dump_order,
            crash: Some(Crash {
                half_written_block: false,
            }),
        });
        let mapped = TraceBytes::from_vec(data.clone());
        let loaded = load_index(&mapped, TraceBytes::from_vec(index), None).unwrap();
        (data, loaded)
    }

    #[test]
    fn the_cell_cursor_finds_the_containers_the_table_finds() {
        for (threads, block_bytes, seed, dump_order) in [
            (1, 1 << 10, 1, false),
            (3, 700, 2, false),
            (4, 16 << 10, 3, false),
            (2, 300, 4, false),
            (2, 700, 5, true),
        ] {
            let (data, loaded) = crashed(threads, block_bytes, seed, dump_order);
            let lookup = loaded.lookup;
            for slot in 0..lookup.blocks.thread_count() {
                let by_cursor = lookup.missing_containers(&data, slot).unwrap();
                // The cursor needed no table (the recorder's order).
                assert!(dump_order || lookup.streams(slot), "seed {seed}");
                let (table, view) = lookup.containers(&data, slot).unwrap();
                let mut stream = Stream::new(&data, lookup.blocks.thread(slot));
                let ends = &mut table.ends_by_start(view);
                let by_table = scan_unindexed(&mut stream, ends, LogicalOffset(0), None).unwrap();
                assert!(!by_cursor.is_empty(), "seed {seed}: the root is unfinished");
                assert_eq!(by_cursor, by_table, "seed {seed}, slot {slot}");
            }
        }
    }

    #[test]
    fn the_reference_recorders_crashed_trace_is_repaired_without_tables() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/reference-traces");
        let (Ok(data), Ok(index)) = (
            std::fs::read(dir.join("crashed.trace")),
            std::fs::read(dir.join("crashed.trace.idx")),
        ) else {
            eprintln!(
                "skipped: reference traces folder {} not found",
                dir.display()
            );
            return;
        };
        let data = TraceBytes::from_vec(data);
        let loaded = load_index(&data, TraceBytes::from_vec(index), None).unwrap();
        assert!(!loaded.complete);
        let lookup = &loaded.lookup;
        let mut found = 0;
        for slot in 0..lookup.blocks.thread_count() {
            found += lookup
                .missing_containers(data.as_slice(), slot)
                .unwrap()
                .len();
            // The scan read the recorder's cells alongside: no table built.
            assert!(lookup.streams(slot), "thread slot {slot}");
        }
        // The 15 calls the eager loader reports unfinished.
        assert_eq!(found, 15);
    }

    #[test]
    fn the_cell_cursor_refuses_cells_out_of_post_order() {
        let lookup = crashed(2, 700, 6, false).1.lookup;
        let cells = lookup.file.slice();
        let (ranges, count) = lookup.unbuilt_ranges(0).unwrap();
        let pass = || lookup.file.pass(None);
        assert!(PostOrderCursor::new(cells, &ranges, count, pass()).is_some());
        // A wrong count, or runs cut short.
        assert!(PostOrderCursor::new(cells, &ranges, count + 1, pass()).is_none());
        assert!(PostOrderCursor::new(cells, &ranges, count - 1, pass()).is_none());
        // Two neighbouring container cells swapped: ends no longer ascend.
        let mut swapped: Vec<RawIndexCell> = cells.to_vec();
        let container = |k: usize| swapped[k].kind == ObjectKind::Tracepoint as u8;
        let k = ranges
            .iter()
            .flat_map(|&(from, to)| from as usize..to as usize - 1)
            .find(|&k| container(k) && container(k + 1))
            .unwrap();
        swapped.swap(k, k + 1);
        assert!(PostOrderCursor::new(&swapped, &ranges, count, pass()).is_none());
    }
}
