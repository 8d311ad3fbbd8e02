//! Big-endian primitives (Java's `DataInput`/`DataOutput`) over byte slices
//! and writers.

use std::io::{self, Write};

use crate::error::{DecodeError, DecodeErrorKind};
use crate::model::JavaStr;

/// A cursor over a byte slice that knows the absolute offset of its first
/// byte, so every error names a file offset.
#[derive(Debug, Clone)]
pub struct ByteReader<'a> {
    data: &'a [u8],
    position: usize,
    base: u64,
}

type DecodeResult<T> = Result<T, DecodeError>;

impl<'a> ByteReader<'a> {
    /// A reader over `data`, whose first byte is at offset `base` of its file.
    pub fn new(data: &'a [u8], base: u64) -> Self {
        ByteReader {
            data,
            position: 0,
            base,
        }
    }

    /// The absolute offset of the next byte.
    #[inline(always)]
    pub fn offset(&self) -> u64 {
        self.base + self.position as u64
    }

    /// The position of the next byte inside the slice.
    #[inline]
    pub fn position(&self) -> usize {
        self.position
    }

    /// Moves to `position` inside the slice (clamped to its end).
    pub fn seek(&mut self, position: usize) {
        self.position = position.min(self.data.len());
    }

    /// Bytes left.
    #[inline(always)]
    pub fn remaining(&self) -> usize {
        self.data.len() - self.position
    }

    /// Whether no bytes are left.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// An error of `kind` at the current offset.
    pub fn error(&self, kind: DecodeErrorKind) -> DecodeError {
        DecodeError::new(self.offset(), kind)
    }

    /// An error of `kind` at absolute offset `offset`.
    pub fn error_at(&self, offset: u64, kind: DecodeErrorKind) -> DecodeError {
        DecodeError::new(offset, kind)
    }

    /// The next `len` bytes.
    #[inline(always)]
    pub fn bytes(&mut self, len: usize) -> DecodeResult<&'a [u8]> {
        if self.remaining() < len {
            return Err(self.error(DecodeErrorKind::UnexpectedEnd {
                needed: len as u64,
                available: self.remaining() as u64,
            }));
        }
        let bytes = &self.data[self.position..self.position + len];
        self.position += len;
        Ok(bytes)
    }

    #[inline(always)]
    fn array<const N: usize>(&mut self) -> DecodeResult<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.bytes(N)?);
        Ok(out)
    }

    /// The next byte, without consuming it.
    #[inline]
    pub fn peek_u8(&self) -> Option<u8> {
        self.data.get(self.position).copied()
    }

    /// A `u8`.
    #[inline(always)]
    pub fn u8(&mut self) -> DecodeResult<u8> {
        Ok(self.array::<1>()?[0])
    }

    /// An `i8`.
    #[inline(always)]
    pub fn i8(&mut self) -> DecodeResult<i8> {
        Ok(self.u8()? as i8)
    }

    /// A `bool` (0 = false, anything else true).
    #[inline(always)]
    pub fn bool(&mut self) -> DecodeResult<bool> {
        Ok(self.u8()? != 0)
    }

    /// An `i16`.
    #[inline(always)]
    pub fn i16(&mut self) -> DecodeResult<i16> {
        Ok(i16::from_be_bytes(self.array()?))
    }

    /// A `u16` (also a Java `char`).
    #[inline(always)]
    pub fn u16(&mut self) -> DecodeResult<u16> {
        Ok(u16::from_be_bytes(self.array()?))
    }

    /// An `i32`.
    #[inline(always)]
    pub fn i32(&mut self) -> DecodeResult<i32> {
        Ok(i32::from_be_bytes(self.array()?))
    }

    /// An `i64`.
    #[inline(always)]
    pub fn i64(&mut self) -> DecodeResult<i64> {
        Ok(i64::from_be_bytes(self.array()?))
    }

    /// A `UTF` string: `u16` length, then modified UTF-8, validated.
    pub fn utf(&mut self) -> DecodeResult<JavaStr<'a>> {
        let start = self.offset() + 2;
        let len = self.u16()? as usize;
        let bytes = self.bytes(len)?;
        crate::format::mutf8::validate(bytes).map_err(|position| {
            DecodeError::new(start, DecodeErrorKind::MalformedUtf { position })
        })?;
        Ok(JavaStr::from_validated(bytes))
    }

    /// An `i32` element count, checked against the bytes left given that each
    /// element takes at least `min_element_len` bytes, so no caller allocates
    /// for elements that cannot be there. A negative count is invalid; a
    /// count the remaining bytes cannot hold is an unexpected end (the data
    /// was cut, as a crashed recorder's is).
    pub fn count(&mut self, what: &'static str, min_element_len: usize) -> DecodeResult<usize> {
        let offset = self.offset();
        let count = self.i32()?;
        self.check_count(offset, what, count as i64, min_element_len)
    }

    /// Checks a count read at `offset` as [`ByteReader::count`] does.
    pub fn check_count(
        &self,
        offset: u64,
        what: &'static str,
        count: i64,
        min_element_len: usize,
    ) -> DecodeResult<usize> {
        if count < 0 {
            return Err(DecodeError::new(
                offset,
                DecodeErrorKind::InvalidCount { what, count },
            ));
        }
        let needed = (count as u64).saturating_mul(min_element_len.max(1) as u64);
        if needed > self.remaining() as u64 {
            return Err(self.error(DecodeErrorKind::UnexpectedEnd {
                needed,
                available: self.remaining() as u64,
            }));
        }
        Ok(count as usize)
    }
}

/// How many elements to reserve room for before decoding `count` of them.
/// A count is checked against the bytes left, but those can be a whole
/// multi-GB file, so room for more elements is made only as they decode.
#[inline]
pub fn preallocation(count: usize) -> usize {
    count.min(64)
}

/// Java `DataOutput` primitives for any writer.
pub trait WriteBigEndian: Write {
    /// Writes a `u8`.
    fn put_u8(&mut self, v: u8) -> io::Result<()> {
        self.write_all(&[v])
    }
    /// Writes an `i8`.
    fn put_i8(&mut self, v: i8) -> io::Result<()> {
        self.write_all(&[v as u8])
    }
    /// Writes a `bool` as 0 or 1.
    fn put_bool(&mut self, v: bool) -> io::Result<()> {
        self.write_all(&[v as u8])
    }
    /// Writes an `i16`.
    fn put_i16(&mut self, v: i16) -> io::Result<()> {
        self.write_all(&v.to_be_bytes())
    }
    /// Writes a `u16`.
    fn put_u16(&mut self, v: u16) -> io::Result<()> {
        self.write_all(&v.to_be_bytes())
    }
    /// Writes an `i32`.
    fn put_i32(&mut self, v: i32) -> io::Result<()> {
        self.write_all(&v.to_be_bytes())
    }
    /// Writes an `i64`.
    fn put_i64(&mut self, v: i64) -> io::Result<()> {
        self.write_all(&v.to_be_bytes())
    }
    /// Writes a `UTF` string (fails for more than 65,535 bytes).
    fn put_utf(&mut self, s: &JavaStr<'_>) -> io::Result<()> {
        let bytes = s.as_bytes();
        let len = u16::try_from(bytes.len()).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                crate::error::DecodeErrorKind::StringTooLong(bytes.len()),
            )
        })?;
        self.put_u16(len)?;
        self.write_all(bytes)
    }
}

impl<W: Write + ?Sized> WriteBigEndian for W {}
