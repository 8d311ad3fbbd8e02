//! `tracetree export`: a trace in a form other tools read, with a progress
//! bar on stderr.

use std::io::Write;
use std::path::Path;

use clap::ValueEnum;
use indicatif::{ProgressBar, ProgressStyle};
use tracetree::Result;
use tracetree::common::ThreadId;

use crate::cache::Cache;

/// The formats of `export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// A Hive-partitioned Parquet dataset (`OUT/trace=NAME/thread=N/part-K.parquet`
    /// and `OUT/trace=NAME/threads.parquet`) for DuckDB, DataFusion and Spark.
    Parquet,
}

/// What `export` was asked.
pub struct ExportRequest<'a> {
    pub file: &'a Path,
    pub format: ExportFormat,
    pub output: &'a Path,
    pub threads: Option<Vec<ThreadId>>,
    pub row_group_rows: usize,
    pub force: bool,
}

pub fn run(cache: &Cache, request: &ExportRequest<'_>, out: &mut impl Write) -> Result<()> {
    match request.format {
        ExportFormat::Parquet => parquet(cache, request, out),
    }
}

fn parquet(cache: &Cache, request: &ExportRequest<'_>, out: &mut impl Write) -> Result<()> {
    use tracetree::export::parquet::{ParquetOptions, export_parquet};

    let trace = cache.trace(request.file)?;
    let reader = cache.open_lazy(&trace.path)?;
    let name = request
        .file
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_else(|| "trace".to_string());
    let source = trace.imported_from.map_or("v22", |format| format.name());
    let options = ParquetOptions {
        row_group_rows: request.row_group_rows,
        threads: request.threads.clone(),
        force: request.force,
        ..ParquetOptions::new(name, source)
    };
    let total: u64 = reader.count_tracepoints()?.values().sum();
    let bar = ProgressBar::new(total).with_style(
        ProgressStyle::with_template("exporting {bar:40} {human_pos}/{human_len} rows ({per_sec})")
            .expect("valid template"),
    );
    let summary = export_parquet(&reader, request.output, &options, &|rows| bar.inc(rows));
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
