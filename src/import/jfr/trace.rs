//! `jdk.MethodTrace` events (JDK 25 and later) as exact calls.
//!
//! Each event is one call: its method, its thread, its start and duration.
//! The JVM commits an event when its call returns, so callees come before
//! their callers in the file; the calls are therefore collected (per chunk,
//! in parallel), converted to ns as the JDK converts ticks, then sorted per
//! thread by start, longer first, and for equal intervals the one committed
//! later (the caller) first (in bounded memory: `spill`); a stack of open
//! calls nests each call under the innermost open call containing it.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::input::JfrError;
use super::reader::Chunk;
use super::resolve::{MethodName, Resolver, ThreadInfo};
use super::spill::{CallRecord, CallSorter, Run, RunFile};
use crate::common::MethodId;
use crate::error::Error;

/// The event type of a traced call.
pub const METHOD_TRACE: &str = "jdk.MethodTrace";

/// The traced calls of one chunk, as sort records: those that filled the
/// chunk's sort buffer already written as runs, the rest in memory. A
/// record's method is an index into [`methods`](Self::methods), its order
/// the chunk's index (bits 40 and up) and the event's offset.
#[derive(Debug, Default)]
pub struct ChunkCalls {
    /// Runs of records written to the shared run file.
    pub(super) runs: Vec<Run>,
    /// The records not written yet.
    pub(super) rest: Vec<CallRecord>,
    /// The chunk's methods, by the index its records carry.
    pub methods: Vec<Arc<MethodName>>,
    /// The chunk's calling threads, one per Java id.
    pub threads: Vec<Arc<ThreadInfo>>,
    /// Events with no thread (or one without a Java id) or no method.
    pub skipped: u64,
    /// What stopped the chunk's events early.
    pub damage: Option<JfrError>,
    /// A failure writing a run (the calls are then incomplete).
    pub spill_error: Option<Error>,
}

/// The sort key of a call committed at `offset` of the `chunk`th chunk.
pub(super) fn commit_order(chunk: usize, offset: usize) -> u64 {
    ((chunk as u64) << 40) | (offset as u64).min((1 << 40) - 1)
}

/// The chunk a [`commit_order`] names.
pub(super) fn order_chunk(order: u64) -> usize {
    (order >> 40) as usize
}

/// Collects the traced calls of `chunk`, the `index`th chunk, as sort
/// records, writing a run to `runs` each time `run_records` of them
/// gather.
pub(super) fn chunk_calls(
    chunk: &Chunk<'_>,
    index: usize,
    runs: &RunFile,
    run_records: usize,
) -> ChunkCalls {
    let mut result = ChunkCalls::default();
    let Some(class) = chunk.metadata.class_named(METHOD_TRACE) else {
        return result;
    };
    let event = chunk.metadata.class(class);
    let positions = ["startTime", "duration", "eventThread", "method"].map(|n| event.field(n));
    let [
        Some(start_at),
        Some(duration_at),
        Some(thread_at),
        Some(method_at),
    ] = positions
    else {
        return result;
    };
    let mut resolver = Resolver::new(chunk);
    let mut sorter = CallSorter::new(runs, run_records);
    let mut method_index: FxHashMap<*const MethodName, u32> = FxHashMap::default();
    let mut thread_seen: FxHashMap<i64, ()> = FxHashMap::default();
    let mut skipped = 0;
    let mut spill_error = None;
    result.damage = chunk.for_each_event(class, |record, fields| {
        let start = fields[start_at].as_i64().unwrap_or(0);
        let duration = fields[duration_at].as_i64().unwrap_or(0);
        let thread = fields[thread_at]
            .as_ref_key()
            .and_then(|k| resolver.thread(k));
        let method = fields[method_at]
            .as_ref_key()
            .and_then(|k| resolver.method(k));
        let (Some(thread), Some(method)) = (thread.filter(|t| t.java_id.is_some()), method) else {
            skipped += 1;
            return;
        };
        if spill_error.is_some() {
            return;
        }
        let java_id = thread.java_id.unwrap_or_default();
        if thread_seen.insert(java_id, ()).is_none() {
            result.threads.push(thread);
        }
        let local = *method_index.entry(Arc::as_ptr(&method)).or_insert_with(|| {
            result.methods.push(method.clone());
            (result.methods.len() - 1) as u32
        });
        let start = chunk.header.timestamp_nanos(start);
        let pushed = sorter.push(CallRecord {
            thread: java_id,
            start,
            end: start.saturating_add(chunk.header.span_nanos(duration)),
            order: commit_order(index, record.offset),
            method: MethodId(local as i32),
        });
        if let Err(error) = pushed {
            spill_error = Some(error);
        }
    });
    (result.runs, result.rest) = sorter.into_parts();
    result.skipped = skipped;
    result.spill_error = spill_error;
    result
}
