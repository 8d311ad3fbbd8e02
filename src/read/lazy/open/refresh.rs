//! Following a trace that is still being written: its *growing view*
//! ([`LazyOptions::open_growing`]) and the refresh that extends it as the
//! recorder appends ([`LazyTraceReader::refresh`]).
//!
//! A streaming recorder appends blocks to the data file and each block's
//! cells to the index, so a trace being written opens like a crashed
//! recorder's, and its data often runs ahead of its index. The growing view
//! is the data up to the last block the index lists whole, and the index up
//! to the cell of the first block not in the data yet
//! (`rebuild::extend::growing_view`): whole blocks only, each with its
//! cells, opened as that prefix of the files would open (calls not finished
//! yet end at their thread's end), no sidecar read or written. An index with
//! its footer means the trace is complete: the view is the whole files.
//!
//! A refresh relies on both files being append-only: it checks that what
//! the view read is unchanged (lengths did not shrink; hashes of the
//! header, the last block and the last cell), takes the grown files' view,
//! and extends the lookups (`Lookup::extended`) from the new cells and
//! blocks alone: new blocks must follow the old last block, reference
//! cells are checked as an open checks them, a thread's container cells
//! are its old runs with the new ones appended (still post-order), and the
//! calls open at a thread's old end are followed by scanning only its new
//! data (`stream::scan_open`). The result equals a fresh open of the grown
//! view. When the files shrank or changed, the index got its footer, or
//! the lookups cannot be extended (rebuilt, distrusted), the refresh opens
//! the view afresh and says why ([`RefreshReport::reopened`]). Nodes of the
//! older reader are refused by the new one (another trace id);
//! [`NodeHandle`](crate::read::NodeHandle)s carry over. A file truncated under a
//! mapped reader faults when lost pages are read; read it with
//! [`FileAccess::Read`](crate::storage::FileAccess) to get errors instead.

use std::path::{Path, PathBuf};

use rustc_hash::FxHasher;

use crate::format::index::CELL_LEN;
use crate::format::{DATA_MAGIC, FILE_HEADER_LEN, check_file_header};
use crate::read::LoadReport;
use crate::read::lazy::*;
use crate::read::lookup::block_table::BlockInfo;
use crate::read::lookup::{IndexStatus, index_path};
use crate::read::rebuild::growing_view;

/// What a [`LazyTraceReader::refresh`] did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RefreshReport {
    /// Blocks the new view has that the old one had not.
    pub new_blocks: usize,
    /// Index cells the new view has that the old one had not.
    pub new_cells: usize,
    /// Bytes of data the new view has that the old one had not.
    pub new_data_bytes: u64,
    /// Bytes of the data and index files the refresh read: the new blocks
    /// and cells, the old view's last block and cell (to check that they
    /// did not change), and the index's tail; the whole files when it
    /// opened the view again.
    pub bytes_read: u64,
    /// Why the trace was opened again instead of extended, if it was.
    pub reopened: Option<String>,
}

/// What a reader of a growing view keeps to refresh.
#[derive(Debug, Clone)]
pub(in crate::read::lazy) struct Growing {
    options: LazyOptions,
    path: PathBuf,
    index_path: PathBuf,
    /// The files' lengths when the view was taken.
    file_lens: (u64, u64),
    /// The view's lengths.
    view_lens: (u64, u64),
    /// Hashes of the bytes a refresh checks: the data's header and last
    /// block, the index's header and last cell.
    kept: u64,
    /// Whether the lookups are the index's, repaired (else a refresh opens
    /// the view again).
    extendable: bool,
}

impl LazyOptions {
    /// Opens the trace at `path`, which may still be written, as its
    /// growing view: the data up to the last block its index lists whole
    /// (each block with its index cells; calls not finished yet end at
    /// their thread's end), no sidecar read or written; the whole files
    /// once the index has its footer. [`LazyTraceReader::refresh`]
    /// follows it as it grows.
    pub fn open_growing(&self, path: impl AsRef<Path>) -> Result<LazyTraceReader> {
        let path = path.as_ref();
        let index_path = self.index_path.clone().unwrap_or_else(|| index_path(path));
        let data = TraceBytes::open(path, self.access())?;
        let index = TraceBytes::open(&index_path, self.access()).ok();
        let file_lens = (data.len(), index.as_ref().map_or(0, TraceBytes::len));
        let cut = |bytes: TraceBytes, len| bytes.slice(0..len).unwrap_or(bytes);
        let (data, index, viewed) = match index {
            Some(index) => match growing_view(data.as_slice(), index.as_slice()) {
                Some((data_len, index_len)) => {
                    (cut(data, data_len), Some(cut(index, index_len)), true)
                }
                None => (data, Some(index), false),
            },
            None => (data, None, false),
        };
        let view_lens = (data.len(), index.as_ref().map_or(0, TraceBytes::len));
        let kept_index = index
            .clone()
            .unwrap_or_else(|| TraceBytes::from_vec(Vec::new()));
        let index = index.ok_or_else(|| IndexProblem::Missing("no index".into()));
        let mut reader = self.build(data, index, Some(index_path.clone()), None)?;
        let extendable = viewed
            && matches!(reader.report.status, IndexStatus::Used { complete: false })
            && reader.report.data.dropped_blocks == 0;
        let kept = kept_hash(
            reader.data.as_slice(),
            reader.lookup.blocks.blocks().last(),
            kept_index.as_slice(),
            view_lens.1,
        );
        reader.growing = Some(Box::new(Growing {
            options: self.clone(),
            path: path.to_path_buf(),
            index_path,
            file_lens,
            view_lens,
            kept,
            extendable,
        }));
        Ok(reader)
    }
}

/// The hash of what a refresh checks is unchanged: the header of `data`
/// and its `last` block, the header of `index` and the last cell of its
/// first `index_len` bytes.
fn kept_hash(data: &[u8], last: Option<&BlockInfo>, index: &[u8], index_len: u64) -> u64 {
    use std::hash::Hasher;
    let mut hasher = FxHasher::default();
    hasher.write(data.get(..FILE_HEADER_LEN as usize).unwrap_or_default());
    if let Some(last) = last {
        hasher.write(
            data.get(last.start.0 as usize..=last.end.0 as usize)
                .unwrap_or_default(),
        );
    }
    hasher.write(index.get(..FILE_HEADER_LEN as usize).unwrap_or_default());
    let last_cell = (index_len as usize)
        .saturating_sub(CELL_LEN)
        .max(FILE_HEADER_LEN as usize);
    hasher.write(index.get(last_cell..index_len as usize).unwrap_or_default());
    hasher.finish()
}

impl LazyTraceReader {
    /// The reader of the trace's grown view, built from this one's lookups
    /// by reading only what was appended: the new blocks and index cells
    /// are checked and added, each thread's calls not finished before are
    /// followed through its new data only; no sidecar is written. `None`
    /// when the view did not change (no new whole block). When the files
    /// shrank or their kept bytes changed (header, the view's last block
    /// and cell), or the index got its footer, the view is opened afresh
    /// instead ([`RefreshReport::reopened`] says why). Nodes of this
    /// reader are refused by the new one; their [`NodeHandle`]s carry
    /// over. Only for readers opened with [`LazyOptions::open_growing`]
    /// (or refreshed): others give [`Error::InvalidArgument`].
    pub fn refresh(&self) -> Result<Option<(LazyTraceReader, RefreshReport)>> {
        let Some(growing) = &self.growing else {
            return Err(Error::invalid("reader", "only a growing view refreshes"));
        };
        let lens = |path: &Path| std::fs::metadata(path).map_or(0, |m| m.len());
        if (lens(&growing.path), lens(&growing.index_path)) == growing.file_lens {
            return Ok(None);
        }
        let access = growing.options.access();
        let data = TraceBytes::open(&growing.path, access)?;
        let index = TraceBytes::open(&growing.index_path, access).ok();
        let reopen = |why: &str| self.reopen(growing, why);
        let Some(index) = index else {
            return reopen("the index cannot be read").map(Some);
        };
        if data.len() < growing.view_lens.0 || index.len() < growing.view_lens.1 {
            return reopen("the files shrank").map(Some);
        }
        if check_file_header(data.as_slice(), DATA_MAGIC).is_err() {
            return reopen("the data's header changed").map(Some);
        }
        let Some((data_len, index_len)) = growing_view(data.as_slice(), index.as_slice()) else {
            return reopen("the index is complete or unreadable").map(Some);
        };
        let (Some(data), Some(index)) = (data.slice(0..data_len), index.slice(0..index_len)) else {
            return reopen("the view lies outside the files").map(Some);
        };
        let last_block = self
            .lookup
            .blocks
            .blocks()
            .last()
            .map_or(0, |b| b.end.0 - b.start.0 + 1);
        let checked = FILE_HEADER_LEN * 2 + last_block + CELL_LEN as u64;
        // The kept bytes, read in the new mappings.
        let last = self.lookup.blocks.blocks().last();
        let kept = kept_hash(data.as_slice(), last, index.as_slice(), growing.view_lens.1);
        if kept != growing.kept {
            return reopen("the bytes of the last block or cell changed").map(Some);
        }
        if (data_len, index_len) == growing.view_lens {
            return Ok(None);
        }
        if !growing.extendable {
            return reopen("the view's lookups were not made from its index").map(Some);
        }
        let extended = match self.lookup.extended(&data, &index) {
            Ok(extended) => extended,
            Err(why) => return reopen(&why).map(Some),
        };
        let report = RefreshReport {
            new_blocks: extended.new_blocks,
            new_cells: extended.new_cells,
            new_data_bytes: extended.new_bytes,
            bytes_read: checked + extended.new_bytes + (extended.new_cells * CELL_LEN) as u64,
            reopened: None,
        };
        let context = self.context.extended(&extended.references);
        let lookup = extended.lookup;
        let containers = (0..lookup.blocks.thread_count())
            .map(|slot| lookup.container_count(slot))
            .sum();
        let index_report = IndexReport {
            blocks: lookup.blocks.blocks().len(),
            references: self.report.references + extended.references.len(),
            containers,
            repaired_containers: extended.repaired,
            data: LoadReport {
                missing_eof: true,
                unfinished_containers: extended.unfinished,
                ..LoadReport::default()
            },
            ..self.report.clone()
        };
        let mut reader = growing.options.reader(data, lookup, context, index_report);
        reader.growing = Some(Box::new(Growing {
            file_lens: (lens(&growing.path), lens(&growing.index_path)),
            view_lens: (data_len, index_len),
            kept: kept_hash(
                reader.data.as_slice(),
                reader.lookup.blocks.blocks().last(),
                index.as_slice(),
                index_len,
            ),
            ..(**growing).clone()
        }));
        Ok(Some((reader, report)))
    }

    /// The view opened afresh, the report saying why.
    fn reopen(&self, growing: &Growing, why: &str) -> Result<(LazyTraceReader, RefreshReport)> {
        let reader = growing.options.open_growing(&growing.path)?;
        let lens = reader.growing.as_ref().map_or((0, 0), |g| g.view_lens);
        let report = RefreshReport {
            new_blocks: reader.report.blocks.saturating_sub(self.report.blocks),
            new_cells: ((lens.1.saturating_sub(growing.view_lens.1)) as usize) / CELL_LEN,
            new_data_bytes: lens.0.saturating_sub(growing.view_lens.0),
            bytes_read: lens.0 + lens.1,
            reopened: Some(why.to_string()),
        };
        Ok((reader, report))
    }
}
