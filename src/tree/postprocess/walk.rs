//! The view's walks, streamed through the inner reader's own walks: each
//! raw tracepoint the inner walk hands over is decided as it passes, and
//! only candidate calls and loops peek at their children by node.
//!
//! A frame per open raw container says whether its kept children show
//! ([`Mode::Show`], with the [`Tracker`] of its list for the peeked slots
//! shown again when it closes) or nothing under it shows but the children
//! of the node it became ([`Mode::Hide`]: a replaced call's chain). A loop
//! iteration is held until the next node says whether it has children.

use crate::error::{Error, Result};
use crate::model::{Footer, Tracepoint, TracepointType};
use crate::read::{Visit, VisitDetail};
use crate::tree::TraceTree;

use super::slots::{Shape, Tracker, peeked_slots};
use super::{CHAIN_LIMIT, PostNode, Postprocessed, SCAN_PAGE, raw, shown};

/// What a walk of the view hands its nodes to.
pub(super) type Visitor<'f, N> = dyn FnMut(Visit<'_, PostNode<N>>) -> Result<()> + 'f;

/// Where a node is: its raw depth in the inner walk, its depth shown.
#[derive(Clone, Copy)]
pub(super) struct Place {
    raw_depth: isize,
    depth: usize,
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
    /// Its kept children are shown at `depth`.
    Show {
        shape: Shape,
        depth: usize,
        tracker: Tracker<N>,
    },
    /// Nothing under it is shown but `target`'s children, at `depth`.
    Hide { target: Option<(N, usize)> },
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
    ) -> Result<()> {
        let mut tracker = Tracker::default();
        let shape = self.shape_of(parent)?;
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
            },
        }];
        let context = self.context();
        let mut pending: Option<Pending<T::Node>> = None;
        let inner_detail = VisitDetail {
            child_counts: false,
            leaf_bodies: true,
        };
        self.inner
            .walk_visit_siblings(parent, first, next, None, inner_detail, |visit| {
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
                let raw_depth = raw_depth as isize;
                if let Some(iteration) = pending.take() {
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
                        self.show_plain(
                            shown,
                            &iteration.tracepoint,
                            iteration.footer.as_ref(),
                            iteration.at,
                            (max_depth, detail),
                            f,
                            &mut frames,
                        )?;
                    }
                }
                while frames.last().is_some_and(|top| top.raw_depth >= raw_depth) {
                    let top = frames.pop().expect("checked");
                    self.close(top, max_depth, detail, f)?;
                }
                let Some(top) = frames.last_mut() else {
                    return Err(Error::internal("a walk left its parent"));
                };
                match &mut top.mode {
                    Mode::Hide { target } => {
                        if let Some((target, depth)) = *target
                            && target == node
                        {
                            Self::open(
                                Shape::of(context, tracepoint)?,
                                raw_depth,
                                depth,
                                &mut frames,
                            );
                        }
                        Ok(())
                    }
                    Mode::Show { depth, tracker, .. } => {
                        let depth = *depth;
                        if tracepoint.tracepoint_type() == TracepointType::LoopIteration {
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
                        let decided = self.decide(node, tracepoint, footer, CHAIN_LIMIT)?;
                        tracker.add(decided);
                        let Some(shown) = decided else {
                            if tracepoint.is_container() {
                                frames.push(Frame {
                                    raw_depth,
                                    mode: Mode::Hide { target: None },
                                });
                            }
                            return Ok(());
                        };
                        if shown.inner == node {
                            let at = Place { raw_depth, depth };
                            self.show_plain(
                                shown,
                                tracepoint,
                                footer,
                                at,
                                (max_depth, detail),
                                f,
                                &mut frames,
                            )?;
                        } else {
                            self.emit(shown, depth, detail, f)?;
                            let container = self.is_container(shown)?;
                            let target = if container {
                                if max_depth.is_some_and(|max| depth >= max) {
                                    self.fold(shown, depth, f)?;
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
            })?;
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
            self.close(top, max_depth, detail, f)?;
        }
        Ok(())
    }

    /// Hands a raw node that shows itself to `f`, and opens its children.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn show_plain(
        &self,
        shown: PostNode<T::Node>,
        tracepoint: &Tracepoint<'_>,
        footer: Option<&Footer<'_>>,
        at: Place,
        (max_depth, detail): (Option<usize>, VisitDetail),
        f: &mut Visitor<'_, T::Node>,
        frames: &mut Vec<Frame<T::Node>>,
    ) -> Result<()> {
        let Place { raw_depth, depth } = at;
        let children = if detail.child_counts {
            Some(self.child_count(shown)?)
        } else {
            None
        };
        Self::show(shown, tracepoint, footer, |tracepoint, footer| {
            f(Visit::Node {
                node: shown,
                depth,
                tracepoint,
                footer,
                children,
            })
        })?;
        if tracepoint.is_container() {
            if max_depth.is_some_and(|max| depth >= max) {
                self.fold(shown, depth, f)?;
                frames.push(Frame {
                    raw_depth,
                    mode: Mode::Hide { target: None },
                });
            } else {
                Self::open(
                    Shape::of(self.context(), tracepoint)?,
                    raw_depth,
                    depth + 1,
                    frames,
                );
            }
        }
        Ok(())
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
                tracker: Tracker::default(),
            },
        });
    }

    /// Closes a frame: a shown container's peeked slots past its kept
    /// children are shown again.
    pub(super) fn close(
        &self,
        frame: Frame<T::Node>,
        max_depth: Option<usize>,
        detail: VisitDetail,
        f: &mut Visitor<'_, T::Node>,
    ) -> Result<()> {
        let Mode::Show {
            shape,
            depth,
            tracker,
        } = frame.mode
        else {
            return Ok(());
        };
        let slots = peeked_slots(shape.ty, shape.names, tracker.n);
        for again in tracker.stale(slots) {
            self.walk_from(&[again], depth, max_depth, detail, f)?;
        }
        Ok(())
    }

    pub(super) fn fold(
        &self,
        node: PostNode<T::Node>,
        depth: usize,
        f: &mut Visitor<'_, T::Node>,
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
    pub(super) fn emit(
        &self,
        node: PostNode<T::Node>,
        depth: usize,
        detail: VisitDetail,
        f: &mut Visitor<'_, T::Node>,
    ) -> Result<()> {
        let children = if detail.child_counts {
            Some(self.child_count(node)?)
        } else {
            None
        };
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
    ) -> Result<()> {
        for &root in roots {
            self.emit(root, depth, detail, f)?;
            if !self.is_container(root)? {
                continue;
            }
            if max_depth.is_some_and(|max| depth >= max) {
                self.fold(root, depth, f)?;
                continue;
            }
            self.stream_children(root.inner, None, None, depth + 1, max_depth, detail, f)?;
        }
        Ok(())
    }
}
