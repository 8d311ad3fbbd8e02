//! Opening any input the way every front end does: a foreign trace
//! imported into a cache (once), the lazy reader's lookup sidecar kept
//! there, and what the open found (an import left incomplete, data
//! missing or damaged, calls never ended) said as one status and warnings,
//! or under strict opening refused with an error.
//!
//! A [`TraceCache`] is the place (the per-user cache directory, a folder,
//! or a temporary folder removed with the cache) and the policy (strict or
//! not, how files are read, which format inputs are read as). The command
//! line, the trace service and the bindings open through it, so that they
//! find and report the same things: [`TraceCache::open`] gives an
//! [`OpenedTrace`]; the parts ([`trace`](TraceCache::trace),
//! [`data_warning`](TraceCache::data_warning)) serve readers that open
//! otherwise (the eager loader, a growing view).
//!
//! Invariants: nothing is written beside the input; under strict, an open
//! either returns a whole trace or fails, naming the input and what is
//! wrong; otherwise every problem found is in the warnings.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::import::{ImportSummary, SourceFormat, TracePath, stored_problem, trace_in_as};
use crate::read::{IndexChoice, IndexStatus, LazyOptions, LazyTraceReader, LoadReport};
use crate::storage::{FileAccess, cache_dir};

/// What an open found a trace to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TraceStatus {
    /// Read to its end, every call ended.
    Complete,
    /// Whole, but calls or loops never ended (a recorder crashed or is
    /// still writing).
    Unfinished,
    /// Data left out or missing, or an import that found its source
    /// incomplete: the warnings say what.
    Damaged,
    /// Opened as a growing view of a trace still being written.
    Growing,
}

impl TraceStatus {
    /// The status in one word: `complete`, `unfinished`, `damaged`,
    /// `growing`.
    pub fn as_str(self) -> &'static str {
        match self {
            TraceStatus::Complete => "complete",
            TraceStatus::Unfinished => "unfinished",
            TraceStatus::Damaged => "damaged",
            TraceStatus::Growing => "growing",
        }
    }
}

/// A trace opened through a [`TraceCache`].
pub struct OpenedTrace {
    /// The lazy reader.
    pub reader: LazyTraceReader,
    /// The v22 trace it reads, and the import it came from.
    pub trace: TracePath,
    /// What the open found.
    pub status: TraceStatus,
    /// Each problem found, in a line naming the input.
    pub warnings: Vec<String>,
}

/// The place and policy of opens: see the [module](self).
#[derive(Debug, Clone)]
pub struct TraceCache {
    /// Where sidecars persist; `None` keeps none.
    lookups: Option<PathBuf>,
    /// Where imports go.
    imports: PathBuf,
    /// The temporary folder of imports, removed with the last clone.
    scratch: Option<Arc<tempfile::TempDir>>,
    strict: bool,
    /// How the caller asked for strict opening, as refusals say it.
    strict_flag: &'static str,
    file_access: FileAccess,
    from: Option<SourceFormat>,
}

impl TraceCache {
    /// The cache in the per-user cache directory: `$TRACETREE_CACHE_DIR`,
    /// else `$XDG_CACHE_HOME/tracetree`, else `$HOME/.cache/tracetree`; a
    /// temporary one ([`temporary`](Self::temporary)) where there is none.
    /// Not strict, mapping files, reading inputs as their bytes show, as
    /// every constructor's.
    pub fn per_user() -> Result<TraceCache> {
        TraceCache::at(cache_dir().ok())
    }

    /// The cache in the folder `dir`.
    pub fn in_folder(dir: impl Into<PathBuf>) -> Result<TraceCache> {
        TraceCache::at(Some(dir.into()))
    }

    /// A cache nowhere that outlives it: imports go to a temporary folder
    /// removed with the last clone of the cache, and no sidecar is kept.
    pub fn temporary() -> Result<TraceCache> {
        TraceCache::at(None)
    }

    /// The cache in `dir`, or a temporary one.
    fn at(dir: Option<PathBuf>) -> Result<TraceCache> {
        let (lookups, imports, scratch) = match dir {
            Some(dir) => (Some(dir.join("lookups")), dir, None),
            None => {
                let scratch =
                    tempfile::tempdir().map_err(|e| Error::io(std::env::temp_dir(), e))?;
                (None, scratch.path().to_path_buf(), Some(Arc::new(scratch)))
            }
        };
        Ok(TraceCache {
            lookups,
            imports,
            scratch,
            strict: false,
            strict_flag: "strict opening",
            file_access: FileAccess::Map,
            from: None,
        })
    }

    /// This cache refusing (`true`) instead of warning about inputs that
    /// are not whole: damaged or incomplete, or with calls never ended.
    pub fn strict(self, strict: bool) -> TraceCache {
        TraceCache { strict, ..self }
    }

    /// This cache naming strict opening `flag` in its refusals, as its
    /// caller asked for it (`--strict`, `strict=True`).
    pub fn strict_flag(self, flag: &'static str) -> TraceCache {
        TraceCache {
            strict_flag: flag,
            ..self
        }
    }

    /// Whether this cache is strict.
    pub fn is_strict(&self) -> bool {
        self.strict
    }

    /// Whether its imports are removed with it.
    pub fn is_temporary(&self) -> bool {
        self.scratch.is_some()
    }

    /// This cache with its readers reading files as `access` says.
    pub fn file_access(self, access: FileAccess) -> TraceCache {
        TraceCache {
            file_access: access,
            ..self
        }
    }

    /// This cache reading every input as `from` (`None`: the format its
    /// bytes show).
    pub fn reading_as(self, from: Option<SourceFormat>) -> TraceCache {
        TraceCache { from, ..self }
    }

    /// Options for the lazy reader: sidecars kept here, files read as
    /// this cache says; when strict, the data read through at the open
    /// ([`IndexChoice::Verify`]), so that damage and unfinished calls
    /// anywhere in the trace are found before anything is answered.
    pub fn lazy_options(&self) -> LazyOptions {
        let options = LazyOptions::default()
            .sidecar_dir(self.lookups.clone())
            .file_access(self.file_access);
        if self.strict {
            options.index(IndexChoice::Verify)
        } else {
            options
        }
    }

    /// The v22 trace for `input` (named `name` in messages): itself, or
    /// its import here, made now when absent or stale (`progress` gets
    /// the bytes read as it goes). When strict, an import that found its
    /// source incomplete or damaged, now or earlier, is an error.
    pub fn trace(&self, input: &Path, name: &str, progress: &dyn Fn(u64)) -> Result<TracePath> {
        Ok(self.import(input, name, progress)?.0)
    }

    /// [`trace`](Self::trace), with what its import found missing.
    fn import(
        &self,
        input: &Path,
        name: &str,
        progress: &dyn Fn(u64),
    ) -> Result<(TracePath, Option<String>)> {
        let trace = trace_in_as(input, &self.imports, self.from, progress)?;
        let problem = import_problem(&trace);
        self.check_import_problem(name, problem.clone())?;
        Ok((trace, problem))
    }

    /// When strict, fails when the import of the input named `name` found
    /// its source incomplete or damaged: unfinished calls, damaged tails,
    /// records skipped for want of a call.
    pub fn check_import(&self, name: &str, summary: &ImportSummary) -> Result<()> {
        self.check_import_problem(name, summary.problem())
    }

    fn check_import_problem(&self, name: &str, problem: Option<String>) -> Result<()> {
        match problem {
            Some(problem) if self.strict => {
                Err(self.refused(name, format!("incomplete or damaged: {problem}")))
            }
            _ => Ok(()),
        }
    }

    /// Strict opening's error for the input named `name`, found `what`.
    fn refused(&self, name: &str, what: String) -> Error {
        Error::BadSource {
            path: PathBuf::from(name),
            what: format!("{what} (and {} was asked for)", self.strict_flag),
        }
    }

    /// When strict, fails when `unfinished` calls or loops of the trace
    /// named `name` never ended.
    pub fn check_unfinished(&self, name: &str, unfinished: u64) -> Result<()> {
        if self.strict && unfinished > 0 {
            let what = format!("unfinished: {} never ended", calls_or_loops(unfinished));
            return Err(self.refused(name, what));
        }
        Ok(())
    }

    /// What a read of the trace named `name` left out or found missing,
    /// and where (`None` for a whole trace); when strict, an error
    /// instead, also for calls or loops never ended.
    pub fn data_warning(
        &self,
        name: &str,
        report: &LoadReport,
        data_len: u64,
    ) -> Result<Option<String>> {
        self.check_unfinished(name, report.unfinished_containers as u64)?;
        match report.summary(data_len) {
            Some(summary) if self.strict => Err(self.refused(name, summary)),
            Some(summary) => Ok(Some(format!("{name}: {summary}"))),
            None => Ok(None),
        }
    }

    /// Opens `input` (named `name` in messages) lazily with `options`
    /// (from [`lazy_options`](Self::lazy_options)), as a growing view when
    /// `growing`: imported first when foreign, then the status and a
    /// warning for each problem found (when strict, an error instead).
    pub fn open(
        &self,
        input: &Path,
        name: &str,
        options: LazyOptions,
        growing: bool,
    ) -> Result<OpenedTrace> {
        let (trace, import_problem) = self.import(input, name, &|_| {})?;
        let mut warnings = Vec::new();
        if let Some(problem) = &import_problem {
            warnings.push(format!("{name}: imported, incomplete: {problem}"));
        }
        if let Some(summary) = &trace.imported_now {
            warnings.extend(import_lines(summary));
        }
        let reader = if growing {
            options.open_growing(&trace.path)?
        } else {
            options.open(&trace.path)?
        };
        match &reader.report().status {
            IndexStatus::Rebuilt(problem) => warnings.push(format!(
                "{name}: index not used ({problem}); rebuilt from the data"
            )),
            IndexStatus::Used { complete: false } => warnings.push(format!(
                "{name}: index without footer: the recorder did not finish"
            )),
            IndexStatus::Used { complete: true } => {}
        }
        let data = &reader.report().data;
        let data_warning = self.data_warning(name, data, reader.context().data().len())?;
        let status = if growing {
            TraceStatus::Growing
        } else if data_warning.is_some() || import_problem.is_some() {
            TraceStatus::Damaged
        } else if data.unfinished_containers > 0 {
            TraceStatus::Unfinished
        } else {
            TraceStatus::Complete
        };
        warnings.extend(data_warning);
        Ok(OpenedTrace {
            reader,
            trace,
            status,
            warnings,
        })
    }
}

/// What the import behind `trace` found its source to lack, made now or
/// when it was cached.
fn import_problem(trace: &TracePath) -> Option<String> {
    match &trace.imported_now {
        Some(summary) => summary.problem(),
        None => trace
            .imported_from
            .and_then(|_| stored_problem(&trace.path)),
    }
}

/// An import's damage and warnings, a line each.
pub(crate) fn import_lines(summary: &ImportSummary) -> impl Iterator<Item = String> + '_ {
    let damage = summary
        .damage
        .iter()
        .map(|damage| format!("damaged: {damage}"));
    damage.chain(summary.warnings.iter().cloned())
}

/// `n` calls or loops in words.
fn calls_or_loops(n: u64) -> String {
    match n {
        1 => "1 call or loop".to_string(),
        n => format!("{} calls or loops", crate::print::grouped(n)),
    }
}
