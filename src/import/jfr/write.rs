//! The import: a recording's method traces or sample trees written into
//! the streaming writer, threads by ascending Java thread id.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::resolve::MethodName;
use super::samples::{EXECUTION_SAMPLE, SampleTree, TRUNCATED, UNKNOWN_THREAD, chunk_samples};
use super::spill::{CallRecord, CallSorter, RUN_RECORDS, RunFile};
use super::trace::{METHOD_TRACE, chunk_calls, order_chunk};
use super::{JfrOptions, JfrResult, Recording};
use crate::common::{MethodId, ThreadId};
use crate::error::{Error, Result};
use crate::import::ImportSummary;
use crate::import::names::{Descriptors, call, void_return};
use crate::model::{Footer, JavaStr, SAMPLE_COUNT_FLAG, TracepointBody, Value};
use crate::write::{StreamingThread, StreamingWriter, ThreadRecorder};

/// Imports the recording at `input` into `writer`.
pub(crate) fn import(
    input: &Path,
    writer: &StreamingWriter,
    options: JfrOptions,
    progress: &dyn Fn(u64),
) -> Result<ImportSummary> {
    let recording = Recording::open(input)?;
    let source = input.display().to_string();
    let mut summary = ImportSummary::default();
    for damage in recording.damage() {
        summary.damaged(&source, damage);
    }
    if recording.chunks().is_empty() {
        let what: Vec<_> = recording.damage().iter().map(|d| d.to_string()).collect();
        return Err(Error::BadSource {
            path: input.to_path_buf(),
            what: format!("no whole chunk of a recording: {}", what.join("; ")),
        });
    }
    for header in recording.chunks().iter().filter(|h| h.unknown_flags() != 0) {
        summary.warnings.push(format!(
            "chunk at offset {} sets feature flags {:#04x} that no JDK writes (only \
             compressed integers and final chunk are known): read as if unset",
            header.offset,
            header.unknown_flags()
        ));
    }
    let mut names = Names::default();
    let traced = !options.samples
        && write_traced_calls(&recording, &source, writer, &mut names, &mut summary)?;
    if !traced {
        write_samples(&recording, &source, writer, &mut names, &mut summary)?;
    }
    summary.map("method_call", summary.calls);
    progress(recording.bytes().len() as u64);
    Ok(summary)
}

/// A chunk's result, or its error recorded as damage.
fn keep<T>(
    chunk: JfrResult<T>,
    offset: u64,
    source: &str,
    summary: &mut ImportSummary,
) -> Option<T> {
    match chunk {
        Ok(chunk) => Some(chunk),
        Err(error) => {
            summary.damaged(
                source,
                format!("chunk at offset {offset}: {error}; chunk skipped"),
            );
            None
        }
    }
}

fn thread_name(id: i64, name: Option<String>) -> String {
    name.unwrap_or_else(|| format!("thread-{id}"))
}

/// The trace's method ids, by method.
#[derive(Default)]
struct Names {
    descriptors: Descriptors,
    methods: FxHashMap<Option<Arc<MethodName>>, MethodId>,
}

impl Names {
    fn method(
        &mut self,
        method: &Option<Arc<MethodName>>,
        writer: &StreamingWriter,
    ) -> Result<MethodId> {
        if let Some(&id) = self.methods.get(method) {
            return Ok(id);
        }
        let id = match method {
            Some(m) => {
                let descriptor = Some(m.descriptor.as_str()).filter(|d| !d.is_empty());
                self.descriptors
                    .add_method(&m.class, &m.name, descriptor, writer)?
            }
            None => self.descriptors.add_method("", TRUNCATED, None, writer)?,
        };
        self.methods.insert(method.clone(), id);
        Ok(id)
    }
}

/// Writes the `jdk.MethodTrace` calls of every thread nested by time,
/// sorted in bounded memory (`spill`): chunks are decoded a batch at a
/// time, one per worker, each worker writing its sort runs as they fill.
/// Returns whether there were any.
fn write_traced_calls(
    recording: &Recording,
    source: &str,
    writer: &StreamingWriter,
    names: &mut Names,
    summary: &mut ImportSummary,
) -> Result<bool> {
    let runs = RunFile::new()?;
    let mut sorter = CallSorter::new(&runs, RUN_RECORDS);
    let mut thread_names: BTreeMap<i64, Option<String>> = BTreeMap::new();
    // Each chunk's methods, by the index its records carry.
    let mut methods: Vec<Vec<MethodId>> = Vec::new();
    let batch = rayon::current_num_threads().max(1);
    let headers = recording.chunks();
    let mut skipped = 0;
    for first in (0..headers.len()).step_by(batch) {
        let range = first..(first + batch).min(headers.len());
        let chunks = recording.map_chunks_in(range.clone(), |index, chunk| {
            chunk_calls(chunk, index, &runs, RUN_RECORDS)
        });
        for ((index, header), chunk) in range.zip(&headers[first..]).zip(chunks) {
            methods.resize_with(index + 1, Vec::new);
            let Some(chunk) = keep(chunk, header.offset, source, summary) else {
                continue;
            };
            if let Some(error) = chunk.spill_error {
                return Err(error);
            }
            skipped += chunk.skipped;
            if let Some(error) = chunk.damage {
                summary.damaged(
                    source,
                    format!("chunk at offset {}: {error}", header.offset),
                );
            }
            for thread in chunk.threads {
                thread_names
                    .entry(thread.java_id.unwrap_or_default())
                    .or_insert_with(|| thread.name.clone());
            }
            methods[index] = chunk
                .methods
                .into_iter()
                .map(|method| names.method(&Some(method), writer))
                .collect::<Result<_>>()?;
            sorter.add_runs(chunk.runs);
            for record in chunk.rest {
                sorter.push(record)?;
            }
        }
    }
    if skipped > 0 {
        summary.warnings.push(format!(
            "{source}: {skipped} {METHOD_TRACE} events name no thread or method: skipped"
        ));
        summary.skip(&format!("{METHOD_TRACE} without thread or method"), skipped);
    }
    let returned = void_return();
    let mut current: Option<(i64, StreamingThread)> = None;
    let mut open: Vec<CallRecord> = Vec::new();
    let close = |thread: &mut StreamingThread, open: &mut Vec<CallRecord>| -> Result<()> {
        for _ in open.drain(..) {
            thread.push_footer(&returned)?;
        }
        Ok(())
    };
    sorter.finish(|record| {
        if current.as_ref().is_none_or(|(id, _)| *id != record.thread) {
            if let Some((_, mut thread)) = current.take() {
                close(&mut thread, &mut open)?;
                thread.finish()?;
            }
            let name = thread_names.get(&record.thread).cloned().flatten();
            let thread = writer.new_thread(thread_name(record.thread, name).as_str())?;
            current = Some((record.thread, thread));
            summary.threads += 1;
        }
        let (_, thread) = current.as_mut().expect("set above");
        while open.last().is_some_and(|top| !top.contains(&record)) {
            open.pop();
            thread.push_footer(&returned)?;
        }
        let method = methods[order_chunk(record.order)][record.method.0 as usize];
        let event = names.descriptors.next_event()?;
        thread.push_tracepoint(&call(thread.thread_id(), event, method))?;
        summary.calls += 1;
        open.push(record);
        Ok(())
    })?;
    if let Some((_, mut thread)) = current {
        close(&mut thread, &mut open)?;
        thread.finish()?;
    }
    Ok(summary.threads > 0)
}

/// Merges the samples of every chunk into one tree per thread and writes
/// the trees.
fn write_samples(
    recording: &Recording,
    source: &str,
    writer: &StreamingWriter,
    names: &mut Names,
    summary: &mut ImportSummary,
) -> Result<()> {
    let chunks = recording.map_chunks(|_, chunk| chunk_samples(chunk));
    // By Java thread id, then (last) the samples that name none.
    let mut trees: BTreeMap<(bool, i64), SampleTree> = BTreeMap::new();
    let (mut without_thread, mut without_stack) = (0, 0);
    for (header, chunk) in recording.chunks().iter().zip(chunks) {
        let Some(chunk) = keep(chunk, header.offset, source, summary) else {
            continue;
        };
        without_thread += chunk.without_thread;
        without_stack += chunk.without_stack;
        if let Some(error) = chunk.damage {
            summary.damaged(
                source,
                format!("chunk at offset {}: {error}", header.offset),
            );
        }
        for (thread, stack, count) in chunk.counts {
            let id = thread.as_ref().and_then(|t| t.java_id);
            trees
                .entry((id.is_none(), id.unwrap_or_default()))
                .or_insert_with(|| {
                    SampleTree::new(match (id, thread) {
                        (Some(id), Some(thread)) => thread_name(id, thread.name.clone()),
                        _ => UNKNOWN_THREAD.to_string(),
                    })
                })
                .add(&stack, count);
        }
    }
    if without_thread > 0 {
        summary.warnings.push(format!(
            "{source}: {without_thread} {EXECUTION_SAMPLE} events name no Java thread: kept under the thread `{UNKNOWN_THREAD}`"
        ));
    }
    if without_stack > 0 {
        summary.warnings.push(format!(
            "{source}: {without_stack} {EXECUTION_SAMPLE} events have no stack trace: skipped"
        ));
        summary.skip(&format!("{EXECUTION_SAMPLE} without stack"), without_stack);
    }
    for tree in trees.into_values() {
        let mut thread = writer.new_thread(&tree.name)?;
        write_tree(&tree, &mut thread, writer, names, summary)?;
        thread.finish()?;
        summary.threads += 1;
    }
    Ok(())
}

fn write_tree(
    tree: &SampleTree,
    thread: &mut StreamingThread,
    writer: &StreamingWriter,
    names: &mut Names,
    summary: &mut ImportSummary,
) -> Result<()> {
    let thread_id: ThreadId = thread.thread_id();
    // `walk` takes two closures over the same thread: a cell lends it.
    let thread = std::cell::RefCell::new(thread);
    tree.walk(
        |node| {
            let method = names.method(&node.method, writer)?;
            let event = names.descriptors.next_event()?;
            let mut tracepoint = call(thread_id, event, method);
            if let TracepointBody::MethodCall { flags, .. } = &mut tracepoint.body {
                *flags |= SAMPLE_COUNT_FLAG;
            }
            summary.calls += 1;
            thread.borrow_mut().push_tracepoint(&tracepoint)
        },
        |node| {
            let samples = i64::try_from(node.samples).unwrap_or(i64::MAX);
            thread.borrow_mut().push_footer(&Footer::MethodCall {
                result: Value::Long(samples),
                exception: JavaStr::new(""),
            })
        },
    )
}
