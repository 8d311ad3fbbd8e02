//! `tracetree serve --http`: the same session as `--stdio` (the same
//! dispatcher, pools and methods) behind a second front end, an HTTP
//! server (axum on a one-thread tokio runtime) that also serves the
//! browser viewer's page (`cli/web/`, built into the binary).
//!
//! - `POST /rpc`: one JSON-RPC message per request; a request's answer is
//!   the HTTP response, a notification (`$/cancelRequest`) gets 204;
//! - `GET /events`: the session's notifications (`$/progress`,
//!   `trace/grown`) as server-sent events, one message per event;
//! - `GET /`, `/app.js`, …: the page (no data in it).
//!
//! The front end answers `initialize` itself (with the traces it serves;
//! every page load initializes) and refuses `shutdown` and `exit` (the
//! server ends with a signal). Request ids are the page's: an id already
//! in flight is refused here. Its bounds are the session's: a body over
//! `maxMessageBytes` gets 413, a request past `maxRequestsInFlight` is
//! refused. `guard` checks every request (Host, Origin, token); `files`
//! limits what `trace/open` opens to the command line's traces and
//! `--root`. The same trace opened again (a reloaded page) is answered
//! with its first open's result while it stays open.

mod files;
mod guard;
mod page;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use crossbeam_channel::{Receiver, Sender, TrySendError, bounded};
use lsp_server::{Message, RequestId};
use serde_json::{Value, json};
use tokio::sync::{broadcast, oneshot};

use super::dispatch::{Core, LIMITS, OpenDefaults};
use super::errors::{ServeError, code};
use super::methods;
use super::transport::{Incoming, Outgoing, Reply, error_json};
pub use files::Files;

/// What the server is asked to serve, and where.
#[derive(Debug)]
pub struct Options {
    /// Where to listen (port 0: a free one).
    pub addr: SocketAddr,
    /// The traces a page may open.
    pub files: Files,
    /// Open the page in the user's browser once listening.
    pub open_browser: bool,
}

/// A message the page sent, as the session answers it.
type Answer = oneshot::Sender<Result<Reply, ServeError>>;

/// What every handler shares.
pub struct App {
    token: String,
    hosts: Vec<String>,
    files: Files,
    to_dispatcher: Sender<Incoming>,
    /// The requests sent to the dispatcher and not yet answered.
    pending: Arc<Mutex<HashMap<RequestId, Answer>>>,
    events: broadcast::Sender<Arc<str>>,
    /// `trace/open` results by the file and options opened, so that a
    /// reloaded page finds its trace open.
    opened: Mutex<HashMap<String, Reply>>,
    session: Arc<super::dispatch::Session>,
}

/// Serves until the process is ended (a signal): binds, prints the page's
/// URL, serves.
pub fn run(defaults: OpenDefaults, options: Options) -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(serve(defaults, options))
}

async fn serve(defaults: OpenDefaults, options: Options) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(options.addr).await?;
    let addr = listener.local_addr()?;
    if addr.ip().is_unspecified() {
        // The Host check serves only requests that name the server, which
        // a request from elsewhere to an unspecified address cannot.
        eprintln!(
            "tracetree: warning: listening on {addr}, every address: other machines can \
             connect, but only requests naming 127.0.0.1, localhost or [::1] are served \
             (give this machine's own address, --http=IP:PORT, to serve others)"
        );
    } else if !addr.ip().is_loopback() {
        eprintln!(
            "tracetree: warning: listening on {addr}, not a loopback address: other machines \
             can reach this server (the token still guards it)"
        );
    }
    let token = guard::new_token()?;
    let (to_writer, from_workers) = bounded(4 * LIMITS.max_requests_in_flight);
    let core = Core::start(defaults, to_writer, None);
    let (to_dispatcher, incoming) = bounded(LIMITS.max_requests_in_flight);
    let dispatcher = core.dispatcher(true);
    std::thread::Builder::new()
        .name("serve-dispatcher".into())
        .spawn(move || dispatcher.run(&incoming))?;
    let pending = Arc::new(Mutex::new(HashMap::new()));
    let (events, _) = broadcast::channel(1024);
    writer(from_workers, Arc::clone(&pending), events.clone())?;
    let app = Arc::new(App {
        token,
        hosts: guard::hosts(addr),
        files: options.files,
        to_dispatcher,
        pending,
        events,
        opened: Mutex::new(HashMap::new()),
        session: Arc::clone(&core.session),
    });
    let host = match addr {
        SocketAddr::V4(v4) if v4.ip().is_unspecified() => format!("127.0.0.1:{}", addr.port()),
        SocketAddr::V6(v6) if v6.ip().is_unspecified() => format!("[::1]:{}", addr.port()),
        _ => addr.to_string(),
    };
    let url = format!("http://{host}/?token={}", app.token);
    // The URL alone on standard output (for scripts), and for people on
    // standard error.
    println!("{url}");
    eprintln!("tracetree: serving the viewer at {url} (Ctrl-C stops)");
    if options.open_browser && opener::open_browser(&url).is_err() {
        eprintln!("tracetree: no browser could be opened: open the URL above");
    }
    let router = Router::new()
        .route("/rpc", post(rpc))
        .route("/events", get(events_stream))
        .merge(page::routes())
        .layer(DefaultBodyLimit::max(LIMITS.max_message_bytes))
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&app),
            guard::check,
        ))
        .with_state(app);
    let served = axum::serve(listener, router).await;
    core.end();
    served
}

/// The session's writer for HTTP: answers go to the requests waiting for
/// them, notifications to every `/events` stream.
fn writer(
    from: Receiver<Outgoing>,
    pending: Arc<Mutex<HashMap<RequestId, Answer>>>,
    events: broadcast::Sender<Arc<str>>,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("serve-http-writer".into())
        .spawn(move || {
            for outgoing in from {
                match outgoing {
                    Outgoing::Response(id, result) => {
                        let waiting = lock(&pending).remove(&id);
                        if let Some(answer) = waiting {
                            // The page may have gone: nothing to do.
                            let _ = answer.send(result);
                        }
                    }
                    notification @ Outgoing::Notification(..) => {
                        // No stream open: nobody listens.
                        let _ = events.send(notification.body().into());
                    }
                    // The HTTP front end answers unreadable messages itself.
                    Outgoing::NullIdError(_) => {}
                }
            }
        })?;
    Ok(())
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// A JSON-RPC answer as the HTTP response.
fn answer(id: Value, result: Result<Reply, ServeError>) -> Response {
    let body = match result {
        Ok(result) => format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{}}}"#,
            result.json()
        ),
        Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error_json(&error)}).to_string(),
    };
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

fn id_value(id: &RequestId) -> Value {
    serde_json::to_value(id).unwrap_or(Value::Null)
}

/// `POST /rpc`: one message.
async fn rpc(State(app): State<Arc<App>>, body: Bytes) -> Response {
    let value: Value = match serde_json::from_slice(&body) {
        Ok(value) => value,
        Err(error) => {
            return answer(
                Value::Null,
                Err(ServeError::new(
                    code::PARSE_ERROR,
                    format!("the message is not JSON: {error}"),
                )),
            );
        }
    };
    let message = match serde_json::from_value::<Message>(value.clone()) {
        Ok(message) => message,
        Err(_) => {
            return answer(
                value.get("id").cloned().unwrap_or(Value::Null),
                Err(ServeError::new(
                    code::INVALID_REQUEST,
                    "the message is JSON but not a JSON-RPC request or notification (one \
                     message per POST: no batches)",
                )),
            );
        }
    };
    match message {
        Message::Request(request) => app.request(request).await,
        Message::Notification(notification) => {
            if notification.method == "$/cancelRequest" {
                let incoming = Incoming::Message(Message::Notification(notification));
                // A full queue: the dispatcher is far behind; the cancel is
                // dropped as the request it names will be refused.
                let _ = app.to_dispatcher.try_send(incoming);
            }
            // `exit`, `initialized` and the like: the server ends with a
            // signal, not with a page.
            StatusCode::NO_CONTENT.into_response()
        }
        Message::Response(_) => StatusCode::NO_CONTENT.into_response(),
    }
}

impl App {
    async fn request(self: &Arc<Self>, request: lsp_server::Request) -> Response {
        let lsp_server::Request {
            id,
            method,
            mut params,
        } = request;
        let id_json = id_value(&id);
        match method.as_str() {
            "initialize" => {
                return answer(
                    id_json,
                    methods::initialize(params, Some(self.files.served())),
                );
            }
            "trace/files" => {
                let app = Arc::clone(self);
                let listed = tokio::task::spawn_blocking(move || app.files.list()).await;
                let listed = listed.map_err(|e| {
                    ServeError::new(code::INTERNAL_ERROR, format!("trace/files: {e}"))
                });
                return answer(id_json, listed.and_then(methods::reply));
            }
            "shutdown" => {
                return answer(
                    id_json,
                    Err(ServeError::new(
                        code::INVALID_REQUEST,
                        "shutdown: not over HTTP: the server ends when it is stopped (Ctrl-C)",
                    )),
                );
            }
            _ => {}
        }
        if let Err(error) = self.files.admit(&method, &mut params) {
            return answer(id_json, Err(error));
        }
        let reopen_key = (method == "trace/open").then(|| {
            let mut key = params.clone();
            if let Some(fields) = key.as_object_mut() {
                fields.remove("workDoneToken");
            }
            key.to_string()
        });
        if let Some(key) = &reopen_key
            && let Some(result) = self.still_open(key)
        {
            return answer(id_json, Ok(result));
        }
        let (answered, answer_rx) = oneshot::channel();
        {
            let mut pending = lock(&self.pending);
            if pending.contains_key(&id) {
                drop(pending);
                return answer(
                    id_json,
                    Err(ServeError::new(
                        code::INVALID_REQUEST,
                        format!("{method}: request id {id} is already in flight"),
                    )),
                );
            }
            pending.insert(id.clone(), answered);
        }
        let message = Message::Request(lsp_server::Request {
            id: id.clone(),
            method: method.clone(),
            params,
        });
        if let Err(error) = self.to_dispatcher.try_send(Incoming::Message(message)) {
            lock(&self.pending).remove(&id);
            let why = match error {
                TrySendError::Full(_) => format!(
                    "{method}: {} requests are waiting, the most this server takes \
                     (limits.maxRequestsInFlight): wait for answers",
                    LIMITS.max_requests_in_flight
                ),
                TrySendError::Disconnected(_) => format!("{method}: the session has ended"),
            };
            return answer(id_json, Err(ServeError::new(code::LIMIT_REACHED, why)));
        }
        // A page gone before its answer: the request is cancelled.
        let mut cancel_on_drop = CancelOnDrop {
            app: Arc::clone(self),
            id: Some(id),
        };
        let Ok(result) = answer_rx.await else {
            return answer(
                id_json,
                Err(ServeError::new(
                    code::INTERNAL_ERROR,
                    format!("{method}: the session ended before answering"),
                )),
            );
        };
        cancel_on_drop.id = None;
        if let (Some(key), Ok(result)) = (reopen_key, &result) {
            lock(&self.opened).insert(key, result.clone());
        }
        answer(id_json, result)
    }

    /// The result of an earlier `trace/open` with the same parameters,
    /// when its trace is still open.
    fn still_open(&self, key: &str) -> Option<Reply> {
        let mut opened = lock(&self.opened);
        let result = opened.get(key)?;
        let parsed: Value = serde_json::from_str(result.json()).ok()?;
        let id = parsed.get("trace")?.as_str()?;
        if self.session.traces.get("trace/open", id).is_ok() {
            return Some(result.clone());
        }
        opened.remove(key);
        None
    }
}

/// Cancels a request whose page stopped waiting for it.
struct CancelOnDrop {
    app: Arc<App>,
    id: Option<RequestId>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            let cancel = lsp_server::Notification::new(
                "$/cancelRequest".into(),
                json!({ "id": id_value(&id) }),
            );
            let _ = self
                .app
                .to_dispatcher
                .try_send(Incoming::Message(Message::Notification(cancel)));
        }
    }
}

/// `GET /events`: the session's notifications as server-sent events.
async fn events_stream(State(app): State<Arc<App>>) -> impl IntoResponse {
    let receiver = app.events.subscribe();
    let stream = futures_util::stream::unfold(receiver, |mut receiver| async move {
        let event = match receiver.recv().await {
            Ok(text) => Event::default().data(&*text),
            // A page too slow to read: what it missed is said.
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                Event::default().event("lagged").data(missed.to_string())
            }
            Err(broadcast::error::RecvError::Closed) => return None,
        };
        Some((Ok::<_, std::convert::Infallible>(event), receiver))
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

/// `ADDR` of `serve --http ADDR`: `HOST`, `HOST:PORT`, `[IPv6]:PORT` or
/// `localhost`; no port (or 0) is a free one.
pub fn parse_addr(text: &str) -> Result<SocketAddr, String> {
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    if let Ok(ip) = text.trim_matches(['[', ']']).parse::<std::net::IpAddr>() {
        return Ok(SocketAddr::new(ip, 0));
    }
    let (host, port) = match text.rsplit_once(':') {
        Some((host, port)) => (
            host,
            port.parse::<u16>()
                .map_err(|_| format!("{text:?}: the port is not a number"))?,
        ),
        None => (text, 0),
    };
    if host.eq_ignore_ascii_case("localhost") {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    Err(format!(
        "{text:?} is not an address (127.0.0.1, 127.0.0.1:8080, [::1]:8080, localhost)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse_with_or_without_a_port() {
        assert_eq!(parse_addr("127.0.0.1").unwrap().to_string(), "127.0.0.1:0");
        assert_eq!(parse_addr("127.0.0.1:8080").unwrap().port(), 8080);
        assert_eq!(parse_addr("[::1]:9").unwrap().to_string(), "[::1]:9");
        assert_eq!(parse_addr("::1").unwrap().to_string(), "[::1]:0");
        assert_eq!(
            parse_addr("localhost:7").unwrap().to_string(),
            "127.0.0.1:7"
        );
        assert!(parse_addr("example.com").is_err());
        assert!(parse_addr("localhost:x").is_err());
    }
}
