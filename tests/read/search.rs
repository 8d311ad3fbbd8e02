//! `search` against what `dump` and `print` say of the same traces.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value as Json;
use tracetree::common::ThreadId;
use tracetree::model::TracepointType;
use tracetree::print::{PrintOptions, write_jsonl};
use tracetree::read::LazyTraceReader;
use tracetree::search::SearchOptions;

use tracetree_testkit::lazy::{reference_traces, testdata_traces};

/// (thread, event, depth, path) of every call whose `Class.method` holds
/// `pattern`, from the dump: the path is the open ancestors' methods (a
/// loop's kind for a loop).
fn calls_from_dump(reader: &LazyTraceReader, pattern: &str) -> Vec<(i64, i64, u64, Vec<String>)> {
    let mut dump = Vec::new();
    write_jsonl(reader, None, &mut dump).unwrap();
    let mut found = Vec::new();
    let mut open: Vec<String> = Vec::new();
    for line in String::from_utf8(dump).unwrap().lines() {
        let row: Json = serde_json::from_str(line).unwrap();
        let depth = row["depth"].as_u64().unwrap();
        open.truncate(depth as usize);
        let kind = row["kind"].as_str().unwrap();
        let method = row["method"].as_str();
        if kind == "method_call" && method.is_some_and(|m| m.contains(pattern)) {
            found.push((
                row["thread"].as_i64().unwrap(),
                row["event_id"].as_i64().unwrap(),
                depth,
                open.clone(),
            ));
        }
        if row["children"].as_u64().unwrap() > 0
            || kind == "method_call"
            || kind.starts_with("loop")
        {
            open.push(method.unwrap_or(kind).to_string());
        }
    }
    found
}

fn check_calls(path: &Path, pattern: &str) {
    let reader = LazyTraceReader::open(path).unwrap();
    let mut options = SearchOptions::new(pattern);
    options.kinds = Some(vec![TracepointType::MethodCall]);
    options.max = usize::MAX;
    let found = options.search(&reader, &|_| {}).unwrap();
    let ours: Vec<_> = found
        .hits
        .iter()
        .map(|hit| {
            let path = hit.path.iter().map(|name| name.to_string()).collect();
            (
                i64::from(hit.thread.get()),
                i64::from(hit.event.get()),
                hit.depth as u64,
                path,
            )
        })
        .collect();
    let expected = calls_from_dump(&reader, pattern);
    assert_eq!(ours, expected, "{} {pattern:?}", path.display());
    assert_eq!(found.total, expected.len() as u64);
    let counts: u64 = reader.count_tracepoints().unwrap().values().sum();
    assert_eq!(found.scanned, counts);
}

#[test]
fn calls_found_by_name_are_the_dumps_calls_of_that_name_with_their_paths() {
    let mut traces = testdata_traces();
    traces.extend(reference_traces());
    let mut hits = 0;
    for trace in &traces {
        for pattern in ["run", "Account", "<init>", "e", "no such method"] {
            check_calls(trace, pattern);
        }
        let reader = LazyTraceReader::open(trace).unwrap();
        hits += SearchOptions::new("run")
            .search(&reader, &|_| {})
            .unwrap()
            .total;
    }
    assert!(hits > 0, "the traces hold calls named run");
}

/// Lines of `print` (tracepoints only, not thread headers) holding `pattern`.
fn printed_lines_holding(reader: &LazyTraceReader, pattern: &str) -> u64 {
    let mut text = Vec::new();
    PrintOptions::default().print(reader, &mut text).unwrap();
    String::from_utf8(text)
        .unwrap()
        .lines()
        .filter(|line| !line.starts_with('#') && line.contains(pattern))
        .count() as u64
}

#[test]
fn text_search_finds_every_printed_line_that_holds_the_pattern() {
    let mut checked = 0;
    let mut traces = testdata_traces();
    traces.extend(reference_traces());
    for trace in &traces {
        let reader = LazyTraceReader::open(trace).unwrap();
        // Patterns in values, not in names: the text search alone finds them.
        for pattern in ["42", "\"", "null", "@"] {
            let names = SearchOptions::new(pattern)
                .search(&reader, &|_| {})
                .unwrap();
            if names.total > 0 {
                continue;
            }
            let mut options = SearchOptions::new(pattern);
            options.text = true;
            options.max = usize::MAX;
            let found = options.search(&reader, &|_| {}).unwrap();
            assert_eq!(
                found.total,
                printed_lines_holding(&reader, pattern),
                "{} {pattern:?}",
                trace.display()
            );
            assert!(found.hits.iter().all(|hit| hit.line.contains(pattern)));
            checked += found.total;
        }
    }
    assert!(checked > 0, "some value held a pattern");
}

#[test]
fn hits_are_kept_up_to_max_and_filtered_by_thread_kind_and_case() {
    let trace = &testdata_traces()[0];
    let reader = LazyTraceReader::open(trace).unwrap();
    let all = SearchOptions::new("a").search(&reader, &|_| {}).unwrap();
    assert!(all.total > 3, "{}", all.total);
    let mut one = SearchOptions::new("a");
    one.max = 1;
    let first = one.search(&reader, &|_| {}).unwrap();
    assert_eq!((first.hits.len(), first.total), (1, all.total));
    assert_eq!(first.hits[0], all.hits[0]);
    // By thread: the hits of each thread add up to all.
    let mut per_thread: BTreeMap<ThreadId, u64> = BTreeMap::new();
    for thread in reader.thread_ids() {
        let mut options = SearchOptions::new("a");
        options.threads = Some(vec![thread]);
        let found = options.search(&reader, &|_| {}).unwrap();
        assert!(found.hits.iter().all(|hit| hit.thread == thread));
        per_thread.insert(thread, found.total);
    }
    assert_eq!(per_thread.values().sum::<u64>(), all.total);
    // Case: an upper-case pattern finds nothing lower-case unless asked.
    let upper = SearchOptions::new("ACCOUNT");
    let mut ignoring = upper.clone();
    ignoring.ignore_case = true;
    let exact = SearchOptions::new("Account")
        .search(&reader, &|_| {})
        .unwrap();
    assert!(exact.total > 0, "{} has Account calls", trace.display());
    assert_eq!(upper.search(&reader, &|_| {}).unwrap().total, 0);
    assert_eq!(
        ignoring.search(&reader, &|_| {}).unwrap().total,
        exact.total
    );
}

/// The event ids of every field and local-variable access whose name
/// (`Class.field`, or the variable's) holds `pattern`, from the eager
/// loader (a reader that decodes every tracepoint).
fn accesses_from_eager(path: &Path, pattern: &str) -> Vec<i64> {
    use tracetree::model::TracepointBody;
    let trace = tracetree::read::EagerTrace::open(path).unwrap();
    let context = trace.context();
    let class = |id| {
        context
            .class(id)
            .map(|c| c.name.decode().into_owned())
            .unwrap_or_default()
    };
    let mut events: Vec<i64> = trace
        .nodes()
        .filter(|node| {
            let name = match &node.tracepoint().body {
                TracepointBody::ReadField { field, .. }
                | TracepointBody::WriteField { field, .. } => {
                    let Ok(f) = context.field(*field) else {
                        return false;
                    };
                    let class = class(f.class);
                    if class.is_empty() {
                        f.name.decode().into_owned()
                    } else {
                        format!("{class}.{}", f.name.decode())
                    }
                }
                TracepointBody::ReadLocal { variable, .. }
                | TracepointBody::WriteLocal { variable, .. } => {
                    match context.variable(*variable) {
                        Ok(v) => v.name.decode().into_owned(),
                        Err(_) => return false,
                    }
                }
                _ => return false,
            };
            name.contains(pattern)
        })
        .map(|node| i64::from(node.tracepoint().event().get()))
        .collect();
    events.sort_unstable();
    events
}

#[test]
fn field_and_local_accesses_found_by_name_are_the_decoded_ones() {
    let kinds = vec![
        TracepointType::ReadField,
        TracepointType::WriteField,
        TracepointType::ReadLocal,
        TracepointType::WriteLocal,
    ];
    let mut checked = 0;
    for path in testdata_traces().into_iter().chain(reference_traces()) {
        let reader = LazyTraceReader::open(&path).unwrap();
        for pattern in ["", "a", "e", "x", "value", "count", "."] {
            let mut options = SearchOptions::new(pattern);
            options.kinds = Some(kinds.clone());
            options.max = usize::MAX;
            let found = options.search(&reader, &|_| {}).unwrap();
            let mut ours: Vec<i64> = found
                .hits
                .iter()
                .map(|h| i64::from(h.event.get()))
                .collect();
            ours.sort_unstable();
            let expected = accesses_from_eager(&path, pattern);
            assert_eq!(ours, expected, "{} {pattern:?}", path.display());
            assert_eq!(found.total, expected.len() as u64);
            checked += expected.len();
            // The kept hits come with their printed line.
            assert!(found.hits.iter().all(|h| !h.line.is_empty()));
        }
    }
    assert!(checked > 0, "no access was compared");
}

/// A search of millions of hits handed over one by one keeps none of
/// them: each hit's path shares its names with the walk's table of names
/// (an `Arc` each), so the holders of the wide call's name are counted at
/// every hit: the table, the hits the caller still holds (its first
/// `HELD`, and a bounded queue of the last `HELD`) and the hit handed
/// over, never more. A search that kept its hits would add one holder a
/// hit.
#[test]
fn a_search_handing_its_hits_over_keeps_none_of_them() {
    use std::collections::VecDeque;
    use std::sync::{Arc, Mutex};
    use tracetree::generate::{GenerateOptions, Shape, generate_file};

    const HELD: usize = 64;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wide.trace");
    let options = GenerateOptions {
        threads: 1,
        ..GenerateOptions::new(48 << 20, Shape::Wide)
    };
    generate_file(&path, &options, |_| {}).unwrap();
    let reader = LazyTraceReader::open(&path).unwrap();
    let mut options = SearchOptions::new("i");
    options.kinds = Some(vec![TracepointType::WriteLocal]);
    options.max = usize::MAX;
    // (the first hits, the queue, hits handed over, the most holders
    // seen, the first count off)
    let state = Mutex::new((Vec::new(), VecDeque::new(), 0u64, 0usize, None));
    let counts = options
        .search_each(&reader, &|_| {}, &|hit| {
            let mut state = state.lock().unwrap();
            let (first, held, handed, most, off) = &mut *state;
            let name = hit.path.last().expect("a hit inside the wide call");
            let holders = Arc::strong_count(name);
            let expected = 1 + first.len() + held.len() + 1;
            *most = (*most).max(holders);
            if holders != expected && off.is_none() {
                *off = Some((*handed, holders, expected));
            }
            *handed += 1;
            if first.len() < HELD {
                first.push(hit);
                return;
            }
            held.push_back(hit);
            if held.len() > HELD {
                held.pop_front();
            }
        })
        .unwrap();
    let (first, held, handed, most, off) = state.into_inner().unwrap();
    assert_eq!(off, None, "(hit, holders, expected)");
    assert_eq!(handed, counts.total);
    assert!(counts.total > 1_000_000, "{} hits", counts.total);
    assert_eq!(most, 2 * HELD + 2);
    assert_eq!(held.len(), HELD);
    // The hits and count of the search that gathers them (up to `max`).
    let mut first_only = options.clone();
    first_only.max = HELD;
    let gathered = first_only.search(&reader, &|_| {}).unwrap();
    assert_eq!(gathered.total, counts.total);
    assert_eq!(gathered.hits, first);
}
