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
//! built on several threads. The content is divided into pieces of 4 MiB;
//! a run goes from the cut after one piece's start to the next piece's
//! (each cut depends only on its piece, so the workers find the cuts as
//! they need them, each once), and the workers take the runs in turn, each
//! with its own forward scan releasing behind it. A run's scan counts its
//! children, keeping every 64th child's offset and event id; once the
//! counts are added up, the checkpoints are the kept children at or just
//! before children `0, step, 2·step, …` (at most 63 before), so nothing is
//! read again to find them. A run whose children do not end exactly at the
//! next run's start leaves the call to one scan.

use std::sync::OnceLock;

use super::cache::{Checkpoint, ChildIndex, PAGE};
use super::{LazyNode, LazyTraceReader, Scan, Scope};
use crate::common::{EventId, LogicalOffset};
use crate::error::Result;
use crate::read::lookup::stream::Stream;
use crate::turns::in_turns;

/// What [`LazyTraceReader::cut_after`] found.
enum Cut {
    /// A point between two children.
    At(LogicalOffset),
    /// No container starts there before the scope's last child: no cut.
    End,
    /// The table does not tell: cut by child number instead.
    Unknown,
}

/// A scope to cut, and its container in the table.
#[derive(Clone, Copy)]
struct Cutter {
    scope: Scope,
    parent: usize,
}

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
        let longest = bytes.saturating_mul(LONGEST_RUN);
        if scope.end.0.saturating_sub(scope.start.0) < bytes.saturating_mul(4) {
            return Ok(None);
        }
        let Some(cutter) = self.cutter(scope)? else {
            return Ok(None);
        };
        let mut stream = self.stream(scope.slot);
        let mut cuts = Vec::new();
        let mut last = scope.start;
        loop {
            let target = last + bytes;
            if target >= scope.end {
                break;
            }
            let cut = match self.cut_after(cutter, &mut stream, target)? {
                Cut::At(cut) => cut,
                Cut::End => break,
                Cut::Unknown => return Ok(None),
            };
            if cut.0 - last.0 > longest {
                return Ok(None);
            }
            cuts.push(cut);
            last = cut;
        }
        Ok((scope.end.0 - last.0 <= longest).then_some(cuts))
    }

    /// What cutting `scope` needs: its container in the table. `None` for
    /// a thread whose cells were contradicted, or a scope the table does
    /// not hold.
    fn cutter(&self, scope: Scope) -> Result<Option<Cutter>> {
        if !self.lookup.trusted(scope.slot) {
            return Ok(None);
        }
        let (table, cells) = self.containers(scope.slot)?;
        Ok(table
            .find_start(cells, scope.start, None)
            .map(|parent| Cutter { scope, parent }))
    }

    /// The point between two of the scope's children right after the
    /// direct child holding the first container that starts at `target`
    /// or after it.
    fn cut_after(
        &self,
        cutter: Cutter,
        stream: &mut Stream<'_>,
        target: LogicalOffset,
    ) -> Result<Cut> {
        let Cutter { scope, parent } = cutter;
        let (table, cells) = self.containers(scope.slot)?;
        let k = table.first_starting_at_or_after(cells, target);
        if k >= table.len() || table.start(cells, k) >= scope.end {
            return Ok(Cut::End);
        }
        let Some(child) = table.child_holding(cells, k, Some(parent)) else {
            return Ok(Cut::Unknown);
        };
        if table.end(cells, child) >= scope.end {
            return Ok(Cut::End);
        }
        Ok(match self.container_span(stream, scope.slot, child)? {
            None => Cut::Unknown,
            Some((_, cut)) if cut >= scope.end => Cut::End,
            Some((_, cut)) => Cut::At(cut),
        })
    }

    /// The child index of a large call (`scan_child_index`), counted in
    /// runs of siblings on several threads at once. The call's content is
    /// divided into pieces of [`INDEX_RUN_BYTES`]; run `k` goes from the
    /// cut after piece `k`'s start ([`cut_after`](Self::cut_after)) to the
    /// next piece's, so the workers find the cuts themselves, each once,
    /// and take the runs in turn (a run around a large child takes
    /// longer). Each run's scan keeps every [`SAMPLE`]-th child; once the
    /// counts are added up, the checkpoints are chosen among those. `None`
    /// on one core, for a call of less than [`PARALLEL_INDEX_BYTES`], where
    /// a cut is not found, or where a run does not end exactly at the next
    /// one's start: scanned whole then.
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
        let Some(cutter) = self.cutter(scope)? else {
            return Ok(None);
        };
        let pieces = len.div_ceil(INDEX_RUN_BYTES) as usize;
        let cuts: Vec<OnceLock<Option<LogicalOffset>>> =
            (0..=pieces).map(|_| OnceLock::new()).collect();
        // A cut is read through a stream of its own, not the worker's
        // releasing scan: the end of a run is read before the run, and a
        // releasing stream leaves mapped what it reads behind where it was.
        let cut = |piece: usize| -> Option<LogicalOffset> {
            *cuts[piece].get_or_init(|| {
                if piece == 0 {
                    return Some(scope.start);
                }
                let target = scope.start + piece as u64 * INDEX_RUN_BYTES;
                if piece == pieces || target >= scope.end {
                    return Some(scope.end);
                }
                // An error leaves the call to the whole scan, which meets
                // it again and reports it.
                match self.cut_after(cutter, &mut self.stream(scope.slot), target) {
                    Ok(Cut::At(cut)) => Some(cut),
                    Ok(Cut::End) => Some(scope.end),
                    Ok(Cut::Unknown) | Err(_) => None,
                }
            })
        };
        // Each worker's forward scan, made on its first run.
        let counted = in_turns(
            workers,
            pieces,
            || None,
            |scan: &mut Option<Scan<'_>>, piece| -> Result<Option<RunCount>> {
                let (Some(start), Some(end)) = (cut(piece), cut(piece + 1)) else {
                    return Ok(None);
                };
                if start >= end {
                    // A child spanning several pieces is counted in the run
                    // that starts before it; this one is empty.
                    return Ok((start == end).then(RunCount::default));
                }
                let scan = match scan {
                    Some(scan) => scan,
                    None => {
                        let mut made = self.forward_scan(scope.slot)?;
                        made.stream = made.stream.released_at_end();
                        scan.insert(made)
                    }
                };
                self.count_run(
                    scan,
                    Scope {
                        start,
                        end,
                        ..scope
                    },
                )
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

/// Content a call needs for its child index to be built in runs.
const PARALLEL_INDEX_BYTES: u64 = 8 << 20;
/// Bytes of content in each run a child index is built from.
const INDEX_RUN_BYTES: u64 = 4 << 20;
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
