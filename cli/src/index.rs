//! `tracetree index`: rebuild a trace's index in parallel and write it
//! atomically, or check an existing one against the data.

use std::io::Write;
use std::path::Path;

use indicatif::{ProgressBar, ProgressStyle};
use tracetree::LazyTraceReader;
use tracetree::Result;
use tracetree::read::IndexFile;
use tracetree::read::RebuildOptions;
use tracetree::storage::TraceBytes;

pub fn run(file: &Path, check: bool, threads: usize, out: &mut impl Write) -> Result<()> {
    // The rebuild reads the data without a zero-filled tail, and its
    // progress adds up to exactly that.
    let size = TraceBytes::map(file)?.without_zero_tail().0.len();
    let mut options = RebuildOptions::default();
    options.threads = threads;
    options.chunk_size = 0;
    let workers = options.workers(size);
    if threads > workers {
        eprintln!(
            "tracetree: using {workers} worker thread{} instead of {threads} (at most {} per \
             core, and one per MiB of data)",
            crate::words::plural(workers as u64),
            RebuildOptions::MAX_WORKERS_PER_CORE
        );
    }
    let bar = ProgressBar::new(size).with_style(
        ProgressStyle::with_template("{msg} {bar:40} {bytes}/{total_bytes} ({bytes_per_sec})")
            .expect("valid template"),
    );
    bar.set_message("rebuilding index");
    let progress = |bytes| bar.inc(bytes);
    if check {
        let check = options.check_index(file, &progress);
        bar.finish_and_clear();
        return report_check(check?, out);
    }
    let written = options.write_index(file, &LazyTraceReader::index_path(file), &progress);
    bar.finish_and_clear();
    let written = written?;
    let unfinished = written.unfinished.len();
    writeln!(
        out,
        "wrote {} ({} cells, {} blocks{})",
        written.path.display(),
        written.cells,
        written.blocks,
        if unfinished == 0 {
            String::new()
        } else {
            format!(", {unfinished} unfinished containers")
        }
    )?;
    Ok(())
}

/// Prints a matching index (a mismatch is the check's error).
fn report_check(check: IndexFile, out: &mut impl Write) -> Result<()> {
    writeln!(
        out,
        "{}: ok ({} cells match the data{})",
        check.path.display(),
        check.cells,
        if check.has_footer { "" } else { "; no footer" }
    )?;
    Ok(())
}
