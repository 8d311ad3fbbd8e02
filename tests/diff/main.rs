//! The trace diff against the reference's own diffs of the bundled pairs
//! (printed text, id map and thread map byte for byte), and its summary,
//! thread modes and hostile inputs.

use std::io::Read;
use std::path::{Path, PathBuf};

use tracetree::common::EventId;
use tracetree::diff::{
    DiffInput, DiffOptions, DiffSummary, ThreadMatching, UnmatchedThreads, diff_traces,
};
use tracetree::model::DiffStatus;
use tracetree::print::PrintOptions;
use tracetree::read::EagerTrace;
use tracetree::tree::{Visit, VisitDetail};
use tracetree::{Error, LazyTraceReader, TraceBytes, TraceTree};

use tracetree_testkit::compare::assert_same_bytes;
use tracetree_testkit::files;

/// The reference's diff cases, or `None` (after saying why) when absent.
fn cases() -> Option<(PathBuf, Vec<(String, String)>)> {
    let dir = files::reference_traces()?.join("diff");
    let Ok(table) = std::fs::read_to_string(dir.join("cases.tsv")) else {
        tracetree_testkit::skip::cannot_run(&format!("{}/cases.tsv is missing", dir.display()));
        return None;
    };
    let cases = table
        .lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| {
            let (name, flags) = line.split_once('\t').unwrap_or((line, ""));
            (name.to_string(), flags.trim().to_string())
        })
        .collect();
    Some((dir, cases))
}

/// The options `tracetree diff` takes as `flags` (those the cases use).
fn options(flags: &str) -> DiffOptions {
    let mut options = DiffOptions::default();
    let words: Vec<&str> = flags.split_whitespace().collect();
    let mut i = 0;
    while i < words.len() {
        match (words[i], words.get(i + 1)) {
            ("--match", Some(&"index")) => {
                options.matching = ThreadMatching::ByIndex;
                i += 1;
            }
            ("--match", Some(&"name")) => i += 1,
            ("--start-threads", _) => options.start_threads = true,
            ("--only-start-threads", _) => options.only_start_threads = true,
            ("--unmatched", Some(&"skip")) => {
                options.unmatched = UnmatchedThreads::Skip;
                i += 1;
            }
            (word, _) => panic!("the cases use a flag this test does not know: {word}"),
        }
        i += 1;
    }
    options
}

fn diff_files(left: &Path, right: &Path, options: &DiffOptions, out: &Path) -> DiffSummary {
    let (l, r) = (
        LazyTraceReader::open(left).unwrap(),
        LazyTraceReader::open(right).unwrap(),
    );
    diff_traces(
        DiffInput::new(&l, "left"),
        DiffInput::new(&r, "right"),
        options,
        out,
    )
    .unwrap()
}

fn print(trace: &EagerTrace, verbose: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let mut options = PrintOptions::default();
    options.verbose = verbose;
    options.print(trace, &mut out).unwrap();
    out
}

fn entry(pack: &Path, name: &str) -> Vec<u8> {
    let mut zip = zip::ZipArchive::new(std::fs::File::open(pack).unwrap()).unwrap();
    let mut bytes = Vec::new();
    zip.by_name(name).unwrap().read_to_end(&mut bytes).unwrap();
    bytes
}

fn entry_names(pack: &Path) -> Vec<String> {
    let mut zip = zip::ZipArchive::new(std::fs::File::open(pack).unwrap()).unwrap();
    (0..zip.len())
        .map(|i| zip.by_index(i).unwrap().name().unwrap().to_string())
        .collect()
}

#[test]
fn bundled_pairs_diff_as_the_reference_prints_and_maps_them() {
    let Some((dir, cases)) = cases() else { return };
    assert!(!cases.is_empty());
    let scratch = tempfile::tempdir().unwrap();
    for (name, flags) in cases {
        let out = scratch.path().join(format!("{name}.packedtrace"));
        diff_files(
            &dir.join(format!("{name}.left.trace")),
            &dir.join(format!("{name}.right.trace")),
            &options(&flags),
            &out,
        );
        let trace = EagerTrace::open(&out).unwrap();
        for (verbose, expected) in [(true, "diff.txt"), (false, "diff.brief.txt")] {
            let expected = std::fs::read(dir.join(format!("{name}.{expected}"))).unwrap();
            assert_same_bytes(
                &format!("{name} printed (verbose: {verbose})"),
                &print(&trace, verbose),
                &expected,
            );
        }
        let reference = dir.join(format!("{name}.diff.packedtrace"));
        for map in ["diff.idmap", "diff.threadmap"] {
            assert_same_bytes(
                &format!("{name} {map}"),
                &entry(&out, map),
                &entry(&reference, map),
            );
        }
        assert_eq!(
            entry_names(&out),
            [
                ".diff",
                "info.txt",
                "trace.trace",
                "trace.idx",
                "diff.idmap",
                "diff.threadmap"
            ]
        );
        let info = String::from_utf8(entry(&out, "info.txt")).unwrap();
        assert!(
            info.starts_with("Class: \nMethod: \nStart time: "),
            "{info}"
        );
        assert!(info.contains("\n tracetree.left=left\n"), "{info}");
    }
}

/// Counts of the printed diff by marker (after each line's indentation):
/// `-`, `+`, `!`, and the unmarked lines (unchanged or virtual roots).
fn printed_counts(text: &str) -> [u64; 4] {
    let mut counts = [0; 4];
    for line in text.lines().filter(|line| !line.starts_with("# Thread")) {
        let body = line.trim_start_matches(' ');
        let slot = match body.get(..2) {
            Some("- ") => 0,
            Some("+ ") => 1,
            Some("! ") => 2,
            _ => 3,
        };
        counts[slot] += 1;
    }
    counts
}

#[test]
fn the_summary_counts_what_the_printed_diff_shows() {
    let Some((dir, cases)) = cases() else { return };
    let scratch = tempfile::tempdir().unwrap();
    for (name, flags) in cases {
        let out = scratch.path().join(format!("{name}.packedtrace"));
        let summary = diff_files(
            &dir.join(format!("{name}.left.trace")),
            &dir.join(format!("{name}.right.trace")),
            &options(&flags),
            &out,
        );
        let trace = EagerTrace::open(&out).unwrap();
        let text = String::from_utf8(print(&trace, false)).unwrap();
        let [removed, added, edited, plain] = printed_counts(&text);
        let sum = |f: fn(&tracetree::diff::ThreadSummary) -> u64| -> u64 {
            summary.threads.iter().map(f).sum()
        };
        assert_eq!(sum(|t| t.removed), removed, "{name}");
        assert_eq!(sum(|t| t.added), added, "{name}");
        assert_eq!(sum(|t| t.edited) * 2, edited, "{name}");
        assert_eq!(sum(|t| t.unchanged), plain, "{name}: no virtual roots here");
        assert_eq!(
            summary.tracepoints,
            removed + added + edited + plain,
            "{name}"
        );
        // And by the statuses the pack's tracepoints carry.
        let mut statuses = [0u64; 5];
        for thread in trace.thread_ids() {
            for root in trace.roots(thread).unwrap() {
                let mut stack = vec![root];
                while let Some(node) = stack.pop() {
                    let status = trace.visit(node, |t, _| t.header.diff_status).unwrap();
                    if status != DiffStatus::None {
                        statuses[status as usize] += 1;
                    }
                    stack.extend(trace.children(node).unwrap());
                }
            }
        }
        assert_eq!(statuses[0], sum(|t| t.unchanged), "{name}");
        assert_eq!(statuses[3], sum(|t| t.edited), "{name}");
        assert_eq!(statuses[4], sum(|t| t.edited), "{name}");
    }
}

#[test]
fn a_trace_diffed_with_itself_is_all_unchanged_and_maps_every_event_to_itself() {
    let Some(dir) = files::reference_traces() else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let trace = dir.join("small-stream.trace");
    let out = scratch.path().join("same.packedtrace");
    let summary = diff_files(&trace, &trace, &DiffOptions::default(), &out);
    let eager = EagerTrace::open(&trace).unwrap();
    assert_eq!(summary.tracepoints, eager.nodes().len() as u64);
    for thread in &summary.threads {
        assert_eq!((thread.removed, thread.added, thread.edited), (0, 0, 0));
        assert_eq!(thread.first_divergence, None);
    }
    let idmap = entry(&out, "diff.idmap");
    assert_eq!(idmap.len() as u64, summary.tracepoints * 8);
    for line in idmap.chunks(8) {
        assert_eq!(line[..4], line[4..], "an event paired with another");
    }
}

#[test]
fn a_diff_maps_each_event_back_to_its_inputs_as_the_reference_does() {
    let Some((dir, cases)) = cases() else { return };
    let scratch = tempfile::tempdir().unwrap();
    for (name, flags) in cases {
        let out = scratch.path().join(format!("{name}.packedtrace"));
        let left = dir.join(format!("{name}.left.trace"));
        diff_files(
            &left,
            &dir.join(format!("{name}.right.trace")),
            &options(&flags),
            &out,
        );
        let ours_reader = LazyTraceReader::open(&out).unwrap();
        let ours = ours_reader.diff_map().expect("a map");
        // The reference packs its maps deflated: read another way.
        let reference_reader =
            LazyTraceReader::open(dir.join(format!("{name}.diff.packedtrace"))).unwrap();
        let reference = reference_reader.diff_map().expect("the reference's map");
        assert_eq!((ours.problem(), reference.problem()), (None, None));
        assert!(LazyTraceReader::open(&left).unwrap().diff_map().is_none());
        let trace = EagerTrace::open(&out).unwrap();
        assert_eq!(ours.len(), trace.nodes().len() as u64, "{name}");
        let (mut paired, mut one_sided) = (0, 0);
        for thread in trace.thread_ids() {
            assert_eq!(ours.thread(thread), reference.thread(thread), "{name}");
            let sides = ours.thread(thread).expect("every thread mapped");
            assert!(sides.left.is_some() || sides.right.is_some(), "{name}");
            let roots = trace.roots(thread).unwrap();
            trace
                .walk_visit(&roots, None, VisitDetail::default(), |visit| {
                    let Visit::Node { tracepoint, .. } = visit else {
                        return Ok(());
                    };
                    let event = tracepoint.header.event;
                    let origin = ours.event(event)?.expect("every event mapped");
                    assert_eq!(reference.event(event)?, Some(origin), "{name} {event:?}");
                    let expected = match tracepoint.header.diff_status {
                        DiffStatus::Added => (false, true),
                        DiffStatus::Removed => (true, false),
                        DiffStatus::None => (false, false),
                        _ => (true, true),
                    };
                    let found = (origin.left.is_some(), origin.right.is_some());
                    assert_eq!(found, expected, "{name} {event:?}");
                    if found == (true, true) {
                        paired += 1;
                    } else {
                        one_sided += 1;
                    }
                    Ok(())
                })
                .unwrap();
        }
        assert!(
            paired > 0 && one_sided > 0,
            "{name}: {paired} paired, {one_sided} not"
        );
        let past = i32::try_from(ours.len()).unwrap();
        assert_eq!(ours.event(EventId::new(past)).unwrap(), None);
        assert_eq!(ours.event(EventId::new(-1)).unwrap(), None);
    }
}

#[test]
fn a_damaged_map_is_left_out_and_said_and_the_diff_still_reads() {
    let Some(dir) = files::reference_traces() else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let trace = dir.join("small-stream.trace");
    let out = scratch.path().join("same.packedtrace");
    diff_files(&trace, &trace, &DiffOptions::default(), &out);
    let whole = LazyTraceReader::open(&out).unwrap();
    let lines = whole.diff_map().unwrap().len();
    // The pack written again with each map damaged in turn.
    let names = entry_names(&out);
    let cases = [
        ("cut", "not a whole number of 8-byte lines"),
        ("negative", "input event id -7"),
        ("threads", "says 1000 threads"),
    ];
    for (case, expected) in cases {
        let damaged = scratch.path().join(format!("{case}.packedtrace"));
        let mut zip = zip::ZipWriter::new(std::fs::File::create(&damaged).unwrap());
        for name in &names {
            let mut bytes = entry(&out, name);
            match (case, name.as_str()) {
                ("cut", "diff.idmap") => bytes.truncate(bytes.len() - 3),
                ("negative", "diff.idmap") => bytes[..4].copy_from_slice(&(-7i32).to_be_bytes()),
                ("threads", "diff.threadmap") => bytes[..4].copy_from_slice(&1000i32.to_be_bytes()),
                _ => {}
            }
            let options = zip::write::SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Stored);
            zip.start_file(name.as_str(), options).unwrap();
            std::io::Write::write_all(&mut zip, &bytes).unwrap();
        }
        zip.finish().unwrap();
        let reader = LazyTraceReader::open(&damaged).unwrap();
        assert_eq!(
            reader
                .child_count(reader.roots(reader.thread_ids()[0]).unwrap()[0])
                .ok(),
            whole
                .child_count(whole.roots(whole.thread_ids()[0]).unwrap()[0])
                .ok()
        );
        let map = reader.diff_map().expect("a map");
        let said = match case {
            "negative" => map.event(EventId::new(0)).unwrap_err().to_string(),
            _ => map.problem().expect("a problem").to_string(),
        };
        assert!(
            said.contains(expected) && said.contains(&*damaged.to_string_lossy()),
            "{said}"
        );
        match case {
            "cut" => assert_eq!(map.len(), lines - 1),
            "threads" => assert_eq!(map.thread(reader.thread_ids()[0]), None),
            _ => assert_eq!(
                map.event(EventId::new(1)).unwrap(),
                whole.diff_map().unwrap().event(EventId::new(1)).unwrap()
            ),
        }
    }
}

#[test]
fn threads_diffed_in_parallel_are_numbered_in_output_order_in_data_and_index() {
    use tracetree::generate::{GenerateOptions, Shape, generate_file};
    let scratch = tempfile::tempdir().unwrap();
    let trace = scratch.path().join("many.trace");
    let options = GenerateOptions {
        size: 600 << 10,
        threads: 5,
        shape: Shape::Mixed,
        seed: 3,
        block_size: Some(8 << 10),
    };
    generate_file(&trace, &options, |_| {}).unwrap();
    let reader = LazyTraceReader::open(&trace).unwrap();
    let mutated = scratch.path().join("mutated.trace");
    tracetree::generate::mutate(&reader, 0.02, 5, &mutated).unwrap();
    for right in [&trace, &mutated] {
        let out = scratch.path().join("d.packedtrace");
        let summary = diff_files(&trace, right, &DiffOptions::default(), &out);
        assert_eq!(summary.threads.len(), 5);
        let diff = LazyTraceReader::open(&out).unwrap();
        assert!(diff.report().index_used(), "{:?}", diff.report());
        // Pre-order, threads in turn: 0, 1, 2, ...
        let mut next = 0;
        for thread in diff.thread_ids() {
            let roots = diff.roots(thread).unwrap();
            diff.walk_visit(&roots, None, Default::default(), |visit| {
                if let tracetree::tree::Visit::Node {
                    node, tracepoint, ..
                } = visit
                {
                    assert_eq!(tracepoint.event().get(), next);
                    next += 1;
                    // A container's children are found through its index cell.
                    if tracepoint.is_container() {
                        diff.child_count(node).unwrap();
                    }
                }
                Ok(())
            })
            .unwrap();
        }
        assert_eq!(next as u64, summary.tracepoints);
        let eager = EagerTrace::open(&out).unwrap();
        assert_eq!(eager.nodes().len() as u64, summary.tracepoints);
        for thread in &summary.threads {
            if let Some(divergence) = &thread.first_divergence {
                let found = eager
                    .nodes()
                    .any(|node| node.try_tracepoint().unwrap().event() == divergence.event);
                assert!(found, "{divergence:?}");
            }
        }
        assert!(
            summary.threads.iter().any(|t| t.first_divergence.is_some()) == (right == &mutated)
        );
    }
}

#[test]
fn unmatched_threads_are_diffed_skipped_or_refused() {
    let Some((dir, _)) = cases() else { return };
    let (left, right) = (
        dir.join("renamed-thread.left.trace"),
        dir.join("renamed-thread.right.trace"),
    );
    let scratch = tempfile::tempdir().unwrap();
    let out = scratch.path().join("d.packedtrace");
    let mut skip = DiffOptions::default();
    skip.unmatched = UnmatchedThreads::Skip;
    let summary = diff_files(&left, &right, &skip, &out);
    let ids: Vec<i32> = summary.threads.iter().map(|t| t.thread).collect();
    assert_eq!(ids, [0, 2], "the renamed thread's two halves are skipped");
    assert_eq!(summary.thread_map.len(), 4, "the thread map keeps them");
    let trace = EagerTrace::open(&out).unwrap();
    assert_eq!(trace.thread_ids().len(), 2);

    let mut error = DiffOptions::default();
    error.unmatched = UnmatchedThreads::Error;
    let (l, r) = (
        LazyTraceReader::open(&left).unwrap(),
        LazyTraceReader::open(&right).unwrap(),
    );
    let failed = scratch.path().join("failed.packedtrace");
    let result = diff_traces(
        DiffInput::new(&l, "l"),
        DiffInput::new(&r, "r"),
        &error,
        &failed,
    );
    assert!(
        matches!(result, Err(Error::InvalidArgument { .. })),
        "{result:?}"
    );
    assert!(!failed.exists(), "a failed diff leaves nothing");

    // A map pairs the renamed thread at its own index; the threads it does
    // not name are unmatched (2 left, 2 right).
    let mut map = DiffOptions::default();
    map.matching = ThreadMatching::NameMap(vec![("worker-1".into(), "worker-1-rerun".into())]);
    let summary = diff_files(&left, &right, &map, &out);
    assert_eq!(
        summary.threads[0].name,
        "left: worker-1, right: worker-1-rerun"
    );
    assert!(summary.threads[0].unchanged > 0);
    assert_eq!(summary.threads.len(), 5);
}

#[test]
fn diffs_are_refused_as_inputs_unless_asked_for() {
    let Some((dir, _)) = cases() else { return };
    let diff = EagerTrace::open(dir.join("edits.diff.packedtrace")).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let out = scratch.path().join("dd.packedtrace");
    let mut left = DiffInput::new(&diff, "d");
    left.is_diff = true;
    let refused = diff_traces(
        left.clone(),
        DiffInput::new(&diff, "d"),
        &DiffOptions::default(),
        &out,
    );
    assert!(
        matches!(refused, Err(Error::InvalidArgument { .. })),
        "{refused:?}"
    );
    let mut allowed = DiffOptions::default();
    allowed.allow_diffs = true;
    let summary = diff_traces(left, DiffInput::new(&diff, "d"), &allowed, &out).unwrap();
    assert!(
        summary
            .threads
            .iter()
            .all(|t| t.removed + t.added + t.edited == 0)
    );
}

#[test]
fn a_tight_bound_on_myers_falls_back_with_a_warning() {
    let Some((dir, _)) = cases() else { return };
    let scratch = tempfile::tempdir().unwrap();
    let out = scratch.path().join("bounded.packedtrace");
    let mut bounded = DiffOptions::default();
    bounded.max_edits = 0;
    let summary = diff_files(
        &dir.join("edits.left.trace"),
        &dir.join("edits.right.trace"),
        &bounded,
        &out,
    );
    assert!(!summary.warnings.is_empty());
    assert!(
        summary.warnings[0].contains("aligned window by window"),
        "{:?}",
        summary.warnings
    );
    // Still a whole diff: every left and right event appears once.
    let idmap = entry(&out, "diff.idmap");
    let left_events = idmap.chunks(8).filter(|l| l[..4] != [0xff; 4]).count();
    let left = EagerTrace::open(dir.join("edits.left.trace")).unwrap();
    assert_eq!(left_events, left.nodes().len() + edited_pairs(&summary));
}

fn edited_pairs(summary: &DiffSummary) -> usize {
    summary.threads.iter().map(|t| t.edited as usize).sum()
}

#[test]
fn damaged_inputs_diff_or_fail_with_a_typed_error() {
    let Some(dir) = files::reference_traces() else {
        return;
    };
    let data = std::fs::read(dir.join("small-stream.trace")).unwrap();
    let clean = EagerTrace::load(TraceBytes::from_vec(data.clone())).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let out = scratch.path().join("hostile.packedtrace");
    let step = (data.len() / 97).max(1);
    let mut diffed = 0;
    for position in (16..data.len()).step_by(step) {
        for replacement in [data[position] ^ 0xFF, 0x00, 0x7F] {
            let mut bytes = data.clone();
            bytes[position] = replacement;
            let Ok(damaged) = EagerTrace::load(TraceBytes::from_vec(bytes)) else {
                continue;
            };
            let result = diff_traces(
                DiffInput::new(&clean, "clean"),
                DiffInput::new(&damaged, "damaged"),
                &DiffOptions::default(),
                &out,
            );
            if result.is_ok() {
                diffed += 1;
            }
        }
    }
    assert!(diffed > 0, "some damage leaves a trace to diff");
}

#[test]
fn a_mutated_copy_diffs_to_its_mutations() {
    let Some(dir) = files::reference_traces() else {
        return;
    };
    let left_path = dir.join("medium-stream.trace");
    let left = LazyTraceReader::open(&left_path).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let right_path = scratch.path().join("mutated.trace");
    let mutations = tracetree::generate::mutate(&left, 0.02, 3, &right_path).unwrap();
    assert!(
        mutations.removed > 0 && mutations.edited > 0,
        "{mutations:?}"
    );
    let out = scratch.path().join("mutated.packedtrace");
    // As recorded: a leaf left out can change what the post-processing
    // compresses (a call of two children with its first dropped).
    let mut options = DiffOptions::default();
    options.postprocess = false;
    let summary = diff_files(&left_path, &right_path, &options, &out);
    let sum = |f: fn(&tracetree::diff::ThreadSummary) -> u64| -> u64 {
        summary.threads.iter().map(f).sum()
    };
    // The right trace is the left one less some leaves: Myers' shortest
    // script removes exactly those, adds nothing.
    assert_eq!(sum(|t| t.removed), mutations.removed);
    assert_eq!(sum(|t| t.added), 0);
    assert!(sum(|t| t.edited) > 0);
}

/// The printed diff and its maps, for comparing two diffs of one pair.
fn diff_bytes(left: &Path, right: &Path, options: &DiffOptions, out: &Path) -> Vec<Vec<u8>> {
    diff_files(left, right, options, out);
    printed_and_maps(out)
}

/// The printed diff at `out` and its maps.
fn printed_and_maps(out: &Path) -> Vec<Vec<u8>> {
    let trace = EagerTrace::open(out).unwrap();
    vec![
        print(&trace, true),
        entry(out, "diff.idmap"),
        entry(out, "diff.threadmap"),
    ]
}

/// The bundled pairs, with the options of their cases.
fn case_pairs(dir: &Path, cases: &[(String, String)]) -> Vec<(PathBuf, PathBuf, DiffOptions)> {
    cases
        .iter()
        .map(|(name, flags)| {
            (
                dir.join(format!("{name}.left.trace")),
                dir.join(format!("{name}.right.trace")),
                options(flags),
            )
        })
        .collect()
}

#[test]
fn middles_read_past_and_walked_again_diff_as_middles_held_ahead() {
    let Some((dir, cases)) = cases() else { return };
    let scratch = tempfile::tempdir().unwrap();
    let medium = dir.parent().unwrap().join("medium-stream.trace");
    let left = LazyTraceReader::open(&medium).unwrap();
    let mutated = scratch.path().join("mutated.trace");
    tracetree::generate::mutate(&left, 0.05, 11, &mutated).unwrap();
    let mut pairs = case_pairs(&dir, &cases);
    pairs.push((medium.clone(), mutated.clone(), DiffOptions::default()));
    pairs.push((mutated, medium, DiffOptions::default()));
    let out = scratch.path().join("d.packedtrace");
    for (left, right, options) in pairs {
        let held = diff_bytes(&left, &right, &options, &out);
        for max_held in [0, 1, 7] {
            let mut bounded = options.clone();
            bounded.max_held = max_held;
            let read_past = diff_bytes(&left, &right, &bounded, &out);
            for (what, (a, b)) in ["printed", "idmap", "threadmap"]
                .iter()
                .zip(held.iter().zip(&read_past))
            {
                assert_same_bytes(
                    &format!("{} with {max_held} held: {what}", left.display()),
                    b,
                    a,
                );
            }
        }
    }
}

/// The printed diff and its maps of two traces read through `open`, and
/// how many tracepoints were copied by their bytes.
fn diff_read_by<T: TraceTree>(
    open: impl Fn(&Path) -> T,
    (left, right): (&Path, &Path),
    options: &DiffOptions,
    out: &Path,
) -> (Vec<Vec<u8>>, u64) {
    let (l, r) = (open(left), open(right));
    let summary = diff_traces(
        DiffInput::new(&l, "left"),
        DiffInput::new(&r, "right"),
        options,
        out,
    )
    .unwrap();
    let copied = summary.threads.iter().map(|t| t.copied).sum();
    (printed_and_maps(out), copied)
}

/// The lazy reader's subtrees of the same bytes are copied whole without
/// keys, their streams leaving them (as recorded and through the
/// post-processing; any size, or only large ones); the eager loader's are
/// compared node by node. All give the same diff: of a trace with a copy
/// of itself, with mutated copies (many changes, and a few, which leave
/// large equal subtrees among the changed ones), and of each bundled pair.
#[test]
fn subtrees_of_the_same_bytes_diff_as_compared_ones() {
    let Some((dir, cases)) = cases() else { return };
    let scratch = tempfile::tempdir().unwrap();
    let medium = dir.parent().unwrap().join("medium-stream.trace");
    let copy = scratch.path().join("copy.trace");
    std::fs::copy(&medium, &copy).unwrap();
    let mut copy_index = copy.clone().into_os_string();
    copy_index.push(".idx");
    let mut medium_index = medium.clone().into_os_string();
    medium_index.push(".idx");
    if Path::new(&medium_index).exists() {
        std::fs::copy(&medium_index, &copy_index).unwrap();
    }
    let left = LazyTraceReader::open(&medium).unwrap();
    let mut pairs = case_pairs(&dir, &cases);
    let plain = DiffOptions::default();
    pairs.push((medium.clone(), copy.clone(), plain.clone()));
    let mut sparse = Vec::new();
    for (rate, seed) in [(0.05, 5), (0.0005, 9)] {
        let mutated_path = scratch.path().join(format!("mutated-{seed}.trace"));
        tracetree::generate::mutate(&left, rate, seed, &mutated_path).unwrap();
        pairs.push((medium.clone(), mutated_path.clone(), plain.clone()));
        pairs.push((mutated_path.clone(), medium.clone(), plain.clone()));
        if rate < 0.01 {
            sparse.push(mutated_path);
        }
    }
    let out = scratch.path().join("d.packedtrace");
    for ((left, right, mut options), postprocess) in pairs
        .into_iter()
        .flat_map(|pair| [(pair.clone(), false), (pair, true)])
    {
        options.postprocess = postprocess;
        let (compared, none) = diff_read_by(
            |p| EagerTrace::open(p).unwrap(),
            (&left, &right),
            &options,
            &out,
        );
        assert_eq!(none, 0, "the eager loader has no bytes to compare");
        for min_copied_bytes in [options.min_copied_bytes, 0] {
            let mut options = options.clone();
            options.min_copied_bytes = min_copied_bytes;
            let (copied, count) = diff_read_by(
                |p| LazyTraceReader::open(p).unwrap(),
                (&left, &right),
                &options,
                &out,
            );
            let name = format!(
                "{} with {} (post-processed: {postprocess}, from {min_copied_bytes} bytes)",
                left.display(),
                right.display()
            );
            if right == copy
                || (min_copied_bytes == 0 && (sparse.contains(&left) || sparse.contains(&right)))
            {
                assert!(count > 0, "{name}: nothing was copied by its bytes");
            }
            for (what, (a, b)) in ["printed", "idmap", "threadmap"]
                .iter()
                .zip(compared.iter().zip(&copied))
            {
                assert_same_bytes(&format!("{name} {what}"), b, a);
            }
        }
    }
}

/// One recording written by the two writers (the collect-and-dump one and
/// the streaming one: their reference objects lie and may be numbered
/// differently) diffs as all unchanged, copied by its bytes or compared
/// node by node alike, as recorded and through the post-processing.
#[test]
fn one_recording_by_two_writers_diffs_unchanged_however_its_subtrees_are_copied() {
    let Some(dir) = files::reference_traces() else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let out = scratch.path().join("d.packedtrace");
    for name in ["small", "all-types"] {
        let dump = dir.join(format!("{name}-dump.trace"));
        let stream = dir.join(format!("{name}-stream.trace"));
        for (left, right) in [(&dump, &stream), (&stream, &dump), (&stream, &stream)] {
            for postprocess in [false, true] {
                let mut options = DiffOptions::default();
                options.postprocess = postprocess;
                options.min_copied_bytes = 0;
                let (compared, _) = diff_read_by(
                    |p| EagerTrace::open(p).unwrap(),
                    (left, right),
                    &options,
                    &out,
                );
                let (copied, _) = diff_read_by(
                    |p| LazyTraceReader::open(p).unwrap(),
                    (left, right),
                    &options,
                    &out,
                );
                let summary = diff_files(left, right, &options, &out);
                let what = format!(
                    "{} with {} (post-processed: {postprocess})",
                    left.display(),
                    right.display()
                );
                for thread in &summary.threads {
                    assert_eq!(
                        (thread.removed, thread.added, thread.edited),
                        (0, 0, 0),
                        "{what}"
                    );
                }
                for (part, (a, b)) in ["printed", "idmap", "threadmap"]
                    .iter()
                    .zip(compared.iter().zip(&copied))
                {
                    assert_same_bytes(&format!("{what} {part}"), b, a);
                }
            }
        }
    }
}

/// A list longer than `max_keys` children a side is aligned window by
/// window as it is read on: the keys held stay within a window (and one
/// more), not the list's length. Where Myers' bound is passed anyway
/// (`max_edits` 0), that is the diff of the lists held whole, byte for
/// byte; within it, still a whole diff, warned of.
#[test]
fn a_list_longer_than_the_keys_bound_is_aligned_as_it_is_read() {
    use tracetree::generate::{GenerateOptions, Shape, generate_file};
    // `WINDOW` children a side and one more.
    const WINDOW_KEYS: u64 = 1025;
    let scratch = tempfile::tempdir().unwrap();
    let trace = scratch.path().join("wide.trace");
    let options = GenerateOptions {
        size: 3 << 20,
        threads: 1,
        shape: Shape::Mixed,
        seed: 9,
        block_size: Some(64 << 10),
    };
    generate_file(&trace, &options, |_| {}).unwrap();
    let reader = LazyTraceReader::open(&trace).unwrap();
    let mutated = scratch.path().join("mutated.trace");
    tracetree::generate::mutate(&reader, 0.01, 4, &mutated).unwrap();
    let out = scratch.path().join("d.packedtrace");
    let held_keys = |summary: &DiffSummary| summary.threads.iter().map(|t| t.held_keys).max();
    for max_edits in [0, 2048] {
        let mut whole = DiffOptions::default();
        whole.max_edits = max_edits;
        whole.max_held = 0;
        whole.max_keys = usize::MAX;
        let summary = diff_files(&trace, &mutated, &whole, &out);
        let widest = held_keys(&summary).unwrap();
        assert!(widest > 3 * WINDOW_KEYS, "{widest} keys: too few to test");
        assert!(
            !summary
                .warnings
                .iter()
                .any(|w| w.contains("as they are read"))
        );
        let whole_bytes = printed_and_maps(&out);
        let mut bounded = whole.clone();
        bounded.max_keys = 64;
        let summary = diff_files(&trace, &mutated, &bounded, &out);
        let held = held_keys(&summary).unwrap();
        assert!(held <= WINDOW_KEYS, "{held} keys held of {widest}");
        assert!(
            summary
                .warnings
                .iter()
                .any(|w| w.contains("aligned window by window (1024 children a side) as they")),
            "{:?}",
            summary.warnings
        );
        if max_edits == 0 {
            for (what, (a, b)) in ["printed", "idmap", "threadmap"]
                .iter()
                .zip(whole_bytes.iter().zip(&printed_and_maps(&out)))
            {
                assert_same_bytes(&format!("{what} by windows as read"), b, a);
            }
        }
        // A whole diff: every left event appears once.
        let idmap = entry(&out, "diff.idmap");
        let left_events = idmap.chunks(8).filter(|l| l[..4] != [0xff; 4]).count();
        let left = EagerTrace::open(&trace).unwrap();
        assert_eq!(left_events, left.nodes().len() + edited_pairs(&summary));
    }
}
