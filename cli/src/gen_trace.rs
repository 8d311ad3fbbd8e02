//! `tracetree gen`: a synthetic trace through the streaming writer
//! ([`generate_file`]), with a progress bar.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use indicatif::{HumanDuration, ProgressBar, ProgressState, ProgressStyle};

use crate::output::check_trace_output;
use crate::words::{count, group};
use tracetree::generate::{GenerateOptions, Shape, generate_file};
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

/// The most producer threads: each is a thread of the system, with its
/// own stack and block buffers.
pub const MAX_THREADS: usize = 4096;

/// The bytes each thread writes at least (its name, its blocks' framing,
/// a few tracepoints).
const MIN_BYTES_PER_THREAD: u64 = 1536;

/// The most bytes `--size` takes: 64 TiB, more than the disks `gen` is
/// run on (the whole size is written).
const MAX_SIZE: u64 = 64 << 40;

/// Block sizes `--block-size` takes: below 1 KiB a block holds more
/// framing than tracepoints; above 64 MiB the buffers of the threads no
/// longer fit their 256 MiB budget.
const BLOCK_SIZES: std::ops::RangeInclusive<u64> = 1024..=(64 << 20);

/// Fails, with the bound and its reason in one line, when a request is
/// outside what `gen` writes.
fn check_bounds(request: &GenRequest<'_>) -> Result<()> {
    let fail = |argument, problem: String| Err(Error::invalid(argument, problem));
    if !(1..=MAX_THREADS).contains(&request.threads) {
        return fail(
            "--threads",
            format!(
                "{} is out of 1..={MAX_THREADS}: each recorded thread is a thread of the \
                 system with its own buffers",
                request.threads
            ),
        );
    }
    if request.size > MAX_SIZE {
        return fail(
            "--size",
            format!(
                "{} bytes is over 64 TB: gen writes the whole size to the disk",
                group(request.size)
            ),
        );
    }
    let least = request.threads as u64 * MIN_BYTES_PER_THREAD;
    if request.size < least {
        return fail(
            "--size",
            format!(
                "{} bytes is under {} bytes: each of the {} writes at least about 1.5 KB \
                 (give fewer threads or a larger size)",
                group(request.size),
                group(least),
                count(request.threads as u64, "thread")
            ),
        );
    }
    if let Some(block_size) = request.block_size
        && !BLOCK_SIZES.contains(&block_size)
    {
        return fail(
            "--block-size",
            format!(
                "{} bytes is out of 1 KB..=64 MB: smaller blocks hold more framing than \
                 tracepoints, larger ones do not fit the threads' 256 MB of buffers",
                group(block_size)
            ),
        );
    }
    Ok(())
}

/// The time before the bar shows an estimate: until then the rate, and so
/// the estimate, means nothing.
const ETA_AFTER: Duration = Duration::from_secs(2);

pub fn run(request: &GenRequest<'_>, out: &mut impl Write) -> Result<()> {
    let path = request.path;
    check_bounds(request)?;
    check_trace_output(path, request.force)?;
    let block_size = request.block_size.map(|b| b as usize);
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
    let asked = request.size as f64;
    if (summary.data_bytes as f64 - asked).abs() > asked / 10.0 {
        eprintln!(
            "tracetree: warning: wrote {} bytes where --size asked {} ({:+.0}%): each thread \
             ends within a block of its share, and blocks of {} bytes add their framing",
            group(summary.data_bytes),
            group(request.size),
            (summary.data_bytes as f64 - asked) * 100.0 / asked,
            group(options.block_size_used() as u64),
        );
    }
    writeln!(
        out,
        "wrote {} ({} bytes, {}, {}, {} of {} bytes; index {} bytes)",
        path.display(),
        group(summary.data_bytes),
        count(summary.tracepoints as u64, "tracepoint"),
        count(summary.threads as u64, "thread"),
        count(summary.blocks as u64, "block"),
        group(options.block_size_used() as u64),
        group(summary.index_bytes)
    )?;
    Ok(())
}
