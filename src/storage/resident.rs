//! The resident window: how much of a trace's mapped (or paged) bytes a
//! reader may keep in memory, whatever the trace's size.
//!
//! A forward read (a walk, a scan of a call's children) releases the blocks
//! it leaves behind once they span the window. Random reads (a node decoded
//! on its own, a lookup) cannot know what they will need again, so they
//! count instead: each distinct [`FAULT_AROUND`]-aligned region of the data
//! file they enter counts once (the kernel maps at most a whole folio, and
//! folios are aligned to their size); when the count adds up to a window,
//! the regions are released together with every page of the lookups'
//! mappings (index file, sidecar). Releasing never changes
//! what a reader sees, only what stays resident: a released page faults
//! back in.
//!
//! Invariant: the bytes resident because of one reader stay within about
//! twice the window (the window behind each forward read, plus the regions
//! counted since the last release), plus the lookups' pages touched since.

use std::ops::Range;
use std::sync::Mutex;

use super::{FAULT_AROUND, TraceBytes};

/// A reader's resident window over its data file and lookups (see the
/// module's doc).
#[derive(Debug)]
pub(crate) struct Resident {
    /// Bytes of the data file a forward read may leave resident behind it.
    pub(crate) window: u64,
    /// The data file.
    pub(crate) data: TraceBytes,
    /// The index file's and the sidecar's bytes.
    pub(crate) lookups: Vec<TraceBytes>,
    /// What random reads used since the last release.
    scattered: Mutex<Scattered>,
}

/// The folio regions random reads entered since the last release (each
/// once).
#[derive(Debug, Default)]
struct Scattered {
    regions: Vec<u64>,
}

impl Scattered {
    /// Once the regions add up to `window`, the regions, with the count
    /// started again.
    fn take_if_full(&mut self, window: u64) -> Option<Vec<u64>> {
        let used = self.regions.len() as u64;
        if used.saturating_mul(FAULT_AROUND) < window {
            return None;
        }
        Some(std::mem::take(&mut self.regions))
    }
}

impl Resident {
    /// A window of `window` bytes over `data` and `lookups`.
    pub(crate) fn new(window: u64, data: TraceBytes, lookups: Vec<TraceBytes>) -> Resident {
        Resident {
            window,
            data,
            lookups,
            scattered: Mutex::default(),
        }
    }

    /// A random read entered the bytes at `physical` of the data file:
    /// counts their regions, each once, and once the regions add up to the
    /// window, releases them and every page of the lookups (reads in
    /// progress fault theirs back in).
    #[cold]
    pub(crate) fn entered_at_random(&self, physical: Range<u64>) {
        let full = {
            let mut scattered = self.scattered.lock().unwrap_or_else(|e| e.into_inner());
            for region in self.data.folio_regions(physical) {
                if !scattered.regions.contains(&region) {
                    scattered.regions.push(region);
                }
            }
            scattered.take_if_full(self.window)
        };
        self.release_scattered(full);
    }

    /// Releases the regions a full count took, and every page of the
    /// lookups, outside the lock: other threads go on counting meanwhile.
    fn release_scattered(&self, regions: Option<Vec<u64>>) {
        let Some(regions) = regions else {
            return;
        };
        if let (Some(&first), Some(&last)) = (regions.iter().min(), regions.iter().max()) {
            self.data.release_folio_regions(first..last + 1);
        }
        self.release_lookups();
    }

    /// Releases `physical` bytes of the data file a forward read has left
    /// behind, and every page of the lookups.
    pub(crate) fn left_behind(&self, physical: impl IntoIterator<Item = Range<u64>>) {
        for range in physical {
            self.data.release_around(range);
        }
        self.release_lookups();
    }

    /// Releases every page of the data file and of the lookups.
    pub(crate) fn release_all(&self) {
        self.data.release_all();
        self.release_lookups();
    }

    fn release_lookups(&self) {
        for mapping in &self.lookups {
            mapping.release_all();
        }
    }
}
