//! The view's walks, streamed through the inner reader's own walks: each
//! raw tracepoint the inner walk hands over is decided as it passes, and
//! only candidate calls and loops peek at their children by node.
//!
//! A frame per open raw container says whether its kept children show
//! ([`Mode::Show`], with the [`Tracker`] of its list for the peeked slots
//! shown again when it closes) or nothing under it shows but the children
//! of the node it became ([`Mode::Hide`]: a replaced call's chain). A loop
//! iteration is held until the next node says whether it has children.
//!
//! A loop waits for its last child: whether it shows, and with how many
//! iterations, depends on whether that child is kept. What the walk shows
//! inside it is held (a [`Sink`] buffer per waiting loop) until the loop
//! closes and its frame's [`Tracker`] gives the answer the view's own rule
//! ([`loop_shown`]) takes; a last child that is no iteration is decided
//! as random access decides it. Past [`HOLD_LIMIT`] held nodes, the
//! outermost waiting loop is decided by random access instead, so memory
//! stays bounded.

use std::cell::Cell;

use crate::error::{Error, Result};
use crate::model::{Footer, Tracepoint, TracepointType};
use crate::read::{Visit, VisitDetail};
use crate::tree::{Prune, TraceTree};

use super::slots::{Shape, Tracker, peeked_slots};
use super::{
    CHAIN_LIMIT, PostNode, Postprocessed, SCAN_PAGE, loop_iterations, loop_shown, raw, shown,
};

/// Nodes held for waiting loops at most, before the outermost one is
/// decided by random access.
const HOLD_LIMIT: usize = 1 << 16;

/// What a walk of the view hands its nodes to.
pub(super) type Visitor<'f, N> = dyn FnMut(Visit<'_, PostNode<N>>) -> Result<()> + 'f;

/// Where a node is: its raw depth in the inner walk, its depth shown.
#[derive(Clone, Copy)]
pub(super) struct Place {
    raw_depth: isize,
    depth: usize,
}

/// Where a pruned walk's visitor asks to leave the node just handed to it
/// (its depth shown): set by the visitor, read right after that node.
/// Only a node handed on at once (held for no waiting loop) is left, and
/// then its raw subtree is not shown; otherwise the walk goes on as if
/// nothing were asked, which a pruned walk allows.
#[derive(Clone, Copy)]
pub(super) struct Leave<'c>(pub(super) Option<&'c Cell<Option<usize>>>);

impl Leave<'_> {
    fn clear(self) {
        if let Some(cell) = self.0 {
            cell.set(None);
        }
    }

    /// Whether the node just handed on, shown at `depth`, is to be left.
    fn asked(self, depth: usize) -> bool {
        self.0.is_some_and(|cell| cell.take() == Some(depth))
    }

    /// After a raw node shown as itself at `at`: when it is to be left,
    /// nothing under its frame (the top one, if it opened one) is shown,
    /// and its raw depth is noted in `left` for the inner walk.
    fn apply<N>(self, at: Place, frames: &mut [Frame<N>], left: &Cell<Option<isize>>) {
        if self.asked(at.depth)
            && let Some(top) = frames.last_mut()
            && top.raw_depth == at.raw_depth
        {
            top.mode = Mode::Hide { target: None };
            left.set(Some(at.raw_depth));
        }
    }
}

/// A loop iteration held until the walk's next node says whether it has
/// children.
pub(super) struct Pending<N> {
    node: N,
    tracepoint: Tracepoint<'static>,
    footer: Option<Footer<'static>>,
    at: Place,
}

/// One open raw container in a streamed walk.
pub(super) struct Frame<N> {
    /// Its raw depth in the inner walk (−1: the parent of the roots).
    raw_depth: isize,
    mode: Mode<N>,
}

pub(super) enum Mode<N> {
    /// Its kept children are shown at `depth`; a loop waiting for its
    /// last child to be shown itself is `waiting`.
    Show {
        shape: Shape,
        depth: usize,
        tracker: Tracker<N>,
        waiting: Option<Box<Waiting<N>>>,
    },
    /// Nothing under it is shown but `target`'s children, at `depth`.
    Hide { target: Option<(N, usize)> },
}

/// A loop whose line waits for its last child (see the module doc).
pub(super) struct Waiting<N> {
    node: N,
    tracepoint: Tracepoint<'static>,
    footer: Option<Footer<'static>>,
    /// Its own depth shown.
    depth: usize,
    /// Whether its last raw child so far is an iteration.
    last_iteration: bool,
}

/// A node held for a waiting loop.
enum Held<N> {
    Node {
        node: PostNode<N>,
        depth: usize,
        tracepoint: Tracepoint<'static>,
        footer: Option<Footer<'static>>,
        children: Option<usize>,
    },
    Leaf {
        node: PostNode<N>,
        depth: usize,
        header: crate::model::TracepointHeader,
    },
    Folded {
        count: usize,
        depth: usize,
    },
}

impl<N: Copy> Held<N> {
    fn of(visit: Visit<'_, PostNode<N>>) -> Self {
        match visit {
            Visit::Node {
                node,
                depth,
                tracepoint,
                footer,
                children,
            } => Held::Node {
                node,
                depth,
                tracepoint: tracepoint.clone().into_owned(),
                footer: footer.map(|footer| footer.clone().into_owned()),
                children,
            },
            Visit::Leaf {
                node,
                depth,
                header,
            } => Held::Leaf {
                node,
                depth,
                header,
            },
            Visit::Folded { count, depth } => Held::Folded { count, depth },
        }
    }

    fn replay(&self, f: &mut Visitor<'_, N>) -> Result<()> {
        f(match self {
            Held::Node {
                node,
                depth,
                tracepoint,
                footer,
                children,
            } => Visit::Node {
                node: *node,
                depth: *depth,
                tracepoint,
                footer: footer.as_ref(),
                children: *children,
            },
            Held::Leaf {
                node,
                depth,
                header,
            } => Visit::Leaf {
                node: *node,
                depth: *depth,
                header: *header,
            },
            Held::Folded { count, depth } => Visit::Folded {
                count: *count,
                depth: *depth,
            },
        })
    }
}

/// Where a streamed walk's nodes go: to its visitor, or into the buffer
/// of the innermost waiting loop (one buffer per waiting loop, outermost
/// first). Small buffers emptied are kept for the next waiting loops.
pub(super) struct Sink<'s, 'f, N> {
    out: &'s mut Visitor<'f, N>,
    buffers: Vec<Vec<Held<N>>>,
    held: usize,
    spare: Vec<Vec<Held<N>>>,
}

/// Emptied buffers kept at most, and the most nodes one kept may hold.
const SPARE_BUFFERS: usize = 16;
const SPARE_CAPACITY: usize = 1024;

impl<'s, 'f, N: Copy> Sink<'s, 'f, N> {
    fn new(out: &'s mut Visitor<'f, N>) -> Self {
        Sink {
            out,
            buffers: Vec::new(),
            held: 0,
            spare: Vec::new(),
        }
    }

    fn visit(&mut self, visit: Visit<'_, PostNode<N>>) -> Result<()> {
        match self.buffers.last_mut() {
            None => (self.out)(visit),
            Some(buffer) => {
                buffer.push(Held::of(visit));
                self.held += 1;
                Ok(())
            }
        }
    }

    /// Starts holding for a loop that waits.
    fn hold(&mut self) {
        let buffer = self.spare.pop().unwrap_or_default();
        self.buffers.push(buffer);
    }

    /// Keeps an emptied buffer for a later loop, if it is small.
    fn recycle(&mut self, mut buffer: Vec<Held<N>>) {
        buffer.clear();
        if buffer.capacity() <= SPARE_CAPACITY && self.spare.len() < SPARE_BUFFERS {
            self.spare.push(buffer);
        }
    }

    /// The innermost waiting loop's buffer, taken.
    fn take_last(&mut self) -> Vec<Held<N>> {
        let buffer = self.buffers.pop().unwrap_or_default();
        self.held -= buffer.len();
        buffer
    }

    /// The outermost waiting loop's buffer, taken.
    fn take_first(&mut self) -> Vec<Held<N>> {
        if self.buffers.is_empty() {
            return Vec::new();
        }
        let buffer = self.buffers.remove(0);
        self.held -= buffer.len();
        buffer
    }

    /// Drops every buffer (the outermost waiting loop is dropped).
    fn drop_all(&mut self) {
        for buffer in std::mem::take(&mut self.buffers) {
            self.recycle(buffer);
        }
        self.held = 0;
    }

    /// Hands held nodes on: into the next waiting loop's buffer, or to the
    /// visitor (`to_out`: the buffers left are inner ones).
    fn replay(&mut self, mut held: Vec<Held<N>>, to_out: bool) -> Result<()> {
        match self.buffers.last_mut() {
            Some(buffer) if !to_out => {
                self.held += held.len();
                buffer.append(&mut held);
            }
            _ => held.iter().try_for_each(|held| held.replay(self.out))?,
        }
        self.recycle(held);
        Ok(())
    }
}

impl<T: TraceTree> Postprocessed<T> {
    /// Streams the view of `parent`'s raw children from `first` up to
    /// `next` (all when `None`) at `depth`, through the inner reader's walk.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn stream_children(
        &self,
        parent: T::Node,
        first: Option<T::Node>,
        next: Option<T::Node>,
        depth: usize,
        max_depth: Option<usize>,
        detail: VisitDetail,
        f: &mut Visitor<'_, T::Node>,
        leave: Leave<'_>,
    ) -> Result<()> {
        let shape = self.shape_of(parent)?;
        let mut tracker = Tracker::new(shape);
        if let Some(first) = first {
            // The children before `first`, for the peeked slots at the end.
            if next.is_none() && shape.may_repeat(self.inner.child_count(parent)?) {
                let mut from = 0;
                'scan: loop {
                    let page = self.inner.children_range(parent, from, SCAN_PAGE)?;
                    if page.is_empty() {
                        break;
                    }
                    from += page.len();
                    for child in page {
                        if child == first {
                            break 'scan;
                        }
                        tracker.add(self.resolve(child, CHAIN_LIMIT)?);
                    }
                }
            }
        }
        let mut frames: Vec<Frame<T::Node>> = vec![Frame {
            raw_depth: -1,
            mode: Mode::Show {
                shape,
                depth,
                tracker,
                waiting: None,
            },
        }];
        let mut sink = Sink::new(f);
        let mut pending: Option<Pending<T::Node>> = None;
        let inner_detail = VisitDetail {
            child_counts: false,
            leaf_bodies: true,
        };
        // The raw depth of a container the visitor left, for the inner walk.
        let left = Cell::new(None);
        let mut step = |visit: Visit<'_, T::Node>| {
            let Visit::Node {
                node,
                depth: raw_depth,
                tracepoint,
                footer,
                ..
            } = visit
            else {
                return Err(Error::internal(
                    "a walk asked for whole nodes gave a header or a fold",
                ));
            };
            if sink.held > HOLD_LIMIT {
                self.decide_outermost(&mut frames, &mut sink, &mut pending, detail)?;
            }
            let raw_depth = raw_depth as isize;
            if pending.is_some()
                && let Some(iteration) = pending.take()
            {
                let kept = raw_depth > iteration.at.raw_depth;
                let shown = shown(raw(iteration.node, &iteration.tracepoint));
                if let Some(Frame {
                    mode: Mode::Show { tracker, .. },
                    ..
                }) = frames.last_mut()
                {
                    tracker.add(kept.then_some(shown));
                }
                if kept {
                    leave.clear();
                    self.show_plain(
                        shown,
                        &iteration.tracepoint,
                        iteration.footer.as_ref(),
                        iteration.at,
                        (max_depth, detail),
                        &mut sink,
                        &mut frames,
                    )?;
                    leave.apply(iteration.at, &mut frames, &left);
                }
            }
            while frames.last().is_some_and(|top| top.raw_depth >= raw_depth) {
                let top = frames.pop().expect("checked");
                self.close(top, &mut frames, max_depth, detail, &mut sink)?;
            }
            let Some(top) = frames.last_mut() else {
                return Err(Error::internal("a walk left its parent"));
            };
            match &mut top.mode {
                Mode::Hide { target } => {
                    if let Some((target, depth)) = *target
                        && target == node
                    {
                        Self::open(self.shape(tracepoint)?, raw_depth, depth, &mut frames);
                    }
                    Ok(())
                }
                Mode::Show {
                    depth,
                    tracker,
                    waiting,
                    ..
                } => {
                    let depth = *depth;
                    let ty = tracepoint.tracepoint_type();
                    if let Some(waiting) = waiting {
                        waiting.last_iteration = ty == TracepointType::LoopIteration;
                    }
                    if ty == TracepointType::LoopIteration {
                        // Kept when it has children: when the walk's next
                        // node is one.
                        pending = Some(Pending {
                            node,
                            tracepoint: tracepoint.clone().into_owned(),
                            footer: footer.map(|footer| footer.clone().into_owned()),
                            at: Place { raw_depth, depth },
                        });
                        return Ok(());
                    }
                    if ty == TracepointType::Loop
                        && loop_iterations(footer) != 0
                        && max_depth.is_none_or(|max| depth < max)
                    {
                        // Shown or not by its last child: held till it closes.
                        sink.hold();
                        let shape = self.shape(tracepoint)?;
                        frames.push(Frame {
                            raw_depth,
                            mode: Mode::Show {
                                shape,
                                depth: depth + 1,
                                tracker: Tracker::new(shape),
                                waiting: Some(Box::new(Waiting {
                                    node,
                                    tracepoint: tracepoint.clone().into_owned(),
                                    footer: footer.map(|footer| footer.clone().into_owned()),
                                    depth,
                                    last_iteration: false,
                                })),
                            },
                        });
                        return Ok(());
                    }
                    let shown = if tracepoint.is_container() {
                        let decided =
                            self.decide_container(node, tracepoint, footer, CHAIN_LIMIT)?;
                        tracker.add(decided);
                        let Some(shown) = decided else {
                            frames.push(Frame {
                                raw_depth,
                                mode: Mode::Hide { target: None },
                            });
                            return Ok(());
                        };
                        shown
                    } else {
                        // A leaf shows itself or nothing: decided
                        // without a node built for the tracker.
                        let kept = self.leaf_kept(tracepoint)?;
                        tracker.add_with(kept, || Some(shown(raw(node, tracepoint))));
                        if !kept {
                            return Ok(());
                        }
                        shown(raw(node, tracepoint))
                    };
                    leave.clear();
                    if shown.inner == node {
                        let at = Place { raw_depth, depth };
                        self.show_plain(
                            shown,
                            tracepoint,
                            footer,
                            at,
                            (max_depth, detail),
                            &mut sink,
                            &mut frames,
                        )?;
                        leave.apply(at, &mut frames, &left);
                    } else {
                        self.emit(shown, depth, detail, &mut |visit| sink.visit(visit))?;
                        let container = self.is_container(shown)?;
                        let container = if container && leave.asked(depth) {
                            left.set(Some(raw_depth));
                            false
                        } else {
                            container
                        };
                        let target = if container {
                            if max_depth.is_some_and(|max| depth >= max) {
                                self.fold(shown, depth, &mut |visit| sink.visit(visit))?;
                                None
                            } else {
                                Some((shown.inner, depth + 1))
                            }
                        } else {
                            None
                        };
                        frames.push(Frame {
                            raw_depth,
                            mode: Mode::Hide { target },
                        });
                    }
                    Ok(())
                }
            }
        };
        if leave.0.is_some() && first.is_none() && next.is_none() {
            // All the children: the parent's subtree, walked so that the
            // inner walk leaves what the visitor left (raw depths one less).
            self.inner
                .walk_visit_pruned(&[parent], inner_detail, |visit| match visit {
                    Visit::Node { depth: 0, .. } => Ok(Prune::Go),
                    Visit::Node {
                        node,
                        depth,
                        tracepoint,
                        footer,
                        children,
                    } => {
                        step(Visit::Node {
                            node,
                            depth: depth - 1,
                            tracepoint,
                            footer,
                            children,
                        })?;
                        Ok(match left.take() {
                            Some(raw) => Prune::Leave(raw.unsigned_abs() + 1),
                            None => Prune::Go,
                        })
                    }
                    other => step(other).map(|()| Prune::Go),
                })?;
        } else {
            self.inner
                .walk_visit_siblings(parent, first, next, None, inner_detail, &mut step)?;
        }
        if pending.is_some()
            && let Some(Frame {
                mode: Mode::Show { tracker, .. },
                ..
            }) = frames.last_mut()
        {
            tracker.add(None);
        }
        while let Some(top) = frames.pop() {
            if top.raw_depth == -1 && next.is_some() {
                break;
            }
            self.close(top, &mut frames, max_depth, detail, &mut sink)?;
        }
        Ok(())
    }

    /// Hands a raw node that shows itself to the sink, and opens its
    /// children.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn show_plain(
        &self,
        shown: PostNode<T::Node>,
        tracepoint: &Tracepoint<'_>,
        footer: Option<&Footer<'_>>,
        at: Place,
        (max_depth, detail): (Option<usize>, VisitDetail),
        sink: &mut Sink<'_, '_, T::Node>,
        frames: &mut Vec<Frame<T::Node>>,
    ) -> Result<()> {
        let Place { raw_depth, depth } = at;
        self.line(shown, tracepoint, footer, depth, detail, &mut |visit| {
            sink.visit(visit)
        })?;
        if tracepoint.is_container() {
            if max_depth.is_some_and(|max| depth >= max) {
                self.fold(shown, depth, &mut |visit| sink.visit(visit))?;
                frames.push(Frame {
                    raw_depth,
                    mode: Mode::Hide { target: None },
                });
            } else {
                Self::open(self.shape(tracepoint)?, raw_depth, depth + 1, frames);
            }
        }
        Ok(())
    }

    /// Hands `f` the line of `shown`, whose raw tracepoint is `tracepoint`.
    fn line<F: FnMut(Visit<'_, PostNode<T::Node>>) -> Result<()> + ?Sized>(
        &self,
        shown: PostNode<T::Node>,
        tracepoint: &Tracepoint<'_>,
        footer: Option<&Footer<'_>>,
        depth: usize,
        detail: VisitDetail,
        f: &mut F,
    ) -> Result<()> {
        let children = detail
            .child_counts
            .then(|| self.child_count(shown))
            .transpose()?;
        Self::show(shown, tracepoint, footer, |tracepoint, footer| {
            f(Visit::Node {
                node: shown,
                depth,
                tracepoint,
                footer,
                children,
            })
        })
    }

    /// Opens a shown raw container whose children show at `depth`.
    pub(super) fn open(
        shape: Shape,
        raw_depth: isize,
        depth: usize,
        frames: &mut Vec<Frame<T::Node>>,
    ) {
        frames.push(Frame {
            raw_depth,
            mode: Mode::Show {
                shape,
                depth,
                tracker: Tracker::new(shape),
                waiting: None,
            },
        });
    }

    /// Closes a frame: a shown container's peeked slots past its kept
    /// children are shown again; a waiting loop is decided by its last
    /// child, and added to its parent's list (`frames`' top).
    pub(super) fn close(
        &self,
        frame: Frame<T::Node>,
        frames: &mut [Frame<T::Node>],
        max_depth: Option<usize>,
        detail: VisitDetail,
        sink: &mut Sink<'_, '_, T::Node>,
    ) -> Result<()> {
        let Mode::Show {
            shape,
            depth,
            tracker,
            waiting,
        } = frame.mode
        else {
            return Ok(());
        };
        // Only a list with a dropped child has peeked slots past its kept ones.
        if tracker.kept < tracker.n {
            let slots = peeked_slots(shape.ty, shape.names, tracker.n);
            for again in tracker.stale(slots) {
                let mut visit = |visit: Visit<'_, PostNode<T::Node>>| sink.visit(visit);
                self.walk_from(&[again], depth, max_depth, detail, &mut visit, Leave(None))?;
            }
        }
        let Some(waiting) = waiting else {
            return Ok(());
        };
        let here = raw(waiting.node, &waiting.tracepoint);
        let iterations = loop_iterations(waiting.footer.as_ref());
        let decided = match tracker.n {
            0 => loop_shown(here, iterations, false),
            _ if waiting.last_iteration => loop_shown(here, iterations, tracker.last.is_some()),
            // Decided as random access decides it.
            _ => self.decide(
                waiting.node,
                &waiting.tracepoint,
                waiting.footer.as_ref(),
                CHAIN_LIMIT,
            )?,
        };
        let held = sink.take_last();
        if let Some(Frame {
            mode: Mode::Show { tracker, .. },
            ..
        }) = frames.last_mut()
        {
            tracker.add(decided);
        }
        if let Some(shown) = decided {
            self.line(
                shown,
                &waiting.tracepoint,
                waiting.footer.as_ref(),
                waiting.depth,
                detail,
                &mut |visit| sink.visit(visit),
            )?;
            sink.replay(held, false)?;
        } else {
            sink.recycle(held);
        }
        Ok(())
    }

    /// Decides the outermost waiting loop by random access, when the nodes
    /// held reach [`HOLD_LIMIT`]: shown, its line and what it held go to
    /// the visitor; dropped, nothing in it shows.
    fn decide_outermost(
        &self,
        frames: &mut [Frame<T::Node>],
        sink: &mut Sink<'_, '_, T::Node>,
        pending: &mut Option<Pending<T::Node>>,
        detail: VisitDetail,
    ) -> Result<()> {
        let Some((index, waiting)) =
            frames
                .iter_mut()
                .enumerate()
                .find_map(|(index, frame)| match &mut frame.mode {
                    Mode::Show { waiting, .. } => waiting.take().map(|waiting| (index, waiting)),
                    Mode::Hide { .. } => None,
                })
        else {
            return Ok(());
        };
        let decided = self.decide(
            waiting.node,
            &waiting.tracepoint,
            waiting.footer.as_ref(),
            CHAIN_LIMIT,
        )?;
        if let Some(Frame {
            mode: Mode::Show { tracker, .. },
            ..
        }) = index
            .checked_sub(1)
            .and_then(|parent| frames.get_mut(parent))
        {
            tracker.add(decided);
        }
        match decided {
            Some(shown) => {
                let held = sink.take_first();
                self.line(
                    shown,
                    &waiting.tracepoint,
                    waiting.footer.as_ref(),
                    waiting.depth,
                    detail,
                    sink.out,
                )?;
                sink.replay(held, true)
            }
            None => {
                // Everything held, and the walk's node waiting, is in it.
                sink.drop_all();
                *pending = None;
                for frame in &mut frames[index..] {
                    frame.mode = Mode::Hide { target: None };
                }
                Ok(())
            }
        }
    }

    pub(super) fn fold<F: FnMut(Visit<'_, PostNode<T::Node>>) -> Result<()> + ?Sized>(
        &self,
        node: PostNode<T::Node>,
        depth: usize,
        f: &mut F,
    ) -> Result<()> {
        let count = self.child_count(node)?;
        if count > 0 {
            f(Visit::Folded {
                count,
                depth: depth + 1,
            })?;
        }
        Ok(())
    }

    /// Hands `node` to `f` at `depth`, read through the inner tree.
    pub(super) fn emit<F: FnMut(Visit<'_, PostNode<T::Node>>) -> Result<()> + ?Sized>(
        &self,
        node: PostNode<T::Node>,
        depth: usize,
        detail: VisitDetail,
        f: &mut F,
    ) -> Result<()> {
        let children = detail
            .child_counts
            .then(|| self.child_count(node))
            .transpose()?;
        self.inner.visit(node.inner, |tracepoint, footer| {
            Self::show(node, tracepoint, footer, |tracepoint, footer| {
                f(Visit::Node {
                    node,
                    depth,
                    tracepoint,
                    footer,
                    children,
                })
            })
        })?
    }

    /// Walks view nodes as roots at `depth`.
    pub(super) fn walk_from(
        &self,
        roots: &[PostNode<T::Node>],
        depth: usize,
        max_depth: Option<usize>,
        detail: VisitDetail,
        f: &mut Visitor<'_, T::Node>,
        leave: Leave<'_>,
    ) -> Result<()> {
        for &root in roots {
            leave.clear();
            self.emit(root, depth, detail, f)?;
            if leave.asked(depth) || !self.is_container(root)? {
                continue;
            }
            if max_depth.is_some_and(|max| depth >= max) {
                self.fold(root, depth, f)?;
                continue;
            }
            let (first, next) = (None, None);
            self.stream_children(
                root.inner,
                first,
                next,
                depth + 1,
                max_depth,
                detail,
                f,
                leave,
            )?;
        }
        Ok(())
    }
}
