//! Traced calls sorted for nesting in bounded memory: an external merge
//! sort.
//!
//! A recording may hold far more `jdk.MethodTrace` events than fit in
//! memory, and nesting needs them in one order (thread, then start, the
//! longer first, then the later committed first: a caller returns, and is
//! committed, after its callees). Each call is kept as a fixed 36-byte
//! record (thread, start, end, commit order, method). Every chunk's worker
//! gathers its records in a buffer of at most `run_records`; a full buffer
//! is sorted and appended as a *run* to one shared, unlinked temporary
//! file (the [`RunFile`]: one file, however many runs, so no limit on open
//! files is met). What a chunk leaves in its buffer goes to the main
//! thread's own buffer, which spills the same way. At the end, a recording
//! whose calls fit in one buffer is sorted in place; otherwise every run is
//! read back through an 8 KiB window (positioned reads of the shared file)
//! and merged through a binary heap holding one record per run. Memory is
//! one buffer per worker and one for the main thread, plus 8 KiB per run,
//! whatever the recording's size and however large its chunks.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Mutex;

use crate::common::MethodId;
use crate::error::{Error, Result};

/// Records a buffer holds before it is written as a run: 256 Ki (10 MiB
/// in memory).
pub(super) const RUN_RECORDS: usize = 1 << 18;

/// Records read back at once from each run (8 KiB).
const WINDOW_RECORDS: usize = 227;

/// Bytes of one record on disk.
const RECORD_BYTES: usize = 36;

/// One traced call, reduced to what nesting and writing need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct CallRecord {
    /// The thread's Java id.
    pub thread: i64,
    /// Start, ns since the epoch.
    pub start: i64,
    /// End, ns since the epoch.
    pub end: i64,
    /// The order the JVM committed it in: chunk index, then offset.
    pub order: u64,
    /// The method, already named in the trace being written.
    pub method: MethodId,
}

impl CallRecord {
    /// Whether `self` contains `inner` (both in nesting order).
    pub fn contains(&self, inner: &CallRecord) -> bool {
        self.start <= inner.start && inner.end <= self.end
    }

    fn to_bytes(self) -> [u8; RECORD_BYTES] {
        let mut bytes = [0; RECORD_BYTES];
        bytes[0..8].copy_from_slice(&self.thread.to_le_bytes());
        bytes[8..16].copy_from_slice(&self.start.to_le_bytes());
        bytes[16..24].copy_from_slice(&self.end.to_le_bytes());
        bytes[24..32].copy_from_slice(&self.order.to_le_bytes());
        bytes[32..36].copy_from_slice(&self.method.0.to_le_bytes());
        bytes
    }

    fn from_bytes(bytes: &[u8; RECORD_BYTES]) -> CallRecord {
        let i64_at = |at: usize| i64::from_le_bytes(bytes[at..at + 8].try_into().expect("8"));
        CallRecord {
            thread: i64_at(0),
            start: i64_at(8),
            end: i64_at(16),
            order: i64_at(24) as u64,
            method: MethodId(i32::from_le_bytes(bytes[32..36].try_into().expect("4"))),
        }
    }

    /// The nesting order: thread, start, the longer first, the later
    /// committed first.
    fn nesting_order(&self, other: &CallRecord) -> Ordering {
        self.thread
            .cmp(&other.thread)
            .then(self.start.cmp(&other.start))
            .then(other.end.cmp(&self.end))
            .then(other.order.cmp(&self.order))
    }
}

/// A record in the merge's heap, ordered by nesting order, then by run.
#[derive(Debug, PartialEq, Eq)]
struct Head(CallRecord, usize);

impl Ord for Head {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.nesting_order(&other.0).then(self.1.cmp(&other.1))
    }
}

impl PartialOrd for Head {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// One unlinked temporary file holding every run, appended to by any
/// thread.
#[derive(Debug)]
pub(super) struct RunFile {
    file: File,
    /// Bytes appended so far.
    len: Mutex<u64>,
}

/// A sorted run: `count` records at `offset` of the [`RunFile`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Run {
    offset: u64,
    count: u64,
}

impl RunFile {
    /// An empty run file in the temporary directory.
    pub fn new() -> Result<RunFile> {
        let file = tempfile::tempfile().map_err(|e| Error::io(std::env::temp_dir(), e))?;
        Ok(RunFile {
            file,
            len: Mutex::new(0),
        })
    }

    /// Sorts `records` and appends them as a run; leaves `records` empty.
    fn append(&self, records: &mut Vec<CallRecord>) -> Result<Run> {
        records.sort_unstable_by(CallRecord::nesting_order);
        let run_bytes = (records.len() * RECORD_BYTES) as u64;
        let offset = {
            let mut len = self.len.lock().unwrap_or_else(|e| e.into_inner());
            let offset = *len;
            *len += run_bytes;
            offset
        };
        // Written a window at a time, so a run costs no second copy.
        let mut bytes = Vec::with_capacity(WINDOW_RECORDS * RECORD_BYTES);
        let mut at = offset;
        for window in records.chunks(WINDOW_RECORDS) {
            bytes.clear();
            for record in window {
                bytes.extend_from_slice(&record.to_bytes());
            }
            self.file
                .write_all_at(&bytes, at)
                .map_err(|e| Error::io(std::env::temp_dir(), e))?;
            at += bytes.len() as u64;
        }
        records.clear();
        Ok(Run {
            offset,
            count: run_bytes / RECORD_BYTES as u64,
        })
    }
}

/// The sorter: records pushed in any order, taken back in nesting order.
pub(super) struct CallSorter<'f> {
    file: &'f RunFile,
    buffer: Vec<CallRecord>,
    run_records: usize,
    runs: Vec<Run>,
}

impl<'f> CallSorter<'f> {
    /// A sorter whose buffer holds `run_records` records (at least 1),
    /// writing its runs to `file`.
    pub fn new(file: &'f RunFile, run_records: usize) -> CallSorter<'f> {
        CallSorter {
            file,
            buffer: Vec::new(),
            run_records: run_records.max(1),
            runs: Vec::new(),
        }
    }

    /// Adds a record, writing the buffer as a run when it is full.
    pub fn push(&mut self, record: CallRecord) -> Result<()> {
        self.buffer.push(record);
        if self.buffer.len() >= self.run_records {
            let run = self.file.append(&mut self.buffer)?;
            self.runs.push(run);
        }
        Ok(())
    }

    /// Takes runs another sorter wrote to the same file.
    pub fn add_runs(&mut self, runs: impl IntoIterator<Item = Run>) {
        self.runs.extend(runs);
    }

    /// The runs written, and the records still in the buffer (unsorted).
    pub fn into_parts(self) -> (Vec<Run>, Vec<CallRecord>) {
        (self.runs, self.buffer)
    }

    /// How many runs went to disk so far.
    #[cfg(test)]
    pub fn runs(&self) -> usize {
        self.runs.len()
    }

    /// Calls `each` with every record, in nesting order.
    pub fn finish(mut self, mut each: impl FnMut(CallRecord) -> Result<()>) -> Result<()> {
        if self.runs.is_empty() {
            self.buffer.sort_unstable_by(CallRecord::nesting_order);
            return self.buffer.into_iter().try_for_each(each);
        }
        if !self.buffer.is_empty() {
            let run = self.file.append(&mut self.buffer)?;
            self.runs.push(run);
        }
        let mut readers: Vec<RunReader<'_>> = self
            .runs
            .iter()
            .map(|run| RunReader::new(&self.file.file, *run))
            .collect();
        let mut heap = BinaryHeap::with_capacity(readers.len());
        for (run, reader) in readers.iter_mut().enumerate() {
            if let Some(record) = reader.next()? {
                heap.push(Reverse(Head(record, run)));
            }
        }
        while let Some(Reverse(Head(record, run))) = heap.pop() {
            each(record)?;
            if let Some(next) = readers[run].next()? {
                heap.push(Reverse(Head(next, run)));
            }
        }
        Ok(())
    }
}

/// One run read back through a window of [`WINDOW_RECORDS`].
struct RunReader<'f> {
    file: &'f File,
    /// Where the next window starts in the file.
    next: u64,
    /// Bytes of the run not yet read into the window.
    left: u64,
    window: Vec<u8>,
    at: usize,
}

impl<'f> RunReader<'f> {
    fn new(file: &'f File, run: Run) -> RunReader<'f> {
        RunReader {
            file,
            next: run.offset,
            left: run.count * RECORD_BYTES as u64,
            window: Vec::new(),
            at: 0,
        }
    }

    /// The run's next record, `None` at its end.
    fn next(&mut self) -> Result<Option<CallRecord>> {
        if self.at == self.window.len() {
            if self.left == 0 {
                return Ok(None);
            }
            let len = self.left.min((WINDOW_RECORDS * RECORD_BYTES) as u64) as usize;
            self.window.resize(len, 0);
            self.file
                .read_exact_at(&mut self.window, self.next)
                .map_err(|e| Error::io(std::env::temp_dir(), e))?;
            self.next += len as u64;
            self.left -= len as u64;
            self.at = 0;
        }
        let bytes = self.window[self.at..self.at + RECORD_BYTES]
            .try_into()
            .expect("windows hold whole records");
        self.at += RECORD_BYTES;
        Ok(Some(CallRecord::from_bytes(bytes)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(count: usize, seed: u64) -> Vec<CallRecord> {
        let mut state = seed;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        (0..count)
            .map(|i| {
                let start = (next() % 50) as i64;
                CallRecord {
                    thread: (next() % 3) as i64 - 1,
                    start,
                    end: start + (next() % 20) as i64,
                    order: i as u64,
                    method: MethodId((next() % 7) as i32),
                }
            })
            .collect()
    }

    fn sorted(records: &[CallRecord], run_records: usize) -> (Vec<CallRecord>, usize) {
        let file = RunFile::new().unwrap();
        let mut sorter = CallSorter::new(&file, run_records);
        for record in records {
            sorter.push(*record).unwrap();
        }
        let runs = sorter.runs();
        let mut out = Vec::new();
        sorter
            .finish(|record| {
                out.push(record);
                Ok(())
            })
            .unwrap();
        (out, runs)
    }

    #[test]
    fn runs_on_disk_merge_into_the_order_of_one_sort() {
        let input = records(5_000, 0x9E37_79B9_7F4A_7C15);
        let mut expected = input.clone();
        expected.sort_by(CallRecord::nesting_order);
        let (in_memory, runs) = sorted(&input, RUN_RECORDS);
        assert_eq!(runs, 0);
        assert_eq!(in_memory, expected);
        for run_records in [1, 7, 333, 4_999, 5_000] {
            let (merged, runs) = sorted(&input, run_records);
            assert_eq!(runs, 5_000 / run_records, "full runs of {run_records}");
            assert_eq!(merged, expected, "runs of {run_records}");
        }
    }

    #[test]
    fn callers_committed_after_their_callees_sort_first() {
        let call = |method: i32, start, end, order| CallRecord {
            thread: 1,
            start,
            end,
            order,
            method: MethodId(method),
        };
        let (leaf, same, outer, next) = (
            call(0, 10, 20, 1),
            call(1, 10, 20, 2),
            call(2, 0, 100, 3),
            call(3, 30, 40, 0),
        );
        let (sorted, _) = sorted(&[leaf, same, outer, next], 2);
        assert_eq!(sorted, [outer, same, leaf, next]);
        assert!(outer.contains(&next));
        assert!(!leaf.contains(&next));
    }

    #[test]
    fn records_survive_their_bytes() {
        for record in records(100, 7) {
            assert_eq!(CallRecord::from_bytes(&record.to_bytes()), record);
        }
        let extreme = CallRecord {
            thread: i64::MIN,
            start: i64::MAX,
            end: -1,
            order: u64::MAX,
            method: MethodId(i32::MIN),
        };
        assert_eq!(CallRecord::from_bytes(&extreme.to_bytes()), extreme);
    }
}
