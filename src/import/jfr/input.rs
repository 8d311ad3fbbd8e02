//! The byte cursor every JFR structure is read with: big-endian fixed-width
//! numbers, the packed integers of a chunk with compressed integers, and the
//! string encodings.
//!
//! A packed integer is little-endian groups of 7 bits, the high bit of each
//! byte saying another follows; the 9th byte, when reached, holds 8 whole
//! bits (so 64 bits fit in 9 bytes). A chunk whose header flag 0 is clear
//! writes its `short`, `int` and `long` values as 2, 4 and 8 big-endian
//! bytes instead. Every read checks the bytes left first and reports the
//! offset (in the file) where it failed; nothing is allocated before the
//! count it is sized by has been checked against the bytes left.

use std::borrow::Cow;
use std::fmt;

/// Why a JFR structure could not be read, and where (a file offset).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("at offset {offset}: {what}")]
pub struct JfrError {
    /// The offset in the file where the read failed.
    pub offset: u64,
    /// What was wrong.
    pub what: String,
}

impl JfrError {
    /// An error at `offset`.
    pub fn new(offset: u64, what: impl fmt::Display) -> Self {
        JfrError {
            offset,
            what: what.to_string(),
        }
    }
}

/// A result of the JFR reader.
pub type JfrResult<T> = std::result::Result<T, JfrError>;

/// A string as a JFR event or pool holds it, kept as its bytes until its
/// text is asked for ([`JfrString::to_text`]), so decoding allocates
/// nothing.
#[derive(Debug, Clone, PartialEq)]
pub enum JfrString<'a> {
    /// Encoding 0: no string.
    Null,
    /// Encoding 1: the empty string.
    Empty,
    /// Encoding 2: a key of the `java.lang.String` constant pool.
    Pooled(i64),
    /// Encoding 3: UTF-8 bytes.
    Utf8(&'a [u8]),
    /// Encoding 4: UTF-16 code units, each an integer of the chunk's
    /// encoding (`compressed`: packed).
    Chars {
        /// The units' bytes.
        bytes: &'a [u8],
        /// How many units.
        count: usize,
        /// Whether the units are packed integers.
        compressed: bool,
    },
    /// Encoding 5: Latin-1 bytes.
    Latin1(&'a [u8]),
}

impl<'a> JfrString<'a> {
    /// The text; `None` for the null string and a pool key (which only
    /// its chunk can look up).
    pub fn to_text(&self) -> Option<Cow<'a, str>> {
        match *self {
            JfrString::Null | JfrString::Pooled(_) => None,
            JfrString::Empty => Some(Cow::Borrowed("")),
            JfrString::Utf8(bytes) => Some(String::from_utf8_lossy(bytes)),
            JfrString::Latin1(bytes) => Some(latin1(bytes)),
            JfrString::Chars {
                bytes,
                count,
                compressed,
            } => {
                let mut input = Input::new(bytes, 0, compressed);
                let units: Vec<u16> = (0..count).map_while(|_| input.char().ok()).collect();
                Some(Cow::Owned(String::from_utf16_lossy(&units)))
            }
        }
    }
}

/// A cursor over a chunk's bytes.
#[derive(Debug, Clone)]
pub struct Input<'a> {
    bytes: &'a [u8],
    position: usize,
    /// The file offset of `bytes[0]`, for error messages.
    base: u64,
    compressed: bool,
}

impl<'a> Input<'a> {
    /// A cursor at the start of `bytes`, which start at file offset `base`;
    /// `compressed` is the chunk's compressed-integers flag.
    pub fn new(bytes: &'a [u8], base: u64, compressed: bool) -> Self {
        Input {
            bytes,
            position: 0,
            base,
            compressed,
        }
    }

    /// The position in the slice.
    #[inline]
    pub fn position(&self) -> usize {
        self.position
    }

    /// Moves to `position` in the slice (checked on the next read).
    #[inline]
    pub fn seek(&mut self, position: usize) {
        self.position = position;
    }

    /// The bytes left after the position.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.bytes.len().saturating_sub(self.position)
    }

    /// The file offset of the position.
    pub fn file_offset(&self) -> u64 {
        self.base + self.position as u64
    }

    /// An error at the position.
    pub fn error(&self, what: impl fmt::Display) -> JfrError {
        JfrError::new(self.file_offset(), what)
    }

    fn cut(&self, what: &str) -> JfrError {
        self.error(format_args!("the data ends inside {what}"))
    }

    /// `n` raw bytes.
    #[inline]
    pub fn bytes(&mut self, n: usize) -> JfrResult<&'a [u8]> {
        if n > self.remaining() {
            return Err(self.cut("a value"));
        }
        let slice = &self.bytes[self.position..self.position + n];
        self.position += n;
        Ok(slice)
    }

    /// One byte.
    #[inline]
    pub fn u8(&mut self) -> JfrResult<u8> {
        match self.bytes.get(self.position) {
            Some(&b) => {
                self.position += 1;
                Ok(b)
            }
            None => Err(self.cut("a byte")),
        }
    }

    /// A big-endian `u32`, whatever the chunk's integer encoding.
    #[inline]
    pub fn raw_u32(&mut self) -> JfrResult<u32> {
        let b = self.bytes(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A big-endian `u64`, whatever the chunk's integer encoding.
    #[inline]
    pub fn raw_u64(&mut self) -> JfrResult<u64> {
        let b = self.bytes(8)?;
        let mut a = [0; 8];
        a.copy_from_slice(b);
        Ok(u64::from_be_bytes(a))
    }

    /// A packed integer (up to 9 bytes).
    #[inline]
    pub fn varint(&mut self) -> JfrResult<u64> {
        // Most values are below 128.
        if let Some(&b) = self.bytes.get(self.position)
            && b < 0x80
        {
            self.position += 1;
            return Ok(u64::from(b));
        }
        let bytes = &self.bytes[self.position.min(self.bytes.len())..];
        let mut value = 0u64;
        for i in 0..8 {
            let Some(&b) = bytes.get(i) else {
                return Err(self.cut("a packed integer"));
            };
            value |= u64::from(b & 0x7F) << (7 * i);
            if b & 0x80 == 0 {
                self.position += i + 1;
                return Ok(value);
            }
        }
        let Some(&last) = bytes.get(8) else {
            return Err(self.cut("a packed integer"));
        };
        self.position += 9;
        Ok(value | u64::from(last) << 56)
    }

    /// A `long` in the chunk's integer encoding.
    #[inline]
    pub fn long(&mut self) -> JfrResult<i64> {
        if self.compressed {
            Ok(self.varint()? as i64)
        } else {
            Ok(self.raw_u64()? as i64)
        }
    }

    /// An `int` in the chunk's integer encoding.
    #[inline]
    pub fn int(&mut self) -> JfrResult<i32> {
        if self.compressed {
            Ok(self.varint()? as i32)
        } else {
            Ok(self.raw_u32()? as i32)
        }
    }

    /// A `short` in the chunk's integer encoding.
    #[inline]
    pub fn short(&mut self) -> JfrResult<i16> {
        if self.compressed {
            Ok(self.varint()? as i16)
        } else {
            let b = self.bytes(2)?;
            Ok(i16::from_be_bytes([b[0], b[1]]))
        }
    }

    /// A `char` (a UTF-16 code unit) in the chunk's integer encoding.
    #[inline]
    pub fn char(&mut self) -> JfrResult<u16> {
        Ok(self.short()? as u16)
    }

    /// An `int` count of things each at least `min_size` bytes long, checked
    /// against the bytes left.
    #[inline]
    pub fn count(&mut self, min_size: usize, what: &str) -> JfrResult<usize> {
        let at = self.file_offset();
        let count = self.int()?;
        let fits = usize::try_from(count)
            .ok()
            .filter(|&n| n.saturating_mul(min_size.max(1)) <= self.remaining());
        fits.ok_or_else(|| {
            JfrError::new(
                at,
                format_args!(
                    "{what} count {count} exceeds the {} bytes left",
                    self.remaining()
                ),
            )
        })
    }

    /// A string in any of its encodings.
    #[inline]
    pub fn string(&mut self) -> JfrResult<JfrString<'a>> {
        let at = self.file_offset();
        match self.u8()? {
            0 => Ok(JfrString::Null),
            1 => Ok(JfrString::Empty),
            2 => Ok(JfrString::Pooled(self.long()?)),
            3 => {
                let n = self.count(1, "string byte")?;
                Ok(JfrString::Utf8(self.bytes(n)?))
            }
            4 => {
                let count = self.count(1, "string char")?;
                let start = self.position;
                for _ in 0..count {
                    self.char()?;
                }
                Ok(JfrString::Chars {
                    bytes: &self.bytes[start..self.position],
                    count,
                    compressed: self.compressed,
                })
            }
            5 => {
                let n = self.count(1, "string byte")?;
                Ok(JfrString::Latin1(self.bytes(n)?))
            }
            other => Err(JfrError::new(
                at,
                format_args!("unknown string encoding {other}"),
            )),
        }
    }

    /// Skips a string in any of its encodings.
    #[inline]
    pub fn skip_string(&mut self) -> JfrResult<()> {
        self.string().map(drop)
    }
}

/// Latin-1 bytes as text (borrowed when they are ASCII).
fn latin1(bytes: &[u8]) -> Cow<'_, str> {
    if bytes.is_ascii() {
        // ASCII is UTF-8.
        Cow::Borrowed(std::str::from_utf8(bytes).unwrap_or_default())
    } else {
        Cow::Owned(bytes.iter().map(|&b| char::from(b)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_integers_take_up_to_nine_bytes_the_ninth_whole() {
        let mut input = Input::new(&[0x05, 0x80, 0x01, 0xFF, 0x7F], 0, true);
        assert_eq!(input.varint().unwrap(), 5);
        assert_eq!(input.varint().unwrap(), 128);
        assert_eq!(input.varint().unwrap(), 0x3FFF);
        let max = [0xFF; 9];
        assert_eq!(Input::new(&max, 0, true).varint().unwrap(), u64::MAX);
        let cut = [0xFF; 8];
        let error = Input::new(&cut, 100, true).varint().unwrap_err();
        assert_eq!(error.offset, 100);
    }

    #[test]
    fn uncompressed_integers_are_big_endian() {
        let bytes = [0, 0, 0, 7, 0, 3, 0, 0, 0, 0, 0, 0, 1, 0];
        let mut input = Input::new(&bytes, 0, false);
        assert_eq!(input.int().unwrap(), 7);
        assert_eq!(input.short().unwrap(), 3);
        assert_eq!(input.long().unwrap(), 256);
    }

    #[test]
    fn strings_in_every_encoding() {
        let bytes = [
            0, 1, 2, 9, 3, 2, b'h', b'i', 4, 2, 0x41, 0xE9, 0x01, 5, 2, b'a', 0xE9, 6,
        ];
        let mut input = Input::new(&bytes, 0, true);
        let mut text = || input.string().unwrap().to_text().map(|t| t.into_owned());
        assert_eq!(text(), None);
        assert_eq!(text().as_deref(), Some(""));
        assert_eq!(text(), None);
        assert_eq!(text().as_deref(), Some("hi"));
        assert_eq!(text().as_deref(), Some("Aé"));
        assert_eq!(text().as_deref(), Some("aé"));
        assert!(input.string().is_err());
        let mut input = Input::new(&bytes[2..], 0, true);
        assert_eq!(input.string().unwrap(), JfrString::Pooled(9));
    }

    #[test]
    fn a_count_larger_than_the_bytes_left_is_refused() {
        let mut input = Input::new(&[3, 0xFF, 0xFF, 0x03, 1], 10, true);
        input.u8().unwrap();
        let error = input.count(1, "array").unwrap_err();
        assert_eq!(error.offset, 11);
    }
}
