//! `Trace` (an open trace), its threads, searches and Arrow batches, and
//! the module's functions (`open`, `import_trace`, `export`, `print`,
//! `dump`).

use std::collections::VecDeque;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_pyarrow::IntoPyArrow;
use arrow_schema::{ArrowError, SchemaRef};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use tracetree::common::{EventId, LogicalOffset, ThreadId};
use tracetree::export::parquet::{ParquetOptions, RecordBatches};
use tracetree::import::SourceFormat;
use tracetree::model::{DiffStatus, TracepointType};
use tracetree::search::Hit as SearchHit;
use tracetree::{
    Error, IndexChoice, NodeHandle, PrintOptions, SearchOptions, StackFormat, StackOptions,
    TraceCache,
};

use crate::errors::{OrRaise, raise};
use crate::node::{Children, Node, Parent, wrap_of};
use crate::tree::{AnyNode, Reading, Tree, on_tree};
use tracetree::tree::Navigate;

/// Rows per batch of `to_arrow` unless asked: 65,536.
const DEFAULT_BATCH_ROWS: usize = 1 << 16;

/// A hit of a search, its node carried as either tree's.
type FoundHit = SearchHit<AnyNode>;

/// What a trace's nodes share with it: the reader (and its view), until
/// the trace is closed.
pub struct Shared {
    reader: RwLock<Option<Reading>>,
    /// The trace is read through the post-processing (`postprocess=True`).
    pub postprocess: bool,
}

impl Shared {
    /// The reader; `TraceError` once the trace is closed.
    pub fn reader(&self) -> PyResult<Reading> {
        match &*self.reader.read().unwrap_or_else(PoisonError::into_inner) {
            Some(reader) => Ok(reader.clone()),
            None => Err(raise("TraceError", "the trace is closed".to_string())),
        }
    }
}

/// An open trace: any format `tracetree` reads, a foreign one imported
/// once into the cache. Use it as a context manager, or call `close()`.
#[pyclass(frozen, module = "tracetree")]
pub struct Trace {
    pub(crate) shared: Arc<Shared>,
    /// The file the caller named.
    path: PathBuf,
    /// The v22 trace read: `path`, or its import in the cache.
    trace_path: PathBuf,
    /// The format it was imported from; `None` for a v22 trace.
    format: Option<SourceFormat>,
    status: &'static str,
    warnings: Vec<String>,
    /// Where its import and lookups are kept: a temporary folder
    /// (`no_cache`) is removed with the trace.
    _cache: TraceCache,
}

/// Opens `path` as the command line does with `--cache-dir`, `--no-cache`,
/// `--strict` and `--from`: a foreign trace imported into the cache (made
/// on first use), the lazy reader's lookups kept there.
fn open_trace(
    path: &Path,
    cache: TraceCache,
    strict: bool,
    from: Option<SourceFormat>,
    index: IndexChoice,
    postprocess: bool,
) -> tracetree::Result<Trace> {
    let cache = cache
        .strict(strict)
        .strict_flag("strict=True")
        .reading_as(from);
    let options = cache.lazy_options().index(index);
    let shown = path.display().to_string();
    let opened = cache.open(path, &shown, options, false)?;
    Ok(Trace {
        shared: Arc::new(Shared {
            reader: RwLock::new(Some(Reading::new(Arc::new(opened.reader), postprocess))),
            postprocess,
        }),
        path: path.to_path_buf(),
        trace_path: opened.trace.path,
        format: opened.trace.imported_from,
        status: opened.status.as_str(),
        warnings: opened.warnings,
        _cache: cache,
    })
}

/// The cache `cache_dir` and `no_cache` say an open keeps what it caches in.
fn trace_cache(cache_dir: Option<PathBuf>, no_cache: bool) -> tracetree::Result<TraceCache> {
    match cache_dir {
        _ if no_cache => TraceCache::temporary(),
        Some(dir) => TraceCache::in_folder(dir),
        None => TraceCache::per_user(),
    }
}

/// `from_` as a format: a foreign one, or `None` for `"v22"` and `None`.
fn source_format(from: Option<&str>) -> PyResult<Option<SourceFormat>> {
    match from {
        None => Ok(None),
        Some(name) => SourceFormat::from_str(name)
            .map(Some)
            .map_err(|problem| raise("InvalidArgumentError", format!("invalid from_: {problem}"))),
    }
}

/// Opens a trace (a v22 trace, a packed trace, a `.flow` recording, a
/// Blinky, TPTP or JFR trace) for reading, lazily: nothing is loaded
/// until asked for. With `postprocess=True`, its nodes, searches, `print`,
/// `dump` and call-stack exports read it as `tracetree print
/// --postprocess` shows it: the recorder's post-processing (Kotlin
/// `$default` and `access$` pairs as one call, synthetic accessors as
/// their field access, coverage accesses and empty loop iterations
/// dropped). Handles are the same either way.
#[pyfunction]
#[pyo3(signature = (path, *, cache_dir=None, no_cache=false, strict=false, from_=None, postprocess=false))]
pub fn open(
    py: Python<'_>,
    path: PathBuf,
    cache_dir: Option<PathBuf>,
    no_cache: bool,
    strict: bool,
    from_: Option<&str>,
    postprocess: bool,
) -> PyResult<Trace> {
    let from = source_format(from_)?;
    py.detach(|| {
        open_trace(
            &path,
            trace_cache(cache_dir, no_cache)?,
            strict,
            from,
            IndexChoice::UseOrRebuild,
            postprocess,
        )
    })
    .or_raise()
}

/// A thread argument: a `Thread` or its id.
pub fn thread_id(thread: &Bound<'_, PyAny>) -> PyResult<ThreadId> {
    if let Ok(thread) = thread.cast::<Thread>() {
        return Ok(ThreadId::new(thread.get().id));
    }
    Ok(ThreadId::new(thread.extract::<i32>()?))
}

/// A threads argument: one thread, or a list of them.
fn thread_ids(threads: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<ThreadId>>> {
    let Some(threads) = threads else {
        return Ok(None);
    };
    if let Ok(one) = thread_id(threads) {
        return Ok(Some(vec![one]));
    }
    let mut ids = Vec::new();
    for thread in threads.try_iter()? {
        ids.push(thread_id(&thread?)?);
    }
    ids.sort_unstable();
    ids.dedup();
    Ok(Some(ids))
}

/// The diff statuses of the changes `names` names (`added`, `removed`,
/// `edited`).
fn diff_statuses(names: Option<Vec<String>>) -> PyResult<Option<Vec<DiffStatus>>> {
    let Some(names) = names else {
        return Ok(None);
    };
    let mut statuses = Vec::new();
    for name in &names {
        let named = DiffStatus::changes_named(name).ok_or_else(|| {
            raise(
                "InvalidArgumentError",
                format!(
                    "invalid diff: no change {name:?} (changes: {})",
                    DiffStatus::CHANGE_NAMES.join(", ")
                ),
            )
        })?;
        statuses.extend_from_slice(named);
    }
    Ok(Some(statuses))
}

/// Tracepoint kinds by their `dump` names.
fn kinds(names: Option<Vec<String>>) -> PyResult<Option<Vec<TracepointType>>> {
    names
        .map(|names| {
            names
                .iter()
                .map(|name| {
                    TracepointType::from_name(name).ok_or_else(|| {
                        let known: Vec<&str> =
                            TracepointType::ALL.iter().map(|k| k.name()).collect();
                        raise(
                            "InvalidArgumentError",
                            format!(
                                "invalid kinds: no tracepoint kind {name:?} (kinds: {})",
                                known.join(", ")
                            ),
                        )
                    })
                })
                .collect()
        })
        .transpose()
}

/// A handle's text, `THREAD:OFFSET`.
pub fn handle_text(handle: NodeHandle) -> String {
    format!("{}:{}", handle.thread.get(), handle.offset.get())
}

/// The handle a text names.
fn parse_handle(text: &str) -> PyResult<NodeHandle> {
    let parsed = text.split_once(':').and_then(|(thread, offset)| {
        Some(NodeHandle {
            thread: ThreadId::new(thread.parse().ok()?),
            offset: LogicalOffset::new(offset.parse().ok()?),
        })
    });
    parsed.ok_or_else(|| {
        raise(
            "InvalidArgumentError",
            format!("invalid handle: {text:?} is not THREAD:OFFSET (a Node's handle)"),
        )
    })
}

#[pymethods]
impl Trace {
    /// The file this trace was opened from.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// The v22 trace read: the file itself, or its import in the cache.
    #[getter]
    fn trace_path(&self) -> PathBuf {
        self.trace_path.clone()
    }

    /// `"v22"`, or the format the trace was imported from (`"flow"`,
    /// `"jfr"`, …).
    #[getter]
    fn source_format(&self) -> &'static str {
        self.format.map_or("v22", SourceFormat::name)
    }

    /// `"complete"`; `"unfinished"` when calls or loops never ended (a
    /// recorder stopped early); `"damaged"` when data was left out or
    /// missing (then `warnings` says what and where).
    #[getter]
    fn status(&self) -> &'static str {
        self.status
    }

    /// Whether the trace is read through the post-processing
    /// (`open(..., postprocess=True)`).
    #[getter]
    fn postprocess(&self) -> bool {
        self.shared.postprocess
    }

    /// What the open found incomplete or damaged, one line each.
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }

    /// The recorded threads, ascending by id.
    #[getter]
    fn threads(&self) -> PyResult<Vec<Thread>> {
        let reader = self.shared.reader()?;
        Ok(reader
            .thread_ids()
            .into_iter()
            .map(|id| Thread {
                id: id.get(),
                name: reader.thread_name(id),
            })
            .collect())
    }

    /// The top-level tracepoints of `thread` (a `Thread` or its id): a lazy
    /// sequence, read a page at a time.
    fn roots(&self, thread: &Bound<'_, PyAny>) -> PyResult<Children> {
        let thread = thread_id(thread)?;
        let reader = self.shared.reader()?;
        if !reader.thread_ids().contains(&thread) {
            return Err(raise(
                "NoSuchNodeError",
                format!("no such thread: {}", thread.get()),
            ));
        }
        Ok(Children::new(
            Arc::clone(&self.shared),
            Parent::Thread(thread),
            0,
            None,
            0,
        ))
    }

    /// The node of the tracepoint with event id `event_id`, or `None`.
    /// Event ids are unique within a trace, so no thread is needed: the
    /// node's `thread` says where it was found.
    fn node_by_event(&self, py: Python<'_>, event_id: i32) -> PyResult<Option<Node>> {
        let reader = self.shared.reader()?;
        let found = py
            .detach(|| {
                on_tree!(self.shared.postprocess, reader, |tree| Ok(tree
                    .node_by_event(EventId::new(event_id))?
                    .map(wrap_of(tree))))
            })
            .or_raise()?;
        Ok(found.map(|node| Node::new(Arc::clone(&self.shared), node, None)))
    }

    /// The node a `Node.handle` names (from this trace, another process,
    /// or an earlier open of the same trace); `NoSuchNodeError` when none
    /// starts there.
    fn node(&self, handle: &str) -> PyResult<Node> {
        let handle = parse_handle(handle)?;
        let reader = self.shared.reader()?;
        let node = on_tree!(self.shared.postprocess, reader, |tree| tree
            .resolve_handle(handle)
            .map(wrap_of(tree)))
        .or_raise()?;
        Ok(Node::new(Arc::clone(&self.shared), node, None))
    }

    /// Finds tracepoints by name (of the method, field or variable), or
    /// with `text=True` by their printed line (an empty pattern matches
    /// every tracepoint); only `kinds` (as `Node.kind` names them),
    /// `threads` and, in a diff trace, the changes `diff` names (`added`,
    /// `removed`, `edited`) when given. An iterator of `Hit`s, threads
    /// ascending, each in event order, each handed over as soon as it is
    /// found (the search starts at the first `next`). It runs with the GIL
    /// released and stops on Ctrl-C (`KeyboardInterrupt`). `max` bounds
    /// the hits kept (all when `None`; `total` counts every hit).
    #[pyo3(signature = (pattern=String::new(), *, text=false, kinds=None, diff=None, threads=None, ignore_case=false, max=None))]
    #[allow(clippy::too_many_arguments)]
    fn search(
        &self,
        pattern: String,
        text: bool,
        kinds: Option<Vec<String>>,
        diff: Option<Vec<String>>,
        threads: Option<&Bound<'_, PyAny>>,
        ignore_case: bool,
        max: Option<usize>,
    ) -> PyResult<SearchHits> {
        let mut options = SearchOptions::new(pattern);
        options.ignore_case = ignore_case;
        options.text = text;
        options.threads = thread_ids(threads)?;
        options.kinds = self::kinds(kinds)?;
        options.diff = diff_statuses(diff)?;
        options.max = max.unwrap_or(usize::MAX);
        Ok(SearchHits {
            shared: Arc::clone(&self.shared),
            state: Mutex::new(SearchState::Ready(Box::new(options))),
        })
    }

    /// The rows `tracetree export --format parquet` writes, as a
    /// `pyarrow.RecordBatchReader` (the same schema), streamed batch by
    /// batch through the Arrow C stream interface: memory stays at a few
    /// batches whatever the trace's size. Only `thread` (a `Thread`, an id
    /// or a list of them), only `root`'s subtree (a `Node`), only
    /// `columns` when given.
    #[pyo3(signature = (thread=None, root=None, columns=None, *, batch_rows=DEFAULT_BATCH_ROWS))]
    fn to_arrow<'py>(
        &self,
        py: Python<'py>,
        thread: Option<&Bound<'py, PyAny>>,
        root: Option<PyRef<'py, Node>>,
        columns: Option<Vec<String>>,
        batch_rows: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        if self.shared.postprocess {
            return Err(raise(
                "InvalidArgumentError",
                "to_arrow reads a trace as recorded: open it without postprocess=True".to_string(),
            ));
        }
        let reader = self.shared.reader()?;
        // The batches are the export's rows; no partition is named.
        let mut options = ParquetOptions::new("", self.source_format());
        options.row_group_rows = batch_rows;
        options.threads = thread_ids(thread)?;
        options.root = root.map(|node| node.lazy_node("root")).transpose()?;
        options.columns = columns;
        let batches = RecordBatches::new(reader.reader, &options).or_raise()?;
        let stream: Box<dyn RecordBatchReader + Send> = Box::new(Batches(batches));
        stream.into_pyarrow(py)
    }

    /// Releases the trace's files; its nodes cannot be read afterwards.
    fn close(&self) {
        *self
            .shared
            .reader
            .write()
            .unwrap_or_else(PoisonError::into_inner) = None;
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, _exc: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close();
        false
    }

    fn __repr__(&self) -> String {
        let threads = match self.shared.reader() {
            Ok(reader) => format!("{} threads", reader.thread_ids().len()),
            Err(_) => "closed".to_string(),
        };
        let mut text = format!("<Trace {:?} {threads}", self.path.display().to_string());
        if self.format.is_some() {
            text += &format!(", from {}", self.source_format());
        }
        if self.status != "complete" {
            text += &format!(", {}", self.status);
        }
        if self.shared.postprocess {
            text += ", postprocessed";
        }
        text + ">"
    }
}

/// The export's batches as Arrow's record batch reader.
struct Batches(RecordBatches);

impl Iterator for Batches {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        Some(
            self.0
                .next()?
                .map_err(|error| ArrowError::ExternalError(Box::new(error))),
        )
    }
}

impl RecordBatchReader for Batches {
    fn schema(&self) -> SchemaRef {
        self.0.schema()
    }
}

/// A recorded thread.
#[pyclass(frozen, get_all, module = "tracetree")]
pub struct Thread {
    /// The thread's id, as `dump` and the Parquet export give it.
    pub id: i32,
    /// Its name, when the recorder wrote one.
    pub name: Option<String>,
}

#[pymethods]
impl Thread {
    fn __repr__(&self) -> String {
        match &self.name {
            Some(name) => format!("<Thread {} {name:?}>", self.id),
            None => format!("<Thread {}>", self.id),
        }
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<Thread>()
            .is_ok_and(|other| other.get().id == self.id && other.get().name == self.name)
    }

    fn __hash__(&self) -> u64 {
        self.id as u32 as u64
    }
}

/// Where a search is.
enum SearchState {
    /// Not started yet.
    Ready(Box<SearchOptions>),
    /// Under way on its own thread, handing hits over as it finds them.
    Streaming(Streaming),
    /// Waited on by another Python thread.
    Busy,
    /// Ended: the hits not yet taken, and the counts.
    Done {
        hits: VecDeque<FoundHit>,
        total: u64,
        scanned: u64,
    },
    /// Stopped by an exception.
    Failed,
}

/// What a search's thread hands over.
enum Found {
    /// A hit, in order: threads ascending, each in event order.
    Hit(FoundHit),
    /// The end: every hit's count and the tracepoints looked at, or why
    /// it failed.
    End(tracetree::Result<(u64, u64)>),
}

/// A search under way.
struct Streaming {
    /// Its hits and its end, a bounded queue: the search waits while the
    /// caller does not take them.
    found: Receiver<Found>,
    /// Hits taken from the queue and not yet handed out (`total` and
    /// `scanned` read the queue to its end).
    pending: VecDeque<FoundHit>,
    stop: Arc<AtomicBool>,
}

impl Drop for Streaming {
    fn drop(&mut self) {
        // A search nobody reads any more ends at its next check; its
        // thread also ends when a hit finds the queue gone.
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Hits a search's thread may hand over before the caller takes them.
const QUEUED_HITS: usize = 1024;

/// The hits of `Trace.search`: an iterator whose search starts when the
/// first hit is asked for and hands hits over as it finds them.
#[pyclass(module = "tracetree")]
pub struct SearchHits {
    shared: Arc<Shared>,
    state: Mutex<SearchState>,
}

impl SearchHits {
    /// The state, its lock not kept.
    fn lock(&self) -> std::sync::MutexGuard<'_, SearchState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The next hit (`None` at the end), starting the search if it has
    /// not started; with `drain`, reads the queue to its end first, so
    /// that the counts are known. This thread waits with the GIL
    /// released, checking for signals: one that raises (Ctrl-C) stops
    /// the search and is raised.
    fn next(&self, py: Python<'_>, drain: bool) -> PyResult<Option<FoundHit>> {
        // The state is taken out while this thread waits (the GIL released):
        // another thread asking meanwhile is told the search is busy.
        let taken = std::mem::replace(&mut *self.lock(), SearchState::Busy);
        let mut streaming = match taken {
            SearchState::Ready(options) => match self.start(*options) {
                Ok(streaming) => streaming,
                Err(error) => {
                    *self.lock() = SearchState::Failed;
                    return Err(error);
                }
            },
            SearchState::Streaming(streaming) => streaming,
            SearchState::Busy => {
                return Err(raise(
                    "TraceError",
                    "this search is being read in another thread".to_string(),
                ));
            }
            SearchState::Failed => {
                *self.lock() = SearchState::Failed;
                return Err(raise(
                    "TraceError",
                    "this search was stopped; start another".to_string(),
                ));
            }
            SearchState::Done {
                mut hits,
                total,
                scanned,
            } => {
                let hit = if drain { None } else { hits.pop_front() };
                *self.lock() = SearchState::Done {
                    hits,
                    total,
                    scanned,
                };
                return Ok(hit);
            }
        };
        loop {
            if !drain && let Some(hit) = streaming.pending.pop_front() {
                *self.lock() = SearchState::Streaming(streaming);
                return Ok(Some(hit));
            }
            // Moved to the waiting side and back: a queue's receiver is
            // not shared between threads.
            let got;
            (streaming, got) = py.detach(move || {
                let got = streaming.found.recv_timeout(Duration::from_millis(50));
                (streaming, got)
            });
            match got {
                Ok(Found::Hit(hit)) => streaming.pending.push_back(hit),
                Ok(Found::End(Ok((total, scanned)))) => {
                    let mut hits = std::mem::take(&mut streaming.pending);
                    let hit = if drain { None } else { hits.pop_front() };
                    *self.lock() = SearchState::Done {
                        hits,
                        total,
                        scanned,
                    };
                    return Ok(hit);
                }
                Ok(Found::End(Err(error))) => {
                    *self.lock() = SearchState::Failed;
                    return Err(crate::errors::to_py(error));
                }
                Err(RecvTimeoutError::Timeout) => {
                    if let Err(signal) = py.check_signals() {
                        *self.lock() = SearchState::Failed;
                        return Err(signal);
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    *self.lock() = SearchState::Failed;
                    let error = Error::Internal("the search ended without a result".into());
                    return Err(crate::errors::to_py(error));
                }
            }
        }
    }

    /// Starts the search of `options` on a thread of its own: one thread
    /// of the trace after another, ascending, so that hits come in order
    /// and the first ones at once.
    fn start(&self, mut options: SearchOptions) -> PyResult<Streaming> {
        let reader = self.shared.reader()?;
        let known = reader.thread_ids();
        let threads = match options.threads.take() {
            Some(threads) => {
                if let Some(unknown) = threads.iter().find(|t| !known.contains(t)) {
                    return Err(raise(
                        "InvalidArgumentError",
                        format!("no thread {} in this trace", unknown.get()),
                    ));
                }
                threads
            }
            None => known,
        };
        let stop = Arc::new(AtomicBool::new(false));
        options.stop = Some(Arc::clone(&stop));
        let (hand, found) = std::sync::mpsc::sync_channel(QUEUED_HITS);
        let stopping = Arc::clone(&stop);
        let postprocess = self.shared.postprocess;
        std::thread::Builder::new()
            .name("tracetree-search".into())
            .spawn(move || {
                let on_hit = |hit| {
                    if hand.send(Found::Hit(hit)).is_err() {
                        stopping.store(true, Ordering::Relaxed);
                    }
                };
                let ended = on_tree!(postprocess, reader, |tree| search_in_turn(
                    tree, &options, &threads, &on_hit
                ));
                let _ = hand.send(Found::End(ended));
            })
            .map_err(|e| crate::errors::to_py(Error::io(std::env::temp_dir(), e)))?;
        Ok(Streaming {
            found,
            pending: VecDeque::new(),
            stop,
        })
    }

    /// The counts, once the search has run to its end.
    fn counts(&self, py: Python<'_>) -> PyResult<(u64, u64)> {
        self.next(py, true)?;
        match &*self.lock() {
            SearchState::Done { total, scanned, .. } => Ok((*total, *scanned)),
            _ => Ok((0, 0)),
        }
    }
}

/// Searches `threads` of `reader` one after another, handing each hit to
/// `on_hit`, at most `options.max` in all, keeping none; every hit's
/// count and the tracepoints looked at.
fn search_in_turn<T: Navigate + Tree>(
    reader: &T,
    options: &SearchOptions,
    threads: &[ThreadId],
    on_hit: &(dyn Fn(FoundHit) + Sync),
) -> tracetree::Result<(u64, u64)> {
    let (mut total, mut scanned, mut left) = (0, 0, options.max);
    for &thread in threads {
        if options
            .stop
            .as_ref()
            .is_some_and(|s| s.load(Ordering::Relaxed))
        {
            break;
        }
        let mut one = options.clone();
        one.threads = Some(vec![thread]);
        one.max = left;
        let handed = AtomicUsize::new(0);
        let found = one.search_each(reader, &|_| {}, &|hit: SearchHit<T::Node>| {
            handed.fetch_add(1, Ordering::Relaxed);
            on_hit(SearchHit {
                thread: hit.thread,
                event: hit.event,
                node: T::wrap(hit.node),
                depth: hit.depth,
                path: hit.path,
                line: hit.line,
            });
        })?;
        total += found.total;
        scanned += found.scanned;
        left -= handed.into_inner().min(left);
    }
    Ok((total, scanned))
}

#[pymethods]
impl SearchHits {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Hit>> {
        let Some(hit) = self.next(py, false)? else {
            return Ok(None);
        };
        Ok(Some(Hit {
            node: Py::new(
                py,
                Node::new(Arc::clone(&self.shared), hit.node, Some(hit.depth)),
            )?,
            thread: hit.thread.get(),
            event_id: hit.event.get(),
            depth: hit.depth,
            path: hit.path.iter().map(|name| name.to_string()).collect(),
            line: hit.line,
        }))
    }

    /// Every hit, kept or not (runs the search to its end).
    #[getter]
    fn total(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.counts(py)?.0)
    }

    /// Tracepoints looked at (runs the search to its end).
    #[getter]
    fn scanned(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.counts(py)?.1)
    }
}

/// A tracepoint a search found.
#[pyclass(frozen, get_all, module = "tracetree")]
pub struct Hit {
    /// Its node.
    pub node: Py<Node>,
    /// Its thread's id.
    pub thread: i32,
    /// Its event id.
    pub event_id: i32,
    /// Its depth in its thread's tree (0 at the top).
    pub depth: usize,
    /// The names of the calls and loops above it, outermost first.
    pub path: Vec<String>,
    /// Its line as `print` shows it.
    pub line: String,
}

#[pymethods]
impl Hit {
    fn __repr__(&self) -> String {
        format!(
            "<Hit thread={} #{} depth={}: {}>",
            self.thread,
            self.event_id,
            self.depth,
            crate::node::shorten(&self.line)
        )
    }
}

/// What a module function reads: a trace's reader, whether it is read
/// through the post-processing, its source format and the v22 trace read.
struct Read {
    reader: Reading,
    postprocess: bool,
    format: String,
    path: PathBuf,
}

/// The reader of `trace`: an open `Trace`'s, or a path opened to be read
/// through (as `print` and `dump` open on the command line), with the
/// default cache; read as `postprocess` says, else as the `Trace` was
/// opened (a path: as recorded).
fn reader_of(
    py: Python<'_>,
    trace: &Bound<'_, PyAny>,
    postprocess: Option<bool>,
) -> PyResult<Read> {
    if let Ok(trace) = trace.cast::<Trace>() {
        let trace = trace.get();
        return Ok(Read {
            reader: trace.shared.reader()?,
            postprocess: postprocess.unwrap_or(trace.shared.postprocess),
            format: trace.source_format().to_string(),
            path: trace.trace_path.clone(),
        });
    }
    let path: PathBuf = trace.extract()?;
    let opened = py
        .detach(|| {
            open_trace(
                &path,
                TraceCache::per_user()?,
                false,
                None,
                IndexChoice::Verify,
                false,
            )
        })
        .or_raise()?;
    Ok(Read {
        reader: opened.shared.reader()?,
        postprocess: postprocess.unwrap_or(false),
        format: opened.source_format().to_string(),
        path: opened.trace_path.clone(),
    })
}

/// Writes a file through `write`, buffered.
fn write_to(
    out: &Path,
    write: impl FnOnce(&mut BufWriter<std::fs::File>) -> tracetree::Result<()>,
) -> tracetree::Result<()> {
    let file = std::fs::File::create(out).map_err(|e| Error::io(out, e))?;
    let mut writer = BufWriter::new(file);
    write(&mut writer)?;
    writer.flush().map_err(|e| Error::io(out, e))
}

/// Writes `trace` (a `Trace`, or a path to open) as `tracetree print`
/// prints it into the file `out`: the reference printer's text;
/// `postprocess` (default: as the `Trace` was opened) prints it as `print
/// --postprocess` does.
#[pyfunction]
#[pyo3(signature = (trace, out, *, verbose=false, threads=None, max_depth=None, event_ids=false, postprocess=None))]
#[allow(clippy::too_many_arguments)]
pub fn print(
    py: Python<'_>,
    trace: &Bound<'_, PyAny>,
    out: PathBuf,
    verbose: bool,
    threads: Option<&Bound<'_, PyAny>>,
    max_depth: Option<usize>,
    event_ids: bool,
    postprocess: Option<bool>,
) -> PyResult<()> {
    let read = reader_of(py, trace, postprocess)?;
    let mut options = PrintOptions::default();
    options.verbose = verbose;
    options.threads = thread_ids(threads)?;
    options.max_depth = max_depth;
    options.event_ids = event_ids;
    py.detach(|| {
        write_to(&out, |w| {
            on_tree!(read.postprocess, read.reader, |tree| {
                options.print(tree, w)
            })
        })
    })
    .or_raise()
}

/// Writes `trace` (a `Trace`, or a path to open) as `tracetree dump`
/// does into the file `out`: one JSON object per tracepoint (`thread`,
/// `depth`, `event_id`, `kind`, `children`, `line`, `file`, `method`, …);
/// `postprocess` as for `print`.
#[pyfunction]
#[pyo3(signature = (trace, out, *, threads=None, postprocess=None))]
pub fn dump(
    py: Python<'_>,
    trace: &Bound<'_, PyAny>,
    out: PathBuf,
    threads: Option<&Bound<'_, PyAny>>,
    postprocess: Option<bool>,
) -> PyResult<()> {
    let read = reader_of(py, trace, postprocess)?;
    let threads = thread_ids(threads)?;
    py.detach(|| {
        write_to(&out, |w| {
            on_tree!(read.postprocess, read.reader, |tree| {
                tracetree::write_jsonl(tree, threads.as_deref(), w)
            })
        })
    })
    .or_raise()
}

/// Exports `trace` (a `Trace`, or a path to open) as `tracetree export`
/// does: `format` `"parquet"` writes the dataset folder `out`
/// (`out/trace=NAME/…`); `"folded"`, `"speedscope"`, `"chrome"` and
/// `"perfetto"` write call stacks into the file `out`. `root` (an event
/// id) limits call stacks to one call's subtree. Call stacks of a
/// `Trace` opened with `postprocess=True` are its view's; Parquet reads a
/// trace as recorded.
#[pyfunction]
#[pyo3(signature = (trace, out, *, format, threads=None, root=None, name=None, force=false))]
#[allow(clippy::too_many_arguments)]
pub fn export(
    py: Python<'_>,
    trace: &Bound<'_, PyAny>,
    out: PathBuf,
    format: &str,
    threads: Option<&Bound<'_, PyAny>>,
    root: Option<i32>,
    name: Option<String>,
    force: bool,
) -> PyResult<()> {
    let read = reader_of(py, trace, None)?;
    let (reader, source) = (&read.reader, read.format.clone());
    let threads = thread_ids(threads)?;
    let name = name.unwrap_or_else(|| {
        let path = match trace.cast::<Trace>() {
            Ok(trace) => trace.get().path.clone(),
            Err(_) => trace.extract::<PathBuf>().unwrap_or_default(),
        };
        path.file_stem()
            .map_or_else(|| "trace".to_string(), |s| s.to_string_lossy().into_owned())
    });
    if format == "parquet" {
        if read.postprocess {
            return Err(raise(
                "InvalidArgumentError",
                "invalid format: parquet exports a trace as recorded; open it without \
                 postprocess=True"
                    .to_string(),
            ));
        }
        if root.is_some() {
            return Err(raise(
                "InvalidArgumentError",
                "invalid root: it is for the call-stack formats, not parquet".to_string(),
            ));
        }
        let mut options = ParquetOptions::new(name, source);
        options.threads = threads;
        options.force = force;
        return py
            .detach(|| options.export(reader, &out, &|_| {}).map(|_| ()))
            .or_raise();
    }
    let stack_format = [
        StackFormat::Folded,
        StackFormat::Speedscope,
        StackFormat::Chrome,
        StackFormat::Perfetto,
    ]
    .into_iter()
    .find(|f| f.name() == format)
    .ok_or_else(|| {
        raise(
            "InvalidArgumentError",
            format!(
                "invalid format: {format:?} (formats: parquet, folded, speedscope, chrome, perfetto)"
            ),
        )
    })?;
    let mut options = StackOptions::new(stack_format, name);
    options.threads = threads;
    options.root = root.map(EventId::new);
    options.force = force;
    py.detach(|| {
        on_tree!(read.postprocess, reader, |tree| {
            options.export(tree, &out, &|_| {})
        })
        .map(|_| ())
    })
    .or_raise()
}

/// Imports the foreign trace `source` (a `.flow` recording, Blinky, TPTP,
/// JFR, a packed trace) into the v22 trace `output` (and `output.idx`),
/// its format found from its layout unless `from_` names it. Returns what
/// the import found: a dict of counts, `damage` and `warnings`.
#[pyfunction]
#[pyo3(signature = (source, output, *, from_=None, samples=false))]
pub fn import_trace<'py>(
    py: Python<'py>,
    source: PathBuf,
    output: PathBuf,
    from_: Option<&str>,
    samples: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let from = source_format(from_)?;
    let mut options = tracetree::import::ImportOptions::default();
    options.samples = samples;
    let summary = py
        .detach(|| options.import_file(&source, &output, from, &|_| {}))
        .or_raise()?;
    let dict = PyDict::new(py);
    dict.set_item("threads", summary.threads)?;
    dict.set_item("calls", summary.calls)?;
    dict.set_item("unfinished_calls", summary.unfinished_calls)?;
    dict.set_item("skipped_exits", summary.skipped_exits)?;
    dict.set_item("damage", summary.damage.clone())?;
    dict.set_item("warnings", summary.warnings.clone())?;
    dict.set_item("mapped", summary.mapped.clone())?;
    dict.set_item("skipped", summary.skipped.clone())?;
    dict.set_item("problem", summary.problem())?;
    Ok(dict)
}

/// Diffs `left` against `right` (each a `Trace` or a path) as the
/// recorder's trace diff does (`tracetree diff`) and writes the packed diff
/// at `out`. `match_by` pairs threads by `"name"` or `"index"`; `map` pairs
/// them by hand (names to names, or indices to indices with `"index"`);
/// `unmatched` is `"diff"`, `"skip"` or `"error"`. Returns the summary: a
/// dict with `tracepoints`, `bytes`, `warnings` and per diff thread its
/// `thread`, `name`, `unchanged`, `removed`, `added` and `edited` counts.
#[pyfunction]
#[pyo3(signature = (left, right, out, *, match_by="name", map=None, start_threads=false,
    only_start_threads=false, unmatched="diff", allow_diffs=false))]
#[allow(clippy::too_many_arguments)]
pub fn diff<'py>(
    py: Python<'py>,
    left: &Bound<'py, PyAny>,
    right: &Bound<'py, PyAny>,
    out: PathBuf,
    match_by: &str,
    map: Option<&Bound<'py, PyDict>>,
    start_threads: bool,
    only_start_threads: bool,
    unmatched: &str,
    allow_diffs: bool,
) -> PyResult<Bound<'py, PyDict>> {
    use tracetree::diff::{ThreadMatching, UnmatchedThreads};
    let by_index = match match_by {
        "name" => false,
        "index" => true,
        other => {
            return Err(raise(
                "InvalidArgumentError",
                format!("invalid match_by: {other:?} (name or index)"),
            ));
        }
    };
    let matching = match map {
        None if by_index => ThreadMatching::ByIndex,
        None => ThreadMatching::ByName,
        Some(map) if by_index => ThreadMatching::IndexMap(map.extract()?),
        Some(map) => ThreadMatching::NameMap(map.extract()?),
    };
    let unmatched = match unmatched {
        "diff" => UnmatchedThreads::Diff,
        "skip" => UnmatchedThreads::Skip,
        "error" => UnmatchedThreads::Error,
        other => {
            return Err(raise(
                "InvalidArgumentError",
                format!("invalid unmatched: {other:?} (diff, skip or error)"),
            ));
        }
    };
    let mut options = tracetree::DiffOptions::default();
    options.matching = matching;
    options.start_threads = start_threads;
    options.only_start_threads = only_start_threads;
    options.unmatched = unmatched;
    options.allow_diffs = allow_diffs;
    let Read {
        reader: left_reader,
        path: left_path,
        ..
    } = reader_of(py, left, None)?;
    let Read {
        reader: right_reader,
        path: right_path,
        ..
    } = reader_of(py, right, None)?;
    let name = |side: &Bound<'py, PyAny>, path: &Path| {
        side.extract::<PathBuf>()
            .unwrap_or_else(|_| path.to_path_buf())
            .display()
            .to_string()
    };
    let (left_name, right_name) = (name(left, &left_path), name(right, &right_path));
    let summary = py
        .detach(|| {
            tracetree::diff_traces(
                tracetree::DiffInput::from_file(&*left_reader, &left_name, &left_path)?,
                tracetree::DiffInput::from_file(&*right_reader, &right_name, &right_path)?,
                &options,
                &out,
            )
        })
        .or_raise()?;
    let result = PyDict::new(py);
    result.set_item("tracepoints", summary.tracepoints)?;
    result.set_item("bytes", summary.bytes)?;
    result.set_item("warnings", summary.warnings.clone())?;
    let threads = summary
        .threads
        .iter()
        .map(|thread| {
            let entry = PyDict::new(py);
            entry.set_item("thread", thread.thread)?;
            entry.set_item("name", &thread.name)?;
            entry.set_item("unchanged", thread.unchanged)?;
            entry.set_item("removed", thread.removed)?;
            entry.set_item("added", thread.added)?;
            entry.set_item("edited", thread.edited)?;
            Ok(entry)
        })
        .collect::<PyResult<Vec<_>>>()?;
    result.set_item("threads", threads)?;
    Ok(result)
}
