//! Flame graphs (icicles) and the sandwich of one method, handed over as
//! bounded summaries: what a viewer draws, not the trace.
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
//! whole. A stop flag ends the walks (`stopped`). A zoom into one frame
//! ([`FlameOptions::path`]) walks only the calls on its path (`path.rs`).
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
//! that call's callers; past a bound, it is one walk (`sandwich.rs`).

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

mod cut;
mod path;
mod sandwich;
mod trie;

use cut::{Plan, cut_walk};
use trie::{Budget, Trie};

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
    /// Only the calls on this path of frame names below the scope's root
    /// (the root not named; under `all`, a thread's name first): the graph
    /// is rooted at the path's last frame, their trees merged, and
    /// `min_fraction` is of its total. Empty: the whole scope. A flame
    /// graph's only (a sandwich refuses one).
    pub path: Vec<String>,
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
            path: Vec::new(),
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
    let frames = Frames::default();
    let stop = options.stop.as_deref();
    let scope = Scope::new(reader, options)?.on_path(reader, &options.path, &frames, stop)?;
    if cut
        && rayon::current_num_threads() > 1
        && let Some(plan) = Plan::new(reader, &scope.walks, &frames)?
    {
        let root = scope.root_frame(reader, &mut FrameCache::new(&frames), &scope.walks[0])?;
        if let Some(cut) = cut_walk(reader, &plan, &frames, root, options, progress)? {
            let names = frames.names();
            return Ok(cut.trie.summarize(
                &names,
                options,
                cut.tracepoints,
                cut.stopped || scope.stopped,
                cut.truncated,
            ));
        }
    }
    let budget = Budget::new(options.max_paths);
    let walked = scope.walk(reader, &frames, options, progress, |cache, walk| {
        let root = scope.root_frame(reader, cache, walk)?;
        let subtree = matches!(walk, Walk::Subtree { .. });
        Ok(Paths::new(Trie::new(root), subtree, &budget))
    })?;
    let tracepoints = walked.iter().map(|w| w.end.tracepoints).sum();
    let stopped = scope.stopped || walked.iter().any(|w| w.end.stopped);
    let merged = Budget::new(options.max_paths);
    let one = walked.len() == 1;
    let mut tries = walked.into_iter().map(|one| {
        let mut trie = one.sink.trie;
        trie.weight[0] += one.end.top.all;
        trie
    });
    let trie = match (tries.next(), scope.end) {
        (Some(trie), _) if one => trie,
        // The calls at a path's end merge into its last frame.
        (first, Some(end)) => {
            let mut trie = Trie::new(end);
            for one in first.into_iter().chain(tries) {
                trie.graft_root(&one, &merged);
            }
            trie
        }
        (first, None) => {
            let mut trie = Trie::new(frames.named(ALL_THREADS).0);
            for one in first.into_iter().chain(tries) {
                trie.graft(0, &one, &merged);
            }
            trie
        }
    };
    let truncated = budget.reached() || merged.reached();
    Ok(trie.summarize(&frames.names(), options, tracepoints, stopped, truncated))
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
    /// With a path: its last frame, every walk's root (the walks are the
    /// calls at its end, or under `all` the threads it names).
    end: Option<u32>,
    /// Whether the stop flag ended the descent along the path.
    stopped: bool,
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
                end: None,
                stopped: false,
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
            end: None,
            stopped: false,
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

#[cfg(test)]
mod cut_tests;
