//! Container lookups without per-cell allocation: every container's content
//! range, found by (thread, logical start) or by event id.
//!
//! The cells stay where they are (the mapped index file, or cells made in
//! memory by a rebuild or a repair); each thread keeps one `u32` per
//! container: the cell's number, in start order (pre-order). A streaming
//! index lists a thread's containers in post-order;
//! `ContainerTable::from_post_order` turns that into start order in one
//! backwards pass, checking on the way that the ranges nest.

use std::sync::OnceLock;

use zerocopy::FromBytes;
use zerocopy::little_endian::{I32, U64};

use crate::format::index::{CELL_LEN, RawIndexCell};
use crate::format::offset::{EventId, LogicalOffset};
use crate::format::{FILE_HEADER_LEN, ObjectKind};
use crate::read::index::container_cell;
use crate::storage::{ReleaseBehind, TraceBytes};

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

/// Containers per chunk of the chunk maxima that speed up parent searches.
const CHUNK: usize = 256;

/// How many chunk maxima a table of `len` containers has.
pub(crate) fn chunk_count(len: usize) -> usize {
    len.div_ceil(CHUNK)
}

/// Why a conversion from post-order stopped.
enum Convert {
    /// The cells are not in post-order.
    Unsorted,
    /// They do not nest.
    Nesting(NestingError),
}

/// The container cells of `ranges` (runs of the index file's cells), last
/// first: post-order backwards. `pass` releases the cells' pages behind.
fn post_backwards<'a>(
    view: CellView<'a>,
    ranges: &'a [(u32, u32)],
    mut pass: CellPass<'a>,
) -> impl Iterator<Item = u32> + 'a {
    ranges
        .iter()
        .rev()
        .inspect(move |&&(_, to)| pass.at(to))
        .flat_map(|&(from, to)| (from..to).rev())
        .filter(move |&id| view.get(id).kind == ObjectKind::Tracepoint as u8)
}

/// A position in a thread's container cells in post-order: the `at`-th
/// container cell, which is cell `cell` of run `run` (`at == count` past
/// the last).
#[derive(Debug, Clone, Copy)]
struct PostPosition {
    at: usize,
    run: usize,
    cell: u32,
}

/// A thread's container cells in the index's post-order, read forward to
/// tell, for the content starts a forward scan meets in ascending order,
/// whether a cell starts there and where it ends, without a table.
///
/// A container with a cell has every container inside it with one too
/// (cells are written as footers are), and in post-order its subtree's
/// cells come right before its own. So from the first cell the cursor has
/// not passed, the first cell that starts at or before the scan's position
/// is the cell of the container there, if it has one, and the cells before
/// it are its descendants, which the scan skips with it. The smallest start
/// of each chunk of [`CHUNK`] cells lets the search jump over subtrees
/// (32 bytes per chunk); a container without a cell (no such cell) leaves
/// the cursor where it was. Over a whole scan the search looks at each
/// cell about once, and at each chunk once per container without a cell
/// (the few a crash leaves open); an index whose cells break those rules
/// could make it look again and again, so past a budget of looks, or at a
/// cell it should have passed, it gives up ([`PostOrderCursor::gave_up`])
/// and the caller builds the table instead.
pub(crate) struct PostOrderCursor<'a> {
    cells: &'a [RawIndexCell],
    ranges: &'a [(u32, u32)],
    count: usize,
    /// Per chunk: its smallest start, and where it begins.
    chunks: Vec<(u64, PostPosition)>,
    /// The first cell not passed.
    next: PostPosition,
    /// Cells and chunks looked at, and how many may be.
    looks: usize,
    budget: usize,
}

impl<'a> PostOrderCursor<'a> {
    /// The cursor over the `count` container cells of `ranges` (runs of
    /// `cells`), built in one pass (releasing behind it through `pass`);
    /// `None` if their ends do not ascend (not in post-order) or the count
    /// is wrong.
    pub(crate) fn new(
        cells: &'a [RawIndexCell],
        ranges: &'a [(u32, u32)],
        count: usize,
        mut pass: CellPass<'_>,
    ) -> Option<Self> {
        let mut cursor = PostOrderCursor {
            cells,
            ranges,
            count,
            chunks: Vec::with_capacity(count.div_ceil(CHUNK)),
            next: PostPosition {
                at: 0,
                run: 0,
                cell: ranges.first().map_or(0, |&(from, _)| from),
            },
            looks: 0,
            budget: 4 * count + (1 << 20),
        };
        cursor.next = cursor.settle(cursor.next);
        let mut position = cursor.next;
        let mut last_end = None;
        while position.at < count {
            pass.at(position.cell);
            let cell = cells.get(position.cell as usize)?;
            let (start, end) = (cell.start.get() as u64, cell.end.get() as u64);
            if last_end.is_some_and(|last| end <= last) {
                return None;
            }
            last_end = Some(end);
            if position.at.is_multiple_of(CHUNK) {
                cursor.chunks.push((start, position));
            }
            let chunk = cursor
                .chunks
                .last_mut()
                .expect("pushed at the chunk's start");
            chunk.0 = chunk.0.min(start);
            position = cursor.after(position);
        }
        (position.at == count && position.run == ranges.len()).then_some(cursor)
    }

    /// `position`, or the first container cell after it.
    fn settle(&self, mut position: PostPosition) -> PostPosition {
        while let Some(&(_, to)) = self.ranges.get(position.run) {
            if position.cell >= to {
                position.run += 1;
                position.cell = self.ranges.get(position.run).map_or(0, |&(from, _)| from);
            } else if self.cells[position.cell as usize].kind == ObjectKind::Tracepoint as u8 {
                return position;
            } else {
                position.cell += 1;
            }
        }
        position
    }

    /// The container cell after the one at `position`.
    fn after(&self, position: PostPosition) -> PostPosition {
        self.settle(PostPosition {
            at: position.at + 1,
            cell: position.cell + 1,
            ..position
        })
    }

    /// The end of the container whose content starts at `start`, if a cell
    /// has it; the cursor then passes it and its descendants' cells.
    pub(crate) fn cell_end(&mut self, start: u64) -> Option<u64> {
        let mut position = self.next;
        while position.at < self.count && self.looks < self.budget {
            self.looks += 1;
            if position.at.is_multiple_of(CHUNK) {
                let chunk = position.at / CHUNK;
                if self.chunks[chunk].0 > start {
                    position = match self.chunks.get(chunk + 1) {
                        Some(&(_, next)) => next,
                        None => return None,
                    };
                    continue;
                }
            }
            let cell = &self.cells[position.cell as usize];
            let cell_start = cell.start.get() as u64;
            if cell_start <= start {
                if cell_start < start {
                    // A cell the scan should have passed: the cells break
                    // the rules; give up.
                    self.looks = self.budget;
                    return None;
                }
                self.next = self.after(position);
                return Some(cell.end.get() as u64);
            }
            position = self.after(position);
        }
        None
    }

    /// Whether the search used up its budget or met cells that break the
    /// rules (its answers then are not to be trusted).
    pub(crate) fn gave_up(&self) -> bool {
        self.looks >= self.budget
    }
}

/// A container given its position in start order by [`convert_into`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Placed {
    /// Its position in start order.
    pub(crate) at: usize,
    /// Its cell's number ([`NO_CELL`] for one of the cells
    /// [`WithMadeCells`] interleaves).
    pub(crate) id: u32,
    /// Its content range and event id, as its cell says.
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) event: i32,
}

/// What [`convert_into`] found besides the positions.
#[derive(Debug)]
pub(crate) struct Converted {
    /// The greatest end per chunk of [`CHUNK`] containers in start order.
    pub(crate) chunk_max_end: Vec<u64>,
    /// Whether event ids ascend in start order (meaningful when
    /// `descending`).
    pub(crate) events_ascend: bool,
    /// Whether the containers were placed last first, each at the position
    /// before the previous one (always, for cells that nest: see
    /// [`convert_into`]).
    pub(crate) descending: bool,
}

/// One backwards pass over the `count` cells of a post-order list, giving
/// each container its position in start order:
/// pre(v) = post(v) − descendants(v) + depth(v). Walking post-order
/// backwards meets every container before its descendants; the stack
/// holds the chain enclosing the current one. A container is placed when
/// it closes: after its descendants, and after every container that starts
/// later, so positions come last first, `count − 1` down to 0 — which lets
/// a caller write them out as they come (the sidecar's arrays) and see on
/// the way whether event ids ascend.
fn convert_into(
    cells: CellView<'_>,
    count: usize,
    post_backwards: impl Iterator<Item = u32>,
    mut place: impl FnMut(Placed),
) -> Result<Converted, Convert> {
    struct Open {
        id: u32,
        start: u64,
        end: u64,
        event: i32,
        post: usize,
        depth: usize,
        seen_before: usize,
    }
    let mut chunk_max_end = vec![0u64; count.div_ceil(CHUNK)];
    let mut last: Option<(usize, i32)> = None;
    let mut descending = true;
    let mut events_ascend = true;
    let mut close = |open: Open, seen: usize| {
        let at = open.post - (seen - open.seen_before - 1) + open.depth;
        if let Some((after, event)) = last {
            descending &= at + 1 == after;
            events_ascend &= open.event < event;
        }
        last = Some((at, open.event));
        let chunk = &mut chunk_max_end[at / CHUNK];
        *chunk = (*chunk).max(open.end);
        place(Placed {
            at,
            id: open.id,
            start: open.start,
            end: open.end,
            event: open.event,
        });
    };
    let mut stack: Vec<Open> = Vec::new();
    let mut seen = 0usize;
    let mut later_end = u64::MAX;
    for (index, id) in (0..count).rev().zip(post_backwards) {
        let cell = cells.get(id);
        let (start, end) = (cell.start.get() as u64, cell.end.get() as u64);
        if end >= later_end {
            return Err(if end == later_end {
                Convert::Nesting(NestingError::SameEnd { cell: id })
            } else {
                Convert::Unsorted
            });
        }
        later_end = end;
        while let Some(top) = stack.last() {
            if top.start < start && end < top.end {
                break; // `top` encloses this one
            }
            // Otherwise this one must lie wholly before `top`.
            if end >= top.start {
                return Err(Convert::Nesting(NestingError::Crossing { cell: id }));
            }
            let top = stack.pop().expect("just seen");
            close(top, seen);
        }
        stack.push(Open {
            id,
            start,
            end,
            event: cell.id.get(),
            post: index,
            depth: stack.len(),
            seen_before: seen,
        });
        seen += 1;
    }
    debug_assert_eq!(seen, count);
    while let Some(top) = stack.pop() {
        close(top, seen);
    }
    debug_assert!(descending, "containers close in reverse start order");
    descending &= seen == count && last.is_none_or(|(at, _)| at == 0);
    Ok(Converted {
        chunk_max_end,
        events_ascend,
        descending,
    })
}

/// The cell number of a [`Placed`] container that has no cell.
pub(crate) const NO_CELL: u32 = u32::MAX;

/// Interleaves cells made for containers the index has no cell for (a
/// rebuild's calls that never finished, a repair's finds), ascending by
/// start, into the thread's other containers as [`Containers::stream`]
/// places them: in start order, last first. A container's place in start
/// order depends on its start alone, so each made cell goes in before the
/// first streamed container that starts before it. Positions are
/// renumbered in the combined order, and what [`Converted`] says is found
/// again for it.
pub(crate) struct WithMadeCells<'a> {
    made: &'a [RawIndexCell],
    /// `made[..pending]` are not placed yet.
    pending: usize,
    /// Streamed and made containers.
    total: usize,
    chunk_max_end: Vec<u64>,
    last: Option<(usize, i32)>,
    descending: bool,
    events_ascend: bool,
}

impl<'a> WithMadeCells<'a> {
    /// For `streamed` containers and `made` cells.
    pub(crate) fn new(made: &'a [RawIndexCell], streamed: usize) -> Self {
        let total = streamed + made.len();
        WithMadeCells {
            made,
            pending: made.len(),
            total,
            chunk_max_end: vec![0; total.div_ceil(CHUNK)],
            last: None,
            descending: true,
            events_ascend: true,
        }
    }

    /// Places streamed container `placed` (`at` counts streamed ones only)
    /// after the made cells that start later.
    pub(crate) fn place(&mut self, placed: Placed, place: &mut impl FnMut(Placed)) {
        self.place_made(Some(placed.start), placed.at + 1, place);
        let at = placed.at + self.pending;
        self.emit(Placed { at, ..placed }, place);
    }

    /// Places the made cells that start after `after` (all with `None`);
    /// `streamed_before` streamed containers start before them.
    fn place_made(
        &mut self,
        after: Option<u64>,
        streamed_before: usize,
        place: &mut impl FnMut(Placed),
    ) {
        while let Some(cell) = self.pending.checked_sub(1).map(|k| &self.made[k]) {
            let start = cell.start.get() as u64;
            if after.is_some_and(|after| start < after) {
                break;
            }
            self.pending -= 1;
            let placed = Placed {
                at: self.pending + streamed_before,
                id: NO_CELL,
                start,
                end: cell.end.get() as u64,
                event: cell.id.get(),
            };
            self.emit(placed, place);
        }
    }

    fn emit(&mut self, placed: Placed, place: &mut impl FnMut(Placed)) {
        match self.last {
            Some((after, event)) => {
                self.descending &= placed.at + 1 == after;
                self.events_ascend &= placed.event < event;
            }
            None => self.descending &= placed.at + 1 == self.total,
        }
        self.last = Some((placed.at, placed.event));
        match self.chunk_max_end.get_mut(placed.at / CHUNK) {
            Some(chunk) => *chunk = (*chunk).max(placed.end),
            None => self.descending = false,
        }
        place(placed);
    }

    /// Places the made cells that start before every streamed container,
    /// and says what [`convert_into`] says, for the combined order.
    pub(crate) fn finish(mut self, place: &mut impl FnMut(Placed)) -> Converted {
        self.place_made(None, 0, place);
        Converted {
            descending: self.descending && self.last.is_none_or(|(at, _)| at == 0),
            chunk_max_end: self.chunk_max_end,
            events_ascend: self.events_ascend,
        }
    }
}

/// Why a thread's container cells cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NestingError {
    /// Two containers end at the same footer.
    SameEnd { cell: u32 },
    /// The ranges of two containers overlap without nesting.
    Crossing { cell: u32 },
}

/// A table's cell numbers in start order.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Order {
    /// Listed.
    Ids(Vec<u32>),
    /// Cell `k` is the `k`-th container (a sidecar's flat arrays).
    Identity(usize),
}

impl Default for Order {
    fn default() -> Self {
        Order::Ids(Vec::new())
    }
}

/// `u64`s in memory, or little-endian in a mapped sidecar.
#[derive(Debug)]
pub(crate) enum Words {
    /// In memory.
    Owned(Vec<u64>),
    /// `len` words at byte `at` of `bytes` (bounds checked when mapped).
    Mapped {
        /// The sidecar.
        bytes: TraceBytes,
        /// Byte offset of the first word.
        at: usize,
        /// How many words.
        len: usize,
    },
}

impl Default for Words {
    fn default() -> Self {
        Words::Owned(Vec::new())
    }
}

impl Words {
    /// Word `i`; 0 past the end (never reached: lengths are checked).
    #[inline]
    pub(crate) fn get(&self, i: usize) -> u64 {
        match self {
            Words::Owned(words) => words.get(i).copied().unwrap_or(0),
            Words::Mapped { bytes, at, len } if i < *len => bytes
                .as_slice()
                .get(at + i * 8..at + i * 8 + 8)
                .and_then(|word| <[u8; 8]>::try_from(word).ok())
                .map_or(0, u64::from_le_bytes),
            Words::Mapped { .. } => 0,
        }
    }

    /// How many.
    pub(crate) fn len(&self) -> usize {
        match self {
            Words::Owned(words) => words.len(),
            Words::Mapped { len, .. } => *len,
        }
    }
}

/// One thread's containers in start order.
#[derive(Debug, Default)]
pub(crate) struct ContainerTable {
    /// Cell numbers, ascending by content start (pre-order).
    order: Order,
    /// The greatest end in each chunk of `CHUNK` containers of `order`.
    chunk_max_end: Words,
    /// Whether event ids ascend in pre-order (real recorders: yes).
    events_ascend: bool,
    /// Positions in `order` sorted by event id, built on first use when
    /// event ids do not ascend.
    by_event: OnceLock<Vec<u32>>,
}

impl ContainerTable {
    /// The table of a sidecar's flat arrays: `len` containers already in
    /// start order, with their chunk maxima (`len.div_ceil(CHUNK)` words).
    pub(crate) fn mapped(len: usize, chunk_max_end: Words, events_ascend: bool) -> Self {
        debug_assert_eq!(chunk_max_end.len(), chunk_count(len));
        ContainerTable {
            order: Order::Identity(len),
            chunk_max_end,
            events_ascend,
            by_event: OnceLock::new(),
        }
    }

    /// The chunk maxima, for a sidecar.
    pub(crate) fn chunk_max_ends(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.chunk_max_end.len()).map(|c| self.chunk_max_end.get(c))
    }

    /// Builds the table from a thread's container cells in post-order (the
    /// order of their ends, as a streaming writer emits them); cells in any
    /// other order are sorted by end first. Checks that ranges nest.
    pub(crate) fn from_post_order(
        cells: CellView<'_>,
        mut post: Vec<u32>,
    ) -> Result<Self, NestingError> {
        match Self::convert(cells, post.len(), post.iter().rev().copied()) {
            Err(Convert::Unsorted) => {
                post.sort_by_key(|&id| cells.end(id));
                match Self::convert(cells, post.len(), post.iter().rev().copied()) {
                    Ok(table) => Ok(table),
                    Err(Convert::Nesting(error)) => Err(error),
                    Err(Convert::Unsorted) => unreachable!("sorted by end"),
                }
            }
            Err(Convert::Nesting(error)) => Err(error),
            Ok(table) => Ok(table),
        }
    }

    /// The table of one backwards pass over the `count` cells of a
    /// post-order list ([`convert_into`]).
    fn convert(
        cells: CellView<'_>,
        count: usize,
        post_backwards: impl Iterator<Item = u32>,
    ) -> Result<Self, Convert> {
        let mut order = vec![0u32; count];
        let converted = convert_into(cells, count, post_backwards, |placed| {
            order[placed.at] = placed.id;
        })?;
        let events_ascend = if converted.descending {
            converted.events_ascend
        } else {
            order
                .windows(2)
                .all(|w| cells.event(w[0]) < cells.event(w[1]))
        };
        Ok(ContainerTable {
            order: Order::Ids(order),
            chunk_max_end: Words::Owned(converted.chunk_max_end),
            events_ascend,
            by_event: OnceLock::new(),
        })
    }

    /// The table of cells already in start order.
    fn from_pre_order(cells: CellView<'_>, order: Vec<u32>) -> Self {
        debug_assert!(
            order
                .windows(2)
                .all(|w| cells.start(w[0]) < cells.start(w[1]))
        );
        let chunk_max_end = order
            .chunks(CHUNK)
            .map(|chunk| chunk.iter().map(|&id| cells.end(id)).max().unwrap_or(0))
            .collect();
        let events_ascend = order
            .windows(2)
            .all(|w| cells.event(w[0]) < cells.event(w[1]));
        ContainerTable {
            order: Order::Ids(order),
            chunk_max_end: Words::Owned(chunk_max_end),
            events_ascend,
            by_event: OnceLock::new(),
        }
    }

    /// Adds `extra` cells (ascending by start, none sharing a start with a
    /// listed cell) and rebuilds the derived arrays.
    pub(crate) fn merge(&mut self, cells: CellView<'_>, extra: &[u32]) {
        if extra.is_empty() {
            return;
        }
        let mut order = Vec::with_capacity(self.len() + extra.len());
        let current: Vec<u32> = (0..self.len()).map(|k| self.id(k)).collect();
        let (mut a, mut b) = (current.iter().peekable(), extra.iter().peekable());
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(&&x), Some(&&y)) => {
                    if cells.start(x) < cells.start(y) {
                        a.next()
                    } else {
                        b.next()
                    }
                }
                (Some(_), None) => a.next(),
                (None, Some(_)) => b.next(),
                (None, None) => break,
            };
            order.push(*next.expect("peeked"));
        }
        *self = Self::from_pre_order(cells, order);
    }

    /// How many containers.
    pub(crate) fn len(&self) -> usize {
        match &self.order {
            Order::Ids(ids) => ids.len(),
            Order::Identity(len) => *len,
        }
    }

    /// The cell number of the `k`-th container.
    #[inline]
    fn id(&self, k: usize) -> u32 {
        match &self.order {
            Order::Ids(ids) => ids[k],
            Order::Identity(_) => k as u32,
        }
    }

    /// The first position in `low..high` whose cell fails `pred` (cells
    /// failing it must follow those passing it).
    #[inline]
    fn partition(&self, low: usize, high: usize, mut pred: impl FnMut(u32) -> bool) -> usize {
        match &self.order {
            Order::Ids(ids) => low + ids[low..high].partition_point(|&id| pred(id)),
            Order::Identity(_) => {
                let (mut low, mut high) = (low, high);
                while low < high {
                    let mid = low + (high - low) / 2;
                    if pred(mid as u32) {
                        low = mid + 1;
                    } else {
                        high = mid;
                    }
                }
                low
            }
        }
    }

    /// Content start of the `k`-th container.
    #[inline]
    pub(crate) fn start(&self, cells: CellView<'_>, k: usize) -> LogicalOffset {
        LogicalOffset(cells.start(self.id(k)))
    }

    /// Content end (footer offset, or the stream's end) of the `k`-th container.
    #[inline]
    pub(crate) fn end(&self, cells: CellView<'_>, k: usize) -> LogicalOffset {
        LogicalOffset(cells.end(self.id(k)))
    }

    /// Event id of the `k`-th container.
    #[inline]
    pub(crate) fn event(&self, cells: CellView<'_>, k: usize) -> EventId {
        EventId(cells.event(self.id(k)))
    }

    /// Whether event ids ascend in start order.
    pub(crate) fn events_ascend(&self) -> bool {
        self.events_ascend
    }

    /// The end of the container whose content starts at an offset, for
    /// offsets asked in ascending order ([`scan_unindexed`](crate::read::lazy::stream::scan_unindexed)):
    /// each search starts from the last container found.
    pub(crate) fn ends_by_start<'a>(
        &'a self,
        cells: CellView<'a>,
    ) -> impl FnMut(LogicalOffset) -> Option<LogicalOffset> + 'a {
        let mut hint = None;
        move |start| {
            let k = self.find_start(cells, start, hint)?;
            hint = Some(k);
            Some(self.end(cells, k))
        }
    }

    /// The container whose content starts at `start`. `hint`, when given, is
    /// a container known to start before `start` (a scan going forward
    /// passes the last one it found): the search gallops from there.
    pub(crate) fn find_start(
        &self,
        cells: CellView<'_>,
        start: LogicalOffset,
        hint: Option<usize>,
    ) -> Option<usize> {
        let key = start.0;
        let (mut low, mut high) = (0, self.len());
        if let Some(hint) = hint.filter(|&h| h < self.len() && cells.start(self.id(h)) < key) {
            // Gallop: the target is usually just past the hint's subtree.
            low = hint + 1;
            let mut step = 1;
            loop {
                let probe = hint + step;
                if probe >= high {
                    break;
                }
                if cells.start(self.id(probe)) >= key {
                    high = probe + 1;
                    break;
                }
                low = probe + 1;
                step *= 2;
            }
        }
        let at = self.partition(low, high, |id| cells.start(id) < key);
        (at < self.len() && cells.start(self.id(at)) == key).then_some(at)
    }

    /// The last container whose content starts at or before `at`.
    pub(crate) fn last_starting_at_or_before(
        &self,
        cells: CellView<'_>,
        at: LogicalOffset,
    ) -> Option<usize> {
        self.partition(0, self.len(), |id| cells.start(id) <= at.0)
            .checked_sub(1)
    }

    /// The innermost container enclosing the `k`-th one.
    pub(crate) fn parent(&self, cells: CellView<'_>, k: usize) -> Option<usize> {
        // Of the containers before `k` in start order, exactly its ancestors
        // end at or after it starts (a finished one ends at its footer, after
        // every descendant's header; an unfinished one at the stream's end,
        // where the content of a header written last starts too); the
        // nearest one is its parent.
        let start = cells.start(self.id(k));
        let chunk = k / CHUNK;
        let encloses = |j: usize| cells.end(self.id(j)) >= start;
        if let Some(j) = (chunk * CHUNK..k).rev().find(|&j| encloses(j)) {
            return Some(j);
        }
        let chunk = (0..chunk)
            .rev()
            .find(|&c| self.chunk_max_end.get(c) >= start)?;
        (chunk * CHUNK..(chunk + 1) * CHUNK)
            .rev()
            .find(|&j| encloses(j))
    }

    /// The container with event id `event`.
    pub(crate) fn find_event(&self, cells: CellView<'_>, event: EventId) -> Option<usize> {
        if self.events_ascend {
            let at = self.partition(0, self.len(), |id| cells.event(id) < event.0);
            return (at < self.len() && cells.event(self.id(at)) == event.0).then_some(at);
        }
        let by_event = self.by_event.get_or_init(|| {
            let mut positions: Vec<u32> = (0..self.len() as u32).collect();
            positions.sort_by_key(|&k| cells.event(self.id(k as usize)));
            positions
        });
        let at = by_event.partition_point(|&k| cells.event(self.id(k as usize)) < event.0);
        by_event
            .get(at)
            .map(|&k| k as usize)
            .filter(|&k| cells.event(self.id(k)) == event.0)
    }

    /// The last container (in start order) with an event id below `event`;
    /// meaningful when event ids ascend.
    pub(crate) fn last_event_below(&self, cells: CellView<'_>, event: EventId) -> Option<usize> {
        self.partition(0, self.len(), |id| cells.event(id) < event.0)
            .checked_sub(1)
    }

    /// Bytes of heap the table takes.
    pub(crate) fn heap_bytes(&self) -> usize {
        let order = match &self.order {
            Order::Ids(ids) => ids.capacity() * 4,
            Order::Identity(_) => 0,
        };
        let chunks = match &self.chunk_max_end {
            Words::Owned(words) => words.capacity() * 8,
            Words::Mapped { .. } => 0,
        };
        order + chunks + self.by_event.get().map_or(0, |v| v.capacity() * 4)
    }
}

#[cfg(test)]
mod tests {
    use zerocopy::byteorder::{BigEndian, I32, I64};

    use super::*;
    use crate::format::ObjectKind;

    /// Made cells only, and a view of them.
    struct Made(Vec<RawIndexCell>);

    impl Made {
        fn view(&self) -> CellView<'_> {
            CellView::new(&[], &self.0)
        }
    }

    fn made_cells(cells: Vec<RawIndexCell>) -> Made {
        Made(cells)
    }

    fn cell(event: i32, start: u64, end: u64) -> RawIndexCell {
        RawIndexCell {
            kind: ObjectKind::Tracepoint as u8,
            id: I32::<BigEndian>::new(event),
            start: I64::<BigEndian>::new(start as i64),
            end: I64::<BigEndian>::new(end as i64),
        }
    }

    /// A random forest of containers: (event, start, end) in pre-order.
    fn forest(seed: u64, count: usize) -> Vec<(i32, u64, u64)> {
        let mut state = seed | 1;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        // Open containers as (event, start); positions advance by 10 per step.
        let mut out: Vec<(i32, u64, u64)> = Vec::new();
        let mut open: Vec<usize> = Vec::new();
        let mut at = 0u64;
        let mut made = 0;
        while made < count || !open.is_empty() {
            at += 10;
            if made < count && (open.is_empty() || next() % 3 != 0) {
                out.push((made as i32 * 2, at, 0));
                open.push(out.len() - 1);
                made += 1;
            } else if let Some(index) = open.pop() {
                out[index].2 = at;
            }
        }
        out
    }

    #[test]
    fn post_order_converts_to_start_order() {
        for seed in 1..40 {
            let pre = forest(seed, 1 + seed as usize * 7);
            let mut post: Vec<(i32, u64, u64)> = pre.clone();
            post.sort_by_key(|c| c.2);
            let cells = made_cells(post.iter().map(|&(e, s, n)| cell(e, s, n)).collect());
            let table =
                ContainerTable::from_post_order(cells.view(), (0..post.len() as u32).collect())
                    .unwrap();
            let got: Vec<_> = (0..table.len())
                .map(|k| {
                    (
                        table.event(cells.view(), k).0,
                        table.start(cells.view(), k).0,
                        table.end(cells.view(), k).0,
                    )
                })
                .collect();
            assert_eq!(got, pre, "seed {seed}");
            assert!(table.events_ascend());
            // Any input order gives the same table.
            let shuffled: Vec<u32> = (0..post.len() as u32).rev().collect();
            let again = ContainerTable::from_post_order(cells.view(), shuffled).unwrap();
            assert_eq!(again.order, table.order);
            // Parents, by brute force.
            for k in 0..pre.len() {
                let expected = (0..k)
                    .rev()
                    .find(|&j| pre[j].1 < pre[k].1 && pre[k].2 < pre[j].2);
                assert_eq!(
                    table.parent(cells.view(), k),
                    expected,
                    "seed {seed}, container {k}"
                );
                let mut hint = None;
                assert_eq!(
                    table.find_start(cells.view(), LogicalOffset(pre[k].1), hint),
                    Some(k)
                );
                if k > 0 {
                    hint = Some(k - 1);
                }
                assert_eq!(
                    table.find_start(cells.view(), LogicalOffset(pre[k].1), hint),
                    Some(k)
                );
                assert_eq!(
                    table.find_start(cells.view(), LogicalOffset(pre[k].1 + 1), None),
                    None
                );
                assert_eq!(table.find_event(cells.view(), EventId(pre[k].0)), Some(k));
                assert_eq!(table.find_event(cells.view(), EventId(pre[k].0 + 1)), None);
            }
        }
    }

    #[test]
    fn parent_search_crosses_chunks() {
        // One wide container around 1,000 small ones.
        let mut pre = vec![(0, 1u64, 100_000u64)];
        for i in 0..1000u64 {
            pre.push((1 + i as i32, 10 + i * 10, 15 + i * 10));
        }
        let cells = made_cells(pre.iter().map(|&(e, s, n)| cell(e, s, n)).collect());
        let table =
            ContainerTable::from_post_order(cells.view(), (0..pre.len() as u32).collect()).unwrap();
        assert_eq!(table.parent(cells.view(), 0), None);
        for k in 1..pre.len() {
            assert_eq!(table.parent(cells.view(), k), Some(0));
        }
    }

    #[test]
    fn crossing_and_shared_ends_are_rejected() {
        let cells = made_cells(vec![cell(0, 10, 50), cell(1, 20, 60)]);
        assert!(matches!(
            ContainerTable::from_post_order(cells.view(), vec![0, 1]),
            Err(NestingError::Crossing { .. })
        ));
        let cells = made_cells(vec![cell(0, 10, 50), cell(1, 20, 50)]);
        assert!(matches!(
            ContainerTable::from_post_order(cells.view(), vec![0, 1]),
            Err(NestingError::SameEnd { .. })
        ));
    }

    #[test]
    fn events_out_of_order_are_found_through_a_sorted_copy() {
        let cells = made_cells(vec![cell(9, 20, 30), cell(5, 40, 50), cell(7, 10, 60)]);
        let table = ContainerTable::from_post_order(cells.view(), vec![0, 1, 2]).unwrap();
        assert!(!table.events_ascend());
        assert_eq!(table.find_event(cells.view(), EventId(7)), Some(0));
        assert_eq!(table.find_event(cells.view(), EventId(9)), Some(1));
        assert_eq!(table.find_event(cells.view(), EventId(5)), Some(2));
        assert_eq!(table.find_event(cells.view(), EventId(6)), None);
    }
}
