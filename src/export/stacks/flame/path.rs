//! A flame graph zoomed into one frame of a larger one: the calls on a
//! path of frame names below the scope's root are found by one pass over
//! the levels the path spans (each tracepoint read in place, the subtree of
//! a call off the path or at its end left unread), then only their subtrees are walked, as a
//! node's subtree is (cut across cores alike), into one trie rooted at the
//! path's last frame. The same walk and trie as the whole scope's, on less
//! of it: the frame's widths are those a walk of the whole scope gives
//! below that path.

use super::*;
use crate::export::stacks::WALK_DETAIL;
use crate::read::Visit;
use crate::tree::Prune;

/// Children read between looks at the stop flag.
const STOP_EVERY: u64 = 1 << 12;
/// The error a stop ends the descent with.
const DESCENT: &str = "a flame graph's descent along its path";

/// A place the descent stands at: a thread (its top-level tracepoints
/// below it) or a call.
#[derive(Clone, Copy)]
enum At<N> {
    Thread(ThreadId),
    Call(N),
}

impl<N: Copy> Scope<N> {
    /// This scope narrowed to the calls at the end of `path` (frame names
    /// below its root; under `all`, a thread's name first), in pre-order;
    /// itself for an empty path. `stop` ends the descent, with what was
    /// found so far.
    pub(super) fn on_path<T: Navigate<Node = N>>(
        self,
        reader: &T,
        path: &[String],
        frames: &Frames,
        stop: Option<&AtomicBool>,
    ) -> Result<Scope<N>> {
        let mut cache = FrameCache::new(frames);
        let names: Vec<u32> = path.iter().map(|name| cache.named(name)).collect();
        let Some(&end) = names.last() else {
            return Ok(self);
        };
        let (mut at, below) = match (self.node, self.walks.as_slice()) {
            (Some(node), _) => (vec![At::Call(node)], &names[..]),
            (None, [Walk::Thread(thread)]) => (vec![At::Thread(*thread)], &names[..]),
            (None, walks) => {
                let mut threads = Vec::new();
                for walk in walks {
                    if let Walk::Thread(thread) = walk
                        && cache.named(&thread_name(reader, *thread)) == names[0]
                    {
                        threads.push(At::Thread(*thread));
                    }
                }
                (threads, &names[1..])
            }
        };
        let mut stopped = false;
        if !below.is_empty() {
            let mut calls = Vec::new();
            for place in at {
                stopped |= calls_on(reader, place, below, &mut cache, stop, &mut calls)?;
            }
            at = calls;
        }
        let walks = at
            .into_iter()
            .map(|place| match place {
                At::Thread(thread) => Walk::Thread(thread),
                At::Call(node) => Walk::Subtree {
                    thread: reader.node_thread(node),
                    node,
                    ancestors: Vec::new(),
                },
            })
            .collect();
        Ok(Scope {
            walks,
            node: self.node,
            end: Some(end),
            stopped,
        })
    }
}

/// Adds to `calls` the containers on `path` (frame ids) from `place`
/// down, in order; whether `stop` ended the descent. One pass over the
/// levels the path spans, reading each tracepoint in place; the subtrees
/// of calls off the path and at its end are left unread.
fn calls_on<T: Navigate>(
    reader: &T,
    place: At<T::Node>,
    path: &[u32],
    cache: &mut FrameCache<'_>,
    stop: Option<&AtomicBool>,
    calls: &mut Vec<At<T::Node>>,
) -> Result<bool> {
    let context = reader.context();
    // The level of a tracepoint at a depth of the pass: a call's pass
    // starts at the call (above the path's first level).
    let (starts, above) = match place {
        At::Thread(thread) => (reader.roots(thread)?, 0),
        At::Call(node) => (vec![node], 1),
    };
    // Whether each open tracepoint, by depth, is on the path.
    let mut on: Vec<bool> = Vec::new();
    let mut seen = 0u64;
    let mut ended = false;
    let last = path.len() - 1;
    let walked = reader.walk_visit_pruned(&starts, WALK_DETAIL, |visit| {
        seen += 1;
        if seen.is_multiple_of(STOP_EVERY) && stop.is_some_and(|stop| stop.load(Ordering::Relaxed))
        {
            ended = true;
            return Err(Error::Cancelled(DESCENT));
        }
        let Visit::Node {
            node,
            depth,
            tracepoint,
            ..
        } = visit
        else {
            return Ok(Prune::Go);
        };
        on.truncate(depth);
        let here = match depth.checked_sub(above) {
            None => true,
            Some(level) => {
                (depth == 0 || on[depth - 1])
                    && tracepoint.is_container()
                    && cache.id(context, frame_key(tracepoint)) == path[level]
            }
        };
        on.push(here);
        if here && depth == last + above {
            calls.push(At::Call(node));
        }
        // A call off the path, or at its end, is not entered.
        Ok(if here && depth < last + above {
            Prune::Go
        } else {
            Prune::Leave(depth)
        })
    });
    match walked {
        Err(Error::Cancelled(DESCENT)) if ended => Ok(true),
        other => other.map(|()| false),
    }
}
