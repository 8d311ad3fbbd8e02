//! The viewer's counting thread: counts the children of the wide calls on
//! screen (one scan of each call's content, a fraction of a second for
//! tens of millions of children) so that no key waits for it.
//!
//! Nodes go in through a channel, in the order they were shown; counts
//! come back through another, which the event loop drains every tick. A
//! count the reader already cached costs nothing, and the reader keeps the
//! scan's page index, so paging through the call afterwards is quick.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, channel};

use super::Browsed;
use tracetree::Result;

/// A thread that counts nodes' children, one node at a time. Dropping it
/// ends the thread once the node in hand is counted (its answer has
/// nowhere to go).
pub struct Counter<V: Browsed> {
    send: Sender<V::Node>,
    done: Receiver<(V::Node, Result<usize>)>,
}

impl<V: Browsed> Counter<V> {
    /// Starts the thread on `reader`.
    pub fn new(reader: Arc<V>) -> Self {
        let (send, todo) = channel::<V::Node>();
        let (answer, done) = channel();
        std::thread::spawn(move || {
            for node in todo {
                if answer.send((node, reader.child_count(node))).is_err() {
                    return;
                }
            }
        });
        Counter { send, done }
    }

    /// Asks for the children of `node` to be counted.
    pub fn count(&self, node: V::Node) {
        // The thread ends only when this side is dropped.
        let _ = self.send.send(node);
    }

    /// The counts finished since the last call.
    pub fn finished(&self) -> Vec<(V::Node, Result<usize>)> {
        self.done.try_iter().collect()
    }
}
