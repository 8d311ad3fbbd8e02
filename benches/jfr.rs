//! JFR decoding: every event of a large recording decoded by its metadata
//! layout, with the stack trace of each event that has one resolved to its
//! frames' methods, on one core and on two (rayon over chunks); against a
//! raw byte scan of the same mapped file (the floor: reading every byte
//! once) and the jfrs crate decoding the same events and resolving the
//! same frames, in the same run. Criterion reports bytes per second.
//!
//! The recording is made once in `target/bench-traces/jfr-burst.jfr` by a
//! workload (`Burst`, below) that commits a custom event with a stack
//! trace 24 frames deep in a tight loop, with the default JDK (`java`,
//! `javac` on `PATH`); `TRACETREE_BENCH_JFR_EVENTS` sets the events (6
//! million by default: about 100 MB). Without a JDK the bench says so and
//! measures nothing.
//!
//! Before the timed runs, one decode on two threads reports its peak RSS
//! (`VmHWM`, after resetting it) and peak anonymous memory (heap).
//!
//! Run with `cargo bench --bench jfr`.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tracetree::import::jfr::Recording;
use tracetree::storage::TraceBytes;

/// The workload: a custom event committed in a tight loop, 24 frames deep.
const BURST: &str = r#"
import jdk.jfr.Event;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

public class Burst {
    @Name("bench.Tick")
    @StackTrace(true)
    static class Tick extends Event {
        long value;
        int small;
        String tag;
    }

    static void loop(long n) {
        for (long i = 0; i < n; i++) {
            Tick t = new Tick();
            t.value = i * 7919;
            t.small = (int) (i & 1023);
            t.tag = (i & 1) == 0 ? "even" : "odd";
            t.commit();
        }
    }

    static void deep(int depth, long n) {
        if (depth == 0) loop(n); else deep(depth - 1, n);
    }

    public static void main(String[] args) {
        deep(22, Long.parseLong(args[0]));
    }
}
"#;

fn trace_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-traces")
}

/// The recording, made on first use; `None` without a JDK.
fn recording() -> Option<PathBuf> {
    let events: u64 = std::env::var("TRACETREE_BENCH_JFR_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6_000_000);
    let dir = trace_dir();
    let path = dir.join(format!("jfr-burst-{events}.jfr"));
    if path.is_file() {
        return Some(path);
    }
    std::fs::create_dir_all(&dir).unwrap();
    let classes = dir.join("jfr-burst-classes");
    std::fs::create_dir_all(&classes).unwrap();
    let source = classes.join("Burst.java");
    std::fs::write(&source, BURST).unwrap();
    let javac = Command::new("javac")
        .arg("-d")
        .arg(&classes)
        .arg(&source)
        .status();
    if !javac.is_ok_and(|s| s.success()) {
        eprintln!("jfr bench: no javac on PATH; nothing measured");
        return None;
    }
    let partial = dir.join("jfr-burst.partial.jfr");
    let status = Command::new("java")
        .arg(format!(
            "-XX:StartFlightRecording=filename={},settings=default",
            partial.display()
        ))
        .arg("-cp")
        .arg(&classes)
        .arg("Burst")
        .arg(events.to_string())
        .status()
        .unwrap();
    assert!(status.success(), "the workload failed");
    std::fs::rename(&partial, &path).unwrap();
    Some(path)
}

fn status_bytes(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let line = status.lines().find(|line| line.starts_with(field))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map_or(0, |kb| kb * 1024)
}

/// The raw scan: every byte of the mapped file read once.
fn raw_scan(bytes: &[u8]) -> u64 {
    bytes
        .chunks(64)
        .map(|c| c.iter().fold(0u64, |a, &b| a + u64::from(b)))
        .sum()
}

/// jfrs decoding every event and resolving the frames of its stack trace.
fn jfrs_decode(path: &Path) -> (u64, u64) {
    use jfrs::reader::JfrReader;
    let mut reader = JfrReader::new(std::fs::File::open(path).unwrap());
    let (mut events, mut frames) = (0, 0);
    for (mut reader, chunk) in reader.chunks().flatten() {
        for event in reader.events(&chunk).flatten() {
            events += 1;
            let stack = event
                .value()
                .get_field("stackTrace")
                .and_then(|s| s.get_field("frames"))
                .and_then(|f| f.as_iter());
            if let Some(stack) = stack {
                for frame in stack {
                    if frame.get_field("method").is_some() {
                        frames += 1;
                    }
                }
            }
        }
    }
    (events, frames)
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}

/// One decode on two threads, its peak RSS and heap reported.
fn report_memory(path: &Path) {
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let stop = AtomicBool::new(false);
    let peak_anon = AtomicU64::new(status_bytes("RssAnon:"));
    let (events, frames) = std::thread::scope(|scope| {
        scope.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                peak_anon.fetch_max(status_bytes("RssAnon:"), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        let recording = Recording::open(path).unwrap();
        let counts = pool(2).install(|| recording.decode_all());
        peak_anon.fetch_max(status_bytes("RssAnon:"), Ordering::Relaxed);
        stop.store(true, Ordering::Relaxed);
        counts
    });
    let mb = |b: u64| b as f64 / 1e6;
    eprintln!(
        "jfr bench: {} ({:.1} MB): {events} events, {frames} frames resolved; peak RSS {:.0} MB{}, peak anon {:.0} MB",
        path.display(),
        mb(std::fs::metadata(path).unwrap().len()),
        mb(status_bytes("VmHWM:")),
        if reset {
            ""
        } else {
            " (not reset: includes the setup)"
        },
        mb(peak_anon.load(Ordering::Relaxed)),
    );
}

fn bench(c: &mut Criterion) {
    let Some(path) = recording() else {
        return;
    };
    report_memory(&path);
    let bytes = TraceBytes::map(&path).unwrap();
    let recording = Recording::open(&path).unwrap();
    let mut group = c.benchmark_group("jfr");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.throughput(Throughput::Bytes(bytes.len()));
    group.bench_function("raw byte scan", |b| {
        b.iter(|| black_box(raw_scan(bytes.as_slice())))
    });
    for threads in [1, 2] {
        let pool = pool(threads);
        group.bench_function(
            format!("decode, frames resolved, {threads} thread(s)"),
            |b| b.iter(|| black_box(pool.install(|| recording.decode_all()))),
        );
    }
    group.bench_function("jfrs decode, frames resolved", |b| {
        b.iter(|| black_box(jfrs_decode(&path)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
