//! The byte-bounded LRU cache of decoded nodes, child indexes and pages of
//! child addresses. Everything in it can be evicted at any time and is
//! reloaded from the data file when needed again.
//!
//! One mutex guards both LRUs; it is held only to look up, insert or
//! evict (values are `Arc`s, cloned out), never while decoding; what an
//! insertion evicts is freed after it is released.
//!
//! `NodeCache` holds, as `Arc`s: decoded nodes (`NodeData`: owned tracepoint,
//! footer, content range), pages of child offsets, and child indexes. Each
//! entry has a cost in bytes (an estimate of its heap plus the LRU's own
//! overhead); inserting evicts least-recently-used entries until the total is
//! within the budget (`LazyOptions::cache_bytes`, default 64 MiB); an entry
//! larger than its budget is returned but not kept. Child indexes — small,
//! and a whole-call scan to rebuild — have a quarter of the budget to
//! themselves, so a stream of decoded nodes cannot evict them.
//!
//! **One build per missing entry.** Threads that miss the same entry at
//! once (an IDE's threads all asking for a call's child count after its
//! cache was cleared) do not each scan the call: the first registers the
//! key as being built and builds it; the others wait for that build and
//! take its result from the cache (`NodeCache::get_or_build`). The keys
//! being built sit under the cache's one mutex, so a miss takes it twice
//! (look up and register, cache and unregister), and a finished build
//! wakes threads only when some wait for a build. A build
//! that fails, or whose entry is too large to keep, leaves each waiter to
//! build for itself. Builds never wait on an entry whose build waits on
//! them: a page past the first needs its scope's child index, and nothing
//! else a build needs is built through the cache.

use rustc_hash::FxBuildHasher;
use std::mem::size_of;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use lru::LruCache;
use rustc_hash::FxHashMap;

use crate::error::Result;

use crate::common::{EventId, LogicalOffset};
use crate::model::{Footer, Tracepoint, TracepointBody, Value};

/// Children per page of child addresses.
pub(crate) const PAGE: usize = 1024;

/// A cached thing's key. `slot` is the thread's position; scopes are named
/// by their content start (0 = the thread's top level).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Key {
    /// The decoded node at a logical offset.
    Node { slot: u32, at: u64 },
    /// The child index of a scope.
    Index { slot: u32, start: u64 },
    /// One page of a scope's child addresses.
    Page { slot: u32, start: u64, page: u32 },
}

/// A decoded tracepoint, its footer and its content range.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeData {
    pub(crate) tracepoint: Tracepoint<'static>,
    pub(crate) footer: Option<Footer<'static>>,
    pub(crate) content: Option<ContentRange>,
}

impl NodeData {
    /// The tracepoint.
    pub fn tracepoint(&self) -> &Tracepoint<'static> {
        &self.tracepoint
    }

    /// The footer of a finished container; `None` for leaves and unfinished
    /// containers.
    pub fn footer(&self) -> Option<&Footer<'static>> {
        self.footer.as_ref()
    }

    /// Where a container's children lie in its thread's logical stream
    /// (the end is the footer's start, or the stream's end for an
    /// unfinished container); `None` for leaves.
    pub fn content(&self) -> Option<std::ops::Range<LogicalOffset>> {
        self.content.map(|content| content.start..content.end)
    }

    /// Whether this is a container the recorder never finished.
    pub fn is_unfinished(&self) -> bool {
        self.content.is_some_and(|content| !content.finished)
    }
}

/// Where a container's children lie in its thread's logical stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct ContentRange {
    /// The first byte after the container's header.
    pub start: LogicalOffset,
    /// The footer's offset; for an unfinished container, the end of the stream.
    pub end: LogicalOffset,
    /// Whether the container has a footer.
    pub finished: bool,
}

/// How many children a scope has, and where some of them are: the
/// checkpoints, in child order, at most a page's worth of children or a
/// power of two of pages apart (however many children, the checkpoints fit
/// their share of the cache). A page is found by scanning from the last
/// checkpoint at or before its first child.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ChildIndex {
    /// Direct children.
    pub(crate) count: usize,
    /// The first child and others after it, ascending.
    pub(crate) checkpoints: Vec<Checkpoint>,
}

/// A child whose place the [`ChildIndex`] keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Checkpoint {
    /// Its number among its parent's children.
    pub(crate) child: usize,
    /// Where it starts.
    pub(crate) at: LogicalOffset,
    /// Its event id.
    pub(crate) event: EventId,
}

impl ChildIndex {
    /// How many pages the children fill.
    pub(crate) fn pages(&self) -> usize {
        self.count.div_ceil(PAGE)
    }

    /// The last checkpoint that passes `passes` (those passing it come
    /// first: by child number, offset or event id), and the pages holding
    /// the children from it to the next checkpoint.
    pub(crate) fn last_passing(
        &self,
        passes: impl FnMut(&Checkpoint) -> bool,
    ) -> Option<(Checkpoint, std::ops::Range<usize>)> {
        let k = self.checkpoints.partition_point(passes).checked_sub(1)?;
        let first = self.checkpoints[k].child / PAGE;
        let next = self.checkpoints.get(k + 1).map_or(self.count, |c| c.child);
        Some((
            self.checkpoints[k],
            first..next.div_ceil(PAGE).min(self.pages()),
        ))
    }
}

/// A cached value.
#[derive(Debug, Clone)]
pub(crate) enum Entry {
    Node(Arc<NodeData>),
    Index(Arc<ChildIndex>),
    Page(Arc<[LogicalOffset]>),
}

/// Bytes an LRU entry costs besides its value's heap: key, value, the
/// list links and the hash table's slot.
const ENTRY_OVERHEAD: usize =
    size_of::<Key>() + size_of::<(Entry, usize)>() + 4 * size_of::<usize>();

impl Entry {
    /// The decoded node, if this is one.
    pub(crate) fn into_node(self) -> Option<Arc<NodeData>> {
        match self {
            Entry::Node(node) => Some(node),
            _ => None,
        }
    }

    /// The child index, if this is one.
    pub(crate) fn into_index(self) -> Option<Arc<ChildIndex>> {
        match self {
            Entry::Index(index) => Some(index),
            _ => None,
        }
    }

    /// The page of child addresses, if this is one.
    pub(crate) fn into_page(self) -> Option<Arc<[LogicalOffset]>> {
        match self {
            Entry::Page(page) => Some(page),
            _ => None,
        }
    }

    /// What the entry costs, in bytes.
    pub(crate) fn cost(&self) -> usize {
        ENTRY_OVERHEAD
            + match self {
                Entry::Node(node) => size_of::<NodeData>() + node_heap(node),
                Entry::Index(index) => {
                    size_of::<ChildIndex>() + index.checkpoints.capacity() * size_of::<Checkpoint>()
                }
                Entry::Page(page) => page.len() * size_of::<LogicalOffset>(),
            }
    }
}

fn node_heap(node: &NodeData) -> usize {
    let tracepoint = &node.tracepoint;
    let mut bytes = tracepoint.child_diff_statuses.capacity();
    bytes += match &tracepoint.body {
        TracepointBody::MethodCall {
            receiver,
            arguments,
            ..
        } => {
            value_heap(receiver)
                + arguments.capacity() * size_of::<Value>()
                + arguments.iter().map(value_heap).sum::<usize>()
        }
        TracepointBody::ReadArray { array, value, .. }
        | TracepointBody::WriteArray { array, value, .. } => value_heap(array) + value_heap(value),
        TracepointBody::ReadLocal { value, .. } | TracepointBody::WriteLocal { value, .. } => {
            value_heap(value)
        }
        TracepointBody::ReadField {
            receiver, value, ..
        }
        | TracepointBody::WriteField {
            receiver, value, ..
        } => value_heap(receiver) + value_heap(value),
        TracepointBody::SnapshotBreakpoint {
            stack,
            values,
            trace_id,
            ..
        } => {
            stack.capacity() * 4
                + values.capacity() * size_of::<Value>()
                + values.iter().map(value_heap).sum::<usize>()
                + trace_id.as_ref().map_or(0, |id| id.as_bytes().len())
        }
        TracepointBody::Throw { exception } | TracepointBody::Catch { exception } => {
            value_heap(exception)
        }
        TracepointBody::Loop { .. } | TracepointBody::LoopIteration { .. } => 0,
    };
    bytes
        + match &node.footer {
            Some(Footer::MethodCall { result, exception }) => {
                value_heap(result) + exception.as_bytes().len()
            }
            _ => 0,
        }
}

fn value_heap(value: &Value<'_>) -> usize {
    match value {
        Value::String(s)
        | Value::RawString(s)
        | Value::JavaClass(s)
        | Value::KotlinClass(s)
        | Value::StringBuilder { text: s, .. } => s.as_bytes().len(),
        Value::Object { fields, .. } => {
            fields.capacity() * size_of::<(crate::model::JavaStr, Value)>()
                + fields
                    .iter()
                    .map(|(name, value)| name.as_bytes().len() + value_heap(value))
                    .sum::<usize>()
        }
        Value::Array { elements, .. } => {
            elements.capacity() * size_of::<Value>()
                + elements.iter().map(value_heap).sum::<usize>()
        }
        _ => 0,
    }
}

/// What the cache holds and has done.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// The budget, in bytes.
    pub budget: usize,
    /// Bytes held now (estimated heap of the cached values plus overhead).
    pub bytes: usize,
    /// The most bytes ever held at once.
    pub peak_bytes: usize,
    /// Entries held now.
    pub entries: usize,
    /// Decoded nodes held now.
    pub nodes: usize,
    /// Pages of child addresses held now.
    pub pages: usize,
    /// Lookups that found their entry.
    pub hits: u64,
    /// Lookups that did not.
    pub misses: u64,
    /// Entries built after a miss: a lookup that waited for another
    /// thread's build of the same entry and found it does not count.
    pub builds: u64,
    /// Entries evicted to stay within the budget.
    pub evictions: u64,
}

/// One LRU and what it holds.
struct Lru {
    // Fx hash: the default SipHash costs more than the rest of a lookup,
    // and the keys are small integers no attacker chooses.
    lru: LruCache<Key, (Entry, usize), FxBuildHasher>,
    bytes: usize,
    budget: usize,
}

impl Lru {
    fn new(budget: usize) -> Self {
        Lru {
            lru: LruCache::unbounded_with_hasher(FxBuildHasher),
            bytes: 0,
            budget,
        }
    }

    /// Inserts, then evicts to the budget; returns the entries evicted,
    /// for the caller to drop once the lock is released.
    fn insert(&mut self, key: Key, entry: Entry, cost: usize) -> Vec<Entry> {
        let mut evicted = Vec::new();
        if let Some((old, old_cost)) = self.lru.put(key, (entry, cost)) {
            self.bytes -= old_cost;
            evicted.push(old);
        }
        self.bytes += cost;
        while self.bytes > self.budget {
            let Some((_, (entry, cost))) = self.lru.pop_lru() else {
                break;
            };
            self.bytes -= cost;
            evicted.push(entry);
        }
        evicted
    }

    fn remove_where(&mut self, drop: &mut impl FnMut(&Key) -> bool) {
        let mut freed = 0;
        self.lru.retain(|key, (_, cost)| {
            let dropped = drop(key);
            if dropped {
                freed += *cost;
            }
            !dropped
        });
        self.bytes -= freed;
    }

    fn clear(&mut self) {
        self.lru.clear();
        self.bytes = 0;
    }
}

/// Child indexes get their own quarter of the budget: they are small and
/// costly to rebuild (a scan of a whole call), so a stream of decoded nodes
/// must not evict them.
struct Inner {
    indexes: Lru,
    others: Lru,
    peak_bytes: usize,
    evictions: u64,
    /// Keys being built, each with how many threads went to wait for it
    /// (a thread woken for another key's build and waiting again counts
    /// twice: only whether any waits matters).
    building: FxHashMap<Key, u32>,
}

impl Inner {
    fn lru(&mut self, key: &Key) -> &mut Lru {
        match key {
            Key::Index { .. } => &mut self.indexes,
            _ => &mut self.others,
        }
    }

    /// The entry for `key`, marked as recently used.
    fn get(&mut self, key: &Key) -> Option<Entry> {
        self.lru(key).lru.get(key).map(|(entry, _)| entry.clone())
    }

    /// Caches `entry`, which costs `cost` bytes (unless larger than its
    /// budget); returns what it evicted.
    fn insert(&mut self, key: Key, entry: Entry, cost: usize) -> Vec<Entry> {
        let lru = self.lru(&key);
        if cost > lru.budget {
            return vec![entry];
        }
        let evicted = lru.insert(key, entry, cost);
        self.evictions += evicted.len() as u64;
        self.peak_bytes = self.peak_bytes.max(self.indexes.bytes + self.others.bytes);
        evicted
    }
}

/// The cache.
pub(crate) struct NodeCache {
    inner: Mutex<Inner>,
    budget: usize,
    hits: AtomicU64,
    misses: AtomicU64,
    builds: AtomicU64,
    /// Signalled when a build that threads wait for ends.
    built: Condvar,
}

/// Takes a key off the keys being built if its build ends without caching
/// an entry (an error, a panic), and wakes the threads waiting for it.
struct Building<'a> {
    cache: &'a NodeCache,
    key: Key,
    /// Set once the entry is cached and the key taken off.
    done: bool,
}

impl Drop for Building<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let waiters = self.cache.lock().building.remove(&self.key);
        if waiters.is_some_and(|waiters| waiters > 0) {
            self.cache.built.notify_all();
        }
    }
}

impl NodeCache {
    /// An empty cache holding at most `budget` bytes.
    pub(crate) fn new(budget: usize) -> Self {
        let indexes = budget / 4;
        NodeCache {
            inner: Mutex::new(Inner {
                indexes: Lru::new(indexes),
                others: Lru::new(budget - indexes),
                peak_bytes: 0,
                evictions: 0,
                building: FxHashMap::default(),
            }),
            budget,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            builds: AtomicU64::new(0),
            built: Condvar::new(),
        }
    }

    /// The entry for `key`; on a miss, built by `build` and cached. While
    /// one thread builds a key, others missing it wait for that build and
    /// take its entry; if the cache does not hold it then (the build
    /// failed, or its entry was too large to keep), they build it
    /// themselves. The lock is taken once to look up (and register the
    /// build), once to cache the entry (and unregister it); threads are
    /// woken only when some wait.
    pub(crate) fn get_or_build(
        &self,
        key: Key,
        build: impl FnOnce() -> Result<Entry>,
    ) -> Result<Entry> {
        let mut inner = self.lock();
        if let Some(entry) = inner.get(&key) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(entry);
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        let mut waited = false;
        while let Some(waiters) = inner.building.get_mut(&key) {
            *waiters += 1;
            waited = true;
            inner = self
                .built
                .wait(inner)
                .unwrap_or_else(PoisonError::into_inner);
        }
        // After a wait: built by the thread waited for (which caches its
        // entry before it unregisters the key), or else built here without
        // registering, as every waiter does then.
        let mut building = None;
        if waited {
            if let Some(entry) = inner.get(&key) {
                return Ok(entry);
            }
        } else {
            inner.building.insert(key, 0);
            building = Some(Building {
                cache: self,
                key,
                done: false,
            });
        }
        drop(inner);
        self.builds.fetch_add(1, Ordering::Relaxed);
        let entry = build()?;
        let cost = entry.cost();
        let mut inner = self.lock();
        let evicted = inner.insert(key, entry.clone(), cost);
        let waiters = building.as_mut().and_then(|building| {
            building.done = true;
            inner.building.remove(&key)
        });
        drop(inner);
        if waiters.is_some_and(|waiters| waiters > 0) {
            self.built.notify_all();
        }
        // Freed once the lock is released.
        drop(evicted);
        Ok(entry)
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Nothing panics while holding the lock; recover if something did.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The entry for `key`, marked as recently used.
    pub(crate) fn get(&self, key: &Key) -> Option<Entry> {
        let found = self.lock().get(key);
        let counter = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Whether `key` is cached (does not count as a use).
    pub(crate) fn contains(&self, key: &Key) -> bool {
        self.lock().lru(key).lru.contains(key)
    }

    /// Caches `entry`, evicting the least recently used entries of its kind
    /// to stay within the budget. An entry larger than that is not kept.
    pub(crate) fn insert(&self, key: Key, entry: Entry) {
        let cost = entry.cost();
        let evicted = self.lock().insert(key, entry, cost);
        // Freed once the lock is released.
        drop(evicted);
    }

    /// Drops the entries `drop` selects.
    pub(crate) fn remove_where(&self, mut drop: impl FnMut(&Key) -> bool) {
        let mut inner = self.lock();
        inner.indexes.remove_where(&mut drop);
        inner.others.remove_where(&mut drop);
    }

    /// Drops everything.
    pub(crate) fn clear(&self) {
        let mut inner = self.lock();
        inner.indexes.clear();
        inner.others.clear();
    }

    /// Current statistics.
    pub(crate) fn stats(&self) -> CacheStats {
        let inner = self.lock();
        let (mut nodes, mut pages) = (0, 0);
        for (key, _) in inner.others.lru.iter() {
            match key {
                Key::Node { .. } => nodes += 1,
                Key::Page { .. } => pages += 1,
                Key::Index { .. } => {}
            }
        }
        CacheStats {
            budget: self.budget,
            bytes: inner.indexes.bytes + inner.others.bytes,
            peak_bytes: inner.peak_bytes,
            entries: inner.indexes.lru.len() + inner.others.lru.len(),
            nodes,
            pages,
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            builds: self.builds.load(Ordering::Relaxed),
            evictions: inner.evictions,
        }
    }

    /// The budget, in bytes.
    pub(crate) fn budget(&self) -> usize {
        self.budget
    }

    /// The share of the budget child indexes have.
    pub(crate) fn index_budget(&self) -> usize {
        self.budget / 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    fn page(offsets: &[u64]) -> Entry {
        Entry::Page(offsets.iter().map(|&at| LogicalOffset(at)).collect())
    }

    fn offsets(entry: &Entry) -> Vec<u64> {
        match entry {
            Entry::Page(page) => page.iter().map(|at| at.0).collect(),
            _ => panic!("not a page"),
        }
    }

    /// Runs `first`'s build of `key` until a second thread waits for it,
    /// then lets it end with `outcome`; returns what the second thread got.
    fn second_waits_for_first(outcome: Result<Entry>) -> (NodeCache, Result<Entry>) {
        let cache = NodeCache::new(1 << 20);
        let key = Key::Page {
            slot: 0,
            start: 0,
            page: 0,
        };
        let (go, wait_for_go) = mpsc::channel::<()>();
        let second = std::thread::scope(|scope| {
            let cache = &cache;
            let first = scope.spawn(move || {
                cache.get_or_build(key, || {
                    wait_for_go.recv().unwrap();
                    outcome
                })
            });
            while !cache.lock().building.contains_key(&key) {
                std::thread::yield_now();
            }
            let second = scope.spawn(move || cache.get_or_build(key, || Ok(page(&[2]))));
            while cache.lock().building.get(&key) == Some(&0) {
                std::thread::yield_now();
            }
            go.send(()).unwrap();
            let _ = first.join().unwrap();
            second.join().unwrap()
        });
        (cache, second)
    }

    #[test]
    fn a_waiter_takes_the_entry_it_waited_for() {
        let (cache, second) = second_waits_for_first(Ok(page(&[1])));
        assert_eq!(offsets(&second.unwrap()), [1]);
        assert_eq!(cache.builds.load(Ordering::Relaxed), 1);
        assert!(cache.lock().building.is_empty());
    }

    #[test]
    fn a_waiter_builds_for_itself_when_the_build_fails() {
        let failed = Err(crate::error::Error::from(std::io::Error::other("no")));
        let (cache, second) = second_waits_for_first(failed);
        assert_eq!(offsets(&second.unwrap()), [2]);
        assert_eq!(cache.builds.load(Ordering::Relaxed), 2);
        assert!(cache.lock().building.is_empty());
        let key = Key::Page {
            slot: 0,
            start: 0,
            page: 0,
        };
        assert_eq!(offsets(&cache.lock().get(&key).unwrap()), [2]);
    }
}
