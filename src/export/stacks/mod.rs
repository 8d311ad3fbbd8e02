//! A trace as call stacks for profilers' viewers: folded stacks (inferno,
//! `flamegraph.pl`), speedscope's JSON file format, Chrome's Trace Event
//! JSON (`chrome://tracing`, Perfetto's UI) and Perfetto's protobuf trace.
//!
//! # Frames, weights and time
//!
//! A frame is a container: a call (`Class.method`), a loop or a loop
//! iteration (named by kind). Every tracepoint weighs 1, on the stack of
//! the containers around it, itself included when it is one: a frame's
//! total is the number of tracepoints in its subtree. The calls of a
//! sample tree imported from JFR (flagged [`SAMPLE_COUNT_FLAG`]) weigh
//! their sample count instead, which counts the samples passing through
//! them: their own weight is that count less their children's.
//!
//! v22 traces carry no timestamps: a tracepoint's time is its position in
//! its thread's pre-order sequence (unit "none" for speedscope, µs for
//! Chrome, ns for Perfetto), so a frame lasts its total weight (a sample
//! tree's frames, their samples).
//!
//! # The walk
//!
//! Each selected thread is walked once in pre-order, threads in parallel,
//! by the tree's own walks ([`TraceTree::walk_visit`] and kin): any
//! [`Navigate`] tree (the lazy reader, its post-processed view), leaves by
//! header where the tree skips them. The walker keeps only the open frames and
//! turns depths into frame openings and closings for a `Sink`: a format's
//! `Writer`, or the flame graph's paths ([`flame`]); a stop flag ends it
//! at the next tracepoint ([`StackOptions::stop`]). A format's output is
//! written atomically: the head, the first thread's part as it is walked,
//! the others' parts (held in unlinked temporary files) in thread order,
//! the tail. Frames are interned once per trace, one per name (overloads
//! of a method are one frame). Memory is the nesting and the names, plus
//! for folded stacks one trie entry per distinct stack.
//!
//! With [`StackOptions::root`], only one node's subtree is walked; the
//! containers above it open before it (weighing nothing) so that stacks
//! keep their full path. A diff trace is exported less its virtual roots,
//! filtered by [`StackOptions::diff`], folded with two weights (`folded.rs`).
//!
//! [`SAMPLE_COUNT_FLAG`]: crate::model::Tracepoint::SAMPLE_COUNT_FLAG

mod chrome;
pub mod flame;
mod folded;
mod perfetto;
mod speedscope;

use std::fs::File;
use std::io::{BufWriter, Seek, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::common::{EventId, ThreadId};
use crate::error::{Error, NodeProblem, Result};
use crate::export::selected_threads;
use crate::format::TraceContext;
use crate::model::TracepointHeader;
use crate::model::{DiffStatus, Footer, Tracepoint, TracepointBody};
use crate::print::plan::{self, Source};
use crate::read::{Visit, VisitDetail};
use crate::search::{NameKey, name_of, status_place, wanted_statuses};
use crate::tree::{Navigate, TraceTree};

/// The formats [`StackOptions::export`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StackFormat {
    /// Folded stacks: a `thread;frame;frame WEIGHT` line per distinct
    /// stack, what inferno and `flamegraph.pl` read.
    Folded,
    /// speedscope's JSON file format: one evented profile per thread.
    Speedscope,
    /// Chrome's Trace Event JSON: `B`/`E` events, one `tid` per thread.
    Chrome,
    /// Perfetto's protobuf trace: a track per thread, slices with
    /// interned names.
    Perfetto,
}

impl StackFormat {
    /// The format's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            StackFormat::Folded => "folded",
            StackFormat::Speedscope => "speedscope",
            StackFormat::Chrome => "chrome",
            StackFormat::Perfetto => "perfetto",
        }
    }
}

impl StackFormat {
    /// Chrome Trace Event files ([`Chrome`](Self::Chrome)) with more
    /// events than this are slow or too large for browsers' viewers.
    pub const CHROME_EVENTS_FOR_BROWSERS: u64 = 1_000_000;
}

/// How to export.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct StackOptions {
    /// What to write.
    pub format: StackFormat,
    /// Only these threads (all when `None`).
    pub threads: Option<Vec<ThreadId>>,
    /// Only the subtree of the tracepoint with this event id.
    pub root: Option<EventId>,
    /// In a diff trace, only tracepoints with these diff statuses (all
    /// when `None`; an error on a trace that is not a diff). Each kept
    /// tracepoint weighs as in any export, and the containers above it
    /// open as its path, weighing nothing themselves unless kept;
    /// containers with nothing kept in them are left out. Whatever the
    /// filter, a diff's virtual roots `<diff>.<root>()` (part of neither
    /// input) are left out, their children standing at the top.
    pub diff: Option<Vec<DiffStatus>>,
    /// Replace the output file if it exists.
    pub force: bool,
    /// The name the output gives the trace (speedscope shows it).
    pub name: String,
    /// Set by another thread to stop the export: the walks end at their
    /// next tracepoint, nothing is written (an existing output is left as
    /// it was) and the export fails with [`Error::Cancelled`].
    pub stop: Option<Arc<AtomicBool>>,
}

impl StackOptions {
    /// Every thread of the trace `name` in `format`.
    pub fn new(format: StackFormat, name: impl Into<String>) -> Self {
        StackOptions {
            format,
            threads: None,
            root: None,
            diff: None,
            force: false,
            name: name.into(),
            stop: None,
        }
    }
}

/// What an export wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StackSummary {
    /// The threads exported.
    pub threads: usize,
    /// Tracepoints walked.
    pub tracepoints: u64,
    /// Distinct frame names.
    pub frames: usize,
    /// Records written: folded lines, speedscope or Chrome events, Perfetto
    /// packets.
    pub events: u64,
    /// Bytes written.
    pub bytes: u64,
}

impl StackOptions {
    /// Exports `reader`'s trace (or the part these options select) to the
    /// file `path`, written atomically; `progress` receives the
    /// tracepoints walked, in steps. `reader` is any tree a front end
    /// reads: the lazy reader, or its post-processed view
    /// ([`Postprocessed`](crate::tree::Postprocessed)).
    pub fn export<T: Navigate>(
        &self,
        reader: &T,
        path: &Path,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<StackSummary> {
        export_stacks(reader, path, self, progress)
    }
}

/// [`StackOptions::export`].
fn export_stacks<T: Navigate>(
    reader: &T,
    path: &Path,
    options: &StackOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<StackSummary> {
    // Only a regular file is replaced: a device, a FIFO or a socket is
    // written through.
    if std::fs::metadata(path).is_ok_and(|m| m.is_file()) && !options.force {
        return Err(Error::invalid(
            "output",
            format!("{} exists (give --force to replace it)", path.display()),
        ));
    }
    let frames = Frames::default();
    let plan = Plan::new(reader, options)?;
    let is_diff = plan.is_diff;
    let (parts, bytes) = crate::storage::write_file_atomically(path, |out| {
        // Into a regular file, its length at the end is the bytes written;
        // into a device (`/dev/null`), they are counted, and the first
        // part waits in a temporary file as the others do.
        let counted = !out.get_ref().metadata()?.is_file();
        let mut written = 0;
        let mut head = Vec::new();
        match options.format {
            StackFormat::Folded | StackFormat::Perfetto => {}
            StackFormat::Speedscope => speedscope::head(&mut head, &options.name)?,
            StackFormat::Chrome => chrome::head(&mut head)?,
        }
        out.write_all(&head)?;
        written += head.len() as u64;
        out.flush()?;
        // The first part goes straight after the head, through a second
        // handle on the output (sharing its offset); the others wait in
        // temporary files.
        let first = out.get_ref();
        let parts: Vec<Part> = plan
            .walks
            .par_iter()
            .enumerate()
            .map(|(sequence, walk)| {
                let thread = Thread {
                    id: walk.thread(),
                    name: thread_name(reader, walk.thread()),
                    sequence: sequence as u32 + 1,
                };
                let file = match sequence {
                    0 if !counted => first.try_clone()?,
                    _ => tempfile::tempfile().map_err(|e| Error::io(std::env::temp_dir(), e))?,
                };
                let part = BufWriter::with_capacity(1 << 18, file);
                let stop = options.stop.as_deref();
                let run =
                    |sink| write_part(reader, walk, plan.kept(), &frames, progress, stop, sink);
                match options.format {
                    StackFormat::Folded => {
                        run(Box::new(folded::Folded::new(&thread, part, is_diff)))
                    }
                    StackFormat::Speedscope => {
                        run(Box::new(speedscope::Profile::new(&thread, part)?))
                    }
                    StackFormat::Chrome => run(Box::new(chrome::Events::new(&thread, part)?)),
                    StackFormat::Perfetto => run(Box::new(perfetto::Track::new(&thread, part)?)),
                }
            })
            .collect::<Result<_>>()?;
        let separator: &[u8] = match options.format {
            StackFormat::Speedscope | StackFormat::Chrome => b",",
            StackFormat::Folded | StackFormat::Perfetto => b"",
        };
        for (at, part) in parts.iter().enumerate().skip(usize::from(!counted)) {
            if at > 0 {
                out.write_all(separator)?;
                written += separator.len() as u64;
            }
            out.flush()?;
            let mut file = &part.file;
            file.rewind()?;
            // File to file: the kernel copies (copy_file_range), no buffer.
            written += std::io::copy(&mut file, out.get_mut())?;
        }
        let mut tail = Vec::new();
        match options.format {
            StackFormat::Speedscope => speedscope::tail(&mut tail, &frames)?,
            StackFormat::Chrome => chrome::tail(&mut tail)?,
            StackFormat::Folded | StackFormat::Perfetto => {}
        }
        out.write_all(&tail)?;
        written += tail.len() as u64;
        out.flush()?;
        let bytes = match counted {
            true => written,
            false => out.get_mut().stream_position()?,
        };
        Ok((parts, bytes))
    })?;
    Ok(StackSummary {
        threads: parts.len(),
        tracepoints: parts.iter().map(|p| p.tracepoints).sum(),
        frames: frames.len(),
        events: parts.iter().map(|p| p.events).sum(),
        bytes,
    })
}

/// Tracepoints walked between progress reports.
const PROGRESS_STEP: u64 = 1 << 16;

/// A thread's name as the outputs show it.
fn thread_name(reader: &impl Navigate, thread: ThreadId) -> String {
    match reader.thread_name(thread) {
        Some(name) if !name.is_empty() => name,
        _ => format!("thread {thread}"),
    }
}

/// What one walk covers, in a tree of nodes `N`.
enum Walk<N> {
    /// A whole thread.
    Thread(ThreadId),
    /// One node's subtree, below its ancestors (outermost first).
    Subtree {
        thread: ThreadId,
        node: N,
        ancestors: Vec<N>,
    },
    /// One part of a thread's trees as the printers cut them (a flame
    /// graph's walk on several cores), depths from 0 at the part's top;
    /// a node's own line is not walked.
    Part(plan::Part<N>),
}

impl<N> Walk<N> {
    fn thread(&self) -> ThreadId {
        match self {
            Walk::Thread(thread) | Walk::Subtree { thread, .. } => *thread,
            Walk::Part(part) => part.thread,
        }
    }
}

/// What a walk keeps of a trace.
#[derive(Debug, Clone, Copy)]
struct Kept {
    /// The trace is a diff: its virtual roots are left out.
    is_diff: bool,
    /// The diff statuses kept, by [`status_place`].
    statuses: [bool; 6],
}

impl Kept {
    /// Everything, as of a plain trace.
    const ALL: Kept = Kept {
        is_diff: false,
        statuses: [true; 6],
    };
}

/// The walks an export runs, and what they keep.
struct Plan<N> {
    walks: Vec<Walk<N>>,
    /// The trace is a diff: its virtual roots are left out.
    is_diff: bool,
    /// The diff statuses kept, by [`status_place`].
    kept: [bool; 6],
}

impl<N: Copy> Plan<N> {
    fn kept(&self) -> Kept {
        Kept {
            is_diff: self.is_diff,
            statuses: self.kept,
        }
    }

    fn new<T: Navigate<Node = N>>(reader: &T, options: &StackOptions) -> Result<Self> {
        let threads = selected_threads(reader, options.threads.as_deref())?;
        let kept = wanted_statuses(reader, options.diff.as_deref())?;
        // A first tracepoint that cannot be read says nothing: the walk
        // reports the damage, the export goes on as of a plain trace.
        let is_diff = options.diff.is_some() || reader.is_diff().unwrap_or(false);
        let Some(event) = options.root else {
            return Ok(Plan {
                walks: threads.into_iter().map(Walk::Thread).collect(),
                is_diff,
                kept,
            });
        };
        let node = reader
            .node_by_event(event)?
            .ok_or(Error::NoSuchNode(NodeProblem::NoEvent(event)))?;
        let thread = reader.node_thread(node);
        if !threads.contains(&thread) {
            return Err(Error::invalid(
                "root",
                format!("event {event} is in thread {thread}, which --thread leaves out"),
            ));
        }
        Ok(Plan {
            walks: vec![Walk::Subtree {
                thread,
                node,
                ancestors: reader.ancestors(node)?,
            }],
            is_diff,
            kept,
        })
    }
}

/// The thread a format's writer writes.
pub(super) struct Thread {
    id: ThreadId,
    name: String,
    /// 1, 2, …: the thread's place among those exported.
    sequence: u32,
}

/// One thread's output: in a temporary file, or for the first, already in
/// place.
struct Part {
    file: File,
    tracepoints: u64,
    events: u64,
}

/// The end of a part: its file, flushed.
fn finish_part(out: BufWriter<File>) -> Result<File> {
    out.into_inner()
        .map_err(|e| Error::io(std::env::temp_dir(), e.into_error()))
}

/// What a walk's frames go to: a format's writer, or the flame graph's
/// tries.
trait Sink {
    /// `frame` (an id of [`Frames`]) opens at `at`.
    fn open(&mut self, frame: u32, frames: &FrameCache, at: u64) -> Result<()>;
    /// The innermost open frame closes at `at`, having weighed `own` itself
    /// (its tracepoint and leaves, or its samples less its children's).
    fn close(&mut self, at: u64, own: Weight) -> Result<()>;
}

/// A format's writer: a sink that writes one thread's part.
trait Writer: Sink {
    /// The thread ends at `end`; `top` weighs the tracepoints outside any
    /// frame. Returns the part file and the records written.
    fn finish(self: Box<Self>, end: u64, top: Weight) -> Result<(File, u64)>;
}

/// The frame names met, shared by the threads: a name's id is its place.
#[derive(Default)]
pub(super) struct Frames {
    table: Mutex<FrameTable>,
}

#[derive(Default)]
struct FrameTable {
    ids: FxHashMap<NameKey, u32>,
    /// Keys that name the same text (overloads of a method) are one frame.
    by_name: FxHashMap<Arc<str>, u32>,
    names: Vec<Arc<str>>,
}

impl FrameTable {
    /// The id of the frame named `name`, added on first use.
    fn named(&mut self, name: &str) -> (u32, Arc<str>) {
        if let Some((name, &id)) = self.by_name.get_key_value(name) {
            return (id, name.clone());
        }
        let id = self.names.len() as u32;
        let name: Arc<str> = Arc::from(name);
        self.names.push(name.clone());
        self.by_name.insert(name.clone(), id);
        (id, name)
    }
}

impl Frames {
    /// The id of the frame `key` names, added on first use.
    fn id(&self, context: &TraceContext, key: NameKey) -> (u32, Arc<str>) {
        let mut table = self.table.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&id) = table.ids.get(&key) {
            return (id, table.names[id as usize].clone());
        }
        let (id, name) = table.named(&name_of(context, key));
        table.ids.insert(key, id);
        (id, name)
    }

    /// The id of the frame named `name` (a thread's, a scope's), added on
    /// first use.
    fn named(&self, name: &str) -> (u32, Arc<str>) {
        self.table
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .named(name)
    }

    fn len(&self) -> usize {
        self.table
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .names
            .len()
    }

    /// Every name, in id order.
    pub(super) fn names(&self) -> Vec<Arc<str>> {
        self.table
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .names
            .clone()
    }
}

/// A thread's view of [`Frames`]: the names it met, without the lock.
pub(super) struct FrameCache<'f> {
    frames: &'f Frames,
    ids: FxHashMap<NameKey, u32>,
    names: FxHashMap<u32, Arc<str>>,
}

impl<'f> FrameCache<'f> {
    fn new(frames: &'f Frames) -> Self {
        FrameCache {
            frames,
            ids: FxHashMap::default(),
            names: FxHashMap::default(),
        }
    }

    fn id(&mut self, context: &TraceContext, key: NameKey) -> u32 {
        if let Some(&id) = self.ids.get(&key) {
            return id;
        }
        let (id, name) = self.frames.id(context, key);
        self.ids.insert(key, id);
        self.names.insert(id, name);
        id
    }

    /// The id of the frame named `name`, as [`Frames::named`].
    fn named(&mut self, name: &str) -> u32 {
        let (id, name) = self.frames.named(name);
        self.names.insert(id, name);
        id
    }

    /// The name of a frame this thread met.
    pub(super) fn name(&self, frame: u32) -> &str {
        self.names.get(&frame).map_or("", |name| name)
    }
}

/// What names a container's frame.
fn frame_key(tracepoint: &Tracepoint<'_>) -> NameKey {
    match &tracepoint.body {
        TracepointBody::MethodCall { method, .. } => NameKey::Method(*method),
        _ => NameKey::Kind(tracepoint.tracepoint_type()),
    }
}

/// A weight in the whole trace and, in a diff, on each side: the left
/// (old) trace's and the right (new) one's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Weight {
    pub(super) all: u64,
    pub(super) left: u64,
    pub(super) right: u64,
}

impl Weight {
    /// One tracepoint of `status` (counted on a side it belongs to).
    fn one(status: DiffStatus) -> Self {
        Weight {
            all: 1,
            left: u64::from(status.in_left()),
            right: u64::from(status.in_right()),
        }
    }

    fn add(&mut self, other: Weight) {
        self.all += other.all;
        self.left += other.left;
        self.right += other.right;
    }
}

/// An open frame.
struct Open {
    depth: usize,
    at: u64,
    /// The sample counts, for a sample tree's call: in the trace, on the
    /// left side, on the right side.
    samples: [Option<u64>; 3],
    /// Its own weight so far (itself and its leaves).
    own: Weight,
    /// Its children frames' totals.
    children: Weight,
    /// Its diff status.
    status: DiffStatus,
}

/// One thread's walk: depths in, frame openings and closings out.
struct Walker<'r, 's, S: Sink + ?Sized> {
    context: &'r TraceContext,
    frames: &'s mut FrameCache<'r>,
    sink: &'s mut S,
    open: Vec<Open>,
    /// Containers not kept (by diff status) whose frames open when a
    /// tracepoint inside them is: depth and frame, outermost first.
    pending: Vec<(usize, u32)>,
    /// Leave out containers without a diff status (a diff's virtual roots).
    is_diff: bool,
    /// The diff statuses kept, by [`status_place`].
    kept: [bool; 6],
    /// The samples of an edit's old side just closed: the new side that
    /// follows it carries them as its left samples.
    edited_old_samples: Option<u64>,
    /// Depth of the walk's first level (the ancestors above it).
    base: usize,
    clock: u64,
    top: Weight,
    tracepoints: u64,
}

impl<S: Sink + ?Sized> Walker<'_, '_, S> {
    /// Opens a container: one met by the walk (`weighs`), or one above
    /// what is kept.
    fn open(
        &mut self,
        depth: usize,
        frame: u32,
        tracepoint: &Tracepoint<'_>,
        footer: Option<&Footer<'_>>,
        weighs: bool,
    ) -> Result<()> {
        self.sink.open(frame, self.frames, self.clock)?;
        let status = tracepoint.header.diff_status;
        let samples = tracepoint
            .sample_count(footer)
            .filter(|_| weighs)
            .map(|s| s.max(0) as u64);
        let mut own = match weighs && samples.is_none() {
            true => Weight::one(status),
            false => Weight::default(),
        };
        let on_side = |on: bool| samples.filter(|_| weighs && on);
        let mut left = on_side(status.in_left());
        if status == DiffStatus::EditedNew {
            left = self.edited_old_samples.take();
        }
        if !self.is_diff {
            (own.left, own.right) = (0, 0);
        }
        self.open.push(Open {
            depth,
            at: self.clock,
            samples: [samples, left, on_side(status.in_right())],
            own,
            children: Weight::default(),
            status,
        });
        self.clock += own.all;
        Ok(())
    }

    fn close(&mut self) -> Result<()> {
        let Some(frame) = self.open.pop() else {
            return Ok(());
        };
        let mut total = frame.own;
        total.add(frame.children);
        let [all, mut left, right] = frame.samples;
        if frame.status == DiffStatus::EditedOld && left.is_some() {
            // The old side of an edit is written without its children,
            // which follow under the new side: that side's frame (the same
            // stack) weighs the left samples less those children.
            self.edited_old_samples = left.take();
            total.left = 0;
        }
        if let Some(samples) = all {
            total.all = total.all.max(samples);
            self.clock = frame.at + total.all;
        }
        if let Some(samples) = left {
            total.left = total.left.max(samples);
        }
        if let Some(samples) = right {
            total.right = total.right.max(samples);
        }
        let own = Weight {
            all: total.all - frame.children.all,
            left: total.left - frame.children.left,
            right: total.right - frame.children.right,
        };
        self.sink.close(self.clock, own)?;
        if let Some(parent) = self.open.last_mut() {
            parent.children.add(total);
        }
        Ok(())
    }

    /// Opens the frames of the containers above a kept tracepoint that
    /// are not open yet.
    fn open_pending(&mut self) -> Result<()> {
        for (depth, frame) in std::mem::take(&mut self.pending) {
            self.sink.open(frame, self.frames, self.clock)?;
            self.open.push(Open {
                depth,
                at: self.clock,
                samples: [None; 3],
                own: Weight::default(),
                children: Weight::default(),
                status: DiffStatus::None,
            });
        }
        Ok(())
    }

    fn step(&mut self, walked: &Walked<'_>) -> Result<()> {
        let depth = walked.depth + self.base;
        while self.pending.last().is_some_and(|&(d, _)| d >= depth) {
            self.pending.pop();
        }
        while self.open.last().is_some_and(|o| o.depth >= depth) {
            self.close()?;
        }
        self.tracepoints += 1;
        let status = walked.header.diff_status;
        if status != DiffStatus::EditedNew {
            self.edited_old_samples = None;
        }
        let kept = self.kept[status_place(status)];
        if walked.header.tracepoint_type.is_container() {
            if self.is_diff && status == DiffStatus::None {
                return Ok(());
            }
            let tracepoint = walked
                .tracepoint
                .ok_or_else(|| Error::internal("a container walked without its tracepoint"))?;
            let frame = self.frames.id(self.context, frame_key(tracepoint));
            if !kept {
                self.pending.push((depth, frame));
                return Ok(());
            }
            self.open_pending()?;
            self.open(depth, frame, tracepoint, walked.footer, true)
        } else {
            if !kept {
                return Ok(());
            }
            self.open_pending()?;
            let mut weight = Weight::one(status);
            if !self.is_diff {
                (weight.left, weight.right) = (0, 0);
            }
            self.clock += 1;
            match self.open.last_mut() {
                Some(parent) => parent.own.add(weight),
                None => self.top.add(weight),
            }
            Ok(())
        }
    }
}

/// A tracepoint a walk meets: its depth below the walk's top, its header,
/// and for a container its tracepoint and footer.
struct Walked<'a> {
    depth: usize,
    header: TracepointHeader,
    tracepoint: Option<&'a Tracepoint<'a>>,
    footer: Option<&'a Footer<'a>>,
}

impl<'a> Walked<'a> {
    /// What a tree's walk hands over, as the walker takes it (`None` for
    /// a fold, which walks without a depth bound do not make).
    fn of<N>(visit: &Visit<'a, N>) -> Option<Self> {
        match *visit {
            Visit::Node {
                depth,
                tracepoint,
                footer,
                ..
            } => Some(Walked {
                depth,
                header: tracepoint.header,
                tracepoint: Some(tracepoint),
                footer,
            }),
            Visit::Leaf { depth, header, .. } => Some(Walked {
                depth,
                header,
                tracepoint: None,
                footer: None,
            }),
            Visit::Folded { .. } => None,
        }
    }
}

/// What the walks ask of a tree: containers whole, leaves by their headers
/// where the tree skips their bodies.
const WALK_DETAIL: VisitDetail = VisitDetail {
    child_counts: false,
    leaf_bodies: false,
};

/// The error a walk's visitor ends the tree's walk with when `stop` is set.
const STOPPED: &str = "a stack walk";

/// Where a walk ended.
struct WalkEnd {
    /// The position after its last tracepoint (its total weight).
    clock: u64,
    /// The weight of the tracepoints outside any frame.
    top: Weight,
    /// Tracepoints walked.
    tracepoints: u64,
    /// Whether `stop` ended it early.
    stopped: bool,
}

/// Runs one walk into `sink`, its frames named through `frames`, keeping
/// what `kept` keeps; with `ancestors`, a subtree's ancestors open above
/// it (weighing nothing). `stop`, when set, ends it after the tracepoint
/// being walked.
#[allow(clippy::too_many_arguments)]
fn walk_frames<'r, T: TraceTree, S: Sink + ?Sized>(
    reader: &'r T,
    walk: &Walk<T::Node>,
    kept: Kept,
    frames: &mut FrameCache<'r>,
    ancestors: bool,
    progress: &(dyn Fn(u64) + Sync),
    stop: Option<&AtomicBool>,
    sink: &mut S,
) -> Result<WalkEnd> {
    let mut walker = Walker {
        context: reader.context(),
        frames,
        sink,
        open: Vec::new(),
        pending: Vec::new(),
        is_diff: kept.is_diff,
        kept: kept.statuses,
        edited_old_samples: None,
        base: 0,
        clock: 0,
        top: Weight::default(),
        tracepoints: 0,
    };
    let mut stopped = false;
    let mut visit = |walker: &mut Walker<'_, '_, S>, visit: Visit<'_, T::Node>| -> Result<()> {
        let Some(walked) = Walked::of(&visit) else {
            return Ok(());
        };
        walker.step(&walked)?;
        if walker.tracepoints.is_multiple_of(PROGRESS_STEP) {
            progress(PROGRESS_STEP);
        }
        if stop.is_some_and(|stop| stop.load(Ordering::Relaxed)) {
            stopped = true;
            return Err(Error::Cancelled(STOPPED));
        }
        Ok(())
    };
    let walked = match walk {
        Walk::Thread(thread) => {
            reader.walk_visit(&reader.roots(*thread)?, None, WALK_DETAIL, |v| {
                visit(&mut walker, v)
            })
        }
        Walk::Subtree {
            node,
            ancestors: above,
            ..
        } => {
            if ancestors {
                for (depth, &ancestor) in above.iter().enumerate() {
                    let frame = reader.visit(ancestor, |tracepoint, _| {
                        let virtual_root =
                            walker.is_diff && tracepoint.header.diff_status == DiffStatus::None;
                        (!virtual_root)
                            .then(|| walker.frames.id(walker.context, frame_key(tracepoint)))
                    })?;
                    if let Some(frame) = frame {
                        walker.pending.push((depth, frame));
                    }
                }
                walker.base = above.len();
            }
            reader.walk_visit(&[*node], None, WALK_DETAIL, |v| visit(&mut walker, v))
        }
        Walk::Part(part) => match &part.source {
            Source::Header { .. } | Source::Line(..) => Ok(()),
            // A stop ends the walk at its next tracepoint.
            Source::Trees(nodes) => {
                reader.walk_visit(nodes, None, WALK_DETAIL, |v| visit(&mut walker, v))
            }
            &Source::Siblings {
                parent,
                first,
                next,
            } => reader.walk_visit_siblings(parent, first, next, None, WALK_DETAIL, |v| {
                visit(&mut walker, v)
            }),
            &Source::Children {
                parent,
                from,
                count,
            } => reader.walk_visit_children(parent, from, count, None, WALK_DETAIL, |v| {
                visit(&mut walker, v)
            }),
        },
    };
    match walked {
        Err(Error::Cancelled(STOPPED)) if stopped => {}
        other => other?,
    }
    while !walker.open.is_empty() {
        walker.close()?;
    }
    progress(walker.tracepoints % PROGRESS_STEP);
    Ok(WalkEnd {
        clock: walker.clock,
        top: walker.top,
        tracepoints: walker.tracepoints,
        stopped,
    })
}

/// Runs one walk into a format's writer: its part (an error when `stop`
/// ended it).
fn write_part<T: TraceTree>(
    reader: &T,
    walk: &Walk<T::Node>,
    kept: Kept,
    frames: &Frames,
    progress: &(dyn Fn(u64) + Sync),
    stop: Option<&AtomicBool>,
    mut sink: Box<dyn Writer + '_>,
) -> Result<Part> {
    let mut cache = FrameCache::new(frames);
    let end = walk_frames(
        reader, walk, kept, &mut cache, true, progress, stop, &mut *sink,
    )?;
    if end.stopped {
        return Err(Error::Cancelled("the export"));
    }
    let (file, events) = sink.finish(end.clock, end.top)?;
    Ok(Part {
        file,
        tracepoints: end.tracepoints,
        events,
    })
}

/// Writes `text` as a JSON string.
pub(super) fn json_string(out: &mut impl Write, text: &str) -> Result<()> {
    serde_json::to_writer(out, text).map_err(|e| Error::from(std::io::Error::from(e)))
}
