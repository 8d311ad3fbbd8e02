//! Foreign traces made into v22 traces: one reader per source format, each
//! streaming its source once and pushing calls into the streaming writer,
//! so the result is a plain data + index pair that every reader (and the
//! reference reader) opens.
//!
//! The mapping every importer follows is fixed by `docs/IMPORTS.md`
//! (threads numbered by ascending source id, `package.Class.method`
//! names, calls left open at the end of a thread kept unfinished, returns
//! with no open call skipped and counted, a damaged tail stopping its
//! thread at the last whole record and reported). Memory holds the open
//! calls and the names, never the source.
//!
//! [`ImportOptions::import_file`] writes to temporary files beside the output and renames
//! them into place only when the import succeeded, so a failure leaves
//! nothing behind and a reader never sees half a trace.

mod blinky;
mod cache;
pub(crate) mod flow;
pub mod jfr;
mod names;
#[cfg(test)]
mod test_mutations;
#[cfg(test)]
mod test_rows;
pub(crate) mod tptp;

use std::collections::BTreeMap;
use std::fmt;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::str::FromStr;

use crate::error::{Error, Result};
use crate::read::index_path;
use crate::storage::packed::PackedTrace;
use crate::write::StreamingWriter;

pub use cache::TracePath;
pub(crate) use cache::{stored_problem, trace_in_as};

/// The formats tracetree imports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SourceFormat {
    /// A `.flow` recording: a folder of `thread-<id>.flow` files and
    /// `ids.properties`, or one `.flow` file.
    Flow,
    /// Blinky's text trace: declarations and executions, one per line,
    /// mixed with the program's output.
    Blinky,
    /// Eclipse TPTP's binary trace (`.trcbin`, magic `0TBF`).
    Tptp,
    /// A Java Flight Recorder recording (`.jfr`, magic `FLR\0`).
    Jfr,
    /// The recorder's packed trace (`.packedtrace`, a ZIP holding
    /// `trace.trace`): unpacked as it is. Every reader also opens one in
    /// place (`storage::packed`), so only one that is compressed (or
    /// met where `userfaultfd` is refused) is worth unpacking.
    Packed,
}

impl SourceFormat {
    /// Every importable format.
    pub const ALL: [SourceFormat; 5] = [
        SourceFormat::Flow,
        SourceFormat::Blinky,
        SourceFormat::Tptp,
        SourceFormat::Jfr,
        SourceFormat::Packed,
    ];

    /// The format's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            SourceFormat::Flow => "flow",
            SourceFormat::Blinky => "blinky",
            SourceFormat::Tptp => "tptp",
            SourceFormat::Jfr => "jfr",
            SourceFormat::Packed => "packed",
        }
    }

    /// The format of `path`, found from its layout or first bytes; `None`
    /// when it is none of the importable formats (a v22 trace among them).
    pub fn detect(path: &Path) -> Option<SourceFormat> {
        if flow::looks_like_flow(path) {
            Some(SourceFormat::Flow)
        } else if jfr::looks_like_jfr(path) {
            Some(SourceFormat::Jfr)
        } else if PackedTrace::is_packed(path) {
            Some(SourceFormat::Packed)
        } else if tptp::looks_like_tptp(path) {
            Some(SourceFormat::Tptp)
        } else if blinky::looks_like_blinky(path) {
            Some(SourceFormat::Blinky)
        } else {
            None
        }
    }
}

impl fmt::Display for SourceFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for SourceFormat {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Self, String> {
        SourceFormat::ALL
            .into_iter()
            .find(|format| format.name() == text)
            .ok_or_else(|| {
                let names: Vec<_> = SourceFormat::ALL.iter().map(|f| f.name()).collect();
                format!("unknown format {text:?} (known: {})", names.join(", "))
            })
    }
}

/// What an import found and wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportSummary {
    /// Threads written.
    pub threads: usize,
    /// Calls written.
    pub calls: u64,
    /// Calls still open at the end of their thread: written unfinished.
    pub unfinished_calls: u64,
    /// Returns with no open call: skipped.
    pub skipped_exits: u64,
    /// Damaged tails, one line each (`FILE: what was wrong, at which
    /// offset`): each stopped its thread at the last whole record, and
    /// everything before it was imported.
    pub damage: Vec<String>,
    /// Other things skipped in the source, one line each.
    pub warnings: Vec<String>,
    /// Tracepoints written, by kind (`method_call`, `read_field`, …).
    pub mapped: BTreeMap<String, u64>,
    /// Source records that make no tracepoint, by kind or message id.
    pub skipped: BTreeMap<String, u64>,
    /// Records whose recorded call depth disagrees with the nesting.
    pub depth_disagreements: u64,
    /// Exits whose ticket is not their entry's.
    pub unmatched_tickets: u64,
}

impl ImportSummary {
    /// Records damage to `source`: `what` was wrong, and where.
    pub(crate) fn damaged(&mut self, source: impl fmt::Display, what: impl fmt::Display) {
        self.damage.push(format!("{source}: {what}"));
    }

    /// Adds `count` to the skipped records of `kind` (nothing when 0).
    pub fn skip(&mut self, kind: &str, count: u64) {
        if count > 0 {
            *self.skipped.entry(kind.to_string()).or_default() += count;
        }
    }

    /// Adds `count` to the mapped tracepoints of `kind` (nothing when 0).
    pub fn map(&mut self, kind: &str, count: u64) {
        if count > 0 {
            *self.mapped.entry(kind.to_string()).or_default() += count;
        }
    }

    /// What makes this import incomplete or damaged, in words
    /// (`2 unfinished calls, 1 damaged tail`); `None` when it is whole.
    pub fn problem(&self) -> Option<String> {
        let problems: Vec<String> = [
            (self.unfinished_calls, "unfinished call"),
            (self.damage.len() as u64, "damaged tail"),
            (self.skipped_exits, "exit with no open call"),
        ]
        .into_iter()
        .filter(|&(n, _)| n > 0)
        .map(|(n, thing)| counted(n, thing))
        .collect();
        (!problems.is_empty()).then(|| problems.join(", "))
    }

    /// The counts `info` shows, one `key: value` line each.
    pub fn report(&self) -> String {
        let list = |counts: &BTreeMap<String, u64>| {
            if counts.is_empty() {
                return "none".to_string();
            }
            let items: Vec<_> = counts.iter().map(|(k, n)| format!("{k} {n}")).collect();
            items.join(", ")
        };
        let mut text = format!("imported: {self}\n");
        text += &format!("mapped: {}\n", list(&self.mapped));
        text += &format!("skipped: {}\n", list(&self.skipped));
        // Tickets are TPTP's: said only where a source has them wrong.
        let tickets = match self.unmatched_tickets {
            0 => String::new(),
            n => format!("{}, ", counted(n, "unmatched ticket")),
        };
        text += &format!(
            "inconsistent: {}, {tickets}{} with no open call\n",
            counted(self.depth_disagreements, "depth disagreement"),
            counted(self.skipped_exits, "exit")
        );
        for damage in &self.damage {
            text += &format!("damaged: {damage}\n");
        }
        text
    }
}

impl fmt::Display for ImportSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}, {}, {}, {}, {}",
            counted(self.threads as u64, "thread"),
            counted(self.calls, "call"),
            counted(self.unfinished_calls, "unfinished call"),
            counted(self.skipped_exits, "skipped exit"),
            counted(self.damage.len() as u64, "damaged tail")
        )?;
        if self.depth_disagreements > 0 {
            write!(
                f,
                ", {}",
                counted(self.depth_disagreements, "depth disagreement")
            )?;
        }
        if self.unmatched_tickets > 0 {
            write!(
                f,
                ", {}",
                counted(self.unmatched_tickets, "unmatched ticket")
            )?;
        }
        Ok(())
    }
}

/// `n` things in words, thousands separated by commas: `1 thread`,
/// `219,723 calls`.
fn counted(n: u64, thing: &str) -> String {
    let plural = if n == 1 { "" } else { "s" };
    format!("{} {thing}{plural}", crate::print::grouped(n))
}

/// [`ImportOptions::import_file`] with the default choices.
pub(crate) fn import_file(
    input: &Path,
    output: &Path,
    format: Option<SourceFormat>,
    progress: &dyn Fn(u64),
) -> Result<ImportSummary> {
    import_file_with(input, output, format, &ImportOptions::default(), progress)
}

/// Choices of an import that only some formats have.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ImportOptions {
    /// JFR: import the sample trees even when the recording holds method
    /// traces.
    pub samples: bool,
}

impl ImportOptions {
    /// Imports `input` (of `format`, or the detected one) into the v22
    /// trace `output` (and `output.idx`), replacing them only on success.
    /// `progress` receives the bytes of source read.
    pub fn import_file(
        &self,
        input: &Path,
        output: &Path,
        format: Option<SourceFormat>,
        progress: &dyn Fn(u64),
    ) -> Result<ImportSummary> {
        import_file_with(input, output, format, self, progress)
    }
}

/// [`ImportOptions::import_file`].
fn import_file_with(
    input: &Path,
    output: &Path,
    format: Option<SourceFormat>,
    options: &ImportOptions,
    progress: &dyn Fn(u64),
) -> Result<ImportSummary> {
    let format = match format.or_else(|| SourceFormat::detect(input)) {
        Some(format) => format,
        None if !input.exists() => {
            return Err(Error::io(
                input,
                std::io::Error::from(std::io::ErrorKind::NotFound),
            ));
        }
        None => {
            return Err(Error::Unsupported {
                path: Some(input.to_path_buf()),
                expected: "a format tracetree imports",
                found: "neither a .flow, Blinky, TPTP or JFR recording nor a packed trace \
                        (give --from)"
                    .to_string(),
            });
        }
    };
    if format == SourceFormat::Packed {
        return unpack(input, output, progress);
    }
    crate::storage::write_trace_atomically(output, |temp| {
        let writer = StreamingWriter::create(temp)?;
        let summary = match format {
            SourceFormat::Flow => flow::import(input, &writer, progress),
            SourceFormat::Blinky => blinky::import(input, &writer, progress),
            SourceFormat::Tptp => tptp::import(input, &writer, progress),
            SourceFormat::Packed => unreachable!("unpacked above"),
            SourceFormat::Jfr => {
                let jfr_options = jfr::JfrOptions {
                    samples: options.samples,
                };
                jfr::import(input, &writer, jfr_options, progress)
            }
        };
        let summary = match summary {
            Ok(summary) => summary,
            Err(error) => {
                drop(writer);
                return Err(error);
            }
        };
        writer.close_leaving_open()?;
        Ok(summary)
    })
}

/// Unpacks the packed trace at `input` into the data file `output` and its
/// index, streaming (the index rebuilt when the pack holds none); the
/// summary counts its threads and calls.
fn unpack(input: &Path, output: &Path, progress: &dyn Fn(u64)) -> Result<ImportSummary> {
    let pack = PackedTrace::open(input)?;
    crate::storage::write_trace_atomically(output, |temp| {
        let create = |path: &Path| -> Result<BufWriter<File>> {
            let file = File::create(path).map_err(|e| Error::io(path, e))?;
            Ok(BufWriter::with_capacity(1 << 20, file))
        };
        let mut data = Progress::new(create(temp)?, progress);
        let mut index = create(&index_path(temp))?;
        let had_index = pack.unpack(&mut data, &mut index)?;
        for (out, path) in [(data.into_inner(), temp), (index, &index_path(temp))] {
            let file = out
                .into_inner()
                .map_err(|e| Error::io(path, e.into_error()))?;
            file.sync_all().map_err(|e| Error::io(path, e))?;
        }
        let mut summary = ImportSummary::default();
        if !had_index {
            crate::read::RebuildOptions::default().write_index(temp, &index_path(temp), &|_| {})?;
            summary.warnings.push(format!(
                "{} holds no {}: the index was rebuilt from the data",
                input.display(),
                crate::storage::packed::INDEX_ENTRY
            ));
        }
        let reader = crate::read::LazyTraceReader::options()
            .sidecar(crate::read::SidecarPolicy::Off)
            .open(temp)?;
        summary.threads = reader.thread_ids().len();
        for (kind, count) in reader.count_tracepoints()? {
            if kind == crate::model::TracepointType::MethodCall {
                summary.calls = count;
            }
            summary.mapped.insert(kind.name().to_string(), count);
        }
        Ok(summary)
    })
}

/// A writer that tells `progress` how many bytes went through it.
struct Progress<'a, W> {
    inner: W,
    progress: &'a dyn Fn(u64),
}

impl<'a, W: Write> Progress<'a, W> {
    fn new(inner: W, progress: &'a dyn Fn(u64)) -> Self {
        Progress { inner, progress }
    }

    fn into_inner(self) -> W {
        self.inner
    }
}

impl<W: Write> Write for Progress<'_, W> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let written = self.inner.write(bytes)?;
        (self.progress)(written as u64);
        Ok(written)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}
