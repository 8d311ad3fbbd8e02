//! `search` by diff status against what `dump` says of the same diff.

use std::collections::BTreeMap;

use serde_json::Value as Json;
use tracetree::model::DiffStatus;
use tracetree::print::write_jsonl;
use tracetree::read::LazyTraceReader;
use tracetree::search::{SearchFrom, SearchOptions};
use tracetree::{Error, Result};

use tracetree_testkit::diffs::diff_pair;

/// Event ids by the `diff` name `dump` gives their status.
fn statuses_from_dump(reader: &LazyTraceReader) -> BTreeMap<String, Vec<i64>> {
    let mut dump = Vec::new();
    write_jsonl(reader, None, &mut dump).unwrap();
    let mut events: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for line in String::from_utf8(dump).unwrap().lines() {
        let row: Json = serde_json::from_str(line).unwrap();
        let status = row["diff"].as_str().unwrap_or("none").to_string();
        events
            .entry(status)
            .or_default()
            .push(row["event_id"].as_i64().unwrap());
    }
    events
}

fn changes(names: &[&str]) -> Vec<DiffStatus> {
    names
        .iter()
        .flat_map(|name| DiffStatus::changes_named(name).unwrap())
        .copied()
        .collect()
}

fn found(reader: &LazyTraceReader, options: &SearchOptions) -> Result<Vec<i64>> {
    let mut events: Vec<i64> = options
        .search(reader, &|_| {})?
        .hits
        .iter()
        .map(|hit| i64::from(hit.event.get()))
        .collect();
    events.sort_unstable();
    Ok(events)
}

#[test]
fn a_search_by_diff_status_finds_what_dump_marks() {
    let dir = tempfile::tempdir().unwrap();
    let pair = diff_pair(dir.path(), 200_000, 2, 0.02);
    let reader = LazyTraceReader::open(&pair.diff).unwrap();
    let dumped = statuses_from_dump(&reader);
    let of = |names: &[&str]| -> Vec<i64> {
        let mut events: Vec<i64> = names
            .iter()
            .flat_map(|name| dumped.get(*name).cloned().unwrap_or_default())
            .collect();
        events.sort_unstable();
        events
    };
    let summed = |f: fn(&tracetree::diff::ThreadSummary) -> u64| -> usize {
        pair.summary.threads.iter().map(f).sum::<u64>() as usize
    };
    assert!(summed(|t| t.added) > 0 && summed(|t| t.removed) > 0 && summed(|t| t.edited) > 0);
    let cases: [(&[&str], &[&str]); 4] = [
        (&["added"], &["added"]),
        (&["removed"], &["removed"]),
        (&["edited"], &["edited_old", "edited_new"]),
        (
            &["added", "removed", "edited"],
            &["added", "removed", "edited_old", "edited_new"],
        ),
    ];
    for (asked, dump_names) in cases {
        let expected = of(dump_names);
        // An empty pattern lists the changes themselves; by line (`text`),
        // the same.
        for text in [false, true] {
            let mut options = SearchOptions::new("");
            options.diff = Some(changes(asked));
            options.text = text;
            options.max = usize::MAX;
            assert_eq!(found(&reader, &options).unwrap(), expected, "{asked:?}");
        }
    }
    assert_eq!(of(&["added"]).len(), summed(|t| t.added));
    assert_eq!(of(&["edited_old"]).len(), summed(|t| t.edited));
    // Each hit's line carries its marker, as `print` shows it.
    let mut options = SearchOptions::new("");
    options.diff = Some(changes(&["added"]));
    let hits = options.search(&reader, &|_| {}).unwrap().hits;
    assert!(
        hits.iter().all(|hit| hit.line.starts_with("+ ")),
        "{hits:?}"
    );
    // A pattern narrows the changes to those it names.
    let mut named = SearchOptions::new("compute");
    named.diff = Some(changes(&["added", "removed", "edited"]));
    named.max = usize::MAX;
    let mut all_named = named.clone();
    all_named.diff = None;
    let changed: Vec<i64> = found(&reader, &named).unwrap();
    let everything = found(&reader, &all_named).unwrap();
    let all_changes = of(&["added", "removed", "edited_old", "edited_new"]);
    let expected: Vec<i64> = everything
        .into_iter()
        .filter(|e| all_changes.binary_search(e).is_ok())
        .collect();
    assert_eq!(changed, expected);
}

#[test]
fn find_next_and_previous_step_through_the_changes() {
    let dir = tempfile::tempdir().unwrap();
    let pair = diff_pair(dir.path(), 120_000, 2, 0.02);
    let reader = LazyTraceReader::open(&pair.diff).unwrap();
    let mut options = SearchOptions::new("");
    options.diff = Some(changes(&["added", "removed", "edited"]));
    options.max = usize::MAX;
    let expected = options.search(&reader, &|_| {}).unwrap().hits;
    assert!(!expected.is_empty());
    for thread in reader.thread_ids() {
        let in_thread: Vec<_> = expected.iter().filter(|h| h.thread == thread).collect();
        let mut forward = Vec::new();
        let mut from = SearchFrom::ThreadStart(thread);
        while let Some(hit) = from.find(&reader, &options).unwrap() {
            from = SearchFrom::After(hit.node);
            forward.push(hit);
        }
        assert_eq!(forward.len(), in_thread.len(), "thread {thread}");
        for (ours, theirs) in forward.iter().zip(&in_thread) {
            assert_eq!((ours.event, &ours.path), (theirs.event, &theirs.path));
        }
        // Back from the thread's end, to its first change.
        let mut backward = Vec::new();
        let mut from = SearchFrom::ThreadEnd(thread);
        while let Some(hit) = from.find(&reader, &options).unwrap() {
            from = SearchFrom::Before(hit.node);
            backward.push(hit.event);
        }
        backward.reverse();
        let events: Vec<_> = forward.iter().map(|h| h.event).collect();
        assert_eq!(backward, events, "thread {thread}");
    }
}

#[test]
fn a_filter_by_diff_status_on_a_plain_trace_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let pair = diff_pair(dir.path(), 50_000, 1, 0.02);
    let plain = LazyTraceReader::open(&pair.left).unwrap();
    assert!(!plain.is_diff().unwrap());
    assert!(
        LazyTraceReader::open(&pair.diff)
            .unwrap()
            .is_diff()
            .unwrap()
    );
    let mut options = SearchOptions::new("");
    options.diff = Some(changes(&["added"]));
    let error = options.search(&plain, &|_| {}).unwrap_err();
    assert!(matches!(error, Error::Unsupported { .. }), "{error}");
    assert!(error.to_string().contains("not a diff"), "{error}");
    let next = SearchFrom::ThreadStart(plain.thread_ids()[0]).find(&plain, &options);
    assert!(matches!(next, Err(Error::Unsupported { .. })));
    // Without the filter, an empty pattern finds every tracepoint.
    let all = SearchOptions::new("").search(&plain, &|_| {}).unwrap();
    assert_eq!(all.total, all.scanned);
}
