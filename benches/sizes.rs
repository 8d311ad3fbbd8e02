//! Issue #6's benchmarks over generated traces of 100 MB, 1 GB and 10 GB:
//! every figure beside a raw scan of the same mapped bytes in the same run,
//! and the peak resident memory of every operation.
//!
//! ```text
//! cargo bench --bench sizes                              # 100 MB (default)
//! TRACETREE_BENCH_SIZE=1GB  cargo bench --bench sizes
//! TRACETREE_BENCH_SIZE=10GB cargo bench --bench sizes
//! TRACETREE_SIZES_ONLY=raw_scan,open_index cargo bench --bench sizes   # some cases
//! TRACETREE_SIZES_SKIP=walk_tracetree      cargo bench --bench sizes   # all but some
//! ```
//!
//! How it measures:
//!
//! 1. **Traces**, generated once into `target/bench-traces/` with
//!    [`tracetree::generate::generate_file`] (the streaming writer, 2
//!    producer threads): a `mixed` trace of the size, and a `wide` one of the
//!    same size (each thread one call with all its children) for the
//!    wide-call cases.
//! 2. **One process per case**: this binary re-runs itself with
//!    `TRACETREE_SIZES_CHILD=case`; the child sets the case up (maps the
//!    trace, opens a reader, …), resets the peak resident set size (writes
//!    `5` to `/proc/self/clear_refs`), runs the case once, and reports its
//!    wall time, `VmHWM` (peak RSS: heap plus mapped file pages touched,
//!    including those the setup left resident) and the peak `RssAnon` (heap
//!    only; sampled every 5 ms). Criterion cannot measure memory, and one
//!    process would carry one case's pages into the next.
//! 3. **Times**: a case whose run in its own process took at most
//!    [`CRITERION_MAX_SECONDS`] — and the raw scans always — is measured by
//!    criterion in this process (10 samples, flat sampling, results dropped
//!    outside the timed part); a slower one by the median of up to 3 runs in
//!    this process within about a minute (criterion's 10 samples would take
//!    too long at 10 GB); one slower than [`SLOW_SECONDS`] by its run in its
//!    own process (which also pays for faulting the mapping in). The table
//!    says which.
//! 4. **Table**: median, throughput, ratio to the raw scan of the same trace
//!    (for the bytes the case covers) and peak memory, as Markdown, to
//!    stderr and `target/bench-traces/sizes-SIZE.md`, with the load average
//!    before and after.
//!
//! The eager loader needs about 1.7× the file in memory
//! ([`EagerTrace::estimated_memory`]); it is skipped when `MemAvailable` is
//! under that.

use std::any::Any;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use criterion::{Criterion, SamplingMode, Throughput, criterion_group};
use tracetree::TraceBytes;
use tracetree::generate::{GenerateOptions, Shape, generate_file};
use tracetree::lowlevel::RebuiltIndex;
use tracetree::read::RebuildOptions;
use tracetree::read::{
    EagerTrace, IndexChoice, LazyOptions, LazyTraceReader, SidecarOutcome, SidecarPolicy,
};
use tracetree::storage::FileAccess;

#[path = "sizes/measure.rs"]
mod measure;
#[path = "sizes/setup.rs"]
mod setup;
mod support;

use measure::*;
use setup::*;

use support::{
    bench_size_or, generated, generated_path, meminfo_bytes, raw_scan, status_bytes, trace_dir,
    walk_headers, walk_headers_parallel, walk_tracetree,
};

/// A case taking longer than this in its own process is timed by runs in
/// their own processes instead of criterion's 10 samples.
const CRITERION_MAX_SECONDS: f64 = 2.0;
/// A case taking longer than this in its own process is not run again:
/// that run is its figure.
const SLOW_SECONDS: f64 = 60.0;
/// Set in a child process: the case to run.
const CHILD: &str = "TRACETREE_SIZES_CHILD";
/// The cache budget of the small-cache traversal.
const SMALL_CACHE: usize = 1 << 20;
/// The streaming-write case writes this much, or the trace size if smaller.
const WRITE_BYTES: u64 = 256 << 20;
/// Random expansions per iteration.
const EXPANSIONS: usize = 1000;
const MB: f64 = 1e6;

/// The cases, in table order: id and row label.
const CASES: &[(&str, &str)] = &[
    ("raw_scan", "raw scan of the mapped data file (baseline)"),
    ("open_index", "open, index present"),
    ("open_sidecar", "open, sidecar present"),
    (
        "open_first",
        "first open, index present, no sidecar (builds the lookups and writes the sidecar)",
    ),
    (
        "first_children",
        "first open, sidecar deferred, then a root's first 100 children with their counts (`children`)",
    ),
    (
        "open_rebuild",
        "open, index missing (lookups rebuilt in memory)",
    ),
    (
        "rebuild_1",
        "index rebuild (`RebuiltIndex::build`), 1 thread",
    ),
    (
        "rebuild_2",
        "index rebuild (`RebuiltIndex::build`), 2 threads",
    ),
    (
        "random_expansions",
        "1,000 random expansions (all children of a random container), cold cache",
    ),
    (
        "random_expansions_unbounded",
        "the same without a resident window (`resident_window(None)`: pages stay mapped)",
    ),
    (
        "random_expansions_read",
        "the same with the default window, files read without a mapping (`FileAccess::Read`)",
    ),
    (
        "walk_headers",
        "full traversal, headers walk (`walk_thread`, threads in turn)",
    ),
    (
        "walk_parallel",
        "full traversal, headers walk (`walk_threads`, threads in parallel; what `info` runs)",
    ),
    (
        "walk_parallel_read",
        "the same, files read without a mapping (`FileAccess::Read`)",
    ),
    (
        "walk_tracetree",
        "full traversal, `TraceTree::walk_visit` (what `print` runs), 1 MiB cache",
    ),
    (
        "walk_tracetree_read",
        "the same, files read without a mapping (`FileAccess::Read`)",
    ),
    ("eager_load", "eager load (`EagerTrace::load`)"),
    (
        "streaming_write",
        "streaming write (`generate_file`, mixed, 2 producers)",
    ),
    ("raw_scan_wide", "wide trace: raw scan (baseline)"),
    (
        "wide_first_page_cold",
        "wide call: first 1,000 children, cold cache",
    ),
    (
        "wide_first_page_warm",
        "wide call: first 1,000 children, warm",
    ),
    ("wide_all_children", "wide call: all children, cold cache"),
];

/// What a case covers, for throughput and the ratio to the raw scan.
#[derive(Clone, Copy, PartialEq)]
enum Covers {
    /// The whole trace file.
    File,
    /// The wide call's content.
    WideCall,
    /// Elements (children, expansions); the ratio is to a whole-file scan.
    Elements(u64),
    /// Bytes written.
    Written(u64),
}

/// Which trace a case reads.
#[derive(Clone, Copy, PartialEq)]
enum Which {
    Mixed,
    Wide,
}

/// A case ready to run: `run` does one iteration and returns what should be
/// dropped outside the timed part.
struct Case {
    which: Which,
    covers: Covers,
    run: Run,
}

/// One iteration of a case; returns what to drop outside the timed part.
type Run = Box<dyn FnMut() -> Box<dyn Any>>;

struct Traces {
    size: u64,
    mixed: PathBuf,
    wide: PathBuf,
}

impl Traces {
    fn path(&self, which: Which) -> &Path {
        match which {
            Which::Mixed => &self.mixed,
            Which::Wide => &self.wide,
        }
    }
}

/// Sets case `id` up.
fn case(id: &str, traces: &Traces) -> Case {
    let map = |which| TraceBytes::map(traces.path(which)).unwrap();
    let open = |which| index_path_options().open(traces.path(which)).unwrap();
    let mixed = traces.mixed.clone();
    let (which, covers, run): (Which, Covers, Run) = match id {
        "raw_scan" | "raw_scan_wide" => {
            let which = if id == "raw_scan" {
                Which::Mixed
            } else {
                Which::Wide
            };
            let data = map(which);
            (
                which,
                Covers::File,
                Box::new(move || boxed(raw_scan(black_box(data.as_slice())))),
            )
        }
        "open_index" => (
            Which::Mixed,
            Covers::File,
            Box::new(move || boxed(index_path_options().open(&mixed).unwrap())),
        ),
        "open_sidecar" => {
            // As a user's second open sees it: the trace has settled (its
            // stamps can vouch for the data only 2 s after its last change),
            // a read-write open wrote the sidecar (or re-stamped one written
            // too early), and the timed opens only read it.
            settle(&mixed);
            for _ in 0..2 {
                let first = support::with_sidecar()
                    .sidecar(SidecarPolicy::ReadWrite)
                    .open(&mixed)
                    .unwrap();
                let outcome = first.report().sidecar.as_ref();
                assert!(
                    matches!(
                        outcome,
                        Some(SidecarOutcome::Used | SidecarOutcome::Written)
                    ),
                    "no sidecar for {}: {:?}",
                    mixed.display(),
                    first.report()
                );
            }
            let blocks = support::with_sidecar()
                .sidecar(SidecarPolicy::ReadOnly)
                .open(&mixed)
                .unwrap()
                .report()
                .framing_checked;
            eprintln!("open_sidecar: each open reads the framing of {blocks} blocks");
            (
                Which::Mixed,
                Covers::File,
                Box::new(move || {
                    let reader = support::with_sidecar()
                        .sidecar(SidecarPolicy::ReadOnly)
                        .open(&mixed)
                        .unwrap();
                    assert!(reader.report().sidecar_used());
                    boxed(reader)
                }),
            )
        }
        "open_first" => {
            let (linked, sidecar) = first_open_link(&mixed);
            (
                Which::Mixed,
                Covers::File,
                Box::new(move || {
                    let options = support::with_sidecar().sidecar(SidecarPolicy::ReadWrite);
                    boxed(first_open(
                        options,
                        &linked,
                        &sidecar,
                        SidecarOutcome::Written,
                    ))
                }),
            )
        }
        "first_children" => {
            // What `tracetree children --node ID` does on a trace opened for
            // the first time: the default deferral, then one page.
            let (linked, sidecar) = first_open_link(&mixed);
            (
                Which::Mixed,
                Covers::File,
                Box::new(move || {
                    let options = support::with_sidecar()
                        .defer_sidecar(Some(LazyOptions::DEFAULT_DEFERRED_TABLES));
                    let reader = first_open(options, &linked, &sidecar, SidecarOutcome::Deferred);
                    let thread = reader.thread_ids()[0];
                    let root = reader.root(thread).unwrap().unwrap();
                    let total = reader.child_count(root).unwrap();
                    let counts: usize = reader
                        .children_range(root, 0, 100)
                        .unwrap()
                        .into_iter()
                        .map(|child| reader.child_count(child).unwrap())
                        .sum();
                    boxed((reader, total, counts))
                }),
            )
        }
        "open_rebuild" => (
            Which::Mixed,
            Covers::File,
            Box::new(move || {
                let options = index_path_options().index(IndexChoice::Rebuild);
                boxed(options.open(&mixed).unwrap())
            }),
        ),
        "rebuild_1" | "rebuild_2" => {
            let threads = if id == "rebuild_1" { 1 } else { 2 };
            let data = map(Which::Mixed);
            let mut options = RebuildOptions::default();
            options.threads = threads;
            options.chunk_size = 0;
            (
                Which::Mixed,
                Covers::File,
                Box::new(move || {
                    boxed(RebuiltIndex::build(black_box(data.as_slice()), options).unwrap())
                }),
            )
        }
        "random_expansions" | "random_expansions_unbounded" | "random_expansions_read" => {
            let options = match id {
                "random_expansions" => index_path_options(),
                "random_expansions_read" => index_path_options().file_access(FileAccess::Read),
                _ => index_path_options().resident_window(None),
            };
            let reader = options.open(traces.path(Which::Mixed)).unwrap();
            let nodes = random_containers(&reader);
            (
                Which::Mixed,
                Covers::Elements(nodes.len() as u64),
                Box::new(move || boxed(support::expand_cold(&reader, &nodes))),
            )
        }
        "walk_headers" => {
            let reader = open(Which::Mixed);
            (
                Which::Mixed,
                Covers::File,
                Box::new(move || boxed(walk_headers(&reader))),
            )
        }
        "walk_parallel" | "walk_parallel_read" => {
            let reader = index_path_options()
                .file_access(access(id))
                .open(traces.path(Which::Mixed))
                .unwrap();
            (
                Which::Mixed,
                Covers::File,
                Box::new(move || boxed(walk_headers_parallel(&reader))),
            )
        }
        "walk_tracetree" | "walk_tracetree_read" => {
            let reader = LazyTraceReader::options()
                .cache_bytes(SMALL_CACHE)
                .file_access(access(id))
                .open(&mixed)
                .unwrap();
            (
                Which::Mixed,
                Covers::File,
                Box::new(move || boxed(walk_tracetree(&reader, &reader.thread_ids()))),
            )
        }
        "eager_load" => {
            let data = map(Which::Mixed);
            (
                Which::Mixed,
                Covers::File,
                Box::new(move || boxed(EagerTrace::load(data.clone()).unwrap())),
            )
        }
        "streaming_write" => {
            let path = trace_dir().join("sizes-streaming-write.trace");
            let bytes = traces.size.min(WRITE_BYTES);
            let options = GenerateOptions::new(bytes, Shape::Mixed);
            // The bytes written vary a little: the child run reports them.
            let run = Box::new(move || {
                generate_file(&path, &options, |_| {}).unwrap();
                boxed(Scratch(path.clone()))
            });
            (Which::Mixed, Covers::Written(bytes), run)
        }
        "wide_first_page_cold" | "wide_first_page_warm" => {
            let reader = open(Which::Wide);
            let wide = wide_call(&reader);
            let cold = id == "wide_first_page_cold";
            reader.children_range(wide, 0, EXPANSIONS).unwrap();
            (
                Which::Wide,
                Covers::Elements(EXPANSIONS as u64),
                Box::new(move || {
                    if cold {
                        reader.clear_cache();
                    }
                    boxed(reader.children_range(wide, 0, EXPANSIONS).unwrap())
                }),
            )
        }
        "wide_all_children" => {
            let reader = open(Which::Wide);
            let wide = wide_call(&reader);
            (
                Which::Wide,
                Covers::WideCall,
                Box::new(move || {
                    reader.clear_cache();
                    boxed(reader.children(wide).unwrap())
                }),
            )
        }
        other => panic!("no case {other}"),
    };
    Case { which, covers, run }
}

/// How the case `id` reads the files: `_read` cases without a mapping.
fn access(id: &str) -> FileAccess {
    if id.ends_with("_read") {
        FileAccess::Read
    } else {
        FileAccess::Map
    }
}

/// In a child process: set up, reset the peak, run once, report.
fn run_child(id: &str) {
    let traces = traces_from_env();
    let mut case = case(id, &traces);
    // Peak RSS from here on (Linux ≥ 4.0; if refused, VmHWM includes the setup).
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let stop = AtomicBool::new(false);
    let peak_anon = AtomicU64::new(status_bytes("RssAnon:"));
    let (seconds, out) = std::thread::scope(|scope| {
        scope.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                peak_anon.fetch_max(status_bytes("RssAnon:"), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        let start = Instant::now();
        let out = (case.run)();
        let seconds = start.elapsed().as_secs_f64();
        peak_anon.fetch_max(status_bytes("RssAnon:"), Ordering::Relaxed);
        stop.store(true, Ordering::Relaxed);
        (seconds, out)
    });
    // The streaming write's file is still there: its drop deletes it.
    let written = match case.covers {
        Covers::Written(_) => std::fs::metadata(trace_dir().join("sizes-streaming-write.trace"))
            .map_or(0, |m| m.len()),
        _ => 0,
    };
    drop(out);
    println!(
        "SIZES {id} {seconds} {} {} {} {written}",
        status_bytes("VmHWM:"),
        peak_anon.load(Ordering::Relaxed),
        reset
    );
}

/// The traces' paths (the parent process generated them).
fn traces_from_env() -> Traces {
    let size = bench_size_or("100MB");
    Traces {
        size,
        mixed: generated_path(Shape::Mixed, 2, size),
        wide: generated_path(Shape::Wide, 2, size),
    }
}

fn sizes(c: &mut Criterion) {
    let started = SystemTime::now();
    let load_before = load_average();
    let size = bench_size_or("100MB");
    let label = size_label(size);
    let only = list_env("TRACETREE_SIZES_ONLY");
    let skip = list_env("TRACETREE_SIZES_SKIP").unwrap_or_default();
    let wanted: Vec<&str> = CASES
        .iter()
        .map(|&(id, _)| id)
        .filter(|id| only.as_ref().is_none_or(|o| o.iter().any(|x| x == id)))
        .filter(|id| !skip.iter().any(|x| x == id))
        .collect();
    let wants_wide = wanted.iter().any(|id| id.contains("wide"));
    let wants_mixed = wanted.iter().any(|id| !id.contains("wide"));
    // Only the traces some case reads are generated.
    let (mixed, mixed_gen) = if wants_mixed {
        generated(Shape::Mixed, 2, size)
    } else {
        (generated_path(Shape::Mixed, 2, size), None)
    };
    let (wide, wide_gen) = if wants_wide {
        generated(Shape::Wide, 2, size)
    } else {
        (generated_path(Shape::Wide, 2, size), None)
    };
    let traces = Traces { size, mixed, wide };
    let file_len = |which| std::fs::metadata(traces.path(which)).map_or(0, |m| m.len());
    let (mixed_len, wide_len) = (file_len(Which::Mixed), file_len(Which::Wide));
    let wide_bytes = if wants_wide {
        wide_call_bytes(&LazyTraceReader::open(&traces.wide).unwrap())
    } else {
        0
    };
    // Warm the page cache.
    for (which, wanted) in [(Which::Mixed, wants_mixed), (Which::Wide, wants_wide)] {
        if wanted {
            raw_scan(TraceBytes::map(traces.path(which)).unwrap().as_slice());
        }
    }

    let available = meminfo_bytes("MemAvailable:");
    let mut notes: Vec<(String, String)> = Vec::new();
    let selected: Vec<&str> = wanted
        .into_iter()
        .filter(|&id| {
            let needed = EagerTrace::estimated_memory(mixed_len);
            if id == "eager_load" && available < needed {
                notes.push((
                    id.into(),
                    format!(
                        "skipped: needs ~{:.1} GB, MemAvailable {:.1} GB",
                        needed as f64 / 1e9,
                        available as f64 / 1e9
                    ),
                ));
                return false;
            }
            true
        })
        .collect();

    // Each case once in its own process: peak memory, and its time.
    let mut runs: Vec<(&str, Vec<ChildRun>)> = Vec::new();
    for &id in &selected {
        let run = child(id);
        eprintln!(
            "{id}: {} in its own process, peak RSS {:.0} MB, peak anon {:.0} MB",
            duration(run.seconds),
            run.peak_rss as f64 / MB,
            run.peak_anon as f64 / MB
        );
        runs.push((id, vec![run]));
    }

    let group_name = format!("sizes-{label}");
    let mut group = c.benchmark_group(&group_name);
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1));
    let mut covers = Vec::new();
    let mut slow: Vec<(&str, Vec<f64>)> = Vec::new();
    for (id, child_runs) in &runs {
        let first = child_runs[0].seconds;
        if first > SLOW_SECONDS {
            // Very slow: the run in its own process is the figure.
            let case_covers = match id {
                &"streaming_write" => Covers::Written(child_runs[0].written),
                _ => Covers::File,
            };
            let which = if id.contains("wide") {
                Which::Wide
            } else {
                Which::Mixed
            };
            covers.push((*id, which, case_covers));
            continue;
        }
        let mut case = case(id, &traces);
        if let Covers::Written(_) = case.covers {
            case.covers = Covers::Written(child_runs[0].written);
        }
        covers.push((*id, case.which, case.covers));
        // The baselines always go through criterion; in their own process
        // they also pay for faulting the mapping in.
        if first > CRITERION_MAX_SECONDS && !id.starts_with("raw_scan") {
            // Slow: the median of up to 3 runs here (warm mapping, as
            // criterion's), within about a minute.
            let budget = Instant::now();
            let mut times = Vec::new();
            while times.len() < 3
                && (times.is_empty() || budget.elapsed().as_secs_f64() + first < 60.0)
            {
                let start = Instant::now();
                let out = (case.run)();
                times.push(start.elapsed().as_secs_f64());
                drop(out);
            }
            slow.push((*id, times));
            continue;
        }
        group.throughput(match case.covers {
            Covers::File => Throughput::Bytes(match case.which {
                Which::Mixed => mixed_len,
                Which::Wide => wide_len,
            }),
            Covers::WideCall => Throughput::Bytes(wide_bytes),
            Covers::Elements(n) => Throughput::Elements(n),
            Covers::Written(n) => Throughput::Bytes(n),
        });
        group.measurement_time(Duration::from_secs_f64((first * 15.0).clamp(2.0, 30.0)));
        group.bench_function(*id, |b| {
            b.iter_custom(|iterations| {
                let mut total = Duration::ZERO;
                for _ in 0..iterations {
                    let start = Instant::now();
                    let out = (case.run)();
                    total += start.elapsed();
                    drop(out);
                }
                total
            })
        });
    }
    group.finish();
    let load_after = load_average();

    // The table.
    let mut medians = Vec::new();
    for (id, child_runs) in &runs {
        let (seconds, how) = if let Some(median) = criterion_median(&group_name, id, started) {
            (median, "criterion, 10 samples".to_string())
        } else if let Some((_, times)) = slow.iter_mut().find(|s| s.0 == *id) {
            let n = times.len();
            (
                support::median(times),
                format!("median of {n} run(s) in the bench process"),
            )
        } else {
            (child_runs[0].seconds, "1 run, own process".to_string())
        };
        medians.push((*id, seconds, how));
    }
    let raw = |which| {
        let id = if which == Which::Mixed {
            "raw_scan"
        } else {
            "raw_scan_wide"
        };
        medians.iter().find(|m| m.0 == id).map(|m| m.1)
    };
    let mut table = String::new();
    let gb = |bytes: u64| bytes as f64 / (1u64 << 30) as f64;
    table.push_str(&format!(
        "### {label}: mixed trace {mixed_len} B ({:.2} GiB), wide trace {wide_len} B (wide call {wide_bytes} B)\n\n",
        gb(mixed_len)
    ));
    let generated_now: Vec<String> = [
        ("mixed", mixed_gen, mixed_len),
        ("wide", wide_gen, wide_len),
    ]
    .into_iter()
    .filter_map(|(name, seconds, len)| {
        let seconds = seconds?;
        Some(format!(
            "{name} in {seconds:.1} s ({:.0} MB/s)",
            len as f64 / seconds / MB
        ))
    })
    .collect();
    if !generated_now.is_empty() {
        table.push_str(&format!("Generated now: {}.\n\n", generated_now.join(", ")));
    }
    table.push_str(&format!(
        "Load average (1/5/15 min) before: {load_before}; after: {load_after}.\n\n"
    ));
    table.push_str(
        "| case | median | throughput | ratio to raw scan | peak RSS | peak anon | timed by |\n",
    );
    table.push_str("|---|---:|---:|---:|---:|---:|---|\n");
    for &(id, what) in CASES {
        if let Some((_, note)) = notes.iter().find(|n| n.0 == id) {
            table.push_str(&format!("| {what} | {note} | | | | | |\n"));
            continue;
        }
        let Some((_, seconds, how)) = medians.iter().find(|m| m.0 == id) else {
            continue;
        };
        let (_, which, covered) = covers.iter().find(|c| c.0 == id).unwrap();
        let trace_len = if *which == Which::Mixed {
            mixed_len
        } else {
            wide_len
        };
        let (bytes, throughput) = match covered {
            Covers::File => (
                trace_len,
                format!("{:.0} MB/s", trace_len as f64 / seconds / MB),
            ),
            Covers::WideCall => (
                wide_bytes,
                format!("{:.0} MB/s", wide_bytes as f64 / seconds / MB),
            ),
            Covers::Written(n) => (*n, format!("{:.0} MB/s", *n as f64 / seconds / MB)),
            Covers::Elements(n) => (trace_len, format!("{:.3} M/s", *n as f64 / seconds / 1e6)),
        };
        let ratio = raw(*which)
            .map(|raw| seconds / (raw * bytes as f64 / trace_len as f64))
            .map_or("—".to_string(), |r| {
                if r >= 10.0 {
                    format!("{r:.0}")
                } else if r >= 0.1 {
                    format!("{r:.2}")
                } else {
                    format!("{r:.1e}")
                }
            });
        let child_runs = &runs.iter().find(|r| r.0 == id).unwrap().1;
        let peak_rss = child_runs.iter().map(|r| r.peak_rss).max().unwrap_or(0);
        let peak_anon = child_runs.iter().map(|r| r.peak_anon).max().unwrap_or(0);
        let reset = if child_runs.iter().all(|r| r.reset) {
            ""
        } else {
            " (incl. setup)"
        };
        table.push_str(&format!(
            "| {what} | {} | {throughput} | {ratio} | {:.0} MB{reset} | {:.0} MB | {how} |\n",
            duration(*seconds),
            peak_rss as f64 / MB,
            peak_anon as f64 / MB,
        ));
    }
    eprintln!("\n{table}");
    let out = trace_dir().join(format!("sizes-{label}.md"));
    std::fs::write(&out, &table).unwrap();
    eprintln!("(also in {})", out.display());
}

criterion_group!(benches, sizes);

fn main() {
    if let Ok(id) = std::env::var(CHILD) {
        run_child(&id);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
