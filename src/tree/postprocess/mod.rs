//! [`Postprocessed`]: any [`TraceTree`] seen as the recorder's IDE plugin and
//! its trace diff see it, through the reference's `CompressingPostprocessor`
//! (lincheck 3.6, `TracePostprocessor.kt`, applied by its `LazyTraceReader`
//! to every tracepoint it loads).
//!
//! Each raw tracepoint goes through the reference's chain, in its order:
//! `$default` and `access$` call pairs collapse into the inner call, and
//! synthetic and auto-generated accessors become their field access
//! (`calls`); coverage accesses are dropped (`coverage`); loops with no
//! iterations, loops whose only iteration is dropped and every iteration
//! with no raw children are dropped, and a loop whose last child is
//! dropped counts one iteration fewer (here).
//!
//! Invariants, as the reference's lazy reader has them:
//! - The tests read *raw* child counts (`events.size`); a peek at child `i`
//!   gives the first child at raw position `≥ i` that is kept; the peeked
//!   slots past a list's kept children show again (`slots`). The view
//!   shows what the reference's printer shows; its diff reads a children
//!   list up to the first empty slot, which differs only where a peeked
//!   slot is separated from the kept children by an empty one.
//! - A node ([`PostNode`]) is the raw node whose body, children and event id
//!   it shows, the raw child of its parent it stands for (`at`: its handle),
//!   and the code location and status it shows: nothing is materialized.
//!   Walks stream the inner reader's own walks (`walk`); `navigate` finds a
//!   node's place in the view from its raw ancestors. A subtree in which
//!   nothing starts a rule is its raw bytes (`recorded`: `raw_subtree`).
//! - What the chain asks of a reference object (the patterns a method's
//!   name could qualify with, a coverage name or access path) is worked
//!   out once per object and kept by id, and the navigation's child counts
//!   once per list (`memo`): a view is made once per open reader and
//!   shared, not made per request.
//! - Deviations: a chain of qualifying calls nested deeper than
//!   [`CHAIN_LIMIT`] is left as it is (the reference recurses without
//!   bound); a call's child diff statuses are its own, without those a peek
//!   adds.

mod calls;
mod coverage;
mod memo;
mod navigate;
mod recorded;
mod slots;
mod walk;

use crate::common::{CodeLocationId, ThreadId};
use crate::error::Result;
use crate::format::TraceContext;
use crate::model::{DiffStatus, Footer, Tracepoint, TracepointBody};
use crate::read::{RawSubtree, Visit, VisitDetail};
use crate::tree::{Prune, TraceTree};

use calls::Call;
use memo::Memo;

/// Nested qualifying calls resolved at most (the view recurses on them).
const CHAIN_LIMIT: u32 = 256;
/// Children read at once while scanning a children list.
const SCAN_PAGE: usize = 4096;

/// A trace tree seen through the recorder's post-processing: what its IDE
/// plugin shows and what its trace diff compares (see the module doc).
/// Wraps any reader: `Postprocessed::new(&reader)` is itself a
/// [`TraceTree`] the printers, the dump and the diff take.
pub struct Postprocessed<T> {
    inner: T,
    memo: Memo,
}

/// A node of [`Postprocessed`]: the raw node it shows, the raw child of its
/// parent it stands for, and the code location and diff status it shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PostNode<N> {
    inner: N,
    at: N,
    location: CodeLocationId,
    status: DiffStatus,
    fewer_iterations: bool,
}

impl<T: TraceTree> Postprocessed<T> {
    /// `inner` seen through the post-processing.
    pub fn new(inner: T) -> Self {
        Postprocessed {
            inner,
            memo: Memo::new(),
        }
    }

    /// The tree seen through the view.
    pub fn inner(&self) -> &T {
        &self.inner
    }
}

/// What the chain needs of a raw tracepoint.
#[derive(Clone, Copy)]
struct Raw<N> {
    node: N,
    location: CodeLocationId,
    status: DiffStatus,
}

fn raw<N>(node: N, tp: &Tracepoint<'_>) -> Raw<N> {
    Raw {
        node,
        location: tp.header.code_location,
        status: tp.header.diff_status,
    }
}

fn shown<N: Copy>(raw: Raw<N>) -> PostNode<N> {
    PostNode {
        inner: raw.node,
        at: raw.node,
        location: raw.location,
        status: raw.status,
        fewer_iterations: false,
    }
}

/// A loop's iteration count (0 when it has no footer).
fn loop_iterations(footer: Option<&Footer<'_>>) -> i32 {
    match footer {
        Some(Footer::Loop { iterations }) => *iterations,
        _ => 0,
    }
}

/// A loop with iterations as the view shows it, by whether its last raw
/// child is kept: dropped when it has one iteration, else with one fewer.
fn loop_shown<N: Copy>(here: Raw<N>, iterations: i32, last_kept: bool) -> Option<PostNode<N>> {
    match (last_kept, iterations) {
        (true, _) => Some(shown(here)),
        (false, 1) => None,
        (false, _) => Some(PostNode {
            fewer_iterations: true,
            ..shown(here)
        }),
    }
}

/// `DiffStatus.toLeaf()`.
fn as_leaf(status: DiffStatus) -> DiffStatus {
    match status {
        DiffStatus::EditedOld => DiffStatus::Removed,
        DiffStatus::EditedNew => DiffStatus::Added,
        other => other,
    }
}

impl<T: TraceTree> Postprocessed<T> {
    /// Decides a raw tracepoint: `None` when the view drops it. A leaf
    /// shows itself unless [`leaf_kept`](Self::leaf_kept) says no; a
    /// container is decided out of line.
    #[inline]
    fn decide(
        &self,
        node: T::Node,
        tp: &Tracepoint<'_>,
        footer: Option<&Footer<'_>>,
        budget: u32,
    ) -> Result<Option<PostNode<T::Node>>> {
        if tp.is_container() {
            return self.decide_container(node, tp, footer, budget);
        }
        Ok(self.leaf_kept(tp)?.then(|| shown(raw(node, tp))))
    }

    /// Whether the view keeps a raw leaf (the streamed walk asks this of
    /// the leaves it passes, most of a trace, without building nodes).
    #[inline]
    fn leaf_kept(&self, tp: &Tracepoint<'_>) -> Result<bool> {
        Ok(!self.coverage_leaf(tp, tp.header.code_location)?)
    }

    /// [`decide`](Self::decide) for a call, a loop or an iteration.
    #[inline(never)]
    fn decide_container(
        &self,
        node: T::Node,
        tp: &Tracepoint<'_>,
        footer: Option<&Footer<'_>>,
        budget: u32,
    ) -> Result<Option<PostNode<T::Node>>> {
        let context = self.context();
        let here = raw(node, tp);
        match &tp.body {
            TracepointBody::MethodCall {
                method, arguments, ..
            } => {
                if !self.memo.names(context, *method)?.any() || budget == 0 {
                    return Ok(Some(shown(here)));
                }
                let call = Call {
                    node: shown(here),
                    method: *method,
                    class: context.method(*method)?.class,
                    no_arguments: arguments.is_empty(),
                    children: self.inner.child_count(node)?,
                };
                self.chain(call, budget - 1)
            }
            TracepointBody::Loop { .. } => {
                let iterations = loop_iterations(footer);
                if iterations == 0 {
                    return Ok(None);
                }
                let n = self.inner.child_count(node)?;
                let last = if n == 0 || budget == 0 {
                    None
                } else {
                    self.peek(node, n - 1, n, budget - 1)?
                };
                Ok(loop_shown(here, iterations, last.is_some()))
            }
            TracepointBody::LoopIteration { .. } => {
                if self.inner.child_count(node)? == 0 {
                    Ok(None)
                } else {
                    Ok(Some(shown(here)))
                }
            }
            _ => Ok(Some(shown(here))),
        }
    }

    /// A raw node decided by itself (read through the inner tree).
    fn resolve(&self, node: T::Node, budget: u32) -> Result<Option<PostNode<T::Node>>> {
        let inner = &self.inner;
        inner.visit(node, |tp, footer| self.decide(node, tp, footer, budget))?
    }

    /// Whether a view node shows children: a call or a loop's, not a leaf a
    /// call became.
    fn is_container(&self, node: PostNode<T::Node>) -> Result<bool> {
        self.inner.visit(node.inner, |tp, _| tp.is_container())
    }

    /// Shows `tp` (the raw tracepoint of `node.inner`) as `node` shows it.
    fn show<R>(
        node: PostNode<T::Node>,
        tp: &Tracepoint<'_>,
        footer: Option<&Footer<'_>>,
        f: impl FnOnce(&Tracepoint<'_>, Option<&Footer<'_>>) -> R,
    ) -> R {
        if node.location == tp.header.code_location
            && node.status == tp.header.diff_status
            && !node.fewer_iterations
        {
            return f(tp, footer);
        }
        let mut changed = tp.clone();
        changed.header.code_location = node.location;
        changed.header.diff_status = node.status;
        match footer {
            Some(Footer::Loop { iterations }) if node.fewer_iterations => f(
                &changed,
                Some(&Footer::Loop {
                    iterations: iterations.wrapping_sub(1),
                }),
            ),
            _ => f(&changed, footer),
        }
    }
}

impl<T: TraceTree> TraceTree for Postprocessed<T> {
    type Node = PostNode<T::Node>;

    fn context(&self) -> &TraceContext {
        self.inner.context()
    }

    fn thread_ids(&self) -> Vec<ThreadId> {
        self.inner.thread_ids()
    }

    fn roots(&self, thread: ThreadId) -> Result<Vec<Self::Node>> {
        let mut roots = Vec::new();
        for root in self.inner.roots(thread)? {
            if let Some(root) = self.resolve(root, CHAIN_LIMIT)? {
                roots.push(root);
            }
        }
        Ok(roots)
    }

    fn visit<R>(
        &self,
        node: Self::Node,
        f: impl FnOnce(&Tracepoint<'_>, Option<&Footer<'_>>) -> R,
    ) -> Result<R> {
        self.inner.visit(node.inner, |tracepoint, footer| {
            Self::show(node, tracepoint, footer, f)
        })
    }

    fn child_count(&self, node: Self::Node) -> Result<usize> {
        self.scan_children(node, usize::MAX, |_| {})
    }

    fn children(&self, node: Self::Node) -> Result<Vec<Self::Node>> {
        let mut children = Vec::new();
        self.scan_children(node, usize::MAX, |child| children.push(child))?;
        Ok(children)
    }

    fn children_range(
        &self,
        node: Self::Node,
        from: usize,
        count: usize,
    ) -> Result<Vec<Self::Node>> {
        let mut children = Vec::new();
        self.scan_children(node, from.saturating_add(count), |child| {
            children.push(child)
        })?;
        Ok(super::page_of(children, from, count))
    }

    /// The raw subtree of the node it shows, where the view shows it as
    /// recorded (`recorded`): nothing below it that the chain would change.
    fn raw_subtree(&self, node: Self::Node) -> Result<Option<RawSubtree<'_>>> {
        self.recorded_subtree(node)
    }

    /// The raw subtree of the node it shows: the view decides a node's
    /// descendants from that subtree's content alone (each raw child by
    /// itself and its own children, the peeked slots from the list).
    fn subtree_source(&self, node: Self::Node) -> Result<Option<RawSubtree<'_>>> {
        self.inner.subtree_source(node.inner)
    }

    /// Streams each root's raw subtree through the inner reader's walk,
    /// deciding each tracepoint as it passes.
    fn walk_visit(
        &self,
        roots: &[Self::Node],
        max_depth: Option<usize>,
        detail: VisitDetail,
        mut f: impl FnMut(Visit<'_, Self::Node>) -> Result<()>,
    ) -> Result<()> {
        self.walk_from(roots, 0, max_depth, detail, &mut f, walk::Leave(None))
    }

    /// A node left when it is handed on at once shows nothing of its
    /// subtree, and where the view walks all of a raw node's children, the
    /// inner walk leaves its raw subtree too (a waiting loop's nodes are
    /// handed on late: walked on).
    fn walk_visit_pruned(
        &self,
        roots: &[Self::Node],
        detail: VisitDetail,
        mut f: impl FnMut(Visit<'_, Self::Node>) -> Result<Prune>,
    ) -> Result<()> {
        let asked = std::cell::Cell::new(None);
        let mut visit = |visit: Visit<'_, Self::Node>| {
            if let Prune::Leave(depth) = f(visit)? {
                asked.set(Some(depth));
            }
            Ok(())
        };
        self.walk_from(
            roots,
            0,
            None,
            detail,
            &mut visit,
            walk::Leave(Some(&asked)),
        )
    }

    /// The inner reader's cuts, standing for the raw children they are;
    /// where it has none, every 4,096th raw child (the view's
    /// children by number would be scanned from the first each time).
    fn sibling_cuts(&self, node: Self::Node, bytes: u64) -> Result<Option<Vec<Self::Node>>> {
        if !self.is_container(node)? {
            return Ok(None);
        }
        let cuts = match self.inner.sibling_cuts(node.inner, bytes)? {
            Some(cuts) => cuts,
            None => {
                let n = self.inner.child_count(node.inner)?;
                if n <= SCAN_PAGE {
                    return Ok(None);
                }
                let mut cuts = Vec::with_capacity(n / SCAN_PAGE);
                for from in (SCAN_PAGE..n).step_by(SCAN_PAGE) {
                    cuts.extend(self.inner.children_range(node.inner, from, 1)?);
                }
                cuts
            }
        };
        Ok(Some(
            cuts.into_iter()
                .map(|cut| PostNode {
                    inner: cut,
                    at: cut,
                    location: CodeLocationId(-1),
                    status: DiffStatus::None,
                    fewer_iterations: false,
                })
                .collect(),
        ))
    }

    /// Streams the raw children the two bounds stand for.
    fn walk_visit_siblings(
        &self,
        parent: Self::Node,
        first: Option<Self::Node>,
        next: Option<Self::Node>,
        max_depth: Option<usize>,
        detail: VisitDetail,
        mut f: impl FnMut(Visit<'_, Self::Node>) -> Result<()>,
    ) -> Result<()> {
        if !self.is_container(parent)? {
            return Ok(());
        }
        let raw_first = first.map(|node| node.at);
        let raw_next = next.map(|node| node.at);
        // An empty run: the reader's cuts are ordered, so only equal bounds.
        if raw_first.is_some() && raw_first == raw_next {
            return Ok(());
        }
        self.stream_children(
            parent.inner,
            raw_first,
            raw_next,
            0,
            max_depth,
            detail,
            &mut f,
            walk::Leave(None),
        )
    }
}

#[cfg(all(test, feature = "generate"))]
mod tests {
    use super::*;
    use crate::generate::{GenerateOptions, Shape, generate_file};
    use crate::read::LazyTraceReader;

    /// A pruned walk that leaves every container at depth 1 gives every
    /// node the whole walk gives at depths 0 and 1, nothing it does not,
    /// in the same order, and leaves some subtree out.
    #[test]
    fn a_pruned_walk_leaves_what_it_is_asked_to() {
        let scratch = tempfile::tempdir().unwrap();
        let path = scratch.path().join("t.trace");
        let options = GenerateOptions::new(1 << 20, Shape::Mixed);
        generate_file(&path, &options, |_| {}).unwrap();
        let reader = LazyTraceReader::open(&path).unwrap();
        let view = Postprocessed::new(&reader);
        let mut left_out = 0;
        for thread in view.thread_ids() {
            let roots = view.roots(thread).unwrap();
            let mut whole = Vec::new();
            view.walk_visit(&roots, None, VisitDetail::default(), |visit| {
                if let Visit::Node { node, depth, .. } = visit {
                    whole.push((node, depth));
                }
                Ok(())
            })
            .unwrap();
            let mut pruned = Vec::new();
            view.walk_visit_pruned(&roots, VisitDetail::default(), |visit| {
                let Visit::Node {
                    node,
                    depth,
                    tracepoint,
                    ..
                } = visit
                else {
                    return Ok(Prune::Go);
                };
                pruned.push((node, depth));
                Ok(if depth == 1 && tracepoint.is_container() {
                    Prune::Leave(1)
                } else {
                    Prune::Go
                })
            })
            .unwrap();
            let mut rest = whole.iter();
            for node in &pruned {
                assert!(rest.any(|n| n == node), "{node:?} not in the whole walk");
            }
            let top = |nodes: &[(PostNode<_>, usize)]| {
                nodes
                    .iter()
                    .filter(|(_, d)| *d <= 1)
                    .copied()
                    .collect::<Vec<_>>()
            };
            assert_eq!(top(&pruned), top(&whole));
            left_out += whole.len() - pruned.len();
        }
        assert!(left_out > 0, "nothing was left out");
    }
}
