//! Lookups from the data alone: the parallel rebuild written in windows
//! as an index file, into an unlinked scratch file or, when none can be
//! written, into memory, and loaded like the recorder's index.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{Error, Result};
use crate::format::index::RawIndexCell;
use crate::read::lookup::block_table::BlockTable;
use crate::read::lookup::containers::container_cell;
use crate::read::lookup::index::{LoadedIndex, load_index_until};
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
/// writer's order — and loads that like an index file (`load_index`, every
/// check), so that the cells and tables of a trace opened without its index
/// are page cache the kernel can drop, not heap: the heap holds one
/// window's cells at a time. With a `window` the data's pages are released
/// behind each rebuild window, and `load_index` releases behind its pass.
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
    let outcome = match write_index(data, window, progress, stop, &mut out) {
        Ok(outcome) => outcome,
        // The scratch file could not be written: memory serves.
        Err(Error::Io { path: None, .. }) => return Ok(None),
        Err(error) => return Err(error),
    };
    let written = out.into_inner().ok();
    let Some(Ok(index)) = written.map(TraceBytes::map_file) else {
        return Ok(None);
    };
    load_rebuilt(data, index, window, outcome).map(Some)
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
    let outcome = write_index(data, window, progress, stop, &mut index)?;
    load_rebuilt(data, TraceBytes::from_vec(index), window, outcome)
}

/// The rebuilt index of `data` written to `out`, in windows of the
/// resident `window` (released behind), ending once `stop` is set.
fn write_index(
    data: &TraceBytes,
    window: Option<u64>,
    progress: &(dyn Fn(u64) + Sync),
    stop: Option<&AtomicBool>,
    out: &mut (dyn std::io::Write + Send),
) -> Result<RebuildOutcome> {
    let (outcome, _) = write_rebuilt_index(
        data.as_slice(),
        RebuildOptions::default(),
        window.map_or(DEFAULT_WINDOW, |window| window.max(MIN_REBUILD_WINDOW)),
        progress,
        out,
        &|covered| {
            if window.is_some() {
                data.release_around(covered);
            }
            stopped(stop)
        },
    )?;
    Ok(outcome)
}

/// The lookups of the rebuilt `index`, loaded with every check, with the
/// containers the rebuild found never finished.
fn load_rebuilt(
    data: &TraceBytes,
    index: TraceBytes,
    window: Option<u64>,
    outcome: RebuildOutcome,
) -> Result<LoadedIndex> {
    let mut loaded =
        load_index_until(data, index, window, outcome.report.dropped_bytes).map_err(|problem| {
            Error::internal(format!("a rebuilt index fails its checks: {problem}"))
        })?;
    let lookup = &mut loaded.lookup;
    // Reading the footers again would find them where the rebuild did.
    lookup.footers_found_by_rebuild();
    let unfinished = unfinished_cells(&lookup.blocks, &outcome.unfinished);
    for (slot, cells) in unfinished.into_iter().enumerate() {
        lookup.add_made_cells(slot, cells);
    }
    loaded.data = outcome.report;
    Ok(loaded)
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
}
