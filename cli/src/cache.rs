//! Where the command keeps what it caches: each trace's lookup sidecar
//! (`DIR/lookups/`) and each foreign input's import (`DIR/`), in the
//! per-user cache directory unless `--cache-dir` or `--no-cache` says
//! otherwise. Nothing is written beside the user's files.

use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressStyle};
use tracetree::import::{ImportSummary, SourceFormat, TracePath};
use tracetree::open::TraceCache;
use tracetree::read::{
    EagerOptions, EagerTrace, IndexChoice, LazyOptions, LazyTraceReader, LoadReport,
};
use tracetree::{Error, FileAccess, Result};

/// The cache a command uses: the library's [`TraceCache`] with the
/// command line's progress bars, messages on stderr, the eager loader's
/// memory budget and the name a spooled input goes by.
pub struct Cache {
    /// Where and how traces are opened.
    traces: TraceCache,
    /// The eager loader's memory budget (`--memory-budget`); `None`: the
    /// memory available when a load starts.
    memory_budget: Option<u64>,
    /// A spooled input: the path it is read through and the name the user
    /// gave (`-`, a pipe's path), which messages show instead.
    shown: Option<(PathBuf, PathBuf)>,
}

impl Cache {
    /// The cache `--cache-dir DIR` names, none with `--no-cache`, else the
    /// per-user cache directory (none when there is no home directory).
    pub fn new(dir: Option<PathBuf>, no_cache: bool, strict: bool) -> Result<Cache> {
        let traces = match dir {
            _ if no_cache => TraceCache::temporary()?,
            Some(dir) => TraceCache::in_folder(dir)?,
            None => TraceCache::per_user()?,
        };
        Ok(Cache {
            traces: traces.strict(strict).strict_flag("--strict"),
            memory_budget: None,
            shown: None,
        })
    }

    /// This cache with the eager loader's memory budget `budget` (`None`:
    /// the memory available when a load starts).
    pub fn memory_budget(self, budget: Option<u64>) -> Cache {
        Cache {
            memory_budget: budget,
            ..self
        }
    }

    /// This cache reading every input as `from` (`None`: the format its
    /// bytes show).
    pub fn reading_as(self, from: Option<SourceFormat>) -> Cache {
        Cache {
            traces: self.traces.reading_as(from),
            ..self
        }
    }

    /// This cache with its readers reading files as `access` says.
    pub fn file_access(self, access: FileAccess) -> Cache {
        Cache {
            traces: self.traces.file_access(access),
            ..self
        }
    }

    /// This cache reading the spooled input at `path` that the user named
    /// `name`: messages name it `name`.
    pub fn spooled(self, path: PathBuf, name: PathBuf) -> Cache {
        Cache {
            shown: Some((path, name)),
            ..self
        }
    }

    /// This cache naming strict opening `flag` in its refusals
    /// ([`TraceCache::strict_flag`]; `--strict` by default).
    pub fn strict_flag(self, flag: &'static str) -> Cache {
        Cache {
            traces: self.traces.strict_flag(flag),
            ..self
        }
    }

    /// The library's cache this one opens through.
    pub fn traces(&self) -> &TraceCache {
        &self.traces
    }

    /// The name messages give `path`: the user's for a spooled input.
    pub fn name(&self, path: &Path) -> String {
        match &self.shown {
            Some((spooled, name)) if spooled == path => name.display().to_string(),
            _ => path.display().to_string(),
        }
    }

    /// Options for the lazy reader ([`TraceCache::lazy_options`]).
    pub fn lazy_options(&self) -> LazyOptions {
        self.traces.lazy_options()
    }

    /// Under `--strict`, reads the trace at `path` through and fails when
    /// any of it is damaged, missing or unfinished (for commands that copy
    /// a trace without reading it).
    pub fn check_whole(&self, path: &Path) -> Result<()> {
        if self.traces.is_strict() {
            self.open_lazy_whole(path)?;
        }
        Ok(())
    }

    /// Opens `path` with the lazy reader, its sidecar in this cache.
    pub fn open_lazy(&self, path: &Path) -> Result<LazyTraceReader> {
        self.open_showing_rebuild(path, self.lazy_options())
    }

    /// [`open_lazy`](Self::open_lazy) with a node cache of `cache_bytes`.
    pub fn open_lazy_caching(&self, path: &Path, cache_bytes: usize) -> Result<LazyTraceReader> {
        self.open_showing_rebuild(path, self.lazy_options().cache_bytes(cache_bytes))
    }

    /// Opens `path` with the lazy reader to read all of it, as `print` and
    /// `dump` do ([`IndexChoice::Verify`]): the data is read through at the
    /// open, so that damage anywhere in it is found there (and warned
    /// about, or fails under `--strict`) and the rows are those the eager
    /// loader gives; later such opens map the sidecar that scan kept.
    pub fn open_lazy_whole(&self, path: &Path) -> Result<LazyTraceReader> {
        self.open_showing_rebuild(path, self.lazy_options().index(IndexChoice::Verify))
    }

    /// Opens `path` with the eager loader, within the memory budget.
    pub fn open_eager(&self, path: &Path) -> Result<EagerTrace> {
        let mut options = EagerOptions::default();
        options.memory_budget = self.memory_budget.or_else(available_memory);
        options.file_access = self.lazy_options().access();
        let trace = EagerTrace::open_with(path, options)?;
        self.check_data(path, trace.report(), trace.context().data().len())?;
        Ok(trace)
    }

    /// Opens `path` with `options`, with a progress bar on stderr (when it
    /// is a terminal) while the open rebuilds lookups from the data, as it
    /// does for a trace without a usable index or to read it through.
    fn open_showing_rebuild(&self, path: &Path, options: LazyOptions) -> Result<LazyTraceReader> {
        let bar = ProgressBar::hidden();
        let shown = bar.clone();
        let total = std::fs::metadata(path).map_or(0, |m| m.len());
        let started = std::sync::Once::new();
        let options = options.rebuild_progress(move |bytes| {
            started.call_once(|| {
                shown.set_length(total);
                reveal(&shown, "reading the trace {bar:40} {bytes}/{total_bytes}");
            });
            shown.inc(bytes);
        });
        let reader = options.open(path);
        bar.finish_and_clear();
        let (reader, warning) = self.opened(path, reader?)?;
        if let Some(warning) = warning {
            eprintln!("tracetree: warning: {warning}");
        }
        Ok(reader)
    }

    /// `reader`, with the warning saying what its open left out or found
    /// missing (under `--strict`, an error instead).
    fn opened(
        &self,
        path: &Path,
        reader: LazyTraceReader,
    ) -> Result<(LazyTraceReader, Option<String>)> {
        let report = &reader.report().data;
        let warning = self.data_warning(path, report, reader.context().data().len())?;
        Ok((reader, warning))
    }

    /// One warning line on stderr saying what a read of `path` left out or
    /// found missing, and where; an error instead under `--strict`.
    pub fn check_data(&self, path: &Path, report: &LoadReport, data_len: u64) -> Result<()> {
        if let Some(warning) = self.data_warning(path, report, data_len)? {
            eprintln!("tracetree: warning: {warning}");
        }
        Ok(())
    }

    /// What a read of `path` left out or found missing, and where
    /// ([`TraceCache::data_warning`]).
    pub fn data_warning(
        &self,
        path: &Path,
        report: &LoadReport,
        data_len: u64,
    ) -> Result<Option<String>> {
        self.traces.data_warning(&self.name(path), report, data_len)
    }

    /// Under `--strict`, fails when `unfinished` calls or loops of the
    /// trace at `path` never ended.
    pub fn check_unfinished(&self, path: &Path, unfinished: u64) -> Result<()> {
        self.traces.check_unfinished(&self.name(path), unfinished)
    }

    /// Under `--strict`, fails when the import of `file` found its source
    /// incomplete or damaged.
    pub fn check_import(&self, file: &Path, summary: &ImportSummary) -> Result<()> {
        self.traces.check_import(&self.name(file), summary)
    }

    /// The v22 trace to open for `file`: itself, or for a foreign trace its
    /// import in this cache (made on first use, said on stderr).
    pub fn trace_path(&self, file: &Path) -> Result<PathBuf> {
        Ok(self.trace(file)?.path)
    }

    /// [`trace_path`](Self::trace_path), with the format it was imported
    /// from.
    pub fn trace(&self, file: &Path) -> Result<TracePath> {
        let bar = ProgressBar::hidden();
        let trace = self.traces.trace(file, &self.name(file), &|bytes| {
            if bar.is_hidden() {
                bar.set_length(source_size(file));
                reveal(&bar, "importing {bar:40} {bytes}/{total_bytes}");
            }
            bar.inc(bytes)
        });
        bar.finish_and_clear();
        let trace = trace?;
        if let (Some(format), Some(summary)) = (trace.imported_from, &trace.imported_now) {
            report(summary);
            let later = if self.traces.is_temporary() {
                "removed when the command ends"
            } else {
                "later opens reuse it"
            };
            eprintln!(
                "tracetree: imported {} ({format}) into {}; {later}",
                self.name(file),
                trace.path.display()
            );
        }
        Ok(trace)
    }
}

/// Shows `bar`, made hidden until its work turned out to be under way, on
/// stderr (when it is a terminal) in `template`'s style.
fn reveal(bar: &ProgressBar, template: &str) {
    bar.set_style(ProgressStyle::with_template(template).expect("valid template"));
    bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
}

/// The bytes of a source: a file's length, or a folder's files' total.
pub fn source_size(input: &Path) -> u64 {
    match std::fs::read_dir(input) {
        Ok(entries) => entries
            .flatten()
            .filter_map(|e| e.metadata().ok())
            .map(|m| m.len())
            .sum(),
        Err(_) => std::fs::metadata(input).map_or(0, |m| m.len()),
    }
}

/// The summary's damage and warnings on stderr.
pub fn report(summary: &ImportSummary) {
    for damage in &summary.damage {
        eprintln!("tracetree: damaged: {damage}");
    }
    for warning in &summary.warnings {
        eprintln!("tracetree: warning: {warning}");
    }
    eprintln!("imported {summary}");
}

/// An input read from stdin (`-`), a pipe or a FIFO: copied once into an
/// unnamed temporary file in the temporary directory (never beside the
/// input), then read as a regular file through [`path`](Self::path). It
/// has no index (the readers rebuild one) and keeps no sidecar.
pub struct Spooled {
    /// The file, open for as long as the command runs.
    _file: std::fs::File,
    /// Where files cannot be read through their descriptor: the named
    /// temporary file, removed when dropped.
    #[cfg(not(target_os = "linux"))]
    _named: tempfile::TempPath,
    /// A path that reads the file.
    pub path: PathBuf,
}

/// Whether `input` must be spooled before it is read: `-`, or anything
/// that is neither a file nor a folder (a pipe, a FIFO, `<(command)`).
pub fn needs_spooling(input: &Path) -> bool {
    input == Path::new("-") || std::fs::metadata(input).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

/// The spooled file of this command and the input it holds, so that an
/// error names the input as the user gave it.
static SPOOLED: std::sync::OnceLock<(PathBuf, PathBuf)> = std::sync::OnceLock::new();

/// `error`, naming the input the user gave (`-`, a pipe) where it named
/// the file that input was spooled into.
pub fn as_given(error: Error) -> Error {
    match SPOOLED.get() {
        Some((spooled, input)) => error.shown_as(spooled, input),
        None => error,
    }
}

/// Copies `input` (`-` for stdin) into a [`Spooled`] file, with a progress
/// line on stderr if it takes more than a second.
pub fn spool(input: &Path) -> Result<Spooled> {
    use std::io::{Read, Write};
    let temp_dir = std::env::temp_dir();
    let spool_error = |e| Error::io(&temp_dir, e);
    #[cfg(target_os = "linux")]
    let mut file = tempfile::tempfile().map_err(spool_error)?;
    #[cfg(not(target_os = "linux"))]
    let (mut file, named) = tempfile::NamedTempFile::new()
        .map_err(spool_error)?
        .into_parts();
    let mut source: Box<dyn Read> = if input == Path::new("-") {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(std::fs::File::open(input).map_err(|e| Error::io(input, e))?)
    };
    let bar = ProgressBar::hidden();
    let started = std::time::Instant::now();
    let mut buffer = vec![0; 1 << 20];
    loop {
        let read = match source.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => read,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::io(input, e)),
        };
        file.write_all(&buffer[..read]).map_err(spool_error)?;
        if bar.is_hidden() && started.elapsed().as_secs() >= 1 {
            bar.set_message(input.display().to_string());
            reveal(&bar, "reading {msg}: {bytes} ({bytes_per_sec})");
        }
        bar.inc(read as u64);
    }
    bar.finish_and_clear();
    file.flush().map_err(spool_error)?;
    #[cfg(target_os = "linux")]
    let path = {
        use std::os::fd::AsRawFd;
        PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()))
    };
    #[cfg(not(target_os = "linux"))]
    let path = named.to_path_buf();
    let _ = SPOOLED.set((path.clone(), input.to_path_buf()));
    Ok(Spooled {
        _file: file,
        #[cfg(not(target_os = "linux"))]
        _named: named,
        path,
    })
}

/// The memory available to a new process (`MemAvailable` of
/// `/proc/meminfo`); `None` where that cannot be read.
fn available_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}
