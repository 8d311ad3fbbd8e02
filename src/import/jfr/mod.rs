//! Java Flight Recorder recordings (`.jfr`, seed `004`), read by a reader
//! written for this: the chunks are found from their headers over the
//! mapped file and decoded in parallel (rayon), each with its own metadata
//! and constant pools.
//!
//! Layers, bottom up, each a private module: `input` (packed and
//! fixed-width integers, strings), `chunk` (headers, the walk over them,
//! damage), `metadata` (the types events and pools are laid out by), `value`
//! (decoding and skipping by those layouts), `reader` (a chunk opened:
//! pools as offset tables found through the checkpoint chain, its records),
//! `resolve` (threads, methods and stack traces memoized per chunk), then
//! the two mappings (`samples`, `trace`), the summary `info` prints
//! (`summary`) and the import that writes the v22 trace (`write`). Outside,
//! only [`Recording`] ([`Recording::decode_all`], the benchmarks' decode) and
//! [`JfrSummary::read`] (and the types they take and give) are used;
//! `SourceFormat::detect` tells a recording.
//!
//! Mapping (`docs/IMPORTS.md`): a recording holding `jdk.MethodTrace`
//! events imports them as exact calls nested by time; otherwise (or with
//! [`ImportOptions::samples`](crate::import::ImportOptions::samples)) its `jdk.ExecutionSample` events become one
//! merged call tree per thread with sample counts. Threads are the JFR
//! threads with a Java thread id, numbered by ascending id and named by
//! their Java name.
//!
//! Damage: a chunk cut short, still marked as being written, or with an
//! impossible size is skipped and reported; a chunk whose metadata or
//! pools cannot be read is skipped and reported; a record that cannot be
//! decoded ends its chunk there, reported. Every whole chunk is kept.
//! Memory holds the pools' offset tables and the resolved names of the
//! chunks being decoded, and the merged trees; a chunk's mapped pages are
//! released once it is decoded (`Recording::map_chunks`), so the
//! resident set holds the chunks in flight, not the file. A method-trace
//! import also holds every traced call (about 48 bytes each) until it has
//! nested them, since a v22 trace is written caller first and the JVM
//! commits callers last. Start times stored as compressed ticks (flag bit 2, a newer JDK
//! option) are not unpacked; the import warns when a chunk has them.

mod chunk;
mod input;
mod metadata;
mod reader;
mod resolve;
mod samples;
mod spill;
mod summary;
mod trace;
mod value;
mod write;

use std::path::Path;

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::storage::TraceBytes;

pub(crate) use chunk::{ChunkDamage, ChunkHeader, ChunkScan, find_chunks};
pub(crate) use input::JfrResult;
pub(crate) use reader::Chunk;
pub use summary::JfrSummary;
pub(crate) use write::import;

/// Choices of a JFR import.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct JfrOptions {
    /// Import the sample trees even when the recording holds method traces.
    pub samples: bool,
}

/// Whether `path` is a file starting with the JFR magic `FLR\0`.
pub(crate) fn looks_like_jfr(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && &magic == chunk::MAGIC
}

/// A recording: its mapped bytes and its chunks.
#[derive(Debug)]
pub struct Recording {
    bytes: TraceBytes,
    scan: ChunkScan,
}

impl Recording {
    /// Maps the recording at `path` and walks its chunk headers.
    pub fn open(path: &Path) -> Result<Recording> {
        let bytes = TraceBytes::map(path)?;
        let recording = Recording::from_bytes(bytes);
        if recording.scan.chunks.is_empty() && recording.scan.damage.is_empty() {
            return Err(Error::BadSource {
                path: path.to_path_buf(),
                what: "an empty recording".into(),
            });
        }
        Ok(recording)
    }

    /// A recording over `bytes`.
    pub fn from_bytes(bytes: TraceBytes) -> Recording {
        let scan = find_chunks(bytes.as_slice());
        // Reading a header maps the pages around it (a whole large folio,
        // where the page cache has them): a recording of many small chunks
        // would be all resident before any is decoded.
        bytes.release_around(0..bytes.len());
        Recording { bytes, scan }
    }

    /// The whole file.
    pub fn bytes(&self) -> &[u8] {
        self.bytes.as_slice()
    }

    /// The whole chunks, in file order.
    pub(crate) fn chunks(&self) -> &[ChunkHeader] {
        &self.scan.chunks
    }

    /// How many whole chunks the recording holds.
    pub fn chunk_count(&self) -> usize {
        self.scan.chunks.len()
    }

    /// Chunks skipped, or what ended the walk over the headers.
    pub(crate) fn damage(&self) -> &[ChunkDamage] {
        &self.scan.damage
    }

    /// Opens every chunk and runs `work` on it, in parallel; the results in
    /// file order, a chunk that could not be opened as its error.
    pub(crate) fn map_chunks<T: Send>(
        &self,
        work: impl Fn(usize, &Chunk<'_>) -> T + Sync + Send,
    ) -> Vec<JfrResult<T>> {
        self.map_chunks_in(0..self.scan.chunks.len(), work)
    }

    /// [`map_chunks`](Self::map_chunks) over the chunks of `range` (by
    /// index), so that a caller can bound how many results it holds.
    pub(crate) fn map_chunks_in<T: Send>(
        &self,
        range: std::ops::Range<usize>,
        work: impl Fn(usize, &Chunk<'_>) -> T + Sync + Send,
    ) -> Vec<JfrResult<T>> {
        let file = self.bytes();
        let range = range.start.min(self.scan.chunks.len())..range.end.min(self.scan.chunks.len());
        self.scan.chunks[range.clone()]
            .par_iter()
            .zip(range)
            .map(|(header, index)| {
                let result = Chunk::open(file, header).map(|chunk| work(index, &chunk));
                // What the work read of the chunk need not stay resident:
                // a later read (a name its pools give) faults it back in.
                self.bytes
                    .release_around(header.offset..header.offset.saturating_add(header.size));
                result
            })
            .collect()
    }

    /// Decodes every event of every chunk, in parallel, with the stack
    /// trace of each event that has one resolved to its methods (the
    /// decoding the benchmarks measure); returns the events and the frames
    /// resolved.
    pub fn decode_all(&self) -> (u64, u64) {
        let per_chunk = self.map_chunks(|_, chunk| decode_chunk(chunk));
        per_chunk
            .into_iter()
            .flatten()
            .fold((0, 0), |(e, f), (ce, cf)| (e + ce, f + cf))
    }
}

/// [`Recording::decode_all`] for one chunk.
pub(crate) fn decode_chunk(chunk: &Chunk<'_>) -> (u64, u64) {
    let mut resolver = resolve::Resolver::new(chunk);
    let stack_field: Vec<Option<usize>> = chunk
        .metadata
        .classes
        .iter()
        .map(|c| c.field("stackTrace"))
        .collect();
    let (mut events, mut frames) = (0, 0);
    let mut fields = Vec::new();
    for record in chunk.records() {
        let Ok(record) = record else { break };
        if record.type_id <= metadata::CHECKPOINT_TYPE {
            continue;
        }
        let Some(class) = chunk.metadata.class_index(record.type_id) else {
            continue;
        };
        let mut input = chunk.body(&record);
        if value::read_fields(&chunk.metadata, &mut input, class, 0, &mut fields).is_err() {
            break;
        }
        events += 1;
        let stack = stack_field[class as usize]
            .and_then(|i| fields.get(i))
            .and_then(value::Value::as_ref_key);
        if let Some(stack) = stack.and_then(|key| resolver.stack_ref(key)) {
            frames += stack.frames.len() as u64;
        }
    }
    (events, frames)
}

#[cfg(test)]
mod tests;
