//! `tracetree diff`: two traces compared as the recorder's library compares
//! them, the diff written as a packed diff trace, and a summary per thread.

use std::io::Write;
use std::path::Path;

use indicatif::ProgressBar;
use tracetree::diff::{DiffInput, DiffOptions, DiffSummary, ThreadMatching, UnmatchedThreads};
use tracetree::{Error, Result, diff_traces};

use crate::cache::Cache;
use crate::output::Output;

/// What the command line asks of a diff.
pub struct DiffArgs<'a> {
    pub left: &'a Path,
    pub right: &'a Path,
    pub output: &'a Path,
    pub options: DiffOptions,
    pub force: bool,
    pub summary: bool,
}

/// Parses `--map` pairs: names, or indices with `--match index`.
pub fn thread_matching(by_index: bool, maps: &[String]) -> Result<ThreadMatching> {
    if maps.is_empty() {
        return Ok(if by_index {
            ThreadMatching::ByIndex
        } else {
            ThreadMatching::ByName
        });
    }
    let pairs = maps
        .iter()
        .map(|map| {
            map.split_once('=')
                .ok_or_else(|| Error::invalid("--map", format!("{map:?} is not LEFT=RIGHT")))
        })
        .collect::<Result<Vec<_>>>()?;
    if !by_index {
        let pairs = pairs
            .into_iter()
            .map(|(l, r)| (l.to_string(), r.to_string()))
            .collect();
        return Ok(ThreadMatching::NameMap(pairs));
    }
    let index = |text: &str| {
        text.parse::<usize>().map_err(|_| {
            Error::invalid(
                "--map",
                format!("{text:?} is not a thread index (--match index maps indices)"),
            )
        })
    };
    let pairs = pairs
        .into_iter()
        .map(|(l, r)| Ok((index(l)?, index(r)?)))
        .collect::<Result<_>>()?;
    Ok(ThreadMatching::IndexMap(pairs))
}

/// The parsed `--unmatched` value.
pub fn unmatched(value: crate::UnmatchedArg) -> UnmatchedThreads {
    match value {
        crate::UnmatchedArg::Diff => UnmatchedThreads::Diff,
        crate::UnmatchedArg::Skip => UnmatchedThreads::Skip,
        crate::UnmatchedArg::Error => UnmatchedThreads::Error,
    }
}

pub fn run(cache: &Cache, args: DiffArgs<'_>, out: &mut impl Write) -> Result<()> {
    let written = Output::file(args.output, args.force)?;
    let left_path = cache.trace_path(args.left)?;
    let right_path = cache.trace_path(args.right)?;
    let left = cache.open_lazy(&left_path)?;
    let right = cache.open_lazy(&right_path)?;
    let name = |path: &Path| cache.name(path);
    let (left_name, right_name) = (name(args.left), name(args.right));
    let left_input = DiffInput::from_file(&left, &left_name, &left_path)?;
    let right_input = DiffInput::from_file(&right, &right_name, &right_path)?;
    let bar =
        ProgressBar::new_spinner().with_message(format!("diffing {left_name} and {right_name}"));
    bar.enable_steady_tick(std::time::Duration::from_millis(100));
    let summary = diff_traces(left_input, right_input, &args.options, &written.path);
    bar.finish_and_clear();
    let summary = summary?;
    let to_stdout = written.is_stdout();
    written.finish()?;
    for warning in &summary.warnings {
        eprintln!("tracetree: warning: {warning}");
    }
    let text = summary_text(&summary, args.output);
    if args.summary && !to_stdout {
        out.write_all(text.as_bytes())?;
    } else {
        eprint!("{text}");
    }
    Ok(())
}

/// The summary: a line per diff thread with its counts and its first
/// divergence.
pub fn summary_text(summary: &DiffSummary, output: &Path) -> String {
    let mut text = format!(
        "wrote {} ({} tracepoints, {} bytes)\n",
        output.display(),
        summary.tracepoints,
        summary.bytes
    );
    for thread in &summary.threads {
        text.push_str(&format!(
            "thread {} ({}): {} unchanged, {} removed, {} added, {} edited\n",
            thread.thread,
            thread.name,
            thread.unchanged,
            thread.removed,
            thread.added,
            thread.edited
        ));
        match &thread.first_divergence {
            None => text.push_str("  no difference\n"),
            Some(first) => {
                let id = |event: Option<tracetree::common::EventId>| {
                    event.map_or_else(|| "none".to_string(), |e| e.to_string())
                };
                let path = if first.path.is_empty() {
                    "(top level)".to_string()
                } else {
                    first.path.join(" > ")
                };
                text.push_str(&format!(
                    "  first divergence: {:?} at diff event {} (left event {}, right event {}) in {path}\n",
                    first.status,
                    first.event,
                    id(first.left),
                    id(first.right)
                ));
            }
        }
    }
    text
}
