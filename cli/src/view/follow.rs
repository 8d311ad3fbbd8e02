//! The viewer's follower (`view --follow`): a thread that polls the trace
//! every [`POLL`] and refreshes the reader when the files grew
//! (`LazyTraceReader::refresh`: only what was appended is read) and builds
//! the new reader's container tables, so that no key waits for a refresh. Refreshed readers come back through a
//! channel, which the event loop drains every tick; the app then moves its
//! rows onto the new reader (`App::follow_to`).

use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::time::Duration;

use tracetree::Result;
use tracetree::read::{LazyTraceReader, RefreshReport};

/// How often the follower looks at the files.
pub const POLL: Duration = Duration::from_millis(300);

/// A refreshed reader and what its refresh did.
pub type Refresh = (Arc<LazyTraceReader>, RefreshReport);

/// A thread that refreshes a reader as its trace grows. Dropping it ends
/// the thread at its next poll.
pub struct Follower {
    done: Receiver<Result<Refresh>>,
    /// Dropped with the follower: the thread's wait then ends.
    _stop: Sender<()>,
}

impl Follower {
    /// Starts the thread on `reader` (opened as a growing view).
    pub fn new(reader: Arc<LazyTraceReader>) -> Self {
        let (answer, done) = channel();
        let (stop, stopped) = channel::<()>();
        std::thread::spawn(move || {
            let mut reader = reader;
            loop {
                match stopped.recv_timeout(POLL) {
                    Err(RecvTimeoutError::Timeout) => {}
                    _ => return,
                }
                let sent = match reader.refresh() {
                    Ok(None) => Ok(()),
                    Ok(Some((refreshed, report))) => {
                        // The tables are built here, not on the first
                        // key that needs them.
                        refreshed.build_lookups();
                        let next = Arc::new(refreshed);
                        reader = Arc::clone(&next);
                        answer.send(Ok((next, report)))
                    }
                    Err(error) => answer.send(Err(error)),
                };
                if sent.is_err() {
                    return;
                }
            }
        });
        Follower { done, _stop: stop }
    }

    /// The refreshes finished since the last call, oldest first.
    pub fn finished(&self) -> Vec<Result<Refresh>> {
        self.done.try_iter().collect()
    }
}
