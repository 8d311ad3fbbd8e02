//! `tracetree gen`: a synthetic trace through the streaming writer, one
//! producer thread per recorded thread, with a progress bar.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use indicatif::{ProgressBar, ProgressStyle};

use crate::error::{Error, Result};
use crate::generate::{Shape, ThreadGenerator};
use crate::write::{StreamingOptions, StreamingWriter};

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
    let default_block = if shape == Shape::Threads {
        16 << 10
    } else {
        1 << 20
    };
    let block_size = usize::try_from(block_size.unwrap_or(default_block))
        .map_err(|_| Error::Usage("--block-size is too large".into()))?;
    let options = StreamingOptions {
        block_size,
        ..StreamingOptions::default()
    };
    let writer = StreamingWriter::create_with_options(path, options)?;
    let bar = ProgressBar::new(size).with_style(
        ProgressStyle::with_template(
            "generating {bar:40} {bytes}/{total_bytes} ({bytes_per_sec}, {eta})",
        )
        .expect("valid template"),
    );
    let done = AtomicBool::new(false);
    // The data file's length is what the I/O thread has written.
    let reached = || {
        if done.load(Ordering::Relaxed) {
            return true;
        }
        let written = std::fs::metadata(path).map_or(0, |m| m.len());
        bar.set_position(written.min(size));
        let reached = written >= size;
        if reached {
            done.store(true, Ordering::Relaxed);
        }
        reached
    };
    std::thread::scope(|scope| -> Result<()> {
        let mut producers = Vec::with_capacity(threads);
        for t in 0..threads {
            let mut handle = writer.new_thread(format!("worker-{t}"))?;
            let reached = &reached;
            producers.push(scope.spawn(move || -> Result<()> {
                ThreadGenerator::new(shape, seed, t as u64).run(&mut handle, reached)?;
                handle.finish()
            }));
        }
        for producer in producers {
            producer
                .join()
                .map_err(|_| Error::Usage("a producer thread panicked".into()))??;
        }
        Ok(())
    })?;
    let summary = writer.close()?;
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
