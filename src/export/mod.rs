//! Traces in the forms other tools read, each streamed from walks of the
//! lazy reader with memory bounded by configuration.
//!
//! - [`stacks`]: call stacks for profilers' viewers: folded stacks
//!   (inferno, `flamegraph.pl`), speedscope, Chrome's Trace Event JSON and
//!   Perfetto's protobuf trace.
//! - `parquet` (cargo feature `parquet`): a Hive-partitioned Parquet
//!   dataset, one row per tracepoint, for DuckDB, DataFusion and Spark.

#[cfg(feature = "parquet")]
pub mod parquet;
pub mod stacks;

use crate::common::ThreadId;
use crate::error::Result;

/// The threads `wanted` names, each checked against the trace's (all of
/// them when `None`).
pub(crate) fn selected_threads(
    reader: &impl crate::tree::TraceTree,
    wanted: Option<&[ThreadId]>,
) -> Result<Vec<ThreadId>> {
    crate::tree::select_threads(&reader.thread_ids(), wanted)
}

/// Appends `value` as a base-128 varint (ULEB128): the least significant
/// seven bits first, the high bit set on every byte but the last.
/// Protobuf's varints (Perfetto) and the headers of Parquet's RLE runs.
pub(crate) fn push_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}
