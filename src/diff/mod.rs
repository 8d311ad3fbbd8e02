//! Trace diff: two traces compared as the reference recorder's library
//! compares them (`diffTwoTraces`), written as a packed diff trace.
//!
//! The algorithm, as the reference's:
//! - **Threads** are paired ([`ThreadMatching`]): by name, by index, or by a
//!   map; optionally the two threads whose root is event 0 first. One
//!   without a partner is copied as removed or added, skipped, or an error.
//! - **Each pair**: when the roots are not strictly equal, a virtual call
//!   `<diff>.<root>()` holds the result. Two lists (the roots, or two
//!   containers' children) are aligned by Myers' diff under
//!   *edit-independent* equality (type, code location, and the array and
//!   index, field, variable, loop and iteration, or method). An aligned pair
//!   also *strictly* equal (values, receiver, arguments, result, exception)
//!   is `Unchanged`, else the left is written `EditedOld` without children,
//!   then the right `EditedNew`; aligned containers' children are aligned in
//!   turn. The rest is copied with its subtrees as `Removed` or `Added`
//!   (both equalities: the reference's hashes, `compare`).
//! - **Output**: pre-order, threads in turn, event ids from 0 in that order;
//!   `diff.idmap` holds each one's left and right event ids (−1: none),
//!   `diff.threadmap` the thread map, big-endian as `DataOutputStream`.
//!
//! Differences in how, not what:
//! - Each side of a pair is one pre-order stream, walked on a thread of
//!   its own, consumed in lockstep while the lists pair up (Myers' first
//!   snake). The rest of two lists (the middle) is held ahead, up to
//!   [`DiffOptions::max_held`] tracepoints a side, while its keys are
//!   aligned; a larger one is read past (a key per child) and walked again.
//!   No common *suffix* is stripped: Myers' ties depend on it.
//! - Strictly equal containers (a thread's roots first) whose subtrees are
//!   the same bytes but ids (run by run, else object by object) over
//!   agreeing tables are copied unchanged in one walk, both streams skip
//!   them (`bulk`); shown as recorded (`raw_subtree`): as bytes (`output`).
//! - Myers' search stops after [`DiffOptions::max_edits`] edits (O(n·D) time,
//!   O(D²) memory; the reference's never); past it, or past [`DiffOptions::max_keys`]
//!   children read past, lists are aligned window by window (1024 a side), warned of.
//! - Threads are diffed in parallel straight into the pack's data entry
//!   (CRC-32 kept write by write), each numbered from 0 and raised in place
//!   by the count before it (`renumber`): bytes vary, not content.
//! - A name map takes the first unused right thread of that name (the
//!   reference skips right threads by *left* indices; the same where it works).

mod bulk;
mod compare;
mod myers;
mod options;
mod output;
mod renumber;
mod walk;

use std::borrow::Cow;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

pub use crate::storage::diff_map::{DiffMap, DiffOrigin};
pub use options::{DiffOptions, ThreadMatching, ThreadPair, UnmatchedThreads};

use crate::common::{EventId, ThreadId};
use crate::error::{Error, Result};
use crate::model::DiffStatus;
use crate::storage::packed::{
    DATA_ENTRY, INDEX_ENTRY, INFO_ENTRY, InPlaceEntry, InPlaceWriter, PackSource, copy_files,
    entry_start, files_len, write_pack_into,
};
use crate::storage::write_file_atomically_read_back;
use crate::tree::{Postprocessed, TraceTree};
use crate::write::{StreamingOptions, StreamingThread, StreamingWriter};
use options::{InputThread, match_threads};
use output::{RawCopy, Reinterner, ThreadOut};
use rustc_hash::FxHashMap;
use walk::{Side, Start, Walk};

/// One input of a diff: a trace and what the pack records about it.
#[derive(Debug)]
pub struct DiffInput<'a, T> {
    /// The trace.
    pub trace: &'a T,
    /// Its name, as `info.txt` records it.
    pub name: &'a str,
    /// Its size in bytes, as `info.txt` records it.
    pub bytes: u64,
    /// Whether it is a diff itself (refused unless
    /// [`DiffOptions::allow_diffs`]).
    pub is_diff: bool,
    /// Its own `info.txt`, when it came packed with one: stored as
    /// `info.left.txt` or `info.right.txt`.
    pub info: Option<Cow<'a, str>>,
}

impl<'a, T> DiffInput<'a, T> {
    /// `trace`, named `name`: a trace that is not a diff, with no size or
    /// description of its own to record.
    pub fn new(trace: &'a T, name: &'a str) -> Self {
        DiffInput {
            trace,
            name,
            bytes: 0,
            is_diff: false,
            info: None,
        }
    }

    /// `trace`, opened from the file at `path` and named `name`, with what
    /// the file tells: its size, and, when it is a pack, whether it is a
    /// diff and the `info.txt` it was packed with.
    pub fn from_file(trace: &'a T, name: &'a str, path: &Path) -> Result<Self> {
        let bytes = std::fs::metadata(path).map_or(0, |m| m.len());
        let (is_diff, info) = if crate::storage::packed::PackedTrace::is_packed(path) {
            let packed = crate::storage::packed::PackedTrace::open(path)?;
            let info = packed.info().ok().filter(|info| !info.is_empty());
            (packed.is_diff(), info.map(Cow::Owned))
        } else {
            (false, None)
        };
        Ok(DiffInput {
            trace,
            name,
            bytes,
            is_diff,
            info,
        })
    }
}

impl<T> Clone for DiffInput<'_, T> {
    fn clone(&self) -> Self {
        DiffInput {
            trace: self.trace,
            name: self.name,
            bytes: self.bytes,
            is_diff: self.is_diff,
            info: self.info.clone(),
        }
    }
}

/// The first place a diff thread differs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Divergence {
    /// The diff tracepoint's event id.
    pub event: EventId,
    /// Its status.
    pub status: DiffStatus,
    /// The left event it came from, if any.
    pub left: Option<EventId>,
    /// The right event it came from, if any.
    pub right: Option<EventId>,
    /// The containers it lies in, outermost first (`Class.method`, `loop`,
    /// `iteration N`).
    pub path: Vec<String>,
}

/// What a diff found in one diff thread.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ThreadSummary {
    /// The diff thread's id.
    pub thread: i32,
    /// Its name.
    pub name: String,
    /// Tracepoints unchanged.
    pub unchanged: u64,
    /// Tracepoints removed (in the left trace only).
    pub removed: u64,
    /// Tracepoints added (in the right trace only).
    pub added: u64,
    /// Tracepoints edited: each is written twice, old then new.
    pub edited: u64,
    /// Of the unchanged, those copied with subtrees found the same by
    /// their bytes, not compared node by node.
    pub copied: u64,
    /// The most children's keys held at once on one side to align two
    /// lists: bounded by [`DiffOptions::max_held`] and
    /// [`DiffOptions::max_keys`] (and a window), whatever the lists' length.
    pub held_keys: u64,
    /// The first tracepoint that is not unchanged.
    pub first_divergence: Option<Divergence>,
}

/// What [`diff_traces`] wrote.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DiffSummary {
    /// The thread map: every pair of threads, diffed or skipped.
    pub thread_map: Vec<ThreadPair>,
    /// The diff threads written, in order.
    pub threads: Vec<ThreadSummary>,
    /// Tracepoints written.
    pub tracepoints: u64,
    /// Bytes of the packed diff.
    pub bytes: u64,
    /// Where the diff departs from the reference's algorithm (Myers' bound).
    pub warnings: Vec<String>,
}

/// The threads of a trace with a root, ascending by id, and their first roots.
fn input_threads<T: TraceTree>(trace: &T) -> Result<(Vec<InputThread>, Vec<T::Node>)> {
    let (mut threads, mut roots) = (Vec::new(), Vec::new());
    for id in trace.thread_ids() {
        let Some(&root) = trace.roots(id)?.first() else {
            continue;
        };
        let starts = trace.visit(root, |tracepoint, _| tracepoint.event().0 == 0)?;
        let name = trace
            .context()
            .thread_name(id)
            .map_or_else(String::new, |name| name.decode().into_owned());
        threads.push(InputThread {
            id: id.0,
            name,
            starts,
        });
        roots.push(root);
    }
    Ok((threads, roots))
}

/// Diffs `left` against `right` as the reference's `diffTwoTraces` does and
/// writes the packed diff at `out` (atomically: a failure leaves nothing
/// there). Temporary files go beside `out` and are removed. Both are read
/// through the post-processing unless [`DiffOptions::postprocess`] is off.
pub fn diff_traces<L: TraceTree, R: TraceTree>(
    left: DiffInput<'_, L>,
    right: DiffInput<'_, R>,
    options: &DiffOptions,
    out: &Path,
) -> Result<DiffSummary> {
    let agree = bulk::tables_agree(left.trace.context(), right.trace.context());
    if !options.postprocess {
        return diff_trees(left, right, options, out, agree);
    }
    let (left_view, right_view) = (
        Postprocessed::new(left.trace),
        Postprocessed::new(right.trace),
    );
    diff_trees(
        through(left, &left_view),
        through(right, &right_view),
        options,
        out,
        agree,
    )
}

/// `input` with its trace seen as `trace`.
fn through<'a, T, V>(input: DiffInput<'a, T>, trace: &'a V) -> DiffInput<'a, V> {
    DiffInput {
        trace,
        name: input.name,
        bytes: input.bytes,
        is_diff: input.is_diff,
        info: input.info,
    }
}

/// [`diff_traces`] of the trees as given.
fn diff_trees<L: TraceTree, R: TraceTree>(
    left: DiffInput<'_, L>,
    right: DiffInput<'_, R>,
    options: &DiffOptions,
    out: &Path,
    agree: bool,
) -> Result<DiffSummary> {
    if !options.allow_diffs {
        for (side, input) in [("left", left.is_diff), ("right", right.is_diff)] {
            if input {
                return Err(Error::invalid(
                    "trace",
                    format!("the {side} trace is a diff itself (diffing diffs must be asked for)"),
                ));
            }
        }
    }
    let started = millis();
    let (left_threads, left_roots) = input_threads(left.trace)?;
    let (right_threads, right_roots) = input_threads(right.trace)?;
    let thread_map = match_threads(&left_threads, &right_threads, options)?;

    let folder = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let scratch = tempfile::Builder::new()
        .prefix(".tracetree-diff-")
        .tempdir_in(folder)
        .map_err(|e| Error::io(folder, e))?;
    let index = scratch.path().join("diff.trace.idx");
    // The data goes straight into the pack, from where its entry's header
    // will end: measured now, with `info.txt` as long as it will be (else
    // it is moved once).
    let guess = info_text(&left, &right, started, started);
    let data_at = entry_start(&head(&left, &right, &guess), DATA_ENTRY, 0)?;
    write_file_atomically_read_back(out, |pack| {
        let file = pack.get_ref();
        let (data, data_log) = InPlaceWriter::new(file.try_clone()?, data_at);
        let index_file = File::create(&index).map_err(|e| Error::io(&index, e))?;
        let writer = StreamingWriter::from_writers(data, index_file, StreamingOptions::default())?;
        // Subtrees are copied as bytes where the trees show them as
        // recorded (`TraceTree::raw_subtree`): the readers' own bytes, and
        // the view's subtrees it leaves as they are.
        let raw = if agree {
            output::seed_pool(&writer, left.trace.context(), right.trace.context()).ok()
        } else {
            None
        };
        let mut summary = DiffSummary {
            thread_map: thread_map.clone(),
            ..DiffSummary::default()
        };
        let mut jobs = Vec::new();
        for (index, pair) in thread_map.iter().enumerate() {
            if options.only_start_threads && index > 0 {
                break;
            }
            let (start, name) = match (pair.left, pair.right) {
                (Some(l), Some(r)) => (
                    Start::Pair(left_roots[l], right_roots[r]),
                    pair.name.clone(),
                ),
                _ if options.unmatched == UnmatchedThreads::Skip => continue,
                (Some(l), None) => (
                    Start::Removed(left_roots[l]),
                    format!("{}: Thread not present in right trace", pair.name),
                ),
                (None, Some(r)) => (
                    Start::Added(right_roots[r]),
                    format!("{}: Thread not present in left trace", pair.name),
                ),
                (None, None) => continue,
            };
            let id = i32::try_from(index).map_err(|_| Error::limit("threads", index, i32::MAX))?;
            let thread = writer.new_thread_with_id(ThreadId(id), name.as_str())?;
            jobs.push(Job {
                id,
                name,
                start,
                thread,
                idmap: scratch.path().join(format!("diff.idmap.{}", jobs.len())),
            });
        }
        let done = run_jobs(jobs, left.trace, right.trace, options, (agree, raw))?;
        writer.close()?;

        let mut bases = FxHashMap::default();
        let mut next_event = 0i64;
        let mut idmap_parts = Vec::with_capacity(done.len());
        for (mut thread_summary, warnings, count, part) in done {
            let base = i32::try_from(next_event)
                .map_err(|_| Error::limit("event ids", next_event, i32::MAX))?;
            bases.insert(thread_summary.thread, base);
            if let Some(divergence) = &mut thread_summary.first_divergence {
                divergence.event = EventId(divergence.event.0 + base);
            }
            next_event += count;
            if next_event > i64::from(i32::MAX) + 1 {
                return Err(Error::limit("event ids", next_event - 1, i32::MAX));
            }
            idmap_parts.push(part);
            summary.tracepoints += count as u64;
            summary.warnings.extend(warnings);
            summary.threads.push(thread_summary);
        }
        let mut threadmap = Vec::with_capacity(4 + 12 * thread_map.len());
        threadmap.extend_from_slice(&(thread_map.len() as i32).to_be_bytes());
        for (index, pair) in thread_map.iter().enumerate() {
            for value in [Some(index), pair.left, pair.right] {
                threadmap.extend_from_slice(&value.map_or(-1, |v| v as i32).to_be_bytes());
            }
        }
        let info = info_text(&left, &right, started, millis());
        let mut entries = head(&left, &right, &info);
        // The index and the id map go straight into the pack too, behind
        // the data where it ends up: their places are known from the
        // lengths of the entries before them.
        let mut data_log = data_log;
        data_log.settle(file, &entries, DATA_ENTRY)?;
        let data_at = data_log.start();
        // An entry measured where it will be (its CRC is not yet known).
        let measured = |at, len| InPlaceEntry { at, len, crc: 0 };
        entries.push(PackSource::InPlace(
            DATA_ENTRY,
            measured(data_at, data_log.len()),
        ));
        let index_len = files_len(std::slice::from_ref(&index))?;
        let index_at = entry_start(&entries, INDEX_ENTRY, index_len)?;
        entries.push(PackSource::InPlace(
            INDEX_ENTRY,
            measured(index_at, index_len),
        ));
        let idmap_at = entry_start(&entries, IDMAP_ENTRY, files_len(&idmap_parts)?)?;
        let (mut index_out, index_log) = InPlaceWriter::new(file.try_clone()?, index_at);
        let (mut idmap_out, idmap_log) = InPlaceWriter::new(file.try_clone()?, idmap_at);
        // The data's event ids are raised where it lies in the pack, as the
        // index is copied.
        let changed = renumber::renumber(file, data_at, (&index, &mut index_out), &bases, || {
            copy_files(IDMAP_ENTRY, &idmap_parts, &mut idmap_out).map(drop)
        })?;
        entries.truncate(entries.len() - 2);
        entries.extend([
            PackSource::InPlace(DATA_ENTRY, data_log.entry(file, &changed)?),
            PackSource::InPlace(INDEX_ENTRY, index_log.entry(file, &[])?),
            PackSource::InPlace(IDMAP_ENTRY, idmap_log.entry(file, &[])?),
            PackSource::Bytes("diff.threadmap", &threadmap),
        ]);
        summary.bytes = write_pack_into(pack, &entries)?.bytes;
        Ok(summary)
    })
}

/// The pack's entry holding each diff tracepoint's left and right ids.
const IDMAP_ENTRY: &str = "diff.idmap";

/// The pack's entries before its data: `.diff`, the inputs' own
/// descriptions, and `info`.
fn head<'e, L, R>(
    left: &'e DiffInput<'_, L>,
    right: &'e DiffInput<'_, R>,
    info: &'e str,
) -> Vec<PackSource<'e>> {
    let mut entries = vec![PackSource::Bytes(".diff", &[])];
    if let Some(text) = &left.info {
        entries.push(PackSource::Bytes("info.left.txt", text.as_bytes()));
    }
    if let Some(text) = &right.info {
        entries.push(PackSource::Bytes("info.right.txt", text.as_bytes()));
    }
    entries.push(PackSource::Bytes(INFO_ENTRY, info.as_bytes()));
    entries
}

/// One thread of the diff to write: a matched pair, or a thread without a
/// partner.
struct Job<L, R> {
    id: i32,
    name: String,
    start: Start<L, R>,
    thread: StreamingThread,
    /// Where its part of the id map goes.
    idmap: PathBuf,
}

/// What a job wrote: its summary (events numbered from 0), its warnings,
/// its count of tracepoints and its part of the id map.
type JobDone = (ThreadSummary, Vec<String>, i64, PathBuf);

/// Diffs `jobs` on as many threads as there are cores (each pair's two
/// sides are walked on threads of their own), each numbering its events
/// from 0; their results in order.
fn run_jobs<L: TraceTree, R: TraceTree>(
    jobs: Vec<Job<L::Node, R::Node>>,
    left: &L,
    right: &R,
    options: &DiffOptions,
    agree: (bool, Option<u64>),
) -> Result<Vec<JobDone>> {
    let count = jobs.len();
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(count)
        .max(1);
    let queue = Mutex::new(jobs.into_iter().enumerate());
    let results: Vec<Mutex<Option<Result<JobDone>>>> =
        (0..count).map(|_| Mutex::new(None)).collect();
    let failed = AtomicBool::new(false);
    let work = || {
        loop {
            if failed.load(Ordering::Relaxed) {
                return;
            }
            let next = queue.lock().unwrap_or_else(|e| e.into_inner()).next();
            let Some((at, job)) = next else {
                return;
            };
            let result = run_job(job, left, right, options, agree);
            if result.is_err() {
                failed.store(true, Ordering::Relaxed);
            }
            *results[at].lock().unwrap_or_else(|e| e.into_inner()) = Some(result);
        }
    };
    std::thread::scope(|scope| {
        for _ in 1..workers {
            scope.spawn(work);
        }
        work();
    });
    let mut done = Vec::with_capacity(count);
    for result in results {
        match result.into_inner().unwrap_or_else(|e| e.into_inner()) {
            Some(result) => done.push(result?),
            None => {
                return Err(Error::internal("a thread of the diff was not written"));
            }
        }
    }
    Ok(done)
}

/// Diffs one job into its thread of the output and its part of the id map.
fn run_job<L: TraceTree, R: TraceTree>(
    job: Job<L::Node, R::Node>,
    left: &L,
    right: &R,
    options: &DiffOptions,
    (agree, raw): (bool, Option<u64>),
) -> Result<JobDone> {
    let file = File::create(&job.idmap).map_err(|e| Error::io(&job.idmap, e))?;
    let mut idmap = BufWriter::with_capacity(1 << 16, file);
    let mut summary = ThreadSummary {
        thread: job.id,
        name: job.name,
        ..ThreadSummary::default()
    };
    let mut warnings = Vec::new();
    let mut next_event = 0i64;
    let mut left_side = Side {
        tree: left,
        ids: Reinterner::new(left.context()),
    };
    let mut right_side = Side {
        tree: right,
        ids: Reinterner::new(right.context()),
    };
    let walk = Walk {
        out: ThreadOut {
            thread: job.thread,
            id: ThreadId(job.id),
            next_event: &mut next_event,
            idmap: &mut idmap,
            raw: raw.map(|bytes| RawCopy::new(right.context(), bytes)),
        },
        summary: &mut summary,
        max_edits: options.max_edits,
        max_held: options.max_held,
        max_keys: options.max_keys,
        warnings: &mut warnings,
        by_bytes: bulk::ByBytes::new(agree, options.min_copied_bytes),
    };
    walk.run(&mut left_side, &mut right_side, job.start)?;
    idmap.flush().map_err(|e| Error::io(&job.idmap, e))?;
    Ok((summary, warnings, next_event, job.idmap))
}

fn millis() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

/// `info.txt` in the reference's form (`TraceMetaInfo.print`): only what a
/// reader needs, as properties.
fn info_text<L, R>(
    left: &DiffInput<'_, L>,
    right: &DiffInput<'_, R>,
    started: u128,
    ended: u128,
) -> String {
    let escape_key = |s: &str| s.replace('\\', "\\\\").replace('=', "\\=");
    let escape_value = |s: &str| {
        s.replace('\\', "\\\\")
            .replace('\r', "\\r")
            .replace('\n', "\\n")
            .replace('\t', "\\t")
    };
    let mut properties = [
        ("tracetree.format.version", "22".to_string()),
        ("tracetree.left", left.name.to_string()),
        ("tracetree.left.bytes", left.bytes.to_string()),
        ("tracetree.right", right.name.to_string()),
        ("tracetree.right.bytes", right.bytes.to_string()),
        ("tracetree.version", env!("CARGO_PKG_VERSION").to_string()),
    ];
    properties.sort();
    let mut text = format!(
        "Class: \nMethod: \nStart time: {started}\nEnd time: {ended}\nJVM arguments: \nAgent arguments: \nProperties:\n"
    );
    for (key, value) in properties {
        text.push_str(&format!(" {}={}\n", escape_key(key), escape_value(&value)));
    }
    text.push_str("\nEnvironment:\n");
    text
}
