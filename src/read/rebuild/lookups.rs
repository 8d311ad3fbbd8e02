//! Lookups from the data alone: the parallel rebuild written in windows
//! as an index file, into an unlinked scratch file or, when none can be
//! written, into memory, and mapped as the reader's cells, with what the
//! lookups need besides them gathered from the cells as they are written.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::common::IndexCell;
use crate::error::{Error, Result};
use crate::format::index::{CELL_LEN, INDEX_FOOTER_LEN, RawIndexCell};
use crate::format::{ContextBuilder, FILE_HEADER_LEN};
use crate::read::lookup::Lookup;
use crate::read::lookup::block_table::{BlockInfo, BlockTable};
use crate::read::lookup::containers::{FileCells, container_cell};
use crate::read::lookup::index::{LoadedIndex, ThreadCells};
use crate::read::rebuild::{
    DEFAULT_WINDOW, RebuildOptions, RebuildOutcome, UnfinishedContainer, write_rebuilt_index,
};
use crate::storage::TraceBytes;

/// The smallest window of a rebuild at open ([`rebuild_to_scratch`]),
/// which is the resident window (or [`DEFAULT_WINDOW`] without one): each
/// is cut into chunks of at least 1 MiB for the workers, and ends with a
/// sequential stitch.
pub(crate) const MIN_REBUILD_WINDOW: u64 = 4 << 20;

/// Rebuilds the index of `data` from the data alone, in windows
/// ([`write_rebuilt_index`]), into an unlinked scratch file in the
/// temporary directory — a v22 index with a footer, in the streaming
/// writer's order — mapped as the reader's cells, so that the cells and
/// tables of a trace opened without its index are page cache the kernel
/// can drop, not heap: the heap holds one window's cells at a time. What
/// the lookups need besides the cells (the blocks, the reference objects,
/// each thread's runs of cells) is gathered from the cells as they are
/// written, while the workers discover the next window ([`Gathered`]), not
/// by reading the index back. With a `window` the data's pages are
/// released behind each rebuild window.
/// Containers never finished have no cell: the rebuild's list of them is
/// kept beside their threads' cells ([`Lookup::add_made_cells`](crate::read::lookup::Lookup::add_made_cells)), without
/// the scan a crashed recorder's index needs, and without building a table:
/// the cells still stream into the sidecar. `None` when no scratch file
/// could be written or mapped (the caller then rebuilds into memory,
/// [`rebuild_in_memory`]); data errors are errors. Once `stop` is set, the
/// rebuild ends after the window it is in: [`Error::Cancelled`].
pub(crate) fn rebuild_to_scratch(
    data: &TraceBytes,
    window: Option<u64>,
    progress: &(dyn Fn(u64) + Sync),
    stop: Option<&AtomicBool>,
) -> Result<Option<LoadedIndex>> {
    let Ok(file) = tempfile::tempfile_in(std::env::temp_dir()) else {
        return Ok(None);
    };
    let mut out = std::io::BufWriter::with_capacity(1 << 20, &file);
    let (outcome, gathered) = match write_index(data, window, progress, stop, &mut out) {
        Ok(written) => written,
        // The scratch file could not be written: memory serves.
        Err(Error::Io { path: None, .. }) => return Ok(None),
        Err(error) => return Err(error),
    };
    let written = out.into_inner().ok();
    let Some(Ok(index)) = written.map(TraceBytes::map_file) else {
        return Ok(None);
    };
    gathered.loaded(data, index, window, outcome).map(Some)
}

/// [`rebuild_to_scratch`]'s index written into memory instead, for an open
/// that cannot write a scratch file.
pub(crate) fn rebuild_in_memory(
    data: &TraceBytes,
    window: Option<u64>,
    progress: &(dyn Fn(u64) + Sync),
    stop: Option<&AtomicBool>,
) -> Result<LoadedIndex> {
    let mut index = Vec::new();
    let (outcome, gathered) = write_index(data, window, progress, stop, &mut index)?;
    gathered.loaded(data, TraceBytes::from_vec(index), window, outcome)
}

/// The rebuilt index of `data` written to `out`, in windows of the
/// resident `window` (released behind), ending once `stop` is set; and
/// what the lookups need of its cells.
fn write_index(
    data: &TraceBytes,
    window: Option<u64>,
    progress: &(dyn Fn(u64) + Sync),
    stop: Option<&AtomicBool>,
    out: &mut (dyn std::io::Write + Send),
) -> Result<(RebuildOutcome, Gathered)> {
    let mut gathered = Gathered::default();
    let (outcome, _) = write_rebuilt_index(
        data.as_slice(),
        RebuildOptions::default(),
        window.map_or(DEFAULT_WINDOW, |window| window.max(MIN_REBUILD_WINDOW)),
        progress,
        out,
        &mut |cells| gathered.add(cells),
        &|covered| {
            if window.is_some() {
                data.release_around(covered);
            }
            stopped(stop)
        },
    )?;
    Ok((outcome, gathered))
}

/// What the lookups need of a rebuilt index besides its cells, gathered
/// from the cells in the order they are written (the streaming writer's:
/// a block's cell, then the cells of what the block finished): the blocks,
/// the reference objects, and per thread (in order of first block) the
/// runs of cells that follow its block cells, with the container cells
/// among them. `load_index` finds the same in an index it checks.
#[derive(Default)]
struct Gathered {
    /// Cells seen.
    cells: u32,
    blocks: Vec<BlockInfo>,
    context: ContextBuilder,
    references: usize,
    by_thread: ThreadCells,
    /// The thread of the last block cell, and the reference cells since it.
    current: Option<usize>,
    run_start: u32,
    run_references: u32,
    /// A container cell came before any block cell (a rebuild's bug).
    stray: bool,
}

impl Gathered {
    /// The next cells, in order. Nearly all are container cells, which
    /// are counted per run, not one by one.
    fn add(&mut self, cells: &[IndexCell]) {
        for (number, cell) in (self.cells..).zip(cells) {
            match *cell {
                IndexCell::Container { .. } => {}
                IndexCell::Reference { kind, id, at, .. } => {
                    self.context.add(kind, id, at);
                    self.references += 1;
                    self.run_references += 1;
                }
                IndexCell::Block { thread, start, end } => {
                    self.end_run(number);
                    let slot = self.by_thread.list(thread);
                    self.blocks.push(BlockInfo { thread, start, end });
                    self.current = Some(slot);
                    self.run_start = number + 1;
                }
            }
        }
        self.cells += cells.len() as u32;
    }

    /// Ends the run of cells since the last block cell at cell `at`.
    fn end_run(&mut self, at: u32) {
        let containers = (at - self.run_start - self.run_references) as usize;
        self.run_references = 0;
        match self.current {
            Some(slot) => self
                .by_thread
                .add_run(slot, (self.run_start, at), containers),
            None => self.stray |= containers > 0,
        }
    }

    /// The lookups over `index`, the index file these cells were written
    /// to, with the containers the rebuild found never finished.
    fn loaded(
        mut self,
        data: &TraceBytes,
        index: TraceBytes,
        window: Option<u64>,
        outcome: RebuildOutcome,
    ) -> Result<LoadedIndex> {
        self.end_run(self.cells);
        let cells = self.cells as usize;
        let whole = FILE_HEADER_LEN as usize + cells * CELL_LEN + INDEX_FOOTER_LEN;
        let in_order = self.blocks.is_sorted_by_key(|block| block.start);
        if self.stray || !in_order || index.len() != whole as u64 {
            return Err(Error::internal(format!(
                "a rebuilt index of {} bytes does not hold the {cells} cells written in order",
                index.len()
            )));
        }
        let mut lookup = Lookup::new(
            BlockTable::new(self.blocks),
            FileCells::new(index, cells),
            self.by_thread.into_sources(),
        );
        // Tables built during the open release what they read, as later
        // ones do.
        if let Some(window) = window {
            lookup.release_reads(data.clone(), window);
        }
        // Reading the footers again would find them where the rebuild did.
        lookup.footers_found_by_rebuild();
        let unfinished = unfinished_cells(&lookup.blocks, &outcome.unfinished);
        for (slot, cells) in unfinished.into_iter().enumerate() {
            lookup.add_made_cells(slot, cells);
        }
        Ok(LoadedIndex {
            lookup,
            context: self.context,
            references: self.references,
            data: outcome.report,
            complete: true,
        })
    }
}

/// [`Error::Cancelled`] when `stop` is set.
pub(crate) fn stopped(stop: Option<&AtomicBool>) -> Result<()> {
    match stop {
        Some(stop) if stop.load(Ordering::Relaxed) => Err(Error::Cancelled("the open")),
        _ => Ok(()),
    }
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    use super::*;
    use crate::generate::{GenerateOptions, Shape, generate_file};
    use crate::read::lookup::index::load_index_until;

    /// The rebuild into memory (what serves when no scratch file can be
    /// written) gives the scratch file's lookups, and a stop set during it
    /// ends it after the window it is in.
    #[test]
    fn the_rebuild_in_memory_is_the_scratch_one_and_stops() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.trace");
        generate_file(&path, &GenerateOptions::new(24 << 20, Shape::Mixed), |_| {}).unwrap();
        let data = TraceBytes::from_vec(std::fs::read(&path).unwrap());
        let len = data.as_slice().len() as u64;
        let window = Some(MIN_REBUILD_WINDOW);
        let memory = rebuild_in_memory(&data, window, &|_| {}, None).unwrap();
        let scratch = rebuild_to_scratch(&data, window, &|_| {}, None)
            .unwrap()
            .expect("a scratch index");
        let counts = |loaded: &LoadedIndex| -> Vec<usize> {
            let threads = loaded.lookup.blocks.thread_count();
            (0..threads)
                .map(|slot| loaded.lookup.container_count(slot))
                .collect()
        };
        assert_eq!(
            memory.lookup.blocks.blocks(),
            scratch.lookup.blocks.blocks()
        );
        assert_eq!(counts(&memory), counts(&scratch));
        assert_eq!(memory.references, scratch.references);
        assert_eq!(memory.data, scratch.data);

        let stop = AtomicBool::new(false);
        let done = AtomicU64::new(0);
        let progress = |bytes| {
            done.fetch_add(bytes, Ordering::Relaxed);
            stop.store(true, Ordering::Relaxed);
        };
        let stopped = rebuild_in_memory(&data, window, &progress, Some(&stop));
        assert!(matches!(stopped, Err(Error::Cancelled(_))));
        let done = done.load(Ordering::Relaxed);
        assert!(done > 0 && done < len, "{done} of {len} bytes");
    }

    /// What the rebuild gathers from its cells as it writes them is what
    /// loading the index it wrote finds, with every check.
    #[test]
    fn the_gathered_lookups_are_the_loaded_ones() {
        let dir = tempfile::tempdir().unwrap();
        for (name, shape) in [("mixed", Shape::Mixed), ("deep", Shape::Deep)] {
            let path = dir.path().join(format!("{name}.trace"));
            let mut options = GenerateOptions::new(6 << 20, shape);
            options.threads = 3;
            generate_file(&path, &options, |_| {}).unwrap();
            let data = TraceBytes::from_vec(std::fs::read(&path).unwrap());
            let window = Some(1 << 20);
            let gathered = rebuild_in_memory(&data, window, &|_| {}, None).unwrap();
            let index = gathered.lookup.file.bytes().unwrap().clone();
            let loaded = load_index_until(&data, index, window, 0).unwrap();
            let (gathered, loaded) = (&gathered, &loaded);
            assert_eq!(
                gathered.lookup.blocks.blocks(),
                loaded.lookup.blocks.blocks()
            );
            assert!(gathered.lookup.blocks.thread_count() == 3, "{name}");
            assert_eq!(gathered.lookup.file.len(), loaded.lookup.file.len());
            for (a, b) in gathered.lookup.threads.iter().zip(&loaded.lookup.threads) {
                assert_eq!((a.count, &a.ranges), (b.count, &b.ranges), "{name}");
                assert!(a.count > 0, "{name}");
            }
            assert_eq!(gathered.references, loaded.references);
            assert!(gathered.references > 0);
            assert_eq!(
                format!("{:?}", gathered.context),
                format!("{:?}", loaded.context)
            );
            assert!(gathered.complete && loaded.complete);
        }
    }
}
