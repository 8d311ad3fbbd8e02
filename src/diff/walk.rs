//! The diff of one pair of threads: the reference's recursive walk, run on
//! an explicit stack (a frame per open output container) over children
//! lists read a page at a time.

use std::collections::VecDeque;
use std::io::Write;

use crate::common::EventId;
use crate::diff::compare::{PointKey, point_key};
use crate::diff::myers::{DiffLine, align_by_position, myers};
use crate::diff::output::{Reinterner, ThreadOut};
use crate::diff::{Divergence, ThreadSummary};
use crate::error::Result;
use crate::model::{DiffStatus, Footer, JavaStr, Tracepoint, TracepointBody, Value};
use crate::print::adorn;
use crate::tree::TraceTree;

/// Children read from a reader at a time.
const PAGE: usize = 1024;

/// One input: its reader and its ids translated into the output's.
pub(crate) struct Side<'t, T: TraceTree> {
    pub(crate) tree: &'t T,
    pub(crate) ids: Reinterner<'t>,
}

/// A tracepoint of a children list with its comparison keys.
#[derive(Clone, Copy)]
struct Item<N> {
    node: N,
    key: PointKey,
    event: EventId,
}

fn item<T: TraceTree>(tree: &T, node: T::Node) -> Result<Item<T::Node>> {
    tree.visit(node, |tracepoint, footer| {
        Ok(Item {
            node,
            key: point_key(tracepoint, footer, tree.context())?,
            event: tracepoint.event(),
        })
    })?
}

/// A children list (or a thread's root alone), read a page at a time.
struct Pager<N> {
    parent: Option<N>,
    next: usize,
    len: usize,
    page: VecDeque<N>,
}

impl<N: Copy> Pager<N> {
    fn children<T: TraceTree<Node = N>>(tree: &T, parent: N) -> Result<Self> {
        Ok(Pager {
            parent: Some(parent),
            next: 0,
            len: tree.child_count(parent)?,
            page: VecDeque::new(),
        })
    }

    fn one(node: N) -> Self {
        Pager {
            parent: None,
            next: 1,
            len: 1,
            page: VecDeque::from([node]),
        }
    }

    /// The next node, reading the next page when the last is used up.
    fn next<T: TraceTree<Node = N>>(&mut self, tree: &T) -> Result<Option<N>> {
        if self.page.is_empty()
            && self.next < self.len
            && let Some(parent) = self.parent
        {
            let page = tree.children_range(parent, self.next, PAGE)?;
            if page.is_empty() {
                // Fewer children than counted: the list ends here.
                self.next = self.len;
            }
            self.next += page.len();
            self.page.extend(page);
        }
        Ok(self.page.pop_front())
    }

    fn peek<T: TraceTree<Node = N>>(&mut self, tree: &T) -> Result<Option<N>> {
        let next = self.next(tree)?;
        if let Some(node) = next {
            self.page.push_front(node);
        }
        Ok(next)
    }
}

/// The part of two children lists after their common prefix, aligned.
struct Middle<L, R> {
    left: Vec<Item<L>>,
    right: Vec<Item<R>>,
    lines: std::vec::IntoIter<DiffLine>,
}

enum Work<L, R> {
    /// Two lists being aligned: their common prefix pair by pair, then the
    /// rest by Myers' diff.
    Align {
        left: Pager<L>,
        right: Pager<R>,
        middle: Option<Middle<L, R>>,
    },
    /// A left list copied as removed.
    Removed(Pager<L>),
    /// A right list copied as added.
    Added(Pager<R>),
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

enum Step<L, R> {
    Pair(Item<L>, Item<R>),
    Removed(L),
    Added(R),
}

/// What one thread's walk needs besides the two sides.
pub(crate) struct Walk<'o, 'w, W: Write> {
    pub(crate) out: ThreadOut<'w, W>,
    pub(crate) summary: &'o mut ThreadSummary,
    pub(crate) max_edits: usize,
    pub(crate) warnings: &'o mut Vec<String>,
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

impl<W: Write> Walk<'_, '_, W> {
    /// Diffs one thread, writing it whole.
    pub(crate) fn run<LT: TraceTree, RT: TraceTree>(
        mut self,
        left: &mut Side<'_, LT>,
        right: &mut Side<'_, RT>,
        start: Start<LT::Node, RT::Node>,
    ) -> Result<()> {
        let mut stack: Vec<Frame<LT::Node, RT::Node>> = Vec::new();
        let frame = |close, origin, work| Frame {
            close,
            children: 0,
            origin,
            work,
        };
        stack.push(match start {
            Start::Pair(l, r) => {
                let (li, ri) = (item(left.tree, l)?, item(right.tree, r)?);
                let (close, origin) = if li.key.strict_equal(&ri.key) {
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
                    left: Pager::one(l),
                    right: Pager::one(r),
                    middle: None,
                };
                frame(close, origin, work)
            }
            Start::Removed(l) => frame(None, None, Work::Removed(Pager::one(l))),
            Start::Added(r) => frame(None, None, Work::Added(Pager::one(r))),
        });
        while let Some(top) = stack.last_mut() {
            let Some(step) = self.next_step(top, left, right)? else {
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
            let opened = match step {
                Step::Pair(l, r) => self.pair(&mut stack, left, right, l, r)?,
                Step::Removed(node) => {
                    let close = self.copy_one(&mut stack, left, right, Origin::Left(node))?;
                    match close {
                        Some(close) => Some(frame(
                            Some(close),
                            Some(Origin::Left(node)),
                            Work::Removed(Pager::children(left.tree, node)?),
                        )),
                        None => None,
                    }
                }
                Step::Added(node) => {
                    let close = self.copy_one(&mut stack, left, right, Origin::Right(node))?;
                    match close {
                        Some(close) => Some(frame(
                            Some(close),
                            Some(Origin::Right(node)),
                            Work::Added(Pager::children(right.tree, node)?),
                        )),
                        None => None,
                    }
                }
            };
            if let Some(opened) = opened {
                stack.push(opened);
            }
        }
        Ok(())
    }

    /// The next thing the innermost frame writes, `None` when it is done.
    fn next_step<LT: TraceTree, RT: TraceTree>(
        &mut self,
        frame: &mut Frame<LT::Node, RT::Node>,
        left: &Side<'_, LT>,
        right: &Side<'_, RT>,
    ) -> Result<Option<Step<LT::Node, RT::Node>>> {
        let (lp, rp, middle) = match &mut frame.work {
            Work::Removed(pager) => return Ok(pager.next(left.tree)?.map(Step::Removed)),
            Work::Added(pager) => return Ok(pager.next(right.tree)?.map(Step::Added)),
            Work::Align {
                left,
                right,
                middle,
            } => (left, right, middle),
        };
        loop {
            if let Some(middle) = middle {
                return Ok(middle.lines.next().map(|line| match line {
                    DiffLine::Unchanged(l, r) => Step::Pair(middle.left[l], middle.right[r]),
                    DiffLine::Removed(l) => Step::Removed(middle.left[l].node),
                    DiffLine::Added(r) => Step::Added(middle.right[r].node),
                }));
            }
            // The common prefix, pair by pair: Myers' first snake.
            if let (Some(l), Some(r)) = (lp.peek(left.tree)?, rp.peek(right.tree)?) {
                let (l, r) = (item(left.tree, l)?, item(right.tree, r)?);
                if l.key.edit_equal(&r.key) {
                    lp.next(left.tree)?;
                    rp.next(right.tree)?;
                    return Ok(Some(Step::Pair(l, r)));
                }
            }
            *middle = Some(self.middle(lp, rp, left, right)?);
        }
    }

    /// The rest of two lists, read whole and aligned.
    fn middle<LT: TraceTree, RT: TraceTree>(
        &mut self,
        lp: &mut Pager<LT::Node>,
        rp: &mut Pager<RT::Node>,
        left: &Side<'_, LT>,
        right: &Side<'_, RT>,
    ) -> Result<Middle<LT::Node, RT::Node>> {
        let mut left_items = Vec::new();
        while let Some(node) = lp.next(left.tree)? {
            left_items.push(item(left.tree, node)?);
        }
        let mut right_items = Vec::new();
        while let Some(node) = rp.next(right.tree)? {
            right_items.push(item(right.tree, node)?);
        }
        let (n, m) = (left_items.len(), right_items.len());
        let equal = |x: usize, y: usize| left_items[x].key.edit_equal(&right_items[y].key);
        let lines = match myers(n, m, self.max_edits, equal) {
            Some(lines) => lines,
            None => {
                let first = |event: Option<EventId>| event.map_or(-1, EventId::get);
                self.warnings.push(format!(
                    "thread {}: {n} and {m} children (from events {} and {}) differ in more than \
                     {} edits; aligned by position instead of Myers' diff",
                    self.summary.name,
                    first(left_items.first().map(|item| item.event)),
                    first(right_items.first().map(|item| item.event)),
                    self.max_edits
                ));
                align_by_position(n, m, equal)
            }
        };
        Ok(Middle {
            left: left_items,
            right: right_items,
            lines: lines.into_iter(),
        })
    }

    /// Writes an aligned pair: unchanged, or edited (the left one first,
    /// without children); returns the frame diffing their children.
    fn pair<LT: TraceTree, RT: TraceTree>(
        &mut self,
        stack: &mut [Frame<LT::Node, RT::Node>],
        left: &mut Side<'_, LT>,
        right: &mut Side<'_, RT>,
        l: Item<LT::Node>,
        r: Item<RT::Node>,
    ) -> Result<Option<Frame<LT::Node, RT::Node>>> {
        let strict = l.key.strict_equal(&r.key);
        let events = (Some(l.event), Some(r.event));
        if !strict {
            let (tree, ids, out) = (left.tree, &mut left.ids, &mut self.out);
            let event = tree.visit(l.node, |tracepoint, footer| -> Result<EventId> {
                let event = out.copy(ids, tracepoint, DiffStatus::EditedOld, events.0, events.1)?;
                if tracepoint.is_container() {
                    let footer = match tracepoint.body {
                        TracepointBody::Loop { .. } => Footer::Loop { iterations: 0 },
                        _ => ids.footer(footer, &out.thread)?,
                    };
                    out.close(&footer)?;
                }
                Ok(event)
            })??;
            self.note(stack, left, right, DiffStatus::EditedOld, event, events)?;
        }
        let status = if strict {
            DiffStatus::Unchanged
        } else {
            DiffStatus::EditedNew
        };
        let (tree, ids, out) = (right.tree, &mut right.ids, &mut self.out);
        let (event, close) = tree.visit(r.node, |tracepoint, footer| -> Result<_> {
            let event = out.copy(ids, tracepoint, status, events.0, events.1)?;
            let close = if tracepoint.is_container() {
                Some(close_of(tracepoint, ids.footer(footer, &out.thread))?)
            } else {
                None
            };
            Ok((event, close))
        })??;
        self.note(stack, left, right, status, event, events)?;
        let Some(close) = close else {
            return Ok(None);
        };
        Ok(Some(Frame {
            close: Some(close),
            children: 0,
            origin: Some(Origin::Right(r.node)),
            work: Work::Align {
                left: Pager::children(left.tree, l.node)?,
                right: Pager::children(right.tree, r.node)?,
                middle: None,
            },
        }))
    }

    /// Writes one tracepoint of a removed (left) or added (right) subtree;
    /// returns how to close it when it is a container.
    fn copy_one<LT: TraceTree, RT: TraceTree>(
        &mut self,
        stack: &mut [Frame<LT::Node, RT::Node>],
        left: &mut Side<'_, LT>,
        right: &mut Side<'_, RT>,
        node: Origin<LT::Node, RT::Node>,
    ) -> Result<Option<Close>> {
        let out = &mut self.out;
        let mut copy = |tracepoint: &Tracepoint<'_>,
                        footer: Option<&Footer<'_>>,
                        ids: &mut Reinterner<'_>,
                        status: DiffStatus,
                        events: (Option<EventId>, Option<EventId>)|
         -> Result<_> {
            let event = out.copy(ids, tracepoint, status, events.0, events.1)?;
            let close = if tracepoint.is_container() {
                Some(close_of(tracepoint, ids.footer(footer, &out.thread))?)
            } else {
                None
            };
            Ok((event, close, status, events))
        };
        let (event, close, status, events) = match node {
            Origin::Left(node) => {
                let ids = &mut left.ids;
                left.tree.visit(node, |tracepoint, footer| {
                    let events = (Some(tracepoint.event()), None);
                    copy(tracepoint, footer, ids, DiffStatus::Removed, events)
                })??
            }
            Origin::Right(node) => {
                let ids = &mut right.ids;
                right.tree.visit(node, |tracepoint, footer| {
                    let events = (None, Some(tracepoint.event()));
                    copy(tracepoint, footer, ids, DiffStatus::Added, events)
                })??
            }
            Origin::Virtual => return Ok(None),
        };
        self.note(stack, left, right, status, event, events)?;
        Ok(close)
    }

    /// Counts a tracepoint written into the innermost frame, and notes the
    /// thread's first divergence.
    fn note<LT: TraceTree, RT: TraceTree>(
        &mut self,
        stack: &mut [Frame<LT::Node, RT::Node>],
        left: &Side<'_, LT>,
        right: &Side<'_, RT>,
        status: DiffStatus,
        event: EventId,
        (left_event, right_event): (Option<EventId>, Option<EventId>),
    ) -> Result<()> {
        if let Some(parent) = stack.last_mut() {
            parent.children = parent.children.saturating_add(1);
        }
        let summary = &mut *self.summary;
        match status {
            DiffStatus::Unchanged => summary.unchanged += 1,
            DiffStatus::Removed => summary.removed += 1,
            DiffStatus::Added => summary.added += 1,
            DiffStatus::EditedOld => summary.edited += 1,
            DiffStatus::EditedNew | DiffStatus::None => {}
        }
        if status == DiffStatus::Unchanged || summary.first_divergence.is_some() {
            return Ok(());
        }
        let mut path = Vec::new();
        for frame in stack.iter() {
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
