//! Lookups in a thread's container cells read by `pread` instead of
//! through their mappings, for reads made at random under a resident
//! window (`lazy::copied`): every page such a read maps would have to be
//! counted and released, and fault in again next time.
//!
//! A search by start narrows to the [`FENCE`] containers between two of
//! the fence's entries (kept on the heap) and reads their cells in one
//! read ([`CopiedCells::ranges`]); the run of containers after or before
//! the one found comes with the same read where the cells lie close
//! enough ([`ContainerTable::copy_run_from`],
//! [`ContainerTable::copy_run_before`]). The innermost container holding
//! an offset, when it lies before such a run, is found through the chunk
//! maxima (read in batches where a sidecar maps them) and the one or two
//! chunks they point to ([`ContainerTable::holding_before_copied`]).

use super::table::{FENCE, Fence};
use super::*;
use crate::common::EventId;

/// A thread's container cells read by `pread` rather than through their
/// mapping, for lookups made at random under a resident window
/// (`ContainerTable::find_start_copied`): a sidecar's flat arrays, or the
/// index file's cells and the cells made in memory after them.
#[derive(Debug, Clone, Copy)]
pub(crate) enum CopiedCells<'a> {
    /// A sidecar's arrays.
    Flat(&'a MappedCells),
    /// The index file's cells, then `made`.
    Cells {
        /// The index file's cells.
        file: &'a FileCells,
        /// Cells made in memory, numbered after the file's.
        made: &'a [RawIndexCell],
    },
}

impl CopiedCells<'_> {
    /// The content starts of the cells `ids` into `starts`, and their ends
    /// into `ends` when given (of cells `first..first + starts.len()` when
    /// `ids` is `None`: a sidecar's, whose table is in cell order), in one
    /// read per array; returns of how many, from the first: all of a
    /// sidecar's, or as many index cells as lie within
    /// [`FileCells::COPIED_SPAN`] bytes ([`FileCells::copy_ranges_of`]); 0
    /// when they cannot be read so (cells made in memory, a short read).
    pub(crate) fn ranges(
        &self,
        first: usize,
        ids: Option<&[u32]>,
        starts: &mut [u64],
        ends: Option<&mut [u64]>,
    ) -> usize {
        match (self, ids) {
            (CopiedCells::Flat(flat), None) => {
                let copied = flat.copy_starts(first, starts)
                    && ends.is_none_or(|ends| flat.copy_ends(first, ends));
                if copied { starts.len() } else { 0 }
            }
            (CopiedCells::Cells { file, .. }, Some(ids)) if starts.len() == ids.len() => {
                let ends = ends.filter(|ends| ends.len() == ids.len());
                file.copy_ranges_of(ids, starts, ends)
            }
            _ => 0,
        }
    }

    /// The content start of cell `id`.
    pub(crate) fn start(&self, id: u32) -> Option<u64> {
        match self {
            CopiedCells::Flat(flat) => {
                let mut start = [0];
                flat.copy_starts(id as usize, &mut start)
                    .then_some(start[0])
            }
            CopiedCells::Cells { .. } => self.cell(id).map(|cell| cell.start.get() as u64),
        }
    }

    /// The content end of cell `id`.
    pub(crate) fn end(&self, id: u32) -> Option<u64> {
        match self {
            CopiedCells::Flat(flat) => flat.copy_end(id as usize),
            CopiedCells::Cells { .. } => self.cell(id).map(|cell| cell.end.get() as u64),
        }
    }

    /// The event id of cell `id`.
    pub(crate) fn event(&self, id: u32) -> Option<i32> {
        match self {
            CopiedCells::Flat(flat) => flat.copy_event(id as usize),
            CopiedCells::Cells { .. } => self.cell(id).map(|cell| cell.id.get()),
        }
    }

    /// Index or made cell `id` (never a sidecar's).
    fn cell(&self, id: u32) -> Option<RawIndexCell> {
        let CopiedCells::Cells { file, made } = self else {
            return None;
        };
        match (id as usize).checked_sub(file.len()) {
            None => file.copy_cell(id as usize),
            Some(made_id) => made.get(made_id).copied(),
        }
    }
}

/// A container's content start and end.
pub(crate) type Range = (LogicalOffset, LogicalOffset);

/// The content starts and ends of a run of consecutive containers of a
/// table (in start order), copied ([`ContainerTable::copy_run`]): what a
/// scan of a short call's children looks its containers up in.
#[derive(Debug)]
pub(crate) struct CopiedRun {
    /// The table position of the container after the run's last.
    next: usize,
    starts: Vec<u64>,
    ends: Vec<u64>,
    /// Whether the run reaches the table's end.
    to_the_end: bool,
}

impl CopiedRun {
    /// The run from its first container starting at or after `key` on, at
    /// most `count` long.
    fn starting_at(self, key: LogicalOffset, count: usize) -> CopiedRun {
        let first = self.starts.partition_point(|&start| start < key.0);
        let end = first.saturating_add(count).min(self.starts.len());
        self.keep(first..end)
    }

    /// The run up to its last container starting at or before `key`, at
    /// most `count` long.
    fn ending_at(self, key: LogicalOffset, count: usize) -> CopiedRun {
        let end = self.starts.partition_point(|&start| start <= key.0);
        self.keep(end.saturating_sub(count)..end)
    }

    /// The containers `range` of the run (positions in the run).
    fn keep(mut self, range: std::ops::Range<usize>) -> CopiedRun {
        self.to_the_end &= range.end == self.starts.len();
        self.next -= self.starts.len() - range.end;
        self.starts.truncate(range.end);
        self.ends.truncate(range.end);
        self.starts.drain(..range.start);
        self.ends.drain(..range.start);
        self
    }

    /// How many containers the run holds.
    pub(crate) fn len(&self) -> usize {
        self.starts.len()
    }

    /// The table position of the run's first container.
    pub(crate) fn position(&self) -> usize {
        self.next - self.starts.len()
    }

    /// The content start and end of each of the run's containers.
    pub(crate) fn ranges(
        &self,
    ) -> impl DoubleEndedIterator<Item = (LogicalOffset, LogicalOffset)> + ExactSizeIterator + '_
    {
        let range = |(&start, &end)| (LogicalOffset(start), LogicalOffset(end));
        self.starts.iter().zip(&self.ends).map(range)
    }

    /// The container with the greatest end from the run's `skip`-th on:
    /// its table position, content start and end.
    pub(crate) fn widest_from(&self, skip: usize) -> Option<(usize, Range)> {
        let (i, range) = (self.ranges().enumerate().skip(skip)).max_by_key(|&(_, (_, end))| end)?;
        Some((self.position() + i, range))
    }

    /// The content start and end of the run's `i`-th container.
    pub(crate) fn range(&self, i: usize) -> Option<(LogicalOffset, LogicalOffset)> {
        Some((
            LogicalOffset(*self.starts.get(i)?),
            LogicalOffset(*self.ends.get(i)?),
        ))
    }

    /// The table position of the container after the run's last.
    fn next(&self) -> usize {
        self.next
    }

    /// Appends `more`, the run of containers right after this one's.
    fn append(&mut self, more: CopiedRun) {
        debug_assert_eq!(more.next - more.starts.len(), self.next);
        self.starts.extend_from_slice(&more.starts);
        self.ends.extend_from_slice(&more.ends);
        self.next = more.next;
        self.to_the_end = more.to_the_end;
    }

    /// Whether the run holds no container.
    fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    /// The content start and end of the run's first container.
    pub(crate) fn first(&self) -> Option<(LogicalOffset, LogicalOffset)> {
        self.range(0)
    }

    /// Whether every container of the table starting at or after the
    /// run's first and before `end` is in the run.
    pub(crate) fn covers(&self, end: LogicalOffset) -> bool {
        self.to_the_end || self.starts.last().is_some_and(|&start| start >= end.0)
    }

    /// The content end of the container whose content starts at `start`,
    /// if the run holds it.
    pub(crate) fn end_of(&self, start: LogicalOffset) -> Option<LogicalOffset> {
        let i = self.starts.binary_search(&start.0).ok()?;
        self.ends.get(i).copied().map(LogicalOffset)
    }
}

/// What [`ContainerTable::holding_before_copied`] finds.
#[derive(Debug, Default)]
pub(crate) struct HoldingBefore {
    /// The table position and content start of the innermost container
    /// holding the offset; `None` at the top level.
    pub(crate) holding: Option<(usize, LogicalOffset)>,
    /// The container with the greatest end between that one and the run,
    /// if any: its table position, content start and end.
    pub(crate) widest: Option<(usize, Range)>,
}

/// Updates `widest` (the container with the greatest end) with the
/// containers of `run` from its `skip`-th on.
fn widen(widest: &mut Option<(usize, Range)>, run: &CopiedRun, skip: usize) {
    if let Some(candidate) = run.widest_from(skip)
        && widest.is_none_or(|(_, (_, end))| candidate.1.1 > end)
    {
        *widest = Some(candidate);
    }
}

/// Chunk maxima read backwards, a batch of [`ChunkMaxima::BATCH`] by
/// `pread` at a time when they are mapped.
#[derive(Default)]
struct ChunkMaxima {
    /// The chunk of `words[0]`.
    from: usize,
    words: Vec<u64>,
}

impl ChunkMaxima {
    const BATCH: usize = 512;

    /// Chunk `c`'s greatest end.
    fn get(&mut self, maxima: &Words, c: usize) -> Option<u64> {
        let (bytes, at) = match maxima {
            Words::Owned(words) => return words.get(c).copied(),
            Words::Mapped { bytes, at, len } if c < *len => (bytes, *at),
            Words::Mapped { .. } => return None,
        };
        if let Some(&word) = c.checked_sub(self.from).and_then(|i| self.words.get(i)) {
            return Some(word);
        }
        self.from = (c + 1).saturating_sub(Self::BATCH);
        let mut raw = vec![0u8; (c + 1 - self.from) * 8];
        if bytes.copy_at((at + self.from * 8) as u64, &mut raw) != raw.len() {
            return None;
        }
        self.words = raw
            .chunks_exact(8)
            .map(|w| u64::from_le_bytes(w.try_into().unwrap_or_default()))
            .collect();
        self.words.get(c - self.from).copied()
    }
}

/// A container's content start, and its end when it was read with it.
type StartAndEnd = (u64, Option<u64>);

impl ContainerTable {
    /// [`find_start`](Self::find_start) without a hint, with the cells read
    /// by `pread` ([`partition_copied`](Self::partition_copied)): the
    /// container's position and content end.
    pub(crate) fn find_start_copied(
        &self,
        cells: CopiedCells<'_>,
        start: LogicalOffset,
    ) -> Option<Option<(usize, LogicalOffset)>> {
        let (at, first) = self.partition_copied(cells, start.0)?;
        let Some((_, end)) = first.filter(|&(found, _)| found == start.0) else {
            return Some(None);
        };
        let end = match end {
            Some(end) => end,
            None => cells.end(self.id(at))?,
        };
        Some(Some((at, LogicalOffset(end))))
    }

    /// The positions `low..high` in which the first container whose start
    /// fails `pred` lies (those failing it follow those passing it; `high`
    /// when none in between fails), narrowed by the [`Fence`]; `None`
    /// before the fence is built.
    fn fenced(&self, pred: impl Fn(u64) -> bool) -> Option<(usize, usize)> {
        let failing = self.fence.get()?.failing_start(pred);
        Some(Fence::narrow(failing, self.len()))
    }

    /// [`first_starting_at_or_after`](Self::first_starting_at_or_after),
    /// with the cells read by `pread`.
    pub(crate) fn first_starting_at_or_after_copied(
        &self,
        cells: CopiedCells<'_>,
        at: LogicalOffset,
    ) -> Option<usize> {
        self.partition_copied(cells, at.0).map(|(at, _)| at)
    }

    /// The first container whose content starts at or after `key`, with
    /// its start and, when the same read gave it (index cells), its end
    /// (`None` past the last), once the table's [`Fence`] is built: the
    /// fence's entries narrow the search to fewer than [`FENCE`]
    /// containers, whose cells are read by `pread`
    /// ([`CopiedCells::ranges`]: in one read, or, index cells too far
    /// apart for that, one per step of the binary search) instead of
    /// through the mappings, so the search maps no page of the lookups.
    /// `None` when it cannot search so (no fence yet, a short read).
    fn partition_copied(
        &self,
        cells: CopiedCells<'_>,
        key: u64,
    ) -> Option<(usize, Option<StartAndEnd>)> {
        let fence = self.fence.get()?;
        let len = self.len();
        let failing = fence.failing_start(|s| s < key);
        let (low, high) = Fence::narrow(failing, len);
        let ids = match &self.order {
            Order::Ids(ids) => Some(ids.get(low..high)?),
            Order::Identity(_) => None,
        };
        let (mut starts, mut ends) = ([0u64; FENCE], [0u64; FENCE]);
        let (starts, ends) = (starts.get_mut(..high - low)?, ends.get_mut(..high - low)?);
        // Index cells hold their ends: read with the starts, for nothing.
        let mut ends = ids.is_some().then_some(ends);
        let (passing, first) =
            if cells.ranges(low, ids, starts, ends.as_deref_mut()) == starts.len() {
                let passing = starts.partition_point(|&s| s < key);
                let end = |ends: &[u64]| ends[passing];
                let first = starts
                    .get(passing)
                    .map(|&start| (start, ends.as_deref().map(end)));
                (low + passing, first)
            } else {
                // Index cells too far apart for one read: one per step.
                let ids = ids?;
                let (mut from, mut to) = (0, ids.len());
                while from < to {
                    let mid = from + (to - from) / 2;
                    if cells.start(ids[mid])? < key {
                        from = mid + 1;
                    } else {
                        to = mid;
                    }
                }
                let first = match ids.get(from) {
                    Some(&id) => Some((cells.start(id)?, None)),
                    None => None,
                };
                (low + from, first)
            };
        // The first start at or past `key`: read above, else the fence
        // entry at `high` (none when `high` is the table's end).
        let first = match first {
            Some(first) => Some(first),
            None if passing < len => Some((*fence.starts.get(failing)?, None)),
            None => None,
        };
        Some((passing, first))
    }

    /// The starts and ends of up to `count` containers from table position
    /// `first` on, read by `pread` ([`CopiedCells::ranges`]: fewer when
    /// their index cells lie too far apart); `None` when they cannot be
    /// read so.
    pub(crate) fn copy_run(
        &self,
        cells: CopiedCells<'_>,
        first: usize,
        count: usize,
    ) -> Option<CopiedRun> {
        let end = first.checked_add(count)?.min(self.len());
        let n = end.checked_sub(first)?;
        let ids = match &self.order {
            Order::Ids(ids) => Some(ids.get(first..end)?),
            Order::Identity(_) => None,
        };
        let (mut starts, mut ends) = (vec![0; n], vec![0; n]);
        let copied = cells.ranges(first, ids, &mut starts, Some(&mut ends));
        if copied == 0 && n > 0 {
            return None;
        }
        starts.truncate(copied);
        ends.truncate(copied);
        Some(CopiedRun {
            next: first + copied,
            starts,
            ends,
            to_the_end: first + copied == self.len(),
        })
    }

    /// The first container whose content starts at or after `key` and up
    /// to `count - 1` after it, as [`copy_run`](Self::copy_run) gives them:
    /// the cells that search would read and the run after them in one
    /// read where they lie close enough, else one read each.
    pub(crate) fn copy_run_from(
        &self,
        cells: CopiedCells<'_>,
        key: LogicalOffset,
        count: usize,
    ) -> Option<CopiedRun> {
        let (low, high) = self.fenced(|s| s < key.0)?;
        let run = self.copy_run(cells, low, (high - low).saturating_add(count));
        match run.map(|run| run.starting_at(key, count)) {
            // Unless the cells read stopped short of that container.
            Some(run) if !run.is_empty() || run.to_the_end => Some(run),
            _ => {
                let first = self.first_starting_at_or_after_copied(cells, key)?;
                self.copy_run(cells, first, count)
            }
        }
    }

    /// The run of up to `count` containers that ends with the last one
    /// whose content starts at or before `key` (empty when none does), as
    /// [`copy_run`](Self::copy_run) gives them: the cells the search for
    /// that container reads and the run before them, in one read. `None`
    /// when they cannot be read so (no fence yet, index cells too far
    /// apart).
    pub(crate) fn copy_run_before(
        &self,
        cells: CopiedCells<'_>,
        key: LogicalOffset,
        count: usize,
    ) -> Option<CopiedRun> {
        let (low, high) = self.fenced(|s| s <= key.0)?;
        let first = low.saturating_sub(count);
        let run = self.copy_run(cells, first, high - first)?;
        (run.next() == high).then(|| run.ending_at(key, count))
    }

    /// The innermost container before table position `first` holding
    /// offset `at` (none from `first` to the last container starting at
    /// or before `at` holds it) and the widest container between the two:
    /// found through the chunk maxima, the chunks they lie in read by
    /// `pread`. `None` when they cannot be read so.
    pub(crate) fn holding_before_copied(
        &self,
        cells: CopiedCells<'_>,
        first: usize,
        at: LogicalOffset,
    ) -> Option<HoldingBefore> {
        let mut chunk = first / CHUNK;
        let mut part = self.copy_full_run(cells, chunk * CHUNK, first - chunk * CHUNK)?;
        let mut widest = None;
        let mut maxima = ChunkMaxima::default();
        loop {
            let holding = part.ranges().rposition(|(_, end)| end > at);
            widen(&mut widest, &part, holding.map_or(0, |i| i + 1));
            if let Some(i) = holding {
                let holding = Some((part.position() + i, part.range(i)?.0));
                return Some(HoldingBefore { holding, widest });
            }
            // The chunk before holding `at`, and the greatest end of those
            // between.
            let mut greatest: Option<(u64, usize)> = None;
            let next = loop {
                let Some(c) = chunk.checked_sub(1) else {
                    break None;
                };
                chunk = c;
                let most = maxima.get(&self.chunk_max_end, c)?;
                if most > at.0 {
                    break Some(c);
                }
                if greatest.is_none_or(|(m, _)| most > m) {
                    greatest = Some((most, c));
                }
            };
            let wider = |&(most, _): &(u64, usize)| widest.is_none_or(|(_, (_, end))| most > end.0);
            if let Some((_, c)) = greatest.filter(wider) {
                widen(
                    &mut widest,
                    &self.copy_full_run(cells, c * CHUNK, CHUNK)?,
                    0,
                );
            }
            match next {
                Some(c) => part = self.copy_full_run(cells, c * CHUNK, CHUNK)?,
                None => {
                    return Some(HoldingBefore {
                        holding: None,
                        widest,
                    });
                }
            }
        }
    }

    /// [`copy_run`](Self::copy_run) of all `count` containers (fewer at
    /// the table's end), else `None`.
    fn copy_full_run(
        &self,
        cells: CopiedCells<'_>,
        first: usize,
        count: usize,
    ) -> Option<CopiedRun> {
        let run = self.copy_run(cells, first, count)?;
        (run.next() == first.saturating_add(count).min(self.len())).then_some(run)
    }

    /// The event id of the `k`-th container, read by `pread`.
    pub(crate) fn event_copied(&self, cells: CopiedCells<'_>, k: usize) -> Option<EventId> {
        let id = match &self.order {
            Order::Ids(ids) => *ids.get(k)?,
            Order::Identity(len) => u32::try_from(k).ok().filter(|_| k < *len)?,
        };
        cells.event(id).map(EventId)
    }

    /// Extends `run` with the containers after it until it
    /// [`covers`](CopiedRun::covers) `end`, or holds `most`, each read
    /// ([`copy_run`](Self::copy_run)) doubling it at most; whether it
    /// covers `end`.
    pub(crate) fn extend_run(
        &self,
        cells: CopiedCells<'_>,
        run: &mut CopiedRun,
        end: LogicalOffset,
        most: usize,
    ) -> bool {
        while !run.covers(end) {
            let wanted = most.saturating_sub(run.len()).min(run.len().max(1));
            match self.copy_run(cells, run.next(), wanted) {
                Some(more) if !more.is_empty() => run.append(more),
                _ => return false,
            }
        }
        true
    }
}
