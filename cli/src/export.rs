//! `tracetree export`: a trace in a form other tools read, with a progress
//! bar on stderr.

use std::io::Write;
use std::path::Path;

use clap::ValueEnum;
use indicatif::{ProgressBar, ProgressStyle};
use tracetree::Result;
use tracetree::common::{EventId, ThreadId};
use tracetree::export::stacks::{StackFormat, StackOptions};
use tracetree::model::DiffStatus;

use crate::cache::Cache;
use crate::output::{Output, check_folder, is_stdout, not_a_stream};
use crate::words::{count, group};

/// The formats of `export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// Folded stacks (`thread;outer;inner WEIGHT` lines) for inferno and
    /// flamegraph.pl, weighted by tracepoints (or JFR samples).
    Folded,
    /// speedscope's JSON file format, one evented profile per thread.
    Speedscope,
    /// Chrome's Trace Event JSON (chrome://tracing, Perfetto's UI).
    Chrome,
    /// Perfetto's protobuf trace, a track per thread.
    Perfetto,
    /// A Hive-partitioned Parquet dataset (`OUT/trace=NAME/thread=N/part-K.parquet`
    /// and `OUT/trace=NAME/threads.parquet`) for DuckDB, DataFusion and Spark.
    #[cfg(feature = "parquet")]
    Parquet,
}

/// What `export` was asked.
pub struct ExportRequest<'a> {
    pub file: &'a Path,
    pub format: ExportFormat,
    pub output: &'a Path,
    pub threads: Option<Vec<ThreadId>>,
    pub root: Option<EventId>,
    pub diff: Option<Vec<DiffStatus>>,
    #[cfg(feature = "parquet")]
    pub row_group_rows: usize,
    pub force: bool,
}

pub fn run(cache: &Cache, request: &ExportRequest<'_>, out: &mut impl Write) -> Result<()> {
    let format = match request.format {
        ExportFormat::Folded => StackFormat::Folded,
        ExportFormat::Speedscope => StackFormat::Speedscope,
        ExportFormat::Chrome => StackFormat::Chrome,
        ExportFormat::Perfetto => StackFormat::Perfetto,
        #[cfg(feature = "parquet")]
        ExportFormat::Parquet => return parquet(cache, request, out),
    };
    stacks(cache, request, format, out)
}

/// A command's closing `wrote ...` line: on stdout, or on stderr when the
/// output itself went to stdout.
pub fn summary_line(line: &str, to_stderr: bool, out: &mut impl Write) -> Result<()> {
    if to_stderr {
        eprintln!("{line}");
    } else {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// The trace's name in what is written: the file's stem.
fn trace_name(file: &Path) -> String {
    file.file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_else(|| "trace".to_string())
}

/// A progress bar over `total`, its counter drawn by `counter` (an
/// indicatif template: `{human_pos}`, `{bytes}`, …).
fn progress_bar(total: u64, counter: &str) -> ProgressBar {
    ProgressBar::new(total).with_style(
        ProgressStyle::with_template(&format!("exporting {{bar:40}} {counter}"))
            .expect("valid template"),
    )
}

fn stacks(
    cache: &Cache,
    request: &ExportRequest<'_>,
    format: StackFormat,
    out: &mut impl Write,
) -> Result<()> {
    let output = Output::file(request.output, request.force)?;
    let trace = cache.trace(request.file)?;
    let reader = cache.open_lazy(&trace.path)?;
    let mut options = StackOptions::new(format, trace_name(request.file));
    options.threads = request.threads.clone();
    options.root = request.root;
    options.diff = request.diff.clone();
    options.force = request.force;
    // A subtree's size is known only once walked: a count without a bar.
    let bar = match request.root {
        None => progress_bar(
            reader.count_tracepoints()?.values().sum(),
            "{human_pos}/{human_len} tracepoints ({per_sec})",
        ),
        Some(_) => ProgressBar::new_spinner().with_style(
            ProgressStyle::with_template("exporting {spinner} {human_pos} tracepoints ({per_sec})")
                .expect("valid template"),
        ),
    };
    let summary = options.export(&reader, &output.path, &|n| bar.inc(n));
    bar.finish_and_clear();
    let summary = summary?;
    let to_stdout = output.is_stdout();
    output.finish()?;
    let line = format!(
        "wrote {} ({} in {}, {}, {}, {} bytes)",
        request.output.display(),
        count(summary.tracepoints, "tracepoint"),
        count(summary.threads as u64, "thread"),
        count(summary.frames as u64, "frame"),
        count(
            summary.events,
            match format {
                StackFormat::Folded => "stack",
                StackFormat::Perfetto => "packet",
                StackFormat::Speedscope | StackFormat::Chrome => "event",
            }
        ),
        group(summary.bytes)
    );
    summary_line(&line, to_stdout, out)?;
    if format == StackFormat::Chrome && summary.events > StackFormat::CHROME_EVENTS_FOR_BROWSERS {
        eprintln!(
            "warning: {} events is more than browsers' trace viewers load comfortably \
             (about {}); export less with --root EVENT_ID or --thread ID, or use --format \
             perfetto",
            group(summary.events),
            group(StackFormat::CHROME_EVENTS_FOR_BROWSERS)
        );
    }
    Ok(())
}

#[cfg(feature = "parquet")]
fn parquet(cache: &Cache, request: &ExportRequest<'_>, out: &mut impl Write) -> Result<()> {
    use tracetree::Error;
    use tracetree::export::parquet::ParquetOptions;

    if request.root.is_some() {
        return Err(Error::invalid(
            "--root",
            "it is for the call-stack formats, not parquet",
        ));
    }
    if request.diff.is_some() {
        return Err(Error::invalid(
            "--diff",
            "it is for the call-stack formats, not parquet",
        ));
    }
    if is_stdout(request.output) {
        return Err(not_a_stream("a Parquet dataset (a folder of files)"));
    }
    check_folder(request.output)?;
    if request.output.exists() && !request.output.is_dir() {
        return Err(Error::io(
            request.output,
            std::io::Error::other("not a folder: a Parquet dataset is a folder of files"),
        ));
    }
    let trace = cache.trace(request.file)?;
    let reader = cache.open_lazy(&trace.path)?;
    let source = trace.imported_from.map_or("v22", |format| format.name());
    let mut options = ParquetOptions::new(trace_name(request.file), source);
    options.row_group_rows = request.row_group_rows;
    options.threads = request.threads.clone();
    options.force = request.force;
    // The bytes read sum to the exported threads' streams.
    let total: u64 = reader
        .threads()
        .iter()
        .filter(|info| {
            options
                .threads
                .as_ref()
                .is_none_or(|t| t.contains(&info.id))
        })
        .map(|info| info.bytes)
        .sum();
    let bar = progress_bar(total, "{bytes}/{total_bytes} of trace ({bytes_per_sec})");
    let summary = options.export(&reader, request.output, &|bytes| bar.inc(bytes));
    bar.finish_and_clear();
    let summary = summary?;
    let rows: u64 = summary.rows.iter().map(|(_, rows)| rows).sum();
    writeln!(
        out,
        "wrote {} ({} in {}, {} bytes)",
        summary.partition.display(),
        count(rows, "row"),
        count(summary.rows.len() as u64, "thread"),
        group(summary.bytes)
    )?;
    Ok(())
}
