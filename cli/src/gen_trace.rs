//! `tracetree gen`: a synthetic trace through the streaming writer
//! ([`generate_file`]), with a progress bar.

use std::io::Write;
use std::path::Path;

use indicatif::{ProgressBar, ProgressStyle};

use tracetree::generate::{GenerateOptions, Shape, generate_file};
use tracetree::{Error, Result};

pub fn run(
    path: &Path,
    size: u64,
    threads: usize,
    shape: Shape,
    seed: u64,
    block_size: Option<u64>,
    out: &mut impl Write,
) -> Result<()> {
    if threads == 0 {
        return Err(Error::Usage("--threads must be at least 1".into()));
    }
    let block_size = block_size
        .map(usize::try_from)
        .transpose()
        .map_err(|_| Error::Usage("--block-size is too large".into()))?;
    let options = GenerateOptions {
        size,
        threads,
        shape,
        seed,
        block_size,
    };
    let bar = ProgressBar::new(size).with_style(
        ProgressStyle::with_template(
            "generating {bar:40} {bytes}/{total_bytes} ({bytes_per_sec}, {eta})",
        )
        .expect("valid template"),
    );
    let summary = generate_file(path, &options, |written| bar.set_position(written))?;
    bar.finish_and_clear();
    writeln!(
        out,
        "wrote {} ({} bytes, {} tracepoints, {} threads, {} blocks; index {} bytes)",
        path.display(),
        summary.data_bytes,
        summary.tracepoints,
        summary.threads,
        summary.blocks,
        summary.index_bytes
    )?;
    Ok(())
}
