//! [`generate_file`]: a generated trace of a given size, written by the
//! [`StreamingWriter`] from one producer thread per recorded thread, the
//! same bytes for the same options whatever the threads' timing.
//!
//! - **Size.** Each thread gets an equal share of the data file (less the
//!   file header, `EOF`, the thread-name blocks and each block's framing)
//!   and records until its projected length — payload written plus the
//!   footers its open containers still need — reaches the share, less
//!   half what it writes between two checks ([`ThreadGenerator::run_until`],
//!   asked every 16 tracepoints), so threads end around it. A thread
//!   always writes its root call and the reference objects it uses (about
//!   1.5 KB), so a size below that per thread gives that much instead.
//! - **Determinism.** A thread's tracepoints depend only on the seed, the
//!   shape and its number; where it stops, only on its own length; the
//!   writer takes turns ([`BlockOrder::RoundRobin`]), so the blocks go to
//!   the file in an order fixed by the threads' own blocks, and each thread
//!   writes the reference objects it uses itself.
//! - **Memory.** Every buffer of the writer (one per thread, the queued
//!   ones, the spares) is at most twice the block size; the block size is
//!   lowered so that they all fit [`BUFFER_BUDGET`], down to
//!   [`MIN_BLOCK_SIZE`] (beyond about 32,000 threads the budget grows by
//!   twice that per thread).
//! - **Atomicity.** The trace is written under a temporary name and renamed
//!   into place whole ([`write_trace_atomically`]): a failure leaves
//!   nothing behind, and an existing trace is replaced, never rewritten.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::common::ThreadId;
use crate::error::{Error, Result};
use crate::format::{BLOCK_HEADER_LEN, FILE_HEADER_LEN, Object};
use crate::model::{JavaStr, ThreadName};
use crate::storage::write_trace_atomically;
use crate::write::{BlockOrder, StreamingOptions, StreamingSummary, StreamingWriter};

use super::shapes::{Shape, ThreadGenerator};

const BUFFER_BUDGET: usize = GenerateOptions::BUFFER_BUDGET;
const MIN_BLOCK_SIZE: usize = GenerateOptions::MIN_BLOCK_SIZE;

/// Blocks queued for the I/O thread.
const QUEUE_CAPACITY: usize = 4;

/// Progress is reported each time a thread has written this much more.
const PROGRESS_STEP: u64 = 256 << 10;

/// About half the bytes a thread writes between two checks of its length
/// (16 tracepoints of ~40 bytes): a thread stops this much before its
/// share, so that threads end around their share rather than all past it.
const STOP_MARGIN: u64 = 320;

/// What [`generate_file`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GenerateOptions {
    /// The data file's size, in bytes: reached within a few hundred bytes
    /// per thread (see [`generate_file`] for tiny sizes).
    pub size: u64,
    /// Recorded threads, one producer thread each.
    pub threads: usize,
    /// The shape of every thread's tree.
    pub shape: Shape,
    /// The seed of the pseudo-random choices.
    pub seed: u64,
    /// Payload bytes per block; `None`: 1 MiB, 16 KiB for
    /// [`Shape::Threads`]. Lowered to keep the buffers within
    /// [`BUFFER_BUDGET`](Self::BUFFER_BUDGET)
    /// ([`block_size_used`](Self::block_size_used)).
    pub block_size: Option<usize>,
}

impl GenerateOptions {
    /// Bytes all the block buffers of [`generate_file`]'s writer may take
    /// together, whatever the number of threads (while blocks of
    /// [`MIN_BLOCK_SIZE`](Self::MIN_BLOCK_SIZE) fit it).
    pub const BUFFER_BUDGET: usize = 256 << 20;

    /// The smallest block size [`BUFFER_BUDGET`](Self::BUFFER_BUDGET)
    /// lowers blocks to.
    pub const MIN_BLOCK_SIZE: usize = 4 << 10;

    /// `size` bytes of `shape` in 2 threads, seed 1, default blocks.
    pub fn new(size: u64, shape: Shape) -> Self {
        GenerateOptions {
            size,
            threads: 2,
            shape,
            seed: 1,
            block_size: None,
        }
    }

    /// The block size the trace is written with: the one asked for (or the
    /// shape's default), lowered so that [`buffer_bytes`](Self::buffer_bytes)
    /// stays within [`BUFFER_BUDGET`](Self::BUFFER_BUDGET), but not below
    /// [`MIN_BLOCK_SIZE`](Self::MIN_BLOCK_SIZE) (nor raised to it).
    pub fn block_size_used(&self) -> usize {
        let asked = self.block_size.unwrap_or(match self.shape {
            Shape::Threads => 16 << 10,
            _ => 1 << 20,
        });
        let fair = BUFFER_BUDGET / (2 * self.buffers());
        asked.min(fair.max(MIN_BLOCK_SIZE))
    }

    /// The most bytes the writer's block buffers take together: each of
    /// them (see [`StreamingOptions::queue_capacity`]) holds at most twice
    /// [`block_size_used`](Self::block_size_used).
    pub fn buffer_bytes(&self) -> usize {
        self.buffers() * 2 * self.block_size_used()
    }

    /// Buffers alive at once at most: one per thread, the queued ones, the
    /// one being written, and the spares kept for reuse.
    fn buffers(&self) -> usize {
        self.threads + 2 * QUEUE_CAPACITY + 2
    }

    /// Payload bytes each thread records: an equal share of the size, less
    /// the file's own bytes and the blocks' framing.
    fn thread_share(&self, block_size: usize) -> u64 {
        let name_blocks: u64 = (0..self.threads)
            .map(|t| thread_name_len(t) + BLOCK_HEADER_LEN + 1)
            .sum();
        let fixed = FILE_HEADER_LEN + 1 + name_blocks;
        let share = self.size.saturating_sub(fixed) / self.threads as u64;
        let block = block_size as u64;
        // Each block of `block` payload bytes takes its header and end too.
        (share as u128 * block as u128 / (block + BLOCK_HEADER_LEN + 1) as u128) as u64
    }
}

/// The name of thread `t`.
fn thread_name(t: usize) -> String {
    format!("worker-{t}")
}

/// The bytes of thread `t`'s `THREAD_NAME` object.
fn thread_name_len(t: usize) -> u64 {
    let name = thread_name(t);
    let object = Object::ThreadName(ThreadName {
        thread: ThreadId(t as i32),
        name: JavaStr::from_validated(name.as_bytes()),
    });
    let mut bytes = Vec::new();
    // Encoding a short ASCII name into a vector cannot fail.
    let _ = object.encode(&mut bytes);
    bytes.len() as u64
}

/// Generates a trace of about `options.size` bytes at `path` (index at
/// `path.idx`) with the [`StreamingWriter`], one producer thread per
/// recorded thread (named `worker-N`); `progress` is told the bytes written
/// so far now and then. The same options give the same bytes, and the data
/// file is within a few hundred bytes per thread of `options.size` — or,
/// for a size below about 1.5 KB per thread, that minimum (see the module
/// documentation). An existing trace at `path` is replaced.
pub fn generate_file(
    path: &Path,
    options: &GenerateOptions,
    progress: impl Fn(u64) + Sync,
) -> Result<StreamingSummary> {
    if options.threads == 0 {
        return Err(Error::invalid("threads", "at least 1 thread is needed"));
    }
    if options.threads > i32::MAX as usize {
        return Err(Error::limit("threads", options.threads, i32::MAX));
    }
    if options.block_size == Some(0) {
        return Err(Error::invalid("block size", "0 bytes"));
    }
    let block_size = options.block_size_used();
    let streaming = StreamingOptions {
        block_size,
        queue_capacity: QUEUE_CAPACITY,
        order: BlockOrder::RoundRobin,
        ..StreamingOptions::default()
    };
    let share = options.thread_share(block_size);
    write_trace_atomically(path, |temp| {
        let writer = StreamingWriter::create_with_options(temp, streaming)?;
        // Every thread is added before any records: the turns go round all.
        let handles = (0..options.threads)
            .map(|t| writer.new_thread(thread_name(t)))
            .collect::<Result<Vec<_>>>()?;
        let written = AtomicU64::new(0);
        let failed = AtomicBool::new(false);
        let threads = options.threads as u64;
        let outcome = std::thread::scope(|scope| -> Result<()> {
            let mut producers = Vec::with_capacity(options.threads);
            for (t, mut handle) in handles.into_iter().enumerate() {
                let (written, failed, progress) = (&written, &failed, &progress);
                let producer = std::thread::Builder::new()
                    .name(thread_name(t))
                    // The generator does not recurse.
                    .stack_size(512 << 10)
                    .spawn_scoped(scope, move || -> Result<()> {
                        let mut reported = 0;
                        let stop = |length: u64| {
                            if length >= reported + PROGRESS_STEP {
                                let total = written.fetch_add(length - reported, Ordering::Relaxed);
                                progress(total + length - reported);
                                reported = length;
                            }
                            length + STOP_MARGIN >= share || failed.load(Ordering::Relaxed)
                        };
                        let mut generator =
                            ThreadGenerator::new(options.shape, options.seed, t as u64, threads);
                        let result = generator
                            .run_until(&mut handle, stop)
                            .and_then(|()| handle.finish());
                        if result.is_err() {
                            failed.store(true, Ordering::Relaxed);
                        }
                        result
                    })
                    .map_err(|error| {
                        failed.store(true, Ordering::Relaxed);
                        Error::from(error)
                    })?;
                producers.push(producer);
            }
            let mut first_error = None;
            for producer in producers {
                let result = producer
                    .join()
                    .unwrap_or_else(|_| Err(Error::internal("a producer thread panicked")));
                if let Err(error) = result {
                    first_error.get_or_insert(error);
                }
            }
            first_error.map_or(Ok(()), Err)
        });
        outcome?;
        let summary = writer.close()?;
        progress(summary.data_bytes);
        Ok(summary)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::TracepointType;
    use crate::read::EagerTrace;
    use crate::storage::TraceBytes;

    fn generate(dir: &Path, name: &str, options: &GenerateOptions) -> (Vec<u8>, Vec<u8>) {
        let path = dir.join(name);
        let summary = generate_file(&path, options, |_| {}).unwrap();
        let data = std::fs::read(&path).unwrap();
        assert_eq!(summary.data_bytes, data.len() as u64);
        let mut index = path.into_os_string();
        index.push(".idx");
        (data, std::fs::read(index).unwrap())
    }

    /// Several threads and small blocks, so that the threads' blocks
    /// interleave: the same options give the same bytes, another seed
    /// others.
    #[test]
    fn the_same_options_give_the_same_bytes() {
        let dir = tempfile::tempdir().unwrap();
        for shape in [Shape::Mixed, Shape::Deep] {
            let options = GenerateOptions {
                threads: 4,
                seed: 7,
                block_size: Some(16 << 10),
                ..GenerateOptions::new(2 << 20, shape)
            };
            let first = generate(dir.path(), "a.trace", &options);
            for _ in 0..2 {
                assert!(
                    generate(dir.path(), "b.trace", &options) == first,
                    "{shape}"
                );
            }
            let other = GenerateOptions { seed: 8, ..options };
            assert!(
                generate(dir.path(), "c.trace", &other).0 != first.0,
                "{shape}"
            );
        }
    }

    #[test]
    fn the_size_is_within_a_few_percent() {
        let dir = tempfile::tempdir().unwrap();
        let cases = [
            (1 << 20, Shape::Mixed, 2, None),
            (3 << 20, Shape::Mixed, 5, Some(64 << 10)),
            (2 << 20, Shape::Wide, 3, None),
            (4 << 20, Shape::Deep, 1, Some(64 << 10)),
            (1 << 20, Shape::Threads, 16, None),
        ];
        for (size, shape, threads, block_size) in cases {
            let options = GenerateOptions {
                threads,
                block_size,
                ..GenerateOptions::new(size, shape)
            };
            let (data, _) = generate(dir.path(), "t.trace", &options);
            let off = (data.len() as f64 / size as f64 - 1.0).abs();
            assert!(
                off < 0.02,
                "{shape} {size} in {threads}: {} bytes",
                data.len()
            );
        }
    }

    /// A recorder makes a loop's tracepoint at its first iteration.
    #[test]
    fn every_loop_has_an_iteration() {
        let dir = tempfile::tempdir().unwrap();
        let options = GenerateOptions::new(2 << 20, Shape::Mixed);
        let (data, _) = generate(dir.path(), "t.trace", &options);
        let trace = EagerTrace::load(TraceBytes::from_vec(data)).unwrap();
        let loops: Vec<_> = trace
            .nodes()
            .filter(|node| node.tracepoint().tracepoint_type() == TracepointType::Loop)
            .collect();
        assert!(loops.len() > 1000, "{} loops", loops.len());
        for node in loops {
            let iterations = match node.footer() {
                Some(crate::model::Footer::Loop { iterations }) => iterations,
                ref other => panic!("a loop's footer: {other:?}"),
            };
            assert!(iterations >= 1);
            assert_eq!(node.children().len(), iterations as usize);
        }
    }

    #[test]
    fn the_buffers_fit_the_budget_whatever_the_thread_count() {
        let options = |threads, block_size| GenerateOptions {
            threads,
            block_size,
            ..GenerateOptions::new(1 << 30, Shape::Mixed)
        };
        assert_eq!(options(2, None).block_size_used(), 1 << 20);
        assert_eq!(options(2, Some(4096)).block_size_used(), 4096);
        assert_eq!(options(2, Some(100)).block_size_used(), 100);
        for threads in [1, 2, 64, 1_000, 10_000, 30_000] {
            for block_size in [None, Some(1 << 20), Some(64 << 20)] {
                let options = options(threads, block_size);
                assert!(options.buffer_bytes() <= BUFFER_BUDGET, "{threads} threads");
                assert!(options.block_size_used() >= MIN_BLOCK_SIZE);
            }
        }
        // Past the budget, blocks stay at their minimum.
        let many = options(100_000, None);
        assert_eq!(many.block_size_used(), MIN_BLOCK_SIZE);
    }

    /// A failed generation leaves nothing, and an existing trace whole.
    #[test]
    fn a_failure_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.trace");
        let zero = GenerateOptions {
            block_size: Some(0),
            ..GenerateOptions::new(1 << 20, Shape::Mixed)
        };
        assert!(generate_file(&path, &zero, |_| {}).is_err());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);

        let options = GenerateOptions::new(1 << 20, Shape::Mixed);
        let (data, index) = generate(dir.path(), "t.trace", &options);
        assert!(generate_file(&path, &zero, |_| {}).is_err());
        assert_eq!(std::fs::read(&path).unwrap(), data);
        assert_eq!(
            std::fs::read(dir.path().join("t.trace.idx")).unwrap(),
            index
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);

        // A failure once the trace is written: its index cannot be renamed
        // over a folder.
        let other = dir.path().join("u.trace");
        std::fs::create_dir_all(dir.path().join("u.trace.idx/x")).unwrap();
        assert!(generate_file(&other, &options, |_| {}).is_err());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3);
    }
}
