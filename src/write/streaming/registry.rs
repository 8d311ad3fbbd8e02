//! [`OnDisk`]: which reference objects are already in the data file, so no
//! producer writes them again. The I/O thread adds a block's objects once the
//! block is written; producers ask before every tracepoint, so asking must be
//! cheap and never wait: ids below [`DENSE_IDS`] (every id an interning
//! writer hands out, in practice) are bits in lazily allocated chunks read
//! with one atomic load; larger ids (copied from another trace) go to a set
//! behind a read-write lock.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{OnceLock, PoisonError, RwLock};

use crate::format::ObjectKind;

/// Ids per chunk of bits.
const CHUNK_IDS: usize = 1 << 16;
/// Ids kept as bits; larger ones go to a set.
pub(crate) const DENSE_IDS: usize = 1 << 24;

/// The ids of one kind that are on disk.
#[derive(Debug)]
struct IdSet {
    chunks: Box<[OnceLock<Box<[AtomicU64]>>]>,
    sparse: RwLock<HashSet<i32>>,
}

impl IdSet {
    fn new() -> Self {
        IdSet {
            chunks: (0..DENSE_IDS / CHUNK_IDS)
                .map(|_| OnceLock::new())
                .collect(),
            sparse: RwLock::new(HashSet::new()),
        }
    }

    /// The chunk, word and bit of a dense id.
    fn position(id: usize) -> (usize, usize, u64) {
        (id / CHUNK_IDS, id % CHUNK_IDS / 64, 1 << (id % 64))
    }

    #[inline]
    fn contains(&self, id: i32) -> bool {
        let Ok(index) = usize::try_from(id) else {
            return false;
        };
        if index < DENSE_IDS {
            let (chunk, word, bit) = Self::position(index);
            self.chunks[chunk]
                .get()
                .is_some_and(|words| words[word].load(Ordering::Acquire) & bit != 0)
        } else {
            self.sparse
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .contains(&id)
        }
    }

    fn insert(&self, id: i32) {
        let Ok(index) = usize::try_from(id) else {
            return;
        };
        if index < DENSE_IDS {
            let (chunk, word, bit) = Self::position(index);
            let words = self.chunks[chunk]
                .get_or_init(|| (0..CHUNK_IDS / 64).map(|_| AtomicU64::new(0)).collect());
            words[word].fetch_or(bit, Ordering::Release);
        } else {
            self.sparse
                .write()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(id);
        }
    }
}

/// The shared reference objects (kinds 1–7) already written to the data file.
#[derive(Debug)]
pub(crate) struct OnDisk {
    /// By kind byte; thread names (0) are never recorded.
    kinds: [IdSet; 8],
}

impl Default for OnDisk {
    fn default() -> Self {
        OnDisk {
            kinds: std::array::from_fn(|_| IdSet::new()),
        }
    }
}

impl OnDisk {
    /// Whether object `id` of `kind` is in the data file.
    #[inline]
    pub(crate) fn contains(&self, kind: ObjectKind, id: i32) -> bool {
        self.kinds
            .get(kind as usize)
            .is_some_and(|set| set.contains(id))
    }

    /// Records that object `id` of `kind` is in the data file (thread names,
    /// which belong to one thread, are not recorded).
    pub(crate) fn insert(&self, kind: ObjectKind, id: i32) {
        if kind != ObjectKind::ThreadName
            && let Some(set) = self.kinds.get(kind as usize)
        {
            set.insert(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_dense_and_sparse_ids_per_kind() {
        let on_disk = OnDisk::default();
        let ids = [0, 1, 63, 64, 65_535, 65_536, (DENSE_IDS - 1) as i32];
        let sparse = [DENSE_IDS as i32, i32::MAX];
        for &id in ids.iter().chain(&sparse) {
            assert!(!on_disk.contains(ObjectKind::CodeLocation, id));
            on_disk.insert(ObjectKind::CodeLocation, id);
            assert!(on_disk.contains(ObjectKind::CodeLocation, id));
            assert!(!on_disk.contains(ObjectKind::String, id), "kinds are apart");
        }
        assert!(!on_disk.contains(ObjectKind::CodeLocation, 2));
        assert!(!on_disk.contains(ObjectKind::CodeLocation, -1));
        on_disk.insert(ObjectKind::ThreadName, 0);
        assert!(!on_disk.contains(ObjectKind::ThreadName, 0));
    }
}
