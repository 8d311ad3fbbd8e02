//! A deflated ZIP entry made only of *stored* deflate blocks, read in place.
//!
//! Deflate at level 0 (what the recorder's `ZipOutputStream` writes) does
//! not compress: it cuts the data into stored blocks, each a 3-bit header
//! (last-block flag, type `00`) padded to a byte, `LEN` and its complement
//! `NLEN` (little-endian `u16`s), then `LEN` bytes of the data as they are
//! (RFC 1951, 3.2.4). The JDK writes 32 KiB blocks: the data sits in the
//! file in pieces, 5 bytes apart. [`StoredBlocks::walk`] hops from header
//! to header (one 5-byte `pread` each, ~33,000 for a 1 GB entry) and keeps
//! where each piece starts, in the entry and in the file; then any range of
//! the entry is copied from the file piece by piece
//! ([`copy_at`](StoredBlocks::copy_at)), which is what the pager behind
//! [`TraceBytes`] serves faults with (`pager`).
//!
//! The walk accepts the one other block zlib ends such a stream with: an
//! empty last block of fixed codes (`03 00`). Any other block (the entry
//! is really compressed), a header whose `NLEN` is not `LEN`'s complement,
//! a stream that runs past the entry or ends before its last block, or
//! pieces that do not add up to the entry's size: the entry is not made of
//! stored blocks, and [`walk`](StoredBlocks::walk) says why; the caller
//! inflates it instead (which checks its CRC and reports the damage). So
//! that a hostile entry of tiny blocks costs neither time nor memory in
//! proportion to its size, the walk gives up past one header per
//! [`MIN_AVERAGE_PIECE`] bytes of the entry (the JDK's average is 32 KiB).
//! The CRC is not checked, as for a stored entry: that would read every
//! byte at open; the readers check the trace's structure as they go.

use super::TraceBytes;

/// The smallest average piece a walk accepts (see the module's doc).
pub const MIN_AVERAGE_PIECE: u64 = 4096;

/// One stored block's data: where it starts in the entry and in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Piece {
    logical: u64,
    physical: u64,
}

/// A deflated entry found to be stored blocks only: its pieces, in order.
#[derive(Debug, Clone)]
pub struct StoredBlocks {
    file: TraceBytes,
    /// Non-empty pieces; each runs to the next one's `logical` start (the
    /// last to `len`).
    pieces: Vec<Piece>,
    len: u64,
}

impl StoredBlocks {
    /// Walks the deflate stream of `packed` bytes at `offset` in `file`,
    /// which inflates to `size` bytes. `Err` says why it is not stored
    /// blocks only (not a damage report: inflating tells that).
    pub fn walk(file: &TraceBytes, offset: u64, packed: u64, size: u64) -> Result<Self, String> {
        let end = offset
            .checked_add(packed)
            .filter(|&end| end <= file.len())
            .ok_or("the entry runs past the file")?;
        let most_headers = packed / MIN_AVERAGE_PIECE + 16;
        let mut pieces = Vec::new();
        let (mut at, mut logical, mut headers) = (offset, 0u64, 0u64);
        loop {
            headers += 1;
            if headers > most_headers {
                return Err(format!(
                    "more than {most_headers} deflate blocks: smaller than {MIN_AVERAGE_PIECE} \
                     bytes on average"
                ));
            }
            let mut header = [0u8; 5];
            let got = file.copy_at(at, &mut header[..(end - at).min(5) as usize]);
            if got >= 2 && header[0] == 0x03 && header[1] == 0x00 {
                // An empty last block of fixed codes.
                break;
            }
            if got < 5 {
                return Err(format!(
                    "the deflate stream ends inside a block header at {at}"
                ));
            }
            let (last, kind) = (header[0] & 1 == 1, (header[0] >> 1) & 3);
            if kind != 0 {
                return Err(format!("a compressed deflate block at {at}"));
            }
            let len = u16::from_le_bytes([header[1], header[2]]);
            let complement = u16::from_le_bytes([header[3], header[4]]);
            if len != !complement {
                return Err(format!("a stored block at {at} with a damaged length"));
            }
            let data = at + 5;
            if data + u64::from(len) > end {
                return Err(format!("a stored block at {at} runs past the entry"));
            }
            if len > 0 {
                pieces.push(Piece {
                    logical,
                    physical: data,
                });
                logical += u64::from(len);
            }
            at = data + u64::from(len);
            if last {
                break;
            }
            if at >= end {
                return Err("the deflate stream ends without its last block".into());
            }
        }
        if logical != size {
            return Err(format!(
                "the stored blocks hold {logical} bytes, the entry says {size}"
            ));
        }
        Ok(StoredBlocks {
            file: file.clone(),
            pieces,
            len: size,
        })
    }

    /// The entry's length.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the entry is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies the entry's bytes from `offset` on into `buffer`, as many as
    /// fit and there are, from the file (`pread`, piece by piece); returns
    /// how many (fewer where the file was cut short meanwhile).
    pub fn copy_at(&self, offset: u64, buffer: &mut [u8]) -> usize {
        let wanted = buffer
            .len()
            .min(usize::try_from(self.len.saturating_sub(offset)).unwrap_or(usize::MAX));
        // The piece holding `offset`: the last one starting at or before it.
        let mut piece = self.pieces.partition_point(|p| p.logical <= offset);
        let mut filled = 0;
        while filled < wanted && piece > 0 {
            let Piece { logical, physical } = self.pieces[piece - 1];
            let piece_end = self.pieces.get(piece).map_or(self.len, |p| p.logical);
            let from = offset + filled as u64;
            let take = (piece_end - from).min((wanted - filled) as u64) as usize;
            let read = self.file.copy_at(
                physical + (from - logical),
                &mut buffer[filled..filled + take],
            );
            filled += read;
            if read < take {
                break;
            }
            piece += 1;
        }
        filled
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// `data` deflated at level 0 by zlib, behind `prefix` bytes.
    fn stored(data: &[u8], prefix: usize) -> Vec<u8> {
        let mut out = vec![0xAA; prefix];
        let mut encoder = flate2::write::DeflateEncoder::new(&mut out, flate2::Compression::none());
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap();
        out
    }

    fn sample(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 31 % 251) as u8).collect()
    }

    #[test]
    fn copies_any_range_across_pieces() {
        let data = sample(300_000);
        let file = TraceBytes::from_vec(stored(&data, 7));
        let packed = file.len() - 7;
        let blocks = StoredBlocks::walk(&file, 7, packed, data.len() as u64).unwrap();
        assert!(blocks.pieces.len() > 4, "{} pieces", blocks.pieces.len());
        for (start, len) in [(0, 10), (65_530, 20), (1, 299_999), (299_990, 100), (5, 0)] {
            let mut buffer = vec![0; len];
            let copied = blocks.copy_at(start as u64, &mut buffer);
            let expected = &data[start.min(data.len())..(start + len).min(data.len())];
            assert_eq!(&buffer[..copied], expected, "{start}+{len}");
        }
        assert_eq!(blocks.copy_at(400_000, &mut [0; 4]), 0);
    }

    #[test]
    fn a_compressed_or_damaged_stream_is_refused_never_a_panic() {
        let data = sample(100_000);
        let good = stored(&data, 0);
        let walk = |bytes: Vec<u8>, size: u64| {
            let len = bytes.len() as u64;
            StoredBlocks::walk(&TraceBytes::from_vec(bytes), 0, len, size)
        };
        assert!(walk(good.clone(), 100_000).is_ok());
        assert!(walk(good.clone(), 99_999).is_err(), "a wrong size");
        let mut compressed = Vec::new();
        let mut encoder =
            flate2::write::DeflateEncoder::new(&mut compressed, flate2::Compression::default());
        encoder.write_all(&data).unwrap();
        encoder.finish().unwrap();
        assert!(
            walk(compressed, 100_000)
                .unwrap_err()
                .contains("compressed")
        );
        for cut in [0, 1, 4, 5, 6, 65_540, good.len() - 1] {
            assert!(walk(good[..cut].to_vec(), 100_000).is_err(), "cut at {cut}");
        }
        for at in 0..good.len().min(12) {
            for bit in 0..8 {
                let mut flipped = good.clone();
                flipped[at] ^= 1 << bit;
                let _ = walk(flipped, 100_000);
            }
        }
        // Tiny blocks, one byte each: refused before they are all walked.
        let mut tiny = Vec::new();
        for (i, byte) in data.iter().enumerate() {
            let last = u8::from(i + 1 == data.len());
            tiny.extend_from_slice(&[last, 1, 0, 0xFE, 0xFF, *byte]);
        }
        assert!(walk(tiny, 100_000).unwrap_err().contains("on average"));
    }
}
