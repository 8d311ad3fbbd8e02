//! Files written whole or not at all: [`write_file_atomically`] (and
//! [`write_derived_file_atomically`], unsynced), [`write_trace_atomically`] (a data file and its index), and the list of
//! named temporary files in progress that [`remove_temporaries`] removes
//! for a signal handler.
//!
//! Invariants: an output that is not a regular file (a character device
//! such as `/dev/null`, a FIFO, a socket) is written through in place,
//! never replaced; a symbolic link is followed and its target replaced,
//! the link kept; errors name the output as the caller gave it, never a
//! temporary name.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::error::{Error, Result};

/// Writes a file through `write` (buffered) into a temporary file beside
/// `path`, syncs it, then puts it in place of `path` and syncs the folder,
/// so readers never see half a file. On failure `path` is untouched and
/// the temporary file is gone.
///
/// On Linux the temporary file has no name while it is written
/// (`O_TMPFILE`), so that even a killed process leaves nothing behind; it
/// is linked under a temporary name and renamed over `path` once whole.
/// Elsewhere, or on a filesystem without unnamed files, it is a named
/// temporary file, removed when an error or a panic drops it and listed
/// while it exists for [`remove_temporaries`], which a program's signal
/// handler calls. I/O errors (including pathless [`Error::Io`] from `write`)
/// name `path`.
///
/// A `path` that is a character device, a FIFO or a socket is written
/// through in place: opened for writing (not created, not truncated), and
/// never replaced. A seekable one (`/dev/null`) is handed to `write`
/// directly; the bytes for one that is not (a pipe, a terminal) are
/// gathered in an unnamed temporary file, then copied to it, so that
/// `write` may seek. A `path` that is a symbolic link is followed (link by
/// link) and its target replaced; the link stays.
pub(crate) fn write_file_atomically<T>(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> Result<T>,
) -> Result<T> {
    write_atomically(path, true, false, write)
}

/// [`write_file_atomically`] for a `write` that also reads the file back
/// (by offset, under the buffer): an output written through in place (a
/// device) is gathered in an unnamed file first, then copied to it, as
/// one that cannot seek is.
pub(crate) fn write_file_atomically_read_back<T>(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> Result<T>,
) -> Result<T> {
    write_atomically(path, true, true, write)
}

/// [`write_file_atomically`] without syncing the file and its folder to
/// the disk, for a file made from others that every reader checks and can
/// make again (an index beside its data file). Readers still see the old
/// file or the new one whole; only a power loss soon after may leave it
/// missing, empty or damaged, which a reader finds and rebuilds. Syncing a
/// 1 GB trace's 142 MB index took ~70 ms of `tracetree index`'s 0.55 s.
pub(crate) fn write_derived_file_atomically<T>(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> Result<T>,
) -> Result<T> {
    write_atomically(path, false, false, write)
}

/// [`write_file_atomically`], syncing or not, reading back or not.
fn write_atomically<T>(
    path: &Path,
    synced: bool,
    read_back: bool,
    write: impl FnOnce(&mut BufWriter<File>) -> Result<T>,
) -> Result<T> {
    let shown = path;
    let io = |e| Error::io(shown, e);
    let path = match destination(path).map_err(io)? {
        Destination::InPlace => return write_in_place(shown, read_back, write),
        Destination::Replace(path) => path,
    };
    let path = path.as_path();
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut prefix = std::ffi::OsString::from(".");
    prefix.push(path.file_name().unwrap_or_default());
    prefix.push(".");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    // The mode a plain `File::create` gives (less the umask), not the
    // owner-only mode of a temporary file.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let fill = |file: File| -> Result<(T, File)> {
        let mut out = BufWriter::with_capacity(1 << 20, file);
        let value = write(&mut out).map_err(|e| match e {
            Error::Io { path: None, source } => io(source),
            e => e,
        })?;
        let file = out.into_inner().map_err(|e| io(e.into_error()))?;
        if synced {
            file.sync_all().map_err(io)?;
        }
        Ok((value, file))
    };
    #[cfg(target_os = "linux")]
    let value = match unnamed::create_in(dir) {
        Ok(file) => {
            let (value, file) = fill(file)?;
            unnamed::put_in_place(&file, &builder, dir, path).map_err(|e| io(unnamed_error(e)))?;
            value
        }
        Err(_) => fill_named(&builder, dir, (path, shown), fill)?,
    };
    #[cfg(not(target_os = "linux"))]
    let value = fill_named(&builder, dir, (path, shown), fill)?;
    if synced {
        File::open(dir).and_then(|dir| dir.sync_all()).map_err(io)?;
    }
    Ok(value)
}

/// Runs `write` on a temporary data file beside `output` (its index beside
/// it, `TEMP.idx`), then renames the index and the data file into place
/// (`output.idx`, `output`); on failure removes both temporary files and
/// leaves `output` as it was; both are listed for
/// [`remove_temporaries`] meanwhile. An existing trace is replaced, never
/// rewritten in place: a reader that maps it keeps its snapshot. Symbolic
/// links are followed as [`write_file_atomically`] follows them; an
/// output that is a device, a FIFO or a socket is refused (a trace is two
/// files). Errors name `output`, never the temporary name.
pub(crate) fn write_trace_atomically<T>(
    output: &Path,
    write: impl FnOnce(&Path) -> Result<T>,
) -> Result<T> {
    let with_index = |path: &Path| {
        let mut index = path.as_os_str().to_owned();
        index.push(".idx");
        PathBuf::from(index)
    };
    let shown = output;
    let io = |e| Error::io(shown, e);
    let output = match destination(output).map_err(io)? {
        Destination::InPlace => {
            return Err(Error::io(
                shown,
                std::io::Error::other(
                    "not a regular file: a trace is a data file and its index beside it \
                     (NAME and NAME.idx), so it is written to a file name",
                ),
            ));
        }
        Destination::Replace(path) => path,
    };
    let index_output = match destination(&with_index(shown)).map_err(io)? {
        Destination::InPlace => {
            return Err(Error::io(
                with_index(shown),
                std::io::Error::other("not a regular file: the index is written to a file name"),
            ));
        }
        Destination::Replace(path) => path,
    };
    let mut temp = output.as_os_str().to_owned();
    temp.push(format!(".tmp-{}", std::process::id()));
    let temp = PathBuf::from(temp);
    // Listed for `remove_temporaries` (an interrupted `gen` or import)
    // until renamed or removed.
    let _listed = (
        TemporaryName::new(&temp),
        TemporaryName::new(&with_index(&temp)),
    );
    // Removes both temporary files unless the write succeeded, even when
    // `write` panics.
    struct Leftovers<'a>(&'a [PathBuf; 2], bool);
    impl Drop for Leftovers<'_> {
        fn drop(&mut self) {
            if !self.1 {
                for path in self.0 {
                    let _ = std::fs::remove_file(path);
                }
            }
        }
    }
    let temporaries = [temp.clone(), with_index(&temp)];
    let mut leftovers = Leftovers(&temporaries, false);
    let result = write(&temp)
        .and_then(|value| {
            std::fs::rename(with_index(&temp), &index_output).map_err(io)?;
            std::fs::rename(&temp, &output).map_err(io)?;
            Ok(value)
        })
        // Errors name the output, not its temporary name.
        .map_err(|e| match e {
            Error::Io {
                path: Some(path),
                source,
            } if path == temp || path == with_index(&temp) => {
                let path = if path == temp {
                    shown.to_path_buf()
                } else {
                    with_index(shown)
                };
                Error::Io {
                    path: Some(path),
                    source,
                }
            }
            e => e,
        });
    leftovers.1 = result.is_ok();
    drop(leftovers);
    result
}

/// [`write_file_atomically`] through a named temporary file in `dir`,
/// renamed to `target` (errors name `shown`, the output as given).
fn fill_named<T>(
    builder: &tempfile::Builder<'_, '_>,
    dir: &Path,
    (target, shown): (&Path, &Path),
    fill: impl FnOnce(File) -> Result<(T, File)>,
) -> Result<T> {
    let io = |e| Error::io(shown, unnamed_error(e));
    // Removed when dropped: on an error or a panic below.
    let temp = builder.tempfile_in(dir).map_err(io)?;
    let _listed = TemporaryName::new(temp.path());
    let (value, _) = fill(temp.as_file().try_clone().map_err(io)?)?;
    temp.persist(target).map_err(|e| io(e.error))?;
    Ok(value)
}

/// Where a write to an output goes.
enum Destination {
    /// Through the output itself: a device, a FIFO or a socket.
    InPlace,
    /// A new file renamed over this path (the output, or the file its
    /// symbolic links lead to).
    Replace(PathBuf),
}

/// Links followed at most, as the kernel's limit (`ELOOP`).
const MAX_LINKS: usize = 40;

/// Where writing `path` goes: in place for an existing file that is
/// neither a regular file nor a folder, else the end of its chain of
/// symbolic links (which may not exist yet).
fn destination(path: &Path) -> std::io::Result<Destination> {
    if let Ok(meta) = std::fs::metadata(path)
        && !meta.is_file()
        && !meta.is_dir()
    {
        return Ok(Destination::InPlace);
    }
    let mut at = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = std::fs::read_link(&at)?;
                at = match at.parent() {
                    Some(parent) if target.is_relative() => parent.join(target),
                    _ => target,
                };
            }
            _ => return Ok(Destination::Replace(at)),
        }
    }
    Err(std::io::Error::other(format!(
        "more than {MAX_LINKS} symbolic links in a chain"
    )))
}

/// [`write_file_atomically`] of an output that is written through in
/// place ([`Destination::InPlace`]); through an unnamed file first when
/// it cannot seek or `write` reads back.
fn write_in_place<T>(
    path: &Path,
    read_back: bool,
    write: impl FnOnce(&mut BufWriter<File>) -> Result<T>,
) -> Result<T> {
    use std::io::{Seek, SeekFrom};
    let io = |e| Error::io(path, e);
    let named = |e: Error| match e {
        Error::Io { path: None, source } => io(source),
        e => e,
    };
    let mut output = File::options().write(true).open(path).map_err(io)?;
    if !read_back && output.stream_position().is_ok() {
        let mut out = BufWriter::with_capacity(1 << 20, output);
        let value = write(&mut out).map_err(named)?;
        out.into_inner().map_err(|e| io(e.into_error()))?;
        return Ok(value);
    }
    // Gathered in an unnamed file first, as `write` may seek or read back.
    let temp_dir = std::env::temp_dir();
    let gathered = tempfile::tempfile().map_err(|e| Error::io(&temp_dir, unnamed_error(e)))?;
    let mut out = BufWriter::with_capacity(1 << 20, gathered);
    let value = write(&mut out).map_err(named)?;
    let mut gathered = out
        .into_inner()
        .map_err(|e| Error::io(&temp_dir, e.into_error()))?;
    gathered
        .seek(SeekFrom::Start(0))
        .map_err(|e| Error::io(&temp_dir, e))?;
    std::io::copy(&mut gathered, &mut output).map_err(io)?;
    Ok(value)
}

/// `error` without the temporary file's name that `tempfile` adds to its
/// message: errors name the output the caller gave.
fn unnamed_error(error: std::io::Error) -> std::io::Error {
    match error.raw_os_error() {
        Some(code) => std::io::Error::from_raw_os_error(code),
        None => error,
    }
}

/// Files without a name until they are whole (Linux's `O_TMPFILE`).
#[cfg(target_os = "linux")]
mod unnamed {
    use std::fs::File;
    use std::io::{Seek, SeekFrom};
    use std::os::fd::AsRawFd;
    use std::path::Path;

    use rustix::fs::{AtFlags, CWD, Mode, OFlags};

    use super::TemporaryName;

    /// A file in `dir` that has no name, and is gone with the process
    /// unless it is linked.
    pub(super) fn create_in(dir: &Path) -> std::io::Result<File> {
        let flags = OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(CWD, dir, flags, Mode::from_raw_mode(0o666))?;
        Ok(File::from(fd))
    }

    /// Links the whole `file` under a temporary name in `dir` and renames
    /// that over `path`. Where the file cannot be linked (no `/proc`), its
    /// bytes are copied into a named temporary file instead.
    pub(super) fn put_in_place(
        file: &File,
        builder: &tempfile::Builder<'_, '_>,
        dir: &Path,
        path: &Path,
    ) -> std::io::Result<()> {
        let by_descriptor = format!("/proc/self/fd/{}", file.as_raw_fd());
        let linked = builder.make_in(dir, |name| {
            rustix::fs::linkat(CWD, &by_descriptor, CWD, name, AtFlags::SYMLINK_FOLLOW)
                .map_err(std::io::Error::from)
        });
        match linked {
            Ok(linked) => {
                let _listed = TemporaryName::new(linked.path());
                linked.persist(path).map_err(|e| e.error)?;
            }
            Err(_) => {
                let mut temp = builder.tempfile_in(dir)?;
                let _listed = TemporaryName::new(temp.path());
                let mut source = file;
                source.seek(SeekFrom::Start(0))?;
                std::io::copy(&mut source, temp.as_file_mut())?;
                temp.as_file().sync_all()?;
                temp.persist(path).map_err(|e| e.error)?;
            }
        }
        Ok(())
    }
}

/// The temporary files and folders this process's writers are filling
/// and have not yet renamed into place.
static TEMPORARIES: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// A temporary file or folder listed for [`remove_temporaries`] while
/// this guard lives (the writer removes or renames it before dropping the
/// guard).
pub(crate) struct TemporaryName(PathBuf);

impl TemporaryName {
    /// Lists `path` until the guard is dropped.
    pub(crate) fn new(path: &Path) -> TemporaryName {
        temporaries().push(path.to_path_buf());
        TemporaryName(path.to_path_buf())
    }
}

impl Drop for TemporaryName {
    fn drop(&mut self) {
        let mut list = temporaries();
        if let Some(at) = list.iter().rposition(|p| *p == self.0) {
            list.swap_remove(at);
        }
    }
}

fn temporaries() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    TEMPORARIES.lock().unwrap_or_else(|e| e.into_inner())
}

/// Removes the temporary files and folders that this process's writers
/// (`write_file_atomically`, the lookup sidecar's writer, the Parquet
/// export) have created and not yet renamed into place, and returns how
/// many it removed. For a program's handler of SIGINT or SIGTERM, just
/// before it exits: the interrupted writes then leave nothing beside their
/// outputs (the outputs themselves are untouched). Writers still running
/// fail afterwards.
pub fn remove_temporaries() -> usize {
    remove_listed(|_| true)
}

/// Removes the listed temporaries that `which` picks; the others stay
/// listed.
fn remove_listed(which: impl Fn(&Path) -> bool) -> usize {
    let picked: Vec<PathBuf> = {
        let mut list = temporaries();
        let (picked, kept) = std::mem::take(&mut *list)
            .into_iter()
            .partition(|path| which(path));
        *list = kept;
        picked
    };
    picked
        .iter()
        .filter(|path| {
            std::fs::remove_file(path)
                .or_else(|_| std::fs::remove_dir_all(path))
                .is_ok()
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names in `dir` that are listed as temporaries, and the others.
    fn entries(dir: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
        let listed = temporaries().clone();
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .partition(|p| listed.contains(p))
    }

    #[test]
    fn a_failed_atomic_write_leaves_nothing_and_keeps_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.idx");
        std::fs::write(&path, b"old").unwrap();
        let failed: Result<()> = write_file_atomically(&path, |out| {
            std::io::Write::write_all(out, b"half")?;
            // Beside the old file, only a listed temporary file (none at
            // all where the file has no name while written).
            let (listed, others) = entries(dir.path());
            assert_eq!(others, std::slice::from_ref(&path));
            #[cfg(target_os = "linux")]
            if unnamed::create_in(dir.path()).is_ok() {
                assert_eq!(listed, Vec::<PathBuf>::new(), "no name while written");
            }
            assert!(listed.len() <= 1, "{listed:?}");
            Err(Error::internal("stopped"))
        });
        assert!(failed.is_err());
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        assert_eq!(entries(dir.path()), (vec![], vec![path.clone()]));
        write_file_atomically(&path, |out| Ok(std::io::Write::write_all(out, b"new")?)).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        assert_eq!(entries(dir.path()), (vec![], vec![path.clone()]));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_ne!(mode & 0o044, 0, "readable as a created file is: {mode:o}");
        }
    }

    #[test]
    fn a_named_temporary_is_removed_by_remove_temporaries() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.idx");
        let builder = tempfile::Builder::new();
        let written = fill_named(&builder, dir.path(), (&path, &path), |file| {
            // A signal handler's call in the middle of the write (of the
            // temporaries of this test alone: others run beside it).
            assert_eq!(remove_listed(|p| p.starts_with(dir.path())), 1);
            Ok(((), file))
        });
        assert!(written.is_err(), "the rename of a removed file fails");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
