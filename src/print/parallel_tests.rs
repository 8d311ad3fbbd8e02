//! The parallel print and dump write the same bytes as one sequential walk,
//! whatever the number of workers and buffers, on the bundled traces and on
//! generated ones of every shape, read lazily and eagerly; the chunks in
//! flight never exceed the cap; a failing output ends the run with its
//! error.

use std::io::{self, Write};
use std::path::Path;

use std::path::PathBuf;

use crate::common::ThreadId;
use crate::generate::{GenerateOptions, Shape, generate_file};
use crate::print::PrintOptions;
use crate::print::jsonl::write_jsonl_with;
use crate::print::ordered::Parallelism;
use crate::print::text::print_trace_with;
use crate::read::{EagerTrace, LazyTraceReader, Visit, VisitDetail};
use crate::storage::TraceBytes;
use crate::tree::TraceTree;

/// A bundled trace of `testdata/`.
fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(name)
}

/// A trace of `shape` and about `size` bytes generated into `dir`.
fn generated(
    dir: &Path,
    shape: Shape,
    threads: usize,
    size: u64,
    block_size: Option<usize>,
) -> PathBuf {
    let path = dir.join(format!("{shape}.trace"));
    let options = GenerateOptions {
        threads,
        block_size,
        ..GenerateOptions::new(size, shape)
    };
    generate_file(&path, &options, |_| {}).unwrap();
    path
}

const SEQUENTIAL: Parallelism = Parallelism {
    workers: 1,
    buffers: 1,
};

/// Worker and buffer counts that exercise waiting: fewer buffers than
/// workers, as many, and many more.
fn parallel_settings() -> [Parallelism; 3] {
    [
        Parallelism {
            workers: 2,
            buffers: 2,
        },
        Parallelism {
            workers: 3,
            buffers: 3,
        },
        Parallelism {
            workers: 4,
            buffers: 32,
        },
    ]
}

fn print_options<T: TraceTree>(trace: &T) -> Vec<PrintOptions> {
    let first = trace.thread_ids()[0];
    vec![
        PrintOptions::default(),
        PrintOptions {
            verbose: true,
            ..PrintOptions::default()
        },
        PrintOptions {
            max_depth: Some(2),
            ..PrintOptions::default()
        },
        PrintOptions {
            threads: Some(vec![first]),
            max_depth: Some(7),
            ..PrintOptions::default()
        },
    ]
}

fn assert_same_output<T: TraceTree>(name: &str, trace: &T) {
    for options in print_options(trace) {
        let mut expected = Vec::new();
        print_trace_with(trace, &options, &SEQUENTIAL, &mut expected).unwrap();
        assert!(!expected.is_empty(), "{name}: nothing printed");
        for parallelism in parallel_settings() {
            let mut ours = Vec::new();
            let stats = print_trace_with(trace, &options, &parallelism, &mut ours).unwrap();
            assert!(
                ours == expected,
                "{name}: print {options:?} on {parallelism:?} differs"
            );
            assert!(stats.peak_in_flight <= parallelism.buffers.max(2));
        }
    }
    let first: Vec<ThreadId> = trace.thread_ids().into_iter().take(1).collect();
    for threads in [None, Some(first.as_slice())] {
        let mut expected = Vec::new();
        write_jsonl_with(trace, threads, &SEQUENTIAL, &mut expected).unwrap();
        for parallelism in parallel_settings() {
            let mut ours = Vec::new();
            let stats = write_jsonl_with(trace, threads, &parallelism, &mut ours).unwrap();
            assert!(
                ours == expected,
                "{name}: dump of {threads:?} on {parallelism:?} differs"
            );
            assert!(stats.peak_in_flight <= parallelism.buffers.max(2));
        }
    }
}

fn check_file(name: &str, path: &Path) {
    let lazy = LazyTraceReader::open(path).unwrap();
    assert_same_output(name, &lazy);
    let eager = EagerTrace::load(TraceBytes::from_vec(std::fs::read(path).unwrap())).unwrap();
    assert_same_output(name, &eager);
}

#[test]
fn bundled_traces_print_the_same_in_parallel() {
    for name in ["all-types", "multi-thread"] {
        check_file(name, &testdata(&format!("{name}.trace")));
    }
}

#[test]
fn generated_traces_of_every_shape_print_the_same_in_parallel() {
    let dir = tempfile::tempdir().unwrap();
    for (shape, size) in [
        (Shape::Mixed, 3 << 20),
        (Shape::Wide, 3 << 20),
        (Shape::Threads, 2 << 20),
        (Shape::Deep, 1 << 20),
    ] {
        let path = generated(dir.path(), shape, 2, size, Some(64 << 10));
        check_file(&shape.to_string(), &path);
    }
}

/// Accepts `room` bytes, then fails.
struct FailingOutput {
    room: usize,
}

impl Write for FailingOutput {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        if bytes.len() > self.room {
            return Err(io::Error::other("the disk is full"));
        }
        self.room -= bytes.len();
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_failing_output_ends_a_parallel_print_with_its_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = generated(dir.path(), Shape::Wide, 2, 4 << 20, Some(64 << 10));
    let lazy = LazyTraceReader::open(&path).unwrap();
    for parallelism in parallel_settings() {
        let mut out = FailingOutput { room: 100_000 };
        let error = print_trace_with(&lazy, &PrintOptions::default(), &parallelism, &mut out)
            .unwrap_err()
            .to_string();
        assert!(error.contains("the disk is full"), "{error}");
        let mut out = FailingOutput { room: 100_000 };
        let error = write_jsonl_with(&lazy, None, &parallelism, &mut out)
            .unwrap_err()
            .to_string();
        assert!(error.contains("the disk is full"), "{error}");
    }
}

/// The `children` of each record of a dump, in order.
fn dumped_child_counts(dump: &[u8]) -> Vec<u64> {
    dump.split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| {
            let record: serde_json::Value = serde_json::from_slice(line).unwrap();
            record["children"].as_u64().unwrap()
        })
        .collect()
}

/// The dump counts a record's children behind the walk, by depth, and
/// counts ahead the calls whose subtrees are too long to hold back; either
/// way each count must be the tree's own.
#[test]
fn dumped_child_counts_are_the_trees_own() {
    let dir = tempfile::tempdir().unwrap();
    for (shape, size) in [(Shape::Mixed, 3 << 20), (Shape::Deep, 2 << 20)] {
        let path = generated(dir.path(), shape, 2, size, Some(64 << 10));
        let eager = EagerTrace::load(TraceBytes::from_vec(std::fs::read(&path).unwrap())).unwrap();
        let mut expected = Vec::new();
        for thread in eager.thread_ids() {
            let roots = eager.roots(thread).unwrap();
            eager
                .walk_visit(&roots, None, VisitDetail::with_child_counts(), |step| {
                    if let Visit::Node { node, .. } = step {
                        expected.push(eager.child_count(node).unwrap() as u64);
                    }
                    Ok(())
                })
                .unwrap();
        }
        let lazy = LazyTraceReader::open(&path).unwrap();
        for parallelism in [SEQUENTIAL, parallel_settings()[0].clone()] {
            let mut dump = Vec::new();
            write_jsonl_with(&lazy, None, &parallelism, &mut dump).unwrap();
            // Long subtrees, counted ahead, are there (the text is longer
            // than what a worker holds back).
            assert!(dump.len() > 2 << 20, "{shape}: {} bytes", dump.len());
            assert_eq!(
                dumped_child_counts(&dump),
                expected,
                "{shape} on {parallelism:?}"
            );
        }
    }
}

/// Calls whose content holds several runs' worth of bytes are cut into
/// runs of siblings through the container table instead of by counting
/// their children: the print is the same.
#[test]
fn calls_cut_into_runs_of_siblings_print_the_same() {
    let dir = tempfile::tempdir().unwrap();
    for shape in [Shape::Mixed, Shape::Threads] {
        let path = generated(dir.path(), shape, 2, 12 << 20, None);
        let lazy = LazyTraceReader::open(&path).unwrap();
        let root = lazy.roots(lazy.thread_ids()[0]).unwrap()[0];
        assert!(
            lazy.sibling_cuts(root, 1 << 20).unwrap().is_some(),
            "{shape}: the root is not cut into runs"
        );
        assert_same_output(&shape.to_string(), &lazy);
    }
}
