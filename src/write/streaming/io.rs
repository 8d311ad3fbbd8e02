//! The I/O thread: takes cut blocks from the bounded queue in the order
//! producers handed them over, writes each block to the data file and its
//! cells to the index file (`BLOCK_START` cell first, reference cells made
//! physical), then records the block's reference objects as on disk. At the
//! end it writes `EOF` and the index footer.
//!
//! Each block goes out in two writes, data first, straight to the files (no
//! user-space buffer), so a killed process leaves every block the I/O thread
//! had written, and an index that never names data not yet written.

use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, PoisonError};

use crate::common::{LogicalOffset, PhysicalOffset, ThreadId};
use crate::error::Error;
use crate::format::index::encode_index_footer;
use crate::format::{BLOCK_HEADER_LEN, FILE_HEADER_LEN, IndexCell, ObjectKind};
use crate::write::streaming::Shared;
use crate::write::streaming::block::BlockBuffers;

/// A cut block on its way to the files.
#[derive(Debug)]
pub(crate) struct BlockJob {
    pub(crate) thread: ThreadId,
    /// The thread's logical offset of the block's first payload byte.
    pub(crate) logical_start: LogicalOffset,
    /// The whole block, `BLOCK_START` to `BLOCK_END`, and its cells, the
    /// block's own still to be filled in, reference cells holding their
    /// offset in the payload.
    pub(crate) block: BlockBuffers,
}

/// Work for the I/O thread.
#[derive(Debug)]
pub(crate) enum Job {
    /// Write a block.
    Block(BlockJob),
    /// Answer once every earlier job is done.
    Sync(Sender<()>),
    /// Write `EOF` and the index footer, and stop.
    Finish,
    /// Stop without ending the trace.
    Stop,
}

/// A file (or stream) the I/O thread writes.
pub(crate) struct Target {
    pub(crate) out: Box<dyn Write + Send>,
    /// Its path, for errors; `None` for a stream.
    pub(crate) path: Option<PathBuf>,
}

impl Target {
    fn write_all(&mut self, bytes: &[u8]) -> Result<(), Failure> {
        self.out
            .write_all(bytes)
            .map_err(|error| Failure::new(&self.path, &error))
    }

    fn flush(&mut self) -> Result<(), Failure> {
        self.out
            .flush()
            .map_err(|error| Failure::new(&self.path, &error))
    }
}

/// The first I/O error, kept so every later call can report it.
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    path: Option<PathBuf>,
    kind: io::ErrorKind,
    message: String,
}

impl Failure {
    pub(crate) fn new(path: &Option<PathBuf>, error: &io::Error) -> Self {
        Failure {
            path: path.clone(),
            kind: error.kind(),
            message: error.to_string(),
        }
    }

    /// The error, as [`Error::Io`] (with no path on a stream).
    pub(crate) fn to_error(&self) -> Error {
        let error = io::Error::new(self.kind, self.message.clone());
        match &self.path {
            Some(path) => Error::io(path, error),
            None => Error::from(error),
        }
    }
}

/// What the I/O thread wrote.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Written {
    pub(crate) blocks: u64,
    pub(crate) data_bytes: u64,
    pub(crate) index_bytes: u64,
}

/// The I/O thread's state.
pub(crate) struct Output {
    pub(crate) data: Target,
    pub(crate) index: Target,
    pub(crate) written: Written,
}

impl Output {
    /// Writes both file headers; `data` and `index` are at their start.
    pub(crate) fn start(mut data: Target, mut index: Target) -> Result<Self, Failure> {
        data.write_all(&crate::format::file_header(crate::format::DATA_MAGIC))?;
        index.write_all(&crate::format::file_header(crate::format::INDEX_MAGIC))?;
        Ok(Output {
            data,
            index,
            written: Written {
                blocks: 0,
                data_bytes: FILE_HEADER_LEN,
                index_bytes: FILE_HEADER_LEN,
            },
        })
    }

    /// Runs until [`Job::Finish`] or [`Job::Stop`]; after a failure, keeps
    /// taking jobs (so producers never wait forever) and drops them.
    pub(crate) fn run(mut self, jobs: Receiver<Job>, shared: Arc<Shared>) -> Written {
        for job in jobs {
            match job {
                Job::Block(mut job) => {
                    if !shared.failed() {
                        let outcome = self.block(&mut job, &shared);
                        if let Err(failure) = outcome {
                            shared.fail(failure);
                        }
                    }
                    shared.recycle(job.block);
                }
                Job::Sync(done) => {
                    let _ = done.send(());
                }
                Job::Finish => {
                    if !shared.failed()
                        && let Err(failure) = self.finish()
                    {
                        shared.fail(failure);
                    }
                    break;
                }
                Job::Stop => {
                    if let Err(failure) = self.data.flush().and_then(|()| self.index.flush()) {
                        shared.fail(failure);
                    }
                    break;
                }
            }
        }
        self.written
    }

    fn block(&mut self, job: &mut BlockJob, shared: &Shared) -> Result<(), Failure> {
        let block = &mut job.block;
        let start = PhysicalOffset(self.written.data_bytes);
        let payload = start + BLOCK_HEADER_LEN;
        let end = start + (block.len as u64 - 1);
        self.data.write_all(block.block())?;
        self.written.data_bytes = end.0 + 1;
        self.written.blocks += 1;

        // The reference writer's reference cells end at logical offset −1,
        // shifted as their start is.
        let shift = payload.0 as i64 - job.logical_start.0 as i64;
        let own = IndexCell::Block {
            thread: job.thread,
            start,
            end,
        };
        let cells = block.cells.place(own, payload, shift - 1);
        self.index.write_all(cells)?;
        self.written.index_bytes += cells.len() as u64;

        for reference in block.cells.references() {
            shared.on_disk.insert(reference.kind, reference.id);
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), Failure> {
        self.data.write_all(&[ObjectKind::Eof as u8])?;
        self.written.data_bytes += 1;
        let mut footer = Vec::new();
        let _ = encode_index_footer(&mut footer, -1, -1);
        self.index.write_all(&footer)?;
        self.written.index_bytes += footer.len() as u64;
        self.data.flush()?;
        self.index.flush()
    }
}

impl Shared {
    /// Whether the I/O thread has failed.
    pub(crate) fn failed(&self) -> bool {
        self.failed.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Records `failure` unless an earlier one is recorded.
    pub(crate) fn fail(&self, failure: Failure) {
        let mut slot = self.failure.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(failure);
        }
        self.failed
            .store(true, std::sync::atomic::Ordering::Release);
        self.rotation.end();
    }

    /// The recorded failure, as an error.
    pub(crate) fn failure(&self) -> Option<Error> {
        self.failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(Failure::to_error)
    }
}
