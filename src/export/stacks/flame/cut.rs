//! One walk cut into parts walked on several cores (see the module
//! above): the printers' cutting, each part's place, their merge in order.

use super::*;

/// A walk cut into parts, merged.
pub(super) struct CutWalk {
    pub(super) trie: Trie,
    pub(super) tracepoints: u64,
    pub(super) stopped: bool,
    /// Whether `max_paths` left paths out of the merged trie.
    pub(super) truncated: bool,
}

/// Where a part's weights go: the frames of the cut nodes above it, from
/// the scope's top (a node's scope: its own frame first), and whether the
/// part is a cut node's own tracepoint (its frame is the last).
pub(super) struct Place {
    pub(super) frames: Arc<[u32]>,
    pub(super) line: bool,
}

/// One walk cut as the parallel printers cut a thread: its parts and
/// their places.
pub(super) struct Plan<N> {
    pub(super) parts: Vec<Part<N>>,
    pub(super) places: Vec<Place>,
    /// Whether the walk is a node's, or calls' of one frame (their frame
    /// the places' first).
    pub(super) subtree: bool,
}

/// Calls walked together in one part, at most, where a path's calls are
/// each too small to be cut.
const CALLS_PER_PART: usize = 4096;

impl<N: Copy + Send + Sync> Plan<N> {
    /// The plan of `walks`: one thread's, one node's subtree, or the
    /// subtrees of calls of one frame (a path's end) as if they were one;
    /// `None` where they are left whole: several threads, a single part,
    /// or a sample tree's call cut (its own weight depends on its
    /// children's).
    pub(super) fn new<T: TraceTree<Node = N>>(
        reader: &T,
        walks: &[Walk<N>],
        frames: &Frames,
    ) -> Result<Option<Plan<N>>> {
        let cut = Cut {
            headers: false,
            parents: false,
            max_depth: None,
            line_counts: false,
            run_bytes: RUN_BYTES,
            children_per_range: CHILDREN_PER_RANGE,
        };
        let (parts, subtree) = match walks {
            [Walk::Thread(thread)] => (plan(reader, &[*thread], cut, 1)?, false),
            [Walk::Subtree { thread, node, .. }] => (plan_node(reader, *thread, *node, cut)?, true),
            calls => match plan_calls(reader, calls, cut)? {
                Some(parts) => (parts, true),
                None => return Ok(None),
            },
        };
        if parts.len() < 2 {
            return Ok(None);
        }
        let mut cache = FrameCache::new(frames);
        let mut open: Vec<(usize, u32)> = Vec::new();
        let mut above: Arc<[u32]> = Arc::from([]);
        let mut places = Vec::with_capacity(parts.len());
        for part in &parts {
            if open.last().is_some_and(|&(depth, _)| depth >= part.depth) {
                while open.last().is_some_and(|&(depth, _)| depth >= part.depth) {
                    open.pop();
                }
                above = open.iter().map(|&(_, frame)| frame).collect();
            }
            let Source::Line(node, _) = part.source else {
                places.push(Place {
                    frames: above.clone(),
                    line: false,
                });
                continue;
            };
            let frame = reader.visit(node, |tracepoint, footer| {
                match tracepoint.sample_count(footer) {
                    Some(_) => None,
                    None => Some(cache.id(reader.context(), frame_key(tracepoint))),
                }
            })?;
            let Some(frame) = frame else {
                return Ok(None);
            };
            open.push((part.depth, frame));
            above = open.iter().map(|&(_, frame)| frame).collect();
            places.push(Place {
                frames: above.clone(),
                line: true,
            });
        }
        Ok(Some(Plan {
            parts,
            places,
            subtree,
        }))
    }

    /// Walks the parts on up to rayon's number of threads, each into
    /// `walk_part`'s sink (none for a line), and hands them to `merge` in
    /// order (under a lock, as they become ready): `merged`, with the
    /// tracepoints walked and whether a stop ended a walk. A `merge` that
    /// returns true hands out no more parts.
    pub(super) fn run<'f, M: Send, T: Send>(
        &self,
        frames: &'f Frames,
        merged: M,
        progress: &(dyn Fn(u64) + Sync),
        walk_part: impl Fn(&mut FrameCache<'f>, &Walk<N>, &Place) -> Result<(T, super::super::WalkEnd)>
        + Sync,
        merge: impl Fn(&mut M, &Place, Option<T>) -> bool + Sync,
    ) -> Result<(M, u64, bool)> {
        /// The parts merged so far and those walked ahead of them.
        struct InOrder<M, T> {
            merged: M,
            /// The next part to merge.
            next: usize,
            /// Parts walked ahead of it (`None` for a line).
            ready: std::collections::BTreeMap<usize, Option<T>>,
            tracepoints: u64,
            stopped: bool,
            done: bool,
        }
        let state = Mutex::new(InOrder {
            merged,
            next: 0,
            ready: Default::default(),
            tracepoints: 0,
            stopped: false,
            done: false,
        });
        let walked = in_turns(
            rayon::current_num_threads(),
            self.parts.len(),
            || FrameCache::new(frames),
            |cache, i| -> Result<bool> {
                let place = &self.places[i];
                let (walked, tracepoints, stopped) = match place.line {
                    true => {
                        progress(1);
                        (None, 1, false)
                    }
                    false => {
                        let part = Walk::Part(self.parts[i].clone());
                        let (sink, end) = walk_part(cache, &part, place)?;
                        (Some(sink), end.tracepoints, end.stopped)
                    }
                };
                let mut state = state
                    .lock()
                    .map_err(|_| Error::internal("a flame graph's merge panicked"))?;
                state.tracepoints += tracepoints;
                state.stopped |= stopped;
                state.ready.insert(i, walked);
                while !state.done {
                    let next = state.next;
                    let Some(walked) = state.ready.remove(&next) else {
                        break;
                    };
                    state.done = merge(&mut state.merged, &self.places[next], walked);
                    state.next += 1;
                }
                Ok(stopped || state.done)
            },
            |result| !matches!(result, Ok(false)),
        );
        for result in walked.into_iter().flatten() {
            result?;
        }
        let state = state
            .into_inner()
            .map_err(|_| Error::internal("a flame graph's merge panicked"))?;
        Ok((state.merged, state.tracepoints, state.stopped))
    }
}

/// The parts of the subtrees of `calls` (of one frame, in order), each
/// cut as [`plan_node`] cuts it; consecutive calls it leaves in a line and
/// one part (small ones) are walked together, the frame's own tracepoints
/// included, a few per part. `None` for walks that are not subtrees.
fn plan_calls<T: TraceTree>(
    reader: &T,
    calls: &[Walk<T::Node>],
    cut: Cut,
) -> Result<Option<Vec<Part<T::Node>>>> {
    let per_part = (calls.len() / (4 * rayon::current_num_threads())).clamp(1, CALLS_PER_PART);
    let mut parts = Vec::new();
    let mut small: Option<(ThreadId, Vec<T::Node>)> = None;
    let flush = |parts: &mut Vec<Part<T::Node>>, small: &mut Option<(ThreadId, Vec<T::Node>)>| {
        if let Some((thread, nodes)) = small.take() {
            parts.push(Part {
                thread,
                source: Source::Trees(nodes),
                depth: 0,
                parents: Arc::new(Vec::new()),
            });
        }
    };
    for call in calls {
        let Walk::Subtree { thread, node, .. } = call else {
            return Ok(None);
        };
        let cut = plan_node(reader, *thread, *node, cut)?;
        if cut.len() > 2 {
            flush(&mut parts, &mut small);
            parts.extend(cut);
            continue;
        }
        if small
            .as_ref()
            .is_some_and(|(on, nodes)| on != thread || nodes.len() >= per_part)
        {
            flush(&mut parts, &mut small);
        }
        small
            .get_or_insert_with(|| (*thread, Vec::new()))
            .1
            .push(*node);
    }
    flush(&mut parts, &mut small);
    Ok(Some(parts))
}

/// One walk (a thread's, a node's subtree, a path's calls) cut into parts
/// as the parallel printers cut it ([`Plan::new`]), walked on up to
/// rayon's number of threads, each part into a trie of its own rooted at
/// its place and merged in order: the merged trie is the one walk's, entry
/// for entry. `None` where the parts in flight were past `max_paths` paths
/// together (one of them left incomplete).
pub(super) fn cut_walk<T: TraceTree>(
    reader: &T,
    plan: &Plan<T::Node>,
    frames: &Frames,
    root: u32,
    options: &FlameOptions<T::Node>,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Option<CutWalk>> {
    // The merged trie meets new paths in the one walk's order (parts in
    // order, each part's paths in the order it met them), so its bound
    // keeps the one walk's paths. The parts in flight (walked, not yet
    // merged) hold at most as many again.
    let kept = Budget::new(options.max_paths);
    let room = Budget::new(options.max_paths);
    let stop = options.stop.as_deref();
    let (trie, tracepoints, stopped) = plan.run(
        frames,
        Trie::new(root),
        progress,
        |cache, part, place| {
            // Whole calls at the top of a subtree's plan open at the root.
            let subtree = plan.subtree && place.frames.is_empty();
            let mut paths = Paths::new(Trie::new(root), subtree, &room);
            let end = walk_frames(
                reader,
                part,
                Kept::ALL,
                cache,
                false,
                progress,
                stop,
                &mut paths,
            )?;
            paths.trie.weight[0] += end.top.all;
            Ok((paths.trie, end))
        },
        |trie, place, walked| {
            let mut entry = 0;
            let above = &place.frames[usize::from(plan.subtree).min(place.frames.len())..];
            for &frame in above {
                entry = trie.child(entry, frame, &kept);
            }
            match walked {
                None => trie.add(entry, 1),
                Some(part) => {
                    trie.merge(entry, &part, &kept);
                    room.give_back(part.len() - 1);
                }
            }
            // A part left incomplete: stop cutting, the one walk decides.
            room.reached()
        },
    )?;
    if room.reached() {
        return Ok(None);
    }
    Ok(Some(CutWalk {
        trie,
        tracepoints,
        stopped,
        truncated: kept.reached(),
    }))
}
