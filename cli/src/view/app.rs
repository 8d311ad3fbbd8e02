//! The viewer's state and what each key does to it, apart from the
//! terminal (so that tests drive it directly).
//!
//! Nothing here blocks on the size of the trace: a key expands a page,
//! starts finding a node to reveal (`locate`) or starts a search; both run
//! on threads of their own while the screen reports their progress. Following a
//! growing trace, each refreshed reader takes the rows over, what was open
//! and selected kept through node handles (`App::follow_to`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, TryRecvError, channel};

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseEvent, MouseEventKind};
use tracetree::Result;
use tracetree::common::{EventId, ThreadId};
use tracetree::model::{DiffStatus, TracepointType};
use tracetree::read::LazyTraceReader;
use tracetree::search::{Hit, SearchFrom, SearchOptions, SearchResult};
use tracetree::tree::Navigate;

use super::Browsed;
use super::counts::Counter;
use super::follow::Follower;
use super::locate::Locating;
use super::rows::{RowKind, Rows};

/// Hits a search keeps.
const MAX_HITS: usize = 100_000;

/// Hits moved onto a refreshed reader; more are dropped (a search again
/// finds them).
const MOVED_HITS: usize = 2_000;

/// What the keyboard is typing into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// Keys are commands.
    None,
    /// A search pattern after `/`.
    Search(String),
    /// An event id after `:`.
    Jump(String),
}

/// An overlay over the tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overlay {
    None,
    Help,
    /// The thread chooser, its cursor.
    Threads(usize),
    /// The kind chooser, its cursor (0: every kind, then
    /// [`TracepointType::ALL`] in order).
    Kinds(usize),
}

/// A search running in the background.
pub struct Running<V: Browsed> {
    pub pattern: String,
    stop: Arc<AtomicBool>,
    pub scanned: Arc<AtomicU64>,
    pub total: u64,
    done: Receiver<Result<SearchResult<V::Node>>>,
    /// The reader searched (its hits' nodes are its own).
    reader: Arc<V>,
}

/// The viewer.
pub struct App<V: Browsed = LazyTraceReader> {
    pub reader: Arc<V>,
    pub rows: Rows<V>,
    pub selected: usize,
    /// The first row on screen.
    pub top: usize,
    /// Rows the tree pane showed last.
    pub height: usize,
    pub input: Input,
    pub overlay: Overlay,
    pub threads: Vec<(ThreadId, bool)>,
    /// The kind searches keep (`None`: all).
    pub kind: Option<TracepointType>,
    pub bookmarks: Vec<V::Node>,
    pub running: Option<Running<V>>,
    /// A node being found, to be revealed.
    pub locating: Option<Locating<V>>,
    counter: Counter<V>,
    /// With `--follow`: the thread refreshing the reader.
    follower: Option<Follower>,
    /// With `--follow`: blocks that arrived since the viewer opened.
    pub following: Option<usize>,
    pub hits: Vec<Hit<V::Node>>,
    pub hits_total: u64,
    pub hit: Option<usize>,
    pub pattern: String,
    /// A message for the status line.
    pub message: String,
    /// The trace is a diff: `]` and `[` go to its changes.
    pub is_diff: bool,
    pub quit: bool,
}

impl<V: Browsed> App<V> {
    /// The viewer of `reader`'s trace, every thread shown and collapsed.
    pub fn new(reader: Arc<V>) -> Result<Self> {
        let ids = reader.thread_ids();
        let counter = Counter::new(Arc::clone(&reader));
        // A first tracepoint that cannot be read opens as a plain trace
        // (its row shows the error).
        let reader_is_diff = reader.is_diff().unwrap_or(false);
        Ok(App {
            rows: Rows::new(Arc::clone(&reader), &ids)?,
            reader,
            selected: 0,
            top: 0,
            height: 20,
            input: Input::None,
            overlay: Overlay::None,
            threads: ids.into_iter().map(|t| (t, true)).collect(),
            kind: None,
            bookmarks: Vec::new(),
            running: None,
            locating: None,
            counter,
            follower: None,
            following: None,
            hits: Vec::new(),
            hits_total: 0,
            hit: None,
            pattern: String::new(),
            message: String::new(),
            is_diff: reader_is_diff,
            quit: false,
        })
    }

    /// Handles one key; errors become the status message. A message lasts
    /// until the next key.
    pub fn key(&mut self, key: KeyEvent) {
        self.message.clear();
        if let Err(error) = self.try_key(key) {
            self.message = error.to_string();
        }
        self.scroll_into_view();
    }

    fn try_key(&mut self, key: KeyEvent) -> Result<()> {
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            self.quit = true;
            return Ok(());
        }
        match &mut self.input {
            Input::Search(text) | Input::Jump(text) => {
                match key.code {
                    KeyCode::Char(c) => text.push(c),
                    KeyCode::Backspace => {
                        text.pop();
                    }
                    KeyCode::Esc => self.input = Input::None,
                    KeyCode::Enter => {
                        let input = std::mem::replace(&mut self.input, Input::None);
                        match input {
                            Input::Search(pattern) => self.start_search(pattern),
                            Input::Jump(id) => self.jump(&id)?,
                            Input::None => {}
                        }
                    }
                    _ => {}
                }
                return Ok(());
            }
            Input::None => {}
        }
        match self.overlay {
            Overlay::Help => {
                self.overlay = Overlay::None;
                return Ok(());
            }
            Overlay::Threads(cursor) => return self.thread_key(cursor, key.code),
            Overlay::Kinds(cursor) => {
                self.kind_key(cursor, key.code);
                return Ok(());
            }
            Overlay::None => {}
        }
        let last = self.rows.rows.len().saturating_sub(1);
        match key.code {
            KeyCode::Char('q') => self.quit = true,
            KeyCode::Esc => {
                if let Some(locating) = self.locating.take() {
                    self.message = format!("stopped finding {}", locating.what);
                } else if let Some(running) = &self.running {
                    running.stop.store(true, Ordering::Relaxed);
                    self.message = "search cancelled".into();
                }
            }
            KeyCode::Up | KeyCode::Char('k') => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => self.selected = (self.selected + 1).min(last),
            KeyCode::PageUp => self.selected = self.selected.saturating_sub(self.page()),
            KeyCode::PageDown => self.selected = (self.selected + self.page()).min(last),
            KeyCode::Home | KeyCode::Char('g') => self.selected = 0,
            KeyCode::End | KeyCode::Char('G') => self.selected = last,
            KeyCode::Enter | KeyCode::Right | KeyCode::Char('l') => self.open()?,
            KeyCode::Left | KeyCode::Char('h') => self.close(),
            KeyCode::Char('/') => self.input = Input::Search(String::new()),
            KeyCode::Char(':') => self.input = Input::Jump(String::new()),
            KeyCode::Char('n') => self.next_hit(true)?,
            KeyCode::Char('N') => self.next_hit(false)?,
            KeyCode::Char(']') => self.next_change(true),
            KeyCode::Char('[') => self.next_change(false),
            KeyCode::Char('t') => self.overlay = Overlay::Threads(0),
            KeyCode::Char('f') => self.overlay = Overlay::Kinds(self.kind_cursor()),
            KeyCode::Char('m') => self.toggle_bookmark(),
            KeyCode::Char('b') => self.next_bookmark()?,
            KeyCode::Char('?') => self.overlay = Overlay::Help,
            _ => {}
        }
        Ok(())
    }

    /// Handles the mouse: the wheel moves, a click selects, a click on the
    /// selected row opens or closes it. `row` is the tree pane's first
    /// screen row.
    pub fn mouse(&mut self, event: MouseEvent, first_row: u16) {
        let result = match event.kind {
            MouseEventKind::ScrollUp => {
                self.selected = self.selected.saturating_sub(3);
                Ok(())
            }
            MouseEventKind::ScrollDown => {
                self.selected = (self.selected + 3).min(self.rows.rows.len().saturating_sub(1));
                Ok(())
            }
            MouseEventKind::Down(_) if event.row >= first_row => {
                let row = self.top + usize::from(event.row - first_row);
                if row >= self.rows.rows.len() {
                    Ok(())
                } else if row == self.selected {
                    if self.rows.rows[row].expanded {
                        self.close();
                        Ok(())
                    } else {
                        self.open()
                    }
                } else {
                    self.selected = row;
                    Ok(())
                }
            }
            _ => Ok(()),
        };
        if let Err(error) = result {
            self.message = error.to_string();
        }
        self.scroll_into_view();
    }

    fn page(&self) -> usize {
        self.height.max(2) - 1
    }

    /// Keeps the selected row on screen.
    pub fn scroll_into_view(&mut self) {
        self.selected = self.selected.min(self.rows.rows.len().saturating_sub(1));
        if self.selected < self.top {
            self.top = self.selected;
        } else if self.selected >= self.top + self.height.max(1) {
            self.top = self.selected + 1 - self.height.max(1);
        }
    }

    fn open(&mut self) -> Result<()> {
        let i = self.selected;
        let Some(row) = self.rows.rows.get(i) else {
            return Ok(());
        };
        match row.kind {
            RowKind::Gap { .. } => {
                self.rows.open_gap(i)?;
            }
            _ if row.expanded => {
                if row.children.at_least() > 0 {
                    self.selected = i + 1;
                }
            }
            _ => {
                self.rows.expand(i)?;
            }
        }
        Ok(())
    }

    /// Collapses the selected row, or goes to its parent row.
    fn close(&mut self) {
        let i = self.selected;
        if self.rows.rows.get(i).is_some_and(|r| r.expanded) {
            self.rows.collapse(i);
            return;
        }
        let depth = self.rows.rows.get(i).map_or(0, |r| r.depth);
        if let Some(parent) = (0..i).rev().find(|&r| self.rows.rows[r].depth < depth) {
            self.selected = parent;
        }
    }

    fn jump(&mut self, text: &str) -> Result<()> {
        let Ok(id) = text.trim().parse::<i32>() else {
            self.message = format!("not an event id: {text:?}");
            return Ok(());
        };
        self.locate(format!("event id {id}"), move |reader| {
            reader.node_by_event(EventId::new(id))
        });
        Ok(())
    }

    /// Selects `node`, expanding what hides it (found in the background).
    fn go_to(&mut self, node: V::Node, what: &str) -> Result<()> {
        self.locate(what.to_string(), move |_| Ok(Some(node)));
        Ok(())
    }

    /// Finds the node `find` names on a thread of its own; [`poll`](Self::poll)
    /// reveals it when found.
    fn locate(
        &mut self,
        what: String,
        find: impl FnOnce(&V) -> Result<Option<V::Node>> + Send + 'static,
    ) {
        // Not `what`: the status line shows that once the node is found.
        self.message = "finding it… (Esc stops)".into();
        self.locating = Some(Locating::start(what, Arc::clone(&self.reader), find));
    }

    /// Reveals the node being found, once it is; true when the screen
    /// changed.
    fn poll_locating(&mut self) -> bool {
        let Some(found) = self.locating.as_ref().and_then(Locating::finished) else {
            return false;
        };
        let Some(locating) = self.locating.take() else {
            return false;
        };
        let Locating {
            what,
            none,
            reader: found_in,
            ..
        } = locating;
        let found = found.and_then(|node| match node {
            // Found in a reader a refresh has replaced: carried over.
            Some(node) if !Arc::ptr_eq(&found_in, &self.reader) => {
                self.reader.resolve_handle(found_in.handle(node)).map(Some)
            }
            node => Ok(node),
        });
        if let Err(error) = found.and_then(|node| match node {
            Some(node) => self.reveal(node, &what),
            None => {
                self.message = none.unwrap_or_else(|| format!("no tracepoint has {what}"));
                Ok(())
            }
        }) {
            self.message = error.to_string();
        }
        self.scroll_into_view();
        true
    }

    /// Selects `node`, expanding what hides it.
    fn reveal(&mut self, node: V::Node, what: &str) -> Result<()> {
        let thread = self.reader.node_thread(node);
        if !self.threads.iter().any(|&(t, shown)| t == thread && shown) {
            self.message = format!("{what} is in a hidden thread (t shows threads)");
            return Ok(());
        }
        if let Some(row) = self.rows.reveal(node)? {
            self.selected = row;
            self.message = what.to_string();
        }
        Ok(())
    }

    fn start_search(&mut self, pattern: String) {
        if pattern.is_empty() {
            return;
        }
        if let Some(running) = self.running.take() {
            running.stop.store(true, Ordering::Relaxed);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let scanned = Arc::new(AtomicU64::new(0));
        let mut options = SearchOptions::new(pattern.clone());
        options.ignore_case = pattern.chars().all(|c| !c.is_uppercase());
        options.text = true;
        options.threads = Some(self.shown_threads());
        options.kinds = self.kind.map(|k| vec![k]);
        options.max = MAX_HITS;
        options.stop = Some(stop.clone());
        let total = self
            .reader
            .reader()
            .count_tracepoints()
            .map_or(0, |c| c.values().sum());
        let (sender, done) = channel();
        let reader = Arc::clone(&self.reader);
        let counter = scanned.clone();
        std::thread::spawn(move || {
            let result = options.search(&*reader, &|n| {
                counter.fetch_add(n, Ordering::Relaxed);
            });
            let _ = sender.send(result);
        });
        self.running = Some(Running {
            pattern,
            stop,
            scanned,
            total,
            done,
            reader: Arc::clone(&self.reader),
        });
    }

    /// Hands the rows' uncounted calls to the counting thread and takes its
    /// counts and a finished search's hits; true when the screen changed.
    pub fn poll(&mut self) -> bool {
        for node in self.rows.take_uncounted() {
            self.counter.count(node);
        }
        let mut changed = false;
        for (node, count) in self.counter.finished() {
            match count {
                Ok(count) => changed |= self.rows.set_count(node, count),
                Err(error) => {
                    self.message = error.to_string();
                    changed = true;
                }
            }
        }
        changed | self.poll_search() | self.poll_follow() | self.poll_locating()
    }

    /// Follows the trace with `follower`: its refreshed readers replace
    /// this one as the trace grows.
    pub fn follow(&mut self, follower: Follower) {
        self.follower = Some(follower);
        self.following = Some(0);
        self.message.clear();
    }

    /// Takes the follower's refreshed readers (the latest replaces the
    /// reader); true when the screen changed.
    fn poll_follow(&mut self) -> bool {
        let Some(follower) = &self.follower else {
            return false;
        };
        let mut latest = None;
        let mut changed = false;
        for refresh in follower.finished() {
            changed = true;
            match refresh {
                Ok((reader, report)) => {
                    let reader = V::over(reader);
                    *self.following.get_or_insert(0) += report.new_blocks;
                    if let Some(why) = report.reopened {
                        let why = why.to_string();
                        let why = match why.as_str() {
                            "the index is complete or unreadable" => {
                                "the recording finished (its index is complete), or the index \
                                 cannot be read"
                            }
                            why => why,
                        };
                        self.message = format!("read again from the start: {why}");
                    }
                    latest = Some(reader);
                }
                Err(error) => self.message = error.to_string(),
            }
        }
        if let Some(reader) = latest
            && let Err(error) = self.follow_to(reader)
        {
            self.message = error.to_string();
        }
        changed
    }

    /// Moves the viewer onto `reader`, a refresh of its reader: the rows
    /// are made again, the threads and calls that were expanded expanded
    /// again and the selected row selected again (nodes carried over by
    /// their handles); bookmarks and hits carried over too. Child counts
    /// are the new reader's: calls not finished before show their new
    /// children.
    fn follow_to(&mut self, reader: Arc<V>) -> Result<()> {
        let old = std::mem::replace(&mut self.reader, Arc::clone(&reader));
        let moved = |node: V::Node| reader.resolve_handle(old.handle(node)).ok();
        // Threads that started writing since are shown.
        for thread in reader.thread_ids() {
            if !self.threads.iter().any(|&(t, _)| t == thread) {
                self.threads.push((thread, true));
            }
        }
        self.threads.sort_by_key(|&(t, _)| t);
        self.counter = Counter::new(Arc::clone(&reader));
        self.remake_rows(moved)?;
        self.bookmarks = self.bookmarks.iter().filter_map(|&b| moved(b)).collect();
        let hits = std::mem::take(&mut self.hits);
        self.hits = self.moved_hits(&old, hits);
        self.scroll_into_view();
        Ok(())
    }

    /// Makes the rows again for the reader and the shown threads: the
    /// threads and calls that were expanded are expanded again and the
    /// selected row selected again, each node through `moved` (`None`: it
    /// stays closed).
    fn remake_rows(&mut self, moved: impl Fn(V::Node) -> Option<V::Node>) -> Result<()> {
        let (mut threads, mut nodes) = (Vec::new(), Vec::new());
        for row in self.rows.rows.iter().filter(|row| row.expanded) {
            match row.kind {
                RowKind::Thread(thread) => threads.push(thread),
                RowKind::Node { node, .. } => nodes.push(node),
                RowKind::Gap { .. } => {}
            }
        }
        let selected = self.rows.rows.get(self.selected).map(|row| row.kind);
        let offset = self.selected.saturating_sub(self.top);
        self.rows = Rows::new(Arc::clone(&self.reader), &self.shown_threads())?;
        for thread in threads {
            if let Some(row) = self.rows.thread_row(thread) {
                self.rows.expand(row)?;
            }
        }
        for node in nodes.into_iter().filter_map(&moved) {
            // A node that cannot be shown again stays closed.
            if let Ok(Some(row)) = self.rows.reveal(node)
                && !self.rows.rows[row].expanded
            {
                self.rows.expand(row)?;
            }
        }
        self.selected = match selected {
            Some(RowKind::Thread(thread)) => self.rows.thread_row(thread).unwrap_or(0),
            Some(RowKind::Node { node, .. }) => moved(node)
                .and_then(|node| self.rows.reveal(node).ok().flatten())
                .unwrap_or(0),
            _ => self.selected,
        };
        self.top = self.selected.saturating_sub(offset);
        Ok(())
    }

    /// `hits`, found by `from`, as the current reader's (dropped when
    /// there are more than [`MOVED_HITS`]).
    fn moved_hits(&mut self, from: &V, mut hits: Vec<Hit<V::Node>>) -> Vec<Hit<V::Node>> {
        if hits.len() > MOVED_HITS {
            self.message = "search hits dropped as the trace grew (/ searches again)".into();
            self.hit = None;
            return Vec::new();
        }
        hits.retain_mut(|hit| {
            let moved = self.reader.resolve_handle(from.handle(hit.node));
            moved.map(|node| hit.node = node).is_ok()
        });
        hits
    }

    /// Takes a finished search's hits; true when the screen changed.
    fn poll_search(&mut self) -> bool {
        let Some(running) = &self.running else {
            return false;
        };
        let result = match running.done.try_recv() {
            Ok(result) => result,
            Err(TryRecvError::Empty) => return true,
            Err(TryRecvError::Disconnected) => Err(tracetree::Error::Internal(
                "the search stopped without an answer".into(),
            )),
        };
        let running = self.running.take().expect("checked above");
        match result {
            Ok(found) => {
                self.pattern = running.pattern;
                self.hits = if Arc::ptr_eq(&running.reader, &self.reader) {
                    found.hits
                } else {
                    self.moved_hits(&running.reader, found.hits)
                };
                self.hits_total = found.total;
                self.hit = None;
                if self.hits.is_empty() {
                    self.message = format!("no hits for {:?}", self.pattern);
                } else if let Err(error) = self.next_hit(true) {
                    self.message = error.to_string();
                }
            }
            Err(error) => self.message = error.to_string(),
        }
        self.scroll_into_view();
        true
    }

    fn next_hit(&mut self, forward: bool) -> Result<()> {
        if self.hits.is_empty() {
            self.message = "no search hits (/ searches)".into();
            return Ok(());
        }
        let n = self.hits.len();
        let next = match self.hit {
            None => 0,
            Some(i) if forward => (i + 1) % n,
            Some(i) => (i + n - 1) % n,
        };
        self.hit = Some(next);
        let node = self.hits[next].node;
        let shown = if self.hits_total > n as u64 {
            format!("{n} kept of {}", self.hits_total)
        } else {
            n.to_string()
        };
        self.go_to(
            node,
            &format!("hit {} of {shown} for {:?}", next + 1, self.pattern),
        )
    }

    /// Goes to the next (or previous) change of a diff, in the shown
    /// threads' pre-order from the selected row: a tracepoint removed,
    /// added or edited, found in the background and revealed.
    fn next_change(&mut self, forward: bool) {
        if !self.is_diff {
            self.message = "not a diff trace: ] and [ go to the changes of one \
                            (`tracetree diff` writes diffs)"
                .into();
            return;
        }
        // The selected row's tracepoint, or its thread's; a gap row goes
        // by the row above it.
        let at = self.rows.rows[..=self.selected.min(self.rows.rows.len().saturating_sub(1))]
            .iter()
            .rev()
            .find_map(|row| match row.kind {
                RowKind::Thread(thread) => Some((thread, None)),
                RowKind::Node { node, .. } => Some((self.reader.node_thread(node), Some(node))),
                RowKind::Gap { .. } => None,
            });
        let Some((thread, node)) = at else {
            return;
        };
        let threads = self.shown_threads();
        let (what, none) = match forward {
            true => ("next change", "no change after this row"),
            false => ("previous change", "no change before this row"),
        };
        self.locate(what.to_string(), move |reader| {
            change_from(reader, &threads, thread, node, forward)
        });
        if let Some(locating) = &mut self.locating {
            locating.none = Some(none.to_string());
        }
    }

    fn thread_key(&mut self, cursor: usize, code: KeyCode) -> Result<()> {
        let last = self.threads.len().saturating_sub(1);
        match code {
            KeyCode::Up | KeyCode::Char('k') => {
                self.overlay = Overlay::Threads(cursor.saturating_sub(1))
            }
            KeyCode::Down | KeyCode::Char('j') => {
                self.overlay = Overlay::Threads((cursor + 1).min(last))
            }
            KeyCode::Char(' ') => {
                if let Some(entry) = self.threads.get_mut(cursor) {
                    entry.1 = !entry.1;
                }
            }
            KeyCode::Enter | KeyCode::Esc | KeyCode::Char('t') | KeyCode::Char('q') => {
                self.overlay = Overlay::None;
                let shown = self.shown_threads();
                let rows_shown = self.rows.rows.iter().filter_map(|row| match row.kind {
                    RowKind::Thread(thread) => Some(thread),
                    _ => None,
                });
                if !rows_shown.eq(shown.iter().copied()) {
                    // A hidden thread's rows go; the others stay as they were.
                    self.remake_rows(Some)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn shown_threads(&self) -> Vec<ThreadId> {
        self.threads
            .iter()
            .filter(|(_, shown)| *shown)
            .map(|(t, _)| *t)
            .collect()
    }

    /// The kind chooser's row of the kind searches keep now.
    fn kind_cursor(&self) -> usize {
        self.kind.map_or(0, |kind| {
            TracepointType::ALL
                .iter()
                .position(|&k| k == kind)
                .map_or(0, |i| i + 1)
        })
    }

    fn kind_key(&mut self, cursor: usize, code: KeyCode) {
        let last = TracepointType::ALL.len();
        match code {
            KeyCode::Up | KeyCode::Char('k') => {
                self.overlay = Overlay::Kinds(cursor.saturating_sub(1))
            }
            KeyCode::Down | KeyCode::Char('j') => {
                self.overlay = Overlay::Kinds((cursor + 1).min(last))
            }
            KeyCode::Home | KeyCode::Char('g') => self.overlay = Overlay::Kinds(0),
            KeyCode::End | KeyCode::Char('G') => self.overlay = Overlay::Kinds(last),
            KeyCode::Enter | KeyCode::Char(' ') => {
                self.overlay = Overlay::None;
                self.kind = cursor
                    .checked_sub(1)
                    .and_then(|i| TracepointType::ALL.get(i).copied());
            }
            KeyCode::Esc | KeyCode::Char('f') | KeyCode::Char('q') => self.overlay = Overlay::None,
            _ => {}
        }
    }

    fn toggle_bookmark(&mut self) {
        let Some(node) = self.rows.rows.get(self.selected).and_then(|r| r.node()) else {
            return;
        };
        if let Some(i) = self.bookmarks.iter().position(|&b| b == node) {
            self.bookmarks.remove(i);
            self.message = "bookmark removed".into();
        } else {
            self.bookmarks.push(node);
            self.message = format!("bookmark {} set (b goes to the next)", self.bookmarks.len());
        }
    }

    fn next_bookmark(&mut self) -> Result<()> {
        if self.bookmarks.is_empty() {
            self.message = "no bookmarks (m sets one)".into();
            return Ok(());
        }
        let current = self.rows.rows.get(self.selected).and_then(|r| r.node());
        let next = current
            .and_then(|c| self.bookmarks.iter().position(|&b| b == c))
            .map_or(0, |i| (i + 1) % self.bookmarks.len());
        let node = self.bookmarks[next];
        self.go_to(
            node,
            &format!("bookmark {} of {}", next + 1, self.bookmarks.len()),
        )
    }
}

/// The first change of a diff (a tracepoint removed, added or edited)
/// after `node` (`None`: `thread`'s row) in `threads`' pre-order, or with
/// `forward` false the last before it; `None` when there is none.
fn change_from<V: Navigate>(
    reader: &V,
    threads: &[ThreadId],
    thread: ThreadId,
    mut node: Option<V::Node>,
    forward: bool,
) -> Result<Option<V::Node>> {
    let changes = [
        DiffStatus::Removed,
        DiffStatus::Added,
        DiffStatus::EditedOld,
        DiffStatus::EditedNew,
    ];
    let mut options = SearchOptions::new("");
    options.diff = Some(changes.to_vec());
    let Some(mut at) = threads.iter().position(|&t| t == thread) else {
        return Ok(None);
    };
    let mut started = false;
    loop {
        let from = match (forward, node) {
            (true, None) => Some(SearchFrom::ThreadStart(threads[at])),
            (true, Some(after)) => Some(SearchFrom::After(after)),
            (false, Some(before)) => Some(SearchFrom::Before(before)),
            (false, None) if started => Some(SearchFrom::ThreadEnd(threads[at])),
            // Nothing lies before a thread's own row in it.
            (false, None) => None,
        };
        let found = match from {
            Some(from) => from.find(reader, &options)?,
            None => None,
        };
        started = true;
        if let Some(hit) = found {
            return Ok(Some(hit.node));
        }
        // On to the thread after, from its start; or the thread before,
        // from its end.
        node = None;
        if forward {
            at += 1;
            if at == threads.len() {
                return Ok(None);
            }
        } else {
            let Some(before) = at.checked_sub(1) else {
                return Ok(None);
            };
            at = before;
        }
    }
}
