//! A second run of a recorded program, made up: a copy of a trace with a
//! few scattered changes, for diffs to find (benchmarks and tests).

use crate::error::Result;
use crate::model::{TracepointBody, Value};
use crate::tree::TraceTree;
use crate::write::{DumpOptions, DumpWriter};

/// What [`mutate`] changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Mutations {
    /// Leaves whose `int` or `long` value was changed.
    pub edited: u64,
    /// Leaves left out.
    pub removed: u64,
}

/// A copy of `trace` (its reference objects, threads and event ids) in
/// which each leaf, with probability `rate`, has its `int` or `long` value
/// changed (a read or write of another value) or, one time in four, is left
/// out. The same `seed` gives the same copy. The copy is collected in
/// memory, as [`DumpWriter::from_trace`] collects one.
pub fn mutate<T: TraceTree>(trace: &T, rate: f64, seed: u64) -> Result<(DumpWriter, Mutations)> {
    let mut state = seed;
    let mut mutations = Mutations::default();
    let threshold = (rate.clamp(0.0, 1.0) * u64::MAX as f64) as u64;
    let writer =
        DumpWriter::from_trace_edited(trace, DumpOptions::default(), |tracepoint, depth| {
            if depth == 0 || next_random(&mut state) >= threshold {
                return true;
            }
            if next_random(&mut state).is_multiple_of(4) {
                mutations.removed += 1;
                return false;
            }
            if change_value(&mut tracepoint.body) {
                mutations.edited += 1;
            }
            true
        })?;
    Ok((writer, mutations))
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
