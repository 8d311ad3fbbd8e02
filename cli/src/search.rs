//! `tracetree search`: tracepoints by name or text, with their paths.

use std::io::Write;
use std::path::Path;

use indicatif::{ProgressBar, ProgressStyle};
use tracetree::common::ThreadId;
use tracetree::model::{DiffStatus, TracepointType};
use tracetree::search::{SearchOptions, SearchResult};
use tracetree::tree::Postprocessed;
use tracetree::{Error, Result};

use crate::Outcome;
use crate::cache::Cache;

/// What `search` was asked.
pub struct SearchRequest<'a> {
    pub file: &'a Path,
    pub pattern: String,
    pub threads: Option<Vec<ThreadId>>,
    pub kinds: Vec<String>,
    pub diff: Option<Vec<DiffStatus>>,
    pub max: usize,
    pub ignore_case: bool,
    pub text: bool,
    pub json: bool,
    pub postprocess: bool,
}

pub fn run(cache: &Cache, request: SearchRequest<'_>, out: &mut impl Write) -> Result<Outcome> {
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
    let mut options = SearchOptions::new(request.pattern);
    options.ignore_case = request.ignore_case;
    options.text = request.text;
    options.threads = request.threads;
    options.kinds = kinds;
    options.diff = request.diff;
    options.max = request.max;
    let total: u64 = reader.count_tracepoints()?.values().sum();
    let bar = ProgressBar::new(total).with_style(
        ProgressStyle::with_template(
            "searching {bar:40} {human_pos}/{human_len} tracepoints ({per_sec}, Ctrl-C stops)",
        )
        .expect("valid template"),
    );
    let progress = |n| bar.inc(n);
    let found = if request.postprocess {
        options
            .search(&Postprocessed::new(&reader), &progress)
            .and_then(|found| write_hits(&found, request.json, out))
    } else {
        options
            .search(&reader, &progress)
            .and_then(|found| write_hits(&found, request.json, out))
    };
    bar.finish_and_clear();
    let (shown, total, scanned) = found?;
    if total > shown {
        eprintln!("{total} hits in {scanned} tracepoints; the first {shown} shown (--max)");
    } else {
        eprintln!("{total} hits in {scanned} tracepoints");
    }
    Ok(if total == 0 {
        Outcome::NoMatch
    } else {
        Outcome::Done
    })
}

/// Writes the hits kept; the hits shown, the hits in all and the
/// tracepoints scanned.
fn write_hits<N>(
    found: &SearchResult<N>,
    json: bool,
    out: &mut impl Write,
) -> Result<(u64, u64, u64)> {
    for hit in &found.hits {
        if json {
            write_json(hit, out)?;
            continue;
        }
        write!(
            out,
            "thread {}, event {}, depth {}: ",
            hit.thread, hit.event, hit.depth
        )?;
        for name in &hit.path {
            write!(out, "{} > ", one_line(name))?;
        }
        writeln!(out, "{}", one_line(&hit.line))?;
    }
    out.flush()?;
    Ok((found.hits.len() as u64, found.total, found.scanned))
}

/// A tracepoint kind by its `dump` name (`method_call`, `read_field`, …).
pub(crate) fn kind(name: &str) -> Result<TracepointType> {
    TracepointType::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = TracepointType::ALL.iter().map(|k| k.name()).collect();
        Error::invalid(
            "--kind",
            format!("no tracepoint kind {name:?} (kinds: {})", names.join(", ")),
        )
    })
}

/// The statuses `--diff` names (`added`, `removed`, `edited`, each once
/// however often named); `None` without `--diff`.
pub(crate) fn diff_statuses(names: Option<&[String]>) -> Result<Option<Vec<DiffStatus>>> {
    let Some(names) = names else {
        return Ok(None);
    };
    let mut statuses = Vec::new();
    for name in names {
        let named = DiffStatus::changes_named(name.trim()).ok_or_else(|| {
            Error::invalid(
                "--diff",
                format!(
                    "no change {name:?} (changes: {}; a bare --diff goes after the trace)",
                    DiffStatus::CHANGE_NAMES.join(", ")
                ),
            )
        })?;
        for status in named {
            if !statuses.contains(status) {
                statuses.push(*status);
            }
        }
    }
    Ok(Some(statuses))
}

/// `text` on one line: a backslash, a line feed, a carriage return and a
/// tab written as `\\`, `\n`, `\r` and `\t`, so that each hit stays one
/// line for grep and friends.
fn one_line(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains(['\\', '\n', '\r', '\t']) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut line = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\\' => line.push_str("\\\\"),
            '\n' => line.push_str("\\n"),
            '\r' => line.push_str("\\r"),
            '\t' => line.push_str("\\t"),
            c => line.push(c),
        }
    }
    std::borrow::Cow::Owned(line)
}

/// One hit as one JSON object on its line: `thread`, `eventId`, `depth`,
/// `path` (the names of the calls above it, outermost first) and `line`.
fn write_json<N>(hit: &tracetree::search::Hit<N>, out: &mut impl Write) -> Result<()> {
    let mut text = format!(
        "{{\"thread\":{},\"eventId\":{},\"depth\":{},\"path\":[",
        hit.thread, hit.event, hit.depth
    );
    for (at, name) in hit.path.iter().enumerate() {
        if at > 0 {
            text.push(',');
        }
        json_string(name, &mut text);
    }
    text.push_str("],\"line\":");
    json_string(&hit.line, &mut text);
    text.push('}');
    writeln!(out, "{text}")?;
    Ok(())
}

/// `value` as a JSON string, appended to `text`.
fn json_string(value: &str, text: &mut String) {
    use std::fmt::Write as _;
    text.push('"');
    for c in value.chars() {
        match c {
            '"' => text.push_str("\\\""),
            '\\' => text.push_str("\\\\"),
            '\n' => text.push_str("\\n"),
            '\r' => text.push_str("\\r"),
            '\t' => text.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(text, "\\u{:04x}", u32::from(c));
            }
            c => text.push(c),
        }
    }
    text.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hit_with_a_line_feed_stays_one_line() {
        assert_eq!(one_line("a\nb\\c\td"), "a\\nb\\\\c\\td");
        assert_eq!(one_line("plain"), "plain");
        let mut text = String::new();
        json_string("say \"hi\"\n\u{1}", &mut text);
        assert_eq!(text, "\"say \\\"hi\\\"\\n\\u0001\"");
    }
}
