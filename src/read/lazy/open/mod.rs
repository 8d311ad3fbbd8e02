//! Opening: `LazyOptions` and the pipeline an open runs: a valid lookup
//! sidecar answers everything (`lookup/sidecar/`); else the recorder's
//! index is checked against the data in one pass (`lookup/index.rs`, the
//! rules in `docs/FORMAT.md`, "tracetree's index policy") and, when a
//! crashed recorder left calls without cells, repaired
//! (`Lookup::repair_all`); else the lookups are rebuilt from the data
//! (`read::rebuild`, into an unlinked scratch index, in memory only when
//! none can be written). Then they are persisted to a sidecar and mapped
//! back, or, on a first open or one that writes none, tables within
//! `defer_sidecar` are kept to be built on first use, on the heap.
//! `IndexChoice` says what a broken index does.
//!
//! Invariants: an open never writes beside the trace; a cell's start and
//! event id, which cannot be checked without decoding, are checked when a
//! lookup goes through them (`nodes/scopes.rs`).

mod refresh;

pub(in crate::read::lazy) use refresh::Growing;
pub use refresh::RefreshReport;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, RwLock};

use crate::error::{Error, Result};
use crate::format::{DATA_MAGIC, check_file_header};
use crate::read::LoadReport;
use crate::read::lazy::*;
use crate::read::lookup::sidecar::{
    self, Files, LoadedSidecar, SidecarOutcome, SidecarPolicy, SidecarProblem, Stamp, Summary,
    sidecar_path,
};
use crate::read::lookup::{
    IndexProblem, IndexReport, IndexStatus, LoadedIndex, Lookup, index_path, load_index,
};
use crate::read::rebuild::{rebuild_in_memory, rebuild_to_scratch, stopped};
use crate::storage::packed::{INDEX_ENTRY, PackedTrace};
use crate::storage::{FileAccess, TraceBytes};
use crate::storage::{Reads, Resident};
use cache::NodeCache;

/// How to open a [`LazyTraceReader`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LazyOptions {
    cache_bytes: usize,
    index: IndexChoice,
    pub(in crate::read::lazy) index_path: Option<PathBuf>,
    sidecar: SidecarPolicy,
    sidecar_dir: Option<PathBuf>,
    sidecar_budget: u64,
    defer_sidecar: Option<u64>,
    resident_window: Option<u64>,
    file_access: FileAccess,
    rebuild_progress: Option<RebuildProgress>,
    stop: Option<Arc<AtomicBool>>,
}

/// The caller's observer of a rebuild at open
/// ([`LazyOptions::rebuild_progress`]).
#[derive(Clone)]
struct RebuildProgress(Arc<dyn Fn(u64) + Send + Sync>);

impl std::fmt::Debug for RebuildProgress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RebuildProgress")
    }
}

impl Default for LazyOptions {
    fn default() -> Self {
        LazyOptions {
            cache_bytes: LazyOptions::DEFAULT_CACHE_BYTES,
            index: IndexChoice::default(),
            index_path: None,
            sidecar: SidecarPolicy::default(),
            sidecar_dir: None,
            sidecar_budget: LazyOptions::DEFAULT_SIDECAR_BUDGET,
            defer_sidecar: Some(LazyOptions::DEFAULT_DEFERRED_TABLES),
            resident_window: Some(LazyOptions::DEFAULT_RESIDENT_WINDOW),
            file_access: FileAccess::default(),
            rebuild_progress: None,
            stop: None,
        }
    }
}

impl LazyOptions {
    /// The default cache budget: 64 MiB.
    pub const DEFAULT_CACHE_BYTES: usize = 64 << 20;

    /// The smallest cache budget: 32 KiB, enough for a few pages of child
    /// addresses and the child indexes of the calls in use. Smaller
    /// budgets are raised to it.
    pub const MIN_CACHE_BYTES: usize = 32 << 10;

    /// The default bound on the sidecars kept in a sidecar directory: 4 GiB.
    pub const DEFAULT_SIDECAR_BUDGET: u64 = 4 << 30;

    /// The default bound on the tables a first open keeps on the heap
    /// instead of writing the sidecar ([`defer_sidecar`](Self::defer_sidecar)):
    /// 64 MiB, the tables of a trace of about 1.7 GB.
    pub const DEFAULT_DEFERRED_TABLES: u64 = 64 << 20;

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
    /// (the distinct 2 MiB-aligned regions of the file holding them: the
    /// kernel maps at most the aligned folio around a read); a node
    /// decoded on its own and a short call's children are copied by
    /// `pread` instead, which maps nothing (releasing and copying cost
    /// time: `BENCHMARKS.md`). `None` keeps every page read
    /// mapped until the reader is dropped (the kernel may still reclaim
    /// them). A trace opened from bytes in memory has nothing to release.
    pub fn resident_window(mut self, bytes: Option<u64>) -> Self {
        self.resident_window = bytes;
        self
    }

    /// How the trace's files are read (default [`FileAccess::Map`]):
    /// [`FileAccess::Read`] never maps them, so that a file truncated
    /// under the reader gives errors instead of `SIGBUS`, for a process
    /// that must outlive any file it reads (an IDE, a service). Lookup
    /// sidecars, which this crate writes and never truncates, are mapped
    /// either way.
    pub fn file_access(mut self, access: FileAccess) -> Self {
        self.file_access = access;
        self
    }

    /// The access [`file_access`](Self::file_access) chose.
    pub fn access(&self) -> FileAccess {
        self.file_access
    }

    /// Bytes the cache of decoded nodes and child lists may hold (default
    /// [`DEFAULT_CACHE_BYTES`](Self::DEFAULT_CACHE_BYTES)), at least
    /// [`MIN_CACHE_BYTES`](Self::MIN_CACHE_BYTES): a smaller budget is
    /// raised to it, as [`LazyTraceReader::cache_stats`]'s `budget` shows
    /// (with nothing kept, each child count would rescan its call).
    pub fn cache_bytes(mut self, bytes: usize) -> Self {
        self.cache_bytes = bytes.max(Self::MIN_CACHE_BYTES);
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
    /// ([`LazyTraceReader::sidecar_path`]); default read-write.
    /// Where none can be written (no [`sidecar_dir`](Self::sidecar_dir), a
    /// read-only one, or [`SidecarPolicy::ReadOnly`]), tables within
    /// [`defer_sidecar`](Self::defer_sidecar)'s bound are built on first
    /// use, on the heap, and larger ones go to an unlinked scratch file,
    /// mapped; [`SidecarPolicy::Off`] keeps them on the heap. Traces opened from
    /// bytes have none (their lookups are on the heap).
    pub fn sidecar(mut self, policy: SidecarPolicy) -> Self {
        self.sidecar = policy;
        self
    }

    /// Where sidecars are kept between opens: `Some(dir)` keeps each
    /// trace's sidecar in `dir` ([`LazyTraceReader::sidecar_path`]),
    /// so that later opens of an unchanged trace map it instead of
    /// building the lookups again; the oldest sidecars there are removed
    /// once they add up to more than the
    /// [`sidecar_budget`](Self::sidecar_budget). `None` (the default) keeps
    /// none: each open builds its lookups again ([`sidecar`](Self::sidecar)
    /// says where they go).
    /// Nothing is ever written beside the trace.
    /// The command line uses the per-user cache directory
    /// ([`TraceCache::per_user`](crate::TraceCache::per_user)).
    pub fn sidecar_dir(mut self, dir: Option<PathBuf>) -> Self {
        self.sidecar_dir = dir;
        self
    }

    /// Bytes the sidecars of the [`sidecar_dir`](Self::sidecar_dir) may
    /// add up to (default
    /// [`DEFAULT_SIDECAR_BUDGET`](Self::DEFAULT_SIDECAR_BUDGET)); the least
    /// recently written are removed past it, never the one just written.
    pub fn sidecar_budget(mut self, bytes: u64) -> Self {
        self.sidecar_budget = bytes;
        self
    }

    /// Whether the first open of a trace waits for a second before writing
    /// its sidecar. With `Some(bytes)` (default
    /// [`DEFAULT_DEFERRED_TABLES`](Self::DEFAULT_DEFERRED_TABLES)), an open
    /// that finds no sidecar, uses the index, and would keep at most
    /// `bytes` of container tables on the heap (4 bytes a container) builds
    /// no lookups up front: each thread's table is built when first needed,
    /// so a one-off look at a trace (its first page of children) costs
    /// reading the index, not building and writing every lookup. It leaves
    /// a note of the files' stamps where the sidecar goes
    /// ([`SidecarOutcome::Deferred`](crate::read::SidecarOutcome::Deferred)); the next open of the
    /// same files finds it and writes the sidecar, and later ones map it.
    /// `None` writes the sidecar at the first open, keeping no table on the
    /// heap. Only with a [`sidecar_dir`](Self::sidecar_dir) and
    /// [`SidecarPolicy::ReadWrite`]; an open that writes no sidecar (no
    /// directory, or [`SidecarPolicy::ReadOnly`]) likewise builds tables
    /// that fit `bytes` on first use, on the heap, and with `None` (or
    /// past the bound) writes them to an unlinked scratch file and maps
    /// them back.
    pub fn defer_sidecar(mut self, bytes: Option<u64>) -> Self {
        self.defer_sidecar = bytes;
        self
    }

    /// Calls `progress` with the bytes of data done (from any thread) while
    /// an open rebuilds the lookups from the data alone, because the index
    /// is missing, broken or refused ([`IndexChoice::Rebuild`]); the calls
    /// of one rebuild add up to the data's length, so a progress bar of
    /// that length ends full. Not called when a sidecar or the index
    /// serves. For a user's progress bar: a rebuild of a multi-GB trace
    /// takes seconds.
    pub fn rebuild_progress(mut self, progress: impl Fn(u64) + Send + Sync + 'static) -> Self {
        self.rebuild_progress = Some(RebuildProgress(Arc::new(progress)));
        self
    }

    /// Ends an open that rebuilds the lookups from the data (its index
    /// missing, broken or refused) once `stop` is set from another thread:
    /// the rebuild stops after the window of data it is in (the resident
    /// window, at least 4 MiB; 128 MiB without one), nothing is written
    /// beside or for the trace, and the open returns
    /// [`Error::Cancelled`]. Opens served by a sidecar or the index are
    /// short and do not look at it.
    pub fn stop(mut self, stop: Option<Arc<AtomicBool>>) -> Self {
        self.stop = stop;
        self
    }

    /// Opens the data file at `path` and its index, or its lookup sidecar
    /// when that is valid. A packed trace (`NAME.packedtrace`, found by its
    /// ZIP magic: `storage::packed`) is opened in place: its data and index
    /// entries are read in place when stored, else inflated into memory
    /// (up to [`PackedTrace::MAX_INFLATED`]); its sidecar is kept as for a
    /// plain trace, stamped with the packed file.
    ///
    /// Errors name the file: one that does not start with the v22 magic is
    /// [`Error::Unsupported`]; others that do not name it are wrapped in
    /// [`Error::InFile`].
    pub fn open(&self, path: impl AsRef<Path>) -> Result<LazyTraceReader> {
        let path = path.as_ref();
        let opened = if PackedTrace::is_packed(path) {
            self.open_pack(path)
        } else {
            self.open_plain(path)
        };
        opened.map_err(|error| error.in_file(path))
    }

    /// [`open`](Self::open) of a trace that is not packed.
    fn open_plain(&self, path: &Path) -> Result<LazyTraceReader> {
        let stamped_at = Stamp::now();
        let data_stamp = Stamp::of(path);
        let data = TraceBytes::open(path, self.file_access)?;
        let index_path = self.index_path.clone().unwrap_or_else(|| index_path(path));
        let index = if self.index == IndexChoice::Rebuild {
            Err(IndexProblem::Requested)
        } else {
            TraceBytes::open(&index_path, self.file_access)
                .map_err(|error| IndexProblem::Missing(error.to_string()))
        };
        let on_disk = self.on_disk(path, stamped_at, data_stamp, Stamp::of(&index_path));
        self.build(data, index, Some(index_path), Some(on_disk))
    }

    /// [`open`](Self::open) of a packed trace.
    fn open_pack(&self, path: &Path) -> Result<LazyTraceReader> {
        let stamped_at = Stamp::now();
        let stamp = Stamp::of(path);
        let pack = PackedTrace::from_bytes(path, TraceBytes::open(path, self.file_access)?)?;
        let data = pack.data()?;
        let index_name = PathBuf::from(format!("{}!{INDEX_ENTRY}", path.display()));
        let index = match pack.index()? {
            _ if self.index == IndexChoice::Rebuild => Err(IndexProblem::Requested),
            Some(index) => Ok(index),
            None => Err(IndexProblem::Missing(format!(
                "{} holds no {INDEX_ENTRY}",
                path.display()
            ))),
        };
        let on_disk = self.on_disk(path, stamped_at, stamp, stamp);
        let mut reader = self.build(data, index, Some(index_name), Some(on_disk))?;
        reader.diff_map = pack.diff_map();
        Ok(reader)
    }

    /// Where the sidecar of the trace at `path` goes, and the stamps it
    /// is checked against.
    fn on_disk(&self, path: &Path, stamped_at: u64, data: Stamp, index: Stamp) -> OnDisk {
        OnDisk {
            sidecar: self
                .sidecar_dir
                .as_deref()
                .map(|dir| sidecar_path(dir, path)),
            stamped_at,
            data_stamp: data,
            index_stamp: index,
        }
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
    pub(in crate::read::lazy) fn build(
        &self,
        data: TraceBytes,
        index: std::result::Result<TraceBytes, IndexProblem>,
        path: Option<PathBuf>,
        on_disk: Option<OnDisk>,
    ) -> Result<LazyTraceReader> {
        check_file_header(data.as_slice(), DATA_MAGIC)?;
        let (data, zero_filled_bytes) = data.without_zero_tail();
        let on_disk = on_disk.filter(|_| self.sidecar != SidecarPolicy::Off);
        let mut rejected = None;
        if let Some(on_disk) = on_disk.as_ref().filter(|d| d.sidecar.is_some()) {
            match self.load_sidecar(&data, index.as_ref(), on_disk) {
                Ok(loaded) => {
                    let mut reader = self.over_sidecar(data, &index, path, on_disk, loaded);
                    reader.report.data.zero_filled_bytes = zero_filled_bytes;
                    return Ok(reader);
                }
                Err(problem) => rejected = Some(problem),
            }
        }
        let index_bytes = index.as_ref().ok().cloned();
        // Verifying reads the data through, as a rebuild does; the index
        // still keys the sidecar, so that later opens use this one.
        let index = match index {
            Ok(_) if self.index == IndexChoice::Verify => Err(IndexProblem::Requested),
            index => index,
        };
        let (loaded, status, repaired) = self.load_or_rebuild(&data, index, path.as_deref())?;
        let report = index_report(path, status, &loaded.lookup, loaded.references, repaired);
        let report = IndexReport {
            data: LoadReport {
                zero_filled_bytes,
                ..loaded.data
            },
            ..report
        };
        let mut reader = self.reader(data, loaded.lookup, loaded.context, report);
        if let Some(on_disk) = on_disk {
            reader = self.persist(reader, on_disk, index_bytes.as_ref(), rejected);
        }
        reader.release_all();
        Ok(reader)
    }

    /// The trace's sidecar in the sidecar directory, if it is valid for these files and
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
        let Some(path) = &on_disk.sidecar else {
            return Err(SidecarProblem::Missing("no sidecar directory".into()));
        };
        let files = on_disk.files(data, index.ok());
        let restamp = self.sidecar == SidecarPolicy::ReadWrite;
        let loaded = sidecar::load(path, &files, restamp)?;
        let rebuilt = matches!(loaded.status, IndexStatus::Rebuilt(_));
        if rebuilt && self.index == IndexChoice::Require {
            return Err(SidecarProblem::Rebuilt);
        }
        if !rebuilt && self.index == IndexChoice::Verify {
            return Err(SidecarProblem::Stale(
                "made from the index, and the data is to be read through".into(),
            ));
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
            sidecar: Some(SidecarOutcome::Used),
            sidecar_path: on_disk.sidecar.clone(),
            framing_checked: loaded.framing_checked,
            ..report
        };
        let reader = self.reader(data, loaded.lookup, loaded.context, report);
        reader.release_all();
        reader
    }

    /// The index checked against the data and repaired where a crashed
    /// recorder left calls without cells; or, when it is broken (and the
    /// choice allows), the lookups rebuilt from the data: in a scratch
    /// index when one can be written, else in memory. `index_path` names
    /// the index in errors.
    fn load_or_rebuild(
        &self,
        data: &TraceBytes,
        index: std::result::Result<TraceBytes, IndexProblem>,
        index_path: Option<&Path>,
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
            Err(problem) if self.index == IndexChoice::Require => Err(Error::BrokenIndex {
                index: index_path.map(Path::to_path_buf),
                problem,
            }),
            Err(problem) => {
                let progress: &(dyn Fn(u64) + Sync) = match &self.rebuild_progress {
                    Some(RebuildProgress(progress)) => progress.as_ref(),
                    None => &|_| {},
                };
                let stop = self.stop.as_deref();
                let window = self.resident_window;
                let loaded = match rebuild_to_scratch(data, window, progress, stop)? {
                    Some(loaded) => loaded,
                    None => {
                        stopped(stop)?;
                        rebuild_in_memory(data, window, progress, stop)?
                    }
                };
                stopped(stop)?;
                Ok((loaded, IndexStatus::Rebuilt(problem), 0))
            }
        }
    }

    /// Writes the reader's lookups to the trace's sidecar (or to
    /// an unlinked scratch file when it may not or cannot be written) and
    /// returns the reader over them mapped back, its report saying so.
    fn persist(
        &self,
        reader: LazyTraceReader,
        on_disk: OnDisk,
        index: Option<&TraceBytes>,
        rejected: Option<SidecarProblem>,
    ) -> LazyTraceReader {
        // A damaged trace's sidecar would not say how it is damaged.
        let write = self.sidecar == SidecarPolicy::ReadWrite
            && self.index != IndexChoice::Rebuild
            && reader.report.data.damage.is_none();
        let kept = match &on_disk.sidecar {
            Some(path) if write => (self.defers(&reader, rejected.as_ref())
                && sidecar::write_opened(path, &on_disk.files(&reader.data, index)).is_ok())
            .then_some(SidecarOutcome::Deferred),
            // No sidecar to write: tables that fit the bound are built on
            // first use, on the heap, as a deferring open's are, and no
            // scratch copy of them is written.
            _ => self
                .keeps_tables(&reader)
                .then_some(SidecarOutcome::Skipped),
        };
        if let Some(outcome) = kept {
            let mut reader = reader;
            reader
                .report
                .set_sidecar(outcome, on_disk.sidecar, rejected, false);
            return reader;
        }
        let outcome = match &on_disk.sidecar {
            Some(path) if write => reader.write_sidecar(path, &on_disk, index),
            _ => SidecarOutcome::Skipped,
        };
        let files = on_disk.files(&reader.data, index);
        let loaded = if let (Some(path), SidecarOutcome::Written) = (&on_disk.sidecar, &outcome) {
            sidecar::evict_oldest(path, self.sidecar_budget);
            let restamp = self.sidecar == SidecarPolicy::ReadWrite;
            sidecar::load(path, &files, restamp).map_err(|e| e.to_string())
        } else {
            // No sidecar written: the same bytes in an unlinked
            // scratch file keep the tables off the heap.
            sidecar::write_scratch(&files, &reader.lookup, &reader.context, &reader.summary())
        };
        let scratch =
            outcome != SidecarOutcome::Written && loaded.is_ok() && reader.resolved_is_empty();
        let mut reader = self.mapped_back(reader, loaded);
        reader
            .report
            .set_sidecar(outcome, on_disk.sidecar, rejected, scratch);
        reader
    }

    /// Whether this open leaves the sidecar to the next one
    /// ([`defer_sidecar`](LazyOptions::defer_sidecar)): the index is used,
    /// the tables fit the bound, and no earlier open deferred it already.
    fn defers(&self, reader: &LazyTraceReader, rejected: Option<&SidecarProblem>) -> bool {
        matches!(reader.report.status, IndexStatus::Used { .. })
            && rejected != Some(&SidecarProblem::Deferred)
            && self.keeps_tables(reader)
    }

    /// Whether the reader's tables fit [`defer_sidecar`](LazyOptions::defer_sidecar):
    /// an open that writes no sidecar then keeps them on the heap, built
    /// on first use, instead of writing them to a scratch file.
    fn keeps_tables(&self, reader: &LazyTraceReader) -> bool {
        let tables = reader.report.containers as u64 * 4;
        self.defer_sidecar.is_some_and(|bound| tables <= bound)
    }

    /// The reader over a sidecar just written and `loaded` back (its
    /// tables mapped instead of held on the heap), with the report of
    /// `reader`; `reader` itself if the sidecar did not load, or if lookups
    /// resolved on demand would be lost.
    pub(in crate::read::lazy) fn mapped_back(
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

    pub(in crate::read::lazy) fn reader(
        &self,
        data: TraceBytes,
        mut lookup: Lookup,
        context: crate::format::ContextBuilder,
        report: IndexReport,
    ) -> LazyTraceReader {
        if let Some(window) = self.resident_window {
            lookup.release_reads(data.clone(), window);
        }
        let resident = self
            .resident_window
            .map(|window| Resident::new(window, data.clone(), lookup.mappings()));
        let id = trace_id(&data, &lookup);
        LazyTraceReader {
            context: context.build(data.clone()),
            data,
            reads: match resident {
                Some(_) => Reads::Copy,
                None => Reads::Lend,
            },
            resident,
            lookup,
            resolved: RwLock::new(HashMap::new()),
            cache: NodeCache::new(self.cache_bytes),
            report,
            id,
            growing: None,
            diff_map: None,
        }
    }
}

/// What a reader's nodes carry to say which trace they belong to: a hash
/// of the data's length and its threads in slot order, so that readers of
/// the same trace share nodes and readers of another refuse them.
fn trace_id(data: &TraceBytes, lookup: &Lookup) -> u32 {
    use std::hash::Hasher;
    let mut hasher = rustc_hash::FxHasher::default();
    hasher.write_u64(data.len());
    for slot in 0..lookup.blocks.thread_count() {
        let thread = lookup.blocks.thread(slot);
        hasher.write_i32(thread.thread.0);
        hasher.write_usize(thread.block_count);
        hasher.write_u64(thread.len);
    }
    let hash = hasher.finish();
    (hash ^ (hash >> 32)) as u32
}

/// Where a trace opened from a path keeps its sidecar, and the stamps of
/// its files taken before they were mapped.
pub(in crate::read::lazy) struct OnDisk {
    /// `None` without a sidecar directory.
    sidecar: Option<PathBuf>,
    stamped_at: u64,
    data_stamp: Stamp,
    index_stamp: Stamp,
}

impl OnDisk {
    pub(in crate::read::lazy) fn files<'a>(
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
    /// Opens the data file at `path` with its index `PATH.idx` and the
    /// default options.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        LazyOptions::default().open(path)
    }

    /// Options for opening a reader.
    pub fn options() -> LazyOptions {
        LazyOptions::default()
    }

    /// The recorder's index file of the data file `data`: its path plus
    /// `.idx`.
    pub fn index_path(data: &Path) -> std::path::PathBuf {
        index_path(data)
    }

    /// The lookup sidecar of the data file `data` in the sidecar directory
    /// `dir`: `NAME-HASH.ttlookup`, where `NAME` is the data file's name
    /// (made safe for a file name) and `HASH` a fixed 64-bit hash of its
    /// canonical path, so that each trace has one place and a moved or
    /// replaced trace is told apart by the sidecar's stamps, not its name.
    pub fn sidecar_path(dir: &Path, data: &Path) -> std::path::PathBuf {
        sidecar_path(dir, data)
    }

    /// What a sidecar of this reader records besides the lookups.
    pub(in crate::read::lazy) fn summary(&self) -> Summary<'_> {
        Summary {
            status: &self.report.status,
            references: self.report.references,
            repaired: self.report.repaired_containers,
            data: &self.report.data,
        }
    }

    /// Writes the sidecar of this reader's lookups (building every thread's
    /// table first); a failure is reported, not returned.
    fn write_sidecar(
        &self,
        path: &Path,
        on_disk: &OnDisk,
        index: Option<&TraceBytes>,
    ) -> SidecarOutcome {
        let files = on_disk.files(&self.data, index);
        match sidecar::write(path, &files, &self.lookup, &self.context, &self.summary()) {
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
        sidecar_path: None,
        sidecar_rejected: None,
        framing_checked: 0,
        scratch: false,
    }
}
