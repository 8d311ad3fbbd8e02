//! [`LazyTraceReader`]: random access to a trace of any size. It maps the
//! data and index files, keeps only lookup structures in memory (the block
//! table, the reference objects' locations, one `u32` per container), and
//! decodes a node, or a call's children, when asked. Decoded nodes and child
//! lists live in a byte-bounded LRU cache and reload transparently after
//! eviction.
//!
//! Loading a call's children scans only that call's own content: each child
//! call's subtree is skipped by looking up its content range, so
//! grandchildren are never decoded. A call with millions of children is
//! paged ([`LazyTraceReader::children_range`] scans only the pages it needs).
//!
//! The reader is `Send + Sync`: any number of threads may expand nodes at
//! once.
//!
//! ```no_run
//! use tracetree::read::LazyTraceReader;
//!
//! let reader = LazyTraceReader::options()
//!     .cache_bytes(16 << 20)
//!     .open("program.trace")?;
//! println!("index: {:?}", reader.report().status);
//! for thread in reader.thread_ids() {
//!     for root in reader.roots(thread)? {
//!         let first = reader.children_range(root, 0, 100)?;
//!         for child in first {
//!             println!("{:?}", reader.node(child)?.tracepoint().tracepoint_type());
//!         }
//!     }
//! }
//! # Ok::<(), tracetree::Error>(())
//! ```

mod cache;
pub(crate) mod stream;
mod walk;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use rayon::prelude::*;

pub use cache::{CacheStats, ContentRange, NodeData};

use crate::error::{Error, Result};
use crate::format::offset::{EventId, LogicalOffset, ThreadId};
use crate::format::{DATA_MAGIC, Object, ObjectKind, check_file_header};
use crate::model::{Footer, TraceContext, Tracepoint, TracepointHeader, TracepointType};
use crate::read::block_table::BlockTable;
use crate::read::containers::{CellView, ContainerTable};
use crate::read::index::{
    IndexProblem, IndexReport, IndexStatus, LoadedIndex, Lookup, index_path, load_index,
    rebuild_lookup, rebuild_to_scratch,
};
use crate::read::sidecar::{
    self, Files, SidecarOutcome, SidecarPolicy, SidecarProblem, SidecarReport, Stamp, Summary,
    sidecar_path,
};
use crate::storage::TraceBytes;
use crate::tree::{TraceTree, Visit};
use cache::{ChildIndex, Entry, Key, NodeCache, PAGE};
use stream::{Resident, Stream, scan_unindexed, unexpected};
use walk::{Plan, Stretch, Walked};

/// A node of a [`LazyTraceReader`]: a tracepoint, by its thread and logical
/// offset. Cheap to copy; meaningful only for the reader that made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LazyNode {
    slot: u32,
    at: LogicalOffset,
}

impl LazyNode {
    /// The offset of the tracepoint in its thread's logical stream.
    pub fn offset(&self) -> LogicalOffset {
        self.at
    }
}

/// What to do with a trace's index file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IndexChoice {
    /// Use it when valid, else rebuild the lookup structures by scanning.
    #[default]
    UseOrRebuild,
    /// Ignore it and rebuild.
    Rebuild,
    /// Use it; fail with [`Error::BrokenIndex`] when it is missing or broken.
    Require,
}

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
            let files = on_disk.files(&data, index.as_ref().ok());
            let loaded = if self.index == IndexChoice::Rebuild {
                Err(SidecarProblem::Stale("a rebuild was asked for".into()))
            } else {
                sidecar::load(
                    &on_disk.sidecar,
                    &files,
                    self.sidecar == SidecarPolicy::ReadWrite,
                )
                .and_then(|loaded| {
                    let rebuilt = matches!(loaded.status, IndexStatus::Rebuilt(_));
                    if rebuilt && self.index == IndexChoice::Require {
                        Err(SidecarProblem::Rebuilt)
                    } else {
                        Ok(loaded)
                    }
                })
            };
            match loaded {
                Ok(loaded) => {
                    // A rebuild's sidecar with the index still missing: say
                    // so as a fresh open would.
                    let status = match (loaded.status, &index) {
                        (IndexStatus::Rebuilt(_), Err(problem)) => {
                            IndexStatus::Rebuilt(problem.clone())
                        }
                        (status, _) => status,
                    };
                    let report = IndexReport {
                        path,
                        status,
                        blocks: loaded.lookup.blocks.blocks().len(),
                        references: loaded.references,
                        containers: (0..loaded.lookup.blocks.thread_count())
                            .map(|slot| loaded.lookup.container_count(slot))
                            .sum(),
                        repaired_containers: loaded.repaired,
                        data: loaded.data,
                        sidecar: Some(SidecarReport {
                            path: on_disk.sidecar.clone(),
                            rejected: None,
                            outcome: SidecarOutcome::Used,
                            framing_checked: loaded.framing_checked,
                            scratch: false,
                        }),
                    };
                    let reader = self.reader(data, loaded.lookup, loaded.context, report);
                    reader.release_all();
                    return Ok(reader);
                }
                Err(problem) => rejected = Some(problem),
            }
        }
        let index_bytes = index.as_ref().ok().cloned();
        let attempt = index.and_then(|index| {
            let mut loaded = load_index(&data, index, self.resident_window)?;
            let repaired = repair(&data, &mut loaded)
                .map_err(|error| IndexProblem::Inconsistent(error.to_string()))?;
            Ok((loaded, repaired))
        });
        let (loaded, status, repaired) = match attempt {
            Ok((loaded, repaired)) => {
                let complete = loaded.complete;
                (loaded, IndexStatus::Used { complete }, repaired)
            }
            Err(problem) => {
                if self.index == IndexChoice::Require {
                    return Err(Error::BrokenIndex(problem.to_string()));
                }
                let loaded = match rebuild_to_scratch(&data, self.resident_window)? {
                    Some(loaded) => loaded,
                    None => rebuild_lookup(&data)?,
                };
                (loaded, IndexStatus::Rebuilt(problem), 0)
            }
        };
        let LoadedIndex {
            lookup,
            context,
            references,
            data: data_report,
            complete: _,
        } = loaded;
        let report = IndexReport {
            path,
            status,
            blocks: lookup.blocks.blocks().len(),
            references,
            containers: (0..lookup.blocks.thread_count())
                .map(|slot| lookup.container_count(slot))
                .sum(),
            repaired_containers: repaired,
            data: data_report,
            sidecar: None,
        };
        let mut reader = self.reader(data, lookup, context, report);
        if let Some(on_disk) = on_disk {
            let write =
                self.sidecar == SidecarPolicy::ReadWrite && self.index != IndexChoice::Rebuild;
            let outcome = if write {
                reader.write_sidecar(&on_disk, index_bytes.as_ref())
            } else {
                SidecarOutcome::Skipped
            };
            let files = on_disk.files(&reader.data, index_bytes.as_ref());
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
            reader = self.mapped_back(reader, loaded);
            reader.report.sidecar = Some(SidecarReport {
                path: on_disk.sidecar,
                rejected,
                outcome,
                framing_checked: 0,
                scratch,
            });
        }
        reader.release_all();
        Ok(reader)
    }

    /// The reader over a sidecar just written and `loaded` back (its
    /// tables mapped instead of held on the heap), with the report of
    /// `reader`; `reader` itself if the sidecar did not load, or if lookups
    /// resolved on demand would be lost.
    fn mapped_back(
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

    fn reader(
        &self,
        data: TraceBytes,
        mut lookup: Lookup,
        context: crate::model::ContextBuilder,
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
    fn files<'a>(&self, data: &'a TraceBytes, index: Option<&'a TraceBytes>) -> Files<'a> {
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
    fn summary(&self) -> Summary<'_> {
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

/// One recorded thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadInfo {
    /// The thread id of its blocks.
    pub id: ThreadId,
    /// Its blocks.
    pub blocks: usize,
    /// Bytes in its logical stream.
    pub bytes: u64,
    /// Containers with a known content range.
    pub containers: usize,
}

/// How much of each tracepoint a walk reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WalkDetail {
    /// Only the common header (type, event id, code location, thread): the
    /// rest is skipped without being built.
    Headers,
    /// The whole tracepoint and footer, decoded in place.
    Full,
}

/// One node met by [`LazyTraceReader::walk_thread`] or
/// [`LazyTraceReader::walk_subtree`].
#[derive(Debug)]
pub struct WalkNode<'a> {
    /// The node.
    pub node: LazyNode,
    /// Its depth below where the walk started (0 = the start's level).
    pub depth: usize,
    /// Its common header.
    pub header: TracepointHeader,
    /// Its tracepoint, borrowed from the data file ([`WalkDetail::Full`] only).
    pub tracepoint: Option<&'a Tracepoint<'a>>,
    /// Its footer ([`WalkDetail::Full`], finished containers only).
    pub footer: Option<&'a Footer<'a>>,
}

/// A range of a thread's stream whose direct children are listed together:
/// a container's content, or a thread's top level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Scope {
    slot: usize,
    start: LogicalOffset,
    end: LogicalOffset,
}

/// The last offset in `page` before `start`.
fn last_before(page: &[LogicalOffset], start: LogicalOffset) -> Option<LogicalOffset> {
    page.partition_point(|&at| at < start)
        .checked_sub(1)
        .map(|i| page[i])
}

/// How a scope's children are paged.
enum Paging {
    /// All fit in the first page.
    One(Arc<[LogicalOffset]>),
    /// Several pages, found through the scope's child index.
    Many(Arc<ChildIndex>),
}

/// A forward scan of one thread: its stream, its container table, and the
/// last container found (where the next lookup starts galloping).
struct Scan<'r> {
    slot: usize,
    stream: Stream<'r>,
    table: &'r ContainerTable,
    cells: CellView<'r>,
    hint: Option<usize>,
}

/// A trace opened for random access. See the [module documentation](self).
pub struct LazyTraceReader {
    data: TraceBytes,
    /// What forward reads release behind them; `None` keeps every page.
    resident: Option<Resident>,
    context: TraceContext,
    lookup: Lookup,
    /// Content ends of containers a used index had no cell for, found by
    /// scanning on first need: (thread slot, content start) → end.
    resolved: RwLock<HashMap<(usize, LogicalOffset), LogicalOffset>>,
    cache: NodeCache,
    report: IndexReport,
}

const _: fn() = || {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<LazyTraceReader>();
};

impl fmt::Debug for LazyTraceReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LazyTraceReader")
            .field("data", &self.data)
            .field("report", &self.report)
            .field("cache", &self.cache.stats())
            .finish_non_exhaustive()
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

    /// How the lookup structures were made, and what the data lacked.
    pub fn report(&self) -> &IndexReport {
        &self.report
    }

    /// The trace's reference objects (decoded on first use).
    pub fn context(&self) -> &TraceContext {
        &self.context
    }

    /// The blocks of every thread.
    pub fn block_table(&self) -> &BlockTable {
        &self.lookup.blocks
    }

    /// The threads, ascending by id.
    pub fn thread_ids(&self) -> Vec<ThreadId> {
        self.lookup.blocks.thread_ids().collect()
    }

    /// The threads with their sizes, ascending by id.
    pub fn threads(&self) -> Vec<ThreadInfo> {
        (0..self.lookup.blocks.thread_count())
            .map(|slot| {
                let blocks = self.lookup.blocks.thread(slot);
                ThreadInfo {
                    id: blocks.thread,
                    blocks: blocks.block_count,
                    bytes: blocks.len,
                    containers: self.lookup.container_count(slot),
                }
            })
            .collect()
    }

    /// A thread's name, when the trace recorded one.
    pub fn thread_name(&self, thread: ThreadId) -> Option<String> {
        self.context
            .thread_name(thread)
            .map(|name| name.decode().into_owned())
    }

    /// The thread a node belongs to.
    pub fn node_thread(&self, node: LazyNode) -> ThreadId {
        self.lookup.blocks.thread(node.slot as usize).thread
    }

    /// A thread's top-level tracepoints (normally its one root call).
    pub fn roots(&self, thread: ThreadId) -> Result<Vec<LazyNode>> {
        match self.lookup.blocks.slot(thread) {
            Some(slot) => self.scope_children(self.top_scope(slot), 0, usize::MAX),
            None => Ok(Vec::new()),
        }
    }

    /// A thread's first top-level tracepoint: its root call.
    pub fn root(&self, thread: ThreadId) -> Result<Option<LazyNode>> {
        match self.lookup.blocks.slot(thread) {
            Some(slot) => Ok(self.scope_children(self.top_scope(slot), 0, 1)?.pop()),
            None => Ok(None),
        }
    }

    /// A node's tracepoint, footer and content range.
    pub fn node(&self, node: LazyNode) -> Result<Arc<NodeData>> {
        let key = Key::Node {
            slot: node.slot,
            at: node.at.0,
        };
        if let Some(Entry::Node(data)) = self.cache.get(&key) {
            return Ok(data);
        }
        let data = Arc::new(self.decode_node(node)?);
        self.cache.insert(key, Entry::Node(Arc::clone(&data)));
        Ok(data)
    }

    /// How many direct children a node has. The first call on a container
    /// scans its content once (skipping the children's own subtrees).
    pub fn child_count(&self, node: LazyNode) -> Result<usize> {
        match self.scope(node)? {
            Some(scope) if scope.start < scope.end => Ok(match self.paging(scope)? {
                Paging::One(page) => page.len(),
                Paging::Many(index) => index.count,
            }),
            _ => Ok(0),
        }
    }

    /// A node's direct children, in order.
    pub fn children(&self, node: LazyNode) -> Result<Vec<LazyNode>> {
        self.children_range(node, 0, usize::MAX)
    }

    /// The direct children `[from, from + count)` of a node (fewer at the
    /// end). Scans only the pages of children asked for, plus, for pages
    /// after the first, one scan of the content to find where pages start.
    pub fn children_range(
        &self,
        node: LazyNode,
        from: usize,
        count: usize,
    ) -> Result<Vec<LazyNode>> {
        match self.scope(node)? {
            Some(scope) => self.scope_children(scope, from, count),
            None => Ok(Vec::new()),
        }
    }

    /// The container a node is a direct child of; `None` for top-level nodes.
    pub fn parent(&self, node: LazyNode) -> Result<Option<LazyNode>> {
        self.trusting(|| self.parent_once(node))
    }

    /// Runs a lookup through the container tables; if it made the reader
    /// distrust a thread's cells (they contradicted the data), runs it
    /// again over the tables found by scanning.
    fn trusting<T>(&self, f: impl Fn() -> Result<T>) -> Result<T> {
        let before = self.lookup.distrusted();
        match f() {
            Err(_) if self.lookup.distrusted() != before => f(),
            result => result,
        }
    }

    fn parent_once(&self, node: LazyNode) -> Result<Option<LazyNode>> {
        let slot = node.slot as usize;
        let (table, cells) = self.containers(slot)?;
        let mut enclosing = table.last_starting_at_or_before(cells, node.at);
        while let Some(k) = enclosing {
            if node.at < table.end(cells, k) {
                break;
            }
            enclosing = table.parent(cells, k);
        }
        // Its header must end where its cell says its content starts
        // (otherwise the thread's cells are distrusted and the call
        // retried), so its content can be scanned from there.
        let (found, mut scope) = match enclosing {
            Some(k) => (
                Some(self.container_node(slot, k)?),
                self.container_scope(slot, k)?,
            ),
            None => (None, self.top_scope(slot)),
        };
        // A container without a trusted cell may lie between that
        // container and the node: one the index has no cell for, or one
        // whose cell's start was moved past the node (nothing contradicts
        // such a cell until a lookup goes through it). The headers decide:
        // the last direct child before the node, if it is a container
        // holding the node, is a nearer ancestor.
        let mut parent = found;
        while let Some(at) = self.last_child_before(scope, node.at)? {
            let child = LazyNode {
                slot: node.slot,
                at,
            };
            match self.scope(child)? {
                Some(inner) if inner.start <= node.at && node.at < inner.end => {
                    parent = Some(child);
                    scope = inner;
                }
                _ => break,
            }
        }
        Ok(parent)
    }

    /// The node of the tracepoint with event id `event`.
    ///
    /// A container is found through the index; a leaf through the
    /// containers around it, which needs event ids to ascend in each
    /// thread's pre-order (they do in what real recorders write). A thread
    /// where they do not is searched by a sequential scan.
    pub fn node_by_event(&self, event: EventId) -> Result<Option<LazyNode>> {
        self.trusting(|| self.node_by_event_once(event))
    }

    fn node_by_event_once(&self, event: EventId) -> Result<Option<LazyNode>> {
        let threads = self.lookup.blocks.thread_count();
        for slot in 0..threads {
            let (table, cells) = self.containers(slot)?;
            if let Some(k) = table.find_event(cells, event) {
                let node = self.container_node(slot, k)?;
                if self.stream(slot).header(node.at)?.event != event {
                    return Err(self.contradicted(
                        slot,
                        format!("the cell of event id {event} leads to another container"),
                    ));
                }
                return Ok(Some(node));
            }
        }
        // Threads where the container before `event` is nearest first.
        let mut candidates: Vec<(u64, usize, Option<usize>)> = Vec::new();
        let mut unordered = Vec::new();
        for slot in 0..threads {
            let (table, cells) = self.containers(slot)?;
            if !table.events_ascend() {
                unordered.push(slot);
                continue;
            }
            let before = table.last_event_below(cells, event);
            let gap = before.map_or(u64::MAX, |k| {
                (event.0 as i64 - table.event(cells, k).0 as i64) as u64
            });
            candidates.push((gap, slot, before));
        }
        candidates.sort_unstable();
        for (_, slot, before) in candidates {
            // The tracepoint is a child of that container or of one of its
            // ancestors, or at the top level.
            let (table, cells) = self.containers(slot)?;
            let mut container = before;
            loop {
                let scope = match container {
                    Some(k) => self.container_scope(slot, k)?,
                    None => self.top_scope(slot),
                };
                let found = self.find_by_event_in(scope, event);
                if let Some(node) = self.through_cell(slot, container, found)? {
                    return Ok(Some(node));
                }
                match container {
                    Some(k) => container = table.parent(cells, k),
                    None => break,
                }
            }
        }
        for slot in unordered {
            let mut found = None;
            self.walk_thread(
                self.lookup.blocks.thread(slot).thread,
                WalkDetail::Headers,
                |walked| {
                    if walked.header.event == event {
                        found = Some(walked.node);
                    }
                    Ok(found.is_none())
                },
            )?;
            if found.is_some() {
                return Ok(found);
            }
        }
        Ok(None)
    }

    /// Forgets everything cached for a node's subtree (its decoded
    /// descendants and child lists); they reload when asked for again.
    pub fn forget_children(&self, node: LazyNode) -> Result<()> {
        let Some(scope) = self.scope(node)? else {
            return Ok(());
        };
        let slot = node.slot;
        let inside = |at: u64| scope.start.0 <= at && at < scope.end.0;
        self.cache.remove_where(|key| match *key {
            Key::Node { slot: s, at } => s == slot && inside(at),
            Key::Index { slot: s, start } | Key::Page { slot: s, start, .. } => {
                s == slot && (start == scope.start.0 || inside(start))
            }
        });
        Ok(())
    }

    /// Builds every thread's container table now (threads in parallel)
    /// instead of on each thread's first use, and returns the threads whose
    /// container cells turned out not to nest (those threads' containers
    /// were then found by scanning their streams).
    pub fn build_lookups(&self) -> Vec<(ThreadId, IndexProblem)> {
        self.lookup.build_all(self.data.as_slice());
        self.release_all();
        self.lookup.problems()
    }

    /// The threads built so far whose container cells did not nest, and why
    /// (their containers were found by scanning instead).
    pub fn thread_problems(&self) -> Vec<(ThreadId, IndexProblem)> {
        self.lookup.problems()
    }

    /// Empties the cache.
    pub fn clear_cache(&self) {
        self.cache.clear();
    }

    /// What the cache holds.
    pub fn cache_stats(&self) -> CacheStats {
        self.cache.stats()
    }

    /// Heap bytes of the lookup structures (block table, container tables,
    /// cells made in memory), which stay for the reader's lifetime; the
    /// cache is bounded separately.
    pub fn lookup_heap_bytes(&self) -> usize {
        self.lookup.heap_bytes() + self.report.blocks * 40
    }

    /// Walks a thread's trees depth-first in pre-order by reading its
    /// stream once from start to end, each tracepoint in place, caching
    /// nothing (memory stays O(depth)). `detail` says whether to decode
    /// tracepoints and footers or only read headers. `f` returns whether to
    /// go on.
    pub fn walk_thread(
        &self,
        thread: ThreadId,
        detail: WalkDetail,
        mut f: impl FnMut(&WalkNode<'_>) -> Result<bool>,
    ) -> Result<()> {
        if let Some(slot) = self.lookup.blocks.slot(thread) {
            let scope = self.top_scope(slot);
            self.walk_range(
                Stretch::thread(slot, scope.end),
                Plan::all(detail),
                &mut |step| match step {
                    Walked::Node(walked, _) => f(walked),
                    Walked::Folded { .. } => Ok(true),
                },
            )?;
        }
        Ok(())
    }

    /// Walks a node and its descendants as [`walk_thread`](Self::walk_thread)
    /// does; the node itself is at depth 0.
    pub fn walk_subtree(
        &self,
        node: LazyNode,
        detail: WalkDetail,
        mut f: impl FnMut(&WalkNode<'_>) -> Result<bool>,
    ) -> Result<()> {
        let slot = node.slot as usize;
        let end = self.top_scope(slot).end;
        if node.at >= end {
            return Err(Error::NoSuchNode(format!(
                "offset {} is past the end of thread {}'s stream ({end} bytes)",
                node.at,
                self.lookup.blocks.thread(slot).thread
            )));
        }
        self.walk_range(
            Stretch {
                slot,
                from: node.at,
                end,
                depth: 0,
                one: true,
            },
            Plan::all(detail),
            &mut |step| match step {
                Walked::Node(walked, _) => f(walked),
                Walked::Folded { .. } => Ok(true),
            },
        )?;
        Ok(())
    }

    /// Walks every thread as [`walk_thread`](Self::walk_thread) does, the
    /// threads in parallel (rayon's pool: as many at once as it has
    /// workers). `init` makes a state for each thread, `f` sees that
    /// thread's nodes in pre-order with its state and returns whether to go
    /// on (false ends that thread's walk only); the states come back in
    /// thread order (ascending id). Each walker releases what it leaves
    /// behind ([`LazyOptions::resident_window`]), so resident memory is about
    /// one window per walker.
    pub fn walk_threads<S: Send>(
        &self,
        detail: WalkDetail,
        init: impl Fn(ThreadId) -> S + Sync,
        f: impl Fn(&mut S, &WalkNode<'_>) -> Result<bool> + Sync,
    ) -> Result<Vec<S>> {
        (0..self.lookup.blocks.thread_count())
            .into_par_iter()
            .map(|slot| {
                let mut state = init(self.lookup.blocks.thread(slot).thread);
                let scope = self.top_scope(slot);
                self.walk_range(
                    Stretch::thread(slot, scope.end),
                    Plan::all(detail),
                    &mut |step| match step {
                        Walked::Node(walked, _) => f(&mut state, walked),
                        Walked::Folded { .. } => Ok(true),
                    },
                )?;
                Ok(state)
            })
            .collect()
    }

    /// Counts the tracepoints of every thread by type, reading the threads'
    /// streams in parallel (headers only).
    pub fn count_tracepoints(&self) -> Result<BTreeMap<TracepointType, u64>> {
        let per_thread = self.walk_threads(
            WalkDetail::Headers,
            |_| [0u64; 12],
            |counts, walked| {
                counts[walked.header.tracepoint_type as usize] += 1;
                Ok(true)
            },
        )?;
        let mut counts = BTreeMap::new();
        for (index, kind) in TracepointType::ALL.into_iter().enumerate() {
            let total: u64 = per_thread.iter().map(|c| c[index]).sum();
            if total > 0 {
                counts.insert(kind, total);
            }
        }
        Ok(counts)
    }

    // ---- internals ----

    fn containers(&self, slot: usize) -> Result<(&ContainerTable, CellView<'_>)> {
        if !self.lookup.is_built(slot) {
            // Building reads every cell of the thread, and checks a footer
            // byte in the data per container (a page of nearly every
            // block): release them after.
            let built = self.lookup.containers(self.data.as_slice(), slot);
            self.release_all();
            return built;
        }
        self.lookup.containers(self.data.as_slice(), slot)
    }

    /// Releases every page of the data and lookup mappings (with a resident
    /// window).
    fn release_all(&self) {
        if let Some(resident) = &self.resident {
            resident.release_all();
        }
    }

    fn resolved_is_empty(&self) -> bool {
        self.resolved
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
    }

    fn scan(&self, slot: usize) -> Result<Scan<'_>> {
        let (table, cells) = self.containers(slot)?;
        Ok(Scan {
            slot,
            stream: self.stream(slot),
            table,
            cells,
            hint: None,
        })
    }

    /// A scan that goes forward, releasing what it leaves behind.
    fn forward_scan(&self, slot: usize) -> Result<Scan<'_>> {
        let mut scan = self.scan(slot)?;
        scan.stream = scan.stream.releasing(self.resident.as_ref());
        Ok(scan)
    }

    fn stream(&self, slot: usize) -> Stream<'_> {
        self.lookup
            .stream(self.data.as_slice(), slot)
            .counted(self.resident.as_ref())
    }

    fn top_scope(&self, slot: usize) -> Scope {
        Scope {
            slot,
            start: LogicalOffset(0),
            end: LogicalOffset(self.lookup.blocks.thread(slot).len),
        }
    }

    fn container_scope(&self, slot: usize, k: usize) -> Result<Scope> {
        let (table, cells) = self.containers(slot)?;
        Ok(Scope {
            slot,
            start: table.start(cells, k),
            end: table.end(cells, k),
        })
    }

    fn scope(&self, node: LazyNode) -> Result<Option<Scope>> {
        Ok(self.node(node)?.content.map(|content| Scope {
            slot: node.slot as usize,
            start: content.start,
            end: content.end,
        }))
    }

    /// The end of a container the index has no cell for, by scanning.
    fn resolve(
        &self,
        slot: usize,
        start: LogicalOffset,
        container: TracepointType,
        event: EventId,
    ) -> Result<LogicalOffset> {
        let known = |resolved: &HashMap<_, _>| resolved.get(&(slot, start)).copied();
        if let Some(end) = known(&self.resolved.read().unwrap_or_else(|e| e.into_inner())) {
            return Ok(end);
        }
        let (table, cells) = self.containers(slot)?;
        let mut stream = self.stream(slot);
        let found = scan_unindexed(
            &mut stream,
            &mut table.ends_by_start(cells),
            start,
            Some((container, event.0)),
        )?;
        let mut resolved = self.resolved.write().unwrap_or_else(|e| e.into_inner());
        for container in found {
            resolved.insert((slot, container.start), container.end);
        }
        known(&resolved)
            .ok_or_else(|| Error::NoSuchNode(format!("no end found for the container at {start}")))
    }

    fn decode_node(&self, node: LazyNode) -> Result<NodeData> {
        let mut scan = self.scan(node.slot as usize)?;
        let (object, len) = scan.stream.object(node.at, None)?;
        let Object::Tracepoint(tracepoint) = object else {
            return Err(unexpected(
                &mut scan.stream,
                node.at,
                object.kind(),
                "expected a tracepoint at a node's offset",
            ));
        };
        let content = self.content_of(&mut scan, node.at + len, &tracepoint.header)?;
        let footer = match content {
            Some(content) => self
                .footer_of(&mut scan.stream, content, tracepoint.tracepoint_type())?
                .map(|(footer, _)| footer.into_owned()),
            None => None,
        };
        Ok(NodeData {
            tracepoint: tracepoint.into_owned(),
            footer,
            content,
        })
    }

    /// Calls `f` with each direct child of `scope` from offset `from` on,
    /// until `f` returns false; returns the offset after the last child seen.
    /// Children are skipped, not decoded; a child container's subtree is
    /// jumped over through its content range.
    fn scan_children(
        &self,
        scope: Scope,
        from: LogicalOffset,
        mut f: impl FnMut(LogicalOffset, &TracepointHeader) -> bool,
    ) -> Result<LogicalOffset> {
        let mut scan = self.forward_scan(scope.slot)?;
        let mut at = from;
        while at < scope.end {
            let (skipped, len) = scan.stream.skip(at, None)?;
            match (skipped.kind, skipped.header) {
                (ObjectKind::Tracepoint, Some(header)) => {
                    let child = at;
                    at = match self.content_of(&mut scan, at + len, &header)? {
                        None => at + len,
                        Some(content) if content.finished => {
                            let footer = scan
                                .stream
                                .footer_len(content.end, header.tracepoint_type)?;
                            content.end + footer
                        }
                        Some(content) => content.end,
                    };
                    if !f(child, &header) {
                        break;
                    }
                }
                (kind, _) if kind.is_reference() => at = at + len,
                (kind, _) => {
                    return Err(unexpected(
                        &mut scan.stream,
                        at,
                        kind,
                        "among a container's children",
                    ));
                }
            }
        }
        Ok(at)
    }

    /// How many children a scope has and where its pages start; scans the
    /// scope once, keeping the pages it passes while they take at most a
    /// quarter of the cache.
    fn child_index(&self, scope: Scope) -> Result<Arc<ChildIndex>> {
        let key = Key::Index {
            slot: scope.slot as u32,
            start: scope.start.0,
        };
        if let Some(Entry::Index(index)) = self.cache.get(&key) {
            return Ok(index);
        }
        let keep_pages = self.cache.budget() / 4 / (PAGE * size_of::<LogicalOffset>());
        let most = (self.cache.index_budget() / 2 / size_of::<(LogicalOffset, EventId)>()).max(16);
        let mut checkpoints = Vec::new();
        let mut stride = 1;
        let mut page: Vec<LogicalOffset> = Vec::with_capacity(PAGE);
        let mut count = 0;
        let keep = |number: usize, page: &[LogicalOffset]| {
            if number < keep_pages {
                let key = self.page_key(scope, number);
                if !self.cache.contains(&key) {
                    self.cache.insert(key, Entry::Page(page.into()));
                }
            }
        };
        self.scan_children(scope, scope.start, |at, header| {
            if count % (PAGE * stride) == 0 {
                checkpoints.push((at, header.event));
                if checkpoints.len() > most {
                    // Keep every other checkpoint: twice the stride.
                    checkpoints = checkpoints.iter().step_by(2).copied().collect();
                    stride *= 2;
                }
            }
            page.push(at);
            count += 1;
            if page.len() == PAGE {
                keep(count / PAGE - 1, &page);
                page.clear();
            }
            true
        })?;
        if !page.is_empty() {
            keep(count / PAGE, &page);
        }
        let index = Arc::new(ChildIndex {
            count,
            stride,
            checkpoints,
        });
        self.cache.insert(key, Entry::Index(Arc::clone(&index)));
        Ok(index)
    }

    fn page_key(&self, scope: Scope, page: usize) -> Key {
        Key::Page {
            slot: scope.slot as u32,
            start: scope.start.0,
            page: page as u32,
        }
    }

    /// Page `page` of a scope's child addresses. A page after the first is
    /// scanned from the checkpoint before it; the pages passed on the way
    /// are cached too (walks ask for pages in order).
    fn page(&self, scope: Scope, page: usize) -> Result<Arc<[LogicalOffset]>> {
        let key = self.page_key(scope, page);
        if let Some(Entry::Page(found)) = self.cache.get(&key) {
            return Ok(found);
        }
        let (from, mut number) = if page == 0 {
            (scope.start, 0)
        } else {
            let index = self.child_index(scope)?;
            if page >= index.pages() {
                return Ok(Arc::from([]));
            }
            let checkpoint = page / index.stride;
            (index.checkpoints[checkpoint].0, checkpoint * index.stride)
        };
        let mut children = Vec::with_capacity(PAGE.min(64));
        let mut wanted = None;
        self.scan_children(scope, from, |at, _| {
            children.push(at);
            if children.len() < PAGE {
                return true;
            }
            let full: Arc<[LogicalOffset]> = std::mem::take(&mut children).into();
            if number == page {
                wanted = Some(full);
                return false;
            }
            self.cache
                .insert(self.page_key(scope, number), Entry::Page(full));
            number += 1;
            true
        })?;
        let children = match wanted {
            Some(full) => full,
            None if number == page => children.into(),
            None => Arc::from([]),
        };
        self.cache.insert(key, Entry::Page(Arc::clone(&children)));
        Ok(children)
    }

    /// How a scope's children are paged: one page, or the child index of
    /// several. Only scopes with more than one page get a child index.
    fn paging(&self, scope: Scope) -> Result<Paging> {
        let first = self.page(scope, 0)?;
        if first.len() < PAGE {
            Ok(Paging::One(first))
        } else {
            Ok(Paging::Many(self.child_index(scope)?))
        }
    }

    /// The children `[from, from + count)` of a scope.
    fn scope_children(&self, scope: Scope, from: usize, count: usize) -> Result<Vec<LazyNode>> {
        let mut out = Vec::new();
        if count == 0 || scope.start >= scope.end {
            return Ok(out);
        }
        let end = from.saturating_add(count);
        let slot = scope.slot as u32;
        let mut page = from / PAGE;
        loop {
            let children = self.page(scope, page)?;
            let first = page * PAGE;
            let (low, high) = (from.max(first) - first, (end - first).min(children.len()));
            if low < high {
                out.extend(children[low..high].iter().map(|&at| LazyNode { slot, at }));
            }
            if children.len() < PAGE || end <= first + PAGE {
                return Ok(out);
            }
            page += 1;
        }
    }

    /// The node of the `k`-th container of thread `slot`: its header is
    /// found among its parent's children (the index knows only where its
    /// content starts).
    fn container_node(&self, slot: usize, k: usize) -> Result<LazyNode> {
        self.container_node_checking(slot, k, true)
    }

    /// [`container_node`](Self::container_node); with `check_parent`, a
    /// failed scan of the parent's content checks the parent's cell
    /// ([`through_cell`](Self::through_cell), one level: no recursion up a
    /// deep chain of corrupt scopes).
    fn container_node_checking(
        &self,
        slot: usize,
        k: usize,
        check_parent: bool,
    ) -> Result<LazyNode> {
        let (table, cells) = self.containers(slot)?;
        // The parent's scope comes from its cell until it is left for a
        // container in between.
        let parent = table.parent(cells, k);
        let mut checked = parent.filter(|_| check_parent);
        let mut scope = match parent {
            Some(j) => self.container_scope(slot, j)?,
            None => self.top_scope(slot),
        };
        let start = table.start(cells, k);
        let missing = || {
            self.contradicted(
                slot,
                format!(
                    "no header for the container whose content starts at {start} in thread {}",
                    self.lookup.blocks.thread(slot).thread
                ),
            )
        };
        loop {
            let found = self.last_child_before(scope, start);
            let at = self
                .through_cell(slot, checked.take(), found)?
                .ok_or_else(missing)?;
            let node = LazyNode {
                slot: slot as u32,
                at,
            };
            let (skipped, len) = self.stream(slot).skip(at, None)?;
            if !skipped
                .header
                .is_some_and(|h| h.tracepoint_type.is_container())
            {
                return Err(missing());
            }
            if at + len == start {
                return Ok(node);
            }
            // A container the index has no cell for lies in between.
            match self.scope(node)? {
                // `<=`: an unfinished container's content may end where a
                // header written last (its child's content) starts.
                Some(inner) if inner.start < start && start <= inner.end => scope = inner,
                _ => return Err(missing()),
            }
        }
    }

    /// `result` of scanning the content of thread `slot`'s `k`-th container
    /// from where its cell says the content starts. On an error, checks
    /// that start (a header must end there): if it contradicts the data,
    /// the thread's cells are distrusted and that is the error (the public
    /// call then retries); otherwise the data is corrupt and the error is
    /// the scan's. Costs nothing unless the scan failed.
    fn through_cell<T>(&self, slot: usize, k: Option<usize>, result: Result<T>) -> Result<T> {
        match (result, k) {
            (Err(error), Some(k)) => {
                self.container_node_checking(slot, k, false)?;
                Err(error)
            }
            (result, _) => result,
        }
    }

    /// The error for a lookup whose container cell contradicts the data;
    /// the thread's cells are distrusted from then on (see
    /// [`LazyTraceReader::trusting`]).
    fn contradicted(&self, slot: usize, what: String) -> Error {
        let problem = IndexProblem::Inconsistent(what.clone());
        self.lookup.distrust(self.data.as_slice(), slot, problem);
        Error::NoSuchNode(what)
    }

    /// The last direct child of `scope` that starts before `start`.
    fn last_child_before(
        &self,
        scope: Scope,
        start: LogicalOffset,
    ) -> Result<Option<LogicalOffset>> {
        match self.paging(scope)? {
            Paging::One(page) => Ok(last_before(&page, start)),
            Paging::Many(index) => {
                let Some(checkpoint) = index
                    .checkpoints
                    .partition_point(|&(at, _)| at < start)
                    .checked_sub(1)
                else {
                    return Ok(None);
                };
                let mut found = None;
                for number in index.pages_from(checkpoint) {
                    let page = self.page(scope, number)?;
                    match page.first() {
                        Some(&first) if first < start => found = last_before(&page, start),
                        _ => break,
                    }
                }
                Ok(found)
            }
        }
    }

    /// The node with event id `event` among the direct children of `scope`
    /// (whose event ids must ascend), or among the descendants of a child
    /// container the index has no cell for.
    fn find_by_event_in(&self, mut scope: Scope, event: EventId) -> Result<Option<LazyNode>> {
        loop {
            let candidate = match self.search_children_by_event(scope, event)? {
                Ok(found) => return Ok(Some(found)),
                Err(None) => return Ok(None),
                Err(Some(before)) => before,
            };
            // The child before `event` may hold it, if the index has no cell
            // for it (otherwise the search started from inside it).
            let (table, cells) = self.containers(scope.slot)?;
            match self.scope(candidate)? {
                Some(inner) if table.find_start(cells, inner.start, None).is_none() => {
                    scope = inner
                }
                _ => return Ok(None),
            }
        }
    }

    /// Searches the direct children of `scope` by event id: the child with
    /// `event`, or else the last child with a smaller one.
    fn search_children_by_event(
        &self,
        scope: Scope,
        event: EventId,
    ) -> Result<std::result::Result<LazyNode, Option<LazyNode>>> {
        if scope.start >= scope.end {
            return Ok(Err(None));
        }
        let node = |at| LazyNode {
            slot: scope.slot as u32,
            at,
        };
        let mut stream = self.stream(scope.slot);
        let pages = match self.paging(scope)? {
            Paging::One(_) => 0..1,
            Paging::Many(index) => {
                let Some(checkpoint) = index
                    .checkpoints
                    .partition_point(|&(_, first)| first <= event)
                    .checked_sub(1)
                else {
                    return Ok(Err(None));
                };
                index.pages_from(checkpoint)
            }
        };
        let mut before = None;
        for number in pages {
            let children = self.page(scope, number)?;
            // Binary search by event id, decoding only headers.
            let (mut low, mut high) = (0, children.len());
            while low < high {
                let middle = (low + high) / 2;
                let found = stream.header(children[middle])?.event;
                if found == event {
                    return Ok(Ok(node(children[middle])));
                }
                if found < event {
                    low = middle + 1;
                } else {
                    high = middle;
                }
            }
            if low > 0 {
                before = Some(node(children[low - 1]));
            }
            if low < children.len() {
                break; // a later child has a greater event id
            }
        }
        Ok(Err(before))
    }
}

impl TraceTree for LazyTraceReader {
    type Node = LazyNode;

    fn context(&self) -> &TraceContext {
        &self.context
    }

    fn thread_ids(&self) -> Vec<ThreadId> {
        LazyTraceReader::thread_ids(self)
    }

    fn roots(&self, thread: ThreadId) -> Result<Vec<LazyNode>> {
        LazyTraceReader::roots(self, thread)
    }

    fn visit<R>(
        &self,
        node: LazyNode,
        f: impl FnOnce(&Tracepoint<'_>, Option<&Footer<'_>>) -> R,
    ) -> Result<R> {
        let data = self.node(node)?;
        Ok(f(&data.tracepoint, data.footer.as_ref()))
    }

    fn child_count(&self, node: LazyNode) -> Result<usize> {
        LazyTraceReader::child_count(self, node)
    }

    fn children(&self, node: LazyNode) -> Result<Vec<LazyNode>> {
        LazyTraceReader::children(self, node)
    }

    fn children_range(&self, node: LazyNode, from: usize, count: usize) -> Result<Vec<LazyNode>> {
        LazyTraceReader::children_range(self, node, from, count)
    }

    /// Reads each root's subtree once through its thread's stream, decoding
    /// in place and caching nothing, instead of loading every node and
    /// child list through the cache.
    fn walk_visit(
        &self,
        roots: &[LazyNode],
        max_depth: Option<usize>,
        child_counts: bool,
        mut f: impl FnMut(Visit<'_, LazyNode>) -> Result<()>,
    ) -> Result<()> {
        self.walk_visit_roots(roots, max_depth, child_counts, &mut f)
    }
}
