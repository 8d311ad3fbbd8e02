//! `tracetree pack`: a trace written as one packed file, the recorder's
//! `NAME.packedtrace`, with every entry stored so that any command reads
//! it in place.

use std::io::Write;
use std::path::Path;

use indicatif::ProgressBar;
use tracetree::LazyTraceReader;
use tracetree::read::RebuildOptions;
use tracetree::storage::packed::PackedTrace;
use tracetree::{Error, Result};

use crate::cache::Cache;
use crate::export::summary_line;
use crate::output::Output;

pub fn run(
    cache: &Cache,
    file: &Path,
    output: &Path,
    info: Option<&str>,
    force: bool,
    out: &mut impl Write,
) -> Result<()> {
    let written = Output::file(output, force)?;
    let trace = cache.trace(file)?;
    cache.check_whole(&trace.path)?;
    let mut index = LazyTraceReader::index_path(&trace.path);
    // A trace without its index gets one rebuilt into a temporary folder:
    // nothing is written beside the user's trace.
    let scratch;
    if !index.is_file() {
        scratch = tempfile::tempdir().map_err(|e| Error::io(std::env::temp_dir(), e))?;
        index = scratch.path().join("trace.idx");
        let bar = ProgressBar::new_spinner().with_message("rebuilding the missing index");
        let written = RebuildOptions::default().write_index(&trace.path, &index, &|_| bar.tick());
        bar.finish_and_clear();
        written?;
        eprintln!(
            "tracetree: {} has no index: packed one rebuilt from the data",
            file.display()
        );
    }
    let name = file.file_name().map_or_else(
        || file.display().to_string(),
        |name| name.to_string_lossy().into_owned(),
    );
    let info = match info {
        Some(info) => info.to_string(),
        None => format!(
            "{name}\npacked by tracetree {}\n",
            env!("CARGO_PKG_VERSION")
        ),
    };
    let bar = ProgressBar::new_spinner().with_message(format!("packing {}", output.display()));
    bar.enable_steady_tick(std::time::Duration::from_millis(100));
    let summary = PackedTrace::write(&written.path, &info, &trace.path, &index);
    bar.finish_and_clear();
    let bytes = summary?;
    let size = |path: &Path| std::fs::metadata(path).map_or(0, |m| m.len());
    let to_stdout = written.is_stdout();
    written.finish()?;
    let line = format!(
        "wrote {} ({bytes} bytes: data {}, index {}, stored)",
        output.display(),
        size(&trace.path),
        size(&index)
    );
    summary_line(&line, to_stdout, out)?;
    Ok(())
}
