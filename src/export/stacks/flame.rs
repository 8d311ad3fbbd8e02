//! Flame graphs (icicles) and the sandwich of one method, handed over as
//! bounded summaries: what a viewer draws, not the trace.
//!
//! # Frames and weights
//! The call-stack exports' own ([`super`]): a frame is a call, loop or
//! iteration, one per name; a tracepoint weighs 1, a sample tree's call its
//! sample count. A flame graph merges the paths of a scope (a node's
//! subtree, a thread, some threads under a root `all`) by frame name: a
//! frame's `total` is its subtree's weight on that path, its `self` its
//! own tracepoint's and leaves'.
//!
//! # The walk
//!
//! One walk per thread, threads in parallel, the exports' walker feeding a
//! trie of (parent, frame) → path that adds each frame's own weight as it
//! closes; memory: the nesting, one entry per distinct path. One thread's
//! or node's walk is cut as the parallel printers cut a thread
//! (`print::plan`), the parts walked on several cores into tries rooted at
//! their place and merged in order: the merged trie meets new paths in the
//! one walk's order, so it is the one walk's, entry for entry. Past
//! [`FlameOptions::max_paths`] (several threads' tries together; a cut
//! walk's merged trie alone) a path's weight goes to its nearest kept
//! ancestor's `other`. Parts not yet merged hold at most `max_paths` more;
//! a cut walk past that, or cutting a sample tree's call, is walked again
//! whole. A stop flag ends the walks (`stopped`).
//!
//! # The summary
//!
//! Frames are kept widest first, each only below a kept parent, while
//! their total is at least `min_fraction` of the root's, up to
//! `max_frames`; a kept frame's `total` is its `self` plus its `other`
//! (what was left out) plus its kept children's. Pre-order, widest first.
//!
//! # The sandwich
//!
//! For one method M, as speedscope defines it: each outermost call of M
//! weighs its total; callees: those calls' subtrees merged, rooted at M;
//! callers: the paths from M up to the scope's root, inverted, merged. Cut
//! as a flame graph, a part below an open call of M adds its weight to
//! that call's callers; past a bound, it is one walk.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use super::{FrameCache, Frames, Kept, Sink, Walk, Weight, frame_key, thread_name, walk_frames};
use crate::common::ThreadId;
use crate::error::{Error, Result};
use crate::export::selected_threads;
use crate::print::plan::{Cut, Part, Source, plan, plan_node};
use crate::read::LazyNode;
use crate::search::{NameKey, name_of};
use crate::tree::{Navigate, TraceTree};
use crate::turns::in_turns;

const MAX_FRAMES: usize = FlameOptions::MAX_FRAMES;
/// Bytes per run of siblings in a cut walk: each part's trie meets again
/// most of the paths the parts before it met, so parts far larger than the
/// printers' keep the tries' work small beside the walk's.
const RUN_BYTES: u64 = 16 << 20;
/// Children per range in a cut walk (a wide call's), for the same reason.
const CHILDREN_PER_RANGE: usize = 1 << 16;
const ALL_THREADS: &str = FlameGraph::ALL_THREADS;

/// What a flame graph or a sandwich covers and how far it is summarized,
/// in a tree of nodes `N` (the lazy reader's by default).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct FlameOptions<N = LazyNode> {
    /// Only these threads (all when `None`).
    pub threads: Option<Vec<ThreadId>>,
    /// Only this node's subtree (it must be in one of `threads`); its frame
    /// is the root.
    pub node: Option<N>,
    /// Frames whose total is under this fraction of the root's are left
    /// out (0 keeps every frame; a viewer asks for one pixel: 1 / width).
    pub min_fraction: f64,
    /// At most this many frames, the widest first (1 to
    /// [`MAX_FRAMES`](Self::MAX_FRAMES)).
    pub max_frames: usize,
    /// At most this many distinct paths kept while walking, all threads
    /// together (the memory bound; one walk cut across cores holds at most
    /// as many again in its parts not yet merged); past it, weights go to
    /// `other`.
    pub max_paths: usize,
    /// When set, the walks stop (see [`FlameGraph::stopped`]).
    pub stop: Option<Arc<AtomicBool>>,
}

impl FlameOptions {
    /// The most frames a summary may hold ([`max_frames`](Self::max_frames)).
    pub const MAX_FRAMES: usize = 1_000_000;

    /// Distinct paths kept by default while walking
    /// ([`max_paths`](Self::max_paths)).
    pub const DEFAULT_MAX_PATHS: usize = 1 << 20;
}

impl<N> Default for FlameOptions<N> {
    /// Every thread, frames of at least 1/2000 of the root, at most 10,000.
    fn default() -> Self {
        FlameOptions {
            threads: None,
            node: None,
            min_fraction: 1.0 / 2000.0,
            max_frames: 10_000,
            max_paths: FlameOptions::DEFAULT_MAX_PATHS,
            stop: None,
        }
    }
}

/// One frame of a summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlameFrame {
    /// `Class.method`, `loop`, `loop_iteration`; a thread's name; `all`.
    pub name: Arc<str>,
    /// 0 for the root.
    pub depth: u32,
    /// The place of its parent in [`FlameGraph::frames`] (`None` for the
    /// root).
    pub parent: Option<u32>,
    /// Its subtree's weight on this path.
    pub total: u64,
    /// Its own weight: its tracepoint and its leaves (a sample tree's
    /// call: its samples less its children's).
    pub self_weight: u64,
    /// The weight of its children left out of the summary (too narrow, or
    /// past a bound): `total - self_weight - ` its kept children's totals.
    pub other: u64,
}

/// A bounded flame graph: frames in pre-order, `frames[0]` the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlameGraph {
    /// The frames kept, in pre-order, children widest first.
    pub frames: Vec<FlameFrame>,
    /// The smallest total a frame needed to be kept.
    pub threshold: u64,
    /// Distinct paths left out of `frames` (their weight is in `other`).
    pub left_out: u64,
    /// Whether `max_paths` was reached while walking.
    pub truncated: bool,
    /// Tracepoints walked.
    pub tracepoints: u64,
    /// Whether the stop flag ended the walks: the frames cover only what
    /// was walked.
    pub stopped: bool,
}

impl FlameGraph {
    /// The name of the root above several threads.
    pub const ALL_THREADS: &'static str = "all";

    /// The root's total: the weight of the whole scope.
    pub fn total(&self) -> u64 {
        self.frames.first().map_or(0, |root| root.total)
    }
}

/// The sandwich of one method: who calls it, what it calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandwich {
    /// The method, then its callers outward (an inverted tree).
    pub callers: FlameGraph,
    /// The method, then its callees (its outermost calls merged).
    pub callees: FlameGraph,
}

impl FlameGraph {
    /// The flame graph of the scope `options` names in `reader`'s trace
    /// (the lazy reader, or its post-processed view); `progress` receives
    /// the tracepoints walked, in steps.
    pub fn build<T: Navigate>(
        reader: &T,
        options: &FlameOptions<T::Node>,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<FlameGraph> {
        flame_graph(reader, options, progress, true)
    }
}

/// [`FlameGraph::build`]; `cut`: one walk (a thread's, a node's) may be
/// cut into parts walked on several cores.
fn flame_graph<T: Navigate>(
    reader: &T,
    options: &FlameOptions<T::Node>,
    progress: &(dyn Fn(u64) + Sync),
    cut: bool,
) -> Result<FlameGraph> {
    check(options)?;
    let scope = Scope::new(reader, options)?;
    let frames = Frames::default();
    if let [walk] = scope.walks.as_slice()
        && cut
        && rayon::current_num_threads() > 1
    {
        let root = scope.root_frame(reader, &mut FrameCache::new(&frames), walk)?;
        if let Some(cut) = cut_walk(reader, walk, &frames, root, options, progress)? {
            let names = frames.names();
            return Ok(cut.trie.summarize(
                &names,
                options,
                cut.tracepoints,
                cut.stopped,
                cut.truncated,
            ));
        }
    }
    let budget = Budget::new(options.max_paths);
    let walked = scope.walk(reader, &frames, options, progress, |cache, walk| {
        let root = scope.root_frame(reader, cache, walk)?;
        Ok(Paths::new(Trie::new(root), scope.node.is_some(), &budget))
    })?;
    let tracepoints = walked.iter().map(|w| w.end.tracepoints).sum();
    let stopped = walked.iter().any(|w| w.end.stopped);
    let (trie, truncated) = if walked.len() == 1 {
        let mut walked = walked.into_iter();
        let one = walked.next().ok_or_else(|| Error::internal("no walk"))?;
        let mut paths = one.sink;
        paths.trie.weight[0] += one.end.top.all;
        (paths.trie, budget.reached())
    } else {
        let all = frames.named(ALL_THREADS).0;
        let merged = Budget::new(options.max_paths);
        let mut trie = Trie::new(all);
        for one in walked {
            let mut paths = one.sink;
            paths.trie.weight[0] += one.end.top.all;
            trie.graft(0, &paths.trie, &merged);
        }
        (trie, budget.reached() || merged.reached())
    };
    Ok(trie.summarize(&frames.names(), options, tracepoints, stopped, truncated))
}

impl Sandwich {
    /// The sandwich of `method` (a frame's name: `Class.method`, or `loop`,
    /// `loop_iteration`) in the scope `options` names in `reader`'s trace
    /// (the lazy reader, or its post-processed view); `progress` receives
    /// the tracepoints walked, in steps.
    pub fn build<T: Navigate>(
        reader: &T,
        method: &str,
        options: &FlameOptions<T::Node>,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<Sandwich> {
        sandwich(reader, method, options, progress)
    }
}

/// [`Sandwich::build`].
fn sandwich<T: Navigate>(
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

/// The options' bounds, checked.
fn check<N>(options: &FlameOptions<N>) -> Result<()> {
    let fraction = options.min_fraction;
    if !(0.0..=1.0).contains(&fraction) {
        return Err(Error::invalid(
            "min_fraction",
            format!("{fraction} is not a fraction from 0 to 1"),
        ));
    }
    if options.max_frames == 0 || options.max_frames > MAX_FRAMES {
        return Err(Error::invalid(
            "max_frames",
            format!("{} is not from 1 to {MAX_FRAMES}", options.max_frames),
        ));
    }
    if options.max_paths == 0 {
        return Err(Error::invalid("max_paths", "0: at least one path is kept"));
    }
    Ok(())
}

/// The walks a scope runs.
struct Scope<N> {
    walks: Vec<Walk<N>>,
    node: Option<N>,
}

/// One walk's sink and end.
struct Walked<S> {
    sink: S,
    end: super::WalkEnd,
}

impl<N: Copy> Scope<N> {
    fn new<T: Navigate<Node = N>>(reader: &T, options: &FlameOptions<N>) -> Result<Self> {
        let threads = selected_threads(reader, options.threads.as_deref())?;
        let Some(node) = options.node else {
            return Ok(Scope {
                walks: threads.into_iter().map(Walk::Thread).collect(),
                node: None,
            });
        };
        // A node of another trace, or past its thread's end, is an error
        // here, before any walk.
        reader.visit(node, |_, _| ())?;
        let thread = reader.node_thread(node);
        if !threads.contains(&thread) {
            return Err(Error::invalid(
                "node",
                format!("the node is in thread {thread}, which the threads asked leave out"),
            ));
        }
        Ok(Scope {
            walks: vec![Walk::Subtree {
                thread,
                node,
                ancestors: Vec::new(),
            }],
            node: Some(node),
        })
    }

    /// The frame a walk's trie is rooted at: the thread's, or the node's
    /// (a leaf's kind when it is no container).
    fn root_frame<T: Navigate<Node = N>>(
        &self,
        reader: &T,
        cache: &mut FrameCache<'_>,
        walk: &Walk<N>,
    ) -> Result<u32> {
        match walk {
            Walk::Thread(thread) => Ok(cache.named(&thread_name(reader, *thread))),
            Walk::Part(_) => Err(Error::internal("a part of a walk has no root frame")),
            Walk::Subtree { node, .. } => {
                reader.visit(*node, |tracepoint, _| match tracepoint.is_container() {
                    true => cache.id(reader.context(), frame_key(tracepoint)),
                    false => cache.named(&name_of(
                        reader.context(),
                        NameKey::Kind(tracepoint.tracepoint_type()),
                    )),
                })
            }
        }
    }

    /// Runs every walk (in parallel) into a sink `make` gives it.
    fn walk<'r, T: TraceTree<Node = N>, S: Sink + Send>(
        &self,
        reader: &'r T,
        frames: &'r Frames,
        options: &FlameOptions<N>,
        progress: &(dyn Fn(u64) + Sync),
        make: impl Fn(&mut FrameCache<'r>, &Walk<N>) -> Result<S> + Sync,
    ) -> Result<Vec<Walked<S>>>
    where
        N: Send + Sync,
    {
        let stop = options.stop.as_deref();
        self.walks
            .par_iter()
            .map(|walk| {
                let mut cache = FrameCache::new(frames);
                let mut sink = make(&mut cache, walk)?;
                let end = walk_frames(
                    reader,
                    walk,
                    Kept::ALL,
                    &mut cache,
                    false,
                    progress,
                    stop,
                    &mut sink,
                )?;
                Ok(Walked { sink, end })
            })
            .collect()
    }
}

/// The bound on distinct paths shared by a summary's tries.
struct Budget {
    left: AtomicUsize,
    reached: AtomicBool,
}

impl Budget {
    fn new(paths: usize) -> Self {
        Budget {
            left: AtomicUsize::new(paths),
            reached: AtomicBool::new(false),
        }
    }

    /// Takes room for one path; false when none is left.
    fn take(&self) -> bool {
        let taken = self
            .left
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                left.checked_sub(1)
            })
            .is_ok();
        if !taken {
            self.reached.store(true, Ordering::Relaxed);
        }
        taken
    }

    fn reached(&self) -> bool {
        self.reached.load(Ordering::Relaxed)
    }

    /// Gives back room for `paths` paths (a part's trie, merged).
    fn give_back(&self, paths: usize) {
        self.left.fetch_add(paths, Ordering::Relaxed);
    }
}

/// A walk cut into parts, merged.
struct CutWalk {
    trie: Trie,
    tracepoints: u64,
    stopped: bool,
    /// Whether `max_paths` left paths out of the merged trie.
    truncated: bool,
}

/// Where a part's weights go: the frames of the cut nodes above it, from
/// the scope's top (a node's scope: its own frame first), and whether the
/// part is a cut node's own tracepoint (its frame is the last).
struct Place {
    frames: Arc<[u32]>,
    line: bool,
}

/// One walk cut as the parallel printers cut a thread: its parts and
/// their places.
struct Plan<N> {
    parts: Vec<Part<N>>,
    places: Vec<Place>,
    /// Whether the walk is a node's (its frame the places' first).
    subtree: bool,
}

impl<N: Copy + Send + Sync> Plan<N> {
    /// The plan of `walk`; `None` where it is left whole: a single part,
    /// or a sample tree's call cut (its own weight depends on its
    /// children's).
    fn new<T: TraceTree<Node = N>>(
        reader: &T,
        walk: &Walk<N>,
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
        let (parts, subtree) = match walk {
            Walk::Thread(thread) => (plan(reader, &[*thread], cut, 1)?, false),
            Walk::Subtree { thread, node, .. } => (plan_node(reader, *thread, *node, cut)?, true),
            Walk::Part(_) => return Ok(None),
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
    fn run<'f, M: Send, T: Send>(
        &self,
        frames: &'f Frames,
        merged: M,
        progress: &(dyn Fn(u64) + Sync),
        walk_part: impl Fn(&mut FrameCache<'f>, &Walk<N>, &Place) -> Result<(T, super::WalkEnd)> + Sync,
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

/// One walk (a thread's, a node's subtree) cut into parts as the parallel
/// printers cut it, walked on up to rayon's number of threads, each part
/// into a trie of its own rooted at its place and merged in order: the
/// merged trie is the one walk's, entry for entry. `None` where the walk
/// is left whole ([`Plan::new`]), or the parts in flight were past
/// `max_paths` paths together (one of them left incomplete).
fn cut_walk<T: TraceTree>(
    reader: &T,
    walk: &Walk<T::Node>,
    frames: &Frames,
    root: u32,
    options: &FlameOptions<T::Node>,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Option<CutWalk>> {
    let Some(plan) = Plan::new(reader, walk, frames)? else {
        return Ok(None);
    };
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
        |cache, part, _| {
            let mut paths = Paths::new(Trie::new(root), false, &room);
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

/// One walk's sandwich cut into parts as [`cut_walk`] cuts its flame
/// graph, each part's callers and callees merged in order. A part below
/// an open call of the method (in its place) adds its weight to that
/// call's callers and its paths below the call to the callees. `None`
/// where the walk is left whole ([`Plan::new`]) or a bound is reached:
/// the one walk then decides which paths are kept.
#[allow(clippy::too_many_arguments)]
fn cut_sandwich<T: TraceTree>(
    reader: &T,
    walk: &Walk<T::Node>,
    frames: &Frames,
    target: u32,
    outer: Option<u32>,
    options: &FlameOptions<T::Node>,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Option<(Trie, Trie, u64, bool)>> {
    let Some(plan) = Plan::new(reader, walk, frames)? else {
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

/// Distinct paths merged by frame: node 0 the root, every node after its
/// parent.
struct Trie {
    parent: Vec<u32>,
    frame: Vec<u32>,
    /// Own weights.
    weight: Vec<u64>,
    /// Weights of paths below a node that were not kept (no budget).
    over: Vec<u64>,
    /// Each node's child met last, (frame, child): loops meet the same
    /// paths again and again, and this spares most lookups in `children`.
    last: Vec<(u32, u32)>,
    children: FxHashMap<(u32, u32), u32>,
}

/// A path entry that stands for a path not kept: its nearest kept
/// ancestor, flagged.
const NOT_KEPT: u32 = 1 << 31;

impl Trie {
    fn new(root: u32) -> Self {
        Trie {
            parent: vec![u32::MAX],
            frame: vec![root],
            weight: vec![0],
            over: vec![0],
            last: vec![(u32::MAX, 0)],
            children: FxHashMap::default(),
        }
    }

    fn len(&self) -> usize {
        self.frame.len()
    }

    /// The child `frame` of `parent`, added when the budget has room
    /// (else `parent | NOT_KEPT`).
    fn child(&mut self, parent: u32, frame: u32, budget: &Budget) -> u32 {
        if parent & NOT_KEPT != 0 {
            return parent;
        }
        let (last, child) = self.last[parent as usize];
        if last == frame {
            return child;
        }
        if let Some(&child) = self.children.get(&(parent, frame)) {
            self.last[parent as usize] = (frame, child);
            return child;
        }
        // Ids stay below NOT_KEPT: a budget past it is not honoured.
        if self.len() >= NOT_KEPT as usize || !budget.take() {
            return parent | NOT_KEPT;
        }
        let child = self.len() as u32;
        self.parent.push(parent);
        self.frame.push(frame);
        self.weight.push(0);
        self.over.push(0);
        self.last.push((u32::MAX, 0));
        self.last[parent as usize] = (frame, child);
        self.children.insert((parent, frame), child);
        child
    }

    /// Adds `weight` to the path `entry` (kept, or not kept).
    fn add(&mut self, entry: u32, weight: u64) {
        match entry & NOT_KEPT {
            0 => self.weight[entry as usize] += weight,
            _ => self.over[(entry & !NOT_KEPT) as usize] += weight,
        }
    }

    /// Merges `from` in, its root as a child of `at`.
    fn graft(&mut self, at: u32, from: &Trie, budget: &Budget) {
        let root = self.child(at, from.frame[0], budget);
        self.merge(root, from, budget);
    }

    /// Merges `from` in, its root onto this root (same frame).
    fn graft_root(&mut self, from: &Trie, budget: &Budget) {
        self.merge(0, from, budget);
    }

    /// Merges `from` in with its root at the entry `root`.
    fn merge(&mut self, root: u32, from: &Trie, budget: &Budget) {
        let mut map = Vec::with_capacity(from.len());
        map.push(root);
        for id in 0..from.len() {
            if id > 0 {
                let parent = map[from.parent[id] as usize];
                map.push(self.child(parent, from.frame[id], budget));
            }
            let entry = map[id];
            self.add(entry, from.weight[id]);
            let over = from.over[id];
            self.over[(entry & !NOT_KEPT) as usize] += over;
        }
    }

    /// The bounded summary.
    fn summarize<N>(
        &self,
        names: &[Arc<str>],
        options: &FlameOptions<N>,
        tracepoints: u64,
        stopped: bool,
        truncated: bool,
    ) -> FlameGraph {
        let n = self.len();
        let mut total: Vec<u64> = (0..n).map(|i| self.weight[i] + self.over[i]).collect();
        for id in (1..n).rev() {
            total[self.parent[id] as usize] += total[id];
        }
        let threshold = ((options.min_fraction * total[0] as f64).ceil() as u64).max(1);
        // Children lists, counted then filled (CSR).
        let mut first = vec![0u32; n + 1];
        for id in 1..n {
            first[self.parent[id] as usize + 1] += 1;
        }
        for id in 0..n {
            first[id + 1] += first[id];
        }
        let mut filled = first.clone();
        let mut children = vec![0u32; n.saturating_sub(1)];
        for id in 1..n {
            let parent = self.parent[id] as usize;
            children[filled[parent] as usize] = id as u32;
            filled[parent] += 1;
        }
        let children_of = |id: usize| &children[first[id] as usize..first[id + 1] as usize];
        // Widest first, below kept parents, down to the threshold.
        let mut kept = vec![false; n];
        let mut count = 0;
        let mut heap = BinaryHeap::from([(total[0], Reverse(0u32))]);
        while let Some((_, Reverse(id))) = heap.pop() {
            if count == options.max_frames {
                break;
            }
            kept[id as usize] = true;
            count += 1;
            for &child in children_of(id as usize) {
                if total[child as usize] >= threshold {
                    heap.push((total[child as usize], Reverse(child)));
                }
            }
        }
        let name = |id: usize| -> Arc<str> {
            names
                .get(self.frame[id] as usize)
                .cloned()
                .unwrap_or_else(|| Arc::from(""))
        };
        // Pre-order, children widest first, then by name.
        let mut frames = Vec::with_capacity(count);
        let mut pending = vec![(0u32, 0u32, None)];
        let mut order = Vec::new();
        while let Some((id, depth, parent)) = pending.pop() {
            let id = id as usize;
            order.clear();
            order.extend(
                children_of(id)
                    .iter()
                    .copied()
                    .filter(|&c| kept[c as usize]),
            );
            order.sort_by(|&a, &b| {
                let (a, b) = (a as usize, b as usize);
                total[b].cmp(&total[a]).then_with(|| name(a).cmp(&name(b)))
            });
            let shown: u64 = order.iter().map(|&c| total[c as usize]).sum();
            let place = frames.len() as u32;
            frames.push(FlameFrame {
                name: name(id),
                depth,
                parent,
                total: total[id],
                self_weight: self.weight[id],
                other: total[id] - self.weight[id] - shown,
            });
            for &child in order.iter().rev() {
                pending.push((child, depth + 1, Some(place)));
            }
        }
        FlameGraph {
            frames,
            threshold,
            left_out: (n - count) as u64,
            truncated,
            tracepoints,
            stopped,
        }
    }
}

/// A walk's frames into a trie of paths.
struct Paths<'b> {
    trie: Trie,
    /// The open frames' entries, innermost last.
    path: Vec<u32>,
    /// Whether the walk's outermost frame is the root itself (a subtree's
    /// node) rather than its child (a thread's frames under the thread).
    subtree: bool,
    budget: &'b Budget,
}

impl<'b> Paths<'b> {
    fn new(trie: Trie, subtree: bool, budget: &'b Budget) -> Self {
        Paths {
            trie,
            path: Vec::new(),
            subtree,
            budget,
        }
    }
}

impl Sink for Paths<'_> {
    fn open(&mut self, frame: u32, _frames: &FrameCache, _at: u64) -> Result<()> {
        let entry = match self.path.last() {
            None if self.subtree => 0,
            None => self.trie.child(0, frame, self.budget),
            Some(&parent) => self.trie.child(parent, frame, self.budget),
        };
        self.path.push(entry);
        Ok(())
    }

    fn close(&mut self, _at: u64, own: Weight) -> Result<()> {
        let own = own.all;
        if let Some(entry) = self.path.pop() {
            self.trie.add(entry, own);
        }
        Ok(())
    }
}

/// A walk's frames into one method's callers and callees.
struct Sandwiches<'b> {
    target: u32,
    /// The frame callers end with (a thread's), if any.
    outer: Option<u32>,
    /// The open frames, innermost last.
    stack: Vec<u32>,
    /// Where in `stack` the outermost open call of the method is.
    inside: Option<usize>,
    /// That call's weight so far.
    occurrence: u64,
    callees: Paths<'b>,
    callers: Trie,
    budget: &'b Budget,
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
    fn callers_add(&mut self, at: usize, weight: u64) {
        let mut entry = 0;
        for &caller in self.stack[..at].iter().rev().chain(&self.outer) {
            entry = self.callers.child(entry, caller, self.budget);
        }
        self.callers.add(entry, weight);
    }
}

#[cfg(test)]
mod cut_tests;
