//! The tracepoints of resolved executions, gathered by thread and pushed
//! into the threads' handles a batch at a time, a thread per rayon task:
//! threads are independent in the trace, so only each one's own order
//! matters, and the batch's threads share the cores.

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
        return Err(Error::Usage(format!(
            "thread {rank} written before it started"
        )));
    };
    let returned = void_return();
    for command in slot.commands.drain(..) {
        match command {
            Command::Call(method, event) => handle.push_tracepoint(&call(thread, event, method))?,
            Command::Return => handle.push_footer(&returned)?,
            Command::Leaf(kind, location, event) => {
                handle.push_tracepoint(&leaf(kind, location, thread, event))?
            }
        }
    }
    Ok(())
}
