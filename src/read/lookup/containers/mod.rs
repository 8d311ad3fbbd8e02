//! Container lookups without per-cell allocation: every container's content
//! range, found by (thread, logical start) or by event id.
//!
//! The cells stay where they are (the mapped index file, or cells made in
//! memory by a rebuild or a repair); each thread keeps one `u32` per
//! container: the cell's number, in start order (pre-order). A streaming
//! index lists a thread's containers in post-order;
//! `ContainerTable::from_post_order` turns that into start order in one
//! backwards pass, checking on the way that the ranges nest.

mod copied;
mod order;
mod table;
#[cfg(test)]
mod tests;

pub(crate) use copied::*;
pub(crate) use order::*;
pub(crate) use table::*;

use zerocopy::FromBytes;
use zerocopy::little_endian::{I32, U64};

use crate::common::LogicalOffset;
use crate::format::index::{CELL_LEN, RawIndexCell};
use crate::format::{FILE_HEADER_LEN, ObjectKind};
use crate::storage::{ReleaseBehind, TraceBytes};

/// Where a cell's content start lies in it.
const START_AT: usize = std::mem::offset_of!(RawIndexCell, start);
/// Where a cell's content end lies in it.
const END_AT: usize = std::mem::offset_of!(RawIndexCell, end);

/// The cells of an index file, read in place.
#[derive(Debug, Default)]
pub(crate) struct FileCells {
    bytes: Option<TraceBytes>,
    count: usize,
}

impl FileCells {
    /// The first `count` cells of index file `bytes`.
    pub(crate) fn new(bytes: TraceBytes, count: usize) -> Self {
        debug_assert!(FILE_HEADER_LEN as usize + count * CELL_LEN <= bytes.len() as usize);
        FileCells {
            bytes: Some(bytes),
            count,
        }
    }

    /// How many cells there are.
    pub(crate) fn len(&self) -> usize {
        self.count
    }

    /// The index file's mapping, if there is one.
    pub(crate) fn bytes(&self) -> Option<&TraceBytes> {
        self.bytes.as_ref()
    }

    /// Cell number `id`, read from the index file ([`TraceBytes::copy_at`]:
    /// a `pread`, which maps no page); `None` past the cells or when the
    /// read falls short.
    pub(crate) fn copy_cell(&self, id: usize) -> Option<RawIndexCell> {
        let bytes = self.bytes.as_ref().filter(|_| id < self.count)?;
        let mut cell = [0u8; CELL_LEN];
        let at = FILE_HEADER_LEN + (id * CELL_LEN) as u64;
        (bytes.copy_at(at, &mut cell) == CELL_LEN)
            .then(|| RawIndexCell::read_from_bytes(&cell).ok())
            .flatten()
    }

    /// The content starts of cells `ids` into `starts`, and their ends
    /// into `ends` when given, read from the index file in one `pread` of
    /// the span from the least to the greatest: of as many of the first
    /// ids as lie within [`COPIED_SPAN`](Self::COPIED_SPAN) bytes of each
    /// other; returns how many (0 when the first lies past the file's
    /// cells, made in memory, or the read falls short).
    pub(crate) fn copy_ranges_of(
        &self,
        ids: &[u32],
        starts: &mut [u64],
        mut ends: Option<&mut [u64]>,
    ) -> usize {
        let Some(bytes) = self.bytes.as_ref() else {
            return 0;
        };
        let most = Self::COPIED_SPAN / CELL_LEN;
        let (mut min, mut max, mut n) = (u32::MAX, 0, 0);
        for &id in ids.iter().take(starts.len()) {
            let (low, high) = (min.min(id), max.max(id));
            if (high - low) as usize >= most || high as usize >= self.count {
                break;
            }
            (min, max, n) = (low, high, n + 1);
        }
        if n == 0 {
            return 0;
        }
        let (min, len) = (min as usize, (max - min + 1) as usize * CELL_LEN);
        // Only `len` bytes zeroed (most spans are a few KiB).
        let mut span = vec![0u8; len];
        if bytes.copy_at(FILE_HEADER_LEN + (min * CELL_LEN) as u64, &mut span) != len {
            return 0;
        }
        // A cell's start and end, read where they lie in it (big-endian
        // `i64`s after the kind byte and the id) rather than through a
        // `RawIndexCell` copied out of the span.
        let word = |at: usize| {
            let bytes = span
                .get(at..at + 8)
                .and_then(|b| <[u8; 8]>::try_from(b).ok());
            bytes.map(|b| i64::from_be_bytes(b) as u64)
        };
        for (i, &id) in ids[..n].iter().enumerate() {
            let at = (id as usize - min) * CELL_LEN;
            let (Some(start), Some(end)) = (word(at + START_AT), word(at + END_AT)) else {
                return 0;
            };
            starts[i] = start;
            if let Some(ends) = ends.as_deref_mut().and_then(|ends| ends.get_mut(i)) {
                *ends = end;
            }
        }
        n
    }

    /// The most bytes of cells [`copy_ranges_of`](Self::copy_ranges_of)
    /// reads at once.
    pub(crate) const COPIED_SPAN: usize = 8 << 10;

    /// A pass over the cells (either direction) that releases the index
    /// pages it leaves behind every `window` bytes; nothing without a
    /// window or a mapping.
    pub(crate) fn pass(&self, window: Option<u64>) -> CellPass<'_> {
        CellPass(self.bytes.as_ref().map(|bytes| bytes.behind(window)))
    }

    /// The cells.
    #[inline]
    pub(crate) fn slice(&self) -> &[RawIndexCell] {
        match &self.bytes {
            Some(bytes) => {
                let start = FILE_HEADER_LEN as usize;
                let cells = &bytes.as_slice()[start..start + self.count * CELL_LEN];
                <[RawIndexCell]>::ref_from_bytes(cells).expect("whole cells")
            }
            None => &[],
        }
    }
}

/// See [`FileCells::pass`].
pub(crate) struct CellPass<'a>(Option<ReleaseBehind<'a>>);

impl CellPass<'_> {
    /// The pass has reached cell `n`.
    pub(crate) fn at(&mut self, n: u32) {
        if let Some(behind) = &mut self.0 {
            behind.at(FILE_HEADER_LEN + n as u64 * CELL_LEN as u64);
        }
    }

    /// The pass ends: releases the cells it read since its last release.
    pub(crate) fn finish(&mut self) {
        if let Some(behind) = &mut self.0 {
            behind.finish();
        }
    }
}

/// Index cells by number, borrowed: the index file's, then those one thread
/// made in memory; or a sidecar's flat arrays (cell `k` is the thread's
/// `k`-th container in start order).
#[derive(Debug, Clone, Copy)]
pub(crate) struct CellView<'a> {
    file: &'a [RawIndexCell],
    made: &'a [RawIndexCell],
    flat: Option<FlatCells<'a>>,
}

/// One thread's containers as a sidecar holds them: content starts, content
/// ends and event ids, little-endian, in start order, all of one length.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FlatCells<'a> {
    pub(crate) starts: &'a [U64],
    pub(crate) ends: &'a [U64],
    pub(crate) events: &'a [I32],
}

impl<'a> CellView<'a> {
    /// A view of `file` cells, then `made` ones.
    pub(crate) fn new(file: &'a [RawIndexCell], made: &'a [RawIndexCell]) -> Self {
        CellView {
            file,
            made,
            flat: None,
        }
    }

    /// A view of a sidecar's arrays.
    pub(crate) fn flat(flat: FlatCells<'a>) -> Self {
        CellView {
            file: &[],
            made: &[],
            flat: Some(flat),
        }
    }

    /// Cell number `id` (index or made cells only).
    #[inline]
    pub(crate) fn get(&self, id: u32) -> &'a RawIndexCell {
        let id = id as usize;
        match self.file.get(id) {
            Some(cell) => cell,
            None => &self.made[id - self.file.len()],
        }
    }

    #[inline]
    fn start(&self, id: u32) -> u64 {
        match &self.flat {
            Some(flat) => flat.starts[id as usize].get(),
            None => self.get(id).start.get() as u64,
        }
    }

    #[inline]
    fn end(&self, id: u32) -> u64 {
        match &self.flat {
            Some(flat) => flat.ends[id as usize].get(),
            None => self.get(id).end.get() as u64,
        }
    }

    #[inline]
    fn event(&self, id: u32) -> i32 {
        match &self.flat {
            Some(flat) => flat.events[id as usize].get(),
            None => self.get(id).id.get(),
        }
    }
}

/// Where a thread's container cells are, before its table is built.
#[derive(Debug)]
pub(crate) enum Source {
    /// Runs of an index file's cells, `[from, to)`, in index order; the
    /// container cells among them are the thread's, in post-order.
    Ranges {
        /// The runs.
        ranges: Vec<(u32, u32)>,
        /// How many container cells they hold.
        count: usize,
    },
    /// Cells made by a scan: finished containers in post-order, then those
    /// never finished (ending at the stream's end) in start order.
    Made {
        /// Finished containers.
        finished: Vec<RawIndexCell>,
        /// Unfinished containers.
        unfinished: Vec<RawIndexCell>,
    },
}

/// One thread's containers: the cells it made, and its table.
#[derive(Debug, Default)]
pub(crate) struct Containers {
    /// Cells made in memory (numbered after the index file's).
    pub(crate) made: Vec<RawIndexCell>,
    /// A sidecar's flat arrays, instead of cells.
    pub(crate) flat: Option<MappedCells>,
    /// The table.
    pub(crate) table: ContainerTable,
}

/// Where one thread's flat arrays lie in a mapped sidecar: `len` starts and
/// `len` ends (`u64`), then `len` event ids (`i32`), little-endian.
#[derive(Debug)]
pub(crate) struct MappedCells {
    /// The sidecar.
    pub(crate) bytes: TraceBytes,
    /// Byte offset of the starts.
    pub(crate) starts: usize,
    /// Byte offset of the ends.
    pub(crate) ends: usize,
    /// Byte offset of the event ids.
    pub(crate) events: usize,
    /// How many containers.
    pub(crate) len: usize,
}

impl MappedCells {
    /// Reads `out.len()` content starts from position `from` on from the
    /// sidecar's file ([`TraceBytes::copy_at`]: a `pread`, which maps no
    /// page); false when they are not all there.
    pub(crate) fn copy_starts(&self, from: usize, out: &mut [u64]) -> bool {
        from.checked_add(out.len())
            .is_some_and(|end| end <= self.len)
            && self.copy_words(self.starts + from * 8, out)
    }

    /// The content ends of `out.len()` containers from position `from`
    /// on, read as [`copy_starts`](Self::copy_starts) reads.
    pub(crate) fn copy_ends(&self, from: usize, out: &mut [u64]) -> bool {
        from.checked_add(out.len())
            .is_some_and(|end| end <= self.len)
            && self.copy_words(self.ends + from * 8, out)
    }

    /// The content end of the `k`-th container.
    pub(crate) fn copy_end(&self, k: usize) -> Option<u64> {
        let mut end = [0];
        self.copy_ends(k, &mut end).then_some(end[0])
    }

    /// The event id of the `k`-th container, read by `pread`.
    pub(crate) fn copy_event(&self, k: usize) -> Option<i32> {
        let mut event = [0u8; 4];
        let at = k.checked_mul(4)?.checked_add(self.events)?;
        (k < self.len && self.bytes.copy_at(at as u64, &mut event) == 4)
            .then(|| i32::from_le_bytes(event))
    }

    /// Words from byte `at` of the sidecar on into `out`, in one read.
    fn copy_words(&self, at: usize, out: &mut [u64]) -> bool {
        let mut bytes = vec![0u8; out.len() * 8];
        if self.bytes.copy_at(at as u64, &mut bytes) != bytes.len() {
            return false;
        }
        for (word, le) in out.iter_mut().zip(bytes.chunks_exact(8)) {
            *word = u64::from_le_bytes(<[u8; 8]>::try_from(le).unwrap_or_default());
        }
        true
    }

    /// The arrays (empty if the ranges were not checked to be inside the
    /// mapping, which the sidecar loader does).
    pub(crate) fn cells(&self) -> FlatCells<'_> {
        let bytes = self.bytes.as_slice();
        let slice = |at: usize, width: usize| bytes.get(at..at.saturating_add(self.len * width));
        let starts = slice(self.starts, 8).and_then(|b| <[U64]>::ref_from_bytes(b).ok());
        let ends = slice(self.ends, 8).and_then(|b| <[U64]>::ref_from_bytes(b).ok());
        let events = slice(self.events, 4).and_then(|b| <[I32]>::ref_from_bytes(b).ok());
        match (starts, ends, events) {
            (Some(starts), Some(ends), Some(events)) => FlatCells {
                starts,
                ends,
                events,
            },
            _ => FlatCells {
                starts: &[],
                ends: &[],
                events: &[],
            },
        }
    }
}

impl Containers {
    /// The cells of this thread, after the index file's `file`.
    pub(crate) fn view<'a>(&'a self, file: &'a [RawIndexCell]) -> CellView<'a> {
        match &self.flat {
            Some(flat) => CellView::flat(flat.cells()),
            None => CellView::new(file, &self.made),
        }
    }

    /// Builds a thread's containers from `source`; the pass over the index
    /// file's cells releases their pages behind it every `window` bytes.
    pub(crate) fn build(
        cells: &FileCells,
        source: Source,
        window: Option<u64>,
    ) -> Result<Self, NestingError> {
        let file = cells.slice();
        match source {
            Source::Ranges { ranges, count } => {
                let view = CellView::new(file, &[]);
                let post_backwards = post_backwards(view, &ranges, cells.pass(window));
                let table = match ContainerTable::convert(view, count, post_backwards) {
                    Err(Convert::Unsorted) => {
                        let post: Vec<u32> = ranges
                            .iter()
                            .flat_map(|&(from, to)| from..to)
                            .filter(|&id| view.get(id).kind == ObjectKind::Tracepoint as u8)
                            .collect();
                        ContainerTable::from_post_order(view, post)?
                    }
                    Err(Convert::Nesting(error)) => return Err(error),
                    Ok(table) => table,
                };
                Ok(Containers {
                    made: Vec::new(),
                    flat: None,
                    table,
                })
            }
            Source::Made {
                finished,
                unfinished,
            } => {
                let first = file.len() as u32;
                let finished_count = finished.len() as u32;
                let made: Vec<RawIndexCell> = finished.into_iter().chain(unfinished).collect();
                let view = CellView::new(file, &made);
                let post = (first..first + finished_count).collect();
                let mut table = ContainerTable::from_post_order(view, post)?;
                let extra: Vec<u32> = (first + finished_count..first + made.len() as u32).collect();
                table.merge(view, &extra);
                Ok(Containers {
                    made,
                    flat: None,
                    table,
                })
            }
        }
    }

    /// Thread's containers straight from the index file's `cells` (`ranges`
    /// holding `count` container cells in post-order), given to `place` in
    /// start order, last first, without a table: what a build checks
    /// (nesting, post-order) is checked on the way. `None` when it fails:
    /// `place` has then seen part of them, and the table must be built
    /// instead ([`Containers::build`] finds out why). The pass over the
    /// cells releases their pages behind it every `window` bytes.
    pub(crate) fn stream(
        cells: &FileCells,
        ranges: &[(u32, u32)],
        count: usize,
        window: Option<u64>,
        place: impl FnMut(Placed),
    ) -> Option<Converted> {
        let view = CellView::new(cells.slice(), &[]);
        let post_backwards = post_backwards(view, ranges, cells.pass(window));
        convert_into(view, count, post_backwards, place)
            .ok()
            .filter(|converted| converted.descending)
    }

    /// Adds cells made for containers the table lacks (ascending by start).
    pub(crate) fn add(&mut self, file: &[RawIndexCell], cells: Vec<RawIndexCell>) {
        if let Some(flat) = self.flat.take() {
            // A sidecar's table: copy it into made cells first.
            let view = CellView::flat(flat.cells());
            let first = (file.len() + self.made.len()) as u32;
            self.made.extend((0..self.table.len()).map(|k| {
                container_cell(
                    self.table.event(view, k).0,
                    self.table.start(view, k),
                    self.table.end(view, k),
                )
            }));
            let ids: Vec<u32> = (first..first + self.table.len() as u32).collect();
            self.table = ContainerTable::from_pre_order(CellView::new(file, &self.made), ids);
        }
        let first = (file.len() + self.made.len()) as u32;
        let ids: Vec<u32> = (first..first + cells.len() as u32).collect();
        self.made.extend(cells);
        self.table.merge(CellView::new(file, &self.made), &ids);
    }

    /// Bytes of heap.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.made.capacity() * CELL_LEN + self.table.heap_bytes()
    }
}

/// A container cell made in memory.
pub(crate) fn container_cell(event: i32, start: LogicalOffset, end: LogicalOffset) -> RawIndexCell {
    RawIndexCell::new(ObjectKind::Tracepoint, event, start.0 as i64, end.0 as i64)
}
