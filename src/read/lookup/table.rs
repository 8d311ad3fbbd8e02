//! `Lookup`: blocks, reference cells and container tables, what finding
//! things needs; the tables built on first use, distrusted, repaired.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use rayon::prelude::*;

use super::containers::container_cell;
use super::problem::IndexProblem;
use crate::common::{LogicalOffset, ThreadId};
use crate::error::{Error, Result};
use crate::format::ObjectKind;
use crate::format::index::RawIndexCell;
use crate::read::lookup::block_table::{BlockSpan, BlockTable};
use crate::read::lookup::containers::{
    CellView, ContainerTable, Containers, Converted, FileCells, NestingError, Placed,
    PostOrderCursor, Source, WithMadeCells,
};
use crate::read::lookup::stream::{Stream, Unindexed, scan_unindexed};
use crate::storage::{Reads, Resident, TraceBytes};
use crate::turns::Turns;

/// Blocks, reference cells and container tables: what finding things needs.
#[derive(Debug, Default)]
pub(crate) struct Lookup {
    pub(crate) blocks: BlockTable,
    /// The index file's cells (none after a rebuild).
    pub(crate) file: FileCells,
    /// One per thread, in the block table's thread order.
    pub(crate) threads: Vec<ThreadContainers>,
    /// Calls of [`Lookup::distrust`] that replaced a table.
    pub(crate) distrusted: AtomicUsize,
    /// With a resident window: the data file, whose pages a table build's
    /// footer checks release behind them every that many bytes of a
    /// thread's stream ([`Lookup::release_reads`]).
    pub(crate) release_reads: Option<(TraceBytes, u64)>,
}

/// A thread's table, or the error of the scan that should have made it
/// (its cells were not trusted and the data is corrupt): every lookup that
/// needs the table then gives that error.
type Table = std::result::Result<Containers, Error>;

/// One thread's containers: where their cells are until first use, then
/// the table built from them.
#[derive(Debug)]
pub(crate) struct ThreadContainers {
    /// Container cells known at open.
    pub(crate) count: usize,
    /// The index's runs of cells holding the thread's container cells
    /// (empty for cells made by a scan or a sidecar's): kept after the
    /// table is built, so that a refresh appends to them
    /// (`Lookup::extended`).
    pub(crate) ranges: Vec<(u32, u32)>,
    pub(crate) source: Mutex<Option<Source>>,
    /// The cells numbered below this one (in `ranges`) were found to end
    /// at footers: a refresh carries it over, and a table build checks only
    /// the cells after it (the data before a growing trace's old end does
    /// not change).
    pub(crate) footers_checked: AtomicU32,
    /// Cells made for containers the index has no cell for (a rebuild's
    /// calls that never finished, a repair's finds), ascending by start:
    /// added to the table when it is built, interleaved when the index's
    /// cells stream ([`WithMadeCells`]).
    pub(crate) made: Vec<RawIndexCell>,
    /// The containers without a cell still open at the stream's end,
    /// outermost first, once a repair has looked (`None` before).
    pub(crate) open: Option<Vec<Unindexed>>,
    built: OnceLock<Table>,
    /// The table found by scanning the thread after a lookup through
    /// `built` contradicted the data (it replaces `built` from then on).
    rescanned: OnceLock<Table>,
    /// Why the table was rebuilt by scanning the thread, if it was.
    problem: OnceLock<IndexProblem>,
}

impl ThreadContainers {
    /// Whether its cells were trusted so far: no problem found, no scan
    /// replaced them, no table build failed.
    pub(crate) fn trusted(&self) -> bool {
        self.problem.get().is_none()
            && self.rescanned.get().is_none()
            && !matches!(self.built.get(), Some(Err(_)))
    }

    pub(crate) fn new(count: usize, source: Source) -> Self {
        let ranges = match &source {
            Source::Ranges { ranges, .. } => ranges.clone(),
            Source::Made { .. } => Vec::new(),
        };
        ThreadContainers {
            count,
            ranges,
            source: Mutex::new(Some(source)),
            footers_checked: AtomicU32::new(0),
            made: Vec::new(),
            open: None,
            built: OnceLock::new(),
            rescanned: OnceLock::new(),
            problem: OnceLock::new(),
        }
    }
}

impl Lookup {
    /// Whether thread `slot`'s cells were trusted so far: nothing
    /// contradicted them and no scan replaced them.
    pub(crate) fn trusted(&self, slot: usize) -> bool {
        self.threads
            .get(slot)
            .is_some_and(ThreadContainers::trusted)
    }

    /// The stream of thread `slot`.
    pub(crate) fn stream<'r>(&'r self, data: &'r [u8], slot: usize) -> Stream<'r> {
        Stream::new(data, self.blocks.thread(slot))
    }
}

impl Lookup {
    pub(crate) fn new(
        blocks: BlockTable,
        file: FileCells,
        sources: Vec<(ThreadId, usize, Source)>,
    ) -> Self {
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
                ranges: Vec::new(),
                source: Mutex::new(None),
                footers_checked: AtomicU32::new(0),
                made: Vec::new(),
                open: None,
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
        self.containers_read(data, slot, Reads::Lend)
    }

    /// [`containers`](Self::containers), the cells read as `reads` says.
    pub(crate) fn containers_read(
        &self,
        data: &[u8],
        slot: usize,
        reads: Reads,
    ) -> Result<(&ContainerTable, CellView<'_>)> {
        let thread = &self.threads[slot];
        let table = match thread.rescanned.get() {
            Some(rescanned) => rescanned,
            None => thread.built.get_or_init(|| self.build(data, slot)),
        };
        match table {
            Ok(built) => Ok((&built.table, built.view(&self.file, reads))),
            Err(error) => Err(Error::replay(error)),
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
        // The index's runs of cells, to check their footers.
        let ranges = match &source {
            Source::Ranges { ranges, .. } => ranges.clone(),
            Source::Made { .. } => Vec::new(),
        };
        // The footers are read from the data while the cells are ordered
        // (independent passes, on two cores), in pieces taken in turn: the
        // thread that orders the cells takes the pieces left when it is
        // done. A nesting problem is the one reported, as if the footers
        // had been checked after. A thread of its own, not the rayon pool:
        // this runs inside the table's `OnceLock`, which pool workers may
        // be waiting on.
        let footers = FooterPieces::new(self.unchecked(slot, &ranges));
        let check = || footers.check(|piece| self.check_footers_of(data, slot, piece));
        let (built, checked) = std::thread::scope(|scope| {
            let helper = std::thread::Builder::new().spawn_scoped(scope, check);
            let built = Containers::build(&self.file, source, self.release_window());
            check();
            if let Ok(helper) = helper {
                helper
                    .join()
                    .unwrap_or_else(|e| std::panic::resume_unwind(e));
            }
            (built, footers.outcome())
        });
        let footers = checked.map(|()| self.footers_checked_to(slot, &ranges));
        let problem = match built {
            Ok(mut containers) => match footers {
                Ok(()) => {
                    if !thread.made.is_empty() {
                        containers.add(&self.file, thread.made.clone());
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
        self.check_footers_of(data, slot, &self.unchecked(slot, ranges))?;
        self.footers_checked_to(slot, ranges);
        Ok(())
    }

    /// Records that every container cell known now ends at a footer,
    /// without reading the data: for the cells the rebuild wrote, each
    /// where it parsed its container's footer.
    pub(crate) fn footers_found_by_rebuild(&self) {
        for (slot, thread) in self.threads.iter().enumerate() {
            self.footers_checked_to(slot, &thread.ranges);
        }
    }

    /// The part of `ranges` (thread `slot`'s runs of cells) whose footers
    /// are not known to have been checked.
    pub(super) fn unchecked(&self, slot: usize, ranges: &[(u32, u32)]) -> Vec<(u32, u32)> {
        let from = self.threads[slot].footers_checked.load(Ordering::Relaxed);
        ranges
            .iter()
            .filter(|&&(_, to)| to > from)
            .map(|&(start, to)| (start.max(from), to))
            .collect()
    }

    /// Records that the footers of `ranges` were checked.
    fn footers_checked_to(&self, slot: usize, ranges: &[(u32, u32)]) {
        if let Some(&(_, to)) = ranges.last() {
            self.threads[slot]
                .footers_checked
                .fetch_max(to, Ordering::Relaxed);
        }
    }

    /// [`Lookup::check_footers`] of the cells of `ranges`.
    fn check_footers_of(
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
        if let (Some(left), Some((bytes, _))) = (&span, &self.release_reads) {
            // What lies behind the last footer read, and the cells read
            // since the last release: the next pass may be another
            // piece's, far from here.
            let (_, physical) = unreleased.unwrap_or((left.logical.0, left.physical.0));
            bytes.release_around(physical..left.physical.0 + left.len);
            if let Some(&(_, to)) = ranges.last() {
                pass.at(to);
            }
            pass.finish();
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
    pub(super) fn unbuilt_ranges(&self, slot: usize) -> Option<(Vec<(u32, u32)>, usize)> {
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
                // Kept for a refresh too (`Lookup::extended`).
                thread.made = cells.clone();
                built.add(&self.file, cells);
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
            let mut open: Vec<Unindexed> = found.iter().filter(|c| c.end == len).copied().collect();
            open.sort_by_key(|c| c.start);
            unfinished += open.len();
            self.threads[slot].open = Some(open);
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
    pub(super) fn missing_containers(&self, data: &[u8], slot: usize) -> Result<Vec<Unindexed>> {
        let resident = self.release_reads.as_ref().map(|(bytes, window)| {
            Resident::new(
                *window,
                bytes.clone(),
                self.file.bytes().into_iter().cloned().collect(),
            )
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

/// Index cells per piece of a table build's footer checks.
const FOOTER_PIECE_CELLS: u32 = 1 << 18;

/// A thread's runs of index cells cut into pieces whose footers several
/// threads check, taking the pieces in turn; the problem of the first
/// piece that fails is the one kept.
struct FooterPieces {
    pieces: Vec<Vec<(u32, u32)>>,
    turns: Turns,
    failed: Mutex<Option<(usize, IndexProblem)>>,
}

impl FooterPieces {
    fn new(ranges: Vec<(u32, u32)>) -> Self {
        let mut pieces = vec![Vec::new()];
        let mut cells = 0;
        for (mut from, to) in ranges {
            while from < to {
                if cells == FOOTER_PIECE_CELLS {
                    pieces.push(Vec::new());
                    cells = 0;
                }
                let end = to.min(from + (FOOTER_PIECE_CELLS - cells));
                pieces.last_mut().expect("one at least").push((from, end));
                cells += end - from;
                from = end;
            }
        }
        FooterPieces {
            turns: Turns::new(pieces.len()),
            pieces,
            failed: Mutex::new(None),
        }
    }

    /// Checks the pieces left with `check`, one after the other.
    fn check(&self, check: impl Fn(&[(u32, u32)]) -> std::result::Result<(), IndexProblem>) {
        while let Some(k) = self.turns.take() {
            if let Err(problem) = check(&self.pieces[k]) {
                let mut failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
                if failed.as_ref().is_none_or(|&(first, _)| k < first) {
                    *failed = Some((k, problem));
                }
            }
        }
    }

    /// The first failing piece's problem, once every piece is checked.
    fn outcome(&self) -> std::result::Result<(), IndexProblem> {
        let failed = self.failed.lock().unwrap_or_else(|e| e.into_inner()).take();
        failed.map_or(Ok(()), |(_, problem)| Err(problem))
    }
}
