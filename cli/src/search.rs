//! `tracetree search`: tracepoints by name or text, with their paths.

use std::io::Write;
use std::path::Path;

use indicatif::{ProgressBar, ProgressStyle};
use tracetree::common::ThreadId;
use tracetree::model::TracepointType;
use tracetree::search::{SearchOptions, search};
use tracetree::{Error, Result};

use crate::cache::Cache;

/// What `search` was asked.
pub struct SearchRequest<'a> {
    pub file: &'a Path,
    pub pattern: String,
    pub threads: Option<Vec<ThreadId>>,
    pub kinds: Vec<String>,
    pub max: usize,
    pub ignore_case: bool,
    pub text: bool,
}

pub fn run(cache: &Cache, request: SearchRequest<'_>, out: &mut impl Write) -> Result<()> {
    let kinds = if request.kinds.is_empty() {
        None
    } else {
        Some(
            request
                .kinds
                .iter()
                .map(|name| kind(name))
                .collect::<Result<Vec<_>>>()?,
        )
    };
    let reader = cache.open_lazy(&cache.trace_path(request.file)?)?;
    let options = SearchOptions {
        ignore_case: request.ignore_case,
        text: request.text,
        threads: request.threads,
        kinds,
        max: request.max,
        ..SearchOptions::new(request.pattern)
    };
    let total: u64 = reader.count_tracepoints()?.values().sum();
    let bar = ProgressBar::new(total).with_style(
        ProgressStyle::with_template(
            "searching {bar:40} {human_pos}/{human_len} tracepoints ({per_sec}, Ctrl-C stops)",
        )
        .expect("valid template"),
    );
    let found = search(&reader, &options, &|n| bar.inc(n));
    bar.finish_and_clear();
    let found = found?;
    for hit in &found.hits {
        write!(
            out,
            "thread {}, event {}, depth {}: ",
            hit.thread, hit.event, hit.depth
        )?;
        for name in &hit.path {
            write!(out, "{name} > ")?;
        }
        writeln!(out, "{}", hit.line)?;
    }
    out.flush()?;
    let shown = found.hits.len() as u64;
    if found.total > shown {
        eprintln!(
            "{} hits in {} tracepoints; the first {shown} shown (--max)",
            found.total, found.scanned
        );
    } else {
        eprintln!("{} hits in {} tracepoints", found.total, found.scanned);
    }
    Ok(())
}

/// A tracepoint kind by its `dump` name (`method_call`, `read_field`, …).
fn kind(name: &str) -> Result<TracepointType> {
    TracepointType::ALL
        .into_iter()
        .find(|kind| kind.name() == name)
        .ok_or_else(|| {
            let names: Vec<&str> = TracepointType::ALL.iter().map(|k| k.name()).collect();
            Error::invalid(
                "--kind",
                format!("no tracepoint kind {name:?} (kinds: {})", names.join(", ")),
            )
        })
}
