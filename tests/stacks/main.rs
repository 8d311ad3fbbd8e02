//! Call-stack exports (folded, speedscope, Chrome, Perfetto) checked
//! against the trace's own structure, counted here by a plain walk of the
//! eager loader (another reader than the one the export walks); and read
//! back by parsers that are not ours (`viewers.rs`).

mod diffs;
mod flame;
mod viewers;
mod zoom;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value as Json;

use tracetree::common::{ClassId, CodeLocationId, EventId, MethodId, ThreadId};
use tracetree::export::stacks::{StackFormat, StackOptions, StackSummary};
use tracetree::generate::Shape;
use tracetree::lowlevel::Object;
use tracetree::model::{
    ClassDescriptor, DiffStatus, Footer, JavaStr, MethodDescriptor, Tracepoint, TracepointBody,
    TracepointHeader, TracepointType, Type, Value,
};
use tracetree::read::{EagerTrace, LazyTraceReader};
use tracetree::tree::TraceTree;
use tracetree::write::{DumpWriter, TraceRecorder};

use tracetree_testkit::files::generated;
use tracetree_testkit::lazy::{reference_traces, testdata_traces};

const FORMATS: [StackFormat; 4] = [
    StackFormat::Folded,
    StackFormat::Speedscope,
    StackFormat::Chrome,
    StackFormat::Perfetto,
];

/// Exports `trace` into `dir` as `format`; the file and the summary.
fn export(
    trace: &Path,
    dir: &Path,
    format: StackFormat,
    tune: impl FnOnce(&mut StackOptions),
) -> (PathBuf, StackSummary) {
    let reader = LazyTraceReader::open(trace).unwrap();
    let out = dir.join(format!("out.{}", format.name()));
    let mut options = StackOptions::new(format, "test");
    options.force = true;
    tune(&mut options);
    let summary = options.export(&reader, &out, &|_| {}).unwrap();
    (out, summary)
}

/// Folded lines as stack → weight.
fn read_folded(path: &Path) -> BTreeMap<String, u64> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut stacks = BTreeMap::new();
    for line in text.lines() {
        let (stack, weight) = line.rsplit_once(' ').expect("STACK WEIGHT");
        let weight: u64 = weight.parse().expect("a weight");
        assert!(weight > 0, "{line}");
        assert!(
            stacks.insert(stack.to_string(), weight).is_none(),
            "{stack} twice"
        );
    }
    stacks
}

/// A container's frame name, worked out here from the reference objects.
fn frame_name(trace: &EagerTrace, tracepoint: &Tracepoint<'_>) -> String {
    match &tracepoint.body {
        TracepointBody::MethodCall { method, .. } => match trace.context().method(*method) {
            Ok(m) => {
                let class = trace.context().class(m.class).unwrap();
                format!("{}.{}", class.name, m.name)
            }
            Err(_) => format!("<missing method {method}>"),
        },
        _ => tracepoint.tracepoint_type().name().to_string(),
    }
}

/// What a plain walk of the trace says the export holds.
#[derive(Debug, Default)]
struct Expected {
    /// Folded stack → its own weight.
    folded: BTreeMap<String, u64>,
    /// Containers by thread (each a frame opened and closed once).
    containers: BTreeMap<i32, u64>,
    /// Each thread's end position (its total weight).
    ends: BTreeMap<i32, u64>,
    /// Containers by frame name.
    calls: BTreeMap<String, u64>,
    tracepoints: u64,
}

/// One open container of the expected walk.
struct OpenFrame {
    path: String,
    samples: Option<u64>,
    own: u64,
    children: u64,
}

/// Walks every thread of `trace` (eager loader), each node's children in
/// order with an explicit stack, to count the stacks' weights.
fn expected(path: &Path, only: Option<(ThreadId, EventId)>) -> Expected {
    let trace = EagerTrace::open(path).unwrap();
    let names = LazyTraceReader::open(path).unwrap();
    let mut expected = Expected::default();
    for thread in trace.thread_ids() {
        let name = names
            .thread_name(thread)
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| format!("thread {thread}"));
        let mut roots = trace.roots(thread).unwrap();
        let mut prefix = name.clone();
        if let Some((root_thread, event)) = only {
            if root_thread != thread {
                continue;
            }
            let root = trace.find_event(event).unwrap();
            // The path above the root, from the parents' chain.
            let mut above = Vec::new();
            let mut at = trace.node(root).parent();
            while let Some(parent) = at {
                above.push(frame_name(&trace, &trace.node(parent).tracepoint()));
                at = trace.node(parent).parent();
            }
            for frame in above.iter().rev() {
                prefix = format!("{prefix};{frame}");
            }
            roots = vec![root];
        }
        let mut stack: Vec<OpenFrame> = Vec::new();
        let mut top = 0u64;
        let mut end = 0u64;
        let mut containers = 0u64;
        let mut close = |frame: OpenFrame, parent: Option<&mut OpenFrame>, end: &mut u64| {
            let mut total = frame.own + frame.children;
            if let Some(samples) = frame.samples {
                total = total.max(samples);
            }
            let own = total - frame.children;
            if own > 0 {
                *expected.folded.entry(frame.path.clone()).or_default() += own;
            }
            match parent {
                Some(parent) => parent.children += total,
                None => *end += total,
            }
        };
        let mut pending: Vec<_> = roots.into_iter().rev().collect();
        let mut depth_of_pending = vec![0usize; pending.len()];
        while let Some(node) = pending.pop() {
            let depth = depth_of_pending.pop().unwrap();
            while stack.len() > depth {
                let frame = stack.pop().unwrap();
                close(frame, stack.last_mut(), &mut end);
            }
            expected.tracepoints += 1;
            let data = trace.node(node);
            let tracepoint = &data.tracepoint();
            let footer = data.footer();
            if tracepoint.is_container() {
                containers += 1;
                let samples = match (&tracepoint.body, footer.as_ref()) {
                    (
                        TracepointBody::MethodCall { flags, .. },
                        Some(Footer::MethodCall {
                            result: Value::Long(count),
                            ..
                        }),
                    ) if flags & Tracepoint::SAMPLE_COUNT_FLAG != 0 => Some((*count).max(0) as u64),
                    _ => None,
                };
                let frame = frame_name(&trace, tracepoint);
                *expected.calls.entry(frame.clone()).or_default() += 1;
                let parent = stack.last().map_or(&prefix, |f| &f.path);
                let path = format!("{parent};{frame}");
                stack.push(OpenFrame {
                    path,
                    own: u64::from(samples.is_none()),
                    samples,
                    children: 0,
                });
                let children = trace.children(node).unwrap();
                for &child in children.iter().rev() {
                    pending.push(child);
                    depth_of_pending.push(depth + 1);
                }
            } else {
                match stack.last_mut() {
                    Some(frame) => frame.own += 1,
                    None => {
                        top += 1;
                        end += 1;
                    }
                }
            }
        }
        while let Some(frame) = stack.pop() {
            close(frame, stack.last_mut(), &mut end);
        }
        if top > 0 {
            *expected.folded.entry(name.clone()).or_default() += top;
        }
        expected.containers.insert(thread.get(), containers);
        expected.ends.insert(thread.get(), end);
    }
    expected
}

/// The traces every test runs on: the bundled ones, the reference traces
/// present, a generated mixed trace and a sample tree.
fn traces(dir: &Path) -> Vec<PathBuf> {
    let mut traces = testdata_traces();
    traces.extend(reference_traces());
    let generated = generated(dir, Shape::Mixed, 3, 1 << 20, Some(64 << 10));
    traces.push(generated);
    traces.push(sample_tree(dir));
    traces
}

/// A trace like a JFR sample import: calls flagged with their sample
/// counts, `a(10) { b(6) { c(4) }, d(3) }` in one thread and `a(5)` in
/// another.
fn sample_tree(dir: &Path) -> PathBuf {
    let steps: [(&str, i32, i64); 8] = [
        ("open", 0, 10),
        ("open", 1, 6),
        ("open", 2, 4),
        ("close", 2, 4),
        ("close", 1, 6),
        ("open", 3, 3),
        ("close", 3, 3),
        ("close", 0, 10),
    ];
    sample_tree_of(&dir.join("samples.trace"), &steps, 5)
}

/// A sample tree at `path`: the `main` thread opens and closes the calls
/// of `steps` (method `a`..`d` by number, its count at the close), the
/// `other` thread has one call `a` of `other` samples.
fn sample_tree_of(path: &Path, steps: &[(&str, i32, i64)], other_samples: i64) -> PathBuf {
    let mut writer = DumpWriter::new();
    let call = |event: i32, method: i32, thread: ThreadId| Tracepoint {
        header: TracepointHeader {
            tracepoint_type: TracepointType::MethodCall,
            code_location: CodeLocationId::new(-1),
            thread,
            event: EventId::new(event),
            diff_status: DiffStatus::None,
        },
        child_diff_statuses: Vec::new(),
        body: TracepointBody::MethodCall {
            method: MethodId::new(method),
            receiver: Value::Null,
            arguments: Vec::new(),
            flags: Tracepoint::SAMPLE_COUNT_FLAG,
        },
    };
    let samples = |count: i64| Footer::MethodCall {
        result: Value::Long(count),
        exception: JavaStr::new(""),
    };
    writer
        .add_reference(&Object::ClassDescriptor(ClassDescriptor {
            id: ClassId::new(0),
            name: JavaStr::new("S"),
        }))
        .unwrap();
    for (id, name) in ["a", "b", "c", "d"].into_iter().enumerate() {
        writer
            .add_reference(&Object::MethodDescriptor(MethodDescriptor {
                id: MethodId::new(id as i32),
                class: ClassId::new(0),
                name: JavaStr::new(name),
                return_type: Type::Long,
                parameter_types: Vec::new(),
            }))
            .unwrap();
    }
    let main = writer.add_thread("main").unwrap();
    let other = writer.add_thread("other").unwrap();
    let mut event = 0;
    for &(step, method, count) in steps {
        if step == "open" {
            writer
                .push_tracepoint(main, &call(event, method, main))
                .unwrap();
            event += 1;
        } else {
            writer.push_footer(main, &samples(count)).unwrap();
        }
    }
    writer
        .push_tracepoint(other, &call(event, 0, other))
        .unwrap();
    writer.push_footer(other, &samples(other_samples)).unwrap();
    writer.save(path).unwrap();
    path.to_path_buf()
}

#[test]
fn folded_weights_match_a_count_by_a_plain_walk() {
    let dir = tempfile::tempdir().unwrap();
    for trace in traces(dir.path()) {
        let expected = expected(&trace, None);
        let (out, summary) = export(&trace, dir.path(), StackFormat::Folded, |_| {});
        assert_eq!(summary.tracepoints, expected.tracepoints, "{trace:?}");
        assert_eq!(read_folded(&out), expected.folded, "{trace:?}");
    }
}

#[test]
fn sample_trees_weigh_their_own_samples() {
    let dir = tempfile::tempdir().unwrap();
    let trace = sample_tree(dir.path());
    let (out, _) = export(&trace, dir.path(), StackFormat::Folded, |_| {});
    let want: BTreeMap<String, u64> = [
        ("main;S.a", 1),
        ("main;S.a;S.b", 2),
        ("main;S.a;S.b;S.c", 4),
        ("main;S.a;S.d", 3),
        ("other;S.a", 5),
    ]
    .into_iter()
    .map(|(stack, weight)| (stack.to_string(), weight))
    .collect();
    assert_eq!(read_folded(&out), want);
    // The timelines give each frame as much time as it has samples.
    let (out, _) = export(&trace, dir.path(), StackFormat::Speedscope, |_| {});
    let json: Json = serde_json::from_slice(&std::fs::read(out).unwrap()).unwrap();
    let main = &json["profiles"][0];
    assert_eq!(main["endValue"], 10);
    let opens: Vec<(u64, u64)> = main["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["frame"].as_u64().unwrap(), e["at"].as_u64().unwrap()))
        .collect();
    // a at 0, b at 0, c at 0, c ends at 4, b at 6, d 6..9, a at 10.
    let ats: Vec<u64> = opens.iter().map(|&(_, at)| at).collect();
    assert_eq!(ats, [0, 0, 0, 4, 6, 6, 9, 10]);
}

/// Checks that `events` (thread → (open?, frame or name, at) in file
/// order) nest, balance, never go back in time, open as many frames as the
/// thread has containers, and end at the thread's total weight.
fn check_timeline(
    what: &str,
    events: &BTreeMap<i32, Vec<(bool, String, u64)>>,
    expected: &Expected,
) {
    assert_eq!(
        events.keys().collect::<Vec<_>>(),
        expected.containers.keys().collect::<Vec<_>>(),
        "{what}: threads"
    );
    for (thread, events) in events {
        let mut open: Vec<String> = Vec::new();
        let (mut last, mut opened) = (0, 0);
        for (begins, frame, at) in events {
            assert!(*at >= last, "{what}: thread {thread} goes back in time");
            last = *at;
            if *begins {
                opened += 1;
                open.push(frame.clone());
            } else {
                let top = open.pop().expect("a close without an open");
                assert!(
                    frame.is_empty() || *frame == top,
                    "{what}: {frame} closes {top}"
                );
            }
        }
        assert!(
            open.is_empty(),
            "{what}: thread {thread} leaves frames open"
        );
        assert_eq!(
            opened, expected.containers[thread],
            "{what}: thread {thread}"
        );
        if opened > 0 {
            assert_eq!(last, expected.ends[thread], "{what}: thread {thread}'s end");
        }
    }
}

#[test]
fn speedscope_and_chrome_events_balance_nest_and_count_containers() {
    let dir = tempfile::tempdir().unwrap();
    for trace in traces(dir.path()) {
        let expected = expected(&trace, None);
        let reader = LazyTraceReader::open(&trace).unwrap();
        let (out, _) = export(&trace, dir.path(), StackFormat::Speedscope, |_| {});
        let json: Json = serde_json::from_slice(&std::fs::read(out).unwrap()).unwrap();
        let frames = json["shared"]["frames"].as_array().unwrap().len() as u64;
        let mut events = BTreeMap::new();
        let profiles = json["profiles"].as_array().unwrap();
        for (profile, thread) in profiles.iter().zip(reader.thread_ids()) {
            assert_eq!(profile["type"], "evented");
            assert_eq!(profile["unit"], "none");
            let list: Vec<_> = profile["events"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| {
                    let frame = e["frame"].as_u64().unwrap();
                    assert!(frame < frames, "frame {frame} of {frames}");
                    (
                        e["type"] == "O",
                        frame.to_string(),
                        e["at"].as_u64().unwrap(),
                    )
                })
                .collect();
            if let Some(last) = list.last() {
                assert_eq!(profile["endValue"].as_u64(), Some(last.2));
            }
            events.insert(thread.get(), list);
        }
        check_timeline(&format!("speedscope {trace:?}"), &events, &expected);

        let (out, summary) = export(&trace, dir.path(), StackFormat::Chrome, |_| {});
        let json: Json = serde_json::from_slice(&std::fs::read(out).unwrap()).unwrap();
        let mut events: BTreeMap<i32, Vec<_>> = BTreeMap::new();
        let list = json["traceEvents"].as_array().unwrap();
        assert_eq!(list.len() as u64, summary.events);
        for event in list {
            assert_eq!(event["pid"], 1);
            let tid = event["tid"].as_i64().unwrap() as i32;
            let thread = events.entry(tid).or_default();
            match event["ph"].as_str().unwrap() {
                "M" => assert_eq!(event["name"], "thread_name"),
                "B" => thread.push((
                    true,
                    event["name"].as_str().unwrap().to_string(),
                    event["ts"].as_u64().unwrap(),
                )),
                "E" => thread.push((false, String::new(), event["ts"].as_u64().unwrap())),
                other => panic!("unexpected phase {other}"),
            }
        }
        check_timeline(&format!("chrome {trace:?}"), &events, &expected);
    }
}

#[test]
fn a_root_exports_its_subtree_below_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let trace = generated(dir.path(), Shape::Mixed, 2, 256 << 10, None);
    // A container a few levels down in the second thread.
    let reader = LazyTraceReader::open(&trace).unwrap();
    let thread = reader.thread_ids()[1];
    let mut root = None;
    reader
        .walk_thread(thread, tracetree::read::WalkDetail::Headers, |walked| {
            if walked.depth == 3 && walked.header.tracepoint_type.is_container() {
                root = Some(walked.header.event);
            }
            Ok(root.is_none())
        })
        .unwrap();
    let root = root.expect("a container at depth 3");
    let expected = expected(&trace, Some((thread, root)));
    let (out, summary) = export(&trace, dir.path(), StackFormat::Folded, |o| {
        o.root = Some(root)
    });
    assert_eq!(summary.threads, 1);
    assert_eq!(summary.tracepoints, expected.tracepoints);
    let folded = read_folded(&out);
    assert_eq!(folded, expected.folded);
    assert_eq!(folded.values().sum::<u64>(), expected.tracepoints);
    // The timelines open the path above the root first.
    let (out, _) = export(&trace, dir.path(), StackFormat::Chrome, |o| {
        o.root = Some(root)
    });
    let json: Json = serde_json::from_slice(&std::fs::read(out).unwrap()).unwrap();
    let begins = json["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "B")
        .count() as u64;
    assert_eq!(begins, expected.containers[&thread.get()] + 3);
    // A root outside the threads asked for, or no such event, is refused.
    let reader = LazyTraceReader::open(&trace).unwrap();
    let mut options = StackOptions::new(StackFormat::Folded, "t");
    options.force = true;
    options.root = Some(root);
    options.threads = Some(vec![reader.thread_ids()[0]]);
    let out = dir.path().join("refused");
    assert!(options.export(&reader, &out, &|_| {}).is_err());
    options.threads = None;
    options.root = Some(EventId::new(i32::MAX));
    assert!(options.export(&reader, &out, &|_| {}).is_err());
    assert!(!out.exists());
}

#[test]
fn threads_are_chosen_and_outputs_replaced_only_when_forced() {
    let dir = tempfile::tempdir().unwrap();
    let trace = tracetree_testkit::files::testdata("multi-thread.trace");
    let reader = LazyTraceReader::open(&trace).unwrap();
    let threads = reader.thread_ids();
    let out = dir.path().join("out.folded");
    let mut options = StackOptions::new(StackFormat::Folded, "t");
    options.threads = Some(vec![threads[1]]);
    let summary = options.export(&reader, &out, &|_| {}).unwrap();
    assert_eq!(summary.threads, 1);
    let name = reader.thread_name(threads[1]).unwrap();
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.lines().all(|l| l.starts_with(&name)), "{text}");
    // Not again without force; the file is left as it was.
    options.threads = None;
    let error = options.export(&reader, &out, &|_| {}).unwrap_err();
    assert!(error.to_string().contains("--force"), "{error}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), text);
    options.force = true;
    options.export(&reader, &out, &|_| {}).unwrap();
    assert_ne!(std::fs::read_to_string(&out).unwrap(), text);
    // An unknown thread is refused.
    options.threads = Some(vec![ThreadId::new(12345)]);
    assert!(options.export(&reader, &out, &|_| {}).is_err());
    // Progress adds up to the tracepoints walked.
    let walked = std::sync::atomic::AtomicU64::new(0);
    options.threads = None;
    let summary = options
        .export(&reader, &out, &|n| {
            walked.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
        })
        .unwrap();
    assert_eq!(walked.into_inner(), summary.tracepoints);
}

/// Readers of `all-types.trace` cut short or with a byte flipped, at
/// points across the file (those that open).
fn damaged_readers() -> Vec<LazyTraceReader> {
    let trace = tracetree_testkit::files::testdata("all-types.trace");
    let data = std::fs::read(&trace).unwrap();
    let index = std::fs::read(tracetree::LazyTraceReader::index_path(&trace)).unwrap();
    let mut readers = Vec::new();
    for cut in (16..data.len()).step_by(data.len() / 40 + 1) {
        for flip in [None, Some(cut)] {
            let mut damaged = data[..].to_vec();
            match flip {
                None => damaged.truncate(cut),
                Some(at) => damaged[at] ^= 0x5a,
            }
            if let Ok(reader) =
                tracetree_testkit::lazy::open_in_memory(&damaged, flip.map(|_| &index[..]), 1 << 20)
            {
                readers.push(reader);
            }
        }
    }
    readers
}

#[test]
fn damaged_traces_give_errors_or_partial_exports_never_panics() {
    let dir = tempfile::tempdir().unwrap();
    let mut outcomes = [0usize; 2];
    for reader in damaged_readers() {
        for format in FORMATS {
            let mut options = StackOptions::new(format, "t");
            options.force = true;
            let out = dir.path().join(format.name());
            let result = options.export(&reader, &out, &|_| {});
            outcomes[usize::from(result.is_ok())] += 1;
        }
    }
    assert!(outcomes[1] > 0, "nothing exported: {outcomes:?}");
}

#[test]
fn a_stopped_export_writes_nothing_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let trace = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/multi-thread.trace");
    let reader = LazyTraceReader::open(&trace).unwrap();
    for format in [StackFormat::Folded, StackFormat::Speedscope] {
        let out = dir.path().join(format!("stopped.{}", format.name()));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let mut options = StackOptions::new(format, "test");
        options.stop = Some(stop);
        match options.export(&reader, &out, &|_| {}) {
            Err(tracetree::Error::Cancelled(what)) => assert_eq!(what, "the export"),
            other => panic!("{format:?}: {other:?}"),
        }
        assert!(!out.exists(), "{format:?}: a stopped export left {out:?}");
        // An existing output stays as it was.
        std::fs::write(&out, b"kept").unwrap();
        options.force = true;
        assert!(options.export(&reader, &out, &|_| {}).is_err());
        assert_eq!(std::fs::read(&out).unwrap(), b"kept");
    }
}
