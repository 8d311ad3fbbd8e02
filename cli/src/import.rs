//! `tracetree import`: a foreign trace converted into a v22 trace, with a
//! progress bar and a summary on stderr.

use std::io::Write;
use std::path::Path;

use crate::cache::{report, source_size};

use indicatif::{ProgressBar, ProgressStyle};
use tracetree::import::{ImportOptions, SourceFormat, import_file_with};
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
        return Err(Error::invalid(
            "output",
            format!("{} exists (give --force to replace it)", output.display()),
        ));
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
