//! `tracetree dump --format jsonl`: one JSON object per tracepoint, depth-first
//! pre-order per thread, threads ascending by thread id.
//!
//! Keys: `thread`, `depth` (root = 0), `event_id`, `kind`, `children` (direct
//! children), `line` (of the code location; 0 when unknown), `file` (when
//! known), `method` (`Class.name`, calls only), `unfinished` (calls the
//! recorder never finished), `incomplete` (calls flagged incomplete).

use std::io::Write;

use std::borrow::Cow;

use serde::Serialize;

use crate::common::ThreadId;
use crate::error::{Error, Result};
use crate::format::TraceContext;
use crate::model::{Tracepoint, TracepointBody};
use crate::print::ordered::{OrderedStats, Parallelism, run_ordered};
use crate::print::plan::{Cut, Source, plan};
use crate::tree::{TraceTree, Visit};

/// Bytes a walk gathers before it writes them out.
const GATHER_BYTES: usize = 64 * 1024;

/// Writes the JSON-lines dump of `threads` (all threads when `None`), on
/// all cores ([`Parallelism::default`]).
pub fn write_jsonl<T>(tree: &T, threads: Option<&[ThreadId]>, out: &mut impl Write) -> Result<()>
where
    T: TraceTree,
{
    write_jsonl_with(tree, threads, &Parallelism::default(), out).map(|_| ())
}

/// [`write_jsonl`] with the work shared out as `parallelism` says; the
/// output is the same byte for byte whatever it says.
pub fn write_jsonl_with<T>(
    tree: &T,
    threads: Option<&[ThreadId]>,
    parallelism: &Parallelism,
    out: &mut impl Write,
) -> Result<OrderedStats>
where
    T: TraceTree,
{
    let all = tree.thread_ids();
    let threads = threads.unwrap_or(&all);
    if parallelism.workers <= 1 {
        let mut buffer = Vec::with_capacity(GATHER_BYTES + 4096);
        for &thread in threads {
            let roots = tree.roots(thread)?;
            tree.walk_visit(&roots, None, true, |step| {
                dump_step(tree.context(), thread, step, 0, &mut buffer, out)
            })?;
        }
        out.write_all(&buffer)?;
        return Ok(OrderedStats::default());
    }
    let cut = Cut {
        headers: false,
        parents: false,
        max_depth: None,
    };
    let parts = plan(tree, threads, cut)?;
    run_ordered(
        parts,
        parallelism,
        || Vec::with_capacity(GATHER_BYTES + 4096),
        |buffer, part, sink| {
            match &part.source {
                Source::Header { .. } => {}
                Source::Line(node) => {
                    let children = tree.child_count(*node)?;
                    tree.visit(*node, |tracepoint, footer| {
                        write_record(
                            tree.context(),
                            part.thread,
                            part.depth,
                            children,
                            tracepoint,
                            footer.is_some(),
                            buffer,
                        )
                    })??;
                }
                Source::Trees(_) | Source::Children { .. } => {
                    part.walk(tree, None, true, |step| {
                        dump_step(tree.context(), part.thread, step, part.depth, buffer, sink)
                    })?;
                }
            }
            sink.write_all(buffer)?;
            buffer.clear();
            Ok(())
        },
        out,
    )
}

/// The record of one step of a walk whose depths start at `depth`,
/// gathered in `buffer` and written to `out` every [`GATHER_BYTES`].
fn dump_step<N>(
    context: &TraceContext,
    thread: ThreadId,
    step: Visit<'_, N>,
    depth: usize,
    buffer: &mut Vec<u8>,
    out: &mut impl Write,
) -> Result<()> {
    let Visit::Node {
        depth: below,
        tracepoint,
        footer,
        children,
        ..
    } = step
    else {
        return Ok(());
    };
    write_record(
        context,
        thread,
        depth + below,
        children.unwrap_or_default(),
        tracepoint,
        footer.is_some(),
        buffer,
    )?;
    if buffer.len() >= GATHER_BYTES {
        out.write_all(buffer)?;
        buffer.clear();
    }
    Ok(())
}

/// Appends one record and its line end to `buffer`.
fn write_record(
    context: &TraceContext,
    thread: ThreadId,
    depth: usize,
    children: usize,
    tracepoint: &Tracepoint<'_>,
    finished: bool,
    buffer: &mut Vec<u8>,
) -> Result<()> {
    let unfinished = tracepoint.is_container() && !finished;
    let record = record(context, thread, depth, children, tracepoint, unfinished);
    serde_json::to_writer(&mut *buffer, &record).map_err(|e| Error::Stream(e.into()))?;
    buffer.push(b'\n');
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
    };
    if let TracepointBody::MethodCall { method, flags, .. } = &tracepoint.body {
        record.method = context.method(*method).ok().map(|method| {
            let class = context
                .class(method.class)
                .map(|c| c.name.decode().into_owned())
                .unwrap_or_default();
            format!("{class}.{}", method.name.decode())
        });
        record.incomplete = flags & 1 != 0;
    }
    record
}
