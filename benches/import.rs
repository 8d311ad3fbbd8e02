//! `.flow` import, end to end, against two baselines on the same calls:
//! a raw scan of the recording's bytes, and the streaming writer taking the same calls pushed straight
//! from the generator (the writer's own cost).
//!
//! The recording is written once, in the agent's real encoding, into
//! `target/bench-traces/` by the writer below: one thread file of about
//! `TRACETREE_BENCH_SIZE` bytes (100 MB by default), a program of calls up
//! to 12 deep among 200 methods (ids ≥ 64 take two bytes), returns
//! run-length encoded as the agent writes them.
//!
//! The Blinky and TPTP groups time their import against a raw scan of
//! the same file (counting lines; walking message headers), on inputs of
//! the same program of calls written by [`blinky_source`] and
//! [`tptp_source`] (four interleaved threads, field reads, local writes
//! and line events among the calls); criterion reports bytes per second.
//! Blinky's import is also timed with one rayon worker: its speed per core.
//!
//! Run with `cargo bench --bench import`; criterion reports calls per
//! second. Max RSS of the command: `/usr/bin/time -f %M target/release/tracetree
//! import target/bench-traces/flow-<bytes> -o /tmp/x.trace --force`.

mod support;

use std::hint::black_box;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tracetree::common::{ClassId, CodeLocationId, EventId, MethodId, ThreadId};
use tracetree::import::ImportOptions;
use tracetree::lowlevel::Object;
use tracetree::model::{
    ClassDescriptor, DiffStatus, Footer, JavaStr, MethodDescriptor, Tracepoint, TracepointBody,
    TracepointHeader, TracepointType, Type, Value,
};
use tracetree::storage::TraceBytes;
use tracetree::write::StreamingWriter;

/// Methods of the generated program.
const METHODS: u64 = 200;
/// The deepest nesting.
const MAX_DEPTH: u64 = 12;

/// A deterministic call sequence: `Some(id)` enters, `None` returns.
struct Program {
    state: u64,
    depth: u64,
}

impl Program {
    fn new() -> Self {
        Program {
            state: 0x9E37_79B9_7F4A_7C15,
            depth: 0,
        }
    }

    fn next(&mut self) -> Option<u64> {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        let enter = self.depth == 0 || (self.depth < MAX_DEPTH && self.state % 100 < 52);
        if enter {
            self.depth += 1;
            Some((self.state >> 20) % METHODS)
        } else {
            self.depth -= 1;
            None
        }
    }
}

/// Writes a packed varint: `flag`, then the value's 6 low bits, then
/// LEB128 groups.
fn packed(out: &mut impl Write, flag: u8, value: u64) -> std::io::Result<()> {
    let more = if value >> 6 != 0 { 0x40 } else { 0 };
    out.write_all(&[flag | more | (value & 0x3F) as u8])?;
    let mut rest = value >> 6;
    while rest != 0 {
        let group = (rest & 0x7F) as u8;
        rest >>= 7;
        out.write_all(&[group | if rest != 0 { 0x80 } else { 0 }])?;
    }
    Ok(())
}

/// The recording's folder and its calls, written on first use.
fn recording(bytes: u64) -> (PathBuf, u64) {
    let dir = support::trace_dir().join(format!("flow-{bytes}"));
    let file = dir.join("thread-1.flow");
    let calls_file = dir.join("calls.txt");
    if let Ok(calls) = std::fs::read_to_string(&calls_file) {
        return (dir, calls.trim().parse().unwrap());
    }
    std::fs::create_dir_all(&dir).unwrap();
    let mut ids = String::new();
    for id in 0..METHODS {
        ids.push_str(&format!("bench.Flow{}#m{id}(I)V={id}\n", id % 7));
    }
    std::fs::write(dir.join("ids.properties"), ids).unwrap();
    eprintln!("writing {} ...", file.display());
    let mut out = BufWriter::new(std::fs::File::create(&file).unwrap());
    let (mut program, mut written, mut calls, mut exits) = (Program::new(), 0u64, 0u64, 0u64);
    while written < bytes || program.depth > 0 {
        match program.next() {
            Some(id) => {
                if exits > 0 {
                    packed(&mut out, 0, exits - 1).unwrap();
                    written += 1;
                    exits = 0;
                }
                packed(&mut out, 0x80, id).unwrap();
                written += 1 + u64::from(id >= 64);
                calls += 1;
            }
            None => exits += 1,
        }
    }
    packed(&mut out, 0, exits - 1).unwrap();
    out.flush().unwrap();
    std::fs::write(&calls_file, calls.to_string()).unwrap();
    (dir, calls)
}

/// The same calls as the recording, pushed straight into a streaming writer.
fn write_directly(calls: u64, path: &Path) {
    let writer = StreamingWriter::create(path).unwrap();
    let mut thread = writer.new_thread("thread-1").unwrap();
    let class = ClassDescriptor {
        id: ClassId::new(0),
        name: JavaStr::new("bench.Flow"),
    };
    writer
        .add_reference(&Object::ClassDescriptor(class))
        .unwrap();
    for id in 0..METHODS as i32 {
        let method = MethodDescriptor {
            id: MethodId::new(id),
            class: ClassId::new(0),
            name: JavaStr::new(&format!("m{id}")),
            return_type: Type::Void,
            parameter_types: vec![Type::Int],
        };
        writer
            .add_reference(&Object::MethodDescriptor(method))
            .unwrap();
    }
    let returned = Footer::MethodCall {
        result: Value::Void,
        exception: JavaStr::new(""),
    };
    let mut program = Program::new();
    let mut event = 0;
    while event < calls as i32 || program.depth > 0 {
        match program.next() {
            Some(id) => {
                let call = Tracepoint {
                    header: TracepointHeader {
                        tracepoint_type: TracepointType::MethodCall,
                        code_location: CodeLocationId::new(-1),
                        thread: ThreadId::new(0),
                        event: EventId::new(event),
                        diff_status: DiffStatus::None,
                    },
                    child_diff_statuses: Vec::new(),
                    body: TracepointBody::MethodCall {
                        method: MethodId::new(id as i32),
                        receiver: Value::Null,
                        arguments: Vec::new(),
                        flags: 0,
                    },
                };
                thread.push_tracepoint(&call).unwrap();
                event += 1;
            }
            None => thread.push_footer(&returned).unwrap(),
        }
    }
    thread.finish().unwrap();
    writer.close().unwrap();
}

fn import(c: &mut Criterion) {
    let (dir, calls) = recording(support::bench_size_or("100MB"));
    let out = support::trace_dir().join("flow-import-out.trace");
    let mut group = c.benchmark_group("flow import");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(30));
    group.throughput(Throughput::Elements(calls));
    group.bench_function("raw scan of the .flow file (baseline)", |b| {
        let bytes = TraceBytes::map(dir.join("thread-1.flow")).unwrap();
        b.iter(|| black_box(support::raw_scan(bytes.as_slice())))
    });
    group.bench_function("import (decode + write)", |b| {
        b.iter(|| {
            ImportOptions::default()
                .import_file(&dir, &out, None, &|_| {})
                .unwrap()
        })
    });
    group.bench_function("streaming writer alone", |b| {
        b.iter(|| write_directly(calls, &out))
    });
    group.finish();
}

/// A Blinky trace of about `bytes`, written on first use.
fn blinky_source(bytes: u64) -> PathBuf {
    let path = support::trace_dir().join(format!("blinky-{bytes}.log"));
    if path.is_file() {
        return path;
    }
    std::fs::create_dir_all(support::trace_dir()).unwrap();
    eprintln!("writing {} ...", path.display());
    let mut out = BufWriter::new(std::fs::File::create(&path).unwrap());
    for id in 0..METHODS {
        let base = 1000 + id * 5;
        writeln!(out, "$$method$$,{id},m{id},bench/Blinky{},1", id % 7).unwrap();
        writeln!(out, "$enter$,{base},{id},-1,0,-2,,,").unwrap();
        writeln!(out, "$exit$,{},{id},-1,9,-4,,,", base + 1).unwrap();
        writeln!(
            out,
            "$field$,{},{id},12,3,180,bench/Blinky,count,I",
            base + 2
        )
        .unwrap();
        writeln!(out, "$var$,{},{id},13,5,54,2,,", base + 3).unwrap();
        writeln!(out, "$line$,{},{id},14,7,-1,,,", base + 4).unwrap();
    }
    let mut programs: Vec<Program> = (0..4).map(|_| Program::new()).collect();
    let mut stacks = vec![Vec::new(); 4];
    let (mut written, mut n) = (0u64, 0u64);
    while written < bytes || programs.iter().any(|p| p.depth > 0) {
        let thread = (n / 64 % 4) as usize;
        n += 1;
        let (program, stack) = (&mut programs[thread], &mut stacks[thread]);
        if written >= bytes && program.depth == 0 {
            continue;
        }
        let line = match program.next() {
            Some(id) => {
                stack.push(id);
                let (base, depth) = (1000 + id * 5, stack.len());
                format!(
                    "$$$,{n},{thread},{n}7,{depth},5,{base},$enter$,(I)V\n\
                     $$$,{n},{thread},{n}8,{depth},5,{},$field$,a,b\n\
                     $$$,{n},{thread},{n}9,{depth},5,{},$var$\n\
                     $$$,{n},{thread},{n}9,{depth},5,{},$line$\n",
                    base + 2,
                    base + 3,
                    base + 4
                )
            }
            None => {
                let id = stack.pop().unwrap();
                let depth = stack.len() + 1;
                format!(
                    "$$$,{n},{thread},{n}9,{depth},5,{},$exit$\n",
                    1000 + id * 5 + 1
                )
            }
        };
        out.write_all(line.as_bytes()).unwrap();
        written += line.len() as u64;
    }
    out.flush().unwrap();
    path
}

/// Writes one little-endian TPTP message.
fn tptp_message(out: &mut Vec<u8>, id: u16, attributes: &[&[u8]]) {
    let length: usize = attributes.iter().map(|a| a.len()).sum();
    out.extend(id.to_le_bytes());
    out.extend((length as u32).to_le_bytes());
    for attribute in attributes {
        out.extend(*attribute);
    }
}

/// A TPTP binary trace of about `bytes`, written on first use.
fn tptp_source(bytes: u64) -> PathBuf {
    let path = support::trace_dir().join(format!("tptp-{bytes}.trcbin"));
    if path.is_file() {
        return path;
    }
    std::fs::create_dir_all(support::trace_dir()).unwrap();
    eprintln!("writing {} ...", path.display());
    let mut file = BufWriter::new(std::fs::File::create(&path).unwrap());
    let mut out = b"0TBF\x01\x00\x01\x01".to_vec();
    out.extend(12u32.to_le_bytes());
    let long = |v: u64| v.to_le_bytes();
    let zero = long(0);
    for class in 0..7u64 {
        let name = format!("bench/Tptp{class}\0");
        let c = long(class);
        let attributes: [&[u8]; 19] = [
            &zero,
            &zero,
            &zero,
            &[0; 4],
            b"\0",
            &zero,
            &c,
            b"A.java\0",
            b"\0",
            b"\0",
            &zero,
            &zero,
            name.as_bytes(),
            b"\0",
            &[0; 4],
            &[0; 4],
            &[0; 4],
            b"\0",
            b"\0",
        ];
        tptp_message(&mut out, 1011, &attributes);
    }
    for id in 0..METHODS {
        let name = format!("m{id}\0");
        let (c, m) = (long(id % 7), long(id));
        let attributes: [&[u8]; 15] = [
            name.as_bytes(),
            b"(I)V\0",
            &[0],
            &[0],
            &[0],
            &[0],
            b"\0",
            &zero,
            &zero,
            b"\0",
            &zero,
            &c,
            &m,
            b"\0",
            b"\0",
        ];
        tptp_message(&mut out, 1012, &attributes);
    }
    let mut programs: Vec<Program> = (0..4).map(|_| Program::new()).collect();
    let mut stacks = vec![Vec::new(); 4];
    let (mut written, mut n) = (0u64, 0u64);
    while written < bytes || programs.iter().any(|p| p.depth > 0) {
        let thread = (n / 64 % 4) as usize;
        n += 1;
        let (program, stack) = (&mut programs[thread], &mut stacks[thread]);
        if written >= bytes && program.depth == 0 {
            continue;
        }
        let t = long(thread as u64 + 1);
        let time = long(n);
        match program.next() {
            Some(id) => {
                stack.push(n as u32);
                let (m, ticket) = (long(id), (n as u32).to_le_bytes());
                let attributes: [&[u8]; 12] = [
                    &zero, &t, &time, &m, &ticket, &zero, &zero, &zero, &zero, &zero, b"\0", b"\0",
                ];
                tptp_message(&mut out, 1015, &attributes);
            }
            None => {
                let ticket = stack.pop().unwrap().to_le_bytes();
                let attributes: [&[u8]; 13] = [
                    &zero, &t, &time, &ticket, &zero, &zero, &zero, &zero, &zero, &zero, b"\0",
                    b"\0", b"\0",
                ];
                tptp_message(&mut out, 1016, &attributes);
            }
        }
        if out.len() > 1 << 20 {
            written += out.len() as u64;
            file.write_all(&out).unwrap();
            out.clear();
        }
    }
    file.write_all(&out).unwrap();
    file.flush().unwrap();
    path
}

fn import_foreign(c: &mut Criterion) {
    let size = support::bench_size_or("100MB");
    let out = support::trace_dir().join("foreign-import-out.trace");
    let blinky = blinky_source(size);
    let mut group = c.benchmark_group("blinky import");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    group.throughput(Throughput::Bytes(std::fs::metadata(&blinky).unwrap().len()));
    group.bench_function("raw scan: count lines", |b| {
        let bytes = TraceBytes::map(&blinky).unwrap();
        b.iter(|| black_box(memchr::memchr_iter(b'\n', bytes.as_slice()).count()))
    });
    group.bench_function("import (parse + write)", |b| {
        b.iter(|| {
            ImportOptions::default()
                .import_file(&blinky, &out, None, &|_| {})
                .unwrap()
        })
    });
    // Per core: the same import with one rayon worker (the writer's I/O
    // thread still runs beside it).
    group.bench_function("import, one worker", |b| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        b.iter(|| {
            pool.install(|| {
                ImportOptions::default()
                    .import_file(&blinky, &out, None, &|_| {})
                    .unwrap()
            })
        })
    });
    group.finish();
    let tptp = tptp_source(size);
    let mut group = c.benchmark_group("tptp import");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    group.throughput(Throughput::Bytes(std::fs::metadata(&tptp).unwrap().len()));
    group.bench_function("raw scan: walk message headers", |b| {
        let bytes = TraceBytes::map(&tptp).unwrap();
        b.iter(|| {
            let slice = bytes.as_slice();
            let (mut at, mut messages) = (12, 0u64);
            while let Some(header) = slice.get(at..at + 6) {
                at += 6 + u32::from_le_bytes(header[2..6].try_into().unwrap()) as usize;
                messages += 1;
            }
            black_box(messages)
        })
    });
    group.bench_function("import (decode + write)", |b| {
        b.iter(|| {
            ImportOptions::default()
                .import_file(&tptp, &out, None, &|_| {})
                .unwrap()
        })
    });
    group.finish();
}

criterion_group!(benches, import, import_foreign);
criterion_main!(benches);
