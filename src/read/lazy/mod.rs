//! [`LazyTraceReader`]: random access to a trace of any size. It reads the
//! data and index files in place (mapped, or paged in by `pread`:
//! [`FileAccess`](crate::storage::FileAccess)), keeps only lookup
//! structures in memory (the block table, the reference objects' places,
//! one `u32` per container), and decodes a node, or a call's children,
//! when asked. Decoded nodes and pages of children live in a byte-bounded
//! LRU cache and are decoded again after eviction.
//!
//! A call's children are found by scanning only its own content: a child
//! call's subtree is stepped over through its content range, so
//! grandchildren are never decoded; a call with millions of children is
//! paged ([`LazyTraceReader::children_range`] scans the pages it needs).
//!
//! ```no_run
//! use tracetree::read::LazyTraceReader;
//!
//! let reader = LazyTraceReader::options().cache_bytes(16 << 20).open("program.trace")?;
//! for thread in reader.thread_ids() {
//!     for root in reader.roots(thread)? {
//!         for child in reader.children_range(root, 0, 100)? {
//!             println!("{:?}", reader.node(child)?.tracepoint().tracepoint_type());
//!         }
//!     }
//! }
//! # Ok::<(), tracetree::Error>(())
//! ```
//!
//! Invariants: the reader is `Send + Sync`; decoding happens outside every
//! lock (the cache's `Mutex` is held to look up and insert, each thread's
//! table is built once in a `OnceLock`), and threads that miss the same
//! entry at once wait for one build of it. Memory is the lookups, the cache
//! budget and the resident window, never the trace. Random reads take their
//! bytes as chosen once at open (`storage::Reads`). Event ids are assumed
//! to ascend in each thread's pre-order for leaf lookups by id; otherwise
//! the lookup scans.
//!
//! The files, by what they serve: `open/` (the open, a growing trace's
//! refresh), `nodes/` (finding nodes, children and parents), `walk.rs`
//! (whole threads and subtrees), `cuts.rs` (the runs of siblings the
//! parallel printer cuts its work at), `cache.rs` (decoded nodes, pages).

mod cache;
mod cuts;
mod nodes;
mod open;
mod raw;
mod walk;

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, RwLock};

pub(crate) use cache::ContentRange;
pub use cache::{CacheStats, NodeData};
pub use nodes::{ChildCount, NodeHandle};
pub use open::{LazyOptions, RefreshReport};
pub use raw::RawSubtree;
pub(crate) use walk::Flow;

use crate::common::{EventId, LogicalOffset, ObjectKind, ThreadId};
use crate::error::{Error, NodeProblem, Result};
use crate::format::TraceContext;
use crate::model::{Footer, Tracepoint, TracepointHeader, TracepointName, TracepointType};
use crate::read::lookup::containers::{CellView, ContainerTable, Run};
use crate::read::lookup::stream::Stream;
use crate::read::lookup::{IndexProblem, IndexReport, Lookup};
use crate::storage::TraceBytes;
use crate::storage::diff_map::DiffMap;
use crate::storage::{Reads, Resident};
use cache::{ChildIndex, Entry, Key, NodeCache, PAGE};

/// A node of a [`LazyTraceReader`]: a tracepoint, by its thread and logical
/// offset. Cheap to copy; meaningful only for readers of the trace whose
/// reader made it: a reader of another trace answers it with
/// [`Error::NoSuchNode`]. To keep a node beyond its reader, keep its
/// [`NodeHandle`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LazyNode {
    /// The trace of the reader that made it ([`LazyTraceReader`]'s `id`).
    reader: u32,
    slot: u32,
    at: LogicalOffset,
    thread: ThreadId,
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
    /// Read the data through first, as a rebuild does, so that a block that
    /// cannot be read is found at the open and reported
    /// ([`LoadReport`](crate::read::LoadReport)) rather than met halfway
    /// through a walk, and the reader gives exactly the eager loader's
    /// rows: for callers about to read the whole trace (`print`, `dump`).
    /// The lookups come from that scan, or from the sidecar such a scan
    /// kept for the same files (none is kept of a damaged trace, so that
    /// every open says why).
    Verify,
    /// Use it; fail with [`Error::BrokenIndex`] when it is missing or broken.
    Require,
}

/// One recorded thread, as either reader gives it
/// ([`LazyTraceReader::threads`], [`EagerTrace::threads`](crate::read::EagerTrace::threads)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ThreadInfo {
    /// The thread id of its blocks.
    pub id: ThreadId,
    /// Its blocks.
    pub blocks: usize,
    /// Bytes in its logical stream (its blocks' payloads).
    pub bytes: u64,
    /// Containers with a known content range: every container for the
    /// eager loader (unfinished ones run to the end of the stream); for
    /// the lazy reader, those its lookups held at open (a container the
    /// index lacked is found when its part of the trace is read).
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
    /// Containers (calls, loops, iterations) as with `Full`, the other
    /// tracepoints as with `Headers`: what a walk of call stacks needs.
    Containers,
    /// As `Headers`, plus what each call, field access and local access
    /// names ([`WalkNode::name`]), read from its first fields: what a
    /// search by name needs.
    Names,
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
    /// Its tracepoint, borrowed from the data file ([`WalkDetail::Full`];
    /// containers only with [`WalkDetail::Containers`]).
    pub tracepoint: Option<&'a Tracepoint<'a>>,
    /// Its footer ([`WalkDetail::Full`] and [`WalkDetail::Containers`],
    /// finished containers only).
    pub footer: Option<&'a Footer<'a>>,
    /// The method a call names, or the field or local variable an access
    /// names, read from its first fields by a [`WalkDetail::Names`] walk
    /// (`None` in other walks, for other tracepoints, and where those
    /// fields are cut by a block end: [`LazyTraceReader::node`] then
    /// decodes it).
    pub name: Option<TracepointName>,
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
    /// The containers of a short call's content, read at once: a scan of
    /// a copy of that content looks its containers up there (`nodes/short.rs`).
    run: Option<Run>,
}

/// A trace opened for random access. See the [module documentation](self).
pub struct LazyTraceReader {
    data: TraceBytes,
    /// What forward reads release behind them; `None` keeps every page.
    resident: Option<Resident>,
    /// How random reads take their bytes: copied under a resident window,
    /// lent otherwise (chosen at open).
    reads: Reads,
    context: TraceContext,
    lookup: Lookup,
    /// Content ends of containers a used index had no cell for, found by
    /// scanning on first need: (thread slot, content start) → end.
    resolved: RwLock<HashMap<(usize, LogicalOffset), LogicalOffset>>,
    cache: NodeCache,
    report: IndexReport,
    /// Which trace a node belongs to: its nodes carry it.
    id: u32,
    /// What a growing view keeps to refresh (`None` for other opens).
    growing: Option<Box<open::Growing>>,
    /// A packed diff's map back to its inputs.
    diff_map: Option<DiffMap>,
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
    /// How the lookup structures were made, and what the data lacked.
    pub fn report(&self) -> &IndexReport {
        &self.report
    }

    /// The trace's reference objects (decoded on first use).
    pub fn context(&self) -> &TraceContext {
        &self.context
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
        node.thread
    }

    /// The node at logical offset `at` of thread `slot` (a slot of this
    /// reader's block table).
    pub(crate) fn node_at(&self, slot: usize, at: LogicalOffset) -> LazyNode {
        LazyNode {
            reader: self.id,
            slot: slot as u32,
            at,
            thread: self.lookup.blocks.thread(slot).thread,
        }
    }

    /// `node`'s thread slot, when this reader made it.
    fn own(&self, node: LazyNode) -> Result<usize> {
        let slot = node.slot as usize;
        if node.reader != self.id || slot >= self.lookup.blocks.thread_count() {
            return Err(Error::NoSuchNode(NodeProblem::OtherTrace {
                thread: node.thread,
                at: node.at,
            }));
        }
        Ok(slot)
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
}
