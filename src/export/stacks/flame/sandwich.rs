//! The sandwich of one method (see the module above): one walk into its
//! callers and callees, or that walk cut into parts as a flame graph's is.

use super::*;

/// The sandwich of one method: who calls it, what it calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sandwich {
    /// The method, then its callers outward (an inverted tree).
    pub(crate) callers: FlameGraph,
    /// The method, then its callees (its outermost calls merged).
    pub(crate) callees: FlameGraph,
}

impl FlameGraph {
    /// The sandwich of `method` (a frame's name: `Class.method`, or
    /// `loop`, `loop_iteration`) in the scope `options` names in
    /// `reader`'s trace (the lazy reader, or its post-processed view): two
    /// flame graphs rooted at the method, its callers outward (an inverted
    /// tree) and its callees (its outermost calls merged), in this order.
    /// `progress` receives the tracepoints walked, in steps.
    pub fn sandwich<T: Navigate>(
        reader: &T,
        method: &str,
        options: &FlameOptions<T::Node>,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<(FlameGraph, FlameGraph)> {
        let Sandwich { callers, callees } = sandwich(reader, method, options, progress)?;
        Ok((callers, callees))
    }
}

/// [`FlameGraph::sandwich`].
pub(super) fn sandwich<T: Navigate>(
    reader: &T,
    method: &str,
    options: &FlameOptions<T::Node>,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Sandwich> {
    check(options)?;
    if method.is_empty() {
        return Err(Error::invalid(
            "method",
            "empty: name a frame (Class.method)",
        ));
    }
    if !options.path.is_empty() {
        return Err(Error::invalid(
            "path",
            "a sandwich's scope is a node or threads, not a path",
        ));
    }
    let scope = Scope::new(reader, options)?;
    let frames = Frames::default();
    let target = frames.named(method).0;
    if let [walk] = scope.walks.as_slice()
        && rayon::current_num_threads() > 1
    {
        let outer = match scope.node {
            Some(_) => None,
            None => Some(scope.root_frame(reader, &mut FrameCache::new(&frames), walk)?),
        };
        if let Some((callers, callees, tracepoints, stopped)) =
            cut_sandwich(reader, walk, &frames, target, outer, options, progress)?
        {
            let names = frames.names();
            return Ok(Sandwich {
                callers: callers.summarize(&names, options, tracepoints, stopped, false),
                callees: callees.summarize(&names, options, tracepoints, stopped, false),
            });
        }
    }
    let budget = Budget::new(options.max_paths);
    let walked = scope.walk(reader, &frames, options, progress, |cache, walk| {
        // Callers end at the scope's root: the node itself (the walk's
        // outermost frame), else the thread.
        let outer = match scope.node {
            Some(_) => None,
            None => Some(scope.root_frame(reader, cache, walk)?),
        };
        Ok(Sandwiches {
            target,
            outer,
            stack: Vec::new(),
            inside: None,
            occurrence: 0,
            callees: Paths::new(Trie::new(target), true, &budget),
            callers: Trie::new(target),
            budget: &budget,
        })
    })?;
    let tracepoints = walked.iter().map(|w| w.end.tracepoints).sum();
    let stopped = walked.iter().any(|w| w.end.stopped);
    let merged = Budget::new(options.max_paths);
    let mut callers = Trie::new(target);
    let mut callees = Trie::new(target);
    for one in walked {
        callers.graft_root(&one.sink.callers, &merged);
        callees.graft_root(&one.sink.callees.trie, &merged);
    }
    let truncated = budget.reached() || merged.reached();
    let names = frames.names();
    Ok(Sandwich {
        callers: callers.summarize(&names, options, tracepoints, stopped, truncated),
        callees: callees.summarize(&names, options, tracepoints, stopped, truncated),
    })
}

/// One walk's sandwich cut into parts as [`cut_walk`] cuts its flame
/// graph, each part's callers and callees merged in order. A part below
/// an open call of the method (in its place) adds its weight to that
/// call's callers and its paths below the call to the callees. `None`
/// where the walk is left whole ([`Plan::new`]) or a bound is reached:
/// the one walk then decides which paths are kept.
#[allow(clippy::too_many_arguments)]
pub(super) fn cut_sandwich<T: TraceTree>(
    reader: &T,
    walk: &Walk<T::Node>,
    frames: &Frames,
    target: u32,
    outer: Option<u32>,
    options: &FlameOptions<T::Node>,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Option<(Trie, Trie, u64, bool)>> {
    let Some(plan) = Plan::new(reader, std::slice::from_ref(walk), frames)? else {
        return Ok(None);
    };
    let kept = Budget::new(options.max_paths);
    let room = Budget::new(options.max_paths);
    let stop = options.stop.as_deref();
    let ((callers, callees), tracepoints, stopped) = plan.run(
        frames,
        (Trie::new(target), Trie::new(target)),
        progress,
        |cache, part, place| {
            let inside = place.frames.iter().position(|&frame| frame == target);
            let mut sink = Sandwiches {
                target,
                outer,
                stack: place.frames.to_vec(),
                inside,
                occurrence: 0,
                callees: Paths::new(Trie::new(target), true, &room),
                callers: Trie::new(target),
                budget: &room,
            };
            for &frame in inside.map_or(&[][..], |at| &place.frames[at..]) {
                sink.callees.open(frame, cache, 0)?;
            }
            let end = walk_frames(
                reader,
                part,
                Kept::ALL,
                cache,
                false,
                progress,
                stop,
                &mut sink,
            )?;
            // The part's outermost frames close above the call: it stays
            // open, and the part's weight inside it goes to its callers
            // here (its leaves at the top are the place's innermost
            // frame's).
            if let (Some(at), Some(&entry)) = (inside, sink.callees.path.last()) {
                sink.callees.trie.add(entry, end.top.all);
                let weight = sink.occurrence + end.top.all;
                sink.callers_add(at, weight);
            }
            Ok(((sink.callers, sink.callees.trie), end))
        },
        |(callers, callees), place, walked| {
            match walked {
                None => {
                    if let Some(at) = place.frames.iter().position(|&frame| frame == target) {
                        let mut entry = 0;
                        for &frame in &place.frames[at + 1..] {
                            entry = callees.child(entry, frame, &kept);
                        }
                        callees.add(entry, 1);
                        let mut entry = 0;
                        for &caller in place.frames[..at].iter().rev().chain(&outer) {
                            entry = callers.child(entry, caller, &kept);
                        }
                        callers.add(entry, 1);
                    }
                }
                Some((part_callers, part_callees)) => {
                    callers.graft_root(&part_callers, &kept);
                    callees.graft_root(&part_callees, &kept);
                    room.give_back(part_callers.len() + part_callees.len() - 2);
                }
            }
            room.reached() || kept.reached()
        },
    )?;
    if room.reached() || kept.reached() {
        return Ok(None);
    }
    Ok(Some((callers, callees, tracepoints, stopped)))
}

/// A walk's frames into one method's callers and callees.
pub(super) struct Sandwiches<'b> {
    pub(super) target: u32,
    /// The frame callers end with (a thread's), if any.
    pub(super) outer: Option<u32>,
    /// The open frames, innermost last.
    pub(super) stack: Vec<u32>,
    /// Where in `stack` the outermost open call of the method is.
    pub(super) inside: Option<usize>,
    /// That call's weight so far.
    pub(super) occurrence: u64,
    pub(super) callees: Paths<'b>,
    pub(super) callers: Trie,
    pub(super) budget: &'b Budget,
}

impl Sink for Sandwiches<'_> {
    fn open(&mut self, frame: u32, frames: &FrameCache, at: u64) -> Result<()> {
        if self.inside.is_none() && frame == self.target {
            self.inside = Some(self.stack.len());
            self.occurrence = 0;
        }
        if self.inside.is_some() {
            self.callees.open(frame, frames, at)?;
        }
        self.stack.push(frame);
        Ok(())
    }

    fn close(&mut self, at: u64, own: Weight) -> Result<()> {
        self.stack.pop();
        let Some(inside) = self.inside else {
            return Ok(());
        };
        self.callees.close(at, own)?;
        self.occurrence += own.all;
        if self.stack.len() == inside {
            self.inside = None;
            self.callers_add(inside, self.occurrence);
        }
        Ok(())
    }
}

impl Sandwiches<'_> {
    /// Adds `weight` to the callers of the call of the method open at
    /// `at` in the stack.
    pub(super) fn callers_add(&mut self, at: usize, weight: u64) {
        let mut entry = 0;
        for &caller in self.stack[..at].iter().rev().chain(&self.outer) {
            entry = self.callers.child(entry, caller, self.budget);
        }
        self.callers.add(entry, weight);
    }
}
