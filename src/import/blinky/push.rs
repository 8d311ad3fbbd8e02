//! The tracepoints of resolved executions, gathered by thread and pushed
//! into the threads' handles a batch at a time, a thread per rayon task:
//! threads are independent in the trace, so only each one's own order
//! matters, and the batch's threads share the cores. Each thread's
//! commands go in through one [`ThreadBatch`](crate::write::ThreadBatch):
//! its buffer's lock is taken once per batch, not per tracepoint.

use rayon::prelude::*;

use crate::common::{CodeLocationId, EventId, MethodId, ThreadId};
use crate::error::{Error, Result};
use crate::import::names::{Leaf, call, leaf, void_return};
use crate::write::StreamingThread;

/// Commands held before they are pushed: enough that a batch outweighs
/// handing its threads to workers, few enough to stay a few MB.
pub(super) const BATCH_COMMANDS: usize = 1 << 16;

/// What one execution writes into its thread.
#[derive(Debug, Clone, Copy)]
pub(super) enum Command {
    /// A call of this method, with this event id.
    Call(MethodId, EventId),
    /// A return from the innermost open call.
    Return,
    /// A leaf at this location, with this event id.
    Leaf(Leaf, CodeLocationId, EventId),
}

/// A thread's handle (once it has one) and its commands not pushed yet.
#[derive(Debug, Default)]
struct Slot {
    handle: Option<StreamingThread>,
    commands: Vec<Command>,
}

/// The threads' handles and the commands held for them, by thread rank.
pub(super) struct Pusher {
    slots: Vec<Slot>,
    held: usize,
    /// Commands held before they are pushed.
    batch: usize,
}

impl Pusher {
    /// A pusher for `threads` threads, none with a handle yet, pushing
    /// once `batch` commands are held.
    pub(super) fn new(threads: usize, batch: usize) -> Self {
        Pusher {
            slots: (0..threads).map(|_| Slot::default()).collect(),
            held: 0,
            batch,
        }
    }

    /// Gives thread `rank` its handle.
    pub(super) fn start(&mut self, rank: usize, handle: StreamingThread) {
        self.slots[rank].handle = Some(handle);
    }

    /// Queues `command` for thread `rank`, pushing the batch once it is
    /// full.
    #[inline]
    pub(super) fn push(&mut self, rank: usize, command: Command) -> Result<()> {
        self.slots[rank].commands.push(command);
        self.held += 1;
        if self.held >= self.batch {
            self.push_held()?;
        }
        Ok(())
    }

    /// Pushes every held command, the threads in parallel.
    fn push_held(&mut self) -> Result<()> {
        self.held = 0;
        self.slots
            .par_iter_mut()
            .enumerate()
            .try_for_each(|(rank, slot)| push_all(rank, slot))
    }

    /// Pushes every held command and gives the handles back, by rank.
    pub(super) fn finish(mut self) -> Result<Vec<Option<StreamingThread>>> {
        self.push_held()?;
        Ok(self.slots.into_iter().map(|slot| slot.handle).collect())
    }
}

/// Pushes a slot's commands into its handle, emptying it.
fn push_all(rank: usize, slot: &mut Slot) -> Result<()> {
    if slot.commands.is_empty() {
        return Ok(());
    }
    let thread = ThreadId(rank as _);
    let Some(handle) = slot.handle.as_mut() else {
        return Err(Error::internal(format!(
            "thread {rank} written before it started"
        )));
    };
    let returned = void_return();
    let mut batch = handle.batch()?;
    for command in slot.commands.drain(..) {
        match command {
            Command::Call(method, event) => batch.push_tracepoint(&call(thread, event, method))?,
            Command::Return => batch.push_footer(&returned)?,
            Command::Leaf(kind, location, event) => {
                batch.push_tracepoint(&leaf(kind, location, thread, event))?
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::names::Descriptors;
    use crate::write::{BlockOrder, StreamingOptions, StreamingWriter};

    /// The files written by pushing commands of one thread, through a
    /// batch or one push at a time, in blocks small enough that many are
    /// cut and reference objects are written again in them.
    fn write(dir: &std::path::Path, batched: bool) -> (Vec<u8>, Vec<u8>) {
        let path = dir.join(format!("batched-{batched}.trace"));
        // Round-robin: the thread writes each reference object in its
        // first block that needs it, whatever the I/O thread has written.
        let options = StreamingOptions {
            order: BlockOrder::RoundRobin,
            block_size: 512,
            flush_threshold: 64,
            ..StreamingOptions::default()
        };
        let writer = StreamingWriter::create_with_options(&path, options).unwrap();
        let mut names = Descriptors::default();
        let mut commands = Vec::new();
        for i in 0..3000 {
            let method = names
                .add_method("a.B", &format!("m{}", i % 40), None, &writer)
                .unwrap();
            let location = names.line(i % 50, &writer).unwrap();
            let event = names.next_event().unwrap();
            commands.push(Command::Call(method, event));
            let event = names.next_event().unwrap();
            commands.push(Command::Leaf(Leaf::ReadArray, location, event));
            // Calls three deep, then their returns.
            if i % 3 == 2 {
                commands.extend([Command::Return; 3]);
            }
        }
        let mut handle = writer.new_thread_with_id(ThreadId(0), "t").unwrap();
        if batched {
            let mut slot = Slot {
                handle: Some(handle),
                commands,
            };
            push_all(0, &mut slot).unwrap();
            handle = slot.handle.unwrap();
        } else {
            for command in commands {
                match command {
                    Command::Call(method, event) => handle
                        .push_tracepoint(&call(ThreadId(0), event, method))
                        .unwrap(),
                    Command::Return => handle.push_footer(&void_return()).unwrap(),
                    Command::Leaf(kind, location, event) => handle
                        .push_tracepoint(&leaf(kind, location, ThreadId(0), event))
                        .unwrap(),
                }
            }
        }
        handle.finish().unwrap();
        writer.close().unwrap();
        let index = dir.join(format!("batched-{batched}.trace.idx"));
        (std::fs::read(&path).unwrap(), std::fs::read(index).unwrap())
    }

    /// Pushing through a batch writes the same bytes as pushing each
    /// tracepoint and footer through the handle.
    #[test]
    fn a_batch_writes_what_single_pushes_write() {
        let dir = tempfile::tempdir().unwrap();
        let (data, index) = write(dir.path(), true);
        assert!(data.len() > 50 * 512, "{} bytes", data.len());
        let (single_data, single_index) = write(dir.path(), false);
        for (batched, single) in [(&data, &single_data), (&index, &single_index)] {
            let differ = batched.iter().zip(single.iter()).position(|(a, b)| a != b);
            assert!(
                differ.is_none() && batched.len() == single.len(),
                "first difference at {differ:?} of {} and {} bytes",
                batched.len(),
                single.len()
            );
        }
    }
}
