//! Traced calls sorted for nesting in bounded memory: an external merge
//! sort.
//!
//! A recording may hold far more `jdk.MethodTrace` events than fit in
//! memory, and nesting needs them in one order (thread, then start, the
//! longer first, then the later committed first: a caller returns, and is
//! committed, after its callees). Each call is kept as a fixed 36-byte record
//! (thread, start, end, commit order, method id); records gather in a
//! buffer of at most `run_records`; a full buffer is sorted and written to
//! an unlinked temporary file as a *run*. At the end, a recording that fit
//! in one buffer is sorted in place; otherwise the runs are merged through
//! a binary heap holding one record per run, each run read through a
//! 64 KiB buffer. Memory is the buffer plus 64 KiB per run, whatever the
//! recording's size.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};

use crate::common::MethodId;
use crate::error::{Error, Result};

/// Records a buffer holds before it is written as a run: 512 Ki (20 MiB
/// in memory).
pub(super) const RUN_RECORDS: usize = 1 << 19;

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

/// The sorter: records pushed in any order, taken back in nesting order.
pub(super) struct CallSorter {
    buffer: Vec<CallRecord>,
    run_records: usize,
    runs: Vec<File>,
}

impl CallSorter {
    /// A sorter whose buffer holds `run_records` records (at least 1).
    pub fn new(run_records: usize) -> CallSorter {
        CallSorter {
            buffer: Vec::new(),
            run_records: run_records.max(1),
            runs: Vec::new(),
        }
    }

    /// Adds a record, writing the buffer as a run when it is full.
    pub fn push(&mut self, record: CallRecord) -> Result<()> {
        self.buffer.push(record);
        if self.buffer.len() >= self.run_records {
            self.spill()?;
        }
        Ok(())
    }

    /// How many runs went to disk so far.
    #[cfg(test)]
    pub fn runs(&self) -> usize {
        self.runs.len()
    }

    fn spill(&mut self) -> Result<()> {
        self.buffer.sort_unstable_by(CallRecord::nesting_order);
        let temp = || Error::io(std::env::temp_dir(), std::io::Error::other("a sort run"));
        let file = tempfile::tempfile().map_err(|e| Error::io(std::env::temp_dir(), e))?;
        let mut out = BufWriter::with_capacity(1 << 16, file);
        for record in self.buffer.drain(..) {
            out.write_all(&record.to_bytes())?;
        }
        let mut file = out.into_inner().map_err(|_| temp())?;
        file.seek(SeekFrom::Start(0))?;
        self.runs.push(file);
        Ok(())
    }

    /// Calls `each` with every record, in nesting order.
    pub fn finish(mut self, mut each: impl FnMut(CallRecord) -> Result<()>) -> Result<()> {
        if self.runs.is_empty() {
            self.buffer.sort_unstable_by(CallRecord::nesting_order);
            return self.buffer.into_iter().try_for_each(each);
        }
        if !self.buffer.is_empty() {
            self.spill()?;
        }
        let mut readers: Vec<BufReader<File>> = self
            .runs
            .into_iter()
            .map(|file| BufReader::with_capacity(1 << 16, file))
            .collect();
        let mut heap = BinaryHeap::with_capacity(readers.len());
        for (run, reader) in readers.iter_mut().enumerate() {
            if let Some(record) = next_record(reader)? {
                heap.push(Reverse(Head(record, run)));
            }
        }
        while let Some(Reverse(Head(record, run))) = heap.pop() {
            each(record)?;
            if let Some(next) = next_record(&mut readers[run])? {
                heap.push(Reverse(Head(next, run)));
            }
        }
        Ok(())
    }
}

/// The next record of a run, `None` at its end.
fn next_record(reader: &mut BufReader<File>) -> Result<Option<CallRecord>> {
    let mut bytes = [0; RECORD_BYTES];
    match reader.read_exact(&mut bytes) {
        Ok(()) => Ok(Some(CallRecord::from_bytes(&bytes))),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(None),
        Err(e) => Err(e.into()),
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
        let mut sorter = CallSorter::new(run_records);
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
