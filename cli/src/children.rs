//! `tracetree children`: one page of a node's children, through the lazy reader.

use std::io::Write;
use std::path::Path;

use tracetree::common::EventId;
use tracetree::print::{Parent, TextFormatter};
use tracetree::{Error, Result};

use crate::cache::Cache;

pub fn run(
    cache: &Cache,
    file: &Path,
    event: EventId,
    from: usize,
    count: usize,
    verbose: bool,
    out: &mut impl Write,
) -> Result<()> {
    let reader = cache.open_lazy(file)?;
    let node = reader
        .node_by_event(event)?
        .ok_or(Error::NoSuchNode(tracetree::NodeProblem::NoEvent(event)))?;
    let parent = reader.node(node)?;
    let total = reader.child_count(node)?;
    let mut formatter = TextFormatter::new(reader.context(), verbose);
    let mut line = String::new();
    formatter.write_tracepoint(
        &mut line,
        parent.tracepoint(),
        parent.footer(),
        Parent::TopLevel,
    )?;
    writeln!(out, "{line}")?;
    let children = reader.children_range(node, from, count)?;
    let shown_from = from.min(total);
    let shown_to = shown_from + children.len();
    // Counts grouped (`2,666`); indexes to type back (`--from`) plain.
    writeln!(
        out,
        "children {shown_from}..{shown_to} of {}:",
        crate::words::group(total as u64)
    )?;
    let as_parent = Parent::of(parent.tracepoint());
    for (i, child) in children.into_iter().enumerate() {
        let data = reader.node(child)?;
        let grandchildren = reader.child_count(child)?;
        line.clear();
        formatter.write_tracepoint(&mut line, data.tracepoint(), data.footer(), as_parent)?;
        writeln!(
            out,
            "  [{}] #{} ({grandchildren} {}) {line}",
            from + i,
            data.tracepoint().event(),
            if grandchildren == 1 {
                "child"
            } else {
                "children"
            }
        )?;
    }
    if shown_to < total {
        writeln!(
            out,
            "... {} more: --from {shown_to}",
            crate::words::group((total - shown_to) as u64)
        )?;
    }
    Ok(())
}
