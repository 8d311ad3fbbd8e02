//! Where a command writes its output (`-o`): a file (replaced only with
//! `--force`), a device, FIFO or socket written through in place, or `-`,
//! standard output.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use tracetree::{Error, Result};

/// An output a command writes, once checked.
pub struct Output {
    /// The path the library writes.
    pub path: PathBuf,
    /// For `-` with standard output a regular file (`> file`): a
    /// temporary folder holding `path`, copied to standard output when the
    /// command is done and removed.
    spool: Option<tempfile::TempDir>,
}

impl Output {
    /// The output `-o` names, for a file written whole (`what` says what
    /// it is, for errors): `-` is standard output. Without `force`, an
    /// existing regular file is refused; a device, a FIFO or a socket is
    /// written through; a missing folder above the output fails.
    pub fn file(given: &Path, force: bool) -> Result<Output> {
        if is_stdout(given) {
            return stdout();
        }
        check_folder(given)?;
        refuse_existing(given, force)?;
        Ok(Output {
            path: given.to_path_buf(),
            spool: None,
        })
    }

    /// Whether this output is standard output (so that a command's
    /// summary goes to stderr instead).
    pub fn is_stdout(&self) -> bool {
        self.spool.is_some() || self.path == Path::new(STDOUT)
    }

    /// Ends the write: for standard output through a temporary file, its
    /// bytes copied to standard output.
    pub fn finish(self) -> Result<()> {
        if self.spool.is_some() {
            let mut file =
                std::fs::File::open(&self.path).map_err(|e| Error::io(Path::new("-"), e))?;
            let stdout = std::io::stdout();
            let mut stdout = stdout.lock();
            std::io::copy(&mut file, &mut stdout)?;
            stdout.flush()?;
        }
        Ok(())
    }
}

/// What `-o -` writes through when standard output is a pipe or a
/// terminal.
const STDOUT: &str = "/dev/stdout";

/// Whether `path` is `-` or a name of standard output (`/dev/stdout`,
/// `/dev/fd/1`, `/proc/self/fd/1`): written as `-` is, the summary on
/// stderr.
pub fn is_stdout(path: &Path) -> bool {
    ["-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"]
        .iter()
        .any(|name| path == Path::new(name))
}

/// Standard output as an output: written through `/dev/stdout` when it is
/// a pipe, a FIFO or a terminal (streamed), else (a file, a socket)
/// gathered in a temporary file and copied at the end, so that `>>` and
/// sockets work as they do for any command.
fn stdout() -> Result<Output> {
    use std::os::unix::fs::FileTypeExt;
    let through = std::fs::metadata(STDOUT).is_ok_and(|m| {
        let kind = m.file_type();
        kind.is_fifo() || kind.is_char_device()
    });
    if through || std::io::stdout().is_terminal() {
        return Ok(Output {
            path: PathBuf::from(STDOUT),
            spool: None,
        });
    }
    let dir = tempfile::tempdir().map_err(|e| Error::io(std::env::temp_dir(), e))?;
    Ok(Output {
        path: dir.path().join("output"),
        spool: Some(dir),
    })
}

/// Fails, naming it, when the folder `path` would be written in does not
/// exist: no command makes the folders above its output.
pub fn check_folder(path: &Path) -> Result<()> {
    let Some(folder) = path.parent().filter(|f| !f.as_os_str().is_empty()) else {
        return Ok(());
    };
    if folder.is_dir() {
        return Ok(());
    }
    let why = if folder.exists() {
        "is not a folder"
    } else {
        "does not exist (no command makes the folders above its output)"
    };
    Err(Error::io(
        path,
        std::io::Error::other(format!("{} {why}", folder.display())),
    ))
}

/// Fails when `path` is an existing regular file (through its links) and
/// `force` was not given; a device, a FIFO or a socket is written through,
/// never replaced, so it needs no `--force`.
pub fn refuse_existing(path: &Path, force: bool) -> Result<()> {
    if !force && std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return Err(Error::invalid(
            "output",
            format!("{} exists (give --force to replace it)", path.display()),
        ));
    }
    Ok(())
}

/// The error for `-o -` where the output is not one stream: `what` says
/// what it is.
pub fn not_a_stream(what: &str) -> Error {
    Error::invalid(
        "output",
        format!("-o - (standard output) cannot take {what}; give a file name"),
    )
}

/// Checks the output of a command that writes a v22 trace (`NAME` and
/// `NAME.idx`): not `-`, its folder there, and without `force` neither
/// file an existing regular file.
pub fn check_trace_output(path: &Path, force: bool) -> Result<()> {
    if is_stdout(path) {
        return Err(not_a_stream(
            "a trace (a data file and its index, NAME and NAME.idx); `pack -o -` writes one \
             file",
        ));
    }
    check_folder(path)?;
    refuse_existing(path, force)?;
    refuse_existing(&tracetree::LazyTraceReader::index_path(path), force)
}
