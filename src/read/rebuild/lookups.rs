//! Lookups from the data alone: the parallel rebuild written in windows
//! into a scratch index and loaded like the recorder's, or kept on the
//! heap when no scratch file can be written.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::common::IndexCell;
use crate::error::{Error, Result};
use crate::format::ContextBuilder;
use crate::format::index::RawIndexCell;
use crate::read::lookup::block_table::{BlockInfo, BlockTable};
use crate::read::lookup::containers::container_cell;
use crate::read::lookup::containers::{FileCells, Source};
use crate::read::lookup::index::{LoadedIndex, load_index_until};
use crate::read::lookup::table::Lookup;
use crate::read::rebuild::{
    DEFAULT_WINDOW, RebuildOptions, RebuiltIndex, UnfinishedContainer, rebuild_index_collected,
    write_rebuilt_index,
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
/// errors are errors. Once `stop` is set, the rebuild ends after the
/// window it is in: [`Error::Cancelled`].
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
    let written = write_rebuilt_index(
        data.as_slice(),
        RebuildOptions::default(),
        window.map_or(DEFAULT_WINDOW, |window| window.max(MIN_REBUILD_WINDOW)),
        progress,
        &mut out,
        &|covered| {
            if window.is_some() {
                data.release_around(covered);
            }
            stopped(stop)
        },
    );
    let outcome = match written {
        Ok((outcome, _)) => outcome,
        // The scratch file could not be written: the heap serves.
        Err(Error::Io { path: None, .. }) => return Ok(None),
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
    // Reading the footers again would find them where the rebuild did.
    lookup.footers_found_by_rebuild();
    let unfinished = unfinished_cells(&lookup.blocks, &outcome.unfinished);
    for (slot, cells) in unfinished.into_iter().enumerate() {
        lookup.add_made_cells(slot, cells);
    }
    loaded.data = outcome.report;
    Ok(Some(loaded))
}

/// [`Error::Cancelled`] when `stop` is set.
pub(crate) fn stopped(stop: Option<&AtomicBool>) -> Result<()> {
    match stop {
        Some(stop) if stop.load(Ordering::Relaxed) => Err(Error::Cancelled("the open")),
        _ => Ok(()),
    }
}

/// Rebuilds the lookup structures from the data file alone, on the heap,
/// with the parallel rebuild ([`crate::read::rebuild`], the crate's only
/// one), in windows as [`rebuild_to_scratch`] does: with a `window` the
/// data's pages are released behind each, and once `stop` is set the
/// rebuild ends after the window it is in ([`Error::Cancelled`]).
/// Containers never finished end at the end of their thread's stream.
/// `progress` receives the bytes of data done.
pub(crate) fn rebuild_lookup(
    data: &TraceBytes,
    window: Option<u64>,
    progress: &(dyn Fn(u64) + Sync),
    stop: Option<&AtomicBool>,
) -> Result<LoadedIndex> {
    let rebuilt = rebuild_index_collected(
        data.as_slice(),
        RebuildOptions::default(),
        window.map_or(DEFAULT_WINDOW, |window| window.max(MIN_REBUILD_WINDOW)),
        progress,
        &|covered| {
            if window.is_some() {
                data.release_around(covered);
            }
            stopped(stop)
        },
    )?;
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
    let blocks = rebuilt.cells().filter_map(|cell| match *cell {
        IndexCell::Block { thread, start, end } => Some(BlockInfo { thread, start, end }),
        _ => None,
    });
    let block_table = BlockTable::new(blocks);
    let mut finished: Vec<Vec<RawIndexCell>> = vec![Vec::new(); block_table.thread_count()];
    let mut context = ContextBuilder::new();
    let mut references = 0;
    let mut slot = None;
    for cell in rebuilt.cells() {
        match *cell {
            IndexCell::Block { thread, .. } => slot = block_table.slot(thread),
            IndexCell::Container { .. } => {
                if let Some(slot) = slot {
                    finished[slot].push(cell.to_raw());
                }
            }
            IndexCell::Reference { kind, id, at, .. } => {
                context.add(kind, id, at);
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
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    use super::*;
    use crate::generate::{GenerateOptions, Shape, generate_file};
    use crate::read::rebuild::rebuild_index_observed;

    /// The heap rebuild (what serves when no scratch file can be written)
    /// gives the one-window rebuild's cells in windows, and a stop set
    /// during it ends it after the window it is in.
    #[test]
    fn the_heap_rebuild_is_windowed_and_stops() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.trace");
        generate_file(&path, &GenerateOptions::new(24 << 20, Shape::Mixed), |_| {}).unwrap();
        let data = TraceBytes::from_vec(std::fs::read(&path).unwrap());
        let len = data.as_slice().len() as u64;
        let whole = rebuild_index_observed(data.as_slice(), RebuildOptions::default(), &|_| {});
        let whole: Vec<IndexCell> = whole.unwrap().cells.into_vec();
        let windows = AtomicU64::new(0);
        let windowed = rebuild_index_collected(
            data.as_slice(),
            RebuildOptions::default(),
            MIN_REBUILD_WINDOW,
            &|_| {},
            &|_| {
                windows.fetch_add(1, Ordering::Relaxed);
                Ok(())
            },
        );
        assert_eq!(windowed.unwrap().cells.into_vec(), whole);
        assert!(windows.load(Ordering::Relaxed) > 2);
        assert!(rebuild_lookup(&data, Some(MIN_REBUILD_WINDOW), &|_| {}, None).is_ok());

        let stop = AtomicBool::new(false);
        let done = AtomicU64::new(0);
        let progress = |bytes| {
            done.fetch_add(bytes, Ordering::Relaxed);
            stop.store(true, Ordering::Relaxed);
        };
        let stopped = rebuild_lookup(&data, Some(MIN_REBUILD_WINDOW), &progress, Some(&stop));
        assert!(matches!(stopped, Err(Error::Cancelled(_))));
        let done = done.load(Ordering::Relaxed);
        assert!(done > 0 && done < len, "{done} of {len} bytes");
    }
}
