//! `trace/follow`: a trace opened as a growing view is refreshed as it
//! grows (by the viewer's follower, `view --follow`'s: only what was
//! appended is read), and the client is told with a `trace/grown`
//! notification carrying the new threads and root counts. Requests
//! already running finish on the old view; handles carry over. The
//! follower stops when the trace is closed or the session ends.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use super::dispatch::Session;
use super::errors::ServeError;
use super::methods::served_threads;
use super::protocol::GrownParams;
use super::traces::OpenTrace;
use crate::view::follow::{Follower, POLL};

/// Starts following `trace` (once; again is a no-op).
pub fn start(session: &Arc<Session>, trace: &Arc<OpenTrace>) -> Result<(), ServeError> {
    let method = "trace/follow";
    if !trace.growing {
        return Err(ServeError::invalid_params(
            method,
            "trace",
            format!(
                "{} was not opened as a growing view (trace/open with options.growing)",
                trace.about()
            ),
        ));
    }
    if trace.followed.swap(true, Ordering::Relaxed) {
        return Ok(());
    }
    let follower = Follower::new(trace.reader());
    let session: Weak<Session> = Arc::downgrade(session);
    let trace = Arc::clone(trace);
    std::thread::spawn(move || {
        while !trace.is_closed() {
            std::thread::sleep(POLL);
            for refreshed in follower.finished() {
                let Some(session) = session.upgrade() else {
                    return;
                };
                let grown = match refreshed {
                    Ok((reader, report)) => {
                        let served = trace.replace_reader(reader);
                        match served_threads(&served) {
                            Ok(threads) => GrownParams {
                                trace: trace.id.clone(),
                                threads,
                                reopened: report.reopened.is_some(),
                                error: None,
                            },
                            Err(error) => failed(&trace, &error),
                        }
                    }
                    Err(error) => failed(&trace, &error),
                };
                session.notify("trace/grown", grown);
            }
        }
    });
    Ok(())
}

fn failed(trace: &OpenTrace, error: &tracetree::Error) -> GrownParams {
    GrownParams {
        trace: trace.id.clone(),
        threads: Vec::new(),
        reopened: false,
        error: Some(format!("{}: {error}", trace.about())),
    }
}
