//! The methods: each reads its parameters (a wrong one is `INVALID_PARAMS`
//! naming its field), asks the library, and writes its result. Lines are
//! the library's printer's (`TextFormatter`, as `print --verbose` writes
//! them), kinds `dump`'s names, searches the library's walk with the
//! request's cancel flag as its stop.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tracetree::TraceTree;
use tracetree::common::{EventId, ThreadId};
use tracetree::model::{DiffStatus, Footer, TracepointBody, Value as TraceValue};
use tracetree::print::{Parent, TextFormatter};
use tracetree::search::{SearchFrom, SearchOptions};
use tracetree::tree::Navigate;

use super::dispatch::{LIMITS, Request, Session};
use super::errors::{ServeError, code};
use super::protocol::*;
use super::traces::{OpenTrace, ServedTree, handle_text, resolve};
use super::transport::Reply;
use crate::cache::Cache;

/// Runs `$body` with `$reader` bound to the tree `$trace` is served as
/// now: its reader, or the post-processed view made when it was opened
/// or last refreshed (see [`ServedTree`]).
macro_rules! on_tree {
    ($trace:expr, $reader:ident, $body:block) => {{
        match $trace.served() {
            ServedTree::Raw(tree) => {
                let $reader = &*tree;
                $body
            }
            ServedTree::Postprocessed(tree) => {
                let $reader = &*tree;
                $body
            }
        }
    }};
}

/// Which workers serve a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// A page, a node: milliseconds.
    Quick,
    /// An open, a search, a find: up to a walk of the trace.
    Long,
}

/// The trace methods, with their lanes.
pub const METHODS: [(&str, Lane); 16] = [
    ("trace/open", Lane::Long),
    ("trace/close", Lane::Quick),
    ("trace/roots", Lane::Quick),
    ("trace/children", Lane::Quick),
    ("trace/node", Lane::Quick),
    ("trace/ancestors", Lane::Quick),
    ("trace/position", Lane::Quick),
    ("trace/nodeByEvent", Lane::Quick),
    ("trace/search", Lane::Long),
    ("trace/findNext", Lane::Long),
    ("trace/findPrevious", Lane::Long),
    ("trace/export", Lane::Long),
    ("trace/follow", Lane::Quick),
    ("trace/threads", Lane::Quick),
    ("trace/flame", Lane::Long),
    ("trace/sandwich", Lane::Long),
];

/// The lane of `method`, `None` for no such method.
pub fn lane(method: &str) -> Option<Lane> {
    METHODS
        .iter()
        .find(|(name, _)| *name == method)
        .map(|&(_, lane)| lane)
}

/// `initialize`'s answer; `served` over HTTP.
pub fn initialize(params: Value, served: Option<Served>) -> Result<Reply, ServeError> {
    let _: InitializeParams = parse("initialize", params)?;
    let mut methods = vec!["initialize".to_string(), "shutdown".to_string()];
    methods.extend(METHODS.iter().map(|(name, _)| name.to_string()));
    reply(InitializeResult {
        server_info: ServerInfo {
            name: "tracetree".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
        capabilities: Capabilities {
            methods,
            cancel_request: true,
            work_done_progress: true,
            partial_results: true,
            follow: true,
        },
        limits: LIMITS,
        served,
    })
}

/// Serves one trace request.
pub fn call(session: &Arc<Session>, request: &Request, params: Value) -> Result<Reply, ServeError> {
    let method = request.method.as_str();
    match method {
        "trace/open" => open(session, request, parse(method, params)?),
        "trace/close" => {
            let TraceParams { trace } = parse(method, params)?;
            session.traces.close(method, &trace).map(|()| Reply::null())
        }
        "trace/threads" => {
            let TraceParams { trace } = parse(method, params)?;
            let trace = session.traces.get(method, &trace)?;
            on_tree!(trace, reader, {
                reply(threads(reader).map_err(|e| failed(method, &trace, None, &e))?)
            })
        }
        "trace/roots" => roots(session, method, parse(method, params)?),
        "trace/children" => children(session, method, parse(method, params)?),
        "trace/node" => node(session, method, parse(method, params)?),
        "trace/ancestors" => ancestors(session, method, parse(method, params)?),
        "trace/position" => position(session, method, parse(method, params)?),
        "trace/nodeByEvent" => node_by_event(session, method, parse(method, params)?),
        "trace/search" => search(session, request, parse(method, params)?),
        "trace/findNext" | "trace/findPrevious" => find(session, request, parse(method, params)?),
        "trace/export" => export(session, request, parse(method, params)?),
        "trace/flame" => flame(session, request, parse(method, params)?),
        "trace/sandwich" => sandwich(session, request, parse(method, params)?),
        "trace/follow" => {
            let TraceParams { trace } = parse(method, params)?;
            let trace = session.traces.get(method, &trace)?;
            super::follow::start(session, &trace).map(|()| Reply::null())
        }
        _ => Err(ServeError::new(
            code::METHOD_NOT_FOUND,
            format!("{method}: no such method"),
        )),
    }
}

/// `params` as `P`, else `INVALID_PARAMS` naming the field.
fn parse<P: DeserializeOwned>(method: &str, params: Value) -> Result<P, ServeError> {
    let params = if params.is_null() { json!({}) } else { params };
    serde_path_to_error::deserialize(params).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        let text = inner.to_string();
        // A missing field is named by serde's message, not by the path.
        let field = match text.strip_prefix("missing field `") {
            Some(rest) if path == "." => rest.split('`').next().unwrap_or("").to_string(),
            _ if path == "." => String::new(),
            _ => path,
        };
        if field.is_empty() {
            ServeError::new(code::INVALID_PARAMS, format!("{method}: params: {text}"))
        } else {
            ServeError::invalid_params(method, &field, text)
        }
    })
}

/// The result as JSON text, serialized from its type (no tree of values
/// in between).
pub(super) fn reply(value: impl serde::Serialize) -> Result<Reply, ServeError> {
    Reply::of(&value)
}

/// A library error met by `method` on `trace` (and `node`).
fn failed(
    method: &str,
    trace: &OpenTrace,
    node: Option<&str>,
    error: &tracetree::Error,
) -> ServeError {
    let about = match node {
        Some(node) => format!("{}, node {node}", trace.about()),
        None => trace.about(),
    };
    let error = ServeError::from_library(method, &about, error).with("trace", trace.id.as_str());
    match node {
        Some(node) => error.with("node", node),
        None => error,
    }
}

fn open(session: &Session, request: &Request, params: OpenParams) -> Result<Reply, ServeError> {
    let method = "trace/open";
    session.traces.check_room(method)?;
    let path = PathBuf::from(&params.path);
    let options = &params.options;
    let defaults = &session.defaults;
    let opening = |error: &tracetree::Error| {
        ServeError::from_library(method, &params.path, error).with("path", params.path.as_str())
    };
    let cache_dir = options
        .cache_dir
        .as_ref()
        .map(PathBuf::from)
        .or_else(|| defaults.cache_dir.clone());
    let no_cache = options.no_cache.unwrap_or(defaults.no_cache);
    let strict = options.strict.unwrap_or(defaults.strict);
    let access = if options.no_mmap.unwrap_or(defaults.no_mmap) {
        tracetree::FileAccess::Read
    } else {
        tracetree::FileAccess::Map
    };
    let progress = Progress::begin(session, params.work_done_token.as_ref(), "opening");
    let from = match &options.from {
        Some(name) => Some(
            name.parse::<tracetree::SourceFormat>()
                .map_err(|problem| ServeError::invalid_params(method, "options.from", problem))?,
        ),
        None => None,
    };
    let flag = match options.strict {
        Some(_) => "options.strict",
        None => "--strict",
    };
    let cache = Cache::new(cache_dir, no_cache, strict)
        .map_err(|e| opening(&e))?
        .strict_flag(flag)
        .file_access(access)
        .reading_as(from);
    let growing = options.growing.unwrap_or(false);
    // A rebuild of the lookups (no index) stops when the request is
    // cancelled, and so does the count below.
    let lazy = cache.lazy_options().stop(Some(Arc::clone(&request.cancel)));
    let opened = cache
        .traces()
        .open(&path, &params.path, lazy, growing)
        .map_err(|e| opening(&e))?;
    let (reader, status, mut warnings) = (opened.reader, opened.status, opened.warnings);
    // A damaged map leaves the diff readable: said, not refused.
    if let Some(problem) = reader.diff_map().and_then(|map| map.problem()) {
        warnings.push(format!("the diff's map to its inputs: {problem}"));
    }
    let tracepoints = if options.count_tracepoints.unwrap_or(true) {
        progress.report("counting tracepoints");
        let counts = reader
            .walk_threads(
                tracetree::read::WalkDetail::Headers,
                |_| 0u64,
                |count, _| {
                    *count += 1;
                    Ok(!request.cancelled())
                },
            )
            .map_err(|e| opening(&e))?;
        Some(counts.iter().sum())
    } else {
        None
    };
    let served = ServedTree::new(Arc::new(reader), options.postprocess.unwrap_or(false));
    let threads = served_threads(&served).map_err(|e| opening(&e))?;
    if request.cancelled() {
        return Err(ServeError::new(
            code::REQUEST_CANCELLED,
            format!("{method}: cancelled"),
        ));
    }
    let open = session.traces.add(method, path, served, cache, growing)?;
    drop(progress);
    reply(OpenResult {
        trace: open.id.clone(),
        threads,
        tracepoints,
        status: status.as_str().into(),
        warnings,
    })
}

/// The threads of the tree a trace is served as.
pub fn served_threads(served: &ServedTree) -> tracetree::Result<Vec<ThreadInfo>> {
    match served {
        ServedTree::Raw(reader) => threads(&**reader),
        ServedTree::Postprocessed(view) => threads(&**view),
    }
}

/// The threads of `reader`, with their names and root counts.
pub fn threads(reader: &impl Navigate) -> tracetree::Result<Vec<ThreadInfo>> {
    reader
        .thread_ids()
        .into_iter()
        .map(|id| {
            Ok(ThreadInfo {
                id: id.get(),
                name: reader.thread_name(id),
                roots: reader.root_count(id)? as u64,
            })
        })
        .collect()
}

/// `count` checked against the page limit.
fn page_count(method: &str, count: usize) -> Result<usize, ServeError> {
    if count > LIMITS.max_page_count {
        return Err(ServeError::invalid_params(
            method,
            "count",
            format!(
                "{count} is over limits.maxPageCount ({})",
                LIMITS.max_page_count
            ),
        ));
    }
    Ok(count)
}

fn roots(session: &Session, method: &str, params: RootsParams) -> Result<Reply, ServeError> {
    let trace = session.traces.get(method, &params.trace)?;
    on_tree!(trace, reader, {
        let count = page_count(method, params.count)?;
        let thread = ThreadId::new(params.thread);
        if !reader.thread_ids().contains(&thread) {
            return Err(ServeError::new(
                code::NO_SUCH_NODE,
                format!("{method}: {}: no thread {}", trace.about(), params.thread),
            )
            .with("trace", trace.id.as_str())
            .with("field", "thread"));
        }
        let fail = |e: &tracetree::Error| failed(method, &trace, None, e);
        let page = reader
            .roots_range(thread, params.start, count)
            .map_err(|e| fail(&e))?;
        let nodes = rows(reader, &page, Parent::TopLevel, 0).map_err(|e| fail(&e))?;
        let total = reader.root_count(thread).map_err(|e| fail(&e))? as u64;
        reply(NodesResult {
            nodes,
            total: Some(total),
        })
    })
}

fn children(session: &Session, method: &str, params: ChildrenParams) -> Result<Reply, ServeError> {
    let trace = session.traces.get(method, &params.trace)?;
    on_tree!(trace, reader, {
        let count = page_count(method, params.count)?;
        let node = resolve(method, &trace, reader, "node", &params.node)?;
        let fail = |e: &tracetree::Error| failed(method, &trace, Some(&params.node), e);
        let depth = reader.ancestors(node).map_err(|e| fail(&e))?.len() + 1;
        let parent = reader
            .visit(node, |tracepoint, _| Parent::of(tracepoint))
            .map_err(|e| fail(&e))?;
        let page = reader
            .children_range(node, params.start, count)
            .map_err(|e| fail(&e))?;
        let nodes = rows(reader, &page, parent, depth).map_err(|e| fail(&e))?;
        let total = reader
            .quick_child_count(node)
            .map_err(|e| fail(&e))?
            .exact()
            .map(|n| n as u64);
        reply(NodesResult { nodes, total })
    })
}

/// The rows of `nodes`, children of a node that tells them `parent`, at
/// `depth`.
fn rows<V: Navigate>(
    reader: &V,
    nodes: &[V::Node],
    parent: Parent,
    depth: usize,
) -> tracetree::Result<Vec<Node>> {
    let mut formatter = TextFormatter::new(reader.context(), true);
    nodes
        .iter()
        .map(|&node| row(reader, &mut formatter, node, parent, depth))
        .collect()
}

/// One node's row.
fn row<V: Navigate>(
    reader: &V,
    formatter: &mut TextFormatter<'_>,
    node: V::Node,
    parent: Parent,
    depth: usize,
) -> tracetree::Result<Node> {
    let mut text = String::new();
    let header = reader.visit(node, |tracepoint, footer| {
        formatter
            .write_tracepoint(&mut text, tracepoint, footer, parent)
            .map(|()| tracepoint.header)
    })??;
    let count = reader.quick_child_count(node)?;
    Ok(Node {
        handle: handle_text(reader.handle(node)),
        event_id: header.event.get(),
        kind: header.tracepoint_type.name().into(),
        depth,
        text,
        child_count: count.at_least() as u64,
        child_count_exact: count.exact().is_some(),
        has_children: count.at_least() > 0,
        diff: match header.diff_status {
            DiffStatus::None => None,
            status => Some(diff_status(status).into()),
        },
    })
}

/// The row of `node` alone: its depth and parent looked up.
fn lone_row<V: Navigate>(reader: &V, node: V::Node) -> tracetree::Result<(Node, Vec<V::Node>)> {
    let above = reader.ancestors(node)?;
    let parent = match above.last() {
        Some(&parent) => reader.visit(parent, |tracepoint, _| Parent::of(tracepoint))?,
        None => Parent::TopLevel,
    };
    let mut formatter = TextFormatter::new(reader.context(), true);
    let row = row(reader, &mut formatter, node, parent, above.len())?;
    Ok((row, above))
}

fn node(session: &Session, method: &str, params: NodeParams) -> Result<Reply, ServeError> {
    let trace = session.traces.get(method, &params.trace)?;
    on_tree!(trace, reader, {
        let node = resolve(method, &trace, reader, "node", &params.node)?;
        let fail = |e: &tracetree::Error| failed(method, &trace, Some(&params.node), e);
        let mut detail = detail(reader, node).map_err(|e| fail(&e))?;
        if let Some(map) = trace.reader().diff_map() {
            detail.origin = origin(map, reader, node).map_err(|e| fail(&e))?;
        }
        reply(detail)
    })
}

/// Where `node` of a diff came from, by the diff's map.
fn origin<V: Navigate>(
    map: &tracetree::diff::DiffMap,
    reader: &V,
    node: V::Node,
) -> tracetree::Result<Option<DiffOrigin>> {
    let header = reader.visit(node, |tracepoint, _| tracepoint.header)?;
    let Some(events) = map.event(header.event)? else {
        return Ok(None);
    };
    let threads = map.thread(header.thread);
    let side = |event: Option<tracetree::common::EventId>, thread: Option<Option<u32>>| {
        event.map(|event| InputEvent {
            thread_index: thread.flatten(),
            event_id: event.get(),
        })
    };
    Ok(Some(DiffOrigin {
        left: side(events.left, threads.map(|t| t.left)),
        right: side(events.right, threads.map(|t| t.right)),
    }))
}

/// `node` in full.
fn detail<V: Navigate>(reader: &V, node: V::Node) -> tracetree::Result<NodeDetail> {
    let (row, _) = lone_row(reader, node)?;
    reader.visit(node, |tracepoint, footer| {
        described(reader, row, tracepoint, footer)
    })?
}

/// [`detail`] of a node whose row and tracepoint are read.
fn described<V: Navigate>(
    reader: &V,
    row: Node,
    tracepoint: &tracetree::model::Tracepoint<'_>,
    footer: Option<&Footer<'_>>,
) -> tracetree::Result<NodeDetail> {
    let context = reader.context();
    let mut formatter = TextFormatter::new(context, false);
    let mut value_text = |value: &TraceValue<'_>| -> tracetree::Result<String> {
        let mut text = String::new();
        formatter.write_value(&mut text, value)?;
        Ok(text)
    };
    let class_member = |class, name: &str| match context.class(class) {
        Ok(class) => format!("{}.{name}", class.name.decode()),
        Err(_) => name.to_string(),
    };
    let string = |id| context.string(id).ok().map(|s| s.decode().into_owned());
    let location = context
        .code_location(tracepoint.header.code_location)
        .ok()
        .map(|location| Location {
            file: string(location.file_name),
            line: location.line,
            class_name: string(location.class_name),
            method_name: string(location.method_name),
        });
    let mut detail = NodeDetail {
        node: row,
        thread: tracepoint.header.thread.get(),
        diff_status: diff_status(tracepoint.header.diff_status).into(),
        location,
        method: None,
        receiver: None,
        arguments: None,
        result: None,
        exception: None,
        field: None,
        variable: None,
        array: None,
        index: None,
        value: None,
        iteration: None,
        unfinished: tracepoint.header.tracepoint_type.is_container() && footer.is_none(),
        origin: None,
    };
    let not_null = |value: &TraceValue<'_>| !matches!(value, TraceValue::Null);
    match &tracepoint.body {
        TracepointBody::MethodCall {
            method,
            receiver,
            arguments,
            ..
        } => {
            detail.method = Some(match context.method(*method) {
                Ok(m) => class_member(m.class, &m.name.decode()),
                Err(_) => format!("method {}", method.get()),
            });
            if not_null(receiver) {
                detail.receiver = Some(value_text(receiver)?);
            }
            detail.arguments = Some(
                arguments
                    .iter()
                    .map(&mut value_text)
                    .collect::<Result<_, _>>()?,
            );
            if let Some(Footer::MethodCall { result, exception }) = footer {
                let exception = exception.decode();
                if exception.is_empty() {
                    detail.result = Some(value_text(result)?);
                } else {
                    detail.exception = Some(exception.into_owned());
                }
            }
        }
        TracepointBody::ReadField {
            field,
            receiver,
            value,
        }
        | TracepointBody::WriteField {
            field,
            receiver,
            value,
        } => {
            detail.field = Some(match context.field(*field) {
                Ok(f) => class_member(f.class, &f.name.decode()),
                Err(_) => format!("field {}", field.get()),
            });
            if not_null(receiver) {
                detail.receiver = Some(value_text(receiver)?);
            }
            detail.value = Some(value_text(value)?);
        }
        TracepointBody::ReadLocal { variable, value }
        | TracepointBody::WriteLocal { variable, value } => {
            detail.variable = Some(match context.variable(*variable) {
                Ok(v) => v.name.decode().into_owned(),
                Err(_) => format!("variable {}", variable.get()),
            });
            detail.value = Some(value_text(value)?);
        }
        TracepointBody::ReadArray {
            array,
            index,
            value,
        }
        | TracepointBody::WriteArray {
            array,
            index,
            value,
        } => {
            detail.array = Some(value_text(array)?);
            detail.index = Some(*index);
            detail.value = Some(value_text(value)?);
        }
        TracepointBody::Loop { .. } => {
            if let Some(Footer::Loop { iterations }) = footer {
                detail.iteration = Some(*iterations);
            }
        }
        TracepointBody::LoopIteration { iteration, .. } => detail.iteration = Some(*iteration),
        TracepointBody::Throw { exception } | TracepointBody::Catch { exception } => {
            detail.exception = Some(value_text(exception)?);
        }
        TracepointBody::SnapshotBreakpoint { values, .. } => {
            detail.arguments = Some(
                values
                    .iter()
                    .map(&mut value_text)
                    .collect::<Result<_, _>>()?,
            );
        }
    }
    Ok(detail)
}

fn diff_status(status: DiffStatus) -> &'static str {
    match status {
        DiffStatus::None => "none",
        DiffStatus::Unchanged => "unchanged",
        DiffStatus::Removed => "removed",
        DiffStatus::Added => "added",
        DiffStatus::EditedOld => "edited_old",
        DiffStatus::EditedNew => "edited_new",
    }
}

fn ancestors(session: &Session, method: &str, params: NodeParams) -> Result<Reply, ServeError> {
    let trace = session.traces.get(method, &params.trace)?;
    on_tree!(trace, reader, {
        let node = resolve(method, &trace, reader, "node", &params.node)?;
        let fail = |e: &tracetree::Error| failed(method, &trace, Some(&params.node), e);
        let above = reader.ancestors(node).map_err(|e| fail(&e))?;
        let mut formatter = TextFormatter::new(reader.context(), true);
        let mut parent = Parent::TopLevel;
        let mut nodes = Vec::with_capacity(above.len());
        for (depth, &ancestor) in above.iter().enumerate() {
            nodes.push(row(reader, &mut formatter, ancestor, parent, depth).map_err(|e| fail(&e))?);
            parent = reader
                .visit(ancestor, |tracepoint, _| Parent::of(tracepoint))
                .map_err(|e| fail(&e))?;
        }
        reply(AncestorsResult { nodes })
    })
}

fn position(session: &Session, method: &str, params: NodeParams) -> Result<Reply, ServeError> {
    let trace = session.traces.get(method, &params.trace)?;
    on_tree!(trace, reader, {
        let node = resolve(method, &trace, reader, "node", &params.node)?;
        let fail = |e: &tracetree::Error| failed(method, &trace, Some(&params.node), e);
        let above = reader.ancestors(node).map_err(|e| fail(&e))?;
        let index = reader.position(node).map_err(|e| fail(&e))?;
        reply(PositionResult {
            parent: above
                .last()
                .map(|&parent| handle_text(reader.handle(parent))),
            index: index as u64,
            depth: above.len(),
        })
    })
}

fn node_by_event(
    session: &Session,
    method: &str,
    params: NodeByEventParams,
) -> Result<Reply, ServeError> {
    let trace = session.traces.get(method, &params.trace)?;
    on_tree!(trace, reader, {
        let fail = |e: &tracetree::Error| failed(method, &trace, None, e);
        let missing = |what: String| {
            ServeError::new(
                code::NO_SUCH_NODE,
                format!("{method}: {}: {what}", trace.about()),
            )
            .with("trace", trace.id.as_str())
            .with("field", "eventId")
        };
        let event = EventId::new(params.event_id);
        let Some(node) = reader.node_by_event(event).map_err(|e| fail(&e))? else {
            return Err(missing(format!("no event {}", params.event_id)));
        };
        let thread = reader.node_thread(node).get();
        if thread != params.thread {
            return Err(missing(format!(
                "event {} is in thread {thread}, not thread {}",
                params.event_id, params.thread
            )));
        }
        reply(lone_row(reader, node).map_err(|e| fail(&e))?.0)
    })
}

/// Tracepoint kinds by their `dump` names, else `INVALID_PARAMS`.
fn kinds(
    method: &str,
    names: Option<&Vec<String>>,
) -> Result<Option<Vec<tracetree::model::TracepointType>>, ServeError> {
    names
        .map(|names| {
            names
                .iter()
                .enumerate()
                .map(|(at, name)| {
                    crate::search::kind(name)
                        .map_err(|e| ServeError::invalid_params(method, &format!("kinds[{at}]"), e))
                })
                .collect()
        })
        .transpose()
}

/// The diff statuses of `changes` (`None`: every status).
fn diff_statuses(changes: Option<&[DiffChange]>) -> Option<Vec<DiffStatus>> {
    changes.map(|changes| {
        changes
            .iter()
            .flat_map(|change| change.statuses())
            .copied()
            .collect()
    })
}

fn hit<V: Navigate>(reader: &V, hit: &tracetree::search::Hit<V::Node>) -> Hit {
    Hit {
        handle: handle_text(reader.handle(hit.node)),
        event_id: hit.event.get(),
        thread: hit.thread.get(),
        depth: hit.depth,
        text: hit.line.clone(),
        path: hit.path.iter().map(|name| name.to_string()).collect(),
    }
}

fn search(session: &Session, request: &Request, params: SearchParams) -> Result<Reply, ServeError> {
    let method = request.method.as_str();
    let trace = session.traces.get(method, &params.trace)?;
    on_tree!(trace, reader, {
        let max = params.max.unwrap_or(1000);
        if max > LIMITS.max_search_hits {
            return Err(ServeError::invalid_params(
                method,
                "max",
                format!(
                    "{max} is over limits.maxSearchHits ({})",
                    LIMITS.max_search_hits
                ),
            ));
        }
        let threads = params
            .threads
            .as_ref()
            .map(|ids| ids.iter().map(|&id| ThreadId::new(id)).collect::<Vec<_>>());
        if let Some(threads) = &threads {
            let known = reader.thread_ids();
            if let Some(at) = threads.iter().position(|t| !known.contains(t)) {
                return Err(ServeError::invalid_params(
                    method,
                    &format!("threads[{at}]"),
                    format!("{}: no thread {}", trace.about(), threads[at].get()),
                ));
            }
        }
        let mut options = SearchOptions::new(params.pattern.clone());
        options.ignore_case = params.ignore_case;
        options.text = params.text;
        options.threads = threads;
        options.kinds = kinds(method, params.kinds.as_ref())?;
        options.diff = diff_statuses(params.diff.as_deref());
        options.max = max;
        options.stop = Some(Arc::clone(&request.cancel));
        let progress = Progress::begin(session, params.work_done_token.as_ref(), "searching");
        let scanned = std::sync::atomic::AtomicU64::new(0);
        let report = |n| {
            let total = scanned.fetch_add(n, Ordering::Relaxed) + n;
            progress.report_every(&format!("{total} tracepoints scanned"));
        };
        let fail = |e: tracetree::Error| failed(method, &trace, None, &e);
        // Streamed: each hit is written as it is found (the walk waits on a
        // client slow to read), none is kept. Otherwise at most `max` are.
        let (hits, total) = match &params.partial_result_token {
            Some(token) => {
                let streamed = AtomicUsize::new(0);
                let counts = options
                    .search_each(reader, &report, &|found| {
                        if streamed.fetch_add(1, Ordering::Relaxed) < max {
                            session.notify(
                                "$/progress",
                                ProgressParams {
                                    token: token.clone(),
                                    value: json!({ "hits": [hit(reader, &found)] }),
                                },
                            );
                        }
                    })
                    .map_err(fail)?;
                (Vec::new(), counts.total)
            }
            None => {
                let found = options.search(reader, &report).map_err(fail)?;
                (
                    found.hits.iter().map(|h| hit(reader, h)).collect(),
                    found.total,
                )
            }
        };
        drop(progress);
        reply(SearchResult { hits, total })
    })
}

fn find(session: &Session, request: &Request, params: FindParams) -> Result<Reply, ServeError> {
    let method = request.method.as_str();
    let trace = session.traces.get(method, &params.trace)?;
    on_tree!(trace, reader, {
        let mut options = SearchOptions::new(params.pattern.clone());
        options.ignore_case = params.ignore_case;
        options.text = params.text;
        options.kinds = kinds(method, params.kinds.as_ref())?;
        options.diff = diff_statuses(params.diff.as_deref());
        options.stop = Some(Arc::clone(&request.cancel));
        let from = match &params.from {
            Some(from) => Some(resolve(method, &trace, reader, "from", from)?),
            None => None,
        };
        let fail = |e: &tracetree::Error| failed(method, &trace, params.from.as_deref(), e);
        let thread = match (from, params.thread) {
            (Some(_), _) | (None, None) => None,
            (None, Some(thread)) if reader.thread_ids().contains(&ThreadId::new(thread)) => {
                Some(ThreadId::new(thread))
            }
            (None, Some(thread)) => {
                return Err(ServeError::invalid_params(
                    method,
                    "thread",
                    format!("{}: no thread {thread}", trace.about()),
                ));
            }
        };
        let from = match (from, thread, method == "trace/findPrevious") {
            (Some(node), _, true) => SearchFrom::Before(node),
            (None, Some(thread), true) => SearchFrom::ThreadEnd(thread),
            (Some(node), _, false) => SearchFrom::After(node),
            (None, Some(thread), false) => SearchFrom::ThreadStart(thread),
            (None, None, _) => {
                return Err(ServeError::invalid_params(
                    method,
                    "from",
                    "give `from` (a handle) or `thread`",
                ));
            }
        };
        let found = from.find(reader, &options).map_err(|e| fail(&e))?;
        reply(FindResult {
            hit: found.map(|found| hit(reader, &found)),
        })
    })
}

fn export(session: &Session, request: &Request, params: ExportParams) -> Result<Reply, ServeError> {
    let method = request.method.as_str();
    let trace = session.traces.get(method, &params.trace)?;
    on_tree!(trace, reader, {
        export_tree(session, request, &trace, reader, params)
    })
}

/// `trace/export` on the tree the trace is served as.
fn export_tree<V: Navigate>(
    session: &Session,
    request: &Request,
    trace: &OpenTrace,
    reader: &V,
    params: ExportParams,
) -> Result<Reply, ServeError> {
    use tracetree::export::stacks::{StackFormat, StackOptions};
    let method = request.method.as_str();
    let formats = [
        StackFormat::Folded,
        StackFormat::Speedscope,
        StackFormat::Chrome,
        StackFormat::Perfetto,
    ];
    let Some(format) = formats.into_iter().find(|f| f.name() == params.format) else {
        return Err(ServeError::invalid_params(
            method,
            "format",
            format!(
                "no format {:?} (folded, speedscope, chrome, perfetto)",
                params.format
            ),
        ));
    };
    let root = match &params.node {
        Some(handle) => {
            let node = resolve(method, trace, reader, "node", handle)?;
            let event = reader
                .visit(node, |tracepoint, _| tracepoint.header.event)
                .map_err(|e| failed(method, trace, Some(handle), &e))?;
            Some(event)
        }
        None => None,
    };
    let name = trace.path.file_stem().map_or_else(
        || "trace".into(),
        |stem| stem.to_string_lossy().into_owned(),
    );
    let mut options = StackOptions::new(format, name);
    options.threads = params
        .threads
        .as_ref()
        .map(|ids| ids.iter().map(|&id| ThreadId::new(id)).collect());
    options.root = root;
    options.force = params.force;
    options.stop = Some(Arc::clone(&request.cancel));
    let progress = Progress::begin(session, params.work_done_token.as_ref(), "exporting");
    let written = std::sync::atomic::AtomicU64::new(0);
    let summary = options
        .export(reader, std::path::Path::new(&params.output), &|n| {
            let total = written.fetch_add(n, Ordering::Relaxed) + n;
            progress.report_every(&format!("{total} tracepoints exported"));
        })
        .map_err(|e| {
            failed(method, trace, params.node.as_deref(), &e).with("output", params.output.as_str())
        })?;
    drop(progress);
    reply(ExportResult {
        output: params.output,
        threads: summary.threads as u64,
        tracepoints: summary.tracepoints,
        frames: summary.frames as u64,
        events: summary.events,
        bytes: summary.bytes,
    })
}

/// The scope and bounds of a flame graph or sandwich, from a request's
/// `thread`, `node`, `minFraction` or `width`, `maxFrames` and a flame
/// graph's `path`.
struct FlameAsk<'a> {
    thread: Option<i32>,
    node: Option<&'a str>,
    min_fraction: Option<f64>,
    width: Option<u32>,
    max_frames: Option<usize>,
    path: Option<Vec<String>>,
}

/// The library's options for `ask`, its fields checked.
fn flame_options<V: Navigate>(
    method: &str,
    trace: &OpenTrace,
    reader: &V,
    request: &Request,
    ask: &FlameAsk<'_>,
) -> Result<tracetree::export::stacks::flame::FlameOptions<V::Node>, ServeError> {
    use tracetree::export::stacks::flame::FlameOptions;
    let threads = match ask.thread {
        Some(thread) if reader.thread_ids().contains(&ThreadId::new(thread)) => {
            Some(vec![ThreadId::new(thread)])
        }
        Some(thread) => {
            return Err(ServeError::invalid_params(
                method,
                "thread",
                format!("{}: no thread {thread}", trace.about()),
            ));
        }
        None => None,
    };
    let node = match ask.node {
        Some(handle) => Some(resolve(method, trace, reader, "node", handle)?),
        None => None,
    };
    if let (Some(node), Some(thread)) = (node, ask.thread)
        && reader.node_thread(node).get() != thread
    {
        return Err(ServeError::invalid_params(
            method,
            "node",
            format!(
                "{}: node {} is in thread {}, not thread {thread}",
                trace.about(),
                ask.node.unwrap_or(""),
                reader.node_thread(node).get()
            ),
        ));
    }
    let min_fraction = match (ask.min_fraction, ask.width) {
        (Some(_), Some(_)) => {
            return Err(ServeError::invalid_params(
                method,
                "width",
                "give minFraction or width, not both",
            ));
        }
        (Some(fraction), None) if (0.0..=1.0).contains(&fraction) => fraction,
        (Some(fraction), None) => {
            return Err(ServeError::invalid_params(
                method,
                "minFraction",
                format!("{fraction} is not from 0 to 1"),
            ));
        }
        (None, Some(0)) => {
            return Err(ServeError::invalid_params(method, "width", "0 pixels"));
        }
        (None, width) => 1.0 / f64::from(width.unwrap_or(2000)),
    };
    let max_frames = ask.max_frames.unwrap_or(10_000);
    if max_frames == 0 || max_frames > LIMITS.max_flame_frames {
        return Err(ServeError::invalid_params(
            method,
            "maxFrames",
            format!(
                "{max_frames} is not from 1 to limits.maxFlameFrames ({})",
                LIMITS.max_flame_frames
            ),
        ));
    }
    let mut options = FlameOptions::default();
    options.threads = threads;
    options.node = node;
    options.min_fraction = min_fraction;
    options.max_frames = max_frames;
    options.stop = Some(Arc::clone(&request.cancel));
    options.path = ask.path.clone().unwrap_or_default();
    Ok(options)
}

/// A library flame graph as the protocol's.
fn flame_result(graph: tracetree::export::stacks::flame::FlameGraph) -> FlameResult {
    FlameResult {
        frames: graph
            .frames
            .into_iter()
            .map(|frame| FlameFrame {
                name: frame.name.to_string(),
                depth: frame.depth,
                parent: frame.parent,
                total: frame.total,
                self_weight: frame.self_weight,
                other: frame.other,
            })
            .collect(),
        threshold: graph.threshold,
        left_out: graph.left_out,
        truncated: graph.truncated,
        tracepoints: graph.tracepoints,
    }
}

/// What a flame request computes on the tree a trace is served as.
trait FlameCompute {
    type Summary;

    fn compute<V: Navigate>(
        &self,
        reader: &V,
        options: &tracetree::export::stacks::flame::FlameOptions<V::Node>,
        progress: &(dyn Fn(u64) + Sync),
    ) -> tracetree::Result<Self::Summary>;
}

/// A flame graph.
struct Graph;

impl FlameCompute for Graph {
    type Summary = tracetree::export::stacks::flame::FlameGraph;

    fn compute<V: Navigate>(
        &self,
        reader: &V,
        options: &tracetree::export::stacks::flame::FlameOptions<V::Node>,
        progress: &(dyn Fn(u64) + Sync),
    ) -> tracetree::Result<Self::Summary> {
        tracetree::export::stacks::flame::FlameGraph::build(reader, options, progress)
    }
}

/// The sandwich of a frame.
struct SandwichOf<'a>(&'a str);

impl FlameCompute for SandwichOf<'_> {
    /// Callers, callees.
    type Summary = (
        tracetree::export::stacks::flame::FlameGraph,
        tracetree::export::stacks::flame::FlameGraph,
    );

    fn compute<V: Navigate>(
        &self,
        reader: &V,
        options: &tracetree::export::stacks::flame::FlameOptions<V::Node>,
        progress: &(dyn Fn(u64) + Sync),
    ) -> tracetree::Result<Self::Summary> {
        tracetree::export::stacks::flame::FlameGraph::sandwich(reader, self.0, options, progress)
    }
}

/// Runs `compute` (a flame graph or a sandwich) on the open trace `id`, as
/// it is served (the reader or its view), over the scope and bounds `ask`
/// names, with work done progress titled `title`.
fn flame_request<C: FlameCompute>(
    session: &Session,
    request: &Request,
    id: &str,
    ask: &FlameAsk<'_>,
    token: Option<&Value>,
    title: &str,
    compute: C,
) -> Result<C::Summary, ServeError> {
    let method = request.method.as_str();
    let trace = session.traces.get(method, id)?;
    on_tree!(trace, reader, {
        let options = flame_options(method, &trace, reader, request, ask)?;
        let progress = Progress::begin(session, token, title);
        let walked = std::sync::atomic::AtomicU64::new(0);
        compute
            .compute(reader, &options, &|n| {
                let total = walked.fetch_add(n, Ordering::Relaxed) + n;
                progress.report_every(&format!("{total} tracepoints walked"));
            })
            .map_err(|e| failed(method, &trace, ask.node, &e))
    })
}

fn flame(session: &Session, request: &Request, params: FlameParams) -> Result<Reply, ServeError> {
    let ask = FlameAsk {
        thread: params.thread,
        node: params.node.as_deref(),
        min_fraction: params.min_fraction,
        width: params.width,
        max_frames: params.max_frames,
        path: params.path,
    };
    let token = params.work_done_token.as_ref();
    let graph = flame_request(
        session,
        request,
        &params.trace,
        &ask,
        token,
        "flame graph",
        Graph,
    )?;
    reply(flame_result(graph))
}

fn sandwich(
    session: &Session,
    request: &Request,
    params: SandwichParams,
) -> Result<Reply, ServeError> {
    if params.method.is_empty() {
        return Err(ServeError::invalid_params(
            &request.method,
            "method",
            "empty: name a frame (Class.method)",
        ));
    }
    let ask = FlameAsk {
        thread: params.thread,
        node: params.node.as_deref(),
        min_fraction: params.min_fraction,
        width: params.width,
        max_frames: params.max_frames,
        path: None,
    };
    let token = params.work_done_token.as_ref();
    let frame = params.method.as_str();
    let sandwich = flame_request(
        session,
        request,
        &params.trace,
        &ask,
        token,
        "sandwich",
        SandwichOf(frame),
    )?;
    let (callers, callees) = sandwich;
    reply(SandwichResult {
        callers: flame_result(callers),
        callees: flame_result(callees),
    })
}

/// LSP's work done progress for a client's `workDoneToken` (nothing
/// without one): begin, reports at most every 100 ms, end.
struct Progress<'s> {
    session: &'s Session,
    token: Option<Value>,
    last: std::sync::Mutex<Instant>,
}

impl<'s> Progress<'s> {
    fn begin(session: &'s Session, token: Option<&Value>, title: &str) -> Self {
        let progress = Progress {
            session,
            token: token.cloned(),
            last: std::sync::Mutex::new(Instant::now()),
        };
        progress.send(json!({"kind": "begin", "title": title, "cancellable": true}));
        progress
    }

    fn send(&self, value: Value) {
        if let Some(token) = &self.token {
            self.session.notify(
                "$/progress",
                ProgressParams {
                    token: token.clone(),
                    value,
                },
            );
        }
    }

    fn report(&self, message: &str) {
        self.send(json!({"kind": "report", "message": message}));
    }

    fn report_every(&self, message: &str) {
        if self.token.is_none() {
            return;
        }
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if last.elapsed() >= Duration::from_millis(100) {
            *last = Instant::now();
            drop(last);
            self.report(message);
        }
    }
}

impl Drop for Progress<'_> {
    /// The end, however the work ended.
    fn drop(&mut self) {
        self.send(json!({"kind": "end"}));
    }
}
