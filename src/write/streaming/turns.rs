//! [`Rotation`]: the turns of [`BlockOrder::RoundRobin`], which make the
//! data file the same whatever the producers' timing.
//!
//! The threads take turns in the order they were added: in its turn a
//! thread hands over one cut block or leaves the rotation (its handle
//! finished), and the turn passes to the next thread still in it. A thread
//! that cuts a block out of turn waits (on its own condition variable, so a
//! passed turn wakes one thread, not all) holding the block it cut: memory
//! stays one buffer per thread plus the queue's. So the blocks reach the
//! queue, and the file, in an order fixed by each thread's own sequence of
//! blocks — thread 0's first, thread 1's first, …, thread 0's second, … —
//! never by which producer was faster.
//!
//! Turns end for good (everyone hands over at once, in arrival order) when
//! the writer closes or the I/O thread fails; a handle dropped without
//! [`finish`](super::StreamingThread::finish) leaves the rotation at once,
//! so a failed producer never blocks the others.
//!
//! [`BlockOrder::RoundRobin`]: super::BlockOrder::RoundRobin

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use super::{ThreadSlot, lock};

/// Whose turn it is, among the threads of a round-robin writer.
#[derive(Default)]
pub(crate) struct Rotation {
    state: Mutex<RotationState>,
}

#[derive(Default)]
struct RotationState {
    /// Every thread added, by its number ([`ThreadSlot::order`]).
    slots: Vec<Arc<ThreadSlot>>,
    /// The numbers of the threads taking turns, ascending.
    active: Vec<usize>,
    /// The index in `active` of the thread whose turn it is.
    next: usize,
    /// Turns have ended: the writer is closing or failed.
    over: bool,
}

impl RotationState {
    /// Wakes the thread whose turn it is.
    fn wake_next(&self) {
        if let Some(&order) = self.active.get(self.next) {
            self.slots[order].turn.notify_one();
        }
    }

    /// Takes thread `order` out of the rotation, the turn staying with the
    /// thread after it.
    fn remove(&mut self, order: usize) {
        if let Ok(at) = self.active.binary_search(&order) {
            self.active.remove(at);
            if at < self.next {
                self.next -= 1;
            }
            if self.next >= self.active.len() {
                self.next = 0;
            }
            self.wake_next();
        }
    }
}

fn wait<'a>(turn: &Condvar, state: MutexGuard<'a, RotationState>) -> MutexGuard<'a, RotationState> {
    turn.wait(state).unwrap_or_else(PoisonError::into_inner)
}

impl Rotation {
    /// Adds `slot` at the end of the rotation (every thread of the writer is
    /// added, in order: `slot.order` is the number of threads before it).
    pub(crate) fn add(&self, slot: Arc<ThreadSlot>) {
        let mut state = lock(&self.state);
        debug_assert_eq!(slot.order, state.slots.len());
        state.active.push(slot.order);
        state.slots.push(slot);
    }

    /// Runs `hand_over` in `slot`'s turn and passes the turn on; with
    /// `leave`, `slot` then leaves the rotation. Without turns (they ended,
    /// or `slot` left) runs it at once.
    pub(crate) fn in_turn<T>(
        &self,
        slot: &ThreadSlot,
        leave: bool,
        hand_over: impl FnOnce() -> T,
    ) -> T {
        let mut state = lock(&self.state);
        loop {
            if state.over || state.active.binary_search(&slot.order).is_err() {
                return hand_over();
            }
            if state.active[state.next] == slot.order {
                break;
            }
            state = wait(&slot.turn, state);
        }
        // Unlocked while handing over (the queue may be full, and the I/O
        // thread ends the turns when it fails): the turn stays with `slot`,
        // as no one else passes it.
        drop(state);
        let value = hand_over();
        let mut state = lock(&self.state);
        if state.over {
            return value;
        }
        if leave {
            state.remove(slot.order);
        } else {
            state.next = (state.next + 1) % state.active.len();
            state.wake_next();
        }
        value
    }

    /// Takes `slot` out of the rotation now, out of turn (a handle dropped
    /// unfinished).
    pub(crate) fn leave_now(&self, slot: &ThreadSlot) {
        lock(&self.state).remove(slot.order);
    }

    /// Ends the turns: every waiting thread hands over at once.
    pub(crate) fn end(&self) {
        let mut state = lock(&self.state);
        state.over = true;
        for slot in &state.slots {
            slot.turn.notify_all();
        }
    }
}
