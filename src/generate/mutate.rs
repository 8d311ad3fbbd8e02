//! A second run of a recorded program, made up: a copy of a trace with a
//! few scattered changes, for diffs to find (benchmarks and tests),
//! streamed to a file.

use std::path::Path;

use crate::common::ThreadId;
use crate::error::Result;
use crate::model::{Footer, JavaStr, TracepointBody, TracepointType, Value};
use crate::tree::{TraceTree, Visit, VisitDetail};
use crate::write::{StreamingWriter, for_each_reference};

/// What [`mutate`] changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Mutations {
    /// Leaves whose `int` or `long` value was changed.
    pub edited: u64,
    /// Leaves left out.
    pub removed: u64,
}

/// Writes at `path` (its index beside it, as `path` + `.idx`) a copy of
/// `trace` (its reference objects, threads and event ids) in which each
/// leaf, with probability `rate`, has its `int` or `long` value changed (a
/// read or write of another value) or, one time in four, is left out. The
/// same `seed` gives the same copy. The copy is streamed, each thread in
/// turn through one walk of it, in blocks of the streaming writer's size:
/// memory stays small whatever the trace's size. Reference objects are
/// written where first used (those only left-out leaves named are left
/// out); containers never finished are closed as
/// [`DumpWriter::from_trace`](crate::write::DumpWriter::from_trace) closes
/// them.
pub fn mutate<T: TraceTree>(trace: &T, rate: f64, seed: u64, path: &Path) -> Result<Mutations> {
    let mut state = seed;
    let mut mutations = Mutations::default();
    let threshold = (rate.clamp(0.0, 1.0) * u64::MAX as f64) as u64;
    let writer = StreamingWriter::create(path)?;
    for_each_reference(trace.context(), |object| writer.add_reference(object))?;
    for (position, thread) in trace.thread_ids().into_iter().enumerate() {
        let name = trace
            .context()
            .thread_name(thread)
            .cloned()
            .unwrap_or_else(|| JavaStr::new(""));
        let id = i32::try_from(position)
            .map_err(|_| crate::Error::limit("threads", position, i32::MAX))?;
        let mut out = writer.new_thread_with_id(ThreadId(id), name)?;
        // Containers open in the copy: their footer (`None`: never
        // finished), type and count of children in the trace.
        let mut open: Vec<(Option<Footer<'static>>, TracepointType, i32)> = Vec::new();
        let close =
            |out: &mut crate::write::StreamingThread,
             (footer, kind, children): (Option<Footer<'static>>, TracepointType, i32)| {
                out.push_footer(&footer.unwrap_or_else(|| match kind {
                    TracepointType::MethodCall => Footer::unfinished_method(),
                    TracepointType::Loop => Footer::Loop {
                        iterations: children,
                    },
                    _ => Footer::LoopIteration,
                }))
            };
        let roots = trace.roots(thread)?;
        trace.walk_visit(&roots, None, VisitDetail::default(), |visit| {
            let Visit::Node {
                depth,
                tracepoint,
                footer,
                ..
            } = visit
            else {
                return Ok(());
            };
            while open.len() > depth {
                if let Some(closed) = open.pop() {
                    close(&mut out, closed)?;
                }
            }
            if let Some((_, _, children)) = open.last_mut() {
                *children = children.saturating_add(1);
            }
            if tracepoint.is_container() {
                out.push_tracepoint(tracepoint)?;
                let footer = footer.map(|footer| footer.clone().into_owned());
                open.push((footer, tracepoint.tracepoint_type(), 0));
                return Ok(());
            }
            if depth == 0 || next_random(&mut state) >= threshold {
                return out.push_tracepoint(tracepoint);
            }
            if next_random(&mut state).is_multiple_of(4) {
                mutations.removed += 1;
                return Ok(());
            }
            let mut tracepoint = tracepoint.clone();
            if change_value(&mut tracepoint.body) {
                mutations.edited += 1;
            }
            out.push_tracepoint(&tracepoint)
        })?;
        while let Some(closed) = open.pop() {
            close(&mut out, closed)?;
        }
        out.finish()?;
    }
    writer.close()?;
    Ok(mutations)
}

/// Changes a leaf's `int` or `long` value; whether it had one.
fn change_value(body: &mut TracepointBody<'_>) -> bool {
    let value = match body {
        TracepointBody::ReadArray { value, .. }
        | TracepointBody::WriteArray { value, .. }
        | TracepointBody::ReadLocal { value, .. }
        | TracepointBody::WriteLocal { value, .. }
        | TracepointBody::ReadField { value, .. }
        | TracepointBody::WriteField { value, .. } => value,
        _ => return false,
    };
    match value {
        Value::Int(v) => *v = v.wrapping_add(1),
        Value::Long(v) => *v = v.wrapping_add(1),
        _ => return false,
    }
    true
}

/// SplitMix64.
fn next_random(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
