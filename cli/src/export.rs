//! `tracetree export`: a trace in a form other tools read, with a progress
//! bar on stderr.

use std::io::Write;
use std::path::Path;

use clap::ValueEnum;
use indicatif::{ProgressBar, ProgressStyle};
use tracetree::Result;
use tracetree::common::{EventId, ThreadId};
use tracetree::export::stacks::{
    CHROME_EVENTS_FOR_BROWSERS, StackFormat, StackOptions, export_stacks,
};

use crate::cache::Cache;

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
    let trace = cache.trace(request.file)?;
    let reader = cache.open_lazy(&trace.path)?;
    let options = StackOptions {
        threads: request.threads.clone(),
        root: request.root,
        force: request.force,
        ..StackOptions::new(format, trace_name(request.file))
    };
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
    let summary = export_stacks(&reader, request.output, &options, &|n| bar.inc(n));
    bar.finish_and_clear();
    let summary = summary?;
    writeln!(
        out,
        "wrote {} ({} tracepoints in {} threads, {} frames, {} {}, {} bytes)",
        request.output.display(),
        summary.tracepoints,
        summary.threads,
        summary.frames,
        summary.events,
        match format {
            StackFormat::Folded => "stacks",
            StackFormat::Perfetto => "packets",
            StackFormat::Speedscope | StackFormat::Chrome => "events",
        },
        summary.bytes
    )?;
    if format == StackFormat::Chrome && summary.events > CHROME_EVENTS_FOR_BROWSERS {
        eprintln!(
            "warning: {} events is more than browsers' trace viewers load comfortably \
             (about {CHROME_EVENTS_FOR_BROWSERS}); export less with --root EVENT_ID or \
             --thread ID, or use --format perfetto",
            summary.events
        );
    }
    Ok(())
}

#[cfg(feature = "parquet")]
fn parquet(cache: &Cache, request: &ExportRequest<'_>, out: &mut impl Write) -> Result<()> {
    use tracetree::Error;
    use tracetree::export::parquet::{ParquetOptions, ParquetProgress, export_parquet};

    if request.root.is_some() {
        return Err(Error::invalid(
            "--root",
            "it is for the call-stack formats, not parquet",
        ));
    }
    let trace = cache.trace(request.file)?;
    let reader = cache.open_lazy(&trace.path)?;
    let source = trace.imported_from.map_or("v22", |format| format.name());
    let options = ParquetOptions {
        row_group_rows: request.row_group_rows,
        threads: request.threads.clone(),
        force: request.force,
        ..ParquetOptions::new(trace_name(request.file), source)
    };
    // The bar's length grows by each thread's stream as its export starts
    // (at once for up to one thread per worker).
    let bar = progress_bar(0, "{bytes}/{total_bytes} of trace ({bytes_per_sec})");
    let summary = export_parquet(&reader, request.output, &options, &|step| match step {
        ParquetProgress::Started(bytes) => bar.inc_length(bytes),
        ParquetProgress::Read(bytes) => bar.inc(bytes),
    });
    bar.finish_and_clear();
    let summary = summary?;
    let rows: u64 = summary.rows.iter().map(|(_, rows)| rows).sum();
    writeln!(
        out,
        "wrote {} ({rows} rows in {} threads, {} bytes)",
        summary.partition.display(),
        summary.rows.len(),
        summary.bytes
    )?;
    Ok(())
}
