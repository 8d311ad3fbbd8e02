//! The stitch: the chunks' summaries joined in file order, each thread's
//! crossing containers closed, and the cells finished in place (steps 3
//! and 4 of the module above).

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use super::discover::*;
use super::*;
use crate::common::{EventId, LogicalOffset, PhysicalOffset, ThreadId};
use crate::error::Result;
use crate::format::{FILE_HEADER_LEN, IndexCell, ObjectKind};
use crate::model::TracepointType;
use crate::read::LoadReport;

#[derive(Default)]
pub(super) struct ThreadState {
    pub(super) thread: ThreadId,
    pub(super) logical_len: u64,
    /// Its open containers, outermost first: event, type, content start,
    /// and node number (see [`Stitch::nodes`]).
    pub(super) open: Vec<(EventId, TracepointType, LogicalOffset, u64)>,
}

/// A block's cells in the result: the summaries (`sources` index: a
/// chunk's, or one the stitch re-read exactly) and the range of their cells
/// that are the block's, with `base` to add to container offsets and the
/// range of `patches` that fill in its placeholder cells.
#[derive(Debug, Clone)]
pub(super) struct Segment {
    pub(super) source: usize,
    pub(super) cells: std::ops::Range<usize>,
    pub(super) base: u64,
    pub(super) patches: std::ops::Range<usize>,
    /// The block's thread.
    pub(super) thread: ThreadId,
    /// The block's `nodes` records in its source.
    pub(super) nodes: std::ops::Range<usize>,
    /// The block's `outer_footers` in its source.
    pub(super) outer_footers: std::ops::Range<usize>,
    /// The number of the block's first tracepoint (see [`Stitch::nodes`]).
    pub(super) first_node: u64,
    /// Its tracepoints.
    pub(super) tracepoints: u32,
    /// Its range of [`Stitched::outer_parents`].
    pub(super) outer_parents: std::ops::Range<usize>,
}

/// A window's blocks, stitched: which summary holds for each (`segments`,
/// in file order), the placeholder cells to fill in, and, when nodes are
/// collected, the node numbers of the containers each block's thread had
/// open at its start.
pub(super) struct Stitched {
    pub(super) sources: Vec<Summaries>,
    pub(super) segments: Vec<Segment>,
    pub(super) patches: Vec<Patch>,
    /// Per segment: the thread's open containers at the block's start,
    /// innermost first, as many as the block closes plus one (its
    /// top-level tracepoints' parent once it closed those).
    pub(super) outer_parents: Vec<u64>,
}

/// Fills in a placeholder cell (one closing a container of an earlier
/// block): its index in its block's cells, the container's event and
/// logical content start.
pub(super) type Patch = (u32, EventId, LogicalOffset);

/// What the stitch carries from one window of the data to the next.
pub(super) struct Stitch {
    pub(super) threads: Vec<ThreadState>,
    pub(super) slots: FxHashMap<ThreadId, usize>,
    pub(super) report: LoadReport,
    /// Where the next block starts.
    pub(super) at: PhysicalOffset,
    pub(super) blocks: usize,
    /// Whether the data's end (`EOF`, the end of the bytes, or a truncated
    /// block) was reached.
    pub(super) done: bool,
    /// Whether summaries write their tracepoints' node records.
    pub(super) collect_nodes: bool,
    /// Tracepoints in the blocks stitched so far, every thread's: the next
    /// block's first tracepoint's number (file order).
    pub(super) nodes: u64,
}

impl Default for Stitch {
    fn default() -> Self {
        Stitch {
            threads: Vec::new(),
            slots: FxHashMap::default(),
            report: LoadReport::default(),
            at: PhysicalOffset(FILE_HEADER_LEN),
            blocks: 0,
            done: false,
            collect_nodes: false,
            nodes: 0,
        }
    }
}

impl Stitch {
    /// Stitches the blocks from `self.at` on that start before `until`,
    /// using the chunks' summaries (in file order) where they hold: decides,
    /// block by block, which summary holds and each thread's logical
    /// offsets (sequential, but reading only the blocks' records and
    /// crossing containers), then makes the blocks' cells final where they
    /// are, in parallel when `parallel`.
    // Long: the stitch's sequential plan and its parallel finish share the
    // window's state; split, they would pass it all as arguments.
    pub(super) fn window(
        &mut self,
        data: &[u8],
        mut sources: Vec<Summaries>,
        until: u64,
    ) -> Result<Stitched> {
        let chunks = sources.len();
        let Stitch {
            threads,
            slots,
            report,
            at,
            collect_nodes,
            nodes,
            ..
        } = self;
        let mut segments: Vec<Segment> = Vec::new();
        let mut patches: Vec<Patch> = Vec::new();
        let mut outer_parents: Vec<u64> = Vec::new();
        // The next speculative summary to look at: chunk, block.
        let (mut chunk, mut next) = (0usize, 0usize);
        while at.0 < until {
            // Move to the first summary starting at or after `at`.
            while chunk < chunks {
                match sources[chunk].blocks.get(next) {
                    Some(block) if block.start < *at => next += 1,
                    Some(_) => break,
                    None => (chunk, next) = (chunk + 1, 0),
                }
            }
            let speculative = sources[..chunks]
                .get(chunk)
                .and_then(|summaries| summaries.blocks.get(next))
                .filter(|block| {
                    if block.start != *at {
                        return false;
                    }
                    let open = slots
                        .get(&block.thread)
                        .map_or(&[][..], |&slot| &threads[slot].open[..]);
                    let mut expected = open.iter().rev().map(|&(_, ty, _, _)| ty);
                    sources[chunk].outers[block.outers.clone()]
                        .iter()
                        .all(|&(_, ty)| expected.next() == Some(ty))
                });
            let (source, index) = match speculative {
                Some(_) => (chunk, next),
                None => {
                    let thread = read_block_thread(data, *at);
                    let stack: Vec<TracepointType> = thread
                        .and_then(|thread| slots.get(&thread))
                        .map(|&slot| threads[slot].open.iter().map(|&(_, ty, _, _)| ty).collect())
                        .unwrap_or_default();
                    let mut exact = Summaries::new(*collect_nodes);
                    let step = match summarize(data, *at, Outer::Known(&stack), &mut exact) {
                        Ok(step) => step,
                        Err(error) => {
                            report.drop_damaged(*at, data.len() as u64, error);
                            self.done = true;
                            break;
                        }
                    };
                    match step {
                        Step::Block(block) => {
                            exact.blocks.push(block);
                            sources.push(exact);
                            (sources.len() - 1, 0)
                        }
                        Step::Eof(offset) => {
                            report.trailing_bytes = data.len() as u64 - offset.0 - 1;
                            self.done = true;
                            break;
                        }
                        Step::End => {
                            report.missing_eof = true;
                            self.done = true;
                            break;
                        }
                        Step::Truncated(start) => {
                            report.drop_truncated(start, data.len() as u64);
                            self.done = true;
                            break;
                        }
                    }
                }
            };
            let summaries = &sources[source];
            let block = &summaries.blocks[index];
            let slot = *slots.entry(block.thread).or_insert_with(|| {
                threads.push(ThreadState {
                    thread: block.thread,
                    ..ThreadState::default()
                });
                threads.len() - 1
            });
            let state = &mut threads[slot];
            let base = state.logical_len;
            let patches_from = patches.len();
            let parents_from = outer_parents.len();
            if *collect_nodes {
                let reach = (block.outers.len() + 1).min(state.open.len());
                outer_parents.extend(state.open.iter().rev().take(reach).map(|open| open.3));
            }
            for &(cell, _) in &summaries.outers[block.outers.clone()] {
                // Verified above, or summarized exactly: a container is open.
                if let Some((event, _, start, _)) = state.open.pop() {
                    patches.push((cell, event, start));
                }
            }
            let first_node = *nodes;
            state
                .open
                .extend(summaries.opens[block.opens.clone()].iter().map(
                    |&(event, ty, start, node)| {
                        (
                            event,
                            ty,
                            LogicalOffset(base + start),
                            first_node + u64::from(node),
                        )
                    },
                ));
            state.logical_len += block.payload_len();
            *nodes += u64::from(block.tracepoints);
            segments.push(Segment {
                source,
                cells: block.cells.clone(),
                base,
                patches: patches_from..patches.len(),
                thread: block.thread,
                nodes: block.nodes.clone(),
                outer_footers: if *collect_nodes {
                    block.outers.clone()
                } else {
                    0..0
                },
                first_node,
                tracepoints: block.tracepoints,
                outer_parents: parents_from..outer_parents.len(),
            });
            *at = PhysicalOffset(block.end.0 + 1);
        }
        self.blocks += segments.len();
        Ok(Stitched {
            sources,
            segments,
            patches,
            outer_parents,
        })
    }

    /// The containers left open (never finished), and what the data lacked.
    pub(super) fn outcome(mut self) -> RebuildOutcome {
        self.threads.sort_by_key(|t| t.thread);
        let unfinished: Vec<UnfinishedContainer> = self
            .threads
            .iter()
            .flat_map(|t| {
                t.open
                    .iter()
                    .map(
                        move |&(event, tracepoint_type, content_start, _)| UnfinishedContainer {
                            thread: t.thread,
                            event,
                            tracepoint_type,
                            content_start,
                        },
                    )
            })
            .collect();
        self.report.unfinished_containers = unfinished.len();
        RebuildOutcome {
            unfinished,
            blocks: self.blocks,
            report: self.report,
        }
    }
}

/// The cells of `segments`, made final: container offsets made logical and
/// placeholder cells filled in. Consecutive segments of one source form a
/// run. A run of consecutive cells of a source that no other run uses (a
/// chunk's blocks, but for the first when it was a false start: the usual
/// case) is finished in place, without a copy; the others are copied out of
/// their sources. Runs are finished in parallel when `parallel`.
pub(super) fn finish_cells(
    sources: &mut [Summaries],
    segments: &[Segment],
    patches: &[Patch],
    parallel: bool,
) -> RebuiltCells {
    let groups: Vec<&[Segment]> = segments.chunk_by(|a, b| a.source == b.source).collect();
    let mut runs_of = vec![0usize; sources.len()];
    for group in &groups {
        runs_of[group[0].source] += 1;
    }
    // The arrays of the runs finished in place, taken out of their sources.
    let taken: Vec<Option<Vec<IndexCell>>> = groups
        .iter()
        .map(|group| {
            let source = group[0].source;
            let consecutive = group.windows(2).all(|w| w[0].cells.end == w[1].cells.start);
            (consecutive && runs_of[source] == 1)
                .then(|| std::mem::take(&mut sources[source].cells))
        })
        .collect();
    let sources: &[Summaries] = sources;
    let finish = |(group, taken): (&[Segment], Option<Vec<IndexCell>>)| {
        let mut run = match taken {
            Some(cells) => Run {
                cells,
                used: group[0].cells.start..group[group.len() - 1].cells.end,
            },
            None => {
                let cells: Vec<IndexCell> = group
                    .iter()
                    .flat_map(|segment| &sources[segment.source].cells[segment.cells.clone()])
                    .copied()
                    .collect();
                let used = 0..cells.len();
                Run { cells, used }
            }
        };
        let mut at = run.used.start;
        for segment in group {
            let cells = &mut run.cells[at..at + segment.cells.len()];
            at += segment.cells.len();
            let base = segment.base;
            for cell in cells.iter_mut() {
                if let IndexCell::Container { start, end, .. } = cell {
                    *start = *start + base;
                    *end = *end + base;
                }
            }
            for &(index, event, start) in &patches[segment.patches.clone()] {
                if let IndexCell::Container {
                    event: cell_event,
                    start: cell_start,
                    ..
                } = &mut cells[index as usize]
                {
                    *cell_event = event;
                    *cell_start = start;
                }
            }
        }
        run
    };
    let runs: Vec<Run> = if parallel {
        groups.into_par_iter().zip(taken).map(finish).collect()
    } else {
        groups.into_iter().zip(taken).map(finish).collect()
    };
    RebuiltCells::new(runs)
}

/// The thread id of the block starting at `at`, if a `BLOCK_START` is there.
pub(super) fn read_block_thread(data: &[u8], at: PhysicalOffset) -> Option<ThreadId> {
    match crate::format::object::peek_kind_and_id(data, at.0) {
        Some((ObjectKind::BlockStart, id)) => Some(ThreadId(id)),
        _ => None,
    }
}
