//! Exports of a diff trace: folded stacks in the two-column form of
//! differential flame graphs, checked against inferno's own differential
//! (its port of FlameGraph's `difffolded.pl`) of the two inputs' folded
//! stacks and drawn by its flame graph writer; `diff` filters in every
//! call-stack format.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use tracetree::export::stacks::StackFormat;
use tracetree::model::DiffStatus;
use tracetree::read::LazyTraceReader;
use tracetree::search::SearchOptions;
use tracetree_testkit::diffs::diff_pair;

use super::{FORMATS, export, sample_tree, sample_tree_of};

/// Two-column folded stacks: stack → (left, right).
type Differential = BTreeMap<String, (u64, u64)>;

/// Two-column folded lines as stack → (left, right).
fn read_differential(text: &str) -> Differential {
    let mut stacks = BTreeMap::new();
    for line in text.lines() {
        let (rest, right) = line.rsplit_once(' ').expect("STACK LEFT RIGHT");
        let (stack, left) = rest.rsplit_once(' ').expect("STACK LEFT RIGHT");
        let counts = (left.parse().unwrap(), right.parse().unwrap());
        assert!(counts != (0, 0), "{line}");
        assert!(
            stacks.insert(stack.to_string(), counts).is_none(),
            "{stack} twice"
        );
    }
    stacks
}

#[test]
fn folded_diffs_are_what_inferno_makes_of_the_two_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let pair = diff_pair(dir.path(), 300_000, 3, 0.02);
    let (expected, ours_map) =
        differential_and_ours(dir.path(), &pair.left, &pair.right, &pair.diff);
    assert_eq!(ours_map, expected);
    let ours = std::fs::read_to_string(dir.path().join("diff/out.folded")).unwrap();

    // inferno draws it as a differential: widths from the right column,
    // each frame with its change.
    let mut options = inferno::flamegraph::Options::default();
    let mut svg = Vec::new();
    inferno::flamegraph::from_lines(&mut options, ours.lines(), &mut svg).unwrap();
    let svg = String::from_utf8(svg).unwrap();
    let right_total: u64 = expected.values().map(|(_, r)| r).sum();
    let all = svg
        .split("<title>all (")
        .nth(1)
        .and_then(|rest| rest.split(" samples, 100%)").next())
        .expect("a root frame");
    assert_eq!(all.replace(',', ""), right_total.to_string());
    assert!(
        svg.contains("%; +") || svg.contains("%; -"),
        "no frame shows a change"
    );
}

/// inferno's differential of the folded exports of `left` and `right`,
/// and the folded export of their diff, as stack → (left, right).
fn differential_and_ours(
    dir: &Path,
    left: &Path,
    right: &Path,
    diff: &Path,
) -> (Differential, Differential) {
    let folded = |trace: &Path, name: &str| {
        let out = dir.join(name);
        std::fs::create_dir_all(&out).unwrap();
        let (path, _) = export(trace, &out, StackFormat::Folded, |_| {});
        std::fs::read(path).unwrap()
    };
    let (before, after) = (folded(left, "left"), folded(right, "right"));
    let mut merged = Vec::new();
    inferno::differential::from_readers(
        inferno::differential::Options::default(),
        &before[..],
        &after[..],
        &mut merged,
    )
    .unwrap();
    let expected = read_differential(&String::from_utf8(merged).unwrap());
    let ours = String::from_utf8(folded(diff, "diff")).unwrap();
    (expected, read_differential(&ours))
}

#[test]
fn sample_trees_diff_to_each_sides_own_samples() {
    let dir = tempfile::tempdir().unwrap();
    // a(10) { b(6) { c(4) }, d(3) } against a(12) { b(7) { c(4) }, c(2) }:
    // edited calls (their counts differ), a removed and an added one, and
    // an unchanged one below an edit; `other` a(5) against a(8).
    let left = sample_tree(dir.path());
    let right = sample_tree_of(
        &dir.path().join("right.trace"),
        &[
            ("open", 0, 12),
            ("open", 1, 7),
            ("open", 2, 4),
            ("close", 2, 4),
            ("close", 1, 7),
            ("open", 2, 2),
            ("close", 2, 2),
            ("close", 0, 12),
        ],
        8,
    );
    let (l, r) = (
        LazyTraceReader::open(&left).unwrap(),
        LazyTraceReader::open(&right).unwrap(),
    );
    let input = |trace, name| tracetree::diff::DiffInput::new(trace, name);
    let diff = dir.path().join("diff.packedtrace");
    let summary = tracetree::diff_traces(
        input(&l, "left"),
        input(&r, "right"),
        &tracetree::diff::DiffOptions::default(),
        &diff,
    )
    .unwrap();
    assert!(
        summary
            .threads
            .iter()
            .any(|t| t.edited > 0 && t.removed > 0 && t.added > 0)
    );
    let (expected, ours) = differential_and_ours(dir.path(), &left, &right, &diff);
    assert_eq!(ours, expected);
}

#[test]
fn a_filter_by_status_keeps_those_tracepoints_below_their_path() {
    let dir = tempfile::tempdir().unwrap();
    let pair = diff_pair(dir.path(), 200_000, 2, 0.02);
    let reader = LazyTraceReader::open(&pair.diff).unwrap();
    for (name, statuses) in [
        ("added", &[DiffStatus::Added][..]),
        ("removed", &[DiffStatus::Removed][..]),
        (
            "edited",
            &[DiffStatus::EditedOld, DiffStatus::EditedNew][..],
        ),
    ] {
        // What a search by the same statuses finds: each hit and its path.
        let mut options = SearchOptions::new("");
        options.diff = Some(statuses.to_vec());
        options.max = usize::MAX;
        let hits = options.search(&reader, &|_| {}).unwrap().hits;
        assert!(!hits.is_empty(), "{name}");
        let out = dir.path().join(name);
        std::fs::create_dir_all(&out).unwrap();
        let (path, _) = export(&pair.diff, &out, StackFormat::Folded, |o| {
            o.diff = Some(statuses.to_vec())
        });
        let stacks = read_differential(&std::fs::read_to_string(path).unwrap());
        let (left, right) = stacks
            .values()
            .fold((0, 0), |(l, r), (dl, dr)| (l + dl, r + dr));
        let count = |status: DiffStatus| {
            let mut options = SearchOptions::new("");
            options.diff = Some(vec![status]);
            options.search(&reader, &|_| {}).unwrap().total
        };
        let expected = statuses.iter().fold((0, 0), |(l, r), &status| {
            let n = count(status);
            (
                l + n * u64::from(status.in_left()),
                r + n * u64::from(status.in_right()),
            )
        });
        assert_eq!((left, right), expected, "{name}");
        assert_eq!(left + right, hits.len() as u64, "{name}");
        // Every stack ends at a kept tracepoint: its frames are the calls
        // above a hit (the diff's virtual roots left out), and a kept
        // call's own frame.
        let paths: HashSet<String> = hits
            .iter()
            .map(|hit| {
                let path: Vec<&str> = hit
                    .path
                    .iter()
                    .map(|name| &**name)
                    .filter(|&name| name != "<diff>.<root>")
                    .collect();
                path.join(";")
            })
            .collect();
        for stack in stacks.keys() {
            let frames = stack.split_once(';').map_or("", |(_, frames)| frames);
            let above = frames.rsplit_once(';').map_or("", |(above, _)| above);
            assert!(
                paths.contains(frames) || paths.contains(above),
                "{name}: {stack} is no hit's path"
            );
        }
        // The other formats take the filter too, and write less.
        for format in FORMATS {
            let (_, all) = export(&pair.diff, &out, format, |_| {});
            let (_, kept) = export(&pair.diff, &out, format, |o| {
                o.diff = Some(statuses.to_vec())
            });
            assert!(kept.events < all.events, "{name} {format:?}");
        }
    }
    // On a plain trace, the filter is an error.
    let plain = LazyTraceReader::open(&pair.left).unwrap();
    let mut options = tracetree::export::stacks::StackOptions::new(StackFormat::Folded, "plain");
    options.diff = Some(vec![DiffStatus::Added]);
    let error = options
        .export(&plain, &dir.path().join("plain.folded"), &|_| {})
        .unwrap_err();
    assert!(error.to_string().contains("not a diff"), "{error}");
    assert!(!dir.path().join("plain.folded").exists());
}
