//! Parquet export against the headers walk of the same reader (the
//! cheapest walk of the rows the export reads), and a query over the
//! exported dataset:
//! DuckDB's top 10 methods by call count beside the same answer from
//! tracetree's own walk of the trace.
//!
//! The trace is the generated mixed trace of `TRACETREE_BENCH_SIZE` bytes
//! (64 MB by default; 2 threads); criterion reports rows per second. The
//! DuckDB group runs `python3` with the `duckdb` package and is left out,
//! with a word on stderr, where that is missing; its time includes
//! starting Python (measured alone as `python_start`).
//!
//! Run with `cargo bench --bench export`. Max RSS and output size of the
//! command: `/usr/bin/time -f %M target/release/tracetree export TRACE
//! --format parquet -o /tmp/dataset --force`, then `du -sb /tmp/dataset`.

mod support;

use std::collections::HashMap;
use std::hint::black_box;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tracetree::export::parquet::ParquetOptions;
use tracetree::generate::Shape;
use tracetree::model::TracepointBody;
use tracetree::read::{LazyTraceReader, WalkDetail};

/// The query both sides answer.
const TOP_10: &str = "select class || '.' || method as m, count(*) as calls from rows \
     where kind = 'method_call' group by m order by calls desc, m limit 10";

fn export(c: &mut Criterion) {
    let (trace, _) = support::generated(Shape::Mixed, 2, support::bench_size());
    let reader = LazyTraceReader::options()
        .sidecar_dir(Some(support::sidecar_dir()))
        .open(&trace)
        .unwrap();
    let rows: u64 = reader.count_tracepoints().unwrap().values().sum();
    let out = tempfile::tempdir().unwrap();
    let mut options = ParquetOptions::new("bench", "v22");
    options.force = true;

    let mut group = c.benchmark_group("export");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.throughput(Throughput::Elements(rows));
    group.bench_function("headers_walk_baseline", |b| {
        b.iter(|| black_box(support::walk_headers_parallel(&reader)))
    });
    group.bench_function("parquet", |b| {
        b.iter(|| black_box(options.export(&reader, out.path(), &|_| {}).unwrap()))
    });
    group.finish();

    // The dataset the query reads, whether or not the export was run above.
    options.export(&reader, out.path(), &|_| {}).unwrap();
    let mut group = c.benchmark_group("top_10_methods");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.throughput(Throughput::Elements(rows));
    let ours = top_methods(&reader);
    group.bench_function("tracetree_walk", |b| {
        b.iter(|| black_box(top_methods(&reader)))
    });
    match duckdb_top_methods(out.path()) {
        Ok(theirs) => {
            assert_eq!(theirs, ours, "DuckDB and the walk disagree");
            group.bench_function("python_start", |b| {
                b.iter(|| {
                    let status = Command::new("python3")
                        .args(["-c", "import duckdb"])
                        .status();
                    black_box(status.unwrap())
                })
            });
            group.bench_function("duckdb", |b| {
                b.iter(|| black_box(duckdb_top_methods(out.path()).unwrap()))
            });
        }
        Err(why) => eprintln!("top_10_methods/duckdb left out: {why}"),
    }
    group.finish();
}

/// The 10 most called methods (`class.method`, calls), most first, ties
/// by name: every thread walked in parallel.
fn top_methods(reader: &LazyTraceReader) -> Vec<(String, u64)> {
    let per_thread = reader
        .walk_threads(
            WalkDetail::Full,
            |_| HashMap::<_, u64>::new(),
            |counts, walked| {
                if let Some(TracepointBody::MethodCall { method, .. }) =
                    walked.tracepoint.map(|t| &t.body)
                {
                    *counts.entry(*method).or_default() += 1;
                }
                Ok(true)
            },
        )
        .unwrap();
    let mut by_name: HashMap<String, u64> = HashMap::new();
    for counts in per_thread {
        for (method, calls) in counts {
            let descriptor = reader.context().method(method).unwrap();
            let class = reader.context().class(descriptor.class).unwrap();
            let name = format!("{}.{}", class.name, descriptor.name);
            *by_name.entry(name).or_default() += calls;
        }
    }
    let mut top: Vec<(String, u64)> = by_name.into_iter().collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    top.truncate(10);
    top
}

/// [`TOP_10`] run by DuckDB over the dataset in `dataset`.
fn duckdb_top_methods(dataset: &Path) -> Result<Vec<(String, u64)>, String> {
    let script = format!(
        "import duckdb\n\
         con = duckdb.connect()\n\
         con.execute(\"create view rows as select * from read_parquet('{}/*/thread=*/*.parquet', hive_partitioning=true)\")\n\
         for m, calls in con.execute(\"{TOP_10}\").fetchall():\n    print(f'{{calls}} {{m}}')\n",
        dataset.display()
    );
    let output = Command::new("python3")
        .args(["-c", &script])
        .output()
        .map_err(|e| format!("python3: {e}"))?;
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).into_owned());
    }
    Ok(String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_once(' '))
        .map(|(calls, m)| (m.to_string(), calls.parse().unwrap()))
        .collect())
}

criterion_group!(benches, export);
criterion_main!(benches);
