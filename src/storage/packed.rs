//! Packed traces: the recorder's ZIP form of a trace (`NAME.packedtrace`),
//! opened in place and written.
//!
//! A packed trace holds `info.txt` (a description, text), `trace.trace`
//! (the data file) and `trace.idx` (its index); a diff's pack adds `.diff`,
//! `info.left.txt`, `info.right.txt`, `diff.idmap` and `diff.threadmap`.
//! Any other entry is an error, as it is for the recorder's unpacker; a
//! missing index is not (the readers rebuild one, as for a plain trace).
//!
//! Opening maps the file and reads the ZIP's central directory with the
//! `zip` crate (Zip64 included). The `zip` crate reads the directory,
//! the entries' headers and deflated entries by `pread`
//! ([`TraceBytes::copy_at`]), never through the mapping, so what it reads
//! never stays resident. An entry *stored* without compression is
//! its own bytes in the file: its [`TraceBytes`] is a slice of the mapping
//! ([`TraceBytes::slice`]), so a stored pack opens as fast as the plain
//! pair, with no temporary copy and no extra memory. Its CRC is not
//! checked, which would read every byte at open; the readers check the
//! trace's structure as they go, as for a plain trace. A data or index
//! entry *deflated at level 0* (the recorder's `ZipOutputStream`: its
//! data sits in stored deflate blocks of 32 KiB, each behind a 5-byte
//! header, so it is not contiguous in the file) is read in place too:
//! its blocks are walked on first need (`StoredBlocks`) and its
//! [`TraceBytes`] are paged in from the file on first read
//! (`TraceBytes::paged`), with no copy on disk and no more memory than
//! the readers' resident window. Where that cannot be (a really
//! compressed entry, or no `userfaultfd` here: [`PackedTrace::why_inflated`]
//! says), the entry is inflated into memory, its CRC and size checked, up
//! to [`PackedTrace::MAX_INFLATED`] bytes; [`PackedTrace::unpack`] writes
//! it to files instead, in constant memory (the command line's import
//! cache does that for packs not read in place).
//!
//! [`PackedTrace::write`] writes the layout with every entry stored (the data
//! entry aligned to a page, so its pages are the file's), which the
//! recorder's unpacker (`ZipInputStream`) and any ZIP tool read.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use zip::result::ZipError;
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipArchive, ZipWriter};

use crate::error::{Error, Result};
use crate::storage::stored_blocks::StoredBlocks;
use crate::storage::{TraceBytes, write_file_atomically};

/// The data file's entry.
pub(crate) const DATA_ENTRY: &str = "trace.trace";
/// The index file's entry.
pub(crate) const INDEX_ENTRY: &str = "trace.idx";
/// The description's entry.
pub(crate) const INFO_ENTRY: &str = "info.txt";
/// Every entry a packed trace may hold: the three above, then a diff's.
const KNOWN_ENTRIES: [&str; 8] = [
    INFO_ENTRY,
    DATA_ENTRY,
    INDEX_ENTRY,
    ".diff",
    "info.left.txt",
    "info.right.txt",
    "diff.idmap",
    "diff.threadmap",
];

/// The first bytes of a ZIP file (a local file header).
const ZIP_MAGIC: [u8; 4] = *b"PK\x03\x04";

/// One entry of a packed trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackedEntry {
    /// Its name: [`PackedTrace::DATA_ENTRY`], [`PackedTrace::INDEX_ENTRY`],
    /// [`PackedTrace::INFO_ENTRY`], or one of a diff pack's.
    pub name: String,
    /// Whether it is stored without compression (readable in place).
    pub stored: bool,
    /// Its bytes once unpacked.
    pub size: u64,
    /// Its bytes in the ZIP.
    pub packed_size: u64,
    /// Where its bytes start in the ZIP.
    pub offset: u64,
}

/// A packed trace, opened: its entries, and the data and index as bytes.
#[derive(Debug)]
pub struct PackedTrace {
    path: PathBuf,
    file: TraceBytes,
    entries: Vec<PackedEntry>,
    /// For each deflated data or index entry, its stored deflate blocks,
    /// or why it is not read in place: walked on first need.
    blocks: OnceLock<Vec<Option<std::result::Result<StoredBlocks, String>>>>,
}

/// The `zip` crate's view of a packed trace: its bytes read by `pread`
/// ([`TraceBytes::copy_at`]), never through the mapping (the module's doc
/// says why).
struct BytesCursor<'a> {
    bytes: &'a TraceBytes,
    at: u64,
}

impl BytesCursor<'_> {
    /// A cursor at the start of `bytes`, behind a buffer of `capacity`
    /// bytes, as the `zip` crate reads: small to read the directory and
    /// headers (every seek empties it), large to copy an entry.
    fn buffered(bytes: &TraceBytes, capacity: usize) -> BufReader<BytesCursor<'_>> {
        BufReader::with_capacity(capacity, BytesCursor { bytes, at: 0 })
    }
}

impl Read for BytesCursor<'_> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        let read = self.bytes.copy_at(self.at, buffer);
        self.at += read as u64;
        Ok(read)
    }
}

impl Seek for BytesCursor<'_> {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        let at = match to {
            SeekFrom::Start(at) => Some(at),
            SeekFrom::End(delta) => self.bytes.len().checked_add_signed(delta),
            SeekFrom::Current(delta) => self.at.checked_add_signed(delta),
        };
        self.at = at.ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "seek before the start of the ZIP",
            )
        })?;
        Ok(self.at)
    }
}

impl PackedTrace {
    /// The data file's entry: `trace.trace`.
    pub const DATA_ENTRY: &'static str = DATA_ENTRY;
    /// The index file's entry: `trace.idx`.
    pub const INDEX_ENTRY: &'static str = INDEX_ENTRY;
    /// The description's entry: `info.txt`.
    pub const INFO_ENTRY: &'static str = INFO_ENTRY;

    /// The most bytes a compressed entry is inflated into memory
    /// ([`data`](Self::data), [`index`](Self::index)): 1 GiB. Larger
    /// ones are [`unpack`](Self::unpack)ed to files.
    pub const MAX_INFLATED: u64 = 1 << 30;

    /// Whether `bytes` begin as a ZIP file does (a packed trace, or
    /// another ZIP that [`open`](Self::open) refuses).
    pub fn looks_packed(bytes: &[u8]) -> bool {
        bytes.starts_with(&ZIP_MAGIC)
    }

    /// Whether the file at `path` begins as a ZIP file does.
    pub fn is_packed(path: &Path) -> bool {
        let mut magic = [0; 4];
        File::open(path)
            .and_then(|mut file| file.read_exact(&mut magic))
            .is_ok()
            && Self::looks_packed(&magic)
    }

    /// Maps the packed trace at `path` and reads its directory.
    pub fn open(path: &Path) -> Result<PackedTrace> {
        Self::from_bytes(path, TraceBytes::map(path)?)
    }

    /// A packed trace over `file`, the bytes of the ZIP at `path` (named
    /// in errors).
    pub fn from_bytes(path: &Path, file: TraceBytes) -> Result<PackedTrace> {
        let bad = |what: String| Error::BadSource {
            path: path.to_path_buf(),
            what,
        };
        let mut archive = ZipArchive::new(BytesCursor::buffered(&file, 4 << 10))
            .map_err(|e| bad(format!("not a readable ZIP file: {e}")))?;
        let mut entries = Vec::with_capacity(archive.len().min(KNOWN_ENTRIES.len()));
        for i in 0..archive.len() {
            let entry = archive
                .by_index_raw(i)
                .map_err(|e| bad(format!("entry {i} of the ZIP: {e}")))?;
            let name = String::from_utf8_lossy(entry.name_raw()).into_owned();
            if !KNOWN_ENTRIES.contains(&name.as_str()) {
                return Err(bad(format!(
                    "unknown entry {name:?}: a packed trace holds only {}",
                    KNOWN_ENTRIES.join(", ")
                )));
            }
            if entries.iter().any(|e: &PackedEntry| e.name == name) {
                return Err(bad(format!("entry {name:?} appears twice")));
            }
            if entry.encrypted() {
                return Err(bad(format!("entry {name:?} is encrypted")));
            }
            let stored = match entry.compression() {
                CompressionMethod::Stored => true,
                CompressionMethod::Deflated => false,
                other => {
                    return Err(bad(format!(
                        "entry {name:?} is compressed with {other}, not stored or deflated"
                    )));
                }
            };
            let offset = entry
                .data_start()
                .ok_or_else(|| bad(format!("entry {name:?} has no data offset")))?;
            let packed_size = entry.compressed_size();
            let end = offset.checked_add(packed_size);
            if end.is_none_or(|end| end > file.len()) {
                return Err(bad(format!(
                    "entry {name:?} ({packed_size} bytes at offset {offset}) runs past the \
                     end of the file ({} bytes): a cut packed trace",
                    file.len()
                )));
            }
            if stored && entry.size() != packed_size {
                return Err(bad(format!(
                    "stored entry {name:?} says {} bytes unpacked but holds {packed_size}",
                    entry.size()
                )));
            }
            entries.push(PackedEntry {
                name,
                stored,
                size: entry.size(),
                packed_size,
                offset,
            });
        }
        drop(archive);
        if !entries.iter().any(|e| e.name == DATA_ENTRY) {
            return Err(bad(format!("no {DATA_ENTRY} entry: not a packed trace")));
        }
        Ok(PackedTrace {
            path: path.to_path_buf(),
            file,
            entries,
            blocks: OnceLock::new(),
        })
    }

    /// The file it was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A diff's map back to its inputs (`diff.idmap`, `diff.threadmap`);
    /// `None` when the pack holds none.
    pub fn diff_map(&self) -> Option<super::diff_map::DiffMap> {
        super::diff_map::DiffMap::of(self)
    }

    /// Its entries, in the ZIP's order.
    pub fn entries(&self) -> &[PackedEntry] {
        &self.entries
    }

    /// The entry called `name`.
    pub fn entry(&self, name: &str) -> Option<&PackedEntry> {
        self.entries.iter().find(|e| e.name == name)
    }

    /// Whether the data and index are read in place: each stored, or
    /// deflated at level 0 (stored deflate blocks only) where pages can be
    /// filled on first read (`TraceBytes::paged`).
    pub fn in_place(&self) -> bool {
        self.why_inflated().is_none()
    }

    /// Why the data or index is inflated into memory rather than read in
    /// place; `None` when both are read in place.
    pub fn why_inflated(&self) -> Option<String> {
        let mut deflated = self.blocks().iter().flatten().peekable();
        deflated.peek()?;
        match deflated.find_map(|blocks| blocks.as_ref().err()) {
            Some(why) => Some(why.clone()),
            None => TraceBytes::paging_available().err(),
        }
    }

    /// Whether it is a diff's pack.
    pub fn is_diff(&self) -> bool {
        self.entry(".diff").is_some()
    }

    /// The data file's bytes: a slice of the mapping when stored, filled
    /// from the file on first read when deflated at level 0 (see
    /// [`in_place`](Self::in_place)), else inflated into memory.
    pub fn data(&self) -> Result<TraceBytes> {
        let entry = self.entry(DATA_ENTRY).expect("checked at open");
        self.bytes_of(entry)
    }

    /// The index file's bytes, `None` when the pack holds no index.
    pub fn index(&self) -> Result<Option<TraceBytes>> {
        self.entry_bytes(INDEX_ENTRY)
    }

    /// The bytes of the entry `name`, as [`data`](Self::data) reads them;
    /// `None` when the pack has no such entry.
    pub fn entry_bytes(&self, name: &str) -> Result<Option<TraceBytes>> {
        self.entry(name)
            .map(|entry| self.bytes_of(entry))
            .transpose()
    }

    /// The description (`info.txt`), empty when there is none; bytes that
    /// are not UTF-8 are replaced.
    pub fn info(&self) -> Result<String> {
        let Some(entry) = self.entry(INFO_ENTRY) else {
            return Ok(String::new());
        };
        let bytes = self.bytes_of(entry)?;
        Ok(String::from_utf8_lossy(bytes.as_slice()).into_owned())
    }

    /// Writes the data entry to `data` and the index entry (if any) to
    /// `index`, streaming: constant memory whatever their size. Returns
    /// whether there was an index.
    pub fn unpack(&self, data: &mut impl Write, index: &mut impl Write) -> Result<bool> {
        self.copy_entry(DATA_ENTRY, data)?;
        if self.entry(INDEX_ENTRY).is_some() {
            self.copy_entry(INDEX_ENTRY, index)?;
            return Ok(true);
        }
        Ok(false)
    }

    fn copy_entry(&self, name: &str, out: &mut impl Write) -> Result<()> {
        let mut archive = self.archive()?;
        let mut entry = archive.by_name(name).map_err(|e| self.zip_error(name, e))?;
        let mut buffer = vec![0; 1 << 20];
        loop {
            let read = entry
                .read(&mut buffer)
                .map_err(|e| self.read_error(name, e))?;
            if read == 0 {
                return Ok(());
            }
            out.write_all(&buffer[..read])?;
        }
    }

    fn bytes_of(&self, entry: &PackedEntry) -> Result<TraceBytes> {
        if entry.stored {
            let range = entry.offset..entry.offset + entry.packed_size;
            return Ok(self.file.slice(range).expect("checked at open"));
        }
        let at = self.entries.iter().position(|e| e.name == entry.name);
        if let Some(Some(Ok(blocks))) = at.map(|at| &self.blocks()[at])
            && let Ok(bytes) = TraceBytes::paged(blocks.clone())
        {
            return Ok(bytes);
        }
        if entry.size > Self::MAX_INFLATED {
            return Err(self.bad(format!(
                "entry {:?} is deflated and {} bytes long, more than the {} this reader \
                 inflates into memory: unpack it (`tracetree import --from packed`)",
                entry.name,
                entry.size,
                Self::MAX_INFLATED
            )));
        }
        let mut archive = self.archive()?;
        let reader = archive
            .by_name(&entry.name)
            .map_err(|e| self.zip_error(&entry.name, e))?;
        // The declared size is checked above and by the inflater (which
        // stops at it); the first allocation is bounded however it lies.
        let mut bytes = Vec::with_capacity(entry.size.min(64 << 20) as usize);
        reader
            .take(Self::MAX_INFLATED)
            .read_to_end(&mut bytes)
            .map_err(|e| self.read_error(&entry.name, e))?;
        Ok(TraceBytes::from_vec(bytes))
    }

    /// The deflated data and index entries' stored blocks, walked once
    /// (`None` for the other entries).
    fn blocks(&self) -> &[Option<std::result::Result<StoredBlocks, String>>] {
        self.blocks.get_or_init(|| {
            self.entries
                .iter()
                .map(|e| {
                    let trace = e.name == DATA_ENTRY || e.name == INDEX_ENTRY;
                    (trace && !e.stored).then(|| {
                        StoredBlocks::walk(&self.file, e.offset, e.packed_size, e.size)
                            .map_err(|why| format!("{:?} is not stored blocks only: {why}", e.name))
                    })
                })
                .collect()
        })
    }

    fn archive(&self) -> Result<ZipArchive<BufReader<BytesCursor<'_>>>> {
        ZipArchive::new(BytesCursor::buffered(&self.file, 64 << 10))
            .map_err(|e| self.bad(format!("not a readable ZIP file: {e}")))
    }

    fn bad(&self, what: String) -> Error {
        Error::BadSource {
            path: self.path.clone(),
            what,
        }
    }

    fn zip_error(&self, name: &str, error: ZipError) -> Error {
        self.bad(format!("entry {name:?}: {error}"))
    }

    fn read_error(&self, name: &str, error: std::io::Error) -> Error {
        self.bad(format!("entry {name:?} is damaged: {error}"))
    }
}

/// What [`write_packed_entries`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PackSummary {
    /// Bytes of the packed trace.
    pub bytes: u64,
    /// Bytes of its data entry.
    pub data: u64,
    /// Bytes of its index entry.
    pub index: u64,
}

impl PackedTrace {
    /// Writes a packed trace at `out` holding `info` as `info.txt`, the
    /// data file at `data` and the index file at `index`, every entry
    /// stored (the data entry starting on a page boundary), Zip64 where an
    /// entry needs it. Written atomically: a failure leaves nothing at
    /// `out`. Returns the packed trace's size in bytes (its entries hold
    /// the files whole).
    pub fn write(out: &Path, info: &str, data: &Path, index: &Path) -> Result<u64> {
        Ok(write_packed(out, info, data, index)?.bytes)
    }
}

/// [`PackedTrace::write`].
pub(crate) fn write_packed(
    out: &Path,
    info: &str,
    data: &Path,
    index: &Path,
) -> Result<PackSummary> {
    write_packed_entries(
        out,
        &[
            PackSource::Bytes(INFO_ENTRY, info.as_bytes()),
            PackSource::File(DATA_ENTRY, data),
            PackSource::File(INDEX_ENTRY, index),
        ],
    )
}

/// What one entry of a packed trace is written from.
#[derive(Clone, Copy)]
pub(crate) enum PackSource<'a> {
    /// The entry named so, holding these bytes.
    Bytes(&'a str, &'a [u8]),
    /// The entry named so, holding this file's bytes.
    File(&'a str, &'a Path),
    /// The entry named so, holding these files' bytes one after another.
    Files(&'a str, &'a [PathBuf]),
    /// The entry named so, of this many bytes, which the function writes.
    Written(&'a str, u64, &'a dyn Fn(&mut dyn Write) -> Result<()>),
}

impl std::fmt::Debug for PackSource<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PackSource::Bytes(name, bytes) => write!(f, "Bytes({name:?}, {} bytes)", bytes.len()),
            PackSource::File(name, path) => write!(f, "File({name:?}, {path:?})"),
            PackSource::Files(name, paths) => write!(f, "Files({name:?}, {paths:?})"),
            PackSource::Written(name, len, _) => write!(f, "Written({name:?}, {len} bytes)"),
        }
    }
}

/// Bytes read from a file at a time while packing it.
const PACK_BUFFER: usize = 1 << 20;

/// A writer that counts what passes through it.
struct CountingWriter<W> {
    inner: W,
    count: u64,
}

impl<W: Write> Write for CountingWriter<W> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let written = self.inner.write(bytes)?;
        self.count += written as u64;
        Ok(written)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Writes the entry `name` of `zip`, holding the bytes of `paths` one after
/// another; their length.
fn pack_files<W: Write + std::io::Seek>(
    zip: &mut ZipWriter<W>,
    name: &str,
    paths: &[PathBuf],
    options: impl Fn(u64, u16) -> SimpleFileOptions,
) -> Result<u64> {
    let mut sources = Vec::with_capacity(paths.len());
    let mut len = 0;
    for path in paths {
        let source = File::open(path).map_err(|e| Error::io(path, e))?;
        len += source.metadata().map_err(|e| Error::io(path, e))?.len();
        sources.push((path, source));
    }
    let align = if name == DATA_ENTRY { 4096 } else { 1 };
    zip.start_file(name, options(len, align))
        .map_err(|e| Error::io(name, std::io::Error::other(e)))?;
    let mut copied = 0;
    for (path, source) in sources {
        let mut source = std::io::BufReader::with_capacity(PACK_BUFFER, source);
        copied += std::io::copy(&mut source, zip).map_err(|e| Error::io(path, e))?;
    }
    if copied != len {
        return Err(Error::io(
            name,
            std::io::Error::other("a file changed while it was packed"),
        ));
    }
    Ok(len)
}

/// Writes a packed trace at `out` holding `entries` in order, as
/// [`PackedTrace::write`] does (stored, the data entry page-aligned, Zip64 where
/// needed, atomically). The summary's `data` and `index` are the sizes of
/// the entries [`DATA_ENTRY`] and [`INDEX_ENTRY`], 0 when absent.
pub(crate) fn write_packed_entries(out: &Path, entries: &[PackSource<'_>]) -> Result<PackSummary> {
    let zip_error = |e: ZipError| Error::io(out, std::io::Error::other(e));
    write_file_atomically(out, |file| {
        let mut zip = ZipWriter::new(&mut *file);
        let options = |len: u64, align: u16| {
            SimpleFileOptions::default()
                .compression_method(CompressionMethod::Stored)
                .unix_permissions(0o644)
                .large_file(len >= u64::from(u32::MAX))
                .with_alignment(align)
        };
        let (mut data, mut index) = (0, 0);
        for entry in entries {
            let (name, len) = match *entry {
                PackSource::Bytes(name, bytes) => {
                    zip.start_file(name, options(bytes.len() as u64, 1))
                        .map_err(zip_error)?;
                    zip.write_all(bytes)?;
                    (name, bytes.len() as u64)
                }
                PackSource::File(name, path) => {
                    let paths = [path.to_path_buf()];
                    (name, pack_files(&mut zip, name, &paths, options)?)
                }
                PackSource::Files(name, paths) => {
                    (name, pack_files(&mut zip, name, paths, options)?)
                }
                PackSource::Written(name, len, write) => {
                    let align = if name == DATA_ENTRY { 4096 } else { 1 };
                    zip.start_file(name, options(len, align))
                        .map_err(zip_error)?;
                    let mut counted = CountingWriter {
                        inner: &mut zip,
                        count: 0,
                    };
                    write(&mut counted)?;
                    if counted.count != len {
                        return Err(Error::internal(format!(
                            "the pack's entry {name} was written with {} bytes, not {len}",
                            counted.count
                        )));
                    }
                    (name, len)
                }
            };
            match name {
                DATA_ENTRY => data = len,
                INDEX_ENTRY => index = len,
                _ => {}
            }
        }
        zip.finish().map_err(zip_error)?;
        let bytes = file.stream_position()?;
        Ok(PackSummary { bytes, data, index })
    })
}
