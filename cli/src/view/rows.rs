//! The viewer's tree as the rows on screen: a flat list holding only what
//! the user opened.
//!
//! A thread row or a call row, when expanded, is followed by its children
//! a page at a time ([`PAGE`] rows, asked of the reader with
//! `children_range`/`roots_range`); the children not loaded stand as one
//! gap row ("… 9,999,800 more") that loads the next page when opened. So a
//! call with ten million children opens as fast as one with ten, and
//! memory follows what was opened, not the trace. Revealing a node deep
//! in the tree (a search hit, an event id) expands its ancestors, each at
//! a window around the child on the way down.
//!
//! A row's child count is what the reader knows without a scan
//! (`quick_child_count`): exact for most calls, "1,024+" for a wide one
//! until the viewer's counting thread (`counts`) has counted it; meanwhile
//! the wide call opens at its first page with a gap of unknown length.

use std::sync::Arc;

use ratatui::text::Line;
use tracetree::Result;
use tracetree::TraceTree;
use tracetree::common::ThreadId;
use tracetree::model::DiffStatus;
use tracetree::print::{Parent, TextFormatter};
use tracetree::read::ChildCount;
use tracetree::tree::Navigate;

use super::Browsed;

/// Children loaded per page.
pub const PAGE: usize = 200;

/// Whose children a row lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner<N> {
    /// A thread's top-level tracepoints.
    Thread(ThreadId),
    /// A container's children.
    Node(N),
}

/// What a row shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowKind<N> {
    /// A thread (depth 0).
    Thread(ThreadId),
    /// A tracepoint; `index` is its place among its siblings.
    Node { node: N, index: usize },
    /// `owner`'s children `[from, to)`, not loaded; `to` is `None` while
    /// the owner's children are being counted (the gap runs to the end).
    Gap {
        owner: Owner<N>,
        from: usize,
        to: Option<usize>,
    },
}

/// One row on screen.
#[derive(Debug, Clone)]
pub struct Row<N> {
    pub kind: RowKind<N>,
    pub depth: usize,
    pub expanded: bool,
    /// Direct children (0 for leaves and gaps).
    pub children: ChildCount,
    /// The row's text, as `print` shows the tracepoint.
    pub text: String,
    /// The tracepoint's diff status (`None` outside a diff, and for
    /// thread and gap rows).
    pub status: DiffStatus,
}

impl<N: Copy> Row<N> {
    pub fn owner(&self) -> Option<Owner<N>> {
        match self.kind {
            RowKind::Thread(thread) => Some(Owner::Thread(thread)),
            RowKind::Node { node, .. } => Some(Owner::Node(node)),
            RowKind::Gap { .. } => None,
        }
    }

    pub fn node(&self) -> Option<N> {
        match self.kind {
            RowKind::Node { node, .. } => Some(node),
            _ => None,
        }
    }

    /// The row as a line: indentation, a marker, the text, the count.
    pub fn line(&self) -> Line<'static> {
        let indent = "  ".repeat(self.depth);
        let marker = match self.kind {
            RowKind::Gap { .. } => "… ",
            _ if self.children.at_least() == 0 => "  ",
            _ if self.expanded => "▾ ",
            _ => "▸ ",
        };
        let count = match self.kind {
            RowKind::Node { .. } if self.children.at_least() > 0 => {
                format!("  ({})", count_text(self.children))
            }
            _ => String::new(),
        };
        Line::from(format!("{indent}{marker}{}{count}", self.text))
    }
}

/// The rows of one reader.
pub struct Rows<V: Browsed> {
    reader: Arc<V>,
    pub rows: Vec<Row<V::Node>>,
    /// Nodes shown with a lower bound of children, for the counting thread.
    uncounted: Vec<V::Node>,
}

impl<V: Browsed> Rows<V> {
    /// One collapsed row per thread in `threads`.
    pub fn new(reader: Arc<V>, threads: &[ThreadId]) -> Result<Self> {
        let mut rows = Vec::new();
        for &thread in threads {
            rows.push(Row {
                kind: RowKind::Thread(thread),
                depth: 0,
                expanded: false,
                children: ChildCount::Exact(reader.root_count(thread)?),
                text: thread_title(&*reader, thread),
                status: DiffStatus::None,
            });
        }
        Ok(Rows {
            reader,
            rows,
            uncounted: Vec::new(),
        })
    }

    /// The nodes shown since the last call whose children are still to be
    /// counted.
    pub fn take_uncounted(&mut self) -> Vec<V::Node> {
        std::mem::take(&mut self.uncounted)
    }

    /// Records that `node` has `count` children: its row and the gap that
    /// ran to the end of its children say so; true when a row changed.
    pub fn set_count(&mut self, node: V::Node, count: usize) -> bool {
        let mut changed = false;
        let mut i = 0;
        while i < self.rows.len() {
            let row = &mut self.rows[i];
            match row.kind {
                RowKind::Node { node: n, .. } if n == node => {
                    row.children = ChildCount::Exact(count);
                    changed = true;
                }
                RowKind::Gap {
                    owner: Owner::Node(n),
                    from,
                    to: None,
                } if n == node => {
                    changed = true;
                    if from >= count {
                        self.rows.remove(i);
                        continue;
                    }
                    let depth = row.depth;
                    self.rows[i] =
                        self.gap(Owner::Node(node), depth, from, Some(count), Some(count));
                }
                _ => {}
            }
            i += 1;
        }
        changed
    }

    /// Expands row `i` at its first page; true when it changed.
    pub fn expand(&mut self, i: usize) -> Result<bool> {
        self.expand_at(i, 0)
    }

    /// Expands row `i` (a thread or a container) with the page of children
    /// starting at `from`, gaps standing for the rest.
    pub fn expand_at(&mut self, i: usize, from: usize) -> Result<bool> {
        let row = &self.rows[i];
        let Some(owner) = row.owner() else {
            return Ok(false);
        };
        if row.children.at_least() == 0 {
            return Ok(false);
        }
        let depth = row.depth + 1;
        // The first page needs no count; a window further in does.
        let count = match (row.children, owner) {
            (ChildCount::Exact(count), _) => Some(count),
            (ChildCount::AtLeast(_), Owner::Node(node)) if from > 0 => {
                let count = self.reader.child_count(node)?;
                self.set_count(node, count);
                Some(count)
            }
            (ChildCount::AtLeast(_), _) => None,
        };
        self.collapse(i);
        let from = count.map_or(0, |count| from.min(count.saturating_sub(1)));
        let mut inserted = Vec::new();
        if from > 0 {
            inserted.push(self.gap(owner, depth, 0, Some(from), count));
        }
        let page = self.page(owner, depth, from)?;
        let end = from + page.len();
        let more = page.len() == PAGE;
        inserted.extend(page);
        match count {
            Some(count) if end < count => {
                inserted.push(self.gap(owner, depth, end, Some(count), Some(count)))
            }
            None if more => inserted.push(self.gap(owner, depth, end, None, None)),
            _ => {}
        }
        self.rows[i].expanded = true;
        self.rows.splice(i + 1..i + 1, inserted);
        Ok(true)
    }

    /// Collapses row `i`: its descendants' rows go.
    pub fn collapse(&mut self, i: usize) -> bool {
        let end = self.subtree_end(i);
        let changed = self.rows[i].expanded;
        self.rows[i].expanded = false;
        self.rows.drain(i + 1..end);
        changed
    }

    /// Loads the next page of the gap at row `i`.
    pub fn open_gap(&mut self, i: usize) -> Result<bool> {
        let RowKind::Gap { owner, from, to } = self.rows[i].kind else {
            return Ok(false);
        };
        let depth = self.rows[i].depth;
        let mut page = self.page(owner, depth, from)?;
        page.truncate(to.unwrap_or(usize::MAX) - from);
        let end = from + page.len();
        match to {
            Some(to) if end < to => {
                let total = self.owner_count(owner);
                page.push(self.gap(owner, depth, end, Some(to), total));
            }
            None if page.len() == PAGE => page.push(self.gap(owner, depth, end, None, None)),
            _ => {}
        }
        self.rows.splice(i..i + 1, page);
        Ok(true)
    }

    /// The row after row `i`'s descendants.
    pub fn subtree_end(&self, i: usize) -> usize {
        let depth = self.rows[i].depth;
        let mut end = i + 1;
        while end < self.rows.len() && self.rows[end].depth > depth {
            end += 1;
        }
        end
    }

    /// The row of the thread `thread`.
    pub fn thread_row(&self, thread: ThreadId) -> Option<usize> {
        self.rows
            .iter()
            .position(|r| r.kind == RowKind::Thread(thread))
    }

    /// Shows `node`: expands its thread and ancestors so that it has a row;
    /// returns that row (`None` when its thread is hidden).
    pub fn reveal(&mut self, node: V::Node) -> Result<Option<usize>> {
        let reader = Arc::clone(&self.reader);
        let Some(mut row) = self.thread_row(reader.node_thread(node)) else {
            return Ok(None);
        };
        let mut chain = reader.ancestors(node)?;
        chain.push(node);
        for step in chain {
            row = match self.child_row(row, step) {
                Some(found) => found,
                None => {
                    let index = reader.position(step)?;
                    self.expand_at(row, index.saturating_sub(PAGE / 2))?;
                    self.child_row(row, step)
                        .ok_or(tracetree::Error::NoSuchNode(
                            tracetree::NodeProblem::NoChild(index),
                        ))?
                }
            };
        }
        Ok(Some(row))
    }

    /// The row of `node` among row `parent`'s children, if loaded.
    fn child_row(&self, parent: usize, node: V::Node) -> Option<usize> {
        let depth = self.rows[parent].depth + 1;
        (parent + 1..self.subtree_end(parent))
            .find(|&r| self.rows[r].depth == depth && self.rows[r].node() == Some(node))
    }

    fn page(
        &mut self,
        owner: Owner<V::Node>,
        depth: usize,
        from: usize,
    ) -> Result<Vec<Row<V::Node>>> {
        let reader = &*self.reader;
        let mut formatter = TextFormatter::new(reader.context(), false);
        let (nodes, parent) = match owner {
            Owner::Thread(thread) => (reader.roots_range(thread, from, PAGE)?, Parent::TopLevel),
            Owner::Node(node) => (
                reader.children_range(node, from, PAGE)?,
                reader.visit(node, |tracepoint, _| Parent::of(tracepoint))?,
            ),
        };
        let mut rows = Vec::with_capacity(nodes.len());
        for (k, node) in nodes.into_iter().enumerate() {
            let mut text = String::new();
            let status = reader.visit(node, |tracepoint, footer| {
                formatter
                    .write_tracepoint(&mut text, tracepoint, footer, parent)
                    .map(|()| tracepoint.header.diff_status)
            })??;
            let children = reader.quick_child_count(node)?;
            if children.exact().is_none() {
                self.uncounted.push(node);
            }
            rows.push(Row {
                kind: RowKind::Node {
                    node,
                    index: from + k,
                },
                depth,
                expanded: false,
                children,
                text,
                status,
            });
        }
        Ok(rows)
    }

    /// The gap of `owner`'s children `[from, to)` of `total` (`None`: still
    /// being counted).
    fn gap(
        &self,
        owner: Owner<V::Node>,
        depth: usize,
        from: usize,
        to: Option<usize>,
        total: Option<usize>,
    ) -> Row<V::Node> {
        let text = match to {
            Some(to) => format!(
                "{} more: {}–{}{} (Enter loads {})",
                group(to - from),
                group(from + 1),
                group(to),
                total.map_or(String::new(), |total| format!(" of {}", group(total))),
                PAGE.min(to - from)
            ),
            None => format!(
                "more from {} (counting children; Enter loads {PAGE})",
                group(from + 1)
            ),
        };
        Row {
            kind: RowKind::Gap { owner, from, to },
            depth,
            expanded: false,
            children: ChildCount::Exact(0),
            text,
            status: DiffStatus::None,
        }
    }

    /// How many children `owner` has, when known without a scan.
    fn owner_count(&self, owner: Owner<V::Node>) -> Option<usize> {
        match owner {
            Owner::Thread(thread) => self.reader.root_count(thread).ok(),
            Owner::Node(node) => self.reader.quick_child_count(node).ok()?.exact(),
        }
    }
}

/// A child count as rows and details show it: `1,024+` while counting.
pub fn count_text(count: ChildCount) -> String {
    match count {
        ChildCount::Exact(n) => group(n),
        ChildCount::AtLeast(n) => format!("{}+", group(n)),
    }
}

/// `thread ID (name)`: the thread's recorded id, as `info` lists it and
/// `--thread` takes it.
pub fn thread_title(reader: &impl Navigate, thread: ThreadId) -> String {
    match reader.thread_name(thread) {
        Some(name) => format!("thread {} ({name})", thread.get()),
        None => format!("thread {}", thread.get()),
    }
}

pub use crate::words::group;
