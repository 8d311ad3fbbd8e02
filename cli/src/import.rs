//! `tracetree import`: a foreign trace converted into a v22 trace, with a
//! progress bar and a summary on stderr.

use std::io::Write;
use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressStyle};
use tracetree::import::{ImportOptions, ImportSummary, SourceFormat, import_file_with, trace_for};
use tracetree::read::index_path;
use tracetree::{Error, Result};

pub fn run(
    input: &Path,
    output: &Path,
    from: Option<SourceFormat>,
    force: bool,
    samples: bool,
    out: &mut impl Write,
) -> Result<()> {
    if !force && (output.exists() || index_path(output).exists()) {
        return Err(Error::Usage(format!(
            "{} exists (give --force to replace it)",
            output.display()
        )));
    }
    let bar = ProgressBar::new(source_size(input)).with_style(
        ProgressStyle::with_template("importing {bar:40} {bytes}/{total_bytes} ({bytes_per_sec})")
            .expect("valid template"),
    );
    let options = ImportOptions { samples };
    let summary = import_file_with(input, output, from, &options, &|bytes| bar.inc(bytes));
    bar.finish_and_clear();
    report(&summary?);
    writeln!(out, "wrote {}", output.display())?;
    Ok(())
}

/// The bytes of the source, for the progress bar: a file's size, or the
/// sum of a folder's files.
fn source_size(input: &Path) -> u64 {
    match std::fs::read_dir(input) {
        Ok(entries) => entries
            .flatten()
            .filter_map(|e| e.metadata().ok())
            .map(|m| m.len())
            .sum(),
        Err(_) => std::fs::metadata(input).map_or(0, |m| m.len()),
    }
}

/// The v22 trace to open for `file`: itself, or for a foreign trace its
/// import in the per-user cache (made on first use, said on stderr).
pub fn trace_path(file: &Path) -> Result<PathBuf> {
    let bar = ProgressBar::hidden();
    let trace = trace_for(file, &|bytes| {
        if bar.is_hidden() {
            bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            bar.set_length(source_size(file));
            bar.set_style(
                ProgressStyle::with_template("importing {bar:40} {bytes}/{total_bytes}")
                    .expect("valid template"),
            );
        }
        bar.inc(bytes)
    });
    bar.finish_and_clear();
    let trace = trace?;
    if let (Some(format), Some(summary)) = (trace.imported_from, &trace.imported_now) {
        report(summary);
        eprintln!(
            "tracetree: imported {} ({format}) into {}; later opens reuse it",
            file.display(),
            trace.path.display()
        );
    }
    Ok(trace.path)
}

/// The summary's damage and warnings on stderr.
fn report(summary: &ImportSummary) {
    for damage in &summary.damage {
        eprintln!("tracetree: damaged: {}: {}", damage.source, damage.what);
    }
    for warning in &summary.warnings {
        eprintln!("tracetree: warning: {warning}");
    }
    eprintln!("imported {summary}");
}
