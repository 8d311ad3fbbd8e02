//! Opening: `LazyOptions` and the pipeline an open runs (sidecar, index,
//! repair or rebuild, lookups).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, RwLock};

use super::*;
use crate::error::{Error, Result};
use crate::format::{DATA_MAGIC, check_file_header};
use crate::read::LoadReport;
use crate::read::lookup::sidecar::{
    self, Files, LoadedSidecar, SidecarOutcome, SidecarPolicy, SidecarProblem, SidecarReport,
    Stamp, Summary, sidecar_path,
};
use crate::read::lookup::stream::Resident;
use crate::read::lookup::{
    IndexProblem, IndexReport, IndexStatus, LoadedIndex, Lookup, index_path, load_index,
    rebuild_lookup, rebuild_to_scratch,
};
use crate::storage::TraceBytes;
use cache::NodeCache;

/// How to open a [`LazyTraceReader`].
#[derive(Debug, Clone)]
pub struct LazyOptions {
    cache_bytes: usize,
    index: IndexChoice,
    index_path: Option<PathBuf>,
    sidecar: SidecarPolicy,
    resident_window: Option<u64>,
}

impl Default for LazyOptions {
    fn default() -> Self {
        LazyOptions {
            cache_bytes: LazyOptions::DEFAULT_CACHE_BYTES,
            index: IndexChoice::default(),
            index_path: None,
            sidecar: SidecarPolicy::default(),
            resident_window: Some(LazyOptions::DEFAULT_RESIDENT_WINDOW),
        }
    }
}

impl LazyOptions {
    /// The default cache budget: 64 MiB.
    pub const DEFAULT_CACHE_BYTES: usize = 64 << 20;

    /// The default resident window: 16 MiB.
    pub const DEFAULT_RESIDENT_WINDOW: u64 = 16 << 20;

    /// How many bytes of mapped file a forward read (a walk, a scan of a
    /// call's children) may leave resident behind it, per thread it reads
    /// (default [`DEFAULT_RESIDENT_WINDOW`](Self::DEFAULT_RESIDENT_WINDOW)).
    /// Past that, the pages it read are released: they leave the process's
    /// resident set but stay in the page cache, and fault back in when read
    /// again; the pages of the index and sidecar mappings are released with
    /// them, and once after opening. Random reads (decoding nodes, the
    /// children of calls here and there, as an IDE's clicks) release the
    /// blocks they entered once those may have mapped a window's worth
    /// (each block counts with 2 MiB on either side, what the kernel may map
    /// around it). Releasing costs faults when pages are read again (1,000
    /// random expansions of a 1 GB trace: ~30 ms instead of ~2 ms, with
    /// ~80–140 MB instead of ~900 MB mapped). `None` keeps every page read
    /// mapped until the reader is dropped (the kernel may still reclaim
    /// them). A trace opened from bytes in memory has nothing to release.
    pub fn resident_window(mut self, bytes: Option<u64>) -> Self {
        self.resident_window = bytes;
        self
    }

    /// Bytes the cache of decoded nodes and child lists may hold.
    pub fn cache_bytes(mut self, bytes: usize) -> Self {
        self.cache_bytes = bytes;
        self
    }

    /// What to do with the index file.
    pub fn index(mut self, choice: IndexChoice) -> Self {
        self.index = choice;
        self
    }

    /// Reads the index from `path` instead of the data file's path plus `.idx`.
    pub fn index_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.index_path = Some(path.into());
        self
    }

    /// Whether to use and write the lookup sidecar
    /// ([`sidecar_path`](crate::read::sidecar_path())); default read-write.
    /// Where none can be written next to the trace (a read-only directory,
    /// or [`SidecarPolicy::ReadOnly`]), the lookups go to an unlinked
    /// scratch file instead, mapped so that they are not on the heap;
    /// [`SidecarPolicy::Off`] keeps them on the heap. Traces opened from
    /// bytes have none (their lookups are on the heap).
    pub fn sidecar(mut self, policy: SidecarPolicy) -> Self {
        self.sidecar = policy;
        self
    }

    /// Opens the data file at `path` and its index, or its lookup sidecar
    /// when that is valid.
    pub fn open(&self, path: impl AsRef<Path>) -> Result<LazyTraceReader> {
        let path = path.as_ref();
        let stamped_at = Stamp::now();
        let data_stamp = Stamp::of(path);
        let data = TraceBytes::map(path)?;
        let index_path = self.index_path.clone().unwrap_or_else(|| index_path(path));
        let index = if self.index == IndexChoice::Rebuild {
            Err(IndexProblem::Requested)
        } else {
            TraceBytes::map(&index_path).map_err(|error| IndexProblem::Missing(error.to_string()))
        };
        let on_disk = OnDisk {
            sidecar: sidecar_path(path),
            stamped_at,
            data_stamp,
            index_stamp: Stamp::of(&index_path),
        };
        self.build(data, index, Some(index_path), Some(on_disk))
    }

    /// Opens a trace held in memory (or mapped by the caller). No sidecar
    /// is read or written.
    pub fn open_bytes(
        &self,
        data: TraceBytes,
        index: Option<TraceBytes>,
    ) -> Result<LazyTraceReader> {
        let index = match index {
            _ if self.index == IndexChoice::Rebuild => Err(IndexProblem::Requested),
            Some(index) => Ok(index),
            None => Err(IndexProblem::Missing("no index given".into())),
        };
        self.build(data, index, None, None)
    }

    /// The open, step by step: a valid sidecar answers everything; else
    /// the index is checked and repaired, or the lookups are rebuilt from
    /// the data; then the lookups are written to a sidecar and mapped back.
    fn build(
        &self,
        data: TraceBytes,
        index: std::result::Result<TraceBytes, IndexProblem>,
        path: Option<PathBuf>,
        on_disk: Option<OnDisk>,
    ) -> Result<LazyTraceReader> {
        check_file_header(data.as_slice(), DATA_MAGIC)?;
        let on_disk = on_disk.filter(|_| self.sidecar != SidecarPolicy::Off);
        let mut rejected = None;
        if let Some(on_disk) = &on_disk {
            match self.load_sidecar(&data, index.as_ref(), on_disk) {
                Ok(loaded) => return Ok(self.over_sidecar(data, &index, path, on_disk, loaded)),
                Err(problem) => rejected = Some(problem),
            }
        }
        let index_bytes = index.as_ref().ok().cloned();
        let (loaded, status, repaired) = self.load_or_rebuild(&data, index)?;
        let report = index_report(path, status, &loaded.lookup, loaded.references, repaired);
        let report = IndexReport {
            data: loaded.data,
            ..report
        };
        let mut reader = self.reader(data, loaded.lookup, loaded.context, report);
        if let Some(on_disk) = on_disk {
            reader = self.persist(reader, on_disk, index_bytes.as_ref(), rejected);
        }
        reader.release_all();
        Ok(reader)
    }

    /// The sidecar beside the trace, if it is valid for these files and
    /// for the index choice.
    fn load_sidecar(
        &self,
        data: &TraceBytes,
        index: std::result::Result<&TraceBytes, &IndexProblem>,
        on_disk: &OnDisk,
    ) -> std::result::Result<LoadedSidecar, SidecarProblem> {
        if self.index == IndexChoice::Rebuild {
            return Err(SidecarProblem::Stale("a rebuild was asked for".into()));
        }
        let files = on_disk.files(data, index.ok());
        let restamp = self.sidecar == SidecarPolicy::ReadWrite;
        let loaded = sidecar::load(&on_disk.sidecar, &files, restamp)?;
        let rebuilt = matches!(loaded.status, IndexStatus::Rebuilt(_));
        if rebuilt && self.index == IndexChoice::Require {
            return Err(SidecarProblem::Rebuilt);
        }
        Ok(loaded)
    }

    /// The reader over a valid sidecar's lookups.
    fn over_sidecar(
        &self,
        data: TraceBytes,
        index: &std::result::Result<TraceBytes, IndexProblem>,
        path: Option<PathBuf>,
        on_disk: &OnDisk,
        loaded: LoadedSidecar,
    ) -> LazyTraceReader {
        // A rebuild's sidecar with the index still missing: say so as a
        // fresh open would.
        let status = match (loaded.status, index) {
            (IndexStatus::Rebuilt(_), Err(problem)) => IndexStatus::Rebuilt(problem.clone()),
            (status, _) => status,
        };
        let report = index_report(
            path,
            status,
            &loaded.lookup,
            loaded.references,
            loaded.repaired,
        );
        let report = IndexReport {
            data: loaded.data,
            sidecar: Some(SidecarReport {
                path: on_disk.sidecar.clone(),
                rejected: None,
                outcome: SidecarOutcome::Used,
                framing_checked: loaded.framing_checked,
                scratch: false,
            }),
            ..report
        };
        let reader = self.reader(data, loaded.lookup, loaded.context, report);
        reader.release_all();
        reader
    }

    /// The index checked against the data and repaired where a crashed
    /// recorder left calls without cells; or, when it is broken (and the
    /// choice allows), the lookups rebuilt from the data: in a scratch
    /// index when one can be written, else on the heap.
    fn load_or_rebuild(
        &self,
        data: &TraceBytes,
        index: std::result::Result<TraceBytes, IndexProblem>,
    ) -> Result<(LoadedIndex, IndexStatus, usize)> {
        let attempt = index.and_then(|index| {
            let mut loaded = load_index(data, index, self.resident_window)?;
            let repaired = repair(data, &mut loaded)
                .map_err(|error| IndexProblem::Inconsistent(error.to_string()))?;
            Ok((loaded, repaired))
        });
        match attempt {
            Ok((loaded, repaired)) => {
                let complete = loaded.complete;
                Ok((loaded, IndexStatus::Used { complete }, repaired))
            }
            Err(problem) if self.index == IndexChoice::Require => {
                Err(Error::BrokenIndex(problem.to_string()))
            }
            Err(problem) => {
                let loaded = match rebuild_to_scratch(data, self.resident_window)? {
                    Some(loaded) => loaded,
                    None => rebuild_lookup(data)?,
                };
                Ok((loaded, IndexStatus::Rebuilt(problem), 0))
            }
        }
    }

    /// Writes the reader's lookups to the sidecar beside the trace (or to
    /// an unlinked scratch file when it may not or cannot be written) and
    /// returns the reader over them mapped back, its report saying so.
    fn persist(
        &self,
        reader: LazyTraceReader,
        on_disk: OnDisk,
        index: Option<&TraceBytes>,
        rejected: Option<SidecarProblem>,
    ) -> LazyTraceReader {
        let write = self.sidecar == SidecarPolicy::ReadWrite && self.index != IndexChoice::Rebuild;
        let outcome = if write {
            reader.write_sidecar(&on_disk, index)
        } else {
            SidecarOutcome::Skipped
        };
        let files = on_disk.files(&reader.data, index);
        let loaded = if outcome == SidecarOutcome::Written {
            let restamp = self.sidecar == SidecarPolicy::ReadWrite;
            sidecar::load(&on_disk.sidecar, &files, restamp).map_err(|e| e.to_string())
        } else {
            // None next to the trace: the same bytes in an unlinked
            // scratch file keep the tables off the heap.
            sidecar::write_scratch(&files, &reader.lookup, &reader.context, &reader.summary())
        };
        let scratch =
            outcome != SidecarOutcome::Written && loaded.is_ok() && reader.resolved_is_empty();
        let mut reader = self.mapped_back(reader, loaded);
        reader.report.sidecar = Some(SidecarReport {
            path: on_disk.sidecar,
            rejected,
            outcome,
            framing_checked: 0,
            scratch,
        });
        reader
    }

    /// The reader over a sidecar just written and `loaded` back (its
    /// tables mapped instead of held on the heap), with the report of
    /// `reader`; `reader` itself if the sidecar did not load, or if lookups
    /// resolved on demand would be lost.
    pub(super) fn mapped_back(
        &self,
        reader: LazyTraceReader,
        loaded: std::result::Result<sidecar::LoadedSidecar, String>,
    ) -> LazyTraceReader {
        match loaded {
            Ok(loaded) if reader.resolved_is_empty() => {
                let LazyTraceReader { data, report, .. } = reader;
                self.reader(data, loaded.lookup, loaded.context, report)
            }
            _ => reader,
        }
    }

    pub(super) fn reader(
        &self,
        data: TraceBytes,
        mut lookup: Lookup,
        context: crate::format::ContextBuilder,
        report: IndexReport,
    ) -> LazyTraceReader {
        if let Some(window) = self.resident_window {
            lookup.release_reads(data.clone(), window);
        }
        let resident = self.resident_window.map(|window| Resident {
            window,
            data: data.clone(),
            lookups: lookup.mappings(),
            scattered: Mutex::new(Vec::new()),
        });
        LazyTraceReader {
            context: context.build(data.clone()),
            data,
            resident,
            lookup,
            resolved: RwLock::new(HashMap::new()),
            cache: NodeCache::new(self.cache_bytes),
            report,
        }
    }
}

/// Where a trace opened from a path keeps its sidecar, and the stamps of
/// its files taken before they were mapped.
struct OnDisk {
    sidecar: PathBuf,
    stamped_at: u64,
    data_stamp: Stamp,
    index_stamp: Stamp,
}

impl OnDisk {
    pub(super) fn files<'a>(
        &self,
        data: &'a TraceBytes,
        index: Option<&'a TraceBytes>,
    ) -> Files<'a> {
        Files {
            data,
            stamped_at: self.stamped_at,
            data_stamp: self.data_stamp,
            index: index.map(|index| (index, self.index_stamp)),
        }
    }
}

impl LazyTraceReader {
    /// What a sidecar of this reader records besides the lookups.
    pub(super) fn summary(&self) -> Summary<'_> {
        Summary {
            status: &self.report.status,
            references: self.report.references,
            repaired: self.report.repaired_containers,
            data: &self.report.data,
        }
    }

    /// Writes the sidecar of this reader's lookups (building every thread's
    /// table first); a failure is reported, not returned.
    fn write_sidecar(&self, on_disk: &OnDisk, index: Option<&TraceBytes>) -> SidecarOutcome {
        let files = on_disk.files(&self.data, index);
        match sidecar::write(
            &on_disk.sidecar,
            &files,
            &self.lookup,
            &self.context,
            &self.summary(),
        ) {
            Ok(()) => SidecarOutcome::Written,
            Err(error) => SidecarOutcome::NotWritten(error.to_string()),
        }
    }
}

/// Finds the containers an index without footer (or a data file without
/// `EOF`) has no cell for: those the recorder never finished, and those it
/// finished after it last wrote the index. Returns how many it found.
fn repair(data: &TraceBytes, loaded: &mut LoadedIndex) -> Result<usize> {
    if loaded.complete && !loaded.data.missing_eof {
        return Ok(0);
    }
    let (repaired, unfinished) = loaded.lookup.repair_all(data.as_slice())?;
    loaded.data.unfinished_containers = unfinished;
    Ok(repaired)
}

/// The report of an open over `lookup` (its data report and sidecar to be
/// filled in by the caller).
fn index_report(
    path: Option<PathBuf>,
    status: IndexStatus,
    lookup: &Lookup,
    references: usize,
    repaired: usize,
) -> IndexReport {
    IndexReport {
        path,
        status,
        blocks: lookup.blocks.blocks().len(),
        references,
        containers: (0..lookup.blocks.thread_count())
            .map(|slot| lookup.container_count(slot))
            .sum(),
        repaired_containers: repaired,
        data: LoadReport::default(),
        sidecar: None,
    }
}
