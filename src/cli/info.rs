//! `tracetree info`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::format::FORMAT_VERSION;
use crate::format::index::parse_index;
use crate::model::TracepointType;
use crate::read::EagerTrace;
use crate::storage::TraceBytes;

/// The index file of a data file: its path plus `.idx`.
pub fn index_path(data: &Path) -> PathBuf {
    let mut path = data.as_os_str().to_owned();
    path.push(".idx");
    PathBuf::from(path)
}

pub fn run(file: &Path, out: &mut impl Write) -> Result<()> {
    let trace = EagerTrace::open(file)?;
    let data_len = trace.context().data().len();
    writeln!(out, "file: {}", file.display())?;
    writeln!(out, "format version: {FORMAT_VERSION}")?;
    writeln!(out, "data size: {data_len} bytes")?;
    let index = index_path(file);
    match TraceBytes::map(&index) {
        Err(_) => writeln!(out, "index: missing ({})", index.display())?,
        Ok(bytes) => match parse_index(bytes.as_slice()) {
            Ok(cells) => writeln!(
                out,
                "index: {} bytes, {} cells, {}",
                bytes.len(),
                cells.cells.len(),
                if cells.has_footer {
                    "complete"
                } else {
                    "no footer (recorder did not finish)"
                }
            )?,
            Err(error) => writeln!(out, "index: unreadable ({error})")?,
        },
    }
    let report = trace.report();
    if report.is_complete() {
        writeln!(out, "status: complete")?;
    } else {
        writeln!(
            out,
            "status: incomplete: {}EOF, {} half-written block(s) ({} bytes) dropped, {} unfinished call(s)",
            if report.missing_eof { "no " } else { "" },
            report.dropped_blocks,
            report.dropped_bytes,
            report.unfinished_containers
        )?;
    }
    let mut counts: BTreeMap<TracepointType, u64> = BTreeMap::new();
    for node in trace.nodes() {
        *counts.entry(node.tracepoint.tracepoint_type()).or_default() += 1;
    }
    writeln!(out, "threads: {}", trace.threads().len())?;
    for thread in trace.threads() {
        let name = trace
            .context()
            .thread_name(thread.thread)
            .map(|n| n.decode().into_owned());
        writeln!(
            out,
            "  thread {}{}: {} block(s)",
            thread.thread,
            name.map(|n| format!(" ({n})")).unwrap_or_default(),
            thread.blocks
        )?;
    }
    writeln!(out, "tracepoints: {}", trace.nodes().len())?;
    for (kind, count) in counts {
        writeln!(out, "  {}: {count}", kind.name())?;
    }
    Ok(())
}
