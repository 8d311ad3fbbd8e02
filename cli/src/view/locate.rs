//! Finding a node to show on a thread of its own: a jump by event id or
//! to a search hit or bookmark must know the node's position among its
//! siblings at every level to load the rows around it, and counting the
//! children of a wide call before a node scans them (half a second at 38 M
//! children, seconds at 380 M). The thread finds the node, then asks for
//! each position on its way down, which leaves the calls' child indexes
//! in the reader's cache; revealing the node on the keyboard's thread then
//! takes pages from them. Meanwhile keys are answered; Esc gives up.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, TryRecvError, channel};

use tracetree::tree::Navigate;

use super::Browsed;
use tracetree::{Error, Result};

/// A node being found.
pub struct Locating<V: Browsed> {
    /// What is being found, in words (`event 7`, `hit 3 of 9`).
    pub what: String,
    /// The reader it is found in (a refresh may replace the viewer's).
    pub reader: Arc<V>,
    /// What the status line says when there is none (else "no tracepoint
    /// has WHAT").
    pub none: Option<String>,
    done: Receiver<Result<Option<V::Node>>>,
}

impl<V: Browsed> Locating<V> {
    /// Starts finding the node `find` names in `reader`.
    pub fn start(
        what: String,
        reader: Arc<V>,
        find: impl FnOnce(&V) -> Result<Option<V::Node>> + Send + 'static,
    ) -> Self {
        let (sender, done) = channel();
        let worker = Arc::clone(&reader);
        std::thread::spawn(move || {
            let found = find(&worker).and_then(|node| {
                if let Some(node) = node {
                    for step in worker.ancestors(node)?.into_iter().chain([node]) {
                        worker.position(step)?;
                    }
                }
                Ok(node)
            });
            // The viewer may have given up: nobody to tell.
            let _ = sender.send(found);
        });
        Locating {
            what,
            reader,
            none: None,
            done,
        }
    }

    /// The node found (`None`: nothing has that name), once the thread is
    /// done.
    pub fn finished(&self) -> Option<Result<Option<V::Node>>> {
        match self.done.try_recv() {
            Ok(found) => Some(found),
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Disconnected) => Some(Err(Error::Internal(format!(
                "finding {} stopped unexpectedly",
                self.what
            )))),
        }
    }
}
