//! [`ByteSource`]: where a reader's random reads take their bytes, chosen
//! once at open ([`Reads`]).
//!
//! A reader without a resident window keeps every page it touches, so its
//! random reads are lent slices of the mapping. Under a window every page
//! a random read maps must be counted and later released (`Resident`), and
//! each release costs a system call that makes the other cores flush their
//! TLBs: its random reads copy the bytes by `pread`
//! ([`TraceBytes::copy_at`]) into a scratch buffer instead, which maps
//! nothing. Bytes in memory are always lent. Every search, parse and
//! decode of the random lookups is written once, over this type.
//!
//! Invariant: a read gives exactly the bytes asked for, whatever the mode.
//! Bytes past the end of the file, or lost because the file was cut short
//! under the reader, read as [`CUT_SHORT`], which is no object kind: the
//! decoders stop there with an error, as they do on a file read without a
//! mapping (`pager`), never with a signal.

use std::ops::Range;

use super::TraceBytes;

/// The byte read where a file was cut short under the reader: no object
/// kind, so every decoder stops there with an error.
pub(crate) const CUT_SHORT: u8 = 0xFF;

/// How a reader's random reads take their bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Reads {
    /// Slices of the mapping, lent (pages stay mapped).
    #[default]
    Lend,
    /// Copies by `pread`, which map nothing (under a resident window).
    Copy,
}

/// A file's bytes, read as [`Reads`] says (see the module).
#[derive(Clone, Copy)]
pub(crate) struct ByteSource<'a> {
    bytes: &'a TraceBytes,
    /// The bytes, lent.
    lent: &'a [u8],
    copy: bool,
}

impl std::fmt::Debug for ByteSource<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ByteSource")
            .field("len", &self.lent.len())
            .field("copy", &self.copy)
            .finish()
    }
}

impl<'a> ByteSource<'a> {
    /// `bytes` read as `reads` says (bytes in memory are always lent).
    pub(crate) fn new(bytes: &'a TraceBytes, reads: Reads) -> Self {
        ByteSource {
            bytes,
            lent: bytes.as_slice(),
            copy: reads == Reads::Copy && bytes.is_mapped(),
        }
    }

    /// Whether reads copy (else they lend).
    #[inline]
    pub(crate) fn copies(&self) -> bool {
        self.copy
    }

    /// The bytes of `range`: lent from the mapping, or copied into
    /// `scratch` (see the module for bytes past the end).
    pub(crate) fn bytes<'s>(&self, range: Range<u64>, scratch: &'s mut Vec<u8>) -> &'s [u8]
    where
        'a: 's,
    {
        let len = range.end.saturating_sub(range.start);
        if !self.copy
            && let Some(lent) = usize::try_from(range.start)
                .ok()
                .zip(usize::try_from(range.end).ok())
                .and_then(|(from, to)| self.lent.get(from..to))
        {
            return lent;
        }
        scratch.clear();
        scratch.resize(usize::try_from(len).unwrap_or(0), CUT_SHORT);
        self.read_into(range.start, scratch);
        scratch
    }

    /// Fills `out` with the bytes from `at` on (see the module for bytes
    /// past the end); returns how many the file had.
    #[inline]
    pub(crate) fn read_into(&self, at: u64, out: &mut [u8]) -> usize {
        let read = if self.copy {
            self.bytes.copy_at(at, out)
        } else {
            let from = usize::try_from(at).unwrap_or(usize::MAX);
            let lent = self.lent.get(from..).unwrap_or(&[]);
            let n = lent.len().min(out.len());
            out[..n].copy_from_slice(&lent[..n]);
            n
        };
        let len = out.len();
        out[read.min(len)..].fill(CUT_SHORT);
        read
    }

    /// The `N` bytes from `at` on.
    #[inline]
    pub(crate) fn array<const N: usize>(&self, at: u64) -> [u8; N] {
        if !self.copy
            && let Some(lent) = usize::try_from(at)
                .ok()
                .and_then(|from| self.lent.get(from..from.checked_add(N)?))
                .and_then(|lent| <[u8; N]>::try_from(lent).ok())
        {
            return lent;
        }
        let mut out = [CUT_SHORT; N];
        self.read_into(at, &mut out);
        out
    }

    /// The little-endian `u64`s from byte `at` on into `out`, in one read.
    pub(crate) fn u64s_le(&self, at: u64, out: &mut [u64]) {
        let mut scratch = Vec::new();
        let len = (out.len() as u64).saturating_mul(8);
        let bytes = self.bytes(at..at.saturating_add(len), &mut scratch);
        for (word, le) in out.iter_mut().zip(bytes.chunks_exact(8)) {
            *word = u64::from_le_bytes(<[u8; 8]>::try_from(le).unwrap_or([CUT_SHORT; 8]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lent and copied reads give the same bytes, and bytes past the end
    /// read as `CUT_SHORT` either way.
    #[test]
    fn copies_and_lent_reads_agree() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bytes");
        let content: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &content).unwrap();
        let mapped = TraceBytes::map(&path).unwrap();
        for reads in [Reads::Lend, Reads::Copy] {
            let source = ByteSource::new(&mapped, reads);
            assert_eq!(source.copies(), reads == Reads::Copy);
            let mut scratch = Vec::new();
            assert_eq!(source.bytes(100..200, &mut scratch), &content[100..200]);
            let past = source.bytes(9_990..10_010, &mut scratch).to_vec();
            assert_eq!(&past[..10], &content[9_990..]);
            assert!(past[10..].iter().all(|&b| b == CUT_SHORT));
            assert_eq!(source.array::<4>(5), [5, 6, 7, 8]);
            assert_eq!(source.array::<2>(u64::MAX - 1), [CUT_SHORT; 2]);
            let mut words = [0u64; 2];
            source.u64s_le(8, &mut words);
            assert_eq!(
                words[0],
                u64::from_le_bytes(content[8..16].try_into().unwrap())
            );
        }
    }
}
