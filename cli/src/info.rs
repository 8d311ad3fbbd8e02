//! `tracetree info`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use tracetree::FORMAT_VERSION;
use tracetree::LazyTraceReader;
use tracetree::Result;
use tracetree::common::ThreadId;
use tracetree::lowlevel::IndexCell;
use tracetree::model::TracepointType;
use tracetree::read::TraceContext;
use tracetree::read::lazy::WalkDetail;
use tracetree::read::{
    IndexProblem, IndexReport, IndexStatus, LoadReport, SidecarOutcome, SidecarProblem,
};
use tracetree::storage::TraceBytes;
use tracetree::storage::packed::PackedTrace;

use crate::cache::Cache;
use crate::words::{calls_or_loops, group, plural};

/// `info` of the trace at `file`; `shown` is the name the user gave when
/// it is not `file` (stdin or a pipe, read through a temporary file).
pub fn run(
    cache: &Cache,
    file: &Path,
    shown: Option<&Path>,
    eager: bool,
    out: &mut impl Write,
) -> Result<()> {
    if eager {
        run_eager(cache, file, shown, out)?;
    } else {
        run_lazy(cache, file, shown, out)?;
    }
    write_import_summary(file, out)
}

/// For a foreign trace opened through the cache, what its import mapped,
/// skipped and found inconsistent.
fn write_import_summary(file: &Path, out: &mut impl Write) -> Result<()> {
    if let Some(summary) = tracetree::ImportSummary::stored_report(file) {
        out.write_all(summary.as_bytes())?;
    }
    Ok(())
}

/// For a JFR recording, its own summary: chunks, duration, event counts
/// by type (as `jfr summary` counts them), data loss and damage.
pub fn write_jfr_summary(file: &Path, out: &mut impl Write) -> Result<()> {
    if tracetree::SourceFormat::detect(file) == Some(tracetree::SourceFormat::Jfr) {
        write!(out, "{}", tracetree::import::jfr::JfrSummary::read(file)?)?;
    }
    Ok(())
}

/// The file and its format version, printed once the trace has opened
/// (opening checks that the data file's header names this version).
fn write_file_header(file: &Path, shown: Option<&Path>, out: &mut impl Write) -> Result<()> {
    match shown {
        Some(name) if name == Path::new("-") => writeln!(out, "file: - (stdin)")?,
        Some(name) => writeln!(out, "file: {} (a pipe)", name.display())?,
        None => writeln!(out, "file: {}", file.display())?,
    }
    if PackedTrace::is_packed(file) {
        let pack = PackedTrace::open(file)?;
        let entries: Vec<String> = pack
            .entries()
            .iter()
            .map(|e| {
                let how = if e.stored { "stored" } else { "deflated" };
                format!("{} ({} bytes, {how})", e.name, e.size)
            })
            .collect();
        let read = match pack.why_inflated() {
            None => "read in place".to_string(),
            Some(why) => format!("inflated into memory: {why}"),
        };
        writeln!(out, "packed trace: {}; {read}", entries.join(", "))?;
    }
    writeln!(out, "format version: {FORMAT_VERSION}")?;
    Ok(())
}

fn run_lazy(cache: &Cache, file: &Path, shown: Option<&Path>, out: &mut impl Write) -> Result<()> {
    let reader = cache.open_lazy(file)?;
    write_file_header(file, shown, out)?;
    let report = reader.report();
    writeln!(out, "data size: {} bytes", reader.context().data().len())?;
    let index = report.path.as_ref().map_or_else(
        || LazyTraceReader::index_path(file).display().to_string(),
        |p| p.display().to_string(),
    );
    // A spooled input's index (a packed trace's entry) under the name given.
    let index = match shown {
        Some(name) => index.replacen(&file.display().to_string(), &name.display().to_string(), 1),
        None => index,
    };
    match &report.status {
        IndexStatus::Rebuilt(_) if shown.is_some() => writeln!(
            out,
            "index: none (the trace was read from a pipe); rebuilt from the data"
        )?,
        IndexStatus::Used { complete: true } => writeln!(out, "index: {index} (valid, used)")?,
        IndexStatus::Used { complete: false } => writeln!(
            out,
            "index: {index} (valid, used; no footer: the recorder did not finish)"
        )?,
        IndexStatus::Rebuilt(IndexProblem::Requested) => writeln!(
            out,
            "index: {index} not needed: the lookups were made by reading the data through \
             (as `print` and `dump` do)"
        )?,
        IndexStatus::Rebuilt(problem) if report.sidecar_used() => writeln!(
            out,
            "index: {index} not used ({problem}); an earlier run rebuilt it from the data \
             and kept the result in the cache, which this run used"
        )?,
        IndexStatus::Rebuilt(problem) => writeln!(
            out,
            "index: {index} not used ({problem}); rebuilt from the data"
        )?,
    }
    if let Some(sidecar) = describe_sidecar(report) {
        writeln!(out, "{sidecar}")?;
    }
    if report.repaired_containers > 0 {
        let count = report.repaired_containers as u64;
        writeln!(
            out,
            "index incomplete: it does not list {count} call{} or loop{} (a recorder \
             that stopped early leaves them out); found by reading the data",
            plural(count),
            plural(count)
        )?;
    }
    write_status(&report.data, reader.context().data().len(), out)?;
    let threads = reader.threads();
    writeln!(out, "threads: {}", group(threads.len()))?;
    for thread in &threads {
        write_thread(reader.context(), thread.id, thread.blocks, out)?;
    }
    // One walk counts the tracepoints by type and the calls and loops
    // without a footer (still running when the recording stopped), in any
    // trace: imported, cut short, or whole with calls left open.
    let per_thread = reader.walk_threads(
        WalkDetail::Containers,
        |_| ([0u64; TracepointType::ALL.len()], 0u64),
        |(counts, unfinished), walked| {
            counts[walked.header.tracepoint_type as usize] += 1;
            if walked.tracepoint.is_some() && walked.footer.is_none() {
                *unfinished += 1;
            }
            Ok(true)
        },
    )?;
    let mut counts = BTreeMap::new();
    for (at, kind) in TracepointType::ALL.into_iter().enumerate() {
        let total: u64 = per_thread.iter().map(|(c, _)| c[at]).sum();
        if total > 0 {
            counts.insert(kind, total);
        }
    }
    let unfinished = per_thread.iter().map(|(_, n)| n).sum();
    cache.check_unfinished(file, unfinished)?;
    write_counts(&counts, out)?;
    write_unfinished(unfinished, out)
}

/// The calls and loops left unfinished, when there are any.
fn write_unfinished(unfinished: u64, out: &mut impl Write) -> Result<()> {
    if unfinished > 0 {
        writeln!(
            out,
            "unfinished: {} (still running when the recording stopped)",
            calls_or_loops(unfinished)
        )?;
    }
    Ok(())
}

fn run_eager(cache: &Cache, file: &Path, shown: Option<&Path>, out: &mut impl Write) -> Result<()> {
    let trace = cache.open_eager(file)?;
    write_file_header(file, shown, out)?;
    writeln!(out, "data size: {} bytes", trace.context().data().len())?;
    // A packed trace's index is its entry; a plain trace's, `FILE.idx`.
    let (index, index_bytes) = if PackedTrace::is_packed(file) {
        let index = PathBuf::from(format!("{}!{}", file.display(), PackedTrace::INDEX_ENTRY));
        (index, PackedTrace::open(file)?.index()?)
    } else {
        let index = LazyTraceReader::index_path(file);
        let bytes = TraceBytes::map(&index).ok();
        (index, bytes)
    };
    match index_bytes {
        None => writeln!(out, "index: missing ({})", index.display())?,
        Some(bytes) => match IndexCell::count_file(bytes.as_slice()) {
            Ok((cells, has_footer)) => writeln!(
                out,
                "index: {} ({} cells, {}; not used by the eager loader)",
                index.display(),
                cells,
                if has_footer { "complete" } else { "no footer" }
            )?,
            Err(error) => writeln!(out, "index: {} unreadable ({error})", index.display())?,
        },
    }
    write_status(trace.report(), trace.context().data().len(), out)?;
    writeln!(out, "threads: {}", group(trace.threads().len()))?;
    for thread in trace.threads() {
        write_thread(trace.context(), thread.id, thread.blocks, out)?;
    }
    let by_type = trace.counts_by_type();
    let counts: BTreeMap<TracepointType, u64> = TracepointType::ALL
        .into_iter()
        .zip(by_type)
        .filter(|&(_, count)| count > 0)
        .collect();
    write_counts(&counts, out)?;
    write_unfinished(trace.report().unfinished_containers as u64, out)
}

/// One line on what became of the lookup sidecar, when it was looked for.
pub(crate) fn describe_sidecar(report: &IndexReport) -> Option<String> {
    let outcome = report.sidecar.as_ref()?;
    let path = match &report.sidecar_path {
        Some(path) => path.display().to_string(),
        None => "none kept (--no-cache, or the trace came from a pipe)".to_string(),
    };
    let rejected = match &report.sidecar_rejected {
        None | Some(SidecarProblem::Missing(_)) => String::new(),
        Some(problem) => format!("; the old one was not used: {problem}"),
    };
    let scratch = if report.scratch {
        "; lookups mapped from an unlinked scratch file instead"
    } else {
        ""
    };
    Some(match outcome {
        SidecarOutcome::Used => format!("lookup sidecar: {path} (valid, used)"),
        SidecarOutcome::Written => format!("lookup sidecar: {path} (written{rejected})"),
        SidecarOutcome::NotWritten(error) => {
            format!("lookup sidecar: {path} (not written: {error}{rejected}{scratch})")
        }
        SidecarOutcome::Skipped => {
            format!("lookup sidecar: {path} (not written{rejected}{scratch})")
        }
        SidecarOutcome::Deferred => format!(
            "lookup sidecar: {path} (not written yet: a first open builds lookups on demand; \
             the next open writes it{rejected})"
        ),
    })
}

fn write_status(report: &LoadReport, data_len: u64, out: &mut impl Write) -> Result<()> {
    let whole = if report.missing_eof || report.dropped_blocks > 0 {
        "incomplete"
    } else {
        "complete"
    };
    match report.summary(data_len) {
        None => writeln!(out, "status: {whole}")?,
        Some(summary) => writeln!(out, "status: {whole}: {summary}")?,
    }
    Ok(())
}

fn write_thread(
    context: &TraceContext,
    thread: ThreadId,
    blocks: usize,
    out: &mut impl Write,
) -> Result<()> {
    let name = context
        .thread_name(thread)
        .map(|n| format!(" ({})", n.decode()))
        .unwrap_or_default();
    // `print` heads a thread with `# Thread N`, N being its id plus one
    // (Java `int` arithmetic, as the printer does).
    writeln!(
        out,
        "  thread {thread}{name}: {blocks} block{}; printed as `# Thread {}`",
        plural(blocks as u64),
        thread.get().wrapping_add(1)
    )?;
    Ok(())
}

fn write_counts(counts: &BTreeMap<TracepointType, u64>, out: &mut impl Write) -> Result<()> {
    writeln!(out, "tracepoints: {}", group(counts.values().sum::<u64>()))?;
    for (kind, count) in counts {
        writeln!(out, "  {}: {}", kind.name(), group(*count))?;
    }
    Ok(())
}
