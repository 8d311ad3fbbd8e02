//! A trace's index file as a whole: rebuilt from the data and written
//! atomically, or checked against the data. This is `tracetree index`
//! (and `index --check`) for any embedder.
//!
//! Writing streams the rebuild's cells to a temporary file beside the
//! index window by window (releasing the data's pages behind each window,
//! so memory does not grow with the trace), syncs it, then renames it over
//! the index: a reader never sees half an index. Checking compares the
//! canonical cells of both sides as sorted arrays (a fraction of the memory
//! of two ordered sets).

use std::path::{Path, PathBuf};

use crate::error::{Error, IndexProblem, Result};
use crate::format::IndexCell;
use crate::format::index::parse_index;
use crate::read::LoadReport;
use crate::read::index_path;
use crate::read::rebuild::{
    DEFAULT_WINDOW, RebuildOptions, UnfinishedContainer, rebuild_index_observed,
    write_rebuilt_index,
};
use crate::storage::{TraceBytes, write_derived_file_atomically};

/// An index file written from the data ([`RebuildOptions::write_index`]),
/// or checked against it ([`RebuildOptions::check_index`]).
#[derive(Debug)]
#[non_exhaustive]
pub struct IndexFile {
    /// The index file (`FILE.idx`).
    pub path: PathBuf,
    /// Its cells, footer excluded (checked: the distinct canonical cells).
    pub cells: usize,
    /// Whether it ends with a footer (a crashed recorder's has none).
    pub has_footer: bool,
    /// Containers without footers in the data, which have no cells.
    pub unfinished: Vec<UnfinishedContainer>,
    /// Complete blocks in the data.
    pub blocks: usize,
    /// What the data file lacked.
    pub report: LoadReport,
}

impl RebuildOptions {
    /// Rebuilds the index of the data file `data_path` and writes it
    /// atomically to `path` (the recorder's place is
    /// [`LazyTraceReader::index_path`](crate::read::LazyTraceReader::index_path)`(data_path)`:
    /// `FILE.idx`), unsynced
    /// (`write_derived_file_atomically`: readers check an index and rebuild
    /// a damaged one). `progress` receives the bytes of data done.
    pub fn write_index(
        self,
        data_path: &Path,
        path: &Path,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<IndexFile> {
        write_index(data_path, path, self, progress).map_err(|e| e.in_file(data_path))
    }

    /// Rebuilds the index of the data file `data_path` in memory and
    /// compares it with `FILE.idx`: a cell one has and the other lacks is
    /// an [`Error::BrokenIndex`] ([`IndexProblem::Lacks`],
    /// [`IndexProblem::Unjustified`]). `progress` receives the bytes of data
    /// done.
    pub fn check_index(
        self,
        data_path: &Path,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<IndexFile> {
        check_index(data_path, self, progress)
    }
}

/// [`RebuildOptions::write_index`], its errors not yet naming the data
/// file.
fn write_index(
    data_path: &Path,
    path: &Path,
    options: RebuildOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<IndexFile> {
    let (data, _) = TraceBytes::map(data_path)?.without_zero_tail();
    let path = path.to_path_buf();
    let (outcome, cells) = write_derived_file_atomically(&path, |writer| {
        write_rebuilt_index(
            data.as_slice(),
            options,
            DEFAULT_WINDOW,
            progress,
            writer,
            &mut |_| {},
            &|covered| {
                data.release_around(covered);
                Ok(())
            },
        )
    })?;
    Ok(IndexFile {
        path,
        cells,
        has_footer: true,
        unfinished: outcome.unfinished,
        blocks: outcome.blocks,
        report: outcome.report,
    })
}

/// [`RebuildOptions::check_index`].
fn check_index(
    data_path: &Path,
    options: RebuildOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<IndexFile> {
    let (data, _) = TraceBytes::map(data_path)?.without_zero_tail();
    let rebuilt = rebuild_index_observed(data.as_slice(), options, progress)
        .map_err(|e| e.in_file(data_path))?;
    let index = index_path(data_path);
    let bytes = TraceBytes::map(&index)?;
    let broken = |problem| Error::BrokenIndex {
        index: Some(index.clone()),
        problem,
    };
    let parsed = parse_index(bytes.as_slice()).map_err(|e| broken(IndexProblem::Header(e)))?;
    let written = normalized(parsed.decode_all().map_err(broken)?);
    let expected = normalized(rebuilt.cells.into_vec());
    if let Some(cell) = first_missing(&expected, &written) {
        return Err(broken(IndexProblem::Lacks(*cell)));
    }
    if let Some(cell) = first_missing(&written, &expected) {
        return Err(broken(IndexProblem::Unjustified(*cell)));
    }
    Ok(IndexFile {
        path: index,
        cells: written.len(),
        has_footer: parsed.has_footer,
        unfinished: rebuilt.unfinished,
        blocks: rebuilt.blocks,
        report: rebuilt.report,
    })
}

/// The canonical cells, sorted and without repeats: two indexes describe
/// the same trace when these are equal.
fn normalized(mut cells: Vec<IndexCell>) -> Vec<IndexCell> {
    for cell in &mut cells {
        *cell = cell.canonical();
    }
    cells.sort_unstable();
    cells.dedup();
    cells
}

/// The first cell of `a` that `b` lacks, both sorted.
fn first_missing<'a>(a: &'a [IndexCell], b: &[IndexCell]) -> Option<&'a IndexCell> {
    let mut b = b.iter().peekable();
    a.iter().find(|cell| {
        while b.next_if(|other| other < cell).is_some() {}
        b.peek() != Some(cell)
    })
}
