//! Parquet exports read back with the parquet crate's own reader and
//! compared row for row with the JSON-lines dump, and queried by DuckDB (a
//! query engine that is not ours) with answers compared to the trace's own
//! structure.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type, UInt32Type};
use arrow_array::{Array, RecordBatch};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::Value as Json;

use tracetree::common::EventId;
use tracetree::export::parquet::ParquetOptions;
use tracetree::generate::Shape;
use tracetree::print::write_jsonl;
use tracetree::read::LazyTraceReader;

use tracetree_testkit::files::generated;
use tracetree_testkit::lazy::{reference_traces, testdata_traces};
use tracetree_testkit::skip;

/// One exported row, in the terms the dump uses.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    thread: i64,
    event_id: i64,
    parent_id: Option<i64>,
    depth: u32,
    child_index: u32,
    subtree_end: i64,
    kind: String,
    method: Option<String>,
    file: Option<String>,
    line: i32,
    samples: Option<i64>,
    diff: Option<String>,
    left: Option<i64>,
    right: Option<i64>,
}

fn dictionary(batch: &RecordBatch, column: &str, i: usize) -> Option<String> {
    let array = batch
        .column_by_name(column)
        .unwrap()
        .as_dictionary::<Int32Type>();
    if array.is_null(i) {
        return None;
    }
    let values = array.values().as_string::<i32>();
    Some(values.value(array.keys().value(i) as usize).to_string())
}

/// Every row of the dataset's partition `trace`, threads ascending, rows in
/// file order.
fn read_rows(partition: &Path) -> Vec<Row> {
    let mut folders: Vec<(i64, PathBuf)> = std::fs::read_dir(partition)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name.strip_prefix("thread=").unwrap().parse().unwrap(), p)
        })
        .collect();
    folders.sort();
    let mut rows = Vec::new();
    for (thread, folder) in folders {
        let mut parts: Vec<PathBuf> = std::fs::read_dir(&folder)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        parts.sort_by_key(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name["part-".len()..name.len() - ".parquet".len()]
                .parse::<usize>()
                .unwrap()
        });
        for part in parts {
            let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(part).unwrap())
                .unwrap()
                .build()
                .unwrap();
            for batch in reader {
                let batch = batch.unwrap();
                let int64 = |name| {
                    batch
                        .column_by_name(name)
                        .unwrap()
                        .as_primitive::<Int64Type>()
                        .clone()
                };
                let uint32 = |name| {
                    batch
                        .column_by_name(name)
                        .unwrap()
                        .as_primitive::<UInt32Type>()
                        .clone()
                };
                let (event, parent, end, samples) = (
                    int64("event_id"),
                    int64("parent_id"),
                    int64("subtree_end"),
                    int64("samples"),
                );
                let (left, right) = (int64("left_event_id"), int64("right_event_id"));
                let (depth, index) = (uint32("depth"), uint32("child_index"));
                let line = batch
                    .column_by_name("line")
                    .unwrap()
                    .as_primitive::<Int32Type>()
                    .clone();
                for i in 0..batch.num_rows() {
                    let class = dictionary(&batch, "class", i);
                    let method = dictionary(&batch, "method", i).map(|m| match &class {
                        Some(c) if !c.is_empty() => format!("{c}.{m}"),
                        _ => m,
                    });
                    rows.push(Row {
                        thread,
                        event_id: event.value(i),
                        parent_id: (!parent.is_null(i)).then(|| parent.value(i)),
                        depth: depth.value(i),
                        child_index: index.value(i),
                        subtree_end: end.value(i),
                        kind: dictionary(&batch, "kind", i).unwrap(),
                        method,
                        file: dictionary(&batch, "file", i),
                        line: line.value(i),
                        samples: (!samples.is_null(i)).then(|| samples.value(i)),
                        diff: dictionary(&batch, "diff_status", i),
                        left: (!left.is_null(i)).then(|| left.value(i)),
                        right: (!right.is_null(i)).then(|| right.value(i)),
                    });
                }
            }
        }
    }
    rows
}

/// The rows the dump implies: parents, child indexes and subtree ends from
/// its depths, in its order (pre-order, threads ascending).
fn expected_rows(reader: &LazyTraceReader) -> Vec<Row> {
    try_expected_rows(reader).unwrap()
}

/// [`expected_rows`], or the dump's error.
fn try_expected_rows(reader: &LazyTraceReader) -> tracetree::Result<Vec<Row>> {
    let mut dump = Vec::new();
    write_jsonl(reader, None, &mut dump)?;
    let records: Vec<Json> = String::from_utf8(dump)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let mut rows: Vec<Row> = Vec::with_capacity(records.len());
    // Open rows of the current thread: (row index, depth, children so far).
    let mut open: Vec<(usize, u32, u32)> = Vec::new();
    let mut roots = 0;
    for record in &records {
        let thread = record["thread"].as_i64().unwrap();
        let depth = record["depth"].as_u64().unwrap() as u32;
        if rows.last().is_some_and(|last| last.thread != thread) {
            open.clear();
            roots = 0;
        }
        while open.last().is_some_and(|&(_, d, _)| d >= depth) {
            open.pop();
        }
        let (parent_id, child_index) = match open.last_mut() {
            Some((row, _, children)) => {
                *children += 1;
                (Some(rows[*row].event_id), *children - 1)
            }
            None => {
                roots += 1;
                (None, roots - 1)
            }
        };
        let event_id = record["event_id"].as_i64().unwrap();
        let origin = match reader.diff_map() {
            Some(map) => map.event(EventId::new(event_id as i32))?,
            None => None,
        };
        let side = |side: Option<EventId>| side.map(|event| i64::from(event.get()));
        // Every open ancestor's subtree now reaches this row.
        for &(row, _, _) in &open {
            rows[row].subtree_end = event_id;
        }
        open.push((rows.len(), depth, 0));
        rows.push(Row {
            thread,
            event_id,
            parent_id,
            depth,
            child_index,
            subtree_end: event_id,
            kind: record["kind"].as_str().unwrap().to_string(),
            method: record["method"].as_str().map(str::to_string),
            file: record["file"].as_str().map(str::to_string),
            line: record["line"].as_i64().unwrap() as i32,
            samples: record["samples"].as_i64(),
            diff: record["diff"].as_str().map(str::to_string),
            left: origin.and_then(|o| side(o.left)),
            right: origin.and_then(|o| side(o.right)),
        });
    }
    Ok(rows)
}

fn export(path: &Path, dir: &Path, row_group_rows: usize) -> PathBuf {
    let reader = LazyTraceReader::open(path).unwrap();
    let mut options = ParquetOptions::new("t", "v22");
    options.row_group_rows = row_group_rows;
    options.export(&reader, dir, &|_| {}).unwrap().partition
}

fn check_trace(path: &Path, row_group_rows: usize) {
    let dir = tempfile::tempdir().unwrap();
    let partition = export(path, dir.path(), row_group_rows);
    let reader = LazyTraceReader::open(path).unwrap();
    let expected = expected_rows(&reader);
    let ours = read_rows(&partition);
    assert_eq!(ours.len(), expected.len(), "{}", path.display());
    for (ours, expected) in ours.iter().zip(&expected) {
        assert_eq!(ours, expected, "{}", path.display());
    }
}

#[test]
fn testdata_and_reference_traces_export_row_for_row_as_dumped() {
    let testdata = testdata_traces();
    assert!(testdata.len() >= 2);
    // Row groups of 7 rows: a thread's rows cross many groups and parts.
    for trace in testdata {
        check_trace(&trace, 7);
    }
    for trace in reference_traces() {
        check_trace(&trace, 50_000);
    }
}

#[test]
fn diffs_export_their_statuses_and_the_inputs_events() {
    let dir = tempfile::tempdir().unwrap();
    let pair = tracetree_testkit::diffs::diff_pair(dir.path(), 60_000, 2, 0.03);
    // Row groups of 7 rows: the map is read across many of them.
    check_trace(&pair.diff, 7);
    let rows = read_rows(&export(&pair.diff, &dir.path().join("dataset"), 50_000));
    let count = |status: &str| {
        rows.iter()
            .filter(|r| r.diff.as_deref() == Some(status))
            .count()
    };
    let summed = |f: fn(&tracetree::diff::ThreadSummary) -> u64| -> usize {
        pair.summary.threads.iter().map(f).sum::<u64>() as usize
    };
    assert_eq!(count("added"), summed(|t| t.added));
    assert_eq!(count("removed"), summed(|t| t.removed));
    assert!(
        rows.iter()
            .filter(|r| r.diff.as_deref() == Some("added"))
            .all(|r| r.left.is_none() && r.right.is_some())
    );
    assert!(
        rows.iter()
            .filter(|r| r.diff.as_deref() == Some("unchanged"))
            .all(|r| r.left.is_some() && r.right.is_some())
    );
    // The reference's own diffs, their maps deflated in the pack.
    let Some(reference) = tracetree_testkit::files::reference_traces() else {
        return;
    };
    for case in ["edits", "renamed-thread", "match-index"] {
        check_trace(
            &reference.join(format!("diff/{case}.diff.packedtrace")),
            50_000,
        );
    }
    // A trace that is not a diff has neither.
    let plain = read_rows(&export(&pair.left, &dir.path().join("plain"), 50_000));
    assert!(
        plain
            .iter()
            .all(|r| r.diff.is_none() && r.left.is_none() && r.right.is_none())
    );
}

#[test]
fn generated_traces_of_every_shape_export_row_for_row_in_many_row_groups() {
    let dir = tempfile::tempdir().unwrap();
    for shape in [Shape::Mixed, Shape::Wide, Shape::Deep, Shape::Threads] {
        let path = generated(dir.path(), shape, 2, 1 << 20, Some(64 << 10));
        // Small row groups: many groups and several parts per thread.
        check_trace(&path, 1000);
        check_one_thread(&path, 1000);
    }
}

/// [`check_trace`] of one thread's export: fewer threads than workers,
/// so its row groups are written on a thread of their own while the walk
/// fills the next.
fn check_one_thread(path: &Path, row_group_rows: usize) {
    let dir = tempfile::tempdir().unwrap();
    let reader = LazyTraceReader::open(path).unwrap();
    let thread = *reader.thread_ids().last().unwrap();
    let mut options = ParquetOptions::new("t", "v22");
    options.row_group_rows = row_group_rows;
    options.threads = Some(vec![thread]);
    let summary = options.export(&reader, dir.path(), &|_| {}).unwrap();
    let expected: Vec<Row> = expected_rows(&reader)
        .into_iter()
        .filter(|row| row.thread == i64::from(thread.get()))
        .collect();
    assert!(expected.len() > 2 * row_group_rows, "{}", expected.len());
    assert_eq!(
        read_rows(&summary.partition),
        expected,
        "{}",
        path.display()
    );
}

#[test]
fn damaged_traces_export_as_they_dump_or_fail_with_an_error() {
    // About 120 bytes spread over each of the bundled traces' data and
    // index files, flipped in turn: the export, in row groups of
    // 3 rows (subtree ends asked of the reader at every group), never
    // panics, and where both it and the dump succeed their rows agree.
    let dir = tempfile::tempdir().unwrap();
    let (mut exported, mut failed) = (0, 0);
    for trace in testdata_traces() {
        let index = tracetree::LazyTraceReader::index_path(&trace);
        for (file, other) in [(&trace, &index), (&index, &trace)] {
            let bytes = std::fs::read(file).unwrap();
            let stride = (bytes.len() / 120).max(1);
            for at in (0..bytes.len()).step_by(stride) {
                let mut damaged = bytes.clone();
                damaged[at] ^= 0xA5;
                let copy = dir.path().join("damaged.trace");
                let (damaged_path, other_path) = if file == &trace {
                    (copy.clone(), tracetree::LazyTraceReader::index_path(&copy))
                } else {
                    (tracetree::LazyTraceReader::index_path(&copy), copy.clone())
                };
                std::fs::write(&damaged_path, &damaged).unwrap();
                std::fs::copy(other, &other_path).unwrap();
                let Ok(reader) = LazyTraceReader::open(&copy) else {
                    continue;
                };
                let mut options = ParquetOptions::new("t", "v22");
                options.row_group_rows = 3;
                options.force = true;
                let out = dir.path().join("out");
                match options.export(&reader, &out, &|_| {}) {
                    Ok(summary) => {
                        exported += 1;
                        let fresh = LazyTraceReader::open(&copy);
                        if let Ok(expected) = fresh
                            .map_err(|_| ())
                            .and_then(|r| try_expected_rows(&r).map_err(|_| ()))
                        {
                            let ours = read_rows(&summary.partition);
                            let what = format!("{} byte {at}", file.display());
                            assert_eq!(ours, expected, "{what}");
                        }
                    }
                    Err(_) => failed += 1,
                }
            }
        }
    }
    eprintln!("{exported} exported, {failed} failed");
    assert!(exported > 200, "{exported} exported, {failed} failed");
}

#[test]
fn progress_reads_each_threads_stream_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = generated(dir.path(), Shape::Threads, 3, 1 << 20, Some(64 << 10));
    let reader = LazyTraceReader::open(&path).unwrap();
    let mut options = ParquetOptions::new("t", "v22");
    options.row_group_rows = 500;
    // (bytes read, reports of bytes read) as reported.
    let seen = Mutex::new((0u64, 0u64));
    let out = dir.path().join("out");
    let summary = options
        .export(&reader, &out, &|bytes| {
            let mut seen = seen.lock().unwrap();
            seen.0 += bytes;
            seen.1 += 1;
        })
        .unwrap();
    let rows: u64 = summary.rows.iter().map(|(_, rows)| rows).sum();
    let expected: u64 = reader.count_tracepoints().unwrap().values().sum();
    assert_eq!(rows, expected);
    assert!(summary.rows.len() >= 3, "{:?}", summary.rows);
    let bytes: u64 = reader.threads().iter().map(|t| t.bytes).sum();
    let (read, reports) = *seen.lock().unwrap();
    assert_eq!(read, bytes);
    // One report a row group at least: the bar moves as rows are written.
    assert!(reports >= rows / 500, "{reports} reports for {rows} rows");
}

#[test]
fn an_existing_partition_is_replaced_only_when_forced() {
    let dir = tempfile::tempdir().unwrap();
    let trace = &testdata_traces()[0];
    let reader = LazyTraceReader::open(trace).unwrap();
    let options = ParquetOptions::new("t", "v22");
    options.export(&reader, dir.path(), &|_| {}).unwrap();
    let error = options.export(&reader, dir.path(), &|_| {}).unwrap_err();
    assert!(error.to_string().contains("--force"), "{error}");
    let mut forced = options.clone();
    forced.force = true;
    forced.export(&reader, dir.path(), &|_| {}).unwrap();
    let mut zero = options.clone();
    zero.row_group_rows = 0;
    zero.force = true;
    assert!(zero.export(&reader, dir.path(), &|_| {}).is_err());
    // Nothing but the partition is left in the dataset directory.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["trace=t"]);
}

/// Runs `queries` (one SQL statement each, answering one number) with
/// DuckDB over `dataset`; `None` where Python has no duckdb and skipping
/// is allowed (otherwise the test fails).
fn duckdb(dataset: &Path, queries: &[String]) -> Option<Vec<i64>> {
    let script = format!(
        "import duckdb, sys\n\
         con = duckdb.connect()\n\
         con.execute(\"create view rows as select * from read_parquet('{}/*/thread=*/*.parquet', hive_partitioning=true)\")\n\
         for q in sys.argv[1:]:\n    print(con.execute(q).fetchone()[0])\n",
        dataset.display()
    );
    let output = Command::new("python3")
        .arg("-c")
        .arg(&script)
        .args(queries)
        .output();
    match output {
        Ok(output) if output.status.success() => Some(
            String::from_utf8(output.stdout)
                .unwrap()
                .lines()
                .map(|l| l.trim().parse().unwrap())
                .collect(),
        ),
        Ok(output) => {
            let err = String::from_utf8_lossy(&output.stderr);
            assert!(
                err.contains("No module named 'duckdb'"),
                "duckdb failed: {err}"
            );
            skip::cannot_run("the duckdb Python package is not installed (.ci/run installs it)");
            None
        }
        Err(error) => {
            skip::cannot_run(&format!("python3 not found ({error})"));
            None
        }
    }
}

#[test]
fn duckdb_answers_as_the_trace_does() {
    let dir = tempfile::tempdir().unwrap();
    let path = generated(dir.path(), Shape::Mixed, 3, 2 << 20, None);
    let dataset = dir.path().join("dataset");
    export(&path, &dataset, 10_000);
    let reader = LazyTraceReader::open(&path).unwrap();
    let rows = expected_rows(&reader);
    let mut per_thread: BTreeMap<i64, i64> = BTreeMap::new();
    let mut methods: BTreeMap<&str, i64> = BTreeMap::new();
    let mut kinds: BTreeMap<&str, i64> = BTreeMap::new();
    for row in &rows {
        *per_thread.entry(row.thread).or_default() += 1;
        *kinds.entry(&row.kind).or_default() += 1;
        if let Some(method) = &row.method {
            *methods.entry(method).or_default() += 1;
        }
    }
    // A call with children somewhere in the middle, and its descendants.
    let call = rows
        .iter()
        .filter(|r| r.subtree_end > r.event_id)
        .nth(rows.len() / 50)
        .unwrap();
    let descendants = rows
        .iter()
        .filter(|r| {
            r.thread == call.thread && r.event_id > call.event_id && r.event_id <= call.subtree_end
        })
        .count() as i64;
    let (top_method, top_calls) = methods
        .iter()
        .max_by_key(|&(name, &count)| (count, std::cmp::Reverse(*name)))
        .map(|(name, &count)| (name.to_string(), count))
        .unwrap();
    let mut queries = vec![
        "select count(*) from rows".to_string(),
        format!(
            "select count(*) from rows where thread = {} and event_id between {} and {}",
            call.thread,
            call.event_id + 1,
            call.subtree_end
        ),
        format!(
            "select count(*) from rows where kind = 'method_call' and class || '.' || method = '{top_method}'"
        ),
        format!(
            "select count(*) from (select class, method, count(*) c from rows where kind = 'method_call' \
             group by class, method having c > {top_calls})"
        ),
    ];
    for thread in per_thread.keys() {
        queries.push(format!("select count(*) from rows where thread = {thread}"));
    }
    for kind in kinds.keys() {
        queries.push(format!("select count(*) from rows where kind = '{kind}'"));
    }
    let Some(answers) = duckdb(&dataset, &queries) else {
        return;
    };
    let mut expected = vec![rows.len() as i64, descendants, top_calls, 0];
    expected.extend(per_thread.values());
    expected.extend(kinds.values());
    assert!(kinds.len() >= 3, "{kinds:?}");
    assert_eq!(answers, expected);
}

/// A call with `CALLS` children, each calling a method of its own (in a
/// file of its own, at its own line), every seventh child a local write
/// instead (a null class, method and file): dictionaries of up to 77,144
/// values in one row group, their keys 17 bits wide.
#[test]
fn duckdb_reads_dictionaries_of_every_width() {
    use tracetree::model::Type;
    use tracetree::write::{
        CallOutcome, CallSpec, CodeLocationSpec, DumpWriter, MethodSpec, ThreadRecorder,
        TraceRecorder, ValueSpec, VariableSpec,
    };
    const CALLS: usize = 90_000;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("names.trace");
    let mut writer = DumpWriter::new();
    let main = writer.add_thread("main").unwrap();
    {
        let mut thread = writer.thread(main).unwrap();
        let run = MethodSpec::new("demo.Main", "run", vec![], Type::Void);
        thread.enter_call(None, CallSpec::new(&run)).unwrap();
        let local = VariableSpec::new("x", Type::Int);
        for i in 0..CALLS {
            if i % 7 == 3 {
                thread.write_local(None, &local, ValueSpec::Int(1)).unwrap();
                continue;
            }
            let class = format!("demo.C{}", i % 300);
            let name = format!("m{i}");
            let method = MethodSpec::new(class.as_str(), name.as_str(), vec![], Type::Void);
            let file = format!("F{i}.kt");
            let at = CodeLocationSpec::line(file.as_str(), class.as_str(), name.as_str(), i as i32);
            thread
                .enter_call(Some(&at), CallSpec::new(&method))
                .unwrap();
            thread.exit_call(CallOutcome::VOID).unwrap();
        }
        thread.exit_call(CallOutcome::VOID).unwrap();
    }
    writer.save(&path).unwrap();
    let dataset = dir.path().join("dataset");
    export(&path, &dataset, 100_000);
    let calls = (0..CALLS).filter(|i| i % 7 != 3).count() as i64;
    let queries = [
        "select count(*) from rows".to_string(),
        // Every call's names and line agree with its place.
        "select count(*) from rows where depth = 1 and kind = 'method_call' \
         and method = 'm' || child_index and class = 'demo.C' || (child_index % 300) \
         and file = 'F' || child_index || '.kt' and line = child_index"
            .to_string(),
        "select count(*) from rows where depth = 1 and class is null and method is null \
         and file is null and kind = 'write_local' and child_index % 7 = 3"
            .to_string(),
        "select count(distinct method) from rows".to_string(),
    ];
    let Some(answers) = duckdb(&dataset, &queries) else {
        return;
    };
    let locals = CALLS as i64 - calls;
    assert_eq!(answers, [CALLS as i64 + 1, calls, locals, calls + 1]);
}
