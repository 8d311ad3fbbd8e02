//! `tracetree import`: a foreign trace converted into a v22 trace, with a
//! progress bar and a summary on stderr.

use std::io::Write;
use std::path::Path;

use crate::cache::{Cache, report, source_size};
use crate::output::check_trace_output;

use indicatif::{ProgressBar, ProgressStyle};
use tracetree::Result;
use tracetree::import::{ImportOptions, SourceFormat};

pub fn run(
    cache: &Cache,
    input: &Path,
    output: &Path,
    from: Option<SourceFormat>,
    force: bool,
    samples: bool,
    out: &mut impl Write,
) -> Result<()> {
    check_trace_output(output, force)?;
    let bar = ProgressBar::new(source_size(input)).with_style(
        ProgressStyle::with_template("importing {bar:40} {bytes}/{total_bytes} ({bytes_per_sec})")
            .expect("valid template"),
    );
    let mut options = ImportOptions::default();
    options.samples = samples;
    let summary = options.import_file(input, output, from, &|bytes| bar.inc(bytes));
    bar.finish_and_clear();
    let summary = summary?;
    report(&summary);
    if let Err(error) = cache.check_import(input, &summary) {
        // Under --strict an incomplete import fails and leaves nothing.
        let _ = std::fs::remove_file(output);
        let _ = std::fs::remove_file(tracetree::LazyTraceReader::index_path(output));
        return Err(error);
    }
    writeln!(out, "wrote {}", output.display())?;
    Ok(())
}
