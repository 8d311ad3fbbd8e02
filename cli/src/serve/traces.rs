//! The traces a session has open, by id, and the node handles clients
//! keep. An open trace holds the tree it is served as ([`ServedTree`]: its
//! reader, or one post-processed view of it made when it is opened, so
//! the view's answers about reference objects are worked out once for
//! every request), swapped for a new one when a followed trace grows
//! (requests already running finish on the old one), and the cache it was
//! opened through (its scratch folder, with `noCache`, lives as long as
//! the trace is open). At most
//! [`Limits::max_open_traces`](super::protocol::Limits) are open at once.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use tracetree::common::{LogicalOffset, ThreadId};
use tracetree::tree::{Navigate, Postprocessed};
use tracetree::{LazyTraceReader, NodeHandle};

use super::errors::{ServeError, code};
use crate::cache::Cache;

/// The tree a trace is served as: its reader, or its reader seen through
/// the recorder's post-processing. One per reader, shared by the requests.
#[derive(Clone)]
pub enum ServedTree {
    Raw(Arc<LazyTraceReader>),
    Postprocessed(Arc<Postprocessed<Arc<LazyTraceReader>>>),
}

impl ServedTree {
    /// `reader`, through the post-processing when `postprocess` is set.
    pub fn new(reader: Arc<LazyTraceReader>, postprocess: bool) -> Self {
        if postprocess {
            ServedTree::Postprocessed(Arc::new(Postprocessed::new(reader)))
        } else {
            ServedTree::Raw(reader)
        }
    }

    /// The reader under the tree.
    pub fn reader(&self) -> &Arc<LazyTraceReader> {
        match self {
            ServedTree::Raw(reader) => reader,
            ServedTree::Postprocessed(view) => view.inner(),
        }
    }
}

/// One open trace.
pub struct OpenTrace {
    /// Its id in the session (`t1`, `t2`, …).
    pub id: String,
    /// The file as the client named it.
    pub path: PathBuf,
    served: RwLock<ServedTree>,
    /// Kept for as long as the trace is open: a `noCache` open's imports
    /// live in its scratch folder.
    _cache: Cache,
    /// Opened as a growing view (`options.growing`).
    pub growing: bool,
    /// Served through the recorder's post-processing
    /// (`options.postprocess`).
    pub postprocess: bool,
    /// Whether a follower reports its growth (`trace/follow`).
    pub followed: AtomicBool,
    /// Set when it is closed: its follower stops.
    closed: AtomicBool,
}

impl OpenTrace {
    /// The tree it is served as now.
    pub fn served(&self) -> ServedTree {
        self.served
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The reader of its current view.
    pub fn reader(&self) -> Arc<LazyTraceReader> {
        Arc::clone(self.served().reader())
    }

    /// Moves the trace onto `reader` (a refresh of its growing view), and
    /// gives it the tree it is served as; returns that tree.
    pub fn replace_reader(&self, reader: Arc<LazyTraceReader>) -> ServedTree {
        let served = ServedTree::new(reader, self.postprocess);
        *self.served.write().unwrap_or_else(|e| e.into_inner()) = served.clone();
        served
    }

    /// Whether it was closed (a request that got it before still runs).
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }

    /// `trace t1 (PATH)`, for messages.
    pub fn about(&self) -> String {
        format!("trace {} ({})", self.id, self.path.display())
    }
}

/// The session's open traces.
pub struct Traces {
    open: Mutex<BTreeMap<String, Arc<OpenTrace>>>,
    next_id: AtomicU64,
    max_open: usize,
}

impl Traces {
    /// No trace open yet; at most `max_open` at once.
    pub fn new(max_open: usize) -> Self {
        Traces {
            open: Mutex::new(BTreeMap::new()),
            next_id: AtomicU64::new(1),
            max_open,
        }
    }

    fn map(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Arc<OpenTrace>>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether another trace may be opened now.
    pub fn check_room(&self, method: &str) -> Result<(), ServeError> {
        match self.map().len() {
            open if open >= self.max_open => Err(full(method, open)),
            _ => Ok(()),
        }
    }

    /// Adds an opened trace served as `served`, giving it its id.
    pub fn add(
        &self,
        method: &str,
        path: PathBuf,
        served: ServedTree,
        cache: Cache,
        growing: bool,
    ) -> Result<Arc<OpenTrace>, ServeError> {
        let mut open = self.map();
        if open.len() >= self.max_open {
            return Err(full(method, open.len()));
        }
        let id = format!("t{}", self.next_id.fetch_add(1, Ordering::Relaxed));
        let trace = Arc::new(OpenTrace {
            id: id.clone(),
            path,
            postprocess: matches!(served, ServedTree::Postprocessed(_)),
            served: RwLock::new(served),
            _cache: cache,
            growing,
            followed: AtomicBool::new(false),
            closed: AtomicBool::new(false),
        });
        open.insert(id, Arc::clone(&trace));
        Ok(trace)
    }

    /// The open trace `id`, else `UNKNOWN_TRACE`.
    pub fn get(&self, method: &str, id: &str) -> Result<Arc<OpenTrace>, ServeError> {
        self.map()
            .get(id)
            .cloned()
            .ok_or_else(|| unknown(method, id))
    }

    /// Closes trace `id`; its reader goes when the last request on it ends.
    pub fn close(&self, method: &str, id: &str) -> Result<(), ServeError> {
        let trace = self.map().remove(id).ok_or_else(|| unknown(method, id))?;
        trace.closed.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// Closes every trace (the session ends).
    pub fn close_all(&self) {
        for (_, trace) in std::mem::take(&mut *self.map()) {
            trace.closed.store(true, Ordering::Relaxed);
        }
    }
}

/// The error for one trace more than the limit, `open` being open.
fn full(method: &str, open: usize) -> ServeError {
    ServeError::new(
        code::LIMIT_REACHED,
        format!(
            "{method}: {open} traces are open, the most this server keeps \
             (limits.maxOpenTraces): close one first"
        ),
    )
}

fn unknown(method: &str, id: &str) -> ServeError {
    ServeError::new(
        code::UNKNOWN_TRACE,
        format!("{method}: no open trace {id:?} (never opened, or closed)"),
    )
    .with("trace", id)
}

/// A handle as clients see it: `THREAD:OFFSET`.
pub fn handle_text(handle: NodeHandle) -> String {
    format!("{}:{}", handle.thread.get(), handle.offset.get())
}

/// The handle `text` spells, else `INVALID_PARAMS` naming `field`.
pub fn parse_handle(method: &str, field: &str, text: &str) -> Result<NodeHandle, ServeError> {
    let parsed = text.split_once(':').and_then(|(thread, offset)| {
        Some(NodeHandle {
            thread: ThreadId::new(thread.parse().ok()?),
            offset: LogicalOffset::new(offset.parse().ok()?),
        })
    });
    parsed.ok_or_else(|| {
        ServeError::invalid_params(
            method,
            field,
            format!("{text:?} is not a node handle (THREAD:OFFSET, as the server gave it)"),
        )
    })
}

/// The node `text` names in `trace`, else `INVALID_PARAMS` (not a handle)
/// or `NO_SUCH_NODE` (a stale handle: no tracepoint starts there).
pub fn resolve<V: Navigate>(
    method: &str,
    trace: &OpenTrace,
    reader: &V,
    field: &str,
    text: &str,
) -> Result<V::Node, ServeError> {
    let handle = parse_handle(method, field, text)?;
    reader.resolve_handle(handle).map_err(|error| {
        let mut error =
            ServeError::from_library(method, &format!("{}, node {text}", trace.about()), &error);
        if error.code == code::INVALID_PARAMS || error.code == code::INTERNAL_ERROR {
            error.code = code::NO_SUCH_NODE;
        }
        error.with("trace", trace.id.as_str()).with("node", text)
    })
}
