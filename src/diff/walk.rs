//! The diff of one pair of threads: the reference's recursive walk, run on
//! an explicit stack (a frame per open output container).
//!
//! Both threads are read as pre-order streams, each walked by the reader
//! on a thread of its own (keys computed there), and consumed in lockstep
//! while their lists pair up: a frame's next child is the next streamed
//! tracepoint at its depth. Where two lists stop pairing, the rest of both
//! (the middle) is read ahead in the streams and held, subtrees and all,
//! while the children's keys are aligned by Myers' diff; the script is then
//! carried out on the streams, which hold the children in its order. A
//! middle larger than the bound on held tracepoints is read past instead,
//! keeping each child's key, and after its alignment walked again
//! by two streams of its own (the same children, from the readers). One of
//! more children than the bound on keys is aligned window by window as
//! its keys are read on, while those streams carry each window out: the
//! memory is O(depth + the bounds), whatever a list's length. Every
//! tracepoint is thus read in a walk, never by node. A pair found the same
//! by its bytes is copied by a walk of its own, and both streams leave it:
//! their producers skip the rest of it (readers that can jump over it do),
//! and what they had sent of it is dropped.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::Scope;

use crate::common::{EventId, ObjectKind};
use crate::diff::bulk::{ByBytes, Same};
use crate::diff::compare::{Keys, PointKey};
use crate::diff::myers::{DiffLine, WINDOW, align_by_windows, myers, window};
use crate::diff::output::{Reinterner, ThreadOut};
use crate::diff::{Divergence, ThreadSummary};
use crate::error::{Error, Result};
use crate::model::{DiffStatus, Footer, JavaStr, Tracepoint, TracepointBody, Value};
use crate::print::adorn;
use crate::tree::{Prune, TraceTree, Visit, VisitDetail};

/// Streamed tracepoints handed over at a time.
const BATCH: usize = 1024;
/// Batches a stream holds ahead of the diff.
const AHEAD: usize = 4;

/// One input: its reader and its ids translated into the output's.
pub(crate) struct Side<'t, T: TraceTree> {
    pub(crate) tree: &'t T,
    pub(crate) ids: Reinterner<'t>,
}

/// A streamed tracepoint: its node, comparison keys, depth and decoded self
/// (`None` where the diff reads past it: see [`Skim`]).
struct Point<N> {
    node: N,
    key: PointKey,
    event: EventId,
    depth: usize,
    tracepoint: Option<Tracepoint<'static>>,
    /// Boxed: only containers have one.
    footer: Option<Box<Footer<'static>>>,
}

/// A list read past: the keys of its children read and not yet aligned,
/// whether its end was reached, what walks them again (their first node,
/// or all of them for a thread's roots) and their first event.
struct ReadPast<N> {
    keys: VecDeque<PointKey>,
    ended: bool,
    first: Option<(N, EventId)>,
    roots: Vec<N>,
}

/// What a stream walks.
enum Walked<N> {
    /// A subtree.
    Tree(N),
    /// A parent's children from `first` to its last.
    Siblings { parent: N, first: N },
    /// These subtrees, in order.
    Trees(Vec<N>),
}

/// What a stream's producer may leave out: the diff reads a list past
/// (keeping its children's keys) from the stream's point number `from`,
/// a child at depth `depth`, to the list's end, the first point shallower.
/// Its producer then sends those children without their tracepoints, and
/// nothing of their subtrees (a walk that can leave a container does not
/// read them), until it reaches that end; a request for a list that it has
/// already walked past is dropped.
/// It also leaves subtrees the diff copied by their bytes: from the point
/// numbered `from`, at depth `depth`, the producer sends nothing deeper
/// (and its reader skips what it can), unless it is already past it.
#[derive(Default)]
struct Skim {
    asked: AtomicBool,
    request: Mutex<Option<(usize, u64)>>,
    leave_asked: AtomicBool,
    leave: Mutex<Option<(usize, u64)>>,
}

/// Whether a producer that sent `last_at[d]` last at each depth `d` is
/// past the subtree of the point numbered `from` at depth `depth` (or the
/// list it ends, for a skim).
fn past(last_at: &[u64], depth: usize, from: u64) -> bool {
    last_at
        .iter()
        .take(depth)
        .any(|&at| at != u64::MAX && at > from)
}

impl Skim {
    fn ask(&self, depth: usize, from: u64) {
        *self.request.lock().unwrap_or_else(|e| e.into_inner()) = Some((depth, from));
        self.asked.store(true, Ordering::Release);
    }

    /// A new request, if any: the depth from which points are skimmed,
    /// when the producer (having sent `last_at[d]` last at each depth `d`)
    /// has not yet passed the list's end.
    fn take(&self, last_at: &[u64]) -> Option<usize> {
        if !self.asked.load(Ordering::Relaxed) || !self.asked.swap(false, Ordering::Acquire) {
            return None;
        }
        let (depth, from) = self
            .request
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()?;
        (!past(last_at, depth, from)).then_some(depth)
    }

    fn ask_leave(&self, depth: usize, from: u64) {
        *self.leave.lock().unwrap_or_else(|e| e.into_inner()) = Some((depth, from));
        self.leave_asked.store(true, Ordering::Release);
    }

    /// A new request to leave a subtree, if any: its depth, when the
    /// producer is still inside it.
    fn take_leave(&self, last_at: &[u64]) -> Option<usize> {
        if !self.leave_asked.load(Ordering::Relaxed)
            || !self.leave_asked.swap(false, Ordering::Acquire)
        {
            return None;
        }
        let (depth, from) = self
            .leave
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()?;
        (!past(last_at, depth + 1, from)).then_some(depth)
    }
}

/// Walks `from` in pre-order (depths counted from `depth`), sending its
/// tracepoints in batches, until the diff stops reading.
fn produce<T: TraceTree>(
    tree: &T,
    from: Walked<T::Node>,
    base: usize,
    skim: &Skim,
    tx: SyncSender<Result<Vec<Point<T::Node>>>>,
) {
    let mut batch = Vec::with_capacity(BATCH);
    let mut gone = false;
    let mut keys = Keys::new(tree.context());
    // The number of the next point, the last sent at each depth, the
    // depth from which points are skimmed, and the depth of a subtree left.
    let (mut sent, mut last_at, mut skimmed) = (0u64, Vec::<u64>::new(), None);
    let mut leaving: Option<usize> = None;
    // A stream of one tree ends where its root is left.
    let one_tree = matches!(from, Walked::Tree(_));
    let mut visit = |visit: Visit<'_, T::Node>| {
        let Visit::Node {
            node,
            depth,
            tracepoint,
            footer,
            ..
        } = visit
        else {
            return Ok(Prune::Go);
        };
        let depth = base + depth;
        if let Some(left) = skim.take_leave(&last_at) {
            leaving = Some(left);
        }
        match leaving {
            Some(left) if depth > left => {
                if one_tree && left == base {
                    gone = true;
                    return Err(Error::internal("the diff left this stream's tree"));
                }
                return Ok(Prune::Leave(left.saturating_sub(base)));
            }
            _ => leaving = None,
        }
        if let Some(from) = skim.take(&last_at) {
            skimmed = Some(from);
        }
        // Below a child read past nothing is sent, nor read where the
        // walk can leave it.
        if let Some(from) = skimmed
            && depth > from
        {
            return Ok(Prune::Leave(from.saturating_sub(base)));
        }
        if last_at.len() <= depth {
            last_at.resize(depth + 1, u64::MAX);
        }
        last_at[depth] = sent;
        sent += 1;
        let mut prune = Prune::Go;
        let point = match skimmed {
            Some(from) if depth == from => {
                if tracepoint.is_container() {
                    prune = Prune::Leave(depth - base);
                }
                Point {
                    node,
                    key: keys.key(tracepoint, footer)?,
                    event: tracepoint.event(),
                    depth,
                    tracepoint: None,
                    footer: None,
                }
            }
            _ => {
                skimmed = None;
                Point {
                    node,
                    key: keys.key(tracepoint, footer)?,
                    event: tracepoint.event(),
                    depth,
                    tracepoint: Some(tracepoint.clone().into_owned()),
                    footer: footer.map(|footer| Box::new(footer.clone().into_owned())),
                }
            }
        };
        batch.push(point);
        if batch.len() == BATCH {
            let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
            if tx.send(Ok(full)).is_err() {
                gone = true;
                return Err(Error::internal("the diff stopped reading this stream"));
            }
        }
        Ok(prune)
    };
    let detail = VisitDetail::default();
    let walked = match from {
        Walked::Tree(root) => tree.walk_visit_pruned(&[root], detail, &mut visit),
        Walked::Siblings { parent, first } => {
            tree.walk_visit_siblings(parent, Some(first), None, None, detail, |step| {
                visit(step).map(|_| ())
            })
        }
        Walked::Trees(roots) => tree.walk_visit_pruned(&roots, detail, &mut visit),
    };
    // A failed send means the diff is done with the stream: nothing to say.
    let _ = match walked {
        Ok(()) if batch.is_empty() => Ok(()),
        Ok(()) => tx.send(Ok(batch)),
        Err(_) if gone => Ok(()),
        Err(error) => tx.send(Err(error)),
    };
}

/// A subtree's pre-order stream, as the diff reads it.
struct Stream<N> {
    rx: Receiver<Result<Vec<Point<N>>>>,
    batch: VecDeque<Point<N>>,
    /// Points taken from the stream so far.
    taken: u64,
    skim: Arc<Skim>,
    /// The depth of a subtree copied by its bytes: deeper points that
    /// still come are dropped.
    left: Option<usize>,
}

/// A stream of `from`, walked by `tree` on a thread of `scope`.
fn open_stream<'s, 'e, T: TraceTree>(
    scope: &'s Scope<'s, 'e>,
    tree: &'e T,
    from: Walked<T::Node>,
    depth: usize,
) -> Result<Stream<T::Node>> {
    let (tx, rx) = sync_channel(AHEAD);
    let skim = Arc::new(Skim::default());
    let shared = Arc::clone(&skim);
    // Deep enough for the decoder's bounded nesting in any build.
    std::thread::Builder::new()
        .stack_size(16 << 20)
        .spawn_scoped(scope, move || produce(tree, from, depth, &shared, tx))
        .map_err(Error::from)?;
    Ok(Stream {
        rx,
        batch: VecDeque::new(),
        taken: 0,
        skim,
        left: None,
    })
}

impl<N> Stream<N> {
    fn peek(&mut self) -> Result<Option<&Point<N>>> {
        loop {
            while self.batch.is_empty() {
                match self.rx.recv() {
                    // The batch's own buffer, not a copy (the deque is empty).
                    Ok(batch) => self.batch = batch?.into(),
                    Err(_) => return Ok(None),
                }
            }
            match (self.left, self.batch.front()) {
                (Some(left), Some(point)) if point.depth > left => {
                    self.batch.pop_front();
                    self.taken += 1;
                }
                _ => break,
            }
        }
        self.left = None;
        Ok(self.batch.front())
    }

    /// Whether the next `count` points held (as many as are held, when
    /// fewer) are all deeper than `depth`: after a container taken at
    /// `depth`, whether its subtree holds at least that many tracepoints
    /// (or may: the rest is not read yet).
    fn deeper_ahead(&self, depth: usize, count: usize) -> bool {
        self.batch
            .iter()
            .take(count)
            .all(|point| point.depth > depth)
    }

    /// Leaves the subtree of the point just taken, at `depth`: its
    /// producer skips the rest, what it sent of it is dropped.
    fn leave(&mut self, depth: usize) {
        self.skim.ask_leave(depth, self.taken.saturating_sub(1));
        self.left = Some(depth);
    }

    /// The next tracepoint at `depth`, `None` where that list ends.
    fn next_at(&mut self, depth: usize) -> Result<Option<Point<N>>> {
        match self.peek()? {
            Some(point) if point.depth == depth => {
                self.taken += 1;
                Ok(self.batch.pop_front())
            }
            Some(point) if point.depth > depth => {
                Err(Error::internal("a streamed subtree was left unread"))
            }
            _ => Ok(None),
        }
    }

    /// The keys of the rest of the list at `depth`, read ahead without
    /// consuming it (the tracepoints stay held, subtrees and all, for the
    /// diff to consume in order); `None` when that would hold more than
    /// `max_held` tracepoints.
    fn keys_ahead(&mut self, depth: usize, max_held: usize) -> Result<Option<Vec<PointKey>>> {
        self.peek()?;
        let mut keys = Vec::new();
        let mut at = 0;
        loop {
            while at == self.batch.len() {
                if self.batch.len() >= max_held {
                    return Ok(None);
                }
                match self.rx.recv() {
                    Ok(batch) => self.batch.extend(batch?),
                    Err(_) => return Ok(Some(keys)),
                }
            }
            let point = &self.batch[at];
            if point.depth < depth {
                return Ok(Some(keys));
            }
            if point.depth == depth {
                keys.push(point.key);
            }
            at += 1;
        }
    }

    /// Starts reading the rest of the list at `depth` past: its producer
    /// sends its children bare from here (see [`Skim`]).
    fn start_past(&mut self, depth: usize) -> ReadPast<N> {
        self.skim.ask(depth, self.taken);
        ReadPast {
            keys: VecDeque::new(),
            ended: false,
            first: None,
            roots: Vec::new(),
        }
    }

    /// Reads up to `count` more children of the list at `depth` past,
    /// subtrees and all, keeping their keys in `past` (and every child's
    /// node for a thread's roots, `roots`); notes there when the list ends.
    fn read_past(
        &mut self,
        depth: usize,
        count: usize,
        roots: bool,
        past: &mut ReadPast<N>,
    ) -> Result<()>
    where
        N: Copy,
    {
        let mut read = 0;
        while !past.ended {
            match self.peek()? {
                Some(point) if point.depth < depth => past.ended = true,
                None => past.ended = true,
                Some(point) if point.depth == depth && read == count => break,
                Some(_) => {
                    let point = self.batch.pop_front().expect("peeked");
                    self.taken += 1;
                    if point.depth == depth {
                        read += 1;
                        past.keys.push_back(point.key);
                        past.first.get_or_insert((point.node, point.event));
                        if roots {
                            past.roots.push(point.node);
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// A list of children in the streams: their depth, and their parent
/// (`None`: a thread's root).
#[derive(Clone, Copy)]
struct List<N> {
    depth: usize,
    parent: Option<N>,
}

/// The part of two children lists after their common prefix, aligned: the
/// streams hold its children in order, the script says what each is.
struct Middle<L, R> {
    /// The streams the lists came from, when the middle was read past and
    /// is read again by streams of its own: restored when it ends.
    outer: Option<(Stream<L>, Stream<R>)>,
    lines: std::vec::IntoIter<DiffLine>,
    /// A middle longer than [`Walk::max_keys`] children: its keys, read
    /// from the outer streams as it is aligned window by window.
    windows: Option<(ReadPast<L>, ReadPast<R>)>,
}

enum Work<L, R> {
    /// Two lists being aligned: their common prefix pair by pair, then the
    /// rest by Myers' diff.
    Align {
        left: List<L>,
        right: List<R>,
        /// Boxed: most lists have none.
        middle: Option<Box<Middle<L, R>>>,
    },
    /// A streamed left list copied as removed.
    Removed(usize),
    /// A streamed right list copied as added.
    Added(usize),
}

/// How an open output container is closed.
enum Close {
    Footer(Footer<'static>),
    /// A loop: its footer counts the children written into it.
    Loop,
}

/// Where an open output container came from, for the paths of calls.
#[derive(Clone, Copy)]
enum Origin<L, R> {
    Virtual,
    Left(L),
    Right(R),
}

struct Frame<L, R> {
    close: Option<Close>,
    children: i32,
    origin: Option<Origin<L, R>>,
    work: Work<L, R>,
}

impl<L, R> Frame<L, R> {
    fn new(close: Option<Close>, origin: Option<Origin<L, R>>, work: Work<L, R>) -> Self {
        Frame {
            close,
            children: 0,
            origin,
            work,
        }
    }
}

enum Step<L, R> {
    Pair(Point<L>, Point<R>),
    Removed(Point<L>),
    Added(Point<R>),
}

/// What one thread's walk needs besides the two sides.
pub(crate) struct Walk<'o, 'w, W: Write> {
    pub(crate) out: ThreadOut<'w, W>,
    pub(crate) summary: &'o mut ThreadSummary,
    pub(crate) max_edits: usize,
    pub(crate) max_held: usize,
    pub(crate) max_keys: usize,
    pub(crate) warnings: &'o mut Vec<String>,
    /// Which aligned pairs are copied by their bytes.
    pub(crate) by_bytes: ByBytes,
}

/// What a thread's diff starts from.
pub(crate) enum Start<L, R> {
    /// Two matched roots.
    Pair(L, R),
    /// A left root without a partner: all removed.
    Removed(L),
    /// A right root without a partner: all added.
    Added(R),
}

/// How a container copied into the output is closed.
fn close_of(tracepoint: &Tracepoint<'_>, footer: Result<Footer<'static>>) -> Result<Close> {
    Ok(match tracepoint.body {
        TracepointBody::Loop { .. } => Close::Loop,
        _ => Close::Footer(footer?),
    })
}

/// The streams of the two sides, and where more are opened.
struct Streams<'s, 'e, LT: TraceTree, RT: TraceTree> {
    left: Stream<LT::Node>,
    right: Stream<RT::Node>,
    scope: &'s Scope<'s, 'e>,
    trees: (&'e LT, &'e RT),
}

type Frames<L, R> = Vec<Frame<L, R>>;

impl<W: Write> Walk<'_, '_, W> {
    /// Diffs one thread, writing it whole.
    pub(crate) fn run<LT: TraceTree, RT: TraceTree>(
        mut self,
        left: &mut Side<'_, LT>,
        right: &mut Side<'_, RT>,
        start: Start<LT::Node, RT::Node>,
    ) -> Result<()> {
        let (l, r) = match start {
            Start::Pair(l, r) => (l, r),
            Start::Removed(l) => {
                return self.copy_tree(&mut Vec::new(), left, right, Origin::Left(l));
            }
            Start::Added(r) => {
                return self.copy_tree(&mut Vec::new(), left, right, Origin::Right(r));
            }
        };
        let (left_tree, right_tree) = (left.tree, right.tree);
        self.by_bytes.start(left_tree, l, right_tree, r);
        std::thread::scope(|scope| {
            let mut streams = Streams {
                left: open_stream(scope, left_tree, Walked::Tree(l), 0)?,
                right: open_stream(scope, right_tree, Walked::Tree(r), 0)?,
                scope,
                trees: (left_tree, right_tree),
            };
            // The streams end when this returns, stopping their producers.
            self.run_streams(left, right, &mut streams)
        })
    }

    fn run_streams<LT: TraceTree, RT: TraceTree>(
        &mut self,
        left: &mut Side<'_, LT>,
        right: &mut Side<'_, RT>,
        streams: &mut Streams<'_, '_, LT, RT>,
    ) -> Result<()> {
        let strict = match (streams.left.peek()?, streams.right.peek()?) {
            (Some(l), Some(r)) => l.key.strict_equal(&r.key),
            _ => return Err(Error::internal("a thread's root was not streamed")),
        };
        let mut stack: Frames<LT::Node, RT::Node> = Vec::new();
        let (close, origin) = if strict {
            (None, None)
        } else {
            self.out.virtual_root()?;
            let footer = Footer::MethodCall {
                result: Value::Null,
                exception: JavaStr::new(""),
            };
            (Some(Close::Footer(footer)), Some(Origin::Virtual))
        };
        let work = Work::Align {
            left: List {
                depth: 0,
                parent: None,
            },
            right: List {
                depth: 0,
                parent: None,
            },
            middle: None,
        };
        stack.push(Frame::new(close, origin, work));
        while let Some(top) = stack.last_mut() {
            let Some(step) = self.next_step(top, streams)? else {
                let done = stack.pop().expect("the loop saw a frame");
                match done.close {
                    Some(Close::Footer(footer)) => self.out.close(&footer)?,
                    Some(Close::Loop) => self.out.close(&Footer::Loop {
                        iterations: done.children,
                    })?,
                    None => {}
                }
                continue;
            };
            match step {
                Step::Pair(l, r) => {
                    let same = if l.key.strict_equal(&r.key)
                        && l.tracepoint.as_ref().is_some_and(Tracepoint::is_container)
                        && streams.left.deeper_ahead(l.depth, self.by_bytes.probe())
                    {
                        self.by_bytes.same(left.tree, l.node, right.tree, r.node)
                    } else {
                        Same::No
                    };
                    if same == Same::No {
                        self.pair(&mut stack, left, right, l, r)?;
                    } else {
                        // Its rest is left in both streams; it is walked once.
                        streams.left.leave(l.depth);
                        streams.right.leave(r.depth);
                        self.summary.copied +=
                            self.copy_equal(&mut stack, left, right, (l.node, r.node), same)?;
                    }
                }
                Step::Removed(point) => {
                    let depth = point.depth + 1;
                    let close = self.copy_one(&mut stack, left, right, Step::Removed(point))?;
                    if let Some((close, origin)) = close {
                        stack.push(Frame::new(Some(close), Some(origin), Work::Removed(depth)));
                    }
                }
                Step::Added(point) => {
                    let depth = point.depth + 1;
                    let close = self.copy_one(&mut stack, left, right, Step::Added(point))?;
                    if let Some((close, origin)) = close {
                        stack.push(Frame::new(Some(close), Some(origin), Work::Added(depth)));
                    }
                }
            }
        }
        Ok(())
    }

    /// The next thing the innermost frame writes, `None` when it is done.
    fn next_step<LT: TraceTree, RT: TraceTree>(
        &mut self,
        frame: &mut Frame<LT::Node, RT::Node>,
        streams: &mut Streams<'_, '_, LT, RT>,
    ) -> Result<Option<Step<LT::Node, RT::Node>>> {
        let (lp, rp, middle) = match &mut frame.work {
            Work::Removed(depth) => return Ok(streams.left.next_at(*depth)?.map(Step::Removed)),
            Work::Added(depth) => return Ok(streams.right.next_at(*depth)?.map(Step::Added)),
            Work::Align {
                left,
                right,
                middle,
            } => (*left, *right, middle),
        };
        let (ld, rd) = (lp.depth, rp.depth);
        loop {
            if let Some(middle) = middle {
                let Some(line) = middle.lines.next() else {
                    if self.next_window(middle, ld, rd)? {
                        continue;
                    }
                    if let Some((left, right)) = middle.outer.take() {
                        streams.left = left;
                        streams.right = right;
                    }
                    return Ok(None);
                };
                let held = || Error::internal("a child of a middle was not streamed");
                let (left, right) = (&mut streams.left, &mut streams.right);
                return Ok(Some(match line {
                    DiffLine::Unchanged(..) => Step::Pair(
                        left.next_at(ld)?.ok_or_else(held)?,
                        right.next_at(rd)?.ok_or_else(held)?,
                    ),
                    DiffLine::Removed(_) => Step::Removed(left.next_at(ld)?.ok_or_else(held)?),
                    DiffLine::Added(_) => Step::Added(right.next_at(rd)?.ok_or_else(held)?),
                }));
            }
            // The common prefix, pair by pair: Myers' first snake.
            let l = match streams.left.peek()? {
                Some(l) if l.depth == ld => Some(l.key),
                _ => None,
            };
            let r = match streams.right.peek()? {
                Some(r) if r.depth == rd => Some(r.key),
                _ => None,
            };
            if let (Some(l), Some(r)) = (l, r)
                && l.edit_equal(&r)
            {
                let l = streams.left.next_at(ld)?.expect("peeked");
                let r = streams.right.next_at(rd)?.expect("peeked");
                return Ok(Some(Step::Pair(l, r)));
            }
            *middle = Some(Box::new(self.middle(lp, rp, streams)?));
        }
    }

    /// The rest of two lists, aligned: held ahead in the streams when that
    /// holds at most `max_held` tracepoints a side; else read past (a key
    /// per child, at most `max_keys` a side) and, once aligned, walked again
    /// by streams of their own, which take the place of the lists' streams
    /// until the middle ends. A longer one is aligned window by window as
    /// its keys are read on ([`Self::next_window`]).
    fn middle<LT: TraceTree, RT: TraceTree>(
        &mut self,
        lp: List<LT::Node>,
        rp: List<RT::Node>,
        streams: &mut Streams<'_, '_, LT, RT>,
    ) -> Result<Middle<LT::Node, RT::Node>> {
        let (ld, rd) = (lp.depth, rp.depth);
        if let Some(left_keys) = streams.left.keys_ahead(ld, self.max_held)?
            && let Some(right_keys) = streams.right.keys_ahead(rd, self.max_held)?
        {
            self.note_keys(left_keys.len(), right_keys.len());
            let lines = self.align(&left_keys, &right_keys, || {
                let left = streams.left.batch.front();
                let right = streams.right.batch.front();
                (
                    left.filter(|p| p.depth == ld).map(|p| p.event),
                    right.filter(|p| p.depth == rd).map(|p| p.event),
                )
            });
            return Ok(Middle {
                outer: None,
                lines: lines.into_iter(),
                windows: None,
            });
        }
        // A thread's roots (one a side) are read whole, whatever the bound;
        // of a parent's children, the first tells where the streams that
        // walk them again start: opened at once (holding a few batches
        // ahead), whether the rest is held or aligned as it is read.
        let (left_roots, right_roots) = (lp.parent.is_none(), rp.parent.is_none());
        let first = |roots: bool| if roots { usize::MAX } else { 1 };
        let mut left_past = streams.left.start_past(ld);
        let mut right_past = streams.right.start_past(rd);
        streams
            .left
            .read_past(ld, first(left_roots), left_roots, &mut left_past)?;
        streams
            .right
            .read_past(rd, first(right_roots), right_roots, &mut right_past)?;
        let left_stream = open_stream(
            streams.scope,
            streams.trees.0,
            walked_again(lp.parent, &left_past),
            ld,
        )?;
        let right_stream = open_stream(
            streams.scope,
            streams.trees.1,
            walked_again(rp.parent, &right_past),
            rd,
        )?;
        let count = self.max_keys.saturating_sub(left_past.keys.len());
        streams.left.read_past(ld, count, false, &mut left_past)?;
        let count = self.max_keys.saturating_sub(right_past.keys.len());
        streams.right.read_past(rd, count, false, &mut right_past)?;
        self.note_keys(left_past.keys.len(), right_past.keys.len());
        let firsts = (
            left_past.first.map(|(_, event)| event),
            right_past.first.map(|(_, event)| event),
        );
        let (lines, windows) = if left_past.ended && right_past.ended {
            let lines = self.align(
                left_past.keys.make_contiguous(),
                right_past.keys.make_contiguous(),
                || firsts,
            );
            (left_past.keys, right_past.keys) = (VecDeque::new(), VecDeque::new());
            (lines, None)
        } else {
            // Too long to hold: aligned window by window as it is read on.
            let first = |event: Option<EventId>| event.map_or(-1, EventId::get);
            self.warnings.push(format!(
                "thread {}: more than {} children a side (from events {} and {}) to align; \
                 aligned window by window ({WINDOW} children a side) as they are read, \
                 instead of by Myers' diff of the whole lists",
                self.summary.name,
                self.max_keys,
                first(firsts.0),
                first(firsts.1),
            ));
            (Vec::new(), Some(()))
        };
        let outer = (
            std::mem::replace(&mut streams.left, left_stream),
            std::mem::replace(&mut streams.right, right_stream),
        );
        Ok(Middle {
            outer: Some(outer),
            lines: lines.into_iter(),
            windows: windows.map(|()| (left_past, right_past)),
        })
    }

    /// Aligns the next window of a middle aligned as it is read: reads
    /// its keys on from the outer streams, up to a window and one more a
    /// side (to know whether the windows reach the lists' ends). Whether
    /// it gave lines; `false` once both lists are aligned to their ends.
    fn next_window<L: Copy, R: Copy>(
        &mut self,
        middle: &mut Middle<L, R>,
        ld: usize,
        rd: usize,
    ) -> Result<bool> {
        let (Some((left, right)), Some((left_outer, right_outer))) =
            (&mut middle.windows, &mut middle.outer)
        else {
            return Ok(false);
        };
        let fill = |keys: &VecDeque<PointKey>| (WINDOW + 1).saturating_sub(keys.len());
        left_outer.read_past(ld, fill(&left.keys), false, left)?;
        right_outer.read_past(rd, fill(&right.keys), false, right)?;
        self.note_keys(left.keys.len(), right.keys.len());
        let (w, h) = (left.keys.len().min(WINDOW), right.keys.len().min(WINDOW));
        if w == 0 && h == 0 {
            middle.windows = None;
            return Ok(false);
        }
        let whole = left.ended && left.keys.len() == w && right.ended && right.keys.len() == h;
        let (lk, rk) = (&left.keys, &right.keys);
        let kept = window(w, h, whole, self.max_edits, |x, y| lk[x].edit_equal(&rk[y]));
        left.keys.drain(..kept.left);
        right.keys.drain(..kept.right);
        // The keys held beyond the bound at the start are let go.
        for keys in [&mut left.keys, &mut right.keys] {
            if keys.capacity() > 4 * (WINDOW + 1) && keys.len() <= WINDOW + 1 {
                keys.shrink_to(WINDOW + 1);
            }
        }
        middle.lines = kept.lines.into_iter();
        Ok(true)
    }

    /// Notes the keys of children held a side to align two lists.
    fn note_keys(&mut self, left: usize, right: usize) {
        let held = left.max(right) as u64;
        self.summary.held_keys = self.summary.held_keys.max(held);
    }

    /// Myers' script between two lists of keys, or past its bound the
    /// alignment by position, warned of (`firsts`: the lists' first events).
    fn align(
        &mut self,
        left: &[PointKey],
        right: &[PointKey],
        firsts: impl FnOnce() -> (Option<EventId>, Option<EventId>),
    ) -> Vec<DiffLine> {
        let (n, m) = (left.len(), right.len());
        let equal = |x: usize, y: usize| left[x].edit_equal(&right[y]);
        match myers(n, m, self.max_edits, equal) {
            Some(lines) => lines,
            None => {
                let first = |event: Option<EventId>| event.map_or(-1, EventId::get);
                let (l, r) = firsts();
                self.warnings.push(format!(
                    "thread {}: {n} and {m} children (from events {} and {}) differ in more than \
                     {} edits; aligned window by window ({WINDOW} children a side) instead of by \
                     Myers' diff of the whole lists",
                    self.summary.name,
                    first(l),
                    first(r),
                    self.max_edits
                ));
                align_by_windows(n, m, self.max_edits, equal)
            }
        }
    }

    /// Writes an aligned pair: unchanged, or edited (the left one first,
    /// without children); pushes the frame diffing their children.
    fn pair<LT: TraceTree, RT: TraceTree>(
        &mut self,
        stack: &mut Frames<LT::Node, RT::Node>,
        left: &mut Side<'_, LT>,
        right: &mut Side<'_, RT>,
        mut l: Point<LT::Node>,
        mut r: Point<RT::Node>,
    ) -> Result<()> {
        let strict = l.key.strict_equal(&r.key);
        let events = (Some(l.event), Some(r.event));
        if !strict {
            let (ids, out) = (&mut left.ids, &mut self.out);
            let tracepoint = l.tracepoint.as_mut().ok_or_else(skimmed)?;
            let event =
                out.copy_owned(ids, tracepoint, DiffStatus::EditedOld, events.0, events.1)?;
            if tracepoint.is_container() {
                let footer = match tracepoint.body {
                    TracepointBody::Loop { .. } => Footer::Loop { iterations: 0 },
                    _ => ids.translate_footer(l.footer.take().map(|f| *f), &out.thread)?,
                };
                out.close(&footer)?;
            }
            self.note(stack, left, right, DiffStatus::EditedOld, event, events)?;
        }
        let status = if strict {
            DiffStatus::Unchanged
        } else {
            DiffStatus::EditedNew
        };
        let (ids, out) = (&mut right.ids, &mut self.out);
        let tracepoint = r.tracepoint.as_mut().ok_or_else(skimmed)?;
        let event = out.copy_owned(ids, tracepoint, status, events.0, events.1)?;
        let close = if tracepoint.is_container() {
            Some(close_of(
                tracepoint,
                ids.translate_footer(r.footer.take().map(|f| *f), &out.thread),
            )?)
        } else {
            None
        };
        self.note(stack, left, right, status, event, events)?;
        let Some(close) = close else {
            return Ok(());
        };
        let work = Work::Align {
            left: List {
                depth: l.depth + 1,
                parent: Some(l.node),
            },
            right: List {
                depth: r.depth + 1,
                parent: Some(r.node),
            },
            middle: None,
        };
        stack.push(Frame::new(Some(close), Some(Origin::Right(r.node)), work));
        Ok(())
    }

    /// Writes one streamed tracepoint of a removed or added subtree;
    /// returns how to close it when it is a container.
    #[allow(clippy::type_complexity)]
    fn copy_one<LT: TraceTree, RT: TraceTree>(
        &mut self,
        stack: &mut Frames<LT::Node, RT::Node>,
        left: &mut Side<'_, LT>,
        right: &mut Side<'_, RT>,
        step: Step<LT::Node, RT::Node>,
    ) -> Result<Option<(Close, Origin<LT::Node, RT::Node>)>> {
        let (tracepoint, footer, status, events, origin) = match step {
            Step::Removed(point) => (
                point.tracepoint,
                point.footer,
                DiffStatus::Removed,
                (Some(point.event), None),
                Origin::Left(point.node),
            ),
            Step::Added(point) => (
                point.tracepoint,
                point.footer,
                DiffStatus::Added,
                (None, Some(point.event)),
                Origin::Right(point.node),
            ),
            Step::Pair(..) => return Err(Error::internal("a pair given as a copy")),
        };
        let mut tracepoint = tracepoint.ok_or_else(skimmed)?;
        let out = &mut self.out;
        let (event, footer) = if status == DiffStatus::Removed {
            let ids = &mut left.ids;
            let event = out.copy_owned(ids, &mut tracepoint, status, events.0, events.1)?;
            (event, ids.translate_footer(footer.map(|f| *f), &out.thread))
        } else {
            let ids = &mut right.ids;
            let event = out.copy_owned(ids, &mut tracepoint, status, events.0, events.1)?;
            (event, ids.translate_footer(footer.map(|f| *f), &out.thread))
        };
        let close = if tracepoint.is_container() {
            Some((close_of(&tracepoint, footer)?, origin))
        } else {
            None
        };
        self.note(stack, left, right, status, event, events)?;
        Ok(close)
    }

    /// Writes a whole subtree of one side, removed (left) or added (right),
    /// read by one walk of its reader.
    fn copy_tree<LT: TraceTree, RT: TraceTree>(
        &mut self,
        stack: &mut Frames<LT::Node, RT::Node>,
        left: &mut Side<'_, LT>,
        right: &mut Side<'_, RT>,
        root: Origin<LT::Node, RT::Node>,
    ) -> Result<()> {
        // Note the root (the first divergence, when it is one) with its path.
        let mut open: Vec<(Close, i32)> = Vec::new();
        let mut first = true;
        let mut visit = |this: &mut Self,
                         stack: &mut Frames<LT::Node, RT::Node>,
                         ids: &mut Reinterner<'_>,
                         depth: usize,
                         tracepoint: &Tracepoint<'_>,
                         footer: Option<&Footer<'_>>,
                         status: DiffStatus|
         -> Result<Option<EventId>> {
            while open.len() > depth {
                this.close_copies(&mut open)?;
            }
            let events = match status {
                DiffStatus::Removed => (Some(tracepoint.event()), None),
                _ => (None, Some(tracepoint.event())),
            };
            let event = this.out.copy(ids, tracepoint, status, events.0, events.1)?;
            if let Some((_, children)) = open.last_mut() {
                *children = children.saturating_add(1);
            } else if let Some(parent) = stack.last_mut() {
                parent.children = parent.children.saturating_add(1);
            }
            this.count(status);
            if tracepoint.is_container() {
                open.push((
                    close_of(tracepoint, ids.footer(footer, &this.out.thread))?,
                    0,
                ));
            }
            Ok(std::mem::take(&mut first).then_some(event))
        };
        let noted = match root {
            Origin::Left(node) => copy_subtree(left, node, &mut |ids, depth, point, footer| {
                visit(self, stack, ids, depth, point, footer, DiffStatus::Removed)
            })?
            .map(|(event, from)| (DiffStatus::Removed, event, (Some(from), None))),
            Origin::Right(node) => copy_subtree(right, node, &mut |ids, depth, point, footer| {
                visit(self, stack, ids, depth, point, footer, DiffStatus::Added)
            })?
            .map(|(event, from)| (DiffStatus::Added, event, (None, Some(from)))),
            Origin::Virtual => None,
        };
        while !open.is_empty() {
            self.close_copies(&mut open)?;
        }
        if let Some((status, event, events)) = noted {
            self.divergence(stack, left, right, status, event, events)?;
        }
        Ok(())
    }

    /// Writes the subtree of `r` as unchanged, paired node by node with
    /// the subtree of `l`, which is the same tree ([`ByBytes`]): the right
    /// one read by one walk of its reader, the left one's event ids by a
    /// walk of its bytes or headers on a thread of its own, or, for the
    /// same bytes ids and all ([`Same::Bytes`]), the right one's. Returns
    /// how many tracepoints it wrote.
    fn copy_equal<LT: TraceTree, RT: TraceTree>(
        &mut self,
        stack: &mut Frames<LT::Node, RT::Node>,
        left: &mut Side<'_, LT>,
        right: &mut Side<'_, RT>,
        (l, r): (LT::Node, RT::Node),
        same: Same,
    ) -> Result<u64> {
        let left_tree = left.tree;
        let (right_tree, ids) = (right.tree, &mut right.ids);
        std::thread::scope(|scope| {
            let (tx, rx) = sync_channel::<Result<Vec<EventId>>>(AHEAD);
            if same == Same::Bytes {
                drop(tx);
            } else {
                scope.spawn(move || left_events(left_tree, l, tx));
            }
            let mut events = Vec::new().into_iter();
            let mut left_event = |right: EventId| match events.next() {
                _ if same == Same::Bytes => Ok(right),
                Some(event) => Ok(event),
                None => {
                    events = rx.recv().map_err(|_| unpaired())??.into_iter();
                    events.next().ok_or_else(unpaired)
                }
            };
            let copied = 'copy: {
                if let Some(subtree) = right_tree.raw_subtree(r)?
                    && let Some(copied) = self.out.copy_raw(subtree, &mut left_event)?
                {
                    if let Some(parent) = stack.last_mut() {
                        parent.children = parent.children.saturating_add(1);
                    }
                    self.summary.unchanged += copied;
                    break 'copy copied;
                }
                let mut open: Vec<(Close, i32)> = Vec::new();
                let mut copied = 0u64;
                let detail = VisitDetail::default();
                right_tree.walk_visit(&[r], None, detail, |step| {
                    let Visit::Node {
                        depth,
                        tracepoint,
                        footer,
                        ..
                    } = step
                    else {
                        return Ok(());
                    };
                    let left_event = left_event(tracepoint.event())?;
                    while open.len() > depth {
                        self.close_copies(&mut open)?;
                    }
                    let status = DiffStatus::Unchanged;
                    let right_event = Some(tracepoint.event());
                    self.out
                        .copy(ids, tracepoint, status, Some(left_event), right_event)?;
                    if let Some((_, children)) = open.last_mut() {
                        *children = children.saturating_add(1);
                    } else if let Some(parent) = stack.last_mut() {
                        parent.children = parent.children.saturating_add(1);
                    }
                    self.summary.unchanged += 1;
                    copied += 1;
                    if tracepoint.is_container() {
                        let footer = ids.footer(footer, &self.out.thread)?;
                        open.push((close_of(tracepoint, Ok(footer))?, 0));
                    }
                    Ok(())
                })?;
                while !open.is_empty() {
                    self.close_copies(&mut open)?;
                }
                copied
            };
            if events.next().is_some() || rx.recv().is_ok() {
                return Err(unpaired());
            }
            Ok(copied)
        })
    }

    fn close_copies(&mut self, open: &mut Vec<(Close, i32)>) -> Result<()> {
        match open.pop() {
            Some((Close::Footer(footer), _)) => self.out.close(&footer),
            Some((Close::Loop, children)) => self.out.close(&Footer::Loop {
                iterations: children,
            }),
            None => Ok(()),
        }
    }

    fn count(&mut self, status: DiffStatus) {
        let summary = &mut *self.summary;
        match status {
            DiffStatus::Unchanged => summary.unchanged += 1,
            DiffStatus::Removed => summary.removed += 1,
            DiffStatus::Added => summary.added += 1,
            DiffStatus::EditedOld => summary.edited += 1,
            DiffStatus::EditedNew | DiffStatus::None => {}
        }
    }

    /// Counts a tracepoint written into the innermost frame, and notes the
    /// thread's first divergence.
    fn note<LT: TraceTree, RT: TraceTree>(
        &mut self,
        stack: &mut Frames<LT::Node, RT::Node>,
        left: &Side<'_, LT>,
        right: &Side<'_, RT>,
        status: DiffStatus,
        event: EventId,
        events: (Option<EventId>, Option<EventId>),
    ) -> Result<()> {
        if let Some(parent) = stack.last_mut() {
            parent.children = parent.children.saturating_add(1);
        }
        self.count(status);
        self.divergence(stack, left, right, status, event, events)
    }

    /// Notes the thread's first divergence, with the path of containers
    /// the stack holds.
    fn divergence<LT: TraceTree, RT: TraceTree>(
        &mut self,
        stack: &Frames<LT::Node, RT::Node>,
        left: &Side<'_, LT>,
        right: &Side<'_, RT>,
        status: DiffStatus,
        event: EventId,
        (left_event, right_event): (Option<EventId>, Option<EventId>),
    ) -> Result<()> {
        if status == DiffStatus::Unchanged || self.summary.first_divergence.is_some() {
            return Ok(());
        }
        let mut path = Vec::new();
        for frame in stack {
            let label = match frame.origin {
                None => continue,
                Some(Origin::Virtual) => "<diff>.<root>".to_string(),
                Some(Origin::Left(node)) => left.tree.visit(node, |t, _| label(t, left.tree))??,
                Some(Origin::Right(node)) => {
                    right.tree.visit(node, |t, _| label(t, right.tree))??
                }
            };
            path.push(label);
        }
        self.summary.first_divergence = Some(Divergence {
            event,
            status,
            left: left_event,
            right: right_event,
            path,
        });
        Ok(())
    }
}

/// Sends the event ids of the subtree of `node` in pre-order, in batches,
/// until the diff stops reading: from its bytes (each tracepoint's header
/// in stream order) where its reader gives them, else from a walk of its
/// headers.
fn left_events<T: TraceTree>(tree: &T, node: T::Node, tx: SyncSender<Result<Vec<EventId>>>) {
    let mut batch = Vec::with_capacity(BATCH);
    let send = |batch: Vec<EventId>| tx.send(Ok(batch)).is_ok();
    let read = (|| -> Result<bool> {
        let Some(mut objects) = tree.raw_subtree(node)? else {
            let detail = VisitDetail {
                child_counts: false,
                leaf_bodies: false,
            };
            let mut open = true;
            tree.walk_visit(&[node], None, detail, |step| {
                batch.push(match step {
                    Visit::Node { tracepoint, .. } => tracepoint.event(),
                    Visit::Leaf { header, .. } => header.event,
                    Visit::Folded { .. } => return Ok(()),
                });
                if batch.len() == BATCH {
                    open = send(std::mem::replace(&mut batch, Vec::with_capacity(BATCH)));
                    if !open {
                        return Err(unpaired());
                    }
                }
                Ok(())
            })
            .or_else(|error| if open { Err(error) } else { Ok(()) })?;
            return Ok(open && (batch.is_empty() || send(std::mem::take(&mut batch))));
        };
        while let Some(object) = objects.next_object()? {
            if object[0] != ObjectKind::Tracepoint as u8 {
                continue;
            }
            let id = object.get(10..14).ok_or_else(unpaired)?;
            batch.push(EventId::new(i32::from_be_bytes([
                id[0], id[1], id[2], id[3],
            ])));
            if batch.len() == BATCH
                && !send(std::mem::replace(&mut batch, Vec::with_capacity(BATCH)))
            {
                return Ok(false);
            }
        }
        Ok(batch.is_empty() || send(std::mem::take(&mut batch)))
    })();
    // A failed send means the diff is done with the events: nothing to say.
    if let Err(error) = read {
        let _ = tx.send(Err(error));
    }
}

/// The error for two equal subtrees walked to different counts of nodes.
fn unpaired() -> Error {
    Error::internal("two subtrees of the same bytes walked to different trees")
}

/// The error for a tracepoint written that its stream left out.
fn skimmed() -> Error {
    Error::internal("a tracepoint read past was written")
}

/// What walks a list's read-past children again: the rest of their
/// parent's children in one pass, or (a thread's roots) each subtree.
fn walked_again<N: Copy>(parent: Option<N>, past: &ReadPast<N>) -> Walked<N> {
    match (parent, past.first) {
        (Some(parent), Some((first, _))) => Walked::Siblings { parent, first },
        _ => Walked::Trees(past.roots.clone()),
    }
}

/// A container's name in a path: `Class.method`, `loop`, `iteration N`.
fn label<T: TraceTree>(tracepoint: &Tracepoint<'_>, tree: &T) -> Result<String> {
    Ok(match &tracepoint.body {
        TracepointBody::MethodCall { method, .. } => {
            let method = tree.context().method(*method)?;
            let class = tree.context().class(method.class)?.name.decode();
            format!("{}.{}", adorn(&class), method.name.decode())
        }
        TracepointBody::Loop { .. } => "loop".to_string(),
        TracepointBody::LoopIteration { iteration, .. } => format!("iteration {}", iteration + 1),
        _ => tracepoint.tracepoint_type().name().to_string(),
    })
}

/// Walks the subtree of `node` in `side`, handing each tracepoint to
/// `visit` with the side's ids; the output event `visit` gave first, with
/// the input event it came from.
fn copy_subtree<T: TraceTree>(
    side: &mut Side<'_, T>,
    node: T::Node,
    visit: &mut impl FnMut(
        &mut Reinterner<'_>,
        usize,
        &Tracepoint<'_>,
        Option<&Footer<'_>>,
    ) -> Result<Option<EventId>>,
) -> Result<Option<(EventId, EventId)>> {
    let (tree, ids) = (side.tree, &mut side.ids);
    let mut noted = None;
    tree.walk_visit(&[node], None, VisitDetail::default(), |step| {
        if let Visit::Node {
            depth,
            tracepoint,
            footer,
            ..
        } = step
            && let Some(event) = visit(ids, depth, tracepoint, footer)?
        {
            noted = Some((event, tracepoint.event()));
        }
        Ok(())
    })?;
    Ok(noted)
}
