//! The streaming writer's throughput with 1, 2 and 4 producer threads, to a
//! file in the page cache (`target/bench-streaming/`), against baselines
//! moving the same bytes: `memcpy` into a (reused) vector per producer, and
//! `std::fs::write` of as many bytes of a finished data file.
//!
//! Two ways to record: `ids` pushes tracepoints that already carry their ids
//! (a recorder or importer that interns itself: the writer's own cost), and
//! `names` records through the builder API by name (every tracepoint interns
//! its specs in the shared pool).
//!
//! Run with `cargo bench --bench streaming`; criterion reports bytes per
//! second of the data file; tracepoints per second are that divided by the
//! bytes per tracepoint printed at the start. `STREAMING_PROFILE=ids` (or
//! `names`) instead streams one producer's run once and exits, for
//! callgrind or perf; `STREAMING_PROFILE=cpu` prints only the CPU time per
//! tracepoint of the `ids` runs.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group};
use tracetree::common::{
    ClassId, CodeLocationId, EventId, FieldId, MethodId, StringId, ThreadId, VariableId,
};
use tracetree::lowlevel::Object;
use tracetree::model::{
    ClassDescriptor, CodeLocation, CodeLocationKind, DiffStatus, FieldDescriptor, Footer, JavaStr,
    MethodDescriptor, StringObject, Tracepoint, TracepointBody, TracepointHeader, TracepointType,
    Type, Value, VariableDescriptor,
};
use tracetree::write::{
    CallOutcome, CallSpec, CodeLocationSpec, FieldSpec, MethodSpec, StreamingOptions,
    StreamingThread, StreamingWriter, ThreadRecorder, ValueSpec, VariableSpec,
};

#[path = "support/mod.rs"]
mod support;

/// Calls per producer per run; each call has 8 leaves.
const CALLS: usize = 100_000;
/// Tracepoints per call.
const PER_CALL: usize = 9;

fn bench_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-streaming");
    std::fs::create_dir_all(&dir).expect("bench directory");
    dir
}

/// The reference objects the `ids` workload refers to.
fn references() -> Vec<Object<'static>> {
    let string = |id, text: &str| {
        Object::String(StringObject {
            id: StringId::new(id),
            value: JavaStr::new(text),
        })
    };
    let location = |id, line| {
        Object::CodeLocation(CodeLocation {
            kind: CodeLocationKind::Access,
            id: CodeLocationId::new(id),
            file_name: StringId::new(0),
            class_name: StringId::new(1),
            method_name: StringId::new(2),
            line,
            access_path: None,
            argument_paths: Vec::new(),
            locals: Vec::new(),
        })
    };
    vec![
        Object::ClassDescriptor(ClassDescriptor {
            id: ClassId::new(0),
            name: JavaStr::new("app.Worker"),
        }),
        Object::MethodDescriptor(MethodDescriptor {
            id: MethodId::new(0),
            class: ClassId::new(0),
            name: JavaStr::new("step"),
            return_type: Type::Int,
            parameter_types: vec![Type::Int],
        }),
        Object::FieldDescriptor(FieldDescriptor {
            id: FieldId::new(0),
            class: ClassId::new(0),
            name: JavaStr::new("total"),
            field_type: Type::Long,
            is_static: false,
            is_final: false,
            is_volatile: false,
        }),
        Object::VariableDescriptor(VariableDescriptor {
            id: VariableId::new(0),
            name: JavaStr::new("i"),
            variable_type: Type::Int,
        }),
        string(0, "Worker.kt"),
        string(1, "app.Worker"),
        string(2, "step"),
        location(0, 10),
        location(1, 11),
        location(2, 12),
    ]
}

fn tracepoint(
    thread: ThreadId,
    tracepoint_type: TracepointType,
    location: i32,
    body: TracepointBody<'static>,
) -> Tracepoint<'static> {
    Tracepoint {
        header: TracepointHeader {
            tracepoint_type,
            code_location: CodeLocationId::new(location),
            thread,
            event: EventId::new(0),
            diff_status: DiffStatus::None,
        },
        child_diff_statuses: Vec::new(),
        body,
    }
}

/// One producer's run through `push_tracepoint`: calls of 8 leaves (field
/// and local writes and reads of objects and numbers). Event ids count up
/// from `first_event` (each producer takes its own range, so the benchmark
/// measures the writer, not a counter shared by the producers).
fn record_with_ids(thread: &mut StreamingThread, first_event: i32) {
    let id = thread.thread_id();
    let worker = Value::Object {
        class: ClassId::new(0),
        identity_hash: 7 + id.get(),
        fields: Vec::new(),
    };
    let mut call = tracepoint(
        id,
        TracepointType::MethodCall,
        0,
        TracepointBody::MethodCall {
            method: MethodId::new(0),
            receiver: worker.clone(),
            arguments: vec![Value::Int(0)],
            flags: 0,
        },
    );
    let mut write_field = tracepoint(
        id,
        TracepointType::WriteField,
        1,
        TracepointBody::WriteField {
            field: FieldId::new(0),
            receiver: worker.clone(),
            value: Value::Long(0),
        },
    );
    let mut read_field = tracepoint(
        id,
        TracepointType::ReadField,
        1,
        TracepointBody::ReadField {
            field: FieldId::new(0),
            receiver: worker,
            value: Value::Long(0),
        },
    );
    let mut write_local = tracepoint(
        id,
        TracepointType::WriteLocal,
        2,
        TracepointBody::WriteLocal {
            variable: VariableId::new(0),
            value: Value::Int(0),
        },
    );
    let mut footer = Footer::MethodCall {
        result: Value::Int(0),
        exception: JavaStr::new(""),
    };
    let mut event = first_event;
    let mut next_event = || {
        event += 1;
        EventId::new(event - 1)
    };
    for i in 0..CALLS as i32 {
        call.header.event = next_event();
        if let TracepointBody::MethodCall { arguments, .. } = &mut call.body {
            arguments[0] = Value::Int(i);
        }
        thread.push_tracepoint(&call).unwrap();
        for k in 0..2i64 {
            write_field.header.event = next_event();
            if let TracepointBody::WriteField { value, .. } = &mut write_field.body {
                *value = Value::Long(i64::from(i) * 4 + k);
            }
            thread.push_tracepoint(&write_field).unwrap();
            read_field.header.event = next_event();
            thread.push_tracepoint(&read_field).unwrap();
            write_local.header.event = next_event();
            thread.push_tracepoint(&write_local).unwrap();
            write_local.header.event = next_event();
            thread.push_tracepoint(&write_local).unwrap();
        }
        if let Footer::MethodCall { result, .. } = &mut footer {
            *result = Value::Int(i);
        }
        thread.push_footer(&footer).unwrap();
    }
}

/// The same run through the builder API, by name.
fn record_by_name(thread: &mut StreamingThread) {
    let step = MethodSpec::new("app.Worker", "step", vec![Type::Int], Type::Int);
    let total = FieldSpec::new("app.Worker", "total", Type::Long);
    let i_var = VariableSpec::new("i", Type::Int);
    let at = |line| CodeLocationSpec::access("Worker.kt", "app.Worker", "step", line);
    let (at_call, at_field, at_local) = (at(10), at(11), at(12));
    let worker = ValueSpec::object("app.Worker", 7 + thread.thread_id().get());
    for i in 0..CALLS as i32 {
        let call = CallSpec::new(&step).on(worker.clone()).with_argument(i);
        thread.enter_call(Some(&at_call), call).unwrap();
        for k in 0..2i64 {
            let value = ValueSpec::Long(i64::from(i) * 4 + k);
            thread
                .write_field(Some(&at_field), &total, worker.clone(), value)
                .unwrap();
            thread
                .read_field(Some(&at_field), &total, worker.clone(), ValueSpec::Long(0))
                .unwrap();
            thread
                .write_local(Some(&at_local), &i_var, ValueSpec::Int(0))
                .unwrap();
            thread
                .write_local(Some(&at_local), &i_var, ValueSpec::Int(0))
                .unwrap();
        }
        thread.exit_call(CallOutcome::returned(i)).unwrap();
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Ids,
    Names,
}

fn trace_path(producers: usize) -> PathBuf {
    bench_dir().join(format!("bench-{producers}.trace"))
}

/// Removes a file written by an earlier run, so the timed run does not pay
/// for truncating it.
fn remove(path: &std::path::Path) {
    let _ = std::fs::remove_file(path);
    let mut index = path.as_os_str().to_owned();
    index.push(".idx");
    let _ = std::fs::remove_file(index);
}

/// Streams `producers` threads' runs to a file; returns the data file's size.
fn stream(producers: usize, mode: Mode) -> u64 {
    stream_timed(producers, mode).0
}

/// [`stream`], also returning the CPU time the producer threads used, in
/// nanoseconds (`None` where `/proc/thread-self/schedstat` is missing).
fn stream_timed(producers: usize, mode: Mode) -> (u64, Option<u64>) {
    let path = trace_path(producers);
    let writer = StreamingWriter::create_with_options(&path, StreamingOptions::default()).unwrap();
    for object in references() {
        writer.add_reference(&object).unwrap();
    }
    let producer_ns = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..producers)
            .map(|p| {
                let mut thread = writer.new_thread(format!("producer-{p}")).unwrap();
                scope.spawn(move || {
                    let start = thread_cpu_ns();
                    match mode {
                        Mode::Ids => record_with_ids(&mut thread, p as i32 * 100_000_000),
                        Mode::Names => record_by_name(&mut thread),
                    }
                    thread.finish().unwrap();
                    Some(thread_cpu_ns()? - start?)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| worker.join().unwrap())
            .sum::<Option<u64>>()
    });
    (writer.close().unwrap().data_bytes, producer_ns)
}

/// CPU time the calling thread has used, in nanoseconds (user and system),
/// from `/proc/thread-self/schedstat`.
fn thread_cpu_ns() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    stat.split_whitespace().next()?.parse().ok()
}

/// Wall and CPU time of `runs` runs: the CPU time per tracepoint does not
/// depend on how many cores other processes leave free. Removing the last
/// run's files is not timed. Prints the process's CPU time (all threads: the
/// producers, the I/O thread and its kernel copies; `/proc/self/stat` ticks,
/// summed over the runs), the producer threads' own (median of the runs),
/// and the median run's wall-clock throughput.
fn cpu_cost(producers: usize, mode: Mode, runs: usize) {
    let tracepoints = (CALLS * PER_CALL * producers) as f64;
    let (mut cpu, mut bytes) = (0.0, 0);
    let mut producer_ns = Vec::new();
    let mut walls = Vec::new();
    for _ in 0..runs {
        remove(&trace_path(producers));
        let (start, wall) = (support::cpu_seconds(), std::time::Instant::now());
        let (written, producer) = stream_timed(producers, mode);
        walls.push(wall.elapsed().as_secs_f64());
        if let (Some(start), Some(end)) = (start, support::cpu_seconds()) {
            cpu += end - start;
        }
        producer_ns.extend(producer);
        bytes = written;
    }
    let median = |values: &mut Vec<f64>| {
        values.sort_by(f64::total_cmp);
        values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
    };
    let wall = median(&mut walls);
    let producer = median(&mut producer_ns.iter().map(|&ns| ns as f64).collect());
    let name = if mode == Mode::Ids { "ids" } else { "names" };
    let total_ns = cpu * 1e9 / (tracepoints * runs as f64);
    println!(
        "{producers} producer(s), {name}: {total_ns:.0} ns CPU per tracepoint ({:.0} MB per \
         CPU-second), producers {:.0} ns ({:.0} MB per producer CPU-second), \
         {:.0} MB/s wall, {:.1} cores busy",
        bytes as f64 * 1e3 / (total_ns * tracepoints),
        producer / tracepoints,
        bytes as f64 * 1e3 / producer,
        bytes as f64 / wall / 1e6,
        cpu / runs as f64 / wall
    );
}

fn bench(c: &mut Criterion) {
    // Sizes first, so throughput can be set per group.
    let sizes: Vec<(usize, u64)> = [1, 2, 4]
        .iter()
        .map(|&p| (p, stream(p, Mode::Ids)))
        .collect();
    let tracepoints = (CALLS * PER_CALL) as u64;
    for &(producers, bytes) in &sizes {
        println!(
            "{producers} producer(s): {bytes} data bytes, {} tracepoints, {:.1} bytes per tracepoint",
            tracepoints * producers as u64,
            bytes as f64 / (tracepoints * producers as u64) as f64
        );
    }
    for &(producers, _) in &sizes {
        cpu_cost(producers, Mode::Ids, 16 / producers);
        cpu_cost(producers, Mode::Names, 1);
    }
    let data = std::fs::read(bench_dir().join("bench-1.trace")).unwrap();

    for &(producers, bytes) in &sizes {
        let mut group = c.benchmark_group(format!("streaming/{producers}-producers"));
        group.throughput(Throughput::Bytes(bytes));
        group.sample_size(10);
        group.measurement_time(Duration::from_secs(8));
        let path = trace_path(producers);
        for (name, mode) in [("ids", Mode::Ids), ("names", Mode::Names)] {
            group.bench_function(name, |b| {
                b.iter_batched(
                    || remove(&path),
                    |()| stream(producers, mode),
                    BatchSize::PerIteration,
                )
            });
        }
        // Baseline: every producer copies its share into its own vector
        // (allocated and touched beforehand, as the writer reuses its block
        // buffers) in block-sized pieces.
        let mut outs: Vec<Vec<u8>> = (0..producers).map(|_| data.clone()).collect();
        group.bench_function("memcpy-baseline", |b| {
            b.iter(|| {
                std::thread::scope(|scope| {
                    for out in outs.iter_mut() {
                        let data = &data;
                        scope.spawn(move || {
                            out.clear();
                            for chunk in data.chunks(1 << 20) {
                                out.extend_from_slice(chunk);
                            }
                            black_box(&out);
                        });
                    }
                });
            })
        });
        // Baseline: the same bytes written at once to a file.
        let path = bench_dir().join(format!("baseline-{producers}.trace"));
        let mut whole = Vec::with_capacity(bytes as usize);
        while whole.len() < bytes as usize {
            let n = data.len().min(bytes as usize - whole.len());
            whole.extend_from_slice(&data[..n]);
        }
        group.bench_function("fs-write-baseline", |b| {
            b.iter_batched(
                || remove(&path),
                |()| std::fs::write(&path, &whole).unwrap(),
                BatchSize::PerIteration,
            )
        });
        group.finish();
    }
}

criterion_group!(benches, bench);

/// `STREAMING_PROFILE=ids` (or `names`) streams one producer's run once and
/// exits: a short, fixed workload for `perf` or callgrind (instructions per
/// tracepoint are the figure that does not depend on the machine's load).
/// `STREAMING_PROFILE=cpu` runs only the CPU-time pass of the `ids` path.
fn main() {
    match std::env::var("STREAMING_PROFILE").as_deref() {
        Ok("cpu") => {
            for producers in [1, 2, 4] {
                cpu_cost(producers, Mode::Ids, 16 / producers);
            }
        }
        Ok(mode) => {
            let mode = if mode == "names" {
                Mode::Names
            } else {
                Mode::Ids
            };
            remove(&trace_path(1));
            let bytes = stream(1, mode);
            println!("{bytes} data bytes, {} tracepoints", CALLS * PER_CALL);
        }
        Err(_) => {
            benches();
            Criterion::default().configure_from_args().final_summary();
        }
    }
}
