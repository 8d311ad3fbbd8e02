//! The lookup half of a refresh (`read::lazy::refresh` describes the whole
//! algorithm): the lookups of a trace that grew, made from the lookups of
//! its older view by reading only the index cells and the data appended
//! since, and a trace's *growing view* (the data up to the last block its
//! index lists).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use rayon::prelude::*;

use crate::common::{LogicalOffset, PhysicalOffset, ThreadId};
use crate::format::index::{CELL_LEN, RawIndexCell, parse_index};
use crate::format::{FILE_HEADER_LEN, ObjectKind};
use crate::read::lookup::block_table::BlockTable;
use crate::read::lookup::containers::{FileCells, Source, container_cell};
use crate::read::lookup::index::{
    cell_inside as inside, checked_block_cell, checked_reference_cell, reference_is_whole,
};
use crate::read::lookup::stream::{Stream, Unindexed, scan_open};
use crate::read::lookup::table::{Lookup, ThreadContainers};
use crate::storage::TraceBytes;

/// The part of a trace still being written that its index describes: the
/// data up to the end of the last block whose cell the index holds and
/// whose `BLOCK_END` the data holds, and the index up to the cell of the
/// first block not in the data yet (`(data bytes, index bytes)`). `None`
/// when the index is complete (it has its footer: the whole files are the
/// trace), unreadable, or lists no whole block. Reads the index's last
/// cells, backwards, and one byte of the data per block cell met.
pub(crate) fn growing_view(data: &[u8], index: &[u8]) -> Option<(u64, u64)> {
    let parsed = parse_index(index).ok()?;
    if parsed.has_footer {
        return None;
    }
    let cells = parsed.cells;
    let mut limit = cells.len();
    for (n, cell) in cells.iter().enumerate().rev() {
        if cell.kind != ObjectKind::BlockStart as u8 {
            continue;
        }
        let end = cell.end.get();
        let whole = u64::try_from(end)
            .ok()
            .and_then(|end| data.get(usize::try_from(end).ok()?))
            == Some(&(ObjectKind::BlockEnd as u8));
        if whole {
            let index_len = FILE_HEADER_LEN + (limit * CELL_LEN) as u64;
            return Some((end as u64 + 1, index_len));
        }
        limit = n;
    }
    None
}

/// Lookups extended over data and index cells appended to a trace.
pub(crate) struct Extended {
    /// The new lookups.
    pub(crate) lookup: Lookup,
    /// The reference objects the new cells list.
    pub(crate) references: Vec<(ObjectKind, i32, PhysicalOffset)>,
    /// Blocks appended.
    pub(crate) new_blocks: usize,
    /// Index cells appended.
    pub(crate) new_cells: usize,
    /// Bytes of the appended blocks (read by the checks and the scans).
    pub(crate) new_bytes: u64,
    /// Containers without a cell (finished late or not yet), as a repair
    /// counts them, and those of them not finished.
    pub(crate) repaired: usize,
    pub(crate) unfinished: usize,
}

/// What the pass over the new cells gathers per thread.
#[derive(Default)]
struct Added {
    /// Runs of cells `[from, to)` (the first may continue the thread's last).
    ranges: Vec<(u32, u32)>,
    /// Container cell numbers.
    containers: Vec<u32>,
}

impl Lookup {
    /// These lookups (of the growing view of a trace, repaired) extended to
    /// `data` and `index`, the same files grown (their growing view): the
    /// old blocks, reference cells and container cells are kept, the
    /// index's new cells are checked as an open checks them and appended,
    /// and each thread's unfinished calls are followed through its new
    /// data only. `Err` says why the lookups cannot be extended (the
    /// caller opens the trace again instead).
    // Long: one pass over the new cells, as `load_index_until`'s, whose
    // every case updates the pass's running state.
    pub(crate) fn extended(
        &self,
        data: &TraceBytes,
        index: &TraceBytes,
    ) -> std::result::Result<Extended, String> {
        let parsed = parse_index(index.as_slice()).map_err(|e| e.to_string())?;
        let cells = parsed.cells;
        let old_count = self.file.len();
        if parsed.has_footer || cells.len() < old_count || old_count == 0 {
            return Err("the index is complete, shorter, or was empty".into());
        }
        if cells[0].kind != ObjectKind::BlockStart as u8 {
            return Err("the index is not in the streaming writer's order".into());
        }
        if self
            .threads
            .iter()
            .any(|t| !t.trusted() || t.open.is_none())
        {
            return Err("a thread's cells were not trusted or not repaired".into());
        }
        let bytes = data.as_slice();
        let old_blocks = self.blocks.blocks();
        let Some(last) = old_blocks.last() else {
            return Err("no block yet".into());
        };
        let mut at = last.end.0 + 1;
        let mut lens: HashMap<ThreadId, u64> = (0..self.blocks.thread_count())
            .map(|slot| {
                let thread = self.blocks.thread(slot);
                (thread.thread, thread.len)
            })
            .collect();
        let mut added: HashMap<ThreadId, Added> = HashMap::new();
        let mut new_blocks = Vec::new();
        let mut references = Vec::new();
        let mut current = last.thread;
        let mut run_start = old_count as u32;
        let mut recheck = Vec::new();
        for (n, raw) in cells.iter().enumerate().skip(old_count) {
            let cell = n as u32;
            let kind = ObjectKind::from_byte(raw.kind);
            match kind {
                Some(ObjectKind::Tracepoint) => {
                    let inside = inside(raw, lens.get(&current).copied().unwrap_or(0));
                    added.entry(current).or_default().containers.push(cell);
                    if !inside {
                        recheck.push((current, cell));
                    }
                }
                Some(ObjectKind::BlockStart) => {
                    let block = checked_block_cell(bytes, n, raw).map_err(|e| e.to_string())?;
                    if block.start.0 != at {
                        return Err(format!("block cell {n} leaves a gap at offset {at}"));
                    }
                    added
                        .entry(current)
                        .or_default()
                        .ranges
                        .push((run_start, cell));
                    *lens.entry(block.thread).or_default() += block.payload_len();
                    new_blocks.push(block);
                    current = block.thread;
                    run_start = cell + 1;
                    at = block.end.0 + 1;
                }
                Some(kind) if kind.is_reference() => {
                    let offset =
                        checked_reference_cell(bytes, n, kind, raw).map_err(|e| e.to_string())?;
                    references.push((kind, raw.id.get(), offset));
                }
                _ => return Err(format!("cell {n} is of a kind an index does not hold")),
            }
        }
        added
            .entry(current)
            .or_default()
            .ranges
            .push((run_start, cells.len() as u32));
        if at != data.len() {
            return Err("data follows the last block the index lists".into());
        }
        for (thread, cell) in recheck {
            if !inside(&cells[cell as usize], lens[&thread]) {
                return Err(format!("container cell {cell} lies outside its thread"));
            }
        }
        let new_bytes = at - (last.end.0 + 1);
        let new_count = new_blocks.len();
        let blocks = BlockTable::new(old_blocks.iter().copied().chain(new_blocks));
        for &(_, _, offset) in &references {
            if !reference_is_whole(bytes, blocks.blocks(), offset.0) {
                return Err(format!("the reference object at {offset} is not whole"));
            }
        }
        let threads = (0..blocks.thread_count())
            .into_par_iter()
            .map(|slot| self.extended_thread(bytes, cells, &blocks, slot, &added))
            .collect::<std::result::Result<Vec<_>, String>>()?;
        let repaired = threads.iter().map(|t| t.made.len()).sum();
        let unfinished = threads
            .iter()
            .map(|t| t.open.as_ref().map_or(0, Vec::len))
            .sum();
        let lookup = Lookup {
            blocks,
            file: FileCells::new(index.clone(), cells.len()),
            threads,
            distrusted: AtomicUsize::new(0),
            release_reads: None,
        };
        Ok(Extended {
            lookup,
            references,
            new_blocks: new_count,
            new_cells: cells.len() - old_count,
            new_bytes,
            repaired,
            unfinished,
        })
    }

    /// Thread `slot` of the extended `blocks`: its old runs with the new
    /// ones appended, its late-closed calls kept unless a new cell lists
    /// them, and its calls without a cell found by scanning its new data
    /// only, from the calls left open at its old end.
    fn extended_thread(
        &self,
        data: &[u8],
        cells: &[RawIndexCell],
        blocks: &BlockTable,
        slot: usize,
        added: &HashMap<ThreadId, Added>,
    ) -> std::result::Result<ThreadContainers, String> {
        let thread = blocks.thread(slot);
        let old = self
            .blocks
            .slot(thread.thread)
            .map(|old| &self.threads[old]);
        let old_len = self
            .blocks
            .slot(thread.thread)
            .map_or(0, |old| self.blocks.thread(old).len);
        let mut ranges = old.map(|t| t.ranges.clone()).unwrap_or_default();
        let mut count = old.map_or(0, |t| t.count);
        let none = Added::default();
        let new = added.get(&thread.thread).unwrap_or(&none);
        for &(from, to) in &new.ranges {
            match ranges.last_mut() {
                Some(last) if last.1 == from => last.1 = to,
                _ => ranges.push((from, to)),
            }
        }
        count += new.containers.len();
        // The new cells by content start: the scan skips what they cover.
        let ends: HashMap<u64, u64> = new
            .containers
            .iter()
            .map(|&n| {
                let cell = &cells[n as usize];
                (cell.start.get() as u64, cell.end.get() as u64)
            })
            .collect();
        let listed = |start: LogicalOffset| ends.contains_key(&start.0);
        let mut made: Vec<RawIndexCell> = old
            .map(|t| t.made.as_slice())
            .unwrap_or_default()
            .iter()
            .filter(|c| {
                (c.end.get() as u64) < old_len && !listed(LogicalOffset(c.start.get() as u64))
            })
            .copied()
            .collect();
        let chain: Vec<Unindexed> = old.and_then(|t| t.open.clone()).unwrap_or_default();
        let found = if thread.len > old_len {
            let mut stream = Stream::new(data, thread);
            let cell_end =
                &mut |start: LogicalOffset| ends.get(&start.0).map(|&e| LogicalOffset(e));
            scan_open(&mut stream, cell_end, LogicalOffset(old_len), chain, false)
                .map_err(|e| e.to_string())?
        } else {
            chain
        };
        let len = LogicalOffset(thread.len);
        let open: Vec<Unindexed> = found.iter().filter(|c| c.end == len).copied().collect();
        made.extend(
            found
                .iter()
                .filter(|c| !listed(c.start))
                .map(|c| container_cell(c.event, c.start, c.end)),
        );
        made.sort_by_key(|cell| cell.start.get());
        let mut extended = ThreadContainers::new(count, Source::Ranges { ranges, count });
        let checked = old.map_or(0, |t| t.footers_checked.load(Ordering::Relaxed));
        extended.footers_checked = AtomicU32::new(checked);
        extended.made = made;
        extended.open = Some(open);
        Ok(extended)
    }
}
