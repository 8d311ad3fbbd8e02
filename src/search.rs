//! Finding tracepoints: every tracepoint whose name or printed line holds a
//! pattern, with the path of calls above it.
//!
//! Each thread is walked once in pre-order, the threads in parallel
//! (`Navigate`'s walk, internal): on the lazy reader, for names, a names
//! walk (headers, plus the id each call or access names, read from its
//! first fields; a tracepoint is decoded only when it is a hit, with the
//! call above it for its line); for lines, and on the post-processed view,
//! every tracepoint decoded. What a tracepoint is matched against:
//!
//! - its **name**: a call's `Class.method`, a field access's `Class.field`,
//!   a local variable's name. Names are matched once per id and the answer
//!   kept, so the scan costs a table lookup a tracepoint;
//! - with [`SearchOptions::text`], also its **line** as `print` shows it
//!   (arguments, values, results), rendered for every tracepoint.
//!
//! An empty pattern matches every tracepoint. [`SearchOptions::kinds`] and,
//! in a diff trace, [`SearchOptions::diff`] (statuses read from each
//! header) keep only some: `diff` with an empty pattern lists the changes.
//!
//! The walker keeps the open calls above the current tracepoint (their
//! names and what they tell their children about printing) so a hit comes
//! with its path from the thread's top. [`SearchOptions::search_each`]
//! hands each hit over as it is found and keeps none: its memory is
//! bounded by the nesting and the names, never by the hits;
//! [`SearchOptions::search`] gathers each thread's first
//! [`SearchOptions::max`] hits over it and counts the rest.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rustc_hash::FxHashMap;

use crate::common::{EventId, FieldId, MethodId, ThreadId, VariableId};
use crate::error::{Error, Result};
use crate::format::TraceContext;
use crate::model::{
    DiffStatus, Footer, Tracepoint, TracepointBody, TracepointHeader, TracepointName,
    TracepointType,
};
use crate::print::{Parent, TextFormatter};
use crate::read::{LazyNode, LazyTraceReader, VisitDetail, WalkDetail, WalkNode};
use crate::tree::{Navigate, Postprocessed, TraceTree};

/// What to look for.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SearchOptions {
    /// The text to find.
    pub pattern: String,
    /// Compare without regard to case (ASCII and Unicode lower case).
    pub ignore_case: bool,
    /// Also match the printed line of every tracepoint, not only its name.
    pub text: bool,
    /// Only these threads (all when `None`).
    pub threads: Option<Vec<ThreadId>>,
    /// Only these kinds of tracepoint (all when `None`).
    pub kinds: Option<Vec<TracepointType>>,
    /// Only tracepoints with these diff statuses (all when `None`;
    /// [`DiffStatus::changes_named`] gives the statuses of `added`,
    /// `removed` and `edited`). A search with it is an error on a trace
    /// that is not a diff ([`LazyTraceReader::is_diff`]).
    pub diff: Option<Vec<DiffStatus>>,
    /// Hits kept (the rest are counted): by [`SearchOptions::search`] in all, by
    /// [`SearchOptions::search_each`] handed over in each thread.
    pub max: usize,
    /// Set by another thread to end the search early (what was found so
    /// far is returned).
    pub stop: Option<Arc<AtomicBool>>,
}

impl SearchOptions {
    /// Options finding `pattern` in names, case-sensitively, in every
    /// thread and kind, keeping 1,000 hits.
    pub fn new(pattern: impl Into<String>) -> Self {
        SearchOptions {
            pattern: pattern.into(),
            ignore_case: false,
            text: false,
            threads: None,
            kinds: None,
            diff: None,
            max: 1000,
            stop: None,
        }
    }
}

/// One tracepoint found, as a node of the tree searched (the lazy
/// reader's by default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit<N = LazyNode> {
    /// Its thread.
    pub thread: ThreadId,
    /// Its event id.
    pub event: EventId,
    /// The node, for the reader that found it.
    pub node: N,
    /// Its depth in the thread's tree (0 at the top).
    pub depth: usize,
    /// The names of the calls (or loops) above it, outermost first.
    pub path: Vec<Arc<str>>,
    /// Its line as `print` shows it.
    pub line: String,
}

/// What a search found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchResult<N = LazyNode> {
    /// The hits kept: threads ascending, each in event order (none from
    /// [`SearchOptions::search_each`], which hands them over).
    pub hits: Vec<Hit<N>>,
    /// Every hit, kept or not.
    pub total: u64,
    /// Tracepoints looked at.
    pub scanned: u64,
}

impl<N> Default for SearchResult<N> {
    fn default() -> Self {
        SearchResult {
            hits: Vec::new(),
            total: 0,
            scanned: 0,
        }
    }
}

use crate::tree::{SearchStep, Walk};

impl Walk for LazyTraceReader {
    fn walk_searching<S: Send>(
        &self,
        text: bool,
        init: impl Fn(ThreadId) -> S + Sync,
        f: impl Fn(&mut S, SearchStep<'_, LazyNode>) -> Result<bool> + Sync,
    ) -> Result<Vec<S>> {
        // Names alone need only the ids calls and accesses name, which the
        // names walk reads without decoding the rest.
        let detail = if text {
            WalkDetail::Full
        } else {
            WalkDetail::Names
        };
        self.walk_threads(detail, init, |state, walked| {
            let step = match walked.tracepoint {
                Some(tracepoint) => SearchStep::Visited {
                    node: walked.node,
                    depth: walked.depth,
                    tracepoint,
                    footer: walked.footer,
                },
                None => SearchStep::Named {
                    node: walked.node,
                    walked,
                },
            };
            f(state, step)
        })
    }
}

impl<T: Navigate> Walk for Postprocessed<T> {
    fn walk_searching<S: Send>(
        &self,
        _text: bool,
        init: impl Fn(ThreadId) -> S + Sync,
        f: impl Fn(&mut S, SearchStep<'_, Self::Node>) -> Result<bool> + Sync,
    ) -> Result<Vec<S>> {
        use rayon::prelude::*;
        let detail = VisitDetail {
            child_counts: false,
            leaf_bodies: true,
        };
        self.thread_ids()
            .into_par_iter()
            .map(|thread| {
                let mut state = init(thread);
                let roots = self.roots(thread)?;
                let walked = self.walk_visit(&roots, None, detail, |visit| {
                    let crate::read::Visit::Node {
                        node,
                        depth,
                        tracepoint,
                        footer,
                        ..
                    } = visit
                    else {
                        return Ok(());
                    };
                    let step = SearchStep::Visited {
                        node,
                        depth,
                        tracepoint,
                        footer,
                    };
                    match f(&mut state, step)? {
                        true => Ok(()),
                        false => Err(Error::Cancelled(THREAD_DONE)),
                    }
                });
                match walked {
                    Err(Error::Cancelled(THREAD_DONE)) | Ok(()) => Ok(state),
                    Err(error) => Err(error),
                }
            })
            .collect()
    }
}

impl<T: Walk> Walk for &T {
    fn walk_searching<S: Send>(
        &self,
        text: bool,
        init: impl Fn(ThreadId) -> S + Sync,
        f: impl Fn(&mut S, SearchStep<'_, Self::Node>) -> Result<bool> + Sync,
    ) -> Result<Vec<S>> {
        (**self).walk_searching(text, init, f)
    }
}

impl<T: Walk + Send> Walk for Arc<T> {
    fn walk_searching<S: Send>(
        &self,
        text: bool,
        init: impl Fn(ThreadId) -> S + Sync,
        f: impl Fn(&mut S, SearchStep<'_, Self::Node>) -> Result<bool> + Sync,
    ) -> Result<Vec<S>> {
        (**self).walk_searching(text, init, f)
    }
}

/// What ends one thread's walk of a view early.
const THREAD_DONE: &str = "the search is done with the thread";

impl SearchOptions {
    /// Finds what these options ask for in `reader`'s trace, keeping the
    /// first [`max`](Self::max) hits. `progress` receives the tracepoints
    /// scanned, in steps.
    pub fn search<T: Navigate>(
        &self,
        reader: &T,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<SearchResult<T::Node>> {
        search(reader, self, progress)
    }

    /// [`search`](Self::search) as a stream: each hit is handed to
    /// `on_hit` as soon as its thread's walk finds it (from the walking
    /// threads; in event order within a thread, in no order across
    /// threads), up to [`max`](Self::max) hits per thread, and none is
    /// kept: whatever the number of hits, the search holds the open calls
    /// above the tracepoint it is at and the names met. A caller bounds
    /// its own memory by what `on_hit` does (a bounded queue makes the
    /// walk wait for its reader).
    pub fn search_each<T: Navigate>(
        &self,
        reader: &T,
        progress: &(dyn Fn(u64) + Sync),
        on_hit: &(dyn Fn(Hit<T::Node>) + Sync),
    ) -> Result<SearchResult<T::Node>> {
        search_each(reader, self, progress, on_hit)
    }
}

/// [`SearchOptions::search`].
fn search<T: Navigate>(
    reader: &T,
    options: &SearchOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<SearchResult<T::Node>> {
    // Each thread's hits, in event order; threads ascending at the end.
    let per_thread: Mutex<BTreeMap<ThreadId, Vec<Hit<T::Node>>>> = Mutex::new(BTreeMap::new());
    let counts = search_each(reader, options, progress, &|hit| {
        let mut per_thread = per_thread.lock().unwrap_or_else(PoisonError::into_inner);
        per_thread.entry(hit.thread).or_default().push(hit);
    })?;
    let per_thread = per_thread
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    let mut hits = Vec::new();
    for (_, thread) in per_thread {
        let room = options.max.saturating_sub(hits.len());
        hits.extend(thread.into_iter().take(room));
    }
    Ok(SearchResult { hits, ..counts })
}

/// [`SearchOptions::search_each`].
fn search_each<T: Navigate>(
    reader: &T,
    options: &SearchOptions,
    progress: &(dyn Fn(u64) + Sync),
    on_hit: &(dyn Fn(Hit<T::Node>) + Sync),
) -> Result<SearchResult<T::Node>> {
    if let Some(threads) = &options.threads {
        crate::tree::select_threads(&reader.thread_ids(), Some(threads))?;
    }
    let wanted = Wanted::of(reader, options)?;
    let pattern = Pattern::new(&options.pattern, options.ignore_case);
    let wanted_thread =
        |thread: ThreadId| options.threads.as_ref().is_none_or(|t| t.contains(&thread));
    let reported = AtomicU64::new(0);
    let per_thread = reader.walk_searching(
        options.text,
        |thread| ThreadSearch::new(reader, thread, wanted_thread(thread), Some(on_hit)),
        |search, walked| {
            if !search.wanted || stopped(options) {
                return Ok(false);
            }
            search.scanned += 1;
            if search.scanned % PROGRESS_STEP == 0 {
                reported.fetch_add(PROGRESS_STEP, Ordering::Relaxed);
                progress(PROGRESS_STEP);
            }
            match walked {
                SearchStep::Named { node, walked } => {
                    search.step_named(node, walked, &pattern, options, &wanted)?
                }
                SearchStep::Visited {
                    node,
                    depth,
                    tracepoint,
                    footer,
                } => search.step(node, depth, tracepoint, footer, &pattern, options, &wanted)?,
            }
            Ok(true)
        },
    )?;
    let mut counts = SearchResult::<T::Node>::default();
    for thread in per_thread {
        counts.total += thread.total;
        counts.scanned += thread.scanned;
    }
    progress(counts.scanned - reported.load(Ordering::Relaxed));
    Ok(counts)
}

/// Where [`SearchFrom::find`] starts looking, and which way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchFrom<N = LazyNode> {
    /// At the first tracepoint of a thread, looking forward.
    ThreadStart(ThreadId),
    /// Just after a node (its first child, or what follows its subtree),
    /// looking forward: after the last hit, to resume.
    After(N),
    /// Just before a node, looking back: its previous siblings' subtrees
    /// and its ancestors, nearest first.
    Before(N),
    /// At the last tracepoint of a thread in pre-order (itself looked at
    /// first), looking back.
    ThreadEnd(ThreadId),
}

impl<N: Copy + Send + Sync + PartialEq> SearchFrom<N> {
    /// The nearest tracepoint from this place in its thread's pre-order that
    /// `options` asks for (its `threads` and `max` aside), or `None` when the
    /// thread holds no more that way, or when `options.stop` was set (the
    /// caller knows which). Only that thread is looked at.
    ///
    /// Forward, the nodes are visited through
    /// [`LazyTraceReader::following`], so a find-next costs the nodes between
    /// two hits, not a scan of the trace. Back, each step costs a node's place
    /// among its siblings ([`LazyTraceReader::position`]) or a call's last
    /// child, and each node looked at is matched with the calls above it, as
    /// forward.
    pub fn find<T: Navigate<Node = N>>(
        self,
        reader: &T,
        options: &SearchOptions,
    ) -> Result<Option<Hit<N>>> {
        find(reader, self, options)
    }
}

/// [`SearchFrom::find`].
fn find<T: Navigate>(
    reader: &T,
    from: SearchFrom<T::Node>,
    options: &SearchOptions,
) -> Result<Option<Hit<T::Node>>> {
    let (thread, nodes, above) = match from {
        SearchFrom::Before(node) => {
            let above = reader.ancestors(node)?;
            return find_previous(
                reader,
                reader.node_thread(node),
                above,
                node,
                false,
                options,
            );
        }
        SearchFrom::ThreadEnd(thread) => {
            let roots = reader.root_count(thread)?;
            let Some(&root) = reader
                .roots_range(thread, roots.saturating_sub(1), 1)?
                .first()
            else {
                return Ok(None);
            };
            let mut above = Vec::new();
            let last = last_below(reader, root, &mut above)?;
            return find_previous(reader, thread, above, last, true, options);
        }
        SearchFrom::ThreadStart(thread) => (thread, reader.thread_nodes(thread), Vec::new()),
        SearchFrom::After(node) => {
            let mut above = reader.ancestors(node)?;
            above.push(node);
            (reader.node_thread(node), reader.following(node)?, above)
        }
    };
    let (pattern, wanted, options) = one_hit(reader, options)?;
    let mut search = ThreadSearch::new(reader, thread, true, None);
    // The path down to the start, for the hits' paths and parents, is
    // stepped through without looking for hits.
    let above = above
        .into_iter()
        .enumerate()
        .map(|(d, n)| Ok((n, d, false)));
    let nodes = nodes.map(|step| step.map(|(node, depth)| (node, depth, true)));
    for step in above.chain(nodes) {
        if stopped(&options) {
            return Ok(None);
        }
        let (node, depth, looking) = step?;
        let wanted = if looking { &wanted } else { &Wanted::NOTHING };
        if let Some(hit) = search.step_node(node, depth, &pattern, &options, wanted)? {
            return Ok(Some(hit));
        }
    }
    Ok(None)
}

/// What a find next or previous matches with: `options`' pattern,
/// kinds and statuses, and `options` asking for one hit.
fn one_hit<T: Navigate>(
    reader: &T,
    options: &SearchOptions,
) -> Result<(Pattern, Wanted, SearchOptions)> {
    let wanted = Wanted::of(reader, options)?;
    let pattern = Pattern::new(&options.pattern, options.ignore_case);
    let options = SearchOptions {
        max: 1,
        ..options.clone()
    };
    Ok((pattern, wanted, options))
}

/// [`SearchFrom::find`] looking back in `thread` from `at` (looked at first when
/// `look`), `above` holding the containers above it, outermost first.
fn find_previous<T: Navigate>(
    reader: &T,
    thread: ThreadId,
    mut above: Vec<T::Node>,
    mut at: T::Node,
    mut look: bool,
    options: &SearchOptions,
) -> Result<Option<Hit<T::Node>>> {
    let (pattern, wanted, options) = one_hit(reader, options)?;
    loop {
        if stopped(&options) {
            return Ok(None);
        }
        if !look {
            let index = reader.position(at)?;
            if index == 0 {
                match above.pop() {
                    Some(parent) => at = parent,
                    None => return Ok(None),
                }
            } else {
                let previous = match above.last() {
                    Some(&parent) => reader.children_range(parent, index - 1, 1)?,
                    None => reader.roots_range(thread, index - 1, 1)?,
                };
                let sibling = previous.into_iter().next().ok_or_else(|| {
                    Error::internal(format!("no sibling {} before a node at {index}", index - 1))
                })?;
                at = last_below(reader, sibling, &mut above)?;
            }
        }
        look = false;
        let mut search = ThreadSearch::new(reader, thread, true, None);
        let path = above
            .iter()
            .enumerate()
            .map(|(depth, &node)| (node, depth, false));
        for (node, depth, looking) in path.chain([(at, above.len(), true)]) {
            let wanted = if looking { &wanted } else { &Wanted::NOTHING };
            if let Some(hit) = search.step_node(node, depth, &pattern, &options, wanted)? {
                return Ok(Some(hit));
            }
        }
    }
}

/// The last node of `node`'s subtree in pre-order, the containers from
/// `node` down to it pushed onto `above`.
fn last_below<T: Navigate>(
    reader: &T,
    mut node: T::Node,
    above: &mut Vec<T::Node>,
) -> Result<T::Node> {
    while let Some(child) = reader.last_child(node)? {
        above.push(node);
        node = child;
    }
    Ok(node)
}

/// Whether `options.stop` was set.
fn stopped(options: &SearchOptions) -> bool {
    options
        .stop
        .as_ref()
        .is_some_and(|stop| stop.load(Ordering::Relaxed))
}

/// Which tracepoints a search looks at, by kind and diff status.
struct Wanted {
    /// By kind number.
    kinds: [bool; 12],
    /// By diff status, its number plus one.
    statuses: [bool; 6],
}

impl Wanted {
    /// None at all: the steps down a path to where a find starts.
    const NOTHING: Wanted = Wanted {
        kinds: [false; 12],
        statuses: [false; 6],
    };

    /// The kinds and statuses `options` keeps; an error when it asks for
    /// statuses of a trace that is not a diff.
    fn of(reader: &impl Navigate, options: &SearchOptions) -> Result<Self> {
        let mut kinds = [options.kinds.is_none(); 12];
        for kind in options.kinds.iter().flatten() {
            kinds[*kind as usize] = true;
        }
        Ok(Wanted {
            kinds,
            statuses: wanted_statuses(reader, options.diff.as_deref())?,
        })
    }

    fn wants(&self, header: &TracepointHeader) -> bool {
        self.kinds[header.tracepoint_type as usize]
            && self.statuses[status_place(header.diff_status)]
    }
}

/// Which diff statuses `diff` keeps, by [`status_place`] (all when
/// `None`); an error when it names some and `reader`'s trace is not a
/// diff.
pub(crate) fn wanted_statuses(
    reader: &impl Navigate,
    diff: Option<&[DiffStatus]>,
) -> Result<[bool; 6]> {
    let Some(diff) = diff else {
        return Ok([true; 6]);
    };
    if !reader.is_diff()? {
        return Err(not_a_diff());
    }
    let mut statuses = [false; 6];
    for status in diff {
        statuses[status_place(*status)] = true;
    }
    Ok(statuses)
}

/// The error of a filter by diff status on a trace that is not a diff.
pub(crate) fn not_a_diff() -> Error {
    Error::Unsupported {
        path: None,
        expected: "a diff trace",
        found: "its tracepoints carry no diff status (`tracetree diff` writes diffs)".into(),
    }
}

/// A diff status's place in a table of six.
pub(crate) fn status_place(status: DiffStatus) -> usize {
    (status as i8 + 1) as usize
}

/// The tracepoints that name something: a method, a field, a local.
const NAMED: [TracepointType; 5] = [
    TracepointType::MethodCall,
    TracepointType::ReadField,
    TracepointType::WriteField,
    TracepointType::ReadLocal,
    TracepointType::WriteLocal,
];

/// Tracepoints scanned between progress reports.
const PROGRESS_STEP: u64 = 1 << 16;

/// The pattern, folded to lower case when the case is ignored.
struct Pattern {
    text: String,
    ignore_case: bool,
}

impl Pattern {
    fn new(text: &str, ignore_case: bool) -> Self {
        Pattern {
            text: if ignore_case {
                text.to_lowercase()
            } else {
                text.to_string()
            },
            ignore_case,
        }
    }

    /// Whether it is empty, which every tracepoint matches.
    fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    fn is_in(&self, haystack: &str) -> bool {
        if !self.ignore_case {
            haystack.contains(&self.text)
        } else if self.text.is_ascii() && haystack.is_ascii() {
            // Both ASCII: no character lowers to another width, so the
            // bytes compare in place, without a lowered copy per line.
            contains_ignoring_ascii_case(haystack.as_bytes(), self.text.as_bytes())
        } else {
            haystack.to_lowercase().contains(&self.text)
        }
    }
}

/// Whether `needle` (lower case) occurs in `haystack`, ASCII letters of
/// either case matching.
fn contains_ignoring_ascii_case(haystack: &[u8], needle: &[u8]) -> bool {
    let Some((&first, rest)) = needle.split_first() else {
        return true;
    };
    let (lower, upper) = (first, first.to_ascii_uppercase());
    let mut from = 0;
    while let Some(found) = memchr::memchr2(lower, upper, &haystack[from..]) {
        let start = from + found;
        let Some(candidate) = haystack.get(start + 1..start + needle.len()) else {
            return false;
        };
        if candidate.eq_ignore_ascii_case(rest) {
            return true;
        }
        from = start + 1;
    }
    false
}

/// What a tracepoint is named by, as an id of its own kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum NameKey {
    Method(MethodId),
    Field(FieldId),
    Variable(VariableId),
    /// A container without a name (a loop, an iteration), for paths.
    Kind(TracepointType),
}

/// What an open container tells its children about printing: known, or
/// to be read from the container when a hit needs it.
#[derive(Debug, Clone, Copy)]
enum ParentOf<N> {
    Known(Parent),
    Node(N),
}

/// One thread's walk.
struct ThreadSearch<'c, T: TraceTree> {
    reader: &'c T,
    context: &'c TraceContext,
    thread: ThreadId,
    wanted: bool,
    formatter: TextFormatter<'c>,
    /// Names met, with whether each holds the pattern, and their places
    /// by id.
    names: Vec<(Arc<str>, bool)>,
    name_of: FxHashMap<NameKey, u32>,
    /// The open nodes above the current one: name (a place in `names`),
    /// what they tell their children.
    open: Vec<(u32, ParentOf<T::Node>)>,
    line: String,
    /// Hits handed over (at most `max`).
    handed: usize,
    total: u64,
    scanned: u64,
    /// Handed each hit, as it is found; without it, the hit is kept in
    /// `found` (a find's one hit).
    on_hit: Option<&'c (dyn Fn(Hit<T::Node>) + Sync)>,
    found: Option<Hit<T::Node>>,
}

impl<'c, T: TraceTree> ThreadSearch<'c, T> {
    fn new(
        reader: &'c T,
        thread: ThreadId,
        wanted: bool,
        on_hit: Option<&'c (dyn Fn(Hit<T::Node>) + Sync)>,
    ) -> Self {
        let context = reader.context();
        ThreadSearch {
            reader,
            context,
            thread,
            wanted,
            formatter: TextFormatter::new(context, false),
            names: Vec::new(),
            name_of: FxHashMap::default(),
            open: Vec::new(),
            line: String::new(),
            handed: 0,
            total: 0,
            scanned: 0,
            on_hit,
            found: None,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn step(
        &mut self,
        node: T::Node,
        depth: usize,
        tracepoint: &Tracepoint<'_>,
        footer: Option<&Footer<'_>>,
        pattern: &Pattern,
        options: &SearchOptions,
        wanted: &Wanted,
    ) -> Result<()> {
        self.open.truncate(depth);
        let (name, named_match) = self.name(tracepoint, pattern);
        let kind = tracepoint.tracepoint_type();
        if wanted.wants(&tracepoint.header) {
            let named_match = named_match || pattern.is_empty();
            let mut rendered = false;
            if !named_match && options.text {
                self.render(tracepoint, footer)?;
                rendered = true;
            }
            if named_match || (rendered && pattern.is_in(&self.line)) {
                self.hit(node, depth, tracepoint, footer, options, rendered)?;
            }
        }
        if kind.is_container() {
            let name = name.unwrap_or_else(|| self.place(NameKey::Kind(kind), pattern));
            self.open
                .push((name, ParentOf::Known(Parent::of(tracepoint))));
        }
        Ok(())
    }

    /// [`step`](Self::step) over `node`, decoded by the reader, for the
    /// find-next and find-previous walks: the hit it is, if it is one.
    fn step_node(
        &mut self,
        node: T::Node,
        depth: usize,
        pattern: &Pattern,
        options: &SearchOptions,
        wanted: &Wanted,
    ) -> Result<Option<Hit<T::Node>>> {
        let reader = self.reader;
        reader.visit(node, |tracepoint, footer| {
            self.step(node, depth, tracepoint, footer, pattern, options, wanted)
        })??;
        Ok(self.found.take())
    }

    /// The tracepoint's printed line, into `line`.
    fn render(&mut self, tracepoint: &Tracepoint<'_>, footer: Option<&Footer<'_>>) -> Result<()> {
        let parent = self.parent()?;
        self.line.clear();
        self.formatter
            .write_tracepoint(&mut self.line, tracepoint, footer, parent)
    }

    /// Counts a hit, and hands it over (with its line and path) while
    /// fewer than `max` were; `rendered` says `line` already holds its
    /// line.
    fn hit(
        &mut self,
        node: T::Node,
        depth: usize,
        tracepoint: &Tracepoint<'_>,
        footer: Option<&Footer<'_>>,
        options: &SearchOptions,
        rendered: bool,
    ) -> Result<()> {
        self.total += 1;
        if self.handed < options.max {
            if !rendered {
                self.render(tracepoint, footer)?;
            }
            self.handed += 1;
            let hit = Hit {
                thread: self.thread,
                event: tracepoint.event(),
                node,
                depth,
                path: self
                    .open
                    .iter()
                    .map(|&(name, _)| self.names[name as usize].0.clone())
                    .collect(),
                line: self.line.clone(),
            };
            match self.on_hit {
                Some(on_hit) => on_hit(hit),
                None => self.found = Some(hit),
            }
        }
        Ok(())
    }

    /// What the innermost open container tells its children (decoding it
    /// when a names walk left it undecoded).
    fn parent(&self) -> Result<Parent> {
        Ok(match self.open.last() {
            None => Parent::TopLevel,
            Some((_, ParentOf::Known(parent))) => *parent,
            Some((_, ParentOf::Node(node))) => self.reader.visit(*node, |tp, _| Parent::of(tp))?,
        })
    }

    /// [`step`](Self::step) for a tracepoint a names walk did not decode:
    /// matched by the id it names, decoded only when it is a hit (or when
    /// its id was cut by a block end).
    fn step_named(
        &mut self,
        node: T::Node,
        walked: &WalkNode<'_>,
        pattern: &Pattern,
        options: &SearchOptions,
        wanted: &Wanted,
    ) -> Result<()> {
        let kind = walked.header.tracepoint_type;
        let depth = walked.depth;
        let reader = self.reader;
        let key = match walked.name {
            Some(TracepointName::Method(method)) => Some(NameKey::Method(method)),
            Some(TracepointName::Field(field)) => Some(NameKey::Field(field)),
            Some(TracepointName::Variable(variable)) => Some(NameKey::Variable(variable)),
            None if NAMED.contains(&kind) => {
                return reader.visit(node, |tracepoint, footer| {
                    self.step(node, depth, tracepoint, footer, pattern, options, wanted)
                })?;
            }
            None => None,
        };
        self.open.truncate(depth);
        let place = key.map(|key| self.place(key, pattern));
        let matched = pattern.is_empty() || place.is_some_and(|place| self.names[place as usize].1);
        if wanted.wants(&walked.header) && matched {
            if self.handed < options.max {
                reader.visit(node, |tracepoint, footer| {
                    self.hit(node, depth, tracepoint, footer, options, false)
                })??;
            } else {
                self.total += 1;
            }
        }
        if kind.is_container() {
            let name = place.unwrap_or_else(|| self.place(NameKey::Kind(kind), pattern));
            self.open.push((name, ParentOf::Node(node)));
        }
        Ok(())
    }

    /// The tracepoint's name (calls, field accesses, local variables) and
    /// whether it holds the pattern.
    fn name(&mut self, tracepoint: &Tracepoint<'_>, pattern: &Pattern) -> (Option<u32>, bool) {
        let key = match &tracepoint.body {
            TracepointBody::MethodCall { method, .. } => NameKey::Method(*method),
            TracepointBody::ReadField { field, .. } | TracepointBody::WriteField { field, .. } => {
                NameKey::Field(*field)
            }
            TracepointBody::ReadLocal { variable, .. }
            | TracepointBody::WriteLocal { variable, .. } => NameKey::Variable(*variable),
            _ => return (None, false),
        };
        let place = self.place(key, pattern);
        (Some(place), self.names[place as usize].1)
    }

    /// The place of `key`'s name, added (and matched against `pattern`)
    /// the first time it is met.
    fn place(&mut self, key: NameKey, pattern: &Pattern) -> u32 {
        if let Some(&place) = self.name_of.get(&key) {
            return place;
        }
        let name = name_of(self.context, key);
        let place = self.names.len() as u32;
        let matched = pattern.is_in(&name);
        self.names.push((Arc::from(name), matched));
        self.name_of.insert(key, place);
        place
    }
}

/// `Class.method`, `Class.field` or a variable's name; a placeholder for an
/// id the trace does not hold.
pub(crate) fn name_of(context: &TraceContext, key: NameKey) -> String {
    let class_name = |id| {
        context
            .class(id)
            .map(|c| c.name.decode().into_owned())
            .unwrap_or_default()
    };
    let joined = |class: String, name: &str| {
        if class.is_empty() {
            name.to_string()
        } else {
            format!("{class}.{name}")
        }
    };
    match key {
        NameKey::Method(id) => match context.method(id) {
            Ok(m) => joined(class_name(m.class), &m.name.decode()),
            Err(_) => format!("<missing method {id}>"),
        },
        NameKey::Field(id) => match context.field(id) {
            Ok(f) => joined(class_name(f.class), &f.name.decode()),
            Err(_) => format!("<missing field {id}>"),
        },
        NameKey::Variable(id) => match context.variable(id) {
            Ok(v) => v.name.decode().into_owned(),
            Err(_) => format!("<missing variable {id}>"),
        },
        NameKey::Kind(kind) => kind.name().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::Pattern;

    #[test]
    fn ignoring_case_in_place_agrees_with_lowering_the_text() {
        let texts = [
            "",
            "a",
            "Thread.run()",
            "THREAD.RUN",
            "xx thrEAD",
            "Kelvin \u{212a} sign",
            "Straße",
            "aaab",
            "abab",
        ];
        let patterns = [
            "", "a", "thread", "read.r", "k", "ab", "aab", "ß", "e ", "sign",
        ];
        for text in texts {
            for pattern in patterns {
                let lowered = text.to_lowercase().contains(&pattern.to_lowercase());
                let ours = Pattern::new(pattern, true).is_in(text);
                assert_eq!(ours, lowered, "{pattern:?} in {text:?}");
            }
        }
    }
}
