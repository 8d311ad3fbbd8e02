//! What the benchmarks share: the trace size asked for, the traces
//! themselves (generated once into `target/bench-traces/`), and the
//! raw-scan baseline.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use tracetree::common::ThreadId;
use tracetree::generate::raw::{self, SynthOptions};
use tracetree::generate::{GenerateOptions, Shape, generate_file};
use tracetree::read::{LazyNode, LazyTraceReader, Visit, WalkDetail, WalkNode};
use tracetree::tree::{TraceTree, VisitDetail};

/// The size of the benchmark trace: `TRACETREE_BENCH_SIZE` (`100MB`, `1GB`,
/// `10GB`), 64 MiB by default.
pub fn bench_size() -> u64 {
    bench_size_or("64MB")
}

/// `TRACETREE_BENCH_SIZE`, or `default` when it is not set.
pub fn bench_size_or(default: &str) -> u64 {
    let text = std::env::var("TRACETREE_BENCH_SIZE").unwrap_or_else(|_| default.into());
    tracetree::generate::parse_size(&text).expect("TRACETREE_BENCH_SIZE like 1GB")
}

/// Where generated benchmark traces are kept (not in the repository).
pub fn trace_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-traces")
}

/// A `tracetree gen` trace of about `bytes` (seed 1, default blocks),
/// generated on first use into [`trace_dir`]; returns its path and, when it
/// was generated now, the seconds that took (the streaming writer's
/// throughput at full size). A trace is written under a temporary name and
/// renamed when complete, so an interrupted run leaves no trace that looks
/// finished.
pub fn generated(shape: Shape, threads: usize, bytes: u64) -> (PathBuf, Option<f64>) {
    let dir = trace_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let path = generated_path(shape, threads, bytes);
    if path.exists() && LazyTraceReader::index_path(&path).exists() {
        return (path, None);
    }
    let partial = dir.join(format!("gen-{shape}-{threads}t-{bytes}.partial"));
    let options = GenerateOptions {
        threads,
        ..GenerateOptions::new(bytes, shape)
    };
    eprintln!("generating {} ...", path.display());
    let start = std::time::Instant::now();
    generate_file(&partial, &options, |_| {}).unwrap();
    let seconds = start.elapsed().as_secs_f64();
    rename(
        &LazyTraceReader::index_path(&partial),
        &LazyTraceReader::index_path(&path),
    );
    rename(&partial, &path);
    (path, Some(seconds))
}

/// Where [`generated`] keeps that trace.
pub fn generated_path(shape: Shape, threads: usize, bytes: u64) -> PathBuf {
    trace_dir().join(format!("gen-{shape}-{threads}t-{bytes}.trace"))
}

fn rename(from: &Path, to: &Path) {
    std::fs::rename(from, to)
        .unwrap_or_else(|e| panic!("{} -> {}: {e}", from.display(), to.display()));
}

/// The benchmark trace of about `bytes` (2 threads, 1 MiB blocks; each
/// thread's root holds one wide call), generated on first use.
pub fn trace(bytes: u64) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-traces");
    let options = SynthOptions {
        threads: 2,
        bytes,
        block_bytes: 1 << 20,
        seed: 42,
        ..SynthOptions::default()
    };
    raw::cached(&dir, &format!("lazy-{bytes}"), &options).unwrap()
}

/// The baseline: every byte of the mapping read once, as u64 words.
pub fn raw_scan(bytes: &[u8]) -> u64 {
    bytes
        .chunks_exact(8)
        .map(|word| u64::from_le_bytes(word.try_into().unwrap()))
        .fold(0, u64::wrapping_add)
}

/// Visits every node of every thread with its header (`walk_thread`), the
/// threads one after the other; returns how many.
pub fn walk_headers(reader: &LazyTraceReader) -> u64 {
    let mut nodes = 0;
    for thread in reader.thread_ids() {
        reader
            .walk_thread(thread, WalkDetail::Headers, |_| {
                nodes += 1;
                Ok(true)
            })
            .unwrap();
    }
    nodes
}

/// Walks every root of `threads` through `TraceTree::walk_visit` (what each
/// of the printers' parts runs), every tracepoint decoded; returns a sum
/// over them, so the walk is not optimized away.
pub fn walk_tracetree(reader: &LazyTraceReader, threads: &[ThreadId]) -> u64 {
    let mut nodes = 0u64;
    for &thread in threads {
        let roots = reader.roots(thread).unwrap();
        reader
            .walk_visit(&roots, None, VisitDetail::default(), |step| {
                if let Visit::Node { tracepoint, .. } = step {
                    nodes += tracepoint.event().get() as u64 & 1;
                }
                Ok(())
            })
            .unwrap();
    }
    nodes
}

/// Visits every node of every thread with its header, the threads walked in
/// parallel (`walk_threads`, what `tracetree info` runs); returns how many.
pub fn walk_headers_parallel(reader: &LazyTraceReader) -> u64 {
    walk_parallel(reader, WalkDetail::Headers)
}

/// Visits every node of every thread at `detail`, the threads walked in
/// parallel; returns how many.
pub fn walk_parallel(reader: &LazyTraceReader, detail: WalkDetail) -> u64 {
    reader
        .walk_threads(
            detail,
            |_| 0u64,
            |nodes, _| {
                *nodes += 1;
                Ok(true)
            },
        )
        .unwrap()
        .iter()
        .sum()
}

/// The generated mixed trace of [`bench_size`] bytes (2 threads): its size
/// in bytes and a reader keeping its sidecar in [`sidecar_dir`].
pub fn mixed_reader() -> (u64, LazyTraceReader) {
    let (trace, _) = generated(Shape::Mixed, 2, bench_size());
    let bytes = std::fs::metadata(&trace).unwrap().len();
    (bytes, with_sidecar().open(&trace).unwrap())
}

/// Where the benchmarks keep their traces' lookup sidecars.
pub fn sidecar_dir() -> PathBuf {
    trace_dir().join("lookups")
}

/// Reader options that keep sidecars in [`sidecar_dir`], written at the
/// first open (not deferred to the second).
pub fn with_sidecar() -> tracetree::read::LazyOptions {
    LazyTraceReader::options()
        .sidecar_dir(Some(sidecar_dir()))
        .defer_sidecar(None)
}

/// A field of `/proc/self/status` (`VmHWM:`, `RssAnon:`, …) in bytes; 0
/// where there is none (not Linux).
pub fn status_bytes(field: &str) -> u64 {
    proc_field_bytes("/proc/self/status", field)
}

/// A field of `/proc/meminfo` (`MemAvailable:`, …) in bytes; 0 where there
/// is none.
pub fn meminfo_bytes(field: &str) -> u64 {
    proc_field_bytes("/proc/meminfo", field)
}

/// The value in kB of the line of `file` that starts with `field`, in bytes.
fn proc_field_bytes(file: &str, field: &str) -> u64 {
    std::fs::read_to_string(file)
        .ok()
        .and_then(|text| {
            let line = text.lines().find(|line| line.starts_with(field))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map_or(0, |kb| kb * 1024)
}

/// SplitMix64, for random samples and operations.
pub fn next_random(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `count` of the nodes `wanted` keeps, chosen uniformly (reservoir
/// sampling over a headers walk), the same for a trace every run.
pub fn random_nodes(
    reader: &LazyTraceReader,
    count: usize,
    wanted: impl Fn(&WalkNode<'_>) -> bool,
) -> Vec<LazyNode> {
    let mut sample = Vec::with_capacity(count);
    let (mut seen, mut state) = (0u64, 42u64);
    for thread in reader.thread_ids() {
        reader
            .walk_thread(thread, WalkDetail::Headers, |walked| {
                if wanted(walked) {
                    seen += 1;
                    if sample.len() < count {
                        sample.push(walked.node);
                    } else {
                        let slot = next_random(&mut state) % seen;
                        if (slot as usize) < count {
                            sample[slot as usize] = walked.node;
                        }
                    }
                }
                Ok(true)
            })
            .unwrap();
    }
    sample
}

/// `count` containers chosen uniformly, the same for a trace every run.
pub fn random_containers(reader: &LazyTraceReader, count: usize) -> Vec<LazyNode> {
    random_nodes(reader, count, |walked| {
        walked.header.tracepoint_type.is_container()
    })
}

/// Expands each of `nodes` whole (all its children) after clearing the
/// reader's cache, as an IDE's clicks on cold nodes do; their children.
pub fn expand_cold(reader: &LazyTraceReader, nodes: &[LazyNode]) -> usize {
    reader.clear_cache();
    nodes
        .iter()
        .map(|&n| reader.children(n).unwrap().len())
        .sum()
}

/// The median of `values` (sorted in place).
pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// CPU seconds this process has used (all threads, user and system), from
/// `/proc/self/stat`; `None` where there is no such file.
pub fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which is in parentheses.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    // USER_HZ, 100 on Linux.
    Some(ticks / 100.0)
}
