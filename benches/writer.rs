//! The streaming writer at full size: a generated trace's content (the
//! `gen` trace of `TRACETREE_BENCH_SIZE`, 1 GB by default, one recorded
//! thread per producer) decoded into memory beforehand, then written again
//! through the [`StreamingWriter`] by 1, 2 and 3 producer threads, beside a
//! raw `write` of the same byte count to a new file (the baseline: what the
//! page cache allows). Both write to `target/bench-writer/`, a file removed
//! before each run (not timed).
//!
//! The writer is configured as `gen` configures it (1 MiB blocks, 4 queued,
//! threads in turns, each producer pushing through a `ThreadBatch`): the
//! rewritten data file and index are checked once to be byte-identical to
//! the generated ones, so the bench measures exactly the work `gen` hands
//! the writer, without the generator's own cost. The content takes about
//! 5 GB of memory at 1 GB.
//!
//! `WRITER_PROFILE=N` instead writes the content of N producers beside the
//! raw write, `WRITER_ROUNDS` times (3), printing wall and CPU time of
//! each, and exits: also a fixed workload for `perf` or callgrind (the
//! producers' work is in `produce`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group};
use tracetree::LazyTraceReader;
use tracetree::common::ThreadId;
use tracetree::lowlevel::{DecodedBlock, Object};
use tracetree::model::{Footer, Tracepoint};
use tracetree::write::{BlockOrder, StreamingOptions, StreamingThread, StreamingWriter};

#[path = "support/mod.rs"]
mod support;

use tracetree::generate::Shape;

/// One push of a recorded thread.
enum Step<'a> {
    Tracepoint(Tracepoint<'a>),
    Footer(Footer<'a>),
}

/// A recorded thread's content: its reference objects and its pushes.
struct ThreadContent<'a> {
    thread: ThreadId,
    references: Vec<Object<'a>>,
    steps: Vec<Step<'a>>,
}

/// Decodes every thread of the data file `bytes` into memory.
fn content(bytes: &[u8]) -> Vec<ThreadContent<'_>> {
    let mut threads: Vec<ThreadContent<'_>> = Vec::new();
    let (blocks, error) = DecodedBlock::decode_all(bytes);
    assert!(error.is_none(), "a generated trace decodes: {error:?}");
    for block in blocks {
        let thread = block.thread;
        let index = match threads.iter().position(|t| t.thread == thread) {
            Some(index) => index,
            None => {
                threads.push(ThreadContent {
                    thread,
                    references: Vec::new(),
                    steps: Vec::new(),
                });
                threads.len() - 1
            }
        };
        let thread = &mut threads[index];
        for (_, object) in block.objects {
            match object {
                Object::Tracepoint(tracepoint) => thread.steps.push(Step::Tracepoint(tracepoint)),
                Object::Footer(footer) => thread.steps.push(Step::Footer(footer)),
                // Written again by close.
                Object::ThreadName(_) => {}
                other => thread.references.push(other),
            }
        }
    }
    threads
}

/// `gen`'s writer options for a trace of `threads` threads.
fn options() -> StreamingOptions {
    let mut options = StreamingOptions::default();
    options.block_size = 1 << 20;
    options.queue_capacity = 4;
    options.order = BlockOrder::RoundRobin;
    options
}

/// Writes `content` to `path`, one producer thread per recorded thread.
fn write(path: &Path, content: &[ThreadContent<'_>]) -> u64 {
    let writer = StreamingWriter::create_with_options(path, options()).unwrap();
    let handles: Vec<_> = content
        .iter()
        .map(|thread| {
            for object in &thread.references {
                writer.add_reference(object).unwrap();
            }
            writer
                .new_thread_with_id(thread.thread, format!("worker-{}", thread.thread.get()))
                .unwrap()
        })
        .collect();
    std::thread::scope(|scope| {
        for (mut handle, thread) in handles.into_iter().zip(content) {
            let producer = std::thread::Builder::new().name("producer".into());
            producer
                .spawn_scoped(scope, move || {
                    produce(&mut handle, thread);
                    handle.finish().unwrap();
                })
                .unwrap();
        }
    });
    writer.close().unwrap().data_bytes
}

/// Pushes a thread's content through a batch, as `gen` records (a
/// function of its own, for profilers).
#[inline(never)]
fn produce(handle: &mut StreamingThread, thread: &ThreadContent<'_>) {
    let mut batch = handle.batch().unwrap();
    for step in &thread.steps {
        match step {
            Step::Tracepoint(tracepoint) => batch.push_tracepoint(tracepoint),
            Step::Footer(footer) => batch.push_footer(footer),
        }
        .unwrap();
    }
}

fn out_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-writer");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Removes a file written by an earlier run, so the timed run does not pay
/// for freeing it.
fn remove(path: &Path) {
    let _ = std::fs::remove_file(path);
    let _ = std::fs::remove_file(LazyTraceReader::index_path(path));
}

fn bench(c: &mut Criterion) {
    let size = support::bench_size_or("1GB");
    for producers in [1, 2, 3] {
        let (source, _) = support::generated(Shape::Mixed, producers, size);
        let data = std::fs::read(&source).unwrap();
        let content = content(&data);
        assert_eq!(content.len(), producers);
        let out = out_dir().join(format!("writer-{producers}.trace"));
        remove(&out);
        write(&out, &content);
        assert!(
            std::fs::read(&out).unwrap() == data
                && std::fs::read(LazyTraceReader::index_path(&out)).unwrap()
                    == std::fs::read(LazyTraceReader::index_path(&source)).unwrap(),
            "the rewritten trace differs from the generated one"
        );
        let tracepoints = content
            .iter()
            .flat_map(|t| &t.steps)
            .filter(|s| matches!(s, Step::Tracepoint(_)))
            .count();
        println!(
            "{producers} producer(s): {} data bytes, {tracepoints} tracepoints",
            data.len()
        );

        let mut group = c.benchmark_group(format!("writer/{producers}-producers"));
        group.throughput(Throughput::Bytes(data.len() as u64));
        group.sample_size(10);
        group.measurement_time(Duration::from_secs(20));
        group.bench_function("streaming-writer", |b| {
            b.iter_batched(
                || remove(&out),
                |()| write(&out, &content),
                BatchSize::PerIteration,
            )
        });
        // Baseline: the same byte count written at once to a new file.
        let raw = out_dir().join("raw.bin");
        group.bench_function("raw-write-baseline", |b| {
            b.iter_batched(
                || remove(&raw),
                |()| std::fs::write(&raw, &data).unwrap(),
                BatchSize::PerIteration,
            )
        });
        group.finish();
        remove(&out);
        remove(&raw);
    }
}

criterion_group!(benches, bench);

fn main() {
    match std::env::var("WRITER_PROFILE") {
        Ok(producers) => {
            let producers: usize = producers.parse().expect("WRITER_PROFILE=1, 2 or 3");
            let size = support::bench_size_or("1GB");
            let (source, _) = support::generated(Shape::Mixed, producers, size);
            let data = std::fs::read(&source).unwrap();
            let content = content(&data);
            let out = out_dir().join(format!("writer-{producers}.trace"));
            let raw = out_dir().join("raw.bin");
            let cpu_now = || support::cpu_seconds().unwrap_or(f64::NAN);
            let rounds: usize = std::env::var("WRITER_ROUNDS").map_or(3, |r| r.parse().unwrap());
            for _ in 0..rounds {
                remove(&out);
                remove(&raw);
                let (start, cpu) = (std::time::Instant::now(), cpu_now());
                let bytes = write(&out, &content);
                let (wall, cpu) = (start.elapsed().as_secs_f64(), cpu_now() - cpu);
                let (start, raw_cpu) = (std::time::Instant::now(), cpu_now());
                std::fs::write(&raw, &data).unwrap();
                let (raw_wall, raw_cpu) = (start.elapsed().as_secs_f64(), cpu_now() - raw_cpu);
                println!(
                    "writer: {bytes} bytes in {wall:.3} s ({cpu:.2} CPU-s); raw write {raw_wall:.3} s \
                     ({raw_cpu:.2} CPU-s); ratio {:.2}",
                    wall / raw_wall
                );
            }
            remove(&out);
            remove(&raw);
        }
        Err(_) => {
            benches();
            Criterion::default().configure_from_args().final_summary();
        }
    }
}
