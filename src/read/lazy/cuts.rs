//! Cutting a call's children into runs of siblings without counting them,
//! for the parallel printers.
//!
//! Cutting by child number (`children_range`) needs the call's child
//! index: a scan that skips every child, which for a root of a million
//! children is most of a core's work while a print is being planned. The
//! container table already knows where each container's content starts and
//! ends, so [`LazyTraceReader::sibling_cuts`] cuts after child *containers*
//! instead: for every `bytes` of the call's content, the first container
//! starting there or after, climbed up the table to the call's direct child
//! that holds it; the run ends after that child's footer. A footer's length
//! depends on its container's type, which the index does not hold, so the
//! child's header is found by searching back from its content start
//! (`headers`); a child whose header is not found so leaves its parent to
//! be cut by child number.
//!
//! Cuts are taken from cells nothing has contradicted, and the walk of
//! each run checks that it ends between siblings (`walk_range`), so a cell
//! that lies makes an error, never a misplaced line.
//!
//! The same runs let a large call's child index (`scopes`) be built on
//! several threads: each thread counts the children of consecutive runs
//! (one forward scan, releasing behind it), keeping every 64th child's
//! offset and event id; once the counts are added up, the checkpoints are
//! the kept children at or just before children `0, step, 2·step, …` (at
//! most 63 before), so nothing is read again to find them. A run whose
//! children do not end exactly at the next run's start leaves the call to
//! one scan.

use super::cache::{Checkpoint, ChildIndex, PAGE};
use super::{LazyNode, LazyTraceReader, Scan, Scope};
use crate::common::{EventId, LogicalOffset};
use crate::error::Result;

/// A run more than this many times the length asked for (around a child
/// too large to cut inside) leaves the call to be cut by child number,
/// which cuts into such a child.
const LONGEST_RUN: u64 = 8;

impl LazyTraceReader {
    /// The children of `node` that begin runs of its children of about
    /// `bytes` of its content each (the first run begins with its first
    /// child), found through the container table without counting the
    /// children. `None` where they are not found so: a leaf, a call with
    /// less than four runs' worth of content, a thread whose cells were
    /// contradicted, a run that would be far longer than `bytes`; cut by
    /// child number then ([`children_range`](Self::children_range)).
    ///
    /// A cut may stand on a reference object between two children; a walk
    /// from it skips it. The walk of each run is [`walk_visit_siblings`
    /// ](Self::walk_visit_siblings).
    pub fn sibling_cuts(&self, node: LazyNode, bytes: u64) -> Result<Option<Vec<LazyNode>>> {
        let Some(scope) = self.scope(node)? else {
            return Ok(None);
        };
        let cuts = self.scope_cuts(scope, bytes)?;
        Ok(cuts.map(|cuts| {
            let slot = scope.slot;
            cuts.into_iter().map(|at| self.node_at(slot, at)).collect()
        }))
    }

    /// [`sibling_cuts`](Self::sibling_cuts) of a scope, as offsets.
    fn scope_cuts(&self, scope: Scope, bytes: u64) -> Result<Option<Vec<LogicalOffset>>> {
        let bytes = bytes.max(1);
        let slot = scope.slot;
        let longest = bytes.saturating_mul(LONGEST_RUN);
        if scope.end.0.saturating_sub(scope.start.0) < bytes.saturating_mul(4)
            || !self.lookup.trusted(slot)
        {
            return Ok(None);
        }
        let (table, cells) = self.containers(slot)?;
        let Some(parent) = table.find_start(cells, scope.start, None) else {
            return Ok(None);
        };
        let mut stream = self.stream(slot);
        let mut cuts = Vec::new();
        let mut last = scope.start;
        loop {
            let target = last + bytes;
            if target >= scope.end {
                break;
            }
            let k = table.first_starting_at_or_after(cells, target);
            if k >= table.len() || table.start(cells, k) >= scope.end {
                break;
            }
            let Some(child) = table.child_holding(cells, k, Some(parent)) else {
                return Ok(None);
            };
            if table.end(cells, child) >= scope.end {
                break;
            }
            let Some((_, cut)) = self.container_span(&mut stream, slot, child)? else {
                return Ok(None);
            };
            if cut >= scope.end {
                break;
            }
            if cut.0 - last.0 > longest {
                return Ok(None);
            }
            cuts.push(cut);
            last = cut;
        }
        Ok((scope.end.0 - last.0 <= longest).then_some(cuts))
    }

    /// The child index of a large call (`scan_child_index`), built in runs
    /// of siblings counted on several threads at once: each run's scan
    /// keeps every [`SAMPLE`]-th child; once the runs' counts are added
    /// up, the checkpoints are chosen among those. `None`
    /// on one core, for a call of less than [`PARALLEL_INDEX_BYTES`], where
    /// the call is not cut into runs, or where a run does not end exactly at
    /// the next one's start: scanned whole then.
    pub(super) fn child_index_in_runs(
        &self,
        scope: Scope,
        most: usize,
    ) -> Result<Option<ChildIndex>> {
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
        if workers < 2 || scope.end.0.saturating_sub(scope.start.0) < PARALLEL_INDEX_BYTES {
            return Ok(None);
        }
        let Some(cuts) = self.scope_cuts(scope, INDEX_RUN_BYTES)? else {
            return Ok(None);
        };
        let starts = std::iter::once(scope.start).chain(cuts.iter().copied());
        let ends = cuts.iter().copied().chain(std::iter::once(scope.end));
        let runs: Vec<Scope> = starts
            .zip(ends)
            .map(|(start, end)| Scope {
                start,
                end,
                ..scope
            })
            .collect();
        let per_worker = runs.len().div_ceil(workers);
        let counted: Vec<Option<RunCount>> = std::thread::scope(|threads| {
            let workers: Vec<_> = runs
                .chunks(per_worker)
                .map(|chunk| {
                    threads.spawn(move || {
                        let mut scan = self.forward_scan(scope.slot)?;
                        scan.stream = scan.stream.released_at_end();
                        chunk
                            .iter()
                            .map(|&run| self.count_run(&mut scan, run))
                            .collect::<Result<Vec<_>>>()
                    })
                })
                .collect();
            let mut counted = Vec::with_capacity(runs.len());
            for worker in workers {
                let runs = worker
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
                counted.extend(runs);
            }
            Ok::<_, crate::error::Error>(counted)
        })?;
        let Some(counted) = counted.into_iter().collect::<Option<Vec<_>>>() else {
            return Ok(None);
        };
        let count: usize = counted.iter().map(|run| run.count).sum();
        let mut step = PAGE;
        while count.div_ceil(step) > most.max(1) {
            step *= 2;
        }
        // For children 0, step, 2·step, …: the last sample at or before
        // each (one of the same run: every run starts with one).
        let mut checkpoints = Vec::with_capacity(count.div_ceil(step));
        let mut base = 0usize;
        for run in &counted {
            let mut wanted = base.div_ceil(step) * step;
            while wanted < base + run.count {
                let sample = (wanted - base) / SAMPLE;
                let (at, event) = run.samples[sample];
                checkpoints.push(Checkpoint {
                    child: base + sample * SAMPLE,
                    at,
                    event,
                });
                wanted += step;
            }
            base += run.count;
        }
        Ok(Some(ChildIndex { count, checkpoints }))
    }

    /// The children of one run: their count and every [`SAMPLE`]-th one;
    /// `None` when the last one does not end exactly at the run's end.
    fn count_run(&self, scan: &mut Scan<'_>, run: Scope) -> Result<Option<RunCount>> {
        let mut counted = RunCount {
            count: 0,
            samples: Vec::new(),
        };
        let end = self.scan_children_in(scan, run, run.start, |at, header| {
            if counted.count.is_multiple_of(SAMPLE) {
                counted.samples.push((at, header.event));
            }
            counted.count += 1;
            true
        })?;
        Ok((end == run.end).then_some(counted))
    }
}

/// Content a call needs for its child index to be built in runs.
const PARALLEL_INDEX_BYTES: u64 = 8 << 20;
/// Bytes of content in each run a child index is built from.
const INDEX_RUN_BYTES: u64 = 1 << 20;
/// One child in this many of each run is kept while its children are
/// counted (16 bytes each: a quarter of a byte a child, for the time of
/// the build); the checkpoints are chosen among them.
const SAMPLE: usize = 64;

/// One run's children, counted.
struct RunCount {
    count: usize,
    /// The offset and event id of its children `0, SAMPLE, 2·SAMPLE, …`.
    samples: Vec<(LogicalOffset, EventId)>,
}
