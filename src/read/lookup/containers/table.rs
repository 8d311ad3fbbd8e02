//! `ContainerTable`: one `u32` cell number per container in start order,
//! with chunk maxima for parent searches, and the lookups over it.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

use super::order::*;
use super::*;
use crate::common::{EventId, LogicalOffset};
use crate::storage::TraceBytes;

/// Why a thread's container cells cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NestingError {
    /// Two containers end at the same footer.
    SameEnd { cell: u32 },
    /// The ranges of two containers overlap without nesting.
    Crossing { cell: u32 },
}

/// A table's cell numbers in start order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Order {
    /// Listed.
    Ids(Vec<u32>),
    /// Cell `k` is the `k`-th container (a sidecar's flat arrays).
    Identity(usize),
}

impl Default for Order {
    fn default() -> Self {
        Order::Ids(Vec::new())
    }
}

/// `u64`s in memory, or little-endian in a mapped sidecar.
#[derive(Debug)]
pub(crate) enum Words {
    /// In memory.
    Owned(Vec<u64>),
    /// `len` words at byte `at` of `bytes` (bounds checked when mapped).
    Mapped {
        /// The sidecar.
        bytes: TraceBytes,
        /// Byte offset of the first word.
        at: usize,
        /// How many words.
        len: usize,
    },
}

impl Default for Words {
    fn default() -> Self {
        Words::Owned(Vec::new())
    }
}

impl Words {
    /// Word `i`; 0 past the end (never reached: lengths are checked).
    #[inline]
    pub(crate) fn get(&self, i: usize) -> u64 {
        match self {
            Words::Owned(words) => words.get(i).copied().unwrap_or(0),
            Words::Mapped { bytes, at, len } if i < *len => bytes
                .as_slice()
                .get(at + i * 8..at + i * 8 + 8)
                .and_then(|word| <[u8; 8]>::try_from(word).ok())
                .map_or(0, u64::from_le_bytes),
            Words::Mapped { .. } => 0,
        }
    }

    /// How many.
    pub(crate) fn len(&self) -> usize {
        match self {
            Words::Owned(words) => words.len(),
            Words::Mapped { len, .. } => *len,
        }
    }
}

/// One thread's containers in start order.
#[derive(Debug, Default)]
pub(crate) struct ContainerTable {
    /// Cell numbers, ascending by content start (pre-order).
    pub(super) order: Order,
    /// The greatest end in each chunk of `CHUNK` containers of `order`.
    pub(super) chunk_max_end: Words,
    /// Whether event ids ascend in pre-order (real recorders: yes).
    events_ascend: bool,
    /// Positions in `order` sorted by event id, built on first use when
    /// event ids do not ascend.
    by_event: OnceLock<Vec<u32>>,
    /// Every [`FENCE`]-th container's start and event id ([`Fence`]).
    pub(super) fence: OnceLock<Fence>,
    /// Searches made without the fence (a sidecar's table, until it
    /// builds one).
    searches: AtomicU32,
}

/// How many searches a sidecar's table serves before it builds its
/// [`Fence`].
const FENCE_AFTER: u32 = 64;

/// How many containers apart the [`Fence`]'s entries are.
pub(super) const FENCE: usize = 64;
/// Fence entries read from a sidecar between two releases of its pages
/// (each entry passes 64 containers' starts and event ids: ~48 MiB).
const FENCE_RELEASE_EVERY: usize = 1 << 16;

/// The content start and event id of every [`FENCE`]-th container, on the
/// heap: a search by start (or by event id, when they ascend) looks here
/// first and then at the `FENCE` containers between two entries, so it
/// reads a page or two of the released cells instead of one page per step
/// of a binary search. A table built from cells takes its fence from the
/// pass that builds it; a sidecar's table reads every page of its starts
/// for one at its [`FENCE_AFTER`]-th search (a one-off lookup never pays).
#[derive(Debug, Default)]
pub(super) struct Fence {
    pub(super) starts: Vec<u64>,
    events: Vec<i32>,
    /// Every [`FENCE`]-th of `starts`: a search by start looks here first
    /// (a few KiB that stay cached), then at the `FENCE` starts between
    /// two of these, instead of missing the cache at every late step of
    /// a binary search over all of `starts`.
    top: Vec<u64>,
}

impl Fence {
    fn new(starts: Vec<u64>, events: Vec<i32>) -> Self {
        let top = starts.iter().step_by(FENCE).copied().collect();
        Fence {
            starts,
            events,
            top,
        }
    }

    /// The first of `starts` that fails `pred` (those failing it follow
    /// those passing it; the entry count when none does), found through
    /// `top`.
    pub(super) fn failing_start(&self, pred: impl Fn(u64) -> bool) -> usize {
        let failing = self.top.partition_point(|&s| pred(s));
        // `top[failing - 1]`, i.e. `starts[(failing - 1) * FENCE]`, passes;
        // `top[failing]`, i.e. `starts[failing * FENCE]`, fails.
        let (low, high) = Self::narrow(failing, self.starts.len());
        low + self.starts[low..high].partition_point(|&s| pred(s))
    }

    /// The positions in which the first container failing a predicate
    /// lies, given where it fails among the fence's entries (`failing`:
    /// the first entry that fails, or the entry count), for a table of
    /// `len` containers.
    pub(super) fn narrow(failing: usize, len: usize) -> (usize, usize) {
        let low = match failing {
            0 => 0,
            i => (i - 1) * FENCE + 1,
        };
        (low, (failing * FENCE).min(len))
    }
}

impl ContainerTable {
    /// The table of a sidecar's flat arrays: `len` containers already in
    /// start order, with their chunk maxima (`len.div_ceil(CHUNK)` words).
    pub(crate) fn mapped(len: usize, chunk_max_end: Words, events_ascend: bool) -> Self {
        debug_assert_eq!(chunk_max_end.len(), chunk_count(len));
        Self::new(Order::Identity(len), chunk_max_end, events_ascend, None)
    }

    fn new(order: Order, chunk_max_end: Words, events_ascend: bool, fence: Option<Fence>) -> Self {
        ContainerTable {
            order,
            chunk_max_end,
            events_ascend,
            by_event: OnceLock::new(),
            fence: fence.map(OnceLock::from).unwrap_or_default(),
            searches: AtomicU32::new(0),
        }
    }

    /// The chunk maxima, for a sidecar.
    pub(crate) fn chunk_max_ends(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.chunk_max_end.len()).map(|c| self.chunk_max_end.get(c))
    }

    /// Builds the table from a thread's container cells in post-order (the
    /// order of their ends, as a streaming writer emits them); cells in any
    /// other order are sorted by end first. Checks that ranges nest.
    pub(crate) fn from_post_order(
        cells: CellView<'_>,
        mut post: Vec<u32>,
    ) -> Result<Self, NestingError> {
        let read = move |&id: &u32| (id, cells.get(id));
        match Self::convert(cells, post.len(), post.iter().rev().map(read)) {
            Err(Convert::Unsorted) => {
                post.sort_by_key(|&id| cells.end(id));
                match Self::convert(cells, post.len(), post.iter().rev().map(read)) {
                    Ok(table) => Ok(table),
                    Err(Convert::Nesting(error)) => Err(error),
                    Err(Convert::Unsorted) => unreachable!("sorted by end"),
                }
            }
            Err(Convert::Nesting(error)) => Err(error),
            Ok(table) => Ok(table),
        }
    }

    /// The table of one backwards pass over the `count` cells of a
    /// post-order list ([`convert_into`]).
    pub(super) fn convert(
        cells: CellView<'_>,
        count: usize,
        post_backwards: impl Iterator<Item = (u32, RawIndexCell)>,
    ) -> Result<Self, Convert> {
        let mut order = vec![0u32; count];
        let mut fence_starts = vec![0; count.div_ceil(FENCE)];
        let mut fence_events = vec![0; count.div_ceil(FENCE)];
        let converted = convert_into(count, post_backwards, |placed| {
            order[placed.at] = placed.id;
            if placed.at.is_multiple_of(FENCE) {
                fence_starts[placed.at / FENCE] = placed.start;
                fence_events[placed.at / FENCE] = placed.event;
            }
        })?;
        let fence = Fence::new(fence_starts, fence_events);
        let events_ascend = if converted.descending {
            converted.events_ascend
        } else {
            order
                .windows(2)
                .all(|w| cells.event(w[0]) < cells.event(w[1]))
        };
        let chunk_max_end = Words::Owned(converted.chunk_max_end);
        Ok(Self::new(
            Order::Ids(order),
            chunk_max_end,
            events_ascend,
            Some(fence),
        ))
    }

    /// The table of cells already in start order.
    pub(super) fn from_pre_order(cells: CellView<'_>, order: Vec<u32>) -> Self {
        debug_assert!(
            order
                .windows(2)
                .all(|w| cells.start(w[0]) < cells.start(w[1]))
        );
        let chunk_max_end = order
            .chunks(CHUNK)
            .map(|chunk| chunk.iter().map(|&id| cells.end(id)).max().unwrap_or(0))
            .collect();
        let events_ascend = order
            .windows(2)
            .all(|w| cells.event(w[0]) < cells.event(w[1]));
        let fenced = order.iter().step_by(FENCE);
        let fence = Fence::new(
            fenced.clone().map(|&id| cells.start(id)).collect(),
            fenced.map(|&id| cells.event(id)).collect(),
        );
        let chunk_max_end = Words::Owned(chunk_max_end);
        Self::new(Order::Ids(order), chunk_max_end, events_ascend, Some(fence))
    }

    /// Adds `extra` cells (ascending by start, none sharing a start with a
    /// listed cell) and rebuilds the derived arrays.
    pub(crate) fn merge(&mut self, cells: CellView<'_>, extra: &[u32]) {
        if extra.is_empty() {
            return;
        }
        let mut order = Vec::with_capacity(self.len() + extra.len());
        let current: Vec<u32> = (0..self.len()).map(|k| self.id(k)).collect();
        let (mut a, mut b) = (current.iter().peekable(), extra.iter().peekable());
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(&&x), Some(&&y)) => {
                    if cells.start(x) < cells.start(y) {
                        a.next()
                    } else {
                        b.next()
                    }
                }
                (Some(_), None) => a.next(),
                (None, Some(_)) => b.next(),
                (None, None) => break,
            };
            order.push(*next.expect("peeked"));
        }
        *self = Self::from_pre_order(cells, order);
    }

    /// How many containers.
    pub(crate) fn len(&self) -> usize {
        match &self.order {
            Order::Ids(ids) => ids.len(),
            Order::Identity(len) => *len,
        }
    }

    /// The cell number of the `k`-th container.
    #[inline]
    pub(crate) fn id(&self, k: usize) -> u32 {
        match &self.order {
            Order::Ids(ids) => ids[k],
            Order::Identity(_) => k as u32,
        }
    }

    /// The first position in `low..high` whose cell fails `pred` (cells
    /// failing it must follow those passing it).
    #[inline]
    fn partition(&self, low: usize, high: usize, mut pred: impl FnMut(u32) -> bool) -> usize {
        match &self.order {
            Order::Ids(ids) => low + ids[low..high].partition_point(|&id| pred(id)),
            Order::Identity(_) => {
                let (mut low, mut high) = (low, high);
                while low < high {
                    let mid = low + (high - low) / 2;
                    if pred(mid as u32) {
                        low = mid + 1;
                    } else {
                        high = mid;
                    }
                }
                low
            }
        }
    }

    /// Content start of the `k`-th container.
    #[inline]
    pub(crate) fn start(&self, cells: CellView<'_>, k: usize) -> LogicalOffset {
        LogicalOffset(cells.start(self.id(k)))
    }

    /// Content end (footer offset, or the stream's end) of the `k`-th container.
    #[inline]
    pub(crate) fn end(&self, cells: CellView<'_>, k: usize) -> LogicalOffset {
        LogicalOffset(cells.end(self.id(k)))
    }

    /// Event id of the `k`-th container.
    #[inline]
    pub(crate) fn event(&self, cells: CellView<'_>, k: usize) -> EventId {
        EventId(cells.event(self.id(k)))
    }

    /// Whether event ids ascend in start order.
    pub(crate) fn events_ascend(&self) -> bool {
        self.events_ascend
    }

    /// The end of the container whose content starts at an offset, for
    /// offsets asked in ascending order ([`scan_unindexed`](crate::read::lookup::stream::scan_unindexed)):
    /// each search starts from the last container found.
    pub(crate) fn ends_by_start<'a>(
        &'a self,
        cells: CellView<'a>,
    ) -> impl FnMut(LogicalOffset) -> Option<LogicalOffset> + 'a {
        let mut hint = None;
        move |start| {
            let k = self.find_start(cells, start, hint)?;
            hint = Some(k);
            Some(self.end(cells, k))
        }
    }

    /// The container whose content starts at `start`. `hint`, when given, is
    /// a container known to start before `start` (a scan going forward
    /// passes the last one it found): the search gallops from there.
    pub(crate) fn find_start(
        &self,
        cells: CellView<'_>,
        start: LogicalOffset,
        hint: Option<usize>,
    ) -> Option<usize> {
        let key = start.0;
        let Some(hint) = hint.filter(|&h| h < self.len() && cells.start(self.id(h)) < key) else {
            return self.find_range(cells, start).map(|(k, _)| k);
        };
        // Gallop: the target is usually just past the hint's subtree.
        let (mut low, mut high) = (hint + 1, self.len());
        let mut step = 1;
        loop {
            let probe = hint + step;
            if probe >= high {
                break;
            }
            if cells.start(self.id(probe)) >= key {
                high = probe + 1;
                break;
            }
            low = probe + 1;
            step *= 2;
        }
        let at = self.partition(low, high, |id| cells.start(id) < key);
        (at < self.len() && cells.start(self.id(at)) == key).then_some(at)
    }

    /// The container whose content starts at `start`, and its content end.
    pub(crate) fn find_range(
        &self,
        cells: CellView<'_>,
        start: LogicalOffset,
    ) -> Option<(usize, LogicalOffset)> {
        let (at, first) = self.search_start(cells, |s| s < start.0);
        let (found, end) = match first {
            Some(first) => first,
            None if at < self.len() => (cells.start(self.id(at)), None),
            None => return None,
        };
        if found != start.0 {
            return None;
        }
        let end = end.unwrap_or_else(|| cells.end(self.id(at)));
        Some((at, LogicalOffset(end)))
    }

    /// The first container whose content starts at or after `at` (the
    /// table's length when none does).
    pub(crate) fn first_starting_at_or_after(
        &self,
        cells: CellView<'_>,
        at: LogicalOffset,
    ) -> usize {
        self.search_start(cells, |start| start < at.0).0
    }

    /// The last container whose content starts at or before `at`.
    pub(crate) fn last_starting_at_or_before(
        &self,
        cells: CellView<'_>,
        at: LogicalOffset,
    ) -> Option<usize> {
        self.search_start(cells, |start| start <= at.0)
            .0
            .checked_sub(1)
    }

    /// The container that is a direct child of the `parent`-th one (of the
    /// top level for `None`) and holds the `k`-th one or is it; `None` when
    /// no such container holds it.
    pub(crate) fn child_holding(
        &self,
        cells: CellView<'_>,
        k: usize,
        parent: Option<usize>,
    ) -> Option<usize> {
        let mut child = k;
        loop {
            let up = self.parent(cells, child);
            if up == parent {
                return Some(child);
            }
            child = up?;
        }
    }

    /// The innermost container enclosing the `k`-th one.
    pub(crate) fn parent(&self, cells: CellView<'_>, k: usize) -> Option<usize> {
        // Of the containers before `k` in start order, exactly its ancestors
        // end at or after it starts (a finished one ends at its footer, after
        // every descendant's header; an unfinished one at the stream's end,
        // where the content of a header written last starts too); the
        // nearest one is its parent.
        let start = cells.start(self.id(k));
        let chunk = k / CHUNK;
        let encloses = |j: usize| cells.end(self.id(j)) >= start;
        if let Some(j) = (chunk * CHUNK..k).rev().find(|&j| encloses(j)) {
            return Some(j);
        }
        let chunk = (0..chunk)
            .rev()
            .find(|&c| self.chunk_max_end.get(c) >= start)?;
        (chunk * CHUNK..(chunk + 1) * CHUNK)
            .rev()
            .find(|&j| encloses(j))
    }

    /// The container with event id `event`.
    pub(crate) fn find_event(&self, cells: CellView<'_>, event: EventId) -> Option<usize> {
        if self.events_ascend {
            let at = self.partition_by_event(cells, |id| id < event.0);
            return (at < self.len() && cells.event(self.id(at)) == event.0).then_some(at);
        }
        let by_event = self.by_event.get_or_init(|| {
            let mut positions: Vec<u32> = (0..self.len() as u32).collect();
            positions.sort_by_key(|&k| cells.event(self.id(k as usize)));
            positions
        });
        let at = by_event.partition_point(|&k| cells.event(self.id(k as usize)) < event.0);
        by_event
            .get(at)
            .map(|&k| k as usize)
            .filter(|&k| cells.event(self.id(k)) == event.0)
    }

    /// The last container (in start order) with an event id below `event`;
    /// meaningful when event ids ascend.
    pub(crate) fn last_event_below(&self, cells: CellView<'_>, event: EventId) -> Option<usize> {
        self.partition_by_event(cells, |id| id < event.0)
            .checked_sub(1)
    }

    /// The fence: built with the table, or for a sidecar's table once it
    /// has served [`FENCE_AFTER`] searches.
    fn fence(&self, cells: CellView<'_>) -> Option<&Fence> {
        if let Some(fence) = self.fence.get() {
            return Some(fence);
        }
        if self.searches.fetch_add(1, Ordering::Relaxed) < FENCE_AFTER {
            return None;
        }
        Some(self.fence.get_or_init(|| {
            // A sidecar's arrays are read through every page: what was read
            // is released as the pass goes, not only at its end, so the
            // pages it leaves resident stay within a few tens of MiB
            // whatever the table's length.
            let mapped = match &self.chunk_max_end {
                Words::Mapped { bytes, .. } => Some(bytes),
                _ => None,
            };
            let release = |_read: usize| {
                let _released = mapped.is_some_and(|bytes| bytes.release_all());
                #[cfg(test)]
                if _released {
                    fence_tests::RELEASED_AT.with(|at| at.borrow_mut().push(_read));
                }
            };
            let entries = self.len().div_ceil(FENCE);
            let (mut starts, mut events) =
                (Vec::with_capacity(entries), Vec::with_capacity(entries));
            for (n, k) in (0..self.len()).step_by(FENCE).enumerate() {
                let id = self.id(k);
                starts.push(cells.start(id));
                events.push(cells.event(id));
                if n % FENCE_RELEASE_EVERY == FENCE_RELEASE_EVERY - 1 {
                    release(n + 1);
                }
            }
            release(entries);
            Fence::new(starts, events)
        }))
    }

    /// The first position whose content start fails `pred` (those failing
    /// it follow those passing it), searched through the [`Fence`]; with
    /// that container's start, and its end when read with it (`None` when
    /// not read, or past the last). Where the cells are copied, the fewer
    /// than [`FENCE`] containers the fence leaves are read at once
    /// ([`CellView::ranges`]: index cells with their ends) instead of one
    /// read per step of the search.
    pub(super) fn search_start(
        &self,
        cells: CellView<'_>,
        pred: impl Fn(u64) -> bool,
    ) -> (usize, Option<(u64, Option<u64>)>) {
        let (low, high) = match self.fence(cells) {
            Some(fence) => Fence::narrow(fence.failing_start(&pred), self.len()),
            None => (0, self.len()),
        };
        let n = high - low;
        if cells.copies() && n <= FENCE {
            let (mut starts, mut ends) = ([0u64; FENCE], [0u64; FENCE]);
            let starts = &mut starts[..n];
            // Index cells hold their ends: read with the starts.
            let (positions, mut ends) = match self.positions(low) {
                Positions::Listed(ids) => (Positions::Listed(&ids[..n]), Some(&mut ends[..n])),
                from => (from, None),
            };
            if cells.ranges(positions, starts, ends.as_deref_mut()) == n {
                let passing = starts.partition_point(|&s| pred(s));
                let end = |ends: &[u64]| ends[passing];
                let first = (starts.get(passing)).map(|&s| (s, ends.as_deref().map(end)));
                return (low + passing, first);
            }
        }
        (self.partition(low, high, |id| pred(cells.start(id))), None)
    }

    /// The cells of the containers from position `first` on, for
    /// [`CellView::ranges`].
    pub(super) fn positions(&self, first: usize) -> Positions<'_> {
        match &self.order {
            Order::Ids(ids) => Positions::Listed(ids.get(first..).unwrap_or(&[])),
            Order::Identity(_) => Positions::From(first),
        }
    }

    /// [`search_start`](Self::search_start) by event id, for
    /// tables whose event ids ascend.
    fn partition_by_event(&self, cells: CellView<'_>, pred: impl Fn(i32) -> bool) -> usize {
        let (low, high) = match self.fence(cells) {
            Some(fence) => Fence::narrow(fence.events.partition_point(|&e| pred(e)), self.len()),
            None => (0, self.len()),
        };
        self.partition(low, high, |id| pred(cells.event(id)))
    }

    /// Bytes of heap the table takes.
    pub(crate) fn heap_bytes(&self) -> usize {
        let order = match &self.order {
            Order::Ids(ids) => ids.capacity() * 4,
            Order::Identity(_) => 0,
        };
        let chunks = match &self.chunk_max_end {
            Words::Owned(words) => words.capacity() * 8,
            Words::Mapped { .. } => 0,
        };
        let fence = self.fence.get().map_or(0, |f| {
            f.starts.capacity() * 8 + f.events.capacity() * 4 + f.top.capacity() * 8
        });
        order + chunks + fence + self.by_event.get().map_or(0, |v| v.capacity() * 4)
    }
}

#[cfg(test)]
mod fence_tests {
    use std::cell::RefCell;
    use std::io::Write;

    use super::*;

    thread_local! {
        /// How many fence entries a sidecar's fence pass on this thread
        /// had read each time it released the sidecar's pages.
        pub(super) static RELEASED_AT: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
    }

    /// A sidecar's table releases the pages its fence pass reads as the
    /// pass goes, every [`FENCE_RELEASE_EVERY`] entries, not only at its
    /// end: what the pass leaves resident stays bounded whatever the
    /// table's length.
    #[test]
    fn a_sidecars_fence_pass_releases_its_pages_as_it_goes() {
        // Enough containers for the pass to release once before its end.
        let entries = FENCE_RELEASE_EVERY + 100;
        let len = entries * FENCE;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sidecar");
        // Siblings: starts, ends and event ids ascending, then the chunk
        // maxima, as a sidecar lays out its arrays.
        let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        for i in 0..len as u64 {
            out.write_all(&(10 * i).to_le_bytes()).unwrap();
        }
        for i in 0..len as u64 {
            out.write_all(&(10 * i + 5).to_le_bytes()).unwrap();
        }
        for i in 0..len as i32 {
            out.write_all(&i.to_le_bytes()).unwrap();
        }
        let chunks = chunk_count(len);
        for c in 0..chunks {
            let last = (len.min((c + 1) * CHUNK) - 1) as u64;
            out.write_all(&(10 * last + 5).to_le_bytes()).unwrap();
        }
        out.into_inner().unwrap().sync_all().unwrap();
        let bytes = TraceBytes::map(&path).unwrap();
        let flat = MappedCells {
            bytes: bytes.clone(),
            starts: 0,
            ends: len * 8,
            events: len * 16,
            len,
        };
        let maxima = Words::Mapped {
            bytes,
            at: len * 20,
            len: chunks,
        };
        let table = ContainerTable::mapped(len, maxima, true);
        let cells = CellView::flat(&flat, Reads::Lend);
        RELEASED_AT.with(|at| at.borrow_mut().clear());
        for search in 0..=FENCE_AFTER as usize {
            let event = (search * 7919 % len) as i32;
            assert_eq!(
                table.find_event(cells, EventId(event)),
                Some(event as usize)
            );
            let built = table.fence.get().is_some();
            assert_eq!(built, search == FENCE_AFTER as usize, "search {search}");
        }
        let released = RELEASED_AT.with(|at| at.take());
        assert_eq!(released, [FENCE_RELEASE_EVERY, entries]);
    }

    /// The search through the fence's top finds what a binary search over
    /// all of its starts finds, at every length around the top's strides.
    #[test]
    fn failing_start_agrees_with_a_plain_search() {
        for len in [0, 1, 2, 63, 64, 65, 127, 4095, 4096, 4097, 8193, 10_000] {
            let starts: Vec<u64> = (0..len as u64).map(|i| 10 + 3 * i).collect();
            let fence = Fence::new(starts.clone(), vec![0; len]);
            for key in (0..=(10 + 3 * len as u64 + 1)).step_by(1 + len / 97) {
                let expected = starts.partition_point(|&s| s < key);
                assert_eq!(fence.failing_start(|s| s < key), expected, "{len} {key}");
            }
        }
    }
}
