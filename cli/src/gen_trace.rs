//! `tracetree gen`: a synthetic trace through the streaming writer
//! ([`generate_file`]), with a progress bar.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use indicatif::{HumanDuration, ProgressBar, ProgressState, ProgressStyle};

use tracetree::generate::{GenerateOptions, Shape, generate_file};
use tracetree::read::index_path;
use tracetree::{Error, Result};

/// What `tracetree gen` writes.
pub struct GenRequest<'a> {
    pub path: &'a Path,
    pub size: u64,
    pub threads: usize,
    pub shape: Shape,
    pub seed: u64,
    pub block_size: Option<u64>,
    pub force: bool,
}

/// The time before the bar shows an estimate: until then the rate, and so
/// the estimate, means nothing.
const ETA_AFTER: Duration = Duration::from_secs(2);

pub fn run(request: &GenRequest<'_>, out: &mut impl Write) -> Result<()> {
    let path = request.path;
    if request.threads == 0 {
        return Err(Error::invalid("--threads", "must be at least 1"));
    }
    if !request.force && (path.exists() || index_path(path).exists()) {
        return Err(Error::invalid(
            "output",
            format!("{} exists (give --force to replace it)", path.display()),
        ));
    }
    let block_size = request
        .block_size
        .map(usize::try_from)
        .transpose()
        .map_err(|_| Error::invalid("--block-size", "too large"))?;
    let options = GenerateOptions {
        size: request.size,
        threads: request.threads,
        shape: request.shape,
        seed: request.seed,
        block_size,
    };
    let style = ProgressStyle::with_template(
        "generating {bar:40} {bytes}/{total_bytes} ({bytes_per_sec}{later_eta})",
    )
    .expect("valid template")
    .with_key(
        "later_eta",
        |state: &ProgressState, w: &mut dyn std::fmt::Write| {
            if state.elapsed() >= ETA_AFTER && state.pos() > 0 {
                let _ = write!(w, ", {:#}", HumanDuration(state.eta()));
            }
        },
    );
    let bar = ProgressBar::new(request.size).with_style(style);
    let summary = generate_file(path, &options, |written| {
        bar.set_position(written.min(request.size))
    });
    bar.finish_and_clear();
    let summary = summary?;
    writeln!(
        out,
        "wrote {} ({} bytes, {} tracepoints, {} threads, {} blocks of {} bytes; index {} bytes)",
        path.display(),
        summary.data_bytes,
        summary.tracepoints,
        summary.threads,
        summary.blocks,
        options.block_size_used(),
        summary.index_bytes
    )?;
    Ok(())
}
