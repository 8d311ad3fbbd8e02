//! The session: the dispatcher reads each message, answers the protocol's
//! own (`initialize`, `shutdown`, `exit`, `$/cancelRequest`) at once and
//! hands every trace request to a worker. Two pools of workers serve
//! them: quick requests (a page, a node, its ancestors) and long ones (an
//! open, a search, a find), so that a long search never holds up a page
//! of children. Each request in flight has a cancel flag, which
//! `$/cancelRequest` sets and a search's walk reads at every tracepoint;
//! a cancelled request is answered `RequestCancelled` (-32800).
//!
//! Over stdio, the thread that reads the input dispatches each message
//! itself, and a worker writes its answer (and its notifications) to the
//! output itself: a page meets one hand-off, from the reader to a worker.
//! What the dispatcher answers goes through a writer thread, so that the
//! reader never waits on a client that is not reading.
//!
//! Bounded: at most `maxRequestsInFlight` requests are received and not
//! yet answered (past it a request is refused with `LIMIT_REACHED` at
//! once), the writer's queue holds a fixed multiple of that, and each
//! request holds its parameters (at most `maxMessageBytes`) and one page.

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender, bounded, unbounded};
use lsp_server::{Message, RequestId};
use serde_json::Value;

use super::errors::{ServeError, code};
use super::methods::{self, Lane};
use super::protocol::{CancelParams, Limits};
use super::traces::Traces;
use super::transport::{self, Incoming, Outgoing, Output, Reply};

/// Workers for quick requests.
const QUICK_WORKERS: usize = 4;
/// Workers for long requests.
const LONG_WORKERS: usize = 2;
/// How long the end of a session waits for requests still running
/// (cancelled) before the process ends.
const END_WAIT: Duration = Duration::from_secs(2);

/// The limits this server keeps.
pub const LIMITS: Limits = Limits {
    max_requests_in_flight: 4096,
    max_open_traces: 32,
    max_message_bytes: 1 << 20,
    max_page_count: 10_000,
    max_search_hits: 100_000,
    max_flame_frames: 100_000,
};

/// What `trace/open` uses when its options do not say: the command line's
/// flags.
#[derive(Debug, Clone, Default)]
pub struct OpenDefaults {
    /// `--cache-dir`.
    pub cache_dir: Option<PathBuf>,
    /// `--no-cache`.
    pub no_cache: bool,
    /// `--no-mmap`.
    pub no_mmap: bool,
    /// `--strict`.
    pub strict: bool,
}

/// What every request of the session shares.
pub struct Session {
    /// The open traces.
    pub traces: Traces,
    /// `trace/open`'s defaults.
    pub defaults: OpenDefaults,
    /// To the writer: what the dispatcher answers (and, without `direct`,
    /// everything).
    out: Sender<Outgoing>,
    /// Where workers write their answers and notifications themselves.
    direct: Option<Arc<Output>>,
    /// The cancel flag of each request in flight.
    in_flight: Mutex<HashMap<RequestId, Arc<AtomicBool>>>,
}

impl Session {
    /// Sends a notification (a failure means the client is gone).
    pub fn notify(&self, method: &'static str, params: impl serde::Serialize) {
        if let Ok(params) = Reply::of(&params) {
            self.send(Outgoing::Notification(method, params));
        }
    }

    /// A worker's answer (or notification): written by this thread when
    /// the transport allows, else queued for the writer.
    fn send(&self, outgoing: Outgoing) {
        match &self.direct {
            Some(output) => {
                output.send(&outgoing);
            }
            None => {
                let _ = self.out.send(outgoing);
            }
        }
    }

    fn respond(&self, id: RequestId, result: Result<Reply, ServeError>) {
        self.send(Outgoing::Response(id, result));
    }

    /// The dispatcher's own answer, queued for the writer: the reader
    /// never waits on the output.
    fn answer(&self, id: RequestId, result: Result<Reply, ServeError>) {
        let _ = self.out.send(Outgoing::Response(id, result));
    }

    fn in_flight(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, Arc<AtomicBool>>> {
        self.in_flight.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One request being served.
pub struct Request {
    /// Its method.
    pub method: String,
    /// Set when the client cancels it or the session ends.
    pub cancel: Arc<AtomicBool>,
}

impl Request {
    /// Whether it was cancelled.
    pub fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }
}

/// Serves one session on standard input and output; returns whether it
/// ended as LSP wants (`shutdown`, then `exit`, or the input closed).
pub fn serve(defaults: OpenDefaults) -> bool {
    let output = match Output::stdout() {
        Ok(output) => Arc::new(output),
        Err(error) => {
            eprintln!("tracetree: error: standard output cannot be written: {error}");
            return false;
        }
    };
    let (to_writer, from_dispatcher) = bounded(4 * LIMITS.max_requests_in_flight);
    let writer = transport::writer(from_dispatcher, Arc::clone(&output));
    let core = Core::start(defaults, to_writer, Some(output));
    let mut dispatcher = core.dispatcher(false);
    let clean = transport::read_stdin(LIMITS.max_message_bytes, |incoming| {
        dispatcher.handle(incoming)
    });
    drop(dispatcher);
    core.end();
    let _ = writer.join();
    tracetree::storage::remove_temporaries();
    clean
}

/// A session and its worker pools, whatever the transport: the transport
/// hands messages to [`Core::dispatcher`]'s loop and writes what comes
/// out of the channel given to [`Core::start`].
pub struct Core {
    /// The session the workers serve.
    pub session: Arc<Session>,
    quick: Sender<Job>,
    long: Sender<Job>,
    workers_done: Receiver<()>,
}

impl Core {
    /// Starts the workers of a session whose messages go to `out`, or
    /// those of workers to `direct` when given.
    pub fn start(
        defaults: OpenDefaults,
        out: Sender<Outgoing>,
        direct: Option<Arc<Output>>,
    ) -> Core {
        let session = Arc::new(Session {
            traces: Traces::new(LIMITS.max_open_traces),
            defaults,
            out,
            direct,
            in_flight: Mutex::new(HashMap::new()),
        });
        let (quick, quick_jobs) = unbounded::<Job>();
        let (long, long_jobs) = unbounded::<Job>();
        let (ended, workers_done) = unbounded::<()>();
        for (jobs, count) in [(quick_jobs, QUICK_WORKERS), (long_jobs, LONG_WORKERS)] {
            for _ in 0..count {
                let jobs = jobs.clone();
                let ended = ended.clone();
                let _ = std::thread::Builder::new()
                    .name("serve-worker".into())
                    .stack_size(crate::WORKER_STACK)
                    .spawn(move || {
                        for job in jobs {
                            job();
                        }
                        let _ = ended.send(());
                    });
            }
        }
        Core {
            session,
            quick,
            long,
            workers_done,
        }
    }

    /// The loop that reads a transport's messages; `initialized` when the
    /// transport answers `initialize` itself.
    pub fn dispatcher(&self, initialized: bool) -> Dispatcher {
        Dispatcher {
            session: Arc::clone(&self.session),
            quick: self.quick.clone(),
            long: self.long.clone(),
            initialized,
            shut_down: false,
        }
    }

    /// The end: every request still in flight is cancelled, the workers
    /// finish (or are left to the process's end), the traces close.
    pub fn end(self) {
        let Core {
            session,
            quick,
            long,
            workers_done,
        } = self;
        drop((quick, long));
        for flag in session.in_flight().values() {
            flag.store(true, Ordering::Relaxed);
        }
        let deadline = std::time::Instant::now() + END_WAIT;
        while workers_done.recv_deadline(deadline).is_ok() {}
        session.traces.close_all();
    }
}

type Job = Box<dyn FnOnce() + Send>;

/// Reads one transport's messages and hands each request to a worker.
pub struct Dispatcher {
    session: Arc<Session>,
    quick: Sender<Job>,
    long: Sender<Job>,
    initialized: bool,
    shut_down: bool,
}

impl Dispatcher {
    /// Reads messages until `exit` or the end of the input.
    pub fn run(mut self, incoming: &Receiver<Incoming>) -> bool {
        loop {
            let Ok(message) = incoming.recv() else {
                return true;
            };
            if let Some(clean) = self.handle(message) {
                return clean;
            }
        }
    }

    /// Handles one message; `Some` at the end of the session (`exit` or
    /// the end of the input), saying whether it ended cleanly.
    pub fn handle(&mut self, incoming: Incoming) -> Option<bool> {
        let message = match incoming {
            Incoming::Message(message) => message,
            Incoming::Invalid(error, Some(id)) => {
                self.session.answer(id, Err(error));
                return None;
            }
            Incoming::Invalid(error, None) => {
                let _ = self.session.out.send(Outgoing::NullIdError(error));
                return None;
            }
            Incoming::End(error) => {
                if let Some(error) = error {
                    let _ = self.session.out.send(Outgoing::NullIdError(error));
                }
                return Some(true);
            }
        };
        match message {
            Message::Request(request) => self.request(request),
            Message::Notification(notification) => match notification.method.as_str() {
                "exit" => return Some(self.shut_down),
                "$/cancelRequest" => self.cancel(notification.params),
                // `initialized`, `$/setTrace` and the like: nothing to do.
                _ => {}
            },
            // The server sends no requests: a response answers none.
            Message::Response(_) => {}
        }
        None
    }

    fn cancel(&self, params: Value) {
        let Ok(CancelParams { id }) = serde_json::from_value(params) else {
            return;
        };
        let Ok(id) = serde_json::from_value::<RequestId>(id) else {
            return;
        };
        if let Some(flag) = self.session.in_flight().get(&id) {
            flag.store(true, Ordering::Relaxed);
        }
    }

    fn request(&mut self, request: lsp_server::Request) {
        let lsp_server::Request { id, method, params } = request;
        let session = &self.session;
        if !self.initialized {
            if method == "initialize" {
                self.initialized = true;
                return session.answer(id, methods::initialize(params, None));
            }
            return session.answer(
                id,
                Err(ServeError::new(
                    code::SERVER_NOT_INITIALIZED,
                    format!(
                        "{method}: the session has not been initialized (send initialize first)"
                    ),
                )),
            );
        }
        let refuse =
            |code, message: String| session.answer(id.clone(), Err(ServeError::new(code, message)));
        if self.shut_down {
            return refuse(
                code::INVALID_REQUEST,
                format!("{method}: the server is shutting down"),
            );
        }
        match method.as_str() {
            "initialize" => {
                return refuse(
                    code::INVALID_REQUEST,
                    "initialize: the session is already initialized".into(),
                );
            }
            "shutdown" => {
                self.shut_down = true;
                return session.answer(id, Ok(Reply::null()));
            }
            _ => {}
        }
        let Some(lane) = methods::lane(&method) else {
            return refuse(code::METHOD_NOT_FOUND, format!("{method}: no such method"));
        };
        let cancel = Arc::new(AtomicBool::new(false));
        {
            let mut in_flight = session.in_flight();
            if in_flight.len() >= LIMITS.max_requests_in_flight {
                drop(in_flight);
                return refuse(
                    code::LIMIT_REACHED,
                    format!(
                        "{method}: {} requests are in flight, the most this server takes \
                         (limits.maxRequestsInFlight): wait for answers",
                        LIMITS.max_requests_in_flight
                    ),
                );
            }
            if in_flight.contains_key(&id) {
                drop(in_flight);
                return refuse(
                    code::INVALID_REQUEST,
                    format!("{method}: request id {id} is already in flight"),
                );
            }
            in_flight.insert(id.clone(), Arc::clone(&cancel));
        }
        let session = Arc::clone(session);
        let job: Job = Box::new(move || {
            let request = Request { method, cancel };
            let cancelled = || {
                ServeError::new(
                    code::REQUEST_CANCELLED,
                    format!("{}: cancelled", request.method),
                )
            };
            let result = if request.cancelled() {
                Err(cancelled())
            } else {
                catch_unwind(AssertUnwindSafe(|| {
                    methods::call(&session, &request, params)
                }))
                .unwrap_or_else(|_| {
                    Err(ServeError::new(
                        code::INTERNAL_ERROR,
                        format!(
                            "{}: internal error (a bug in tracetree; please report)",
                            request.method
                        ),
                    ))
                })
            };
            let result = if request.cancelled() {
                Err(cancelled())
            } else {
                result
            };
            session.in_flight().remove(&id);
            session.respond(id, result);
        });
        let lane = match lane {
            Lane::Quick => &self.quick,
            Lane::Long => &self.long,
        };
        let _ = lane.send(job);
    }
}
