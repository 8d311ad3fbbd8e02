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
    /// The entry named so, whose bytes are already in the pack's file
    /// (written there by an [`InPlaceWriter`]): its length, its CRC-32 and
    /// where they start. Moved, if the headers before them turn out to
    /// end elsewhere.
    InPlace(&'a str, InPlaceEntry),
}

/// An entry's bytes already in the pack's file: `len` bytes from `at`,
/// whose CRC-32 is `crc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct InPlaceEntry {
    pub at: u64,
    pub len: u64,
    pub crc: u32,
}

impl std::fmt::Debug for PackSource<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PackSource::Bytes(name, bytes) => write!(f, "Bytes({name:?}, {} bytes)", bytes.len()),
            PackSource::File(name, path) => write!(f, "File({name:?}, {path:?})"),
            PackSource::InPlace(name, entry) => write!(f, "InPlace({name:?}, {entry:?})"),
        }
    }
}

/// Bytes read from a file at a time while packing it.
const PACK_BUFFER: usize = 1 << 20;

/// The pack's file as the ZIP writer writes it, its position kept (so
/// that asking for it never empties the buffer). Without a file it only
/// counts, to measure where an entry's bytes will start. `skip` moves
/// past an entry's bytes already in the file, before the next write or
/// seek.
struct PackOut<'f> {
    file: Option<&'f mut std::io::BufWriter<File>>,
    at: u64,
    /// The end of what was written, for a seek from the end.
    end: u64,
    skip: std::cell::Cell<u64>,
}

impl<'f> PackOut<'f> {
    fn new(file: Option<&'f mut std::io::BufWriter<File>>) -> Self {
        PackOut {
            file,
            at: 0,
            end: 0,
            skip: std::cell::Cell::new(0),
        }
    }

    fn settle(&mut self) -> std::io::Result<()> {
        let skip = self.skip.take();
        if skip > 0 {
            self.at = self
                .at
                .checked_add(skip)
                .ok_or_else(|| std::io::Error::other("an entry past the largest offset"))?;
            self.end = self.end.max(self.at);
            if let Some(file) = &mut self.file {
                file.seek(SeekFrom::Start(self.at))?;
            }
        }
        Ok(())
    }
}

impl Write for PackOut<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.settle()?;
        let written = match &mut self.file {
            Some(file) => file.write(bytes)?,
            None => bytes.len(),
        };
        self.at += written as u64;
        self.end = self.end.max(self.at);
        Ok(written)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.settle()?;
        match &mut self.file {
            Some(file) => file.flush(),
            None => Ok(()),
        }
    }
}

impl Seek for PackOut<'_> {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        self.settle()?;
        let at = match to {
            SeekFrom::Start(at) => Some(at),
            SeekFrom::Current(delta) => self.at.checked_add_signed(delta),
            SeekFrom::End(delta) => match &mut self.file {
                Some(file) => Some(file.seek(to)?),
                None => self.end.checked_add_signed(delta),
            },
        }
        .ok_or_else(|| std::io::Error::other("a seek out of the pack being written"))?;
        if at != self.at
            && let Some(file) = &mut self.file
        {
            file.seek(SeekFrom::Start(at))?;
        }
        self.at = at;
        Ok(at)
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
    let (sources, len) = open_files(paths)?;
    zip.start_file(name, options(len, alignment(name)))
        .map_err(|e| Error::io(name, std::io::Error::other(e)))?;
    copy_sources(name, sources, len, zip)?;
    Ok(len)
}

/// The files at `paths`, opened, and their length together.
fn open_files(paths: &[PathBuf]) -> Result<(Vec<(&PathBuf, File)>, u64)> {
    let mut sources = Vec::with_capacity(paths.len());
    let mut len = 0;
    for path in paths {
        let source = File::open(path).map_err(|e| Error::io(path, e))?;
        len += source.metadata().map_err(|e| Error::io(path, e))?.len();
        sources.push((path, source));
    }
    Ok((sources, len))
}

/// Copies `sources`, `len` bytes together, to `out` as the bytes of the
/// entry `name`.
fn copy_sources(
    name: &str,
    sources: Vec<(&PathBuf, File)>,
    len: u64,
    out: &mut impl Write,
) -> Result<()> {
    let mut copied = 0;
    for (path, source) in sources {
        let mut source = std::io::BufReader::with_capacity(PACK_BUFFER, source);
        copied += std::io::copy(&mut source, out).map_err(|e| Error::io(path, e))?;
    }
    if copied != len {
        return Err(Error::io(
            name,
            std::io::Error::other("a file changed while it was packed"),
        ));
    }
    Ok(())
}

/// Writes the bytes of `paths` one after another to `out`, as the bytes
/// of the entry `name` (named in errors); their length.
pub(crate) fn copy_files(name: &str, paths: &[PathBuf], out: &mut impl Write) -> Result<u64> {
    let (sources, len) = open_files(paths)?;
    copy_sources(name, sources, len, out)?;
    Ok(len)
}

/// The length of the files at `paths` together.
pub(crate) fn files_len(paths: &[PathBuf]) -> Result<u64> {
    paths.iter().try_fold(0, |len, path| {
        let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
        Ok(len + meta.len())
    })
}

/// The alignment of an entry's bytes: the data entry's start on a page.
fn alignment(name: &str) -> u16 {
    if name == DATA_ENTRY { 4096 } else { 1 }
}

/// The options every entry is written with: stored, Zip64 when `len`
/// needs it, aligned to `align`.
fn entry_options(len: u64, align: u16) -> SimpleFileOptions {
    SimpleFileOptions::default()
        .compression_method(CompressionMethod::Stored)
        .unix_permissions(0o644)
        .large_file(len >= u64::from(u32::MAX))
        .with_alignment(align)
}

/// Where the bytes of the entry `name` of `len` bytes start in a pack
/// whose entries before it are `before`, as [`write_packed_entries`]
/// writes them.
pub(crate) fn entry_start(before: &[PackSource<'_>], name: &str, len: u64) -> Result<u64> {
    let mut zip = ZipWriter::new(PackOut::new(None));
    write_entries(&mut zip, before)?;
    zip.start_file(name, entry_options(len, alignment(name)))
        .map_err(|e| Error::io(name, std::io::Error::other(e)))?;
    Ok(zip.get_ref().map_or(0, |out| out.at))
}

/// Writes `entries` to `zip`; the lengths of the data and index entries.
fn write_entries(
    zip: &mut ZipWriter<PackOut<'_>>,
    entries: &[PackSource<'_>],
) -> Result<(u64, u64)> {
    let zip_error = |name: &str, e: ZipError| Error::io(name, std::io::Error::other(e));
    let (mut data, mut index) = (0, 0);
    for entry in entries {
        let (name, len) = match *entry {
            PackSource::Bytes(name, bytes) => {
                let len = bytes.len() as u64;
                zip.start_file(name, entry_options(len, alignment(name)))
                    .map_err(|e| zip_error(name, e))?;
                zip.write_all(bytes)?;
                (name, len)
            }
            PackSource::File(name, path) => {
                let paths = [path.to_path_buf()];
                (name, pack_files(zip, name, &paths, entry_options)?)
            }
            PackSource::InPlace(name, entry) => {
                zip.start_file(name, entry_options(entry.len, alignment(name)))
                    .map_err(|e| zip_error(name, e))?;
                let out = zip
                    .get_ref()
                    .ok_or_else(|| Error::internal("the pack's writer is closed"))?;
                if out.at != entry.at {
                    return Err(Error::internal(format!(
                        "the pack's entry {name} is at {}, its header ends at {}",
                        entry.at, out.at
                    )));
                }
                out.skip.set(entry.len);
                // SAFETY: the entry's `len` bytes, whose CRC-32 is `crc`,
                // are in the file from where its header ends (checked
                // above), and the writer moves past them (`skip`) before
                // it writes or seeks again: the sizes and CRC the ZIP
                // writer records for the entry are those of its bytes.
                unsafe { zip.set_file_metadata(entry.len, entry.crc) }
                    .map_err(|e| zip_error(name, e))?;
                (name, entry.len)
            }
        };
        match name {
            DATA_ENTRY => data = len,
            INDEX_ENTRY => index = len,
            _ => {}
        }
    }
    Ok((data, index))
}

/// Writes a packed trace at `out` holding `entries` in order, as
/// [`PackedTrace::write`] does (stored, the data entry page-aligned, Zip64 where
/// needed, atomically). The summary's `data` and `index` are the sizes of
/// the entries [`DATA_ENTRY`] and [`INDEX_ENTRY`], 0 when absent.
pub(crate) fn write_packed_entries(out: &Path, entries: &[PackSource<'_>]) -> Result<PackSummary> {
    write_file_atomically(out, |file| write_pack_into(file, entries))
}

/// Writes a packed trace holding `entries` into `file`, empty but for the
/// bytes of its [`PackSource::InPlace`] entries. Those of the last one, if
/// they are the last bytes of the file, are moved first when their header
/// ends elsewhere than they start; the others must start where it ends.
pub(crate) fn write_pack_into(
    file: &mut std::io::BufWriter<File>,
    entries: &[PackSource<'_>],
) -> Result<PackSummary> {
    let mut entries = entries.to_vec();
    let last = entries
        .iter()
        .rposition(|entry| matches!(entry, PackSource::InPlace(..)));
    for at in 0..entries.len() {
        if let PackSource::InPlace(name, entry) = entries[at] {
            let start = if Some(at) == last {
                settle(file.get_ref(), &entries[..at], name, entry.at, entry.len)?
            } else {
                entry.at
            };
            entries[at] = PackSource::InPlace(name, InPlaceEntry { at: start, ..entry });
        }
    }
    let mut zip = ZipWriter::new(PackOut::new(Some(file)));
    let (data, index) = write_entries(&mut zip, &entries)?;
    let out = zip
        .finish()
        .map_err(|e| Error::io("the pack", std::io::Error::other(e)))?;
    Ok(PackSummary {
        bytes: out.at,
        data,
        index,
    })
}

/// Where the bytes of the entry `name`, `len` bytes at `at`, the last of
/// `file`, start once moved to where its header ends behind `before`
/// (nothing stale is left past them).
fn settle(file: &File, before: &[PackSource<'_>], name: &str, at: u64, len: u64) -> Result<u64> {
    let start = entry_start(before, name, len)?;
    if start != at {
        move_bytes(file, at, start, len)?;
        file.set_len(start + len)?;
    }
    Ok(start)
}

/// Moves `len` bytes of `file` from `from` to `to` (the ranges may
/// overlap), a chunk at a time.
fn move_bytes(file: &File, from: u64, to: u64, len: u64) -> Result<()> {
    use std::os::unix::fs::FileExt;
    let mut chunk = vec![0u8; PACK_BUFFER];
    let mut done = 0;
    while done < len {
        let n = (len - done).min(PACK_BUFFER as u64);
        // Backwards when moving up, so no byte is overwritten unread.
        let offset = if to > from { len - done - n } else { done };
        let chunk = &mut chunk[..n as usize];
        file.read_exact_at(chunk, from + offset)?;
        file.write_all_at(chunk, to + offset)?;
        done += n;
    }
    Ok(())
}

/// One write of an [`InPlaceWriter`]: where, how long, its CRC-32.
#[derive(Debug, Clone, Copy)]
struct Written {
    at: u64,
    len: u64,
    crc: u32,
}

/// Writes an entry's bytes straight into the pack's file from where its
/// header will end (`at`), one write after another, each by `pwrite`,
/// keeping the CRC-32 of each: the entry's CRC is theirs combined
/// ([`InPlaceLog::entry`]), with no second pass over the bytes.
pub(crate) struct InPlaceWriter {
    file: File,
    at: u64,
    log: std::sync::Arc<std::sync::Mutex<Vec<Written>>>,
}

/// What an [`InPlaceWriter`] wrote.
#[derive(Clone)]
pub(crate) struct InPlaceLog {
    /// Where the writes started.
    written_at: u64,
    /// Where their bytes start now ([`settle`](Self::settle)).
    start: u64,
    log: std::sync::Arc<std::sync::Mutex<Vec<Written>>>,
}

impl InPlaceWriter {
    /// A writer of `file` from `at`, and its log.
    pub(crate) fn new(file: File, at: u64) -> (InPlaceWriter, InPlaceLog) {
        let log = std::sync::Arc::default();
        let writer = InPlaceWriter {
            file,
            at,
            log: std::sync::Arc::clone(&log),
        };
        let log = InPlaceLog {
            written_at: at,
            start: at,
            log,
        };
        (writer, log)
    }
}

impl Write for InPlaceWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        use std::os::unix::fs::FileExt;
        self.file.write_all_at(bytes, self.at)?;
        let written = Written {
            at: self.at,
            len: bytes.len() as u64,
            crc: crc32fast::hash(bytes),
        };
        self.log
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(written);
        self.at += bytes.len() as u64;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl InPlaceLog {
    fn log(&self) -> std::sync::MutexGuard<'_, Vec<Written>> {
        self.log
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Bytes written.
    pub(crate) fn len(&self) -> u64 {
        self.log().iter().map(|written| written.len).sum()
    }

    /// Where the bytes written start.
    pub(crate) fn start(&self) -> u64 {
        self.start
    }

    /// Moves the bytes written, the last of `file`, to where the header of
    /// the entry `name` ends behind `before` (as [`write_pack_into`]
    /// would), before anything else is written in `file` past them.
    pub(crate) fn settle(
        &mut self,
        file: &File,
        before: &[PackSource<'_>],
        name: &str,
    ) -> Result<()> {
        self.start = settle(file, before, name, self.start, self.len())?;
        Ok(())
    }

    /// The entry written, in `file`: its writes' CRCs combined, where
    /// `changed` (ranges of `file` rewritten since, ascending, each with
    /// its new CRC-32) replace them. A write that a changed range covers
    /// exactly takes its CRC; one it covers in part is read again.
    pub(crate) fn entry(&self, file: &File, changed: &[(u64, u64, u32)]) -> Result<InPlaceEntry> {
        use std::os::unix::fs::FileExt;
        let log = self.log();
        let mut crc = crc32fast::Hasher::new();
        let mut changed = changed.iter().peekable();
        let mut buffer = Vec::new();
        let mut len = 0;
        for written in log.iter() {
            // Where its bytes are now.
            let at = written.at - self.written_at + self.start;
            let written = Written { at, ..*written };
            let end = written.at + written.len;
            while changed.next_if(|&&(_, e, _)| e <= written.at).is_some() {}
            let piece = match changed.peek() {
                Some(&&(s, e, new)) if s == written.at && e == end => new,
                Some(&&(s, _, _)) if s < end => {
                    let n = usize::try_from(written.len)
                        .map_err(|_| Error::internal("a write of the pack too long"))?;
                    buffer.resize(n, 0);
                    file.read_exact_at(&mut buffer, written.at)?;
                    crc32fast::hash(&buffer)
                }
                _ => written.crc,
            };
            crc.combine(&crc32fast::Hasher::new_with_initial_len(piece, written.len));
            len += written.len;
        }
        Ok(InPlaceEntry {
            at: self.start,
            len,
            crc: crc.finalize(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::write_file_atomically_read_back;
    use std::os::unix::fs::FileExt;

    /// Data written in place where its header was measured to end behind
    /// a shorter entry (so it is moved), rewritten in part since, packs as
    /// the same bytes given whole would.
    #[test]
    fn an_entry_written_in_place_packs_as_its_bytes_given_whole() {
        let dir = tempfile::tempdir().unwrap();
        let mut data: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let (short, long) = ("x".repeat(10), "y".repeat(5000));
        let placed = dir.path().join("placed.packedtrace");
        let at = entry_start(
            &[PackSource::Bytes(INFO_ENTRY, short.as_bytes())],
            DATA_ENTRY,
            0,
        )
        .unwrap();
        let pieces = [0..1000, 1000..70_000, 70_000..data.len()];
        // The first piece is rewritten whole, the second in part.
        let (first, part) = (vec![1u8; 1000], vec![2u8; 500]);
        write_file_atomically_read_back(&placed, |pack| {
            let file = pack.get_ref().try_clone()?;
            let (mut writer, log) = InPlaceWriter::new(file.try_clone()?, at);
            for piece in pieces.clone() {
                writer.write_all(&data[piece])?;
            }
            file.write_all_at(&first, at)?;
            file.write_all_at(&part, at + 2000)?;
            let changed = [
                (at, at + 1000, crc32fast::hash(&first)),
                (at + 2000, at + 2500, crc32fast::hash(&part)),
            ];
            let entry = log.entry(&file, &changed)?;
            assert_eq!(entry.len, data.len() as u64);
            let entries = [
                PackSource::Bytes(INFO_ENTRY, long.as_bytes()),
                PackSource::InPlace(DATA_ENTRY, entry),
                PackSource::Bytes("diff.threadmap", b"map"),
            ];
            write_pack_into(pack, &entries)
        })
        .unwrap();
        data[..1000].copy_from_slice(&first);
        data[2000..2500].copy_from_slice(&part);
        let whole = dir.path().join("whole.packedtrace");
        write_packed_entries(
            &whole,
            &[
                PackSource::Bytes(INFO_ENTRY, long.as_bytes()),
                PackSource::Bytes(DATA_ENTRY, &data),
                PackSource::Bytes("diff.threadmap", b"map"),
            ],
        )
        .unwrap();
        assert!(std::fs::read(&placed).unwrap() == std::fs::read(&whole).unwrap());
        let mut archive = ZipArchive::new(File::open(&placed).unwrap()).unwrap();
        let mut read = Vec::new();
        // The reader checks the CRC at the entry's end.
        archive
            .by_name(DATA_ENTRY)
            .unwrap()
            .read_to_end(&mut read)
            .unwrap();
        assert!(read == data);
    }

    /// Data written in place behind a shorter head and settled behind the
    /// longer one, then entries written in place behind it where their
    /// headers will end, pack as the same bytes given whole would.
    #[test]
    fn entries_written_in_place_behind_settled_data_pack_as_given_whole() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..200_000u32).map(|i| (i * 13 % 251) as u8).collect();
        let index: Vec<u8> = (0..50_000u32).map(|i| (i * 3 % 7) as u8).collect();
        let idmap: Vec<u8> = (0..30_000u32).map(|i| (i % 256) as u8).collect();
        let (short, long) = ("x".repeat(10), "y".repeat(5000));
        let placed = dir.path().join("placed.packedtrace");
        let guess = [PackSource::Bytes(INFO_ENTRY, short.as_bytes())];
        let at = entry_start(&guess, DATA_ENTRY, 0).unwrap();
        write_file_atomically_read_back(&placed, |pack| {
            let file = pack.get_ref().try_clone()?;
            let (mut writer, mut log) = InPlaceWriter::new(file.try_clone()?, at);
            for piece in data.chunks(70_000) {
                writer.write_all(piece)?;
            }
            let mut entries = vec![PackSource::Bytes(INFO_ENTRY, long.as_bytes())];
            log.settle(&file, &entries, DATA_ENTRY)?;
            assert_ne!(log.start(), at);
            let measured = |at, len| InPlaceEntry { at, len, crc: 0 };
            entries.push(PackSource::InPlace(
                DATA_ENTRY,
                measured(log.start(), log.len()),
            ));
            let mut logs = Vec::new();
            for (name, bytes) in [(INDEX_ENTRY, &index), ("diff.idmap", &idmap)] {
                let len = bytes.len() as u64;
                let at = entry_start(&entries, name, len)?;
                let (mut writer, written) = InPlaceWriter::new(file.try_clone()?, at);
                writer.write_all(bytes)?;
                entries.push(PackSource::InPlace(name, measured(at, len)));
                logs.push((name, written));
            }
            entries.truncate(1);
            entries.push(PackSource::InPlace(DATA_ENTRY, log.entry(&file, &[])?));
            for (name, written) in logs {
                entries.push(PackSource::InPlace(name, written.entry(&file, &[])?));
            }
            entries.push(PackSource::Bytes("diff.threadmap", b"map"));
            write_pack_into(pack, &entries)
        })
        .unwrap();
        let whole = dir.path().join("whole.packedtrace");
        write_packed_entries(
            &whole,
            &[
                PackSource::Bytes(INFO_ENTRY, long.as_bytes()),
                PackSource::Bytes(DATA_ENTRY, &data),
                PackSource::Bytes(INDEX_ENTRY, &index),
                PackSource::Bytes("diff.idmap", &idmap),
                PackSource::Bytes("diff.threadmap", b"map"),
            ],
        )
        .unwrap();
        assert!(std::fs::read(&placed).unwrap() == std::fs::read(&whole).unwrap());
        let mut archive = ZipArchive::new(File::open(&placed).unwrap()).unwrap();
        for (name, bytes) in [(DATA_ENTRY, &data), (INDEX_ENTRY, &index)] {
            let mut read = Vec::new();
            // The reader checks the CRC at the entry's end.
            archive
                .by_name(name)
                .unwrap()
                .read_to_end(&mut read)
                .unwrap();
            assert!(&read == bytes);
        }
    }
}
