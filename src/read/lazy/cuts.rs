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
//! Runs of the same kind let a large call's child index (`scopes`) be
//! built on several threads: the workers take runs of about 2 MiB in turn,
//! each with its own forward scan releasing behind it. A run's scan counts
//! its children, keeping every 64th child's offset and event id; once the
//! counts are added up, the checkpoints are the kept children at or just
//! before children `0, step, 2·step, …` (at most 63 before), so nothing is
//! read again to find them. A run whose children do not end exactly at the
//! next run's start leaves the call to one scan.

use super::cache::{Checkpoint, ChildIndex, PAGE};
use super::{LazyNode, LazyTraceReader, Scan, Scope};
use crate::common::{EventId, LogicalOffset};
use crate::error::Result;
use crate::turns::in_turns;

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
        let Some(cuts) = self.scope_cuts(scope, bytes)? else {
            return Ok(None);
        };
        let longest = bytes.max(1).saturating_mul(LONGEST_RUN);
        let starts = std::iter::once(scope.start).chain(cuts.iter().copied());
        let ends = cuts.iter().copied().chain(std::iter::once(scope.end));
        if starts
            .zip(ends)
            .any(|(start, end)| end.0 - start.0 > longest)
        {
            return Ok(None);
        }
        let node = |at| self.node_at(scope.slot, at);
        Ok(Some(cuts.into_iter().map(node).collect()))
    }

    /// The offsets where runs of `scope`'s children of about `bytes` each
    /// begin after its first: after each run, the direct child holding the
    /// first container that starts `bytes` or more after the last cut, up
    /// to the scope's last child. `None` for less than four runs' worth of
    /// content, a thread whose cells were contradicted, or where the table
    /// does not tell.
    fn scope_cuts(&self, scope: Scope, bytes: u64) -> Result<Option<Vec<LogicalOffset>>> {
        let bytes = bytes.max(1);
        if scope.end.0.saturating_sub(scope.start.0) < bytes.saturating_mul(4)
            || !self.lookup.trusted(scope.slot)
        {
            return Ok(None);
        }
        let (table, cells) = self.containers(scope.slot)?;
        let Some(parent) = table.find_start(cells, scope.start, None) else {
            return Ok(None);
        };
        let mut stream = self.stream(scope.slot);
        let mut cuts = Vec::new();
        let mut last = scope.start;
        while last + bytes < scope.end {
            let k = table.first_starting_at_or_after(cells, last + bytes);
            if k >= table.len() || table.start(cells, k) >= scope.end {
                break;
            }
            let Some(child) = table.child_holding(cells, k, Some(parent)) else {
                return Ok(None);
            };
            if table.end(cells, child) >= scope.end {
                break;
            }
            match self.container_span(&mut stream, scope.slot, child)? {
                None => return Ok(None),
                Some((_, cut)) if cut >= scope.end => break,
                Some((_, cut)) => {
                    cuts.push(cut);
                    last = cut;
                }
            }
        }
        Ok(Some(cuts))
    }

    /// The child index of a large call (`scan_child_index`), counted in
    /// runs of siblings on several threads at once: the runs are those of
    /// [`scope_cuts`](Self::scope_cuts) of about [`INDEX_RUN_BYTES`] each,
    /// which the workers take in turns (a run around a large child takes
    /// longer). Each run's scan keeps every [`SAMPLE`]-th child; once the
    /// counts are added up, the checkpoints are chosen among those. `None`
    /// on one core, for a call of less than [`PARALLEL_INDEX_BYTES`], where
    /// the call is not cut so, or where a run does not end exactly at the
    /// next one's start: scanned whole then.
    pub(super) fn child_index_in_runs(
        &self,
        scope: Scope,
        most: usize,
    ) -> Result<Option<ChildIndex>> {
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
        let len = scope.end.0.saturating_sub(scope.start.0);
        if workers < 2 || len < PARALLEL_INDEX_BYTES {
            return Ok(None);
        }
        // An error leaves the call to the whole scan, which meets it again
        // and reports it.
        let Ok(Some(cuts)) = self.scope_cuts(scope, INDEX_RUN_BYTES) else {
            return Ok(None);
        };
        let bounds: Vec<LogicalOffset> = std::iter::once(scope.start)
            .chain(cuts)
            .chain(std::iter::once(scope.end))
            .collect();
        let pieces = bounds.len() - 1;
        // Each worker's forward scan, made on its first run.
        let counted = in_turns(
            workers,
            pieces,
            || None,
            |scan: &mut Option<Scan<'_>>, piece| -> Result<Option<RunCount>> {
                let scan = match scan {
                    Some(scan) => scan,
                    None => {
                        let mut made = self.forward_scan(scope.slot)?;
                        made.stream = made.stream.released_at_end();
                        scan.insert(made)
                    }
                };
                let (start, end) = (bounds[piece], bounds[piece + 1]);
                let run = Scope {
                    start,
                    end,
                    ..scope
                };
                self.count_run(scan, run)
            },
            |counted| !matches!(counted, Ok(Some(_))),
        );
        // A run not counted, or not ending at the next one's start, leaves
        // the call to one scan; the first error in run order is the one.
        let mut runs = Vec::with_capacity(pieces);
        for counted in counted {
            match counted {
                Some(Ok(Some(run))) => runs.push(run),
                Some(Err(error)) => return Err(error),
                Some(Ok(None)) | None => return Ok(None),
            }
        }
        let count: usize = runs.iter().map(|run| run.count).sum();
        let mut step = PAGE;
        while count.div_ceil(step) > most.max(1) {
            step *= 2;
        }
        // For children 0, step, 2·step, …: the last sample at or before
        // each (one of the same run: every run starts with one).
        let mut checkpoints = Vec::with_capacity(count.div_ceil(step));
        let mut base = 0usize;
        for run in &runs {
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

/// Content a call needs for its child index to be built in runs (four
/// runs: what [`scope_cuts`](LazyTraceReader::scope_cuts) cuts at least).
const PARALLEL_INDEX_BYTES: u64 = 4 * INDEX_RUN_BYTES;
/// Bytes of content in each run a child index is built from.
const INDEX_RUN_BYTES: u64 = 2 << 20;
/// One child in this many of each run is kept while its children are
/// counted (16 bytes each: a quarter of a byte a child, for the time of
/// the build); the checkpoints are chosen among them.
const SAMPLE: usize = 64;

/// One run's children, counted.
#[derive(Default)]
struct RunCount {
    count: usize,
    /// The offset and event id of its children `0, SAMPLE, 2·SAMPLE, …`.
    samples: Vec<(LogicalOffset, EventId)>,
}
