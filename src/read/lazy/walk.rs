//! Streaming walks: a thread, or one node's subtree, read once from front to
//! back, each tracepoint decoded in place (or only its header read), nothing
//! cached, memory O(depth). `walk_thread`, `walk_subtree`, `walk_threads`
//! (every thread at once, a state per thread), `count_tracepoints` and the
//! lazy reader's [`TraceTree::walk_visit`](crate::tree::TraceTree::walk_visit)
//! (behind `print` and `dump`, with a depth limit that folds a container's
//! children into one count and, for the dump, each container's direct
//! child count) all run one loop, `walk_range`: generic
//! over its visitor (no `dyn` call per node) and compiled once per
//! [`WalkDetail`], so that a header walk carries no decoded tracepoint.
//!
//! A sequential walk meets containers in start order, so the container
//! table is probed at the entry after the last one found before any search;
//! the stream keeps its current block, so logical offsets translate to
//! physical ones once per block; footers are read through a second stream
//! so that jumping to a container's end does not move the first one. The
//! cache and the `TraceTree` methods `visit`/`children` serve random access
//! (an IDE expanding nodes); a whole-trace walk never goes through them.

use std::collections::BTreeMap;
use std::mem::ManuallyDrop;

use rayon::prelude::*;

use crate::common::LogicalOffset;
use crate::common::ThreadId;
use crate::error::{DecodeError, Error, NodeProblem, Result};
use crate::format::skip::{Skipped, try_skip};
use crate::format::{ByteReader, ObjectKind};
use crate::model::{
    Footer, Tracepoint, TracepointBody, TracepointHeader, TracepointName, TracepointType,
};
use crate::read::{Visit, VisitDetail};

use super::{ContentRange, LazyNode, LazyTraceReader, Scan, Scope, WalkDetail, WalkNode};
use crate::read::lookup::stream::{Stream, unexpected};

/// `walk_loop`'s `DETAIL`: one per [`WalkDetail`].
const HEADERS: u8 = 0;
const FULL: u8 = 1;
const CONTAINERS: u8 = 2;
const NAMES: u8 = 3;

/// What a walk reads and reports.
#[derive(Debug, Clone, Copy)]
pub(super) struct Plan {
    /// How much of each tracepoint to read.
    pub(super) detail: WalkDetail,
    /// Containers at this depth are reported with their children folded
    /// (one [`Walked::Folded`]) instead of entered.
    pub(super) max_depth: Option<usize>,
    /// Whether to count each container's direct children.
    pub(super) child_counts: bool,
}

impl Plan {
    /// What a [`Visit`] walk with `detail` reads: leaves skipped to their
    /// headers (a container walk) unless it asks for their bodies.
    fn visit(detail: VisitDetail, max_depth: Option<usize>) -> Self {
        Plan {
            detail: if detail.leaf_bodies {
                WalkDetail::Full
            } else {
                WalkDetail::Containers
            },
            max_depth,
            child_counts: detail.child_counts,
        }
    }

    /// Every node, at `detail`, no child counts.
    pub(super) fn all(detail: WalkDetail) -> Self {
        Plan {
            detail,
            max_depth: None,
            child_counts: false,
        }
    }
}

/// Where a walk runs: thread `slot`'s stream from `from` until `end` (or,
/// with `one`, until the subtree of the node at `from` is done); the nodes
/// at the level of `from` are at `depth`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Stretch {
    pub(super) slot: usize,
    pub(super) from: LogicalOffset,
    pub(super) end: LogicalOffset,
    pub(super) depth: usize,
    pub(super) one: bool,
}

/// What a walk does after a node its visitor saw (a visitor's `bool`:
/// go on, or stop).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// On in pre-order.
    Go,
    /// The walk ends.
    Stop,
    /// The rest of the container at this depth on the path to the node
    /// (the node itself, at its own depth) is left unread: the walk goes on
    /// after it. A depth outside the path is ignored.
    Leave(usize),
}

impl From<bool> for Flow {
    fn from(go: bool) -> Self {
        if go { Flow::Go } else { Flow::Stop }
    }
}

impl From<()> for Flow {
    fn from((): ()) -> Self {
        Flow::Go
    }
}

/// One step of [`LazyTraceReader::walk_range`].
pub(super) enum Walked<'w, 'a> {
    /// A node, and its direct child count when the plan asks for them.
    Node(&'w WalkNode<'a>, Option<usize>),
    /// `count` (> 0) children at `depth` not entered because of the depth
    /// limit.
    Folded { count: usize, depth: usize },
}

/// A container the walk is inside of.
struct Open {
    container: TracepointType,
    content: ContentRange,
    /// Its footer's length, when the walk already read the footer.
    footer_len: Option<u64>,
}

impl Scan<'_> {
    /// The content end of the container whose content starts at `start`,
    /// from the run of a scan of a copy, else from the table, trying
    /// the container after the last found first (a sequential walk meets
    /// them in that order).
    #[inline(always)]
    fn container_end(&mut self, start: LogicalOffset) -> Option<LogicalOffset> {
        if let Some(run) = &self.run {
            return run.end_of(start);
        }
        let next = self.hint.map_or(0, |hint| hint + 1);
        let (k, end) = if next < self.table.len() && self.table.start(self.cells, next) == start {
            (next, self.table.end(self.cells, next))
        } else if self.hint.is_some() {
            let k = self.table.find_start(self.cells, start, self.hint)?;
            (k, self.table.end(self.cells, k))
        } else {
            self.table.find_range(self.cells, start)?
        };
        self.hint = Some(k);
        Some(end)
    }
}

impl LazyTraceReader {
    /// The content range of the tracepoint with `header` whose content (if
    /// it is a container) starts at `start`, from the index, else from an
    /// earlier scan, else by scanning now; `None` for a leaf.
    #[inline(always)]
    pub(super) fn content_of(
        &self,
        scan: &mut Scan<'_>,
        start: LogicalOffset,
        header: &TracepointHeader,
    ) -> Result<Option<ContentRange>> {
        if !header.tracepoint_type.is_container() {
            return Ok(None);
        }
        let end = match scan.container_end(start) {
            Some(end) => end,
            None => self.resolve(scan.slot, start, header.tracepoint_type, header.event)?,
        };
        Ok(Some(ContentRange {
            start,
            end,
            finished: end < scan.stream.len(),
        }))
    }

    /// How many direct children the container with `content` has, by
    /// skipping them (their subtrees are jumped over); caches nothing.
    /// `container` is the container's entry in the container table when the
    /// walk found it there: its first child container is the next entry.
    fn count_children(
        &self,
        slot: usize,
        content: ContentRange,
        container: Option<usize>,
    ) -> Result<usize> {
        let mut count = 0;
        let scope = Scope {
            slot,
            start: content.start,
            end: content.end,
        };
        self.scan_children_after(scope, scope.start, container, |_, _| {
            count += 1;
            true
        })?;
        Ok(count)
    }

    /// Walks a [`Stretch`] of a thread's stream in pre-order, calling `f`
    /// for each step. Returns false when `f` stopped the walk.
    ///
    /// Generic over `f` so that each caller's loop is compiled with its
    /// visitor inlined: a header walk costs little more than skipping.
    #[inline]
    pub(super) fn walk_range<F, W>(&self, stretch: Stretch, plan: Plan, f: &mut F) -> Result<bool>
    where
        F: FnMut(Walked<'_, '_>) -> Result<W>,
        W: Into<Flow>,
    {
        match plan.detail {
            WalkDetail::Headers => self.walk_loop::<F, W, HEADERS>(stretch, plan, f),
            WalkDetail::Full => self.walk_loop::<F, W, FULL>(stretch, plan, f),
            WalkDetail::Containers => self.walk_loop::<F, W, CONTAINERS>(stretch, plan, f),
            WalkDetail::Names => self.walk_loop::<F, W, NAMES>(stretch, plan, f),
        }
    }

    /// [`walk_range`](Self::walk_range)'s loop, compiled once per
    /// [`WalkDetail`] (`DETAIL`), so that a header walk carries no decoded
    /// tracepoint.
    // Long: the walks' hot loop, kept whole so each visitor compiles to one
    // specialized loop.
    #[inline]
    fn walk_loop<F, W, const DETAIL: u8>(
        &self,
        stretch: Stretch,
        plan: Plan,
        f: &mut F,
    ) -> Result<bool>
    where
        F: FnMut(Walked<'_, '_>) -> Result<W>,
        W: Into<Flow>,
    {
        let Stretch {
            slot,
            from,
            end,
            depth,
            one,
        } = stretch;
        let mut scan = self.forward_scan(slot)?;
        scan.stream = scan.stream.released_at_end();
        let mut footers = self.stream(slot);
        let mut open: Vec<Open> = Vec::new();
        let mut at = from;
        let mut started = false;
        let mut spare_arguments = Vec::new();
        loop {
            while let Some(top) = open.last() {
                if at < top.content.end {
                    break;
                }
                at = if !top.content.finished {
                    top.content.end
                } else if let Some(len) = top.footer_len {
                    top.content.end + len
                } else {
                    top.content.end + scan.stream.footer_len(top.content.end, top.container)?
                };
                open.pop();
            }
            if at >= end {
                // A stretch ends between the nodes of its first level.
                if at > end || !open.is_empty() {
                    return Err(self.contradicted(
                        slot,
                        format!("a walk of offsets {from}..{end} ends inside a tracepoint at {at}"),
                    ));
                }
                return Ok(true);
            }
            if one && started && open.is_empty() {
                return Ok(true);
            }
            let node = self.node_at(slot, at);
            let level = depth + open.len();
            // Read the object at `at`: its header and length, and for a
            // full walk the tracepoint, then the footer of a container.
            let (bytes, physical) = scan.stream.bytes_at(at)?;
            // A container walk decodes where the type byte (after the
            // kind byte) says container, and skips the rest.
            let decode = DETAIL == FULL
                || (DETAIL == CONTAINERS
                    && bytes.first() == Some(&(ObjectKind::Tracepoint as u8))
                    && bytes
                        .get(1)
                        .and_then(|&b| TracepointType::from_byte(b))
                        .is_some_and(TracepointType::is_container));
            let name = if DETAIL == NAMES {
                TracepointName::peek(bytes)
            } else {
                None
            };
            // A decoded tracepoint stays where the decoder wrote it and is
            // lent from there: moving it costs more than reading it.
            // A full walk does not drop one that owns no memory (nearly
            // every one: scalars, strings borrowed from the data), as its
            // drop glue calls out to each value's (2% of a verbose print's
            // instructions); one that does is moved to `owned`, dropped
            // with the iteration, after a method call's argument vector is
            // taken back to decode the next call's arguments into (no
            // allocation per call). (A container walk, which decodes
            // containers only, keeps them in `owning` and drops them all:
            // deciding cost it more.)
            let decoded: ManuallyDrop<std::result::Result<Tracepoint<'_>, DecodeError>>;
            let owning: std::result::Result<Tracepoint<'_>, DecodeError>;
            let mut owned: Option<std::result::Result<Tracepoint<'_>, DecodeError>> = None;
            let (header, len, tracepoint) = if !decode {
                match try_skip(bytes, None) {
                    Some((
                        Skipped {
                            header: Some(header),
                            ..
                        },
                        len,
                    )) => (header, len as u64, None),
                    Some((skipped, len)) if skipped.kind.is_reference() && (started || !one) => {
                        at = at + len as u64;
                        continue;
                    }
                    _ => match checked_header(&mut scan.stream, at)? {
                        Some((header, len)) => (header, len, None),
                        None => {
                            reference(&mut scan.stream, at, one && !started)?;
                            at = at + object_len(&mut scan.stream, at)?;
                            continue;
                        }
                    },
                }
            } else {
                {
                    if bytes.first() != Some(&(ObjectKind::Tracepoint as u8)) {
                        reference(&mut scan.stream, at, one && !started)?;
                        at = at + object_len(&mut scan.stream, at)?;
                        continue;
                    }
                    let mut reader = ByteReader::new(&bytes[1..], physical + 1);
                    let tracepoint = if DETAIL == FULL {
                        decoded = ManuallyDrop::new(Tracepoint::decode_reusing(
                            &mut reader,
                            &mut spare_arguments,
                        ));
                        match &*decoded {
                            Ok(tracepoint) if !tracepoint.owns_memory() => tracepoint,
                            _ => lent(owned.insert(ManuallyDrop::into_inner(decoded)))?,
                        }
                    } else {
                        owning = Tracepoint::decode_inline(&mut reader);
                        lent(&owning)?
                    };
                    (
                        tracepoint.header,
                        reader.position() as u64 + 1,
                        Some(tracepoint),
                    )
                }
            };
            started = true;
            let content = self.content_of(&mut scan, at + len, &header)?;
            let footer = match content {
                Some(content) if DETAIL == FULL || DETAIL == CONTAINERS => {
                    self.footer_of(&mut footers, content, header.tracepoint_type)?
                }
                _ => None,
            };
            let children = if plan.child_counts {
                Some(match content {
                    Some(content) => self.count_children(slot, content, scan.hint)?,
                    None => 0,
                })
            } else {
                None
            };
            let walked = WalkNode {
                node,
                depth: level,
                header,
                tracepoint,
                footer: footer.as_ref().map(|(footer, _)| footer),
                name,
            };
            let flow = f(Walked::Node(&walked, children))?.into();
            if flow == Flow::Stop {
                return Ok(false);
            }
            // A call's arguments' memory serves the next call's.
            if DETAIL == FULL
                && let Some(Ok(Tracepoint {
                    body: TracepointBody::MethodCall { arguments, .. },
                    ..
                })) = &mut owned
            {
                spare_arguments = std::mem::take(arguments);
                spare_arguments.clear();
            }
            if let Flow::Leave(to) = flow
                && to >= depth
                && to < level
            {
                // An open container's rest: the pop above reads its footer.
                open.truncate(to - depth + 1);
                at = open.last().map_or(at + len, |top| top.content.end);
                continue;
            }
            let Some(content) = content else {
                at = at + len;
                continue;
            };
            if flow == Flow::Leave(level) {
                at = content.end;
            } else if plan.max_depth.is_some_and(|max| level >= max) {
                let count = self.count_children(slot, content, scan.hint)?;
                if count > 0
                    && f(Walked::Folded {
                        count,
                        depth: level + 1,
                    })?
                    .into()
                        == Flow::Stop
                {
                    return Ok(false);
                }
                at = content.end;
            } else {
                at = content.start;
            }
            open.push(Open {
                container: header.tracepoint_type,
                content,
                footer_len: footer.map(|(_, len)| len),
            });
        }
    }

    /// The footer of a container with `content`, and its length.
    pub(super) fn footer_of<'r>(
        &self,
        stream: &mut Stream<'r>,
        content: ContentRange,
        container: TracepointType,
    ) -> Result<Option<(Footer<'r>, u64)>> {
        if !content.finished {
            return Ok(None);
        }
        stream.footer(content.end, container).map(Some)
    }
}

/// The tracepoint a walk decoded, or its error.
#[inline(always)]
fn lent<'t, 'a>(
    decoded: &'t std::result::Result<Tracepoint<'a>, DecodeError>,
) -> Result<&'t Tracepoint<'a>> {
    decoded.as_ref().map_err(|error| error.clone().into())
}

/// The header and length of the tracepoint at `at`, when the fast skip
/// refused it (the decoder then names the error); `None` for another kind
/// of object.
#[cold]
#[inline(never)]
fn checked_header(
    stream: &mut Stream<'_>,
    at: LogicalOffset,
) -> Result<Option<(TracepointHeader, u64)>> {
    let (skipped, len) = stream.skip(at, None)?;
    Ok(skipped.header.map(|header| (header, len)))
}

/// Checks that the object at `at`, which is no tracepoint, is a reference
/// object (which may stand between tracepoints), where a walk may meet one
/// (`first` = the walk was asked to start there, where it may not).
#[cold]
#[inline(never)]
fn reference(stream: &mut Stream<'_>, at: LogicalOffset, first: bool) -> Result<()> {
    if first {
        return Err(not_a_node(stream, at));
    }
    let (object, _) = stream.object(at, None)?;
    if object.kind().is_reference() {
        return Ok(());
    }
    Err(unexpected(
        stream,
        at,
        object.kind(),
        "inside a thread's logical stream",
    ))
}

/// The error for a walk asked to start at a reference object.
#[cold]
fn not_a_node(stream: &mut Stream<'_>, at: LogicalOffset) -> crate::Error {
    let kind = stream
        .skip(at, None)
        .map_or(ObjectKind::Eof, |(skipped, _)| skipped.kind);
    unexpected(stream, at, kind, "expected a tracepoint at a node's offset")
}

/// The length of the (reference) object at `at`.
#[cold]
fn object_len(stream: &mut Stream<'_>, at: LogicalOffset) -> Result<u64> {
    Ok(stream.object(at, None)?.1)
}

impl LazyTraceReader {
    /// The [`TraceTree::walk_visit_children`](crate::tree::TraceTree::walk_visit_children)
    /// of the lazy reader: the stretch of `parent`'s content that holds
    /// children `from..from + count`, read in one pass as
    /// [`walk_visit_roots`](Self::walk_visit_roots) reads a root's subtree.
    pub(crate) fn walk_visit_children_of(
        &self,
        parent: LazyNode,
        from: usize,
        count: usize,
        max_depth: Option<usize>,
        detail: VisitDetail,
        f: &mut dyn FnMut(Visit<'_, LazyNode>) -> Result<()>,
    ) -> Result<()> {
        let Some(scope) = self.scope(parent)? else {
            return Ok(());
        };
        // Where the children begin, and where the one after them does
        // (`None` past the last).
        let Some(&first) = self.scope_children(scope, from, 1)?.first() else {
            return Ok(());
        };
        let next = self.scope_children(scope, from.saturating_add(count), 1)?;
        let next = next.first().copied();
        self.walk_visit_siblings(parent, Some(first), next, max_depth, detail, f)
    }

    /// Walks the trees of `parent`'s children from `first` (its first
    /// child when `None`) up to, not including, `next` (to its last child
    /// when `None`), in one pass, as [`TraceTree::walk_visit`
    /// ](crate::tree::TraceTree::walk_visit) walks a root's tree: `first` and
    /// `next` are children, or cuts [`sibling_cuts`](Self::sibling_cuts)
    /// gave for `parent`.
    pub fn walk_visit_siblings(
        &self,
        parent: LazyNode,
        first: Option<LazyNode>,
        next: Option<LazyNode>,
        max_depth: Option<usize>,
        detail: VisitDetail,
        f: &mut dyn FnMut(Visit<'_, LazyNode>) -> Result<()>,
    ) -> Result<()> {
        let Some(scope) = self.scope(parent)? else {
            return Ok(());
        };
        let within = |node: Option<LazyNode>, or: LogicalOffset| match node {
            Some(node)
                if node.slot != parent.slot || node.at < scope.start || node.at > scope.end =>
            {
                Err(Error::NoSuchNode(NodeProblem::NotAChild(node.at)))
            }
            Some(node) => Ok(node.at),
            None => Ok(or),
        };
        let stretch = Stretch {
            slot: scope.slot,
            from: within(first, scope.start)?,
            end: within(next, scope.end)?,
            depth: 0,
            one: false,
        };
        let plan = Plan::visit(detail, max_depth);
        self.walk_range(stretch, plan, &mut |step| visit_walked(step, f))?;
        Ok(())
    }

    /// The [`TraceTree::walk_visit`](crate::tree::TraceTree::walk_visit)
    /// (and, with `f` saying after each node whether to leave the rest of a
    /// container unread, `walk_visit_pruned`) of the lazy reader: each
    /// root's subtree read once through its thread's stream, decoded in
    /// place.
    pub(crate) fn walk_visit_roots<R: Into<Flow>>(
        &self,
        roots: &[LazyNode],
        max_depth: Option<usize>,
        detail: VisitDetail,
        f: &mut dyn FnMut(Visit<'_, LazyNode>) -> Result<R>,
    ) -> Result<()> {
        let plan = Plan::visit(detail, max_depth);
        for &root in roots {
            let stretch = self.root_stretch(root);
            if !self.walk_range(stretch, plan, &mut |step| visit_walked(step, f))? {
                break;
            }
        }
        Ok(())
    }

    /// The stretch of `root`'s subtree alone.
    fn root_stretch(&self, root: LazyNode) -> Stretch {
        let slot = root.slot as usize;
        Stretch {
            slot,
            from: root.at,
            end: self.stream(slot).len(),
            depth: 0,
            one: true,
        }
    }
}

/// The public walks.
impl LazyTraceReader {
    /// Walks a thread's trees depth-first in pre-order by reading its
    /// stream once from start to end, each tracepoint in place, caching
    /// nothing (memory stays O(depth)). `detail` says whether to decode
    /// tracepoints and footers or only read headers. `f` returns whether to
    /// go on.
    pub fn walk_thread(
        &self,
        thread: ThreadId,
        detail: WalkDetail,
        f: impl FnMut(&WalkNode<'_>) -> Result<bool>,
    ) -> Result<()> {
        match self.lookup.blocks.slot(thread) {
            Some(slot) => self.walk_nodes(self.thread_stretch(slot), detail, f),
            None => Ok(()),
        }
    }

    /// Walks a node and its descendants as [`walk_thread`](Self::walk_thread)
    /// does; the node itself is at depth 0.
    pub fn walk_subtree(
        &self,
        node: LazyNode,
        detail: WalkDetail,
        f: impl FnMut(&WalkNode<'_>) -> Result<bool>,
    ) -> Result<()> {
        let slot = self.own(node)?;
        let end = self.top_scope(slot).end;
        if node.at >= end {
            return Err(Error::NoSuchNode(NodeProblem::PastStreamEnd {
                thread: self.lookup.blocks.thread(slot).thread,
                at: node.at,
                end,
            }));
        }
        self.walk_nodes(self.root_stretch(node), detail, f)
    }

    /// Walks every thread as [`walk_thread`](Self::walk_thread) does, the
    /// threads in parallel (rayon's pool: as many at once as it has
    /// workers). `init` makes a state for each thread, `f` sees that
    /// thread's nodes in pre-order with its state and returns whether to go
    /// on (false ends that thread's walk only); the states come back in
    /// thread order (ascending id). Each walker releases what it leaves
    /// behind ([`LazyOptions::resident_window`](super::LazyOptions::resident_window)), so resident memory is about
    /// one window per walker.
    pub fn walk_threads<S: Send>(
        &self,
        detail: WalkDetail,
        init: impl Fn(ThreadId) -> S + Sync,
        f: impl Fn(&mut S, &WalkNode<'_>) -> Result<bool> + Sync,
    ) -> Result<Vec<S>> {
        (0..self.lookup.blocks.thread_count())
            .into_par_iter()
            .map(|slot| {
                let mut state = init(self.lookup.blocks.thread(slot).thread);
                self.walk_nodes(self.thread_stretch(slot), detail, |walked| {
                    f(&mut state, walked)
                })?;
                Ok(state)
            })
            .collect()
    }

    /// Counts the tracepoints of every thread by type, reading the threads'
    /// streams in parallel (headers only).
    pub fn count_tracepoints(&self) -> Result<BTreeMap<TracepointType, u64>> {
        let per_thread = self.walk_threads(
            WalkDetail::Headers,
            |_| [0u64; 12],
            |counts, walked| {
                counts[walked.header.tracepoint_type as usize] += 1;
                Ok(true)
            },
        )?;
        let mut counts = BTreeMap::new();
        for (index, kind) in TracepointType::ALL.into_iter().enumerate() {
            let total: u64 = per_thread.iter().map(|c| c[index]).sum();
            if total > 0 {
                counts.insert(kind, total);
            }
        }
        Ok(counts)
    }
}

impl LazyTraceReader {
    /// A walk of `stretch` at `detail` with no depth limit, each node
    /// handed to `f`, which returns whether to go on.
    fn walk_nodes(
        &self,
        stretch: Stretch,
        detail: WalkDetail,
        mut f: impl FnMut(&WalkNode<'_>) -> Result<bool>,
    ) -> Result<()> {
        self.walk_range(stretch, Plan::all(detail), &mut |step| match step {
            Walked::Node(walked, _) => f(walked),
            Walked::Folded { .. } => Ok(true),
        })?;
        Ok(())
    }

    /// A whole thread's stream.
    fn thread_stretch(&self, slot: usize) -> Stretch {
        Stretch {
            slot,
            from: LogicalOffset(0),
            end: self.top_scope(slot).end,
            depth: 0,
            one: false,
        }
    }
}

/// Hands one step of a full walk to a [`Visit`] visitor.
fn visit_walked<R>(
    step: Walked<'_, '_>,
    f: &mut dyn FnMut(Visit<'_, LazyNode>) -> Result<R>,
) -> Result<R> {
    match step {
        // A full walk decodes every tracepoint, a container walk every
        // container: what it did not decode is a leaf.
        Walked::Node(walked, children) => match walked.tracepoint {
            Some(tracepoint) => f(Visit::Node {
                node: walked.node,
                depth: walked.depth,
                tracepoint,
                footer: walked.footer,
                children,
            }),
            None => f(Visit::Leaf {
                node: walked.node,
                depth: walked.depth,
                header: walked.header,
            }),
        },
        Walked::Folded { count, depth } => f(Visit::Folded { count, depth }),
    }
}
