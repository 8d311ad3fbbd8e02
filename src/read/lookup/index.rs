//! The lookup structures a random-access reader needs (blocks, reference
//! objects, container ranges), from an index file checked against the data
//! file, or rebuilt by scanning the data file when the index is missing or
//! broken.
//!
//! An index is broken (`docs/FORMAT.md`, "Index policy") when it is missing or
//! shorter than a header and a footer; its magic or version differ; a cell
//! points outside the data file; a reference cell's target does not start
//! with the same kind and id; a block cell does not start with `BLOCK_START`
//! of its thread; or a container cell's range is not inside its thread's
//! logical stream. tracetree also rejects what would make the reader lose
//! data or misplace children: a block cell whose end is not a `BLOCK_END`,
//! blocks that leave a gap or leave data after the last indexed block
//! (other than `EOF`), cells of kinds an index never holds, and a container
//! cell that belongs to no block cell. All of this is checked in one pass
//! over the cells when the index is opened. Nearly every cell is a
//! container's, so the pass is cut in two: on every core, pieces of the
//! cells are summed up into stretches of consecutive container cells
//! (their smallest start, greatest end, and whether every start is at most
//! its end) with the other cells between; then one pass in cell order
//! handles the other cells and checks each stretch by its sums against its
//! thread's length so far, reading its cells again only when the sums fail
//! (to name the cell, or to keep it for the check once every block is
//! known, as a dump writer's order needs). Tables are built from the
//! cells on first use, and an index without footer repaired, by `Lookup`
//! (`table.rs`).

use std::collections::HashMap;
use std::path::PathBuf;

use super::problem::{IndexProblem, IndexStatus};
use super::table::Lookup;
use crate::common::{PhysicalOffset, ThreadId};
use crate::format::ContextBuilder;
use crate::format::bytes::ByteReader;
pub(crate) use crate::format::index::index_path;
use crate::format::index::{CELL_LEN, INDEX_FOOTER_LEN, RawIndexCell, parse_index};
use crate::format::object::peek_kind_and_id;
use crate::format::skip::skip_object;
use crate::format::{BLOCK_HEADER_LEN, FILE_HEADER_LEN, ObjectKind};
use crate::read::eager::LoadReport;
use crate::read::lookup::block_table::{BlockInfo, BlockTable};
use crate::read::lookup::containers::{FileCells, Source};
use crate::read::lookup::sidecar::{SidecarOutcome, SidecarProblem};
use crate::storage::TraceBytes;

/// How a trace's lookup structures were made, and what the data lacked.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
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
    pub sidecar: Option<SidecarOutcome>,
    /// The sidecar's path (`None` without a sidecar directory).
    pub sidecar_path: Option<PathBuf>,
    /// Why an existing (or missing) sidecar was not used; `None` when it
    /// was, or was not looked for.
    pub sidecar_rejected: Option<SidecarProblem>,
    /// When the sidecar was used: how many blocks' framing was read from
    /// the data file (all of them, or a sample when the files' stamps
    /// vouch for the data).
    pub framing_checked: usize,
    /// No sidecar was written (no sidecar directory, a read-only one, a
    /// failed write, or [`SidecarPolicy::ReadOnly`](crate::read::SidecarPolicy::ReadOnly)),
    /// and the lookups were written to an unlinked scratch file in the
    /// temporary directory and mapped from there instead of staying on the
    /// heap (gone when the reader is dropped).
    pub scratch: bool,
}

impl IndexReport {
    /// Whether the index file was used (directly, or through a sidecar
    /// made from it).
    pub fn index_used(&self) -> bool {
        matches!(self.status, IndexStatus::Used { .. })
    }

    /// Records what happened to the sidecar of an open that built its
    /// lookups (none of its blocks' framing checked against a sidecar).
    pub(crate) fn set_sidecar(
        &mut self,
        outcome: SidecarOutcome,
        path: Option<PathBuf>,
        rejected: Option<SidecarProblem>,
        scratch: bool,
    ) {
        self.sidecar = Some(outcome);
        self.sidecar_path = path;
        self.sidecar_rejected = rejected;
        self.framing_checked = 0;
        self.scratch = scratch;
    }

    /// Whether the lookups came from the sidecar.
    pub fn sidecar_used(&self) -> bool {
        self.sidecar == Some(SidecarOutcome::Used)
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

/// Container cells grouped by thread as the index orders them: per thread,
/// in order of its first block cell, its runs of cells `[from, to)` and the
/// number of container cells in them. Loading an index and gathering a
/// rebuilt one as it is written both group through it.
#[derive(Default)]
pub(crate) struct ThreadCells {
    ids: HashMap<ThreadId, usize>,
    lists: Vec<ThreadList>,
}

/// One thread's runs of cells `[from, to)` and its container cells in them.
struct ThreadList {
    thread: ThreadId,
    runs: Vec<(u32, u32)>,
    count: usize,
}

impl ThreadCells {
    /// The list of `thread`'s cells, made at its first block cell.
    pub(crate) fn list(&mut self, thread: ThreadId) -> usize {
        *self.ids.entry(thread).or_insert_with(|| {
            self.lists.push(ThreadList {
                thread,
                runs: Vec::new(),
                count: 0,
            });
            self.lists.len() - 1
        })
    }

    /// Adds the run of cells `run` holding `containers` container cells to
    /// list `list`.
    pub(crate) fn add_run(&mut self, list: usize, run: (u32, u32), containers: usize) {
        let list = &mut self.lists[list];
        list.runs.push(run);
        list.count += containers;
    }

    /// Per thread, its container cells as the lookups take them.
    pub(crate) fn into_sources(self) -> Vec<(ThreadId, usize, Source)> {
        self.lists
            .into_iter()
            .map(|list| {
                let (ranges, count) = (list.runs, list.count);
                (list.thread, count, Source::Ranges { ranges, count })
            })
            .collect()
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
// Long: one pass over the cells; every case updates the pass's running
// state (the current list, its run, the lengths so far).
pub(crate) fn load_index_until(
    data: &TraceBytes,
    index: TraceBytes,
    window: Option<u64>,
    dropped_tail: u64,
) -> std::result::Result<LoadedIndex, IndexProblem> {
    let bytes = index.as_slice();
    if (bytes.len() as u64) < FILE_HEADER_LEN + INDEX_FOOTER_LEN as u64 {
        return Err(IndexProblem::TooShort(bytes.len() as u64));
    }
    let parsed = parse_index(bytes).map_err(IndexProblem::Header)?;
    let (cells, complete) = (parsed.cells, parsed.has_footer);
    let data_bytes = data.as_slice();
    let data_len = data.len();
    // A streaming writer lists a block's cell before the block's other
    // cells, the dump writer after them.
    let block_cell_first = cells
        .first()
        .is_none_or(|cell| cell.kind == ObjectKind::BlockStart as u8);
    let mut blocks = Vec::new();
    let mut context = ContextBuilder::new();
    let mut references = 0;
    let mut placed: Vec<(usize, u64)> = Vec::new();
    let mut by_thread = ThreadCells::default();
    // Per list: the logical length of the thread's blocks seen so far.
    let mut seen_len: Vec<u64> = Vec::new();
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
    let inside = cell_inside;
    let mut data_pass = data.behind(window);
    let mut peeked = |offset: u64| data_pass.at(offset);
    // The cells of a dump writer's run, until its block cell comes.
    let mut run_stretches: Vec<ContainerStretch> = Vec::new();
    for step in cell_steps(cells, &index, window.is_some()) {
        let (cell, raw) = match step {
            CellStep::Containers(stretch) => {
                // The common case first: container cells.
                run_count += stretch.len();
                if !block_cell_first {
                    run_stretches.push(stretch);
                } else if !stretch.inside(current_len) {
                    for cell in stretch.cells() {
                        if !inside(&cells[cell], current_len) {
                            let list =
                                current.ok_or(IndexProblem::ContainerWithoutBlock { cell })?;
                            recheck.push((list, cell as u32));
                        }
                    }
                }
                continue;
            }
            CellStep::Other(cell, raw) => (cell, raw),
        };
        let raw = &raw;
        let kind = ObjectKind::from_byte(raw.kind).ok_or(IndexProblem::UnknownKind {
            cell,
            kind: raw.kind,
        })?;
        let id = raw.id.get();
        match kind {
            ObjectKind::BlockStart => {
                let block = checked_block_cell(data_bytes, cell, raw)?;
                peeked(block.end.0);
                blocks.push(block);
                let list = by_thread.list(ThreadId(id));
                if list == seen_len.len() {
                    seen_len.push(0);
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
                    by_thread.add_run(owner, (run_start, cell as u32), run_count);
                    for stretch in run_stretches.drain(..) {
                        if stretch.inside(seen_len[list]) {
                            continue;
                        }
                        for id in stretch.cells() {
                            if !inside(&cells[id], seen_len[list]) {
                                recheck.push((list, id as u32));
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
                let offset = checked_reference_cell(data_bytes, cell, kind, raw)?.0;
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
            by_thread.add_run(owner, (run_start, cells.len() as u32), run_count);
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
    // Each reference object lies whole in a block (`reference_is_whole`).
    let mut data_pass = data.behind(window);
    for (cell, offset) in placed {
        data_pass.at(offset);
        if !reference_is_whole(data_bytes, &blocks, offset) {
            let raw = &cells[cell];
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
                thread: by_thread.lists[list].thread.0,
                start: raw.start.get(),
                end: raw.end.get(),
                len: seen_len[list],
            });
        }
    }
    let sources = by_thread.into_sources();
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

/// Whether the reference object at `offset` lies whole inside a block's
/// payload (`blocks` in file order) and is followed by another object or
/// the `BLOCK_END`: a cell that points a few bytes into an object can read
/// as the right kind and id (the high byte of a small thread id is a
/// `THREAD_NAME` kind byte).
pub(crate) fn reference_is_whole(data: &[u8], blocks: &[BlockInfo], offset: u64) -> bool {
    let block = blocks
        .partition_point(|block| block.start.0 <= offset)
        .checked_sub(1)
        .map(|b| &blocks[b]);
    block.is_some_and(|block| {
        let Some(object) = data.get(offset as usize..block.end.0 as usize) else {
            return false;
        };
        let mut reader = ByteReader::new(object, offset);
        offset >= block.start.0 + BLOCK_HEADER_LEN
            && skip_object(&mut reader, None).is_ok()
            && ObjectKind::from_byte(data[offset as usize + reader.position()]).is_some_and(
                |next| {
                    next.is_reference()
                        || matches!(
                            next,
                            ObjectKind::Tracepoint
                                | ObjectKind::TracepointFooter
                                | ObjectKind::BlockEnd
                        )
                },
            )
    })
}

/// Index cells read per piece of the open's parallel pass.
const STEP_CELLS: usize = 1 << 16;

/// One step of the open's pass over the cells, in cell order: a stretch of
/// container cells, or another cell (a copy, so that the pass does not map
/// its page again).
enum CellStep {
    Containers(ContainerStretch),
    Other(usize, RawIndexCell),
}

/// Consecutive container cells, summed up for [`cell_inside`]: every one
/// of them is inside a stream of `len` bytes when the smallest start is
/// positive, every start is at most its end and the greatest end is less
/// than `len`.
#[derive(Debug, Clone, Copy)]
struct ContainerStretch {
    from: usize,
    to: usize,
    min_start: i64,
    max_end: i64,
    ordered: bool,
}

impl ContainerStretch {
    fn len(&self) -> usize {
        self.to - self.from
    }

    fn cells(&self) -> std::ops::Range<usize> {
        self.from..self.to
    }

    /// Whether [`cell_inside`] holds for each of its cells.
    fn inside(&self, len: u64) -> bool {
        self.min_start > 0 && self.ordered && (self.max_end as u64) < len
    }
}

/// The cells as [`CellStep`]s: container cells (nearly all of them) summed
/// up in stretches, on every core, so that the open's pass in cell order
/// goes over the few others and the stretches' sums, and reads a stretch's
/// cells again only when its sum fails a check. With `release`, each piece
/// releases the regions of the index holding it when summed up (what its
/// faults mapped, the neighbours' edges included).
fn cell_steps(cells: &[RawIndexCell], index: &TraceBytes, release: bool) -> Vec<CellStep> {
    use rayon::prelude::*;
    let pieces: Vec<Vec<CellStep>> = cells
        .par_chunks(STEP_CELLS)
        .enumerate()
        .map(|(piece, chunk)| {
            let first = piece * STEP_CELLS;
            let mut steps = Vec::new();
            let mut stretch: Option<ContainerStretch> = None;
            for (k, raw) in chunk.iter().enumerate() {
                if raw.kind != ObjectKind::Tracepoint as u8 {
                    steps.extend(stretch.take().map(CellStep::Containers));
                    steps.push(CellStep::Other(first + k, *raw));
                    continue;
                }
                let (start, end) = (raw.start.get(), raw.end.get());
                let open = stretch.get_or_insert(ContainerStretch {
                    from: first + k,
                    to: first + k,
                    min_start: start,
                    max_end: end,
                    ordered: true,
                });
                open.to = first + k + 1;
                open.min_start = open.min_start.min(start);
                open.max_end = open.max_end.max(end);
                open.ordered &= start <= end;
            }
            steps.extend(stretch.map(CellStep::Containers));
            if release {
                let at = |cell: usize| FILE_HEADER_LEN + (cell * CELL_LEN) as u64;
                index.release_around(at(first)..at(first + chunk.len()));
            }
            steps
        })
        .collect();
    pieces.into_iter().flatten().collect()
}

/// Whether container cell `raw`'s range lies inside a stream of `len` bytes.
pub(crate) fn cell_inside(raw: &RawIndexCell, len: u64) -> bool {
    let (start, end) = (raw.start.get(), raw.end.get());
    start > 0 && start <= end && (end as u64) < len
}

/// `offset` of cell `cell` when it lies in the data after the file header.
fn in_data(data: &[u8], cell: usize, offset: i64) -> Result<u64, IndexProblem> {
    u64::try_from(offset)
        .ok()
        .filter(|&at| at >= FILE_HEADER_LEN && at < data.len() as u64)
        .ok_or(IndexProblem::OutOfBounds { cell, offset })
}

/// The block that block cell `cell` lists, when the data holds one there:
/// `BLOCK_START` of its thread at its start, `BLOCK_END` at its end. An
/// open and a refresh check every block cell this way.
pub(crate) fn checked_block_cell(
    data: &[u8],
    cell: usize,
    raw: &RawIndexCell,
) -> Result<BlockInfo, IndexProblem> {
    let id = raw.id.get();
    let start = in_data(data, cell, raw.start.get())?;
    let end = in_data(data, cell, raw.end.get())?;
    if peek_kind_and_id(data, start) != Some((ObjectKind::BlockStart, id))
        || end < start + BLOCK_HEADER_LEN
        || data[end as usize] != ObjectKind::BlockEnd as u8
    {
        return Err(IndexProblem::BlockMismatch {
            cell,
            thread: id,
            start,
            end,
        });
    }
    Ok(BlockInfo {
        thread: ThreadId(id),
        start: PhysicalOffset(start),
        end: PhysicalOffset(end),
    })
}

/// Where reference cell `cell` of `kind` points, when an object of its
/// kind and id starts there. An open and a refresh check every reference
/// cell this way.
pub(crate) fn checked_reference_cell(
    data: &[u8],
    cell: usize,
    kind: ObjectKind,
    raw: &RawIndexCell,
) -> Result<PhysicalOffset, IndexProblem> {
    let id = raw.id.get();
    let offset = in_data(data, cell, raw.start.get())?;
    if peek_kind_and_id(data, offset) != Some((kind, id)) {
        return Err(IndexProblem::ReferenceMismatch {
            cell,
            kind,
            id,
            offset,
        });
    }
    Ok(PhysicalOffset(offset))
}
