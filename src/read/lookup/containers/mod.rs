//! Container lookups without per-cell allocation: every container's content
//! range, found by (thread, logical start) or by event id.
//!
//! The cells stay where they are (the mapped index file, a sidecar's flat
//! arrays, or cells made in memory by a rebuild or a repair), read through
//! one view, `CellView`, whose reads are lent or copied as the reader's
//! byte source says (`storage::Reads`); each thread keeps one `u32` per
//! container: the cell's number, in start order (pre-order). A streaming
//! index lists a thread's containers in post-order;
//! `ContainerTable::from_post_order` turns that into start order in one
//! backwards pass, checking on the way that the ranges nest.

mod order;
mod runs;
mod table;
#[cfg(test)]
mod tests;

pub(crate) use order::*;
pub(crate) use runs::*;
pub(crate) use table::*;

use zerocopy::FromBytes;

use crate::common::LogicalOffset;
use crate::format::index::{CELL_LEN, RawIndexCell};
use crate::format::{FILE_HEADER_LEN, ObjectKind};
use crate::storage::{ByteSource, CUT_SHORT, Reads, ReleaseBehind, TraceBytes};

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

/// A thread's container cells by number, read through a [`ByteSource`]
/// (lent from the mappings, or copied: [`Reads`]): the index file's, then
/// those one thread made in memory; or a sidecar's flat arrays (cell `k`
/// is the thread's `k`-th container in start order).
#[derive(Debug, Clone, Copy)]
pub(crate) struct CellView<'a> {
    /// The index file and its cell count.
    file: Option<(ByteSource<'a>, usize)>,
    made: &'a [RawIndexCell],
    /// A sidecar's flat arrays.
    flat: Option<(ByteSource<'a>, &'a MappedCells)>,
}

impl<'a> CellView<'a> {
    /// A view of the index file's cells, then `made` ones.
    pub(crate) fn new(file: &'a FileCells, made: &'a [RawIndexCell], reads: Reads) -> Self {
        CellView {
            file: (file.bytes.as_ref()).map(|bytes| (ByteSource::new(bytes, reads), file.count)),
            made,
            flat: None,
        }
    }

    /// A view of cells made in memory only.
    #[cfg(test)]
    pub(crate) fn made(made: &'a [RawIndexCell]) -> Self {
        CellView {
            file: None,
            made,
            flat: None,
        }
    }

    /// A view of a sidecar's arrays.
    pub(crate) fn flat(flat: &'a MappedCells, reads: Reads) -> Self {
        CellView {
            file: None,
            made: &[],
            flat: Some((ByteSource::new(&flat.bytes, reads), flat)),
        }
    }

    /// Whether the view's reads copy (else they lend).
    #[inline]
    pub(crate) fn copies(&self) -> bool {
        match (&self.flat, &self.file) {
            (Some((flat, _)), _) => flat.copies(),
            (None, Some((file, _))) => file.copies(),
            (None, None) => false,
        }
    }

    /// Cell number `id` (index or made cells only).
    #[inline]
    pub(crate) fn get(&self, id: u32) -> RawIndexCell {
        let id = id as usize;
        let count = self.file.map_or(0, |(_, count)| count);
        match (self.file, id.checked_sub(count)) {
            (Some((file, _)), None) => {
                let cell = file.array::<CELL_LEN>(FILE_HEADER_LEN + (id * CELL_LEN) as u64);
                RawIndexCell::read_from_bytes(&cell).unwrap_or(CUT_CELL)
            }
            (_, made) => self
                .made
                .get(made.unwrap_or(id))
                .copied()
                .unwrap_or(CUT_CELL),
        }
    }

    /// The big-endian `i64` at byte `within` of index cell `id` (a start
    /// or an end), read where it lies rather than with its cell.
    #[inline]
    fn word(&self, id: u32, within: usize) -> u64 {
        match self.file {
            Some((file, count)) if (id as usize) < count => {
                let at = FILE_HEADER_LEN + (id as usize * CELL_LEN + within) as u64;
                i64::from_be_bytes(file.array::<8>(at)) as u64
            }
            _ => {
                let cell = self.get(id);
                (if within == START_AT {
                    cell.start
                } else {
                    cell.end
                })
                .get() as u64
            }
        }
    }

    #[inline]
    pub(crate) fn start(&self, id: u32) -> u64 {
        match self.flat {
            Some((source, flat)) => u64::from_le_bytes(source.array(flat.at(flat.starts, id, 8))),
            None => self.word(id, START_AT),
        }
    }

    #[inline]
    pub(crate) fn end(&self, id: u32) -> u64 {
        match self.flat {
            Some((source, flat)) => u64::from_le_bytes(source.array(flat.at(flat.ends, id, 8))),
            None => self.word(id, END_AT),
        }
    }

    #[inline]
    pub(crate) fn event(&self, id: u32) -> i32 {
        match self.flat {
            Some((source, flat)) => i32::from_le_bytes(source.array(flat.at(flat.events, id, 4))),
            None => self.get(id).id.get(),
        }
    }

    /// The content starts of the cells at `positions` into `starts`, and
    /// their ends into `ends` when given (as long as `starts`), and how
    /// many from the first: all, but index cells copied only as many as lie
    /// within [`SPAN`] bytes of each other (one read), at least one.
    pub(crate) fn ranges(
        &self,
        positions: Positions<'_>,
        starts: &mut [u64],
        mut ends: Option<&mut [u64]>,
    ) -> usize {
        let n = starts.len();
        if n == 0 {
            return 0;
        }
        if let (Some((source, flat)), Positions::From(first)) = (self.flat, positions) {
            source.u64s_le(flat.starts as u64 + first as u64 * 8, starts);
            if let Some(ends) = ends {
                source.u64s_le(flat.ends as u64 + first as u64 * 8, ends);
            }
            return n;
        }
        let id = |i: usize| match positions {
            Positions::From(first) => (first + i) as u32,
            Positions::Listed(ids) => ids[i],
        };
        let copied = match self.file {
            Some((file, count)) if file.copies() => Some((file, count)),
            _ => None,
        };
        let Some((file, count)) = copied else {
            for i in 0..n {
                starts[i] = self.start(id(i));
                if let Some(ends) = ends.as_deref_mut() {
                    ends[i] = self.end(id(i));
                }
            }
            return n;
        };
        // Copied index cells: the span from the least id to the greatest,
        // in one read, of as many as lie within `SPAN` bytes.
        let (mut min, mut max, mut taken) = (u32::MAX, 0, 0);
        for i in 0..n {
            let (low, high) = (min.min(id(i)), max.max(id(i)));
            if high as usize >= count || (high - low) as usize >= SPAN / CELL_LEN {
                break;
            }
            (min, max, taken) = (low, high, i + 1);
        }
        let mut span = Vec::new();
        let from = FILE_HEADER_LEN + min as u64 * CELL_LEN as u64;
        let span = file.bytes(
            from..from + (max - min + 1) as u64 * CELL_LEN as u64,
            &mut span,
        );
        let word = |at: usize| {
            let bytes = span
                .get(at..at + 8)
                .and_then(|b| <[u8; 8]>::try_from(b).ok());
            bytes.map_or(u64::MAX, |b| i64::from_be_bytes(b) as u64)
        };
        for i in 0..taken {
            let at = (id(i) - min) as usize * CELL_LEN;
            starts[i] = word(at + START_AT);
            if let Some(ends) = ends.as_deref_mut() {
                ends[i] = word(at + END_AT);
            }
        }
        if taken == 0 {
            // The first alone: a made cell, or one far from the others.
            starts[0] = self.start(id(0));
            if let Some(ends) = ends {
                ends[0] = self.end(id(0));
            }
            return 1.min(n);
        }
        taken
    }
}

/// Which cells [`CellView::ranges`] reads: listed by number, or those
/// numbered from a first on (a sidecar's, whose table is in cell order).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Positions<'a> {
    /// Listed.
    Listed(&'a [u32]),
    /// From this number on.
    From(usize),
}

/// The most bytes of index cells [`CellView::ranges`] copies at once.
pub(crate) const SPAN: usize = 8 << 10;

/// A cell read where the file was cut short ([`CUT_SHORT`] bytes).
const CUT_CELL: RawIndexCell = RawIndexCell {
    kind: CUT_SHORT,
    id: zerocopy::byteorder::I32::ZERO,
    start: zerocopy::byteorder::I64::ZERO,
    end: zerocopy::byteorder::I64::ZERO,
};

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
    /// Where entry `id` of `width` bytes of the array at byte `array` lies.
    #[inline]
    fn at(&self, array: usize, id: u32, width: u64) -> u64 {
        debug_assert!((id as usize) < self.len);
        array as u64 + id as u64 * width
    }
}

impl Containers {
    /// The cells of this thread, after the index file's `file`.
    pub(crate) fn view<'a>(&'a self, file: &'a FileCells, reads: Reads) -> CellView<'a> {
        match &self.flat {
            Some(flat) => CellView::flat(flat, reads),
            None => CellView::new(file, &self.made, reads),
        }
    }

    /// Builds a thread's containers from `source`; the pass over the index
    /// file's cells releases their pages behind it every `window` bytes.
    pub(crate) fn build(
        cells: &FileCells,
        source: Source,
        window: Option<u64>,
    ) -> Result<Self, NestingError> {
        match source {
            Source::Ranges { ranges, count } => {
                let view = CellView::new(cells, &[], Reads::Lend);
                let post_backwards = post_backwards(cells.slice(), &ranges, cells.pass(window));
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
                let first = cells.len() as u32;
                let finished_count = finished.len() as u32;
                let made: Vec<RawIndexCell> = finished.into_iter().chain(unfinished).collect();
                let view = CellView::new(cells, &made, Reads::Lend);
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
        let post_backwards = post_backwards(cells.slice(), ranges, cells.pass(window));
        convert_into(count, post_backwards, place)
            .ok()
            .filter(|converted| converted.descending)
    }

    /// Adds cells made for containers the table lacks (ascending by start).
    pub(crate) fn add(&mut self, file: &FileCells, cells: Vec<RawIndexCell>) {
        if let Some(flat) = self.flat.take() {
            // A sidecar's table: copy it into made cells first.
            let view = CellView::flat(&flat, Reads::Lend);
            let first = (file.len() + self.made.len()) as u32;
            self.made.extend((0..self.table.len()).map(|k| {
                container_cell(
                    self.table.event(view, k).0,
                    self.table.start(view, k),
                    self.table.end(view, k),
                )
            }));
            let ids: Vec<u32> = (first..first + self.table.len() as u32).collect();
            self.table =
                ContainerTable::from_pre_order(CellView::new(file, &self.made, Reads::Lend), ids);
        }
        let first = (file.len() + self.made.len()) as u32;
        let ids: Vec<u32> = (first..first + cells.len() as u32).collect();
        self.made.extend(cells);
        self.table
            .merge(CellView::new(file, &self.made, Reads::Lend), &ids);
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
