//! Children lists, and the peeked slots shown again after them.
//!
//! The reference's `loadAllChildren` compacts a call's kept children but
//! leaves the slots its chain peeked filled: a kept call whose peeked slots
//! lie past its kept children shows the peeked child again after them (a
//! call with two raw children, the first dropped, shows the second twice;
//! so does a loop whose last iteration is kept when an earlier child was
//! dropped). A scan keeps, per list, the raw count, the kept count, the
//! first three children and the last ([`Tracker`]), which is all the slots
//! need. [`Children`] is that scan, resumable: the lists of
//! [`TraceTree::children`] and the navigation's pre-order are read through
//! it.

use crate::error::Result;
use crate::model::{Tracepoint, TracepointBody, TracepointType};
use crate::tree::TraceTree;

use super::calls::Names;
use super::{CHAIN_LIMIT, PostNode, Postprocessed, SCAN_PAGE};

/// The slots of a kept container's children list that the chain peeked:
/// a call's by its raw child count and names, a loop's last (at most two,
/// ascending).
pub(super) fn peeked_slots(ty: TracepointType, names: Names, n: usize) -> [Option<usize>; 2] {
    match ty {
        TracepointType::MethodCall => match n {
            1 => [Some(0), None],
            2 => [Some(0), Some(1)],
            3 if names.synthetic_get() => [Some(1), None],
            3 if names.synthetic_set() => [Some(2), None],
            _ => [None, None],
        },
        TracepointType::Loop if n > 0 => [Some(n - 1), None],
        _ => [None, None],
    }
}

impl<T: TraceTree> Postprocessed<T> {
    /// The kept children of a container, with the peeked slots after them,
    /// as the reference's printer lists them; `limit` stops the scan once
    /// that many are found.
    pub(super) fn scan_children(
        &self,
        node: PostNode<T::Node>,
        limit: usize,
        mut keep: impl FnMut(PostNode<T::Node>),
    ) -> Result<usize> {
        let mut shown = 0;
        for child in Children::new(self, node)? {
            if shown >= limit {
                break;
            }
            keep(child?);
            shown += 1;
        }
        Ok(shown)
    }

    pub(super) fn shape_of(&self, node: T::Node) -> Result<Shape> {
        self.inner.visit(node, |tp, _| self.shape(tp))?
    }

    /// The [`Shape`] of a raw tracepoint.
    pub(super) fn shape(&self, tp: &Tracepoint<'_>) -> Result<Shape> {
        let names = match &tp.body {
            TracepointBody::MethodCall { method, .. } => {
                self.memo.names(self.context(), *method)?
            }
            _ => Names::default(),
        };
        Ok(Shape {
            ty: tp.tracepoint_type(),
            names,
        })
    }
}

/// What a children list's scan keeps to find the peeked slots past its
/// kept children: the raw count, the kept count, the first three children
/// and, for a loop's list (the only one whose peeked slot can lie past the
/// third), the last.
pub(super) struct Tracker<N> {
    pub(super) n: usize,
    pub(super) kept: usize,
    /// The first three raw children (`None`: dropped, or not there).
    pub(super) first: [Option<PostNode<N>>; 3],
    /// A loop's last raw child, when `n > 0` (`None`: dropped).
    pub(super) last: Option<PostNode<N>>,
    keeps_last: bool,
}

impl<N: Copy> Tracker<N> {
    /// The tracker of a list under a container of `shape`.
    pub(super) fn new(shape: Shape) -> Self {
        Tracker {
            n: 0,
            kept: 0,
            first: [None, None, None],
            last: None,
            keeps_last: shape.ty == TracepointType::Loop,
        }
    }

    #[inline]
    pub(super) fn add(&mut self, child: Option<PostNode<N>>) {
        self.add_with(child.is_some(), || child);
    }

    /// Adds a child, kept or not; `child` gives the node kept, asked for
    /// only when the tracker keeps it.
    #[inline]
    pub(super) fn add_with(&mut self, kept: bool, child: impl FnOnce() -> Option<PostNode<N>>) {
        let keep = self.n < 3 || self.keeps_last;
        let child = if kept && keep { child() } else { None };
        if self.n < 3 {
            self.first[self.n] = child;
        }
        if self.keeps_last {
            self.last = child;
        }
        self.n += 1;
        if kept {
            self.kept += 1;
        }
    }

    /// The children the reference lists again after the kept ones: each
    /// peeked slot past them holding the first kept child at or after it.
    pub(super) fn stale(&self, slots: [Option<usize>; 2]) -> Vec<PostNode<N>> {
        let mut again = Vec::new();
        for slot in slots.into_iter().flatten() {
            if slot < self.kept || slot >= self.n {
                continue;
            }
            let found = if slot + 1 == self.n && self.keeps_last {
                self.last
            } else {
                self.first.iter().skip(slot).flatten().copied().next()
            };
            if let Some(found) = found {
                again.push(found);
            }
        }
        again
    }
}

/// What [`peeked_slots`] needs of a container.
#[derive(Clone, Copy)]
pub(super) struct Shape {
    pub(super) ty: TracepointType,
    pub(super) names: Names,
}

impl Shape {
    /// Whether a list of `n` children under it can show a peeked slot
    /// again (calls of up to three children, loops).
    pub(super) fn may_repeat(self, n: usize) -> bool {
        peeked_slots(self.ty, self.names, n)[0].is_some()
    }
}

/// A container's children in the view, scanned a page of raw children at
/// a time, then the peeked slots shown again.
pub(super) struct Children<'v, T: TraceTree> {
    view: &'v Postprocessed<T>,
    parent: T::Node,
    shape: Shape,
    /// Raw children, and the next raw page's first.
    n: usize,
    from: usize,
    page: std::vec::IntoIter<T::Node>,
    tracker: Tracker<T::Node>,
    /// The peeked slots shown again, once the raw children are scanned.
    again: Option<std::vec::IntoIter<PostNode<T::Node>>>,
    /// A node not shown again (a pre-order resumed after it).
    passed: Option<PostNode<T::Node>>,
}

impl<'v, T: TraceTree> Children<'v, T> {
    /// The children of `node` (none for a leaf).
    pub(super) fn new(view: &'v Postprocessed<T>, node: PostNode<T::Node>) -> Result<Self> {
        let shape = view.shape_of(node.inner)?;
        let container = shape.ty.is_container();
        Ok(Children {
            view,
            parent: node.inner,
            shape,
            n: if container {
                view.inner.child_count(node.inner)?
            } else {
                0
            },
            from: 0,
            page: Vec::new().into_iter(),
            tracker: Tracker::new(shape),
            again: (!container).then(|| Vec::new().into_iter()),
            passed: None,
        })
    }

    /// Skips the children up to `child`'s first showing, and leaves it out
    /// of the slots shown again; false when it is not a child.
    pub(super) fn pass(&mut self, child: PostNode<T::Node>) -> Result<bool> {
        self.passed = Some(child);
        for next in self.by_ref() {
            if next? == child {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn step(&mut self) -> Result<Option<PostNode<T::Node>>> {
        loop {
            if let Some(again) = &mut self.again {
                return Ok(again.find(|&node| Some(node) != self.passed));
            }
            if let Some(child) = self.page.next() {
                let kept = self.view.resolve(child, CHAIN_LIMIT)?;
                self.tracker.add(kept);
                if kept.is_some() {
                    return Ok(kept);
                }
                continue;
            }
            if self.from < self.n {
                let page = self
                    .view
                    .inner
                    .children_range(self.parent, self.from, SCAN_PAGE)?;
                self.from = if page.is_empty() {
                    self.n
                } else {
                    self.from + page.len()
                };
                self.page = page.into_iter();
                continue;
            }
            let slots = peeked_slots(self.shape.ty, self.shape.names, self.tracker.n);
            self.again = Some(self.tracker.stale(slots).into_iter());
        }
    }
}

impl<T: TraceTree> Iterator for Children<'_, T> {
    type Item = Result<PostNode<T::Node>>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.step() {
            Ok(node) => node.map(Ok),
            Err(error) => {
                // Nothing more after an error.
                self.again = Some(Vec::new().into_iter());
                Some(Err(error))
            }
        }
    }
}
