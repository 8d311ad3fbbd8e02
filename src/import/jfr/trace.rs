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

use super::input::JfrError;
use super::reader::Chunk;
use super::resolve::{MethodName, Resolver, ThreadInfo};

/// The event type of a traced call.
pub const METHOD_TRACE: &str = "jdk.MethodTrace";

/// One traced call.
#[derive(Debug, Clone)]
pub struct TracedCall {
    /// The calling thread.
    pub thread: Arc<ThreadInfo>,
    /// The method.
    pub method: Arc<MethodName>,
    /// Start, ns since the epoch.
    pub start: i64,
    /// End, ns since the epoch.
    pub end: i64,
    /// (chunk, offset): the order the JVM committed it in.
    pub order: (usize, usize),
}

/// The traced calls of one chunk.
#[derive(Debug, Default)]
pub struct ChunkCalls {
    /// The calls, in file order.
    pub calls: Vec<TracedCall>,
    /// Events with no thread (or one without a Java id) or no method.
    pub skipped: u64,
    /// What stopped the chunk's events early.
    pub damage: Option<JfrError>,
}

/// Collects the traced calls of `chunk`, the `index`th chunk.
pub fn chunk_calls(chunk: &Chunk<'_>, index: usize) -> ChunkCalls {
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
    let mut calls = Vec::new();
    let mut skipped = 0;
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
        let start = chunk.header.timestamp_nanos(start);
        calls.push(TracedCall {
            thread,
            method,
            start,
            end: start.saturating_add(chunk.header.span_nanos(duration)),
            order: (index, record.offset),
        });
    });
    result.calls = calls;
    result.skipped = skipped;
    result
}
