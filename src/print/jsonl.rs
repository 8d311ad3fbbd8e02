//! `tracetree dump --format jsonl`: one JSON object per tracepoint, depth-first
//! pre-order per thread, threads ascending by thread id.
//!
//! Keys: `thread`, `depth` (root = 0), `event_id`, `kind`, `children` (direct
//! children), `line` (of the code location; 0 when unknown), `file` (when
//! known), `method` (`Class.name`, calls only), `unfinished` (calls the
//! recorder never finished), `incomplete` (calls flagged incomplete),
//! `samples` (nodes of a merged sample tree: the samples passing through).

use std::io::Write;

use std::borrow::Cow;

use serde::Serialize;

use crate::common::ThreadId;
use crate::error::{Error, Result};
use crate::format::TraceContext;
use crate::model::{Footer, SAMPLE_COUNT_FLAG, Tracepoint, TracepointBody, Value};
use crate::tree::{TraceTree, Visit};

/// Writes the JSON-lines dump of `threads` (all threads when `None`).
pub fn write_jsonl<T: TraceTree>(
    tree: &T,
    threads: Option<&[ThreadId]>,
    out: &mut impl Write,
) -> Result<()> {
    let all = tree.thread_ids();
    let threads = threads.unwrap_or(&all);
    for &thread in threads {
        let roots = tree.roots(thread)?;
        tree.walk_visit(&roots, None, true, |step| {
            let Visit::Node {
                depth,
                tracepoint,
                footer,
                children,
                ..
            } = step
            else {
                return Ok(());
            };
            let unfinished = tracepoint.is_container() && footer.is_none();
            let mut record = record(
                tree.context(),
                thread,
                depth,
                children.unwrap_or_default(),
                tracepoint,
                unfinished,
            );
            record.samples = sample_count(tracepoint, footer);
            serde_json::to_writer(&mut *out, &record).map_err(|e| Error::Stream(e.into()))?;
            out.write_all(b"\n")?;
            Ok(())
        })?;
    }
    Ok(())
}

/// One line of the dump.
#[derive(Serialize)]
struct Record<'a> {
    thread: i32,
    depth: usize,
    event_id: i32,
    kind: &'static str,
    children: usize,
    line: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    method: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    incomplete: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    unfinished: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    samples: Option<i64>,
}

/// The sample count of a call flagged [`SAMPLE_COUNT_FLAG`]: its result.
pub(crate) fn sample_count(
    tracepoint: &Tracepoint<'_>,
    footer: Option<&Footer<'_>>,
) -> Option<i64> {
    match (&tracepoint.body, footer) {
        (
            TracepointBody::MethodCall { flags, .. },
            Some(Footer::MethodCall {
                result: Value::Long(count),
                ..
            }),
        ) if flags & SAMPLE_COUNT_FLAG != 0 => Some(*count),
        _ => None,
    }
}

fn record<'c>(
    context: &'c TraceContext,
    thread: ThreadId,
    depth: usize,
    children: usize,
    tracepoint: &Tracepoint<'_>,
    unfinished: bool,
) -> Record<'c> {
    let location = context.code_location(tracepoint.header.code_location).ok();
    let mut record = Record {
        thread: thread.0,
        depth,
        event_id: tracepoint.event().0,
        kind: tracepoint.tracepoint_type().name(),
        children,
        line: location.map_or(0, |l| l.line),
        file: location
            .and_then(|l| context.string(l.file_name).ok())
            .map(|file| file.decode()),
        method: None,
        incomplete: false,
        unfinished,
        samples: None,
    };
    if let TracepointBody::MethodCall { method, flags, .. } = &tracepoint.body {
        record.method = context.method(*method).ok().map(|method| {
            let class = context
                .class(method.class)
                .map(|c| c.name.decode().into_owned())
                .unwrap_or_default();
            if class.is_empty() {
                method.name.decode().into_owned()
            } else {
                format!("{class}.{}", method.name.decode())
            }
        });
        record.incomplete = flags & 1 != 0;
    }
    record
}
