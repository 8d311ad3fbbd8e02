//! Runs of consecutive containers (in start order) read at once, and the
//! innermost container holding an offset before such a run: what the lazy
//! reader's random reads look containers up in (`lazy/nodes/short.rs`).
//!
//! A run from a key ([`ContainerTable::run_from`]) or up to one
//! ([`ContainerTable::run_before`]) reads the cells the search for the key
//! would read and the run beside them together ([`CellView::ranges`]: in
//! one read where the cells are copied and lie close enough). The
//! innermost container holding an offset, when it lies before such a run,
//! is found through the chunk maxima (read in batches) and the one or two
//! chunks they point to ([`ContainerTable::holding_before`]).

use super::table::{FENCE, Fence};
use super::*;
use crate::storage::ByteSource;

/// A container's content start and end.
pub(crate) type Range = (LogicalOffset, LogicalOffset);

/// The content starts and ends of a run of consecutive containers of a
/// table (in start order), read at once ([`ContainerTable::run`]): what a
/// scan of a short call's children looks its containers up in.
#[derive(Debug)]
pub(crate) struct Run {
    /// The table position of the container after the run's last.
    next: usize,
    starts: Vec<u64>,
    ends: Vec<u64>,
    /// Whether the run reaches the table's end.
    to_the_end: bool,
}

impl Run {
    /// The run from its first container starting at or after `key` on, at
    /// most `count` long.
    fn starting_at(self, key: LogicalOffset, count: usize) -> Run {
        let first = self.starts.partition_point(|&start| start < key.0);
        let end = first.saturating_add(count).min(self.starts.len());
        self.keep(first..end)
    }

    /// The run up to its last container starting at or before `key`, at
    /// most `count` long.
    fn ending_at(self, key: LogicalOffset, count: usize) -> Run {
        let end = self.starts.partition_point(|&start| start <= key.0);
        self.keep(end.saturating_sub(count)..end)
    }

    /// The containers `range` of the run (positions in the run).
    fn keep(mut self, range: std::ops::Range<usize>) -> Run {
        self.to_the_end &= range.end == self.starts.len();
        self.next -= self.starts.len() - range.end;
        self.starts.truncate(range.end);
        self.ends.truncate(range.end);
        self.starts.drain(..range.start);
        self.ends.drain(..range.start);
        self
    }

    /// How many containers the run holds.
    pub(crate) fn len(&self) -> usize {
        self.starts.len()
    }

    /// The table position of the run's first container.
    pub(crate) fn position(&self) -> usize {
        self.next - self.starts.len()
    }

    /// The content start and end of each of the run's containers.
    pub(crate) fn ranges(
        &self,
    ) -> impl DoubleEndedIterator<Item = (LogicalOffset, LogicalOffset)> + ExactSizeIterator + '_
    {
        let range = |(&start, &end)| (LogicalOffset(start), LogicalOffset(end));
        self.starts.iter().zip(&self.ends).map(range)
    }

    /// The container with the greatest end from the run's `skip`-th on:
    /// its table position, content start and end.
    pub(crate) fn widest_from(&self, skip: usize) -> Option<(usize, Range)> {
        let (i, range) = (self.ranges().enumerate().skip(skip)).max_by_key(|&(_, (_, end))| end)?;
        Some((self.position() + i, range))
    }

    /// The content start and end of the run's `i`-th container.
    pub(crate) fn range(&self, i: usize) -> Option<(LogicalOffset, LogicalOffset)> {
        Some((
            LogicalOffset(*self.starts.get(i)?),
            LogicalOffset(*self.ends.get(i)?),
        ))
    }

    /// Appends `more`, the run of containers right after this one's.
    fn append(&mut self, more: Run) {
        debug_assert_eq!(more.next - more.starts.len(), self.next);
        self.starts.extend_from_slice(&more.starts);
        self.ends.extend_from_slice(&more.ends);
        self.next = more.next;
        self.to_the_end = more.to_the_end;
    }

    /// Whether the run holds no container.
    fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    /// Whether every container of the table starting at or after the
    /// run's first and before `end` is in the run.
    pub(crate) fn covers(&self, end: LogicalOffset) -> bool {
        self.to_the_end || self.starts.last().is_some_and(|&start| start >= end.0)
    }

    /// The content end of the container whose content starts at `start`,
    /// if the run holds it.
    pub(crate) fn end_of(&self, start: LogicalOffset) -> Option<LogicalOffset> {
        let i = self.starts.binary_search(&start.0).ok()?;
        self.ends.get(i).copied().map(LogicalOffset)
    }
}

/// What [`ContainerTable::holding_before`] finds.
#[derive(Debug, Default)]
pub(crate) struct HoldingBefore {
    /// The table position and content start of the innermost container
    /// holding the offset; `None` at the top level.
    pub(crate) holding: Option<(usize, LogicalOffset)>,
    /// The container with the greatest end between that one and the run,
    /// if any: its table position, content start and end.
    pub(crate) widest: Option<(usize, Range)>,
}

/// Updates `widest` (the container with the greatest end) with the
/// containers of `run` from its `skip`-th on.
fn widen(widest: &mut Option<(usize, Range)>, run: &Run, skip: usize) {
    if let Some(candidate) = run.widest_from(skip)
        && widest.is_none_or(|(_, (_, end))| candidate.1.1 > end)
    {
        *widest = Some(candidate);
    }
}

/// Chunk maxima read backwards, a batch of [`ChunkMaxima::BATCH`] at a
/// time when a sidecar holds them.
#[derive(Default)]
struct ChunkMaxima {
    /// The chunk of `words[0]`.
    from: usize,
    words: Vec<u64>,
}

impl ChunkMaxima {
    const BATCH: usize = 512;

    /// Chunk `c`'s greatest end, read as `cells` are.
    fn get(&mut self, maxima: &Words, cells: CellView<'_>, c: usize) -> Option<u64> {
        let (bytes, at) = match maxima {
            Words::Owned(words) => return words.get(c).copied(),
            Words::Mapped { bytes, at, len } if c < *len => (bytes, *at),
            Words::Mapped { .. } => return None,
        };
        if let Some(&word) = c.checked_sub(self.from).and_then(|i| self.words.get(i)) {
            return Some(word);
        }
        self.from = (c + 1).saturating_sub(Self::BATCH);
        self.words = vec![0; c + 1 - self.from];
        let reads = if cells.copies() {
            Reads::Copy
        } else {
            Reads::Lend
        };
        ByteSource::new(bytes, reads).u64s_le((at + self.from * 8) as u64, &mut self.words);
        self.words.get(c - self.from).copied()
    }
}

impl ContainerTable {
    /// The starts and ends of up to `count` containers from table position
    /// `first` on (fewer at the table's end), read at once where the cells
    /// allow ([`CellView::ranges`]).
    pub(crate) fn run(&self, cells: CellView<'_>, first: usize, count: usize) -> Run {
        let first = first.min(self.len());
        let end = first.saturating_add(count).min(self.len());
        let n = end - first;
        let (mut starts, mut ends) = (vec![0; n], vec![0; n]);
        let mut done = 0;
        while done < n {
            let positions = match self.positions(first + done) {
                Positions::Listed(ids) => Positions::Listed(&ids[..n - done]),
                from => from,
            };
            done += cells.ranges(positions, &mut starts[done..], Some(&mut ends[done..]));
        }
        Run {
            next: end,
            starts,
            ends,
            to_the_end: end == self.len(),
        }
    }

    /// The positions `low..high` in which the first container whose start
    /// fails `pred` lies (those failing it follow those passing it),
    /// narrowed by the [`Fence`] when the table has one.
    fn fenced(&self, pred: impl Fn(u64) -> bool) -> (usize, usize) {
        match self.fence.get() {
            Some(fence) => Fence::narrow(fence.failing_start(pred), self.len()),
            None => (0, self.len()),
        }
    }

    /// The first container whose content starts at or after `key` and up
    /// to `count - 1` after it: the cells that search would read and the
    /// run after them, read together when the fence narrows the search.
    pub(crate) fn run_from(&self, cells: CellView<'_>, key: LogicalOffset, count: usize) -> Run {
        let (low, high) = self.fenced(|s| s < key.0);
        if high - low <= FENCE {
            let run = self.run(cells, low, (high - low).saturating_add(count));
            return run.starting_at(key, count);
        }
        let first = self.first_starting_at_or_after(cells, key);
        self.run(cells, first, count)
    }

    /// The run of up to `count` containers that ends with the last one
    /// whose content starts at or before `key` (empty when none does): the
    /// cells the search for that container reads and the run before them,
    /// read together when the fence narrows the search.
    pub(crate) fn run_before(&self, cells: CellView<'_>, key: LogicalOffset, count: usize) -> Run {
        let (low, high) = self.fenced(|s| s <= key.0);
        if high - low <= FENCE {
            let first = low.saturating_sub(count);
            return self.run(cells, first, high - first).ending_at(key, count);
        }
        let end = self
            .last_starting_at_or_before(cells, key)
            .map_or(0, |k| k + 1);
        self.run(cells, end.saturating_sub(count), count.min(end))
    }

    /// The innermost container before table position `first` holding
    /// offset `at` (none from `first` to the last container starting at
    /// or before `at` holds it) and the widest container between the two:
    /// found through the chunk maxima and the chunks they lie in.
    pub(crate) fn holding_before(
        &self,
        cells: CellView<'_>,
        first: usize,
        at: LogicalOffset,
    ) -> Option<HoldingBefore> {
        let mut chunk = first / CHUNK;
        let mut part = self.run(cells, chunk * CHUNK, first - chunk * CHUNK);
        let mut widest = None;
        let mut maxima = ChunkMaxima::default();
        loop {
            let holding = part.ranges().rposition(|(_, end)| end > at);
            widen(&mut widest, &part, holding.map_or(0, |i| i + 1));
            if let Some(i) = holding {
                let holding = Some((part.position() + i, part.range(i)?.0));
                return Some(HoldingBefore { holding, widest });
            }
            // The chunk before holding `at`, and the greatest end of those
            // between.
            let mut greatest: Option<(u64, usize)> = None;
            let next = loop {
                let Some(c) = chunk.checked_sub(1) else {
                    break None;
                };
                chunk = c;
                let most = maxima.get(&self.chunk_max_end, cells, c)?;
                if most > at.0 {
                    break Some(c);
                }
                if greatest.is_none_or(|(m, _)| most > m) {
                    greatest = Some((most, c));
                }
            };
            let wider = |&(most, _): &(u64, usize)| widest.is_none_or(|(_, (_, end))| most > end.0);
            if let Some((_, c)) = greatest.filter(wider) {
                widen(&mut widest, &self.run(cells, c * CHUNK, CHUNK), 0);
            }
            match next {
                Some(c) => part = self.run(cells, c * CHUNK, CHUNK),
                None => {
                    return Some(HoldingBefore {
                        holding: None,
                        widest,
                    });
                }
            }
        }
    }

    /// Extends `run` with the containers after it until it
    /// [`covers`](Run::covers) `end`, or holds `most`, each read
    /// ([`run`](Self::run)) doubling it at most; whether it covers `end`.
    pub(crate) fn extend_run(
        &self,
        cells: CellView<'_>,
        run: &mut Run,
        end: LogicalOffset,
        most: usize,
    ) -> bool {
        while !run.covers(end) {
            let wanted = most.saturating_sub(run.len()).min(run.len().max(1));
            let more = self.run(cells, run.next, wanted);
            if more.is_empty() {
                return false;
            }
            run.append(more);
        }
        true
    }
}
