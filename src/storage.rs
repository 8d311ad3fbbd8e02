//! [`TraceBytes`]: the bytes of a trace file, memory-mapped or in memory,
//! cheap to clone and shareable across threads.

use std::fmt;
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use memmap2::Mmap;

use crate::error::{Error, Result};

/// The bytes of a data or index file.
///
/// Files are opened read-only and mapped with `memmap2`. If another process
/// truncates or rewrites a file while it is mapped, reads of the changed
/// pages see the new bytes (every decoder bounds-checks, so changed bytes give
/// decode errors, not undefined reads), and a read past a truncated end raises
/// `SIGBUS` on Linux: do not modify traces while tracetree has them open.
#[derive(Clone)]
pub struct TraceBytes(Arc<dyn AsRef<[u8]> + Send + Sync>);

impl TraceBytes {
    /// Bytes held in memory.
    pub fn from_vec(bytes: Vec<u8>) -> Self {
        TraceBytes(Arc::new(bytes))
    }

    /// Maps `path` read-only. An empty file is held as an empty vector (an
    /// empty mapping is an error on some systems).
    pub fn map(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
        if len == 0 {
            return Ok(Self::from_vec(Vec::new()));
        }
        // SAFETY: the mapping is read-only and private to this process; memmap2
        // requires `unsafe` because another process could modify the file
        // while it is mapped. Trace files are not modified by tracetree while
        // open, every decoder bounds-checks the bytes it reads, and the
        // documented contract above says not to change a trace under a reader.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::io(path, e))?;
        Ok(TraceBytes(Arc::new(map)))
    }

    /// Reads `path` into memory.
    pub fn read(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        std::fs::read(path)
            .map(Self::from_vec)
            .map_err(|e| Error::io(path, e))
    }

    /// The bytes.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        (*self.0).as_ref()
    }

    /// Their number.
    pub fn len(&self) -> u64 {
        self.as_slice().len() as u64
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.as_slice().is_empty()
    }
}

impl fmt::Debug for TraceBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TraceBytes({} bytes)", self.len())
    }
}
