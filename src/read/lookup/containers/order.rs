//! From post-order to start order: the backwards pass that places each
//! container, the cursor that reads a thread's cells alongside a scan, and
//! the merge of cells made in memory.

use super::*;
use crate::format::ObjectKind;
use crate::format::index::RawIndexCell;

/// Containers per chunk of the chunk maxima that speed up parent searches.
pub(super) const CHUNK: usize = 256;

/// How many chunk maxima a table of `len` containers has.
pub(crate) fn chunk_count(len: usize) -> usize {
    len.div_ceil(CHUNK)
}

/// Why a conversion from post-order stopped.
pub(super) enum Convert {
    /// The cells are not in post-order.
    Unsorted,
    /// They do not nest.
    Nesting(NestingError),
}

/// The container cells of `ranges` (runs of the index file's `cells`),
/// with their numbers, last first: post-order backwards, each cell read
/// once. `pass` releases the cells' pages behind.
pub(super) fn post_backwards<'a>(
    cells: &'a [RawIndexCell],
    ranges: &'a [(u32, u32)],
    pass: CellPass<'a>,
) -> PostBackwards<'a> {
    PostBackwards {
        cells,
        ranges,
        run: &[],
        from: 0,
        pass,
    }
}

/// See [`post_backwards`]: one loop over the runs, last first, and over
/// each run's cells, last first, that yields the container cells.
pub(super) struct PostBackwards<'a> {
    cells: &'a [RawIndexCell],
    /// The runs not entered yet.
    ranges: &'a [(u32, u32)],
    /// What is left of the run entered last, and its first cell's number.
    run: &'a [RawIndexCell],
    from: u32,
    pass: CellPass<'a>,
}

impl Iterator for PostBackwards<'_> {
    type Item = (u32, RawIndexCell);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            while let Some((cell, rest)) = self.run.split_last() {
                self.run = rest;
                if cell.kind == ObjectKind::Tracepoint as u8 {
                    return Some((self.from + rest.len() as u32, *cell));
                }
            }
            let (&(from, to), rest) = self.ranges.split_last()?;
            self.ranges = rest;
            self.pass.at(to);
            self.run = self
                .cells
                .get(from as usize..to as usize)
                .unwrap_or_default();
            self.from = from;
        }
    }
}

/// A position in a thread's container cells in post-order: the `at`-th
/// container cell, which is cell `cell` of run `run` (`at == count` past
/// the last).
#[derive(Debug, Clone, Copy)]
pub(super) struct PostPosition {
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

/// One backwards pass over the `count` cells of a post-order list (with
/// their numbers), giving
/// each container its position in start order:
/// pre(v) = post(v) − descendants(v) + depth(v). Walking post-order
/// backwards meets every container before its descendants; the stack
/// holds the chain enclosing the current one. A container is placed when
/// it closes: after its descendants, and after every container that starts
/// later, so positions come last first, `count − 1` down to 0 — which lets
/// a caller write them out as they come (the sidecar's arrays) and see on
/// the way whether event ids ascend.
pub(super) fn convert_into(
    count: usize,
    post_backwards: impl Iterator<Item = (u32, RawIndexCell)>,
    place: impl FnMut(Placed),
) -> Result<Converted, Convert> {
    let mut closing = Closing {
        chunk_max_end: vec![0u64; count.div_ceil(CHUNK)],
        last: None,
        descending: true,
        events_ascend: true,
        place,
    };
    let mut stack: Vec<Open> = Vec::new();
    let mut seen = 0usize;
    let mut later_end = u64::MAX;
    for (index, (id, cell)) in (0..count).rev().zip(post_backwards) {
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
            closing.close(top, seen);
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
        closing.close(top, seen);
    }
    let Closing {
        chunk_max_end,
        last,
        descending,
        events_ascend,
        ..
    } = closing;
    debug_assert!(descending, "containers close in reverse start order");
    Ok(Converted {
        chunk_max_end,
        events_ascend,
        descending: descending && seen == count && last.is_none_or(|(at, _)| at == 0),
    })
}

/// A container of [`convert_into`]'s stack: its cell, and where it was met.
struct Open {
    id: u32,
    start: u64,
    end: u64,
    event: i32,
    post: usize,
    depth: usize,
    seen_before: usize,
}

/// What [`convert_into`] finds as it places containers, and where it
/// places them.
struct Closing<P> {
    chunk_max_end: Vec<u64>,
    last: Option<(usize, i32)>,
    descending: bool,
    events_ascend: bool,
    place: P,
}

impl<P: FnMut(Placed)> Closing<P> {
    /// Places `open`, which closes after `seen` containers were met.
    #[inline(always)]
    fn close(&mut self, open: Open, seen: usize) {
        let at = open.post - (seen - open.seen_before - 1) + open.depth;
        if let Some((after, event)) = self.last {
            self.descending &= at + 1 == after;
            self.events_ascend &= open.event < event;
        }
        self.last = Some((at, open.event));
        if let Some(chunk) = self.chunk_max_end.get_mut(at / CHUNK) {
            *chunk = (*chunk).max(open.end);
        }
        (self.place)(Placed {
            at,
            id: open.id,
            start: open.start,
            end: open.end,
            event: open.event,
        });
    }
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
