//! Big-endian primitives (Java's `DataInput`/`DataOutput`) over byte slices
//! and writers: [`ByteReader`] decodes; [`SliceWriter`] encodes an object
//! into a slice at once (the codecs' one-shot path: straight into a
//! streaming block's room, or through [`encode_sized_to`] to any writer);
//! [`WriteBigEndian`] puts single primitives to any writer.

use std::io::{self, Write};

use crate::common::PhysicalOffset;
use crate::error::{DecodeError, DecodeErrorKind};
use crate::model::JavaStr;

/// A cursor over a byte slice that knows the absolute offset of its first
/// byte, so every error names a file offset.
#[derive(Debug, Clone)]
pub struct ByteReader<'a> {
    data: &'a [u8],
    /// The bytes not yet read, the end of `data`: a read checks one
    /// length and moves one slice.
    rest: &'a [u8],
    base: u64,
}

type DecodeResult<T> = Result<T, DecodeError>;

impl<'a> ByteReader<'a> {
    /// A reader over `data`, whose first byte is at offset `base` of its file.
    pub fn new(data: &'a [u8], base: u64) -> Self {
        ByteReader {
            data,
            rest: data,
            base,
        }
    }

    /// The absolute offset of the next byte.
    #[inline(always)]
    pub fn offset(&self) -> u64 {
        self.base + self.position() as u64
    }

    /// The position of the next byte inside the slice.
    #[inline]
    pub fn position(&self) -> usize {
        self.data.len() - self.rest.len()
    }

    /// Moves to `position` inside the slice (clamped to its end).
    pub fn seek(&mut self, position: usize) {
        self.rest = &self.data[position.min(self.data.len())..];
    }

    /// Bytes left.
    #[inline(always)]
    pub fn remaining(&self) -> usize {
        self.rest.len()
    }

    /// Whether no bytes are left.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// An error of `kind` at the current offset.
    pub fn error(&self, kind: DecodeErrorKind) -> DecodeError {
        DecodeError::new(PhysicalOffset(self.offset()), kind)
    }

    /// An error of `kind` at absolute offset `offset`.
    pub fn error_at(&self, offset: u64, kind: DecodeErrorKind) -> DecodeError {
        DecodeError::new(PhysicalOffset(offset), kind)
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
        let (bytes, rest) = self.rest.split_at(len);
        self.rest = rest;
        Ok(bytes)
    }

    #[inline(always)]
    fn array<const N: usize>(&mut self) -> DecodeResult<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.bytes(N)?);
        Ok(out)
    }

    /// The bytes left, without consuming them (with [`seek`](Self::seek),
    /// for decoders that read several fields at once).
    #[inline(always)]
    pub fn rest(&self) -> &'a [u8] {
        self.rest
    }

    /// The next byte, without consuming it.
    #[inline]
    pub fn peek_u8(&self) -> Option<u8> {
        self.rest.first().copied()
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
        crate::mutf8::validate(bytes).map_err(|position| {
            DecodeError::new(
                PhysicalOffset(start),
                DecodeErrorKind::MalformedUtf { position },
            )
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
                PhysicalOffset(offset),
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
    /// Writes a `bool` as 0 or 1.
    fn put_bool(&mut self, v: bool) -> io::Result<()> {
        self.write_all(&[v as u8])
    }
    /// Writes a `u16`.
    fn put_u16(&mut self, v: u16) -> io::Result<()> {
        self.write_all(&v.to_be_bytes())
    }
    /// Writes an `i32`.
    fn put_i32(&mut self, v: i32) -> io::Result<()> {
        self.write_all(&v.to_be_bytes())
    }
    /// Writes a `UTF` string (fails for more than 65,535 bytes).
    fn put_utf(&mut self, s: &JavaStr<'_>) -> io::Result<()> {
        let bytes = s.as_bytes();
        let len = u16::try_from(bytes.len()).map_err(|_| string_too_long(bytes.len()))?;
        self.put_u16(len)?;
        self.write_all(bytes)
    }
}

impl<W: Write + ?Sized> WriteBigEndian for W {}

/// Why an object cannot be encoded: a string longer than `writeUTF` allows,
/// a count its field cannot hold, or a value nested deeper than readers
/// follow. Built only on the error path; the writers turn it into their own
/// typed errors.
#[cold]
pub(crate) fn unencodable(kind: DecodeErrorKind) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, kind)
}

/// The error for a string of `len` bytes, longer than `writeUTF` allows.
#[cold]
fn string_too_long(len: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("string of {len} bytes is longer than 65535 bytes of modified UTF-8"),
    )
}

/// The encoded length of a `UTF` string, or an error if it is too long.
#[inline]
pub(crate) fn utf_len(s: &JavaStr<'_>) -> io::Result<usize> {
    let len = s.as_bytes().len();
    if len > u16::MAX as usize {
        return Err(string_too_long(len));
    }
    Ok(2 + len)
}

/// Writes big-endian primitives into a slice: one store per field, no
/// per-field `Write` call. The slice is either sized beforehand (each
/// codec's `encoded_len`, checked by [`finish`](Self::finish)) or room
/// that is likely large enough (checked by [`written`](Self::written)).
/// Writing past the end does not panic: it marks the writer short. A codec
/// asked to write what cannot be encoded (a string longer than `writeUTF`
/// allows, a count its field cannot hold, a value nested too deep) marks
/// the writer [`rejected`](Self::reject).
#[derive(Debug)]
pub struct SliceWriter<'a> {
    out: &'a mut [u8],
    /// Bytes written so far (at most `out.len()`).
    position: usize,
    short: bool,
    rejected: bool,
}

/// What a [`SliceWriter`] left unwritten.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unwritten {
    /// The slice was too short: the object needs more room.
    Short,
    /// The object cannot be encoded.
    Rejected,
}

impl<'a> SliceWriter<'a> {
    /// A writer filling `out` from its start.
    #[inline]
    pub fn new(out: &'a mut [u8]) -> Self {
        SliceWriter {
            out,
            position: 0,
            short: false,
            rejected: false,
        }
    }

    /// Checks that exactly the whole slice was written.
    #[inline(always)]
    pub fn finish(self) -> io::Result<()> {
        if self.rejected {
            return Err(rejected());
        }
        if self.short || self.position != self.out.len() {
            return Err(length_mismatch());
        }
        Ok(())
    }

    /// How many bytes were written, when the object fit and could be
    /// encoded.
    #[inline(always)]
    pub fn written(self) -> Result<usize, Unwritten> {
        if self.rejected {
            Err(Unwritten::Rejected)
        } else if self.short {
            Err(Unwritten::Short)
        } else {
            Ok(self.position)
        }
    }

    /// Runs `write` on this writer moved out and back: for an encoder that
    /// takes the writer out of line (a nested value, which recurses).
    /// Lent by reference to a function not inlined, the writer would live
    /// in memory for the whole encoding, every field's store then loading
    /// and storing its position again; moved, it stays in registers
    /// except around that call.
    #[inline(always)]
    pub fn out_of_line(&mut self, write: impl FnOnce(&mut SliceWriter<'a>)) {
        let mut moved = std::mem::replace(self, SliceWriter::new(&mut []));
        write(&mut moved);
        *self = moved;
    }

    /// Marks the object as one that cannot be encoded.
    #[cold]
    pub fn reject(&mut self) {
        self.rejected = true;
    }

    /// Writes a collection length as the format's `i32` count (rejects a
    /// length that does not fit).
    #[inline(always)]
    pub fn count(&mut self, len: usize) {
        match i32::try_from(len) {
            Ok(n) if n < i32::MAX => self.i32(n),
            _ => self.reject(),
        }
    }

    #[inline(always)]
    fn put<const N: usize>(&mut self, bytes: [u8; N]) {
        self.fixed(|out: &mut [u8; N]| *out = bytes);
    }

    /// Writes `N` bytes at once, which `fill` stores (several fields of
    /// fixed size: one length check for all of them).
    #[inline(always)]
    pub fn fixed<const N: usize>(&mut self, fill: impl FnOnce(&mut [u8; N])) {
        let room = self.out.get_mut(self.position..);
        match room.and_then(<[u8]>::first_chunk_mut::<N>) {
            Some(head) => {
                fill(head);
                self.position += N;
            }
            None => self.short = true,
        }
    }

    /// Writes a `u8`.
    #[inline(always)]
    pub fn u8(&mut self, v: u8) {
        self.put([v]);
    }

    /// Writes an `i8`.
    #[inline(always)]
    pub fn i8(&mut self, v: i8) {
        self.put(v.to_be_bytes());
    }

    /// Writes a `bool` as 0 or 1.
    #[inline(always)]
    pub fn bool(&mut self, v: bool) {
        self.put([v as u8]);
    }

    /// Writes an `i16`.
    #[inline(always)]
    pub fn i16(&mut self, v: i16) {
        self.put(v.to_be_bytes());
    }

    /// Writes a `u16`.
    #[inline(always)]
    pub fn u16(&mut self, v: u16) {
        self.put(v.to_be_bytes());
    }

    /// Writes an `i32`.
    #[inline(always)]
    pub fn i32(&mut self, v: i32) {
        self.put(v.to_be_bytes());
    }

    /// Writes an `i64`.
    #[inline(always)]
    pub fn i64(&mut self, v: i64) {
        self.put(v.to_be_bytes());
    }

    /// Writes raw bytes.
    #[inline]
    pub fn bytes(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            // Most often a call's empty exception: no copy to call.
            return;
        }
        let room = self.out.get_mut(self.position..);
        match room.and_then(|room| room.get_mut(..bytes.len())) {
            Some(head) => {
                head.copy_from_slice(bytes);
                self.position += bytes.len();
            }
            None => self.short = true,
        }
    }

    /// Writes a `UTF` string (rejects one longer than 65,535 bytes).
    #[inline]
    pub fn utf(&mut self, s: &JavaStr<'_>) {
        let bytes = s.as_bytes();
        match u16::try_from(bytes.len()) {
            Ok(len) => {
                self.u16(len);
                self.bytes(bytes);
            }
            Err(_) => self.reject(),
        }
    }
}

#[cold]
fn rejected() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "an object that cannot be encoded (a string, count or nesting too large)",
    )
}

#[cold]
fn length_mismatch() -> io::Error {
    io::Error::other("an encoder wrote a length other than the one it computed")
}

/// Writes an object of `len` bytes, written by `write`, to any writer with
/// one `write_all` (through a stack buffer when it is small).
pub fn encode_sized_to<W: Write + ?Sized>(
    out: &mut W,
    len: usize,
    write: impl FnOnce(&mut SliceWriter<'_>),
) -> io::Result<()> {
    let mut small = [0u8; 256];
    let mut large = Vec::new();
    let buffer = if len <= small.len() {
        &mut small[..len]
    } else {
        large.resize(len, 0);
        &mut large[..]
    };
    let mut writer = SliceWriter::new(buffer);
    write(&mut writer);
    writer.finish()?;
    out.write_all(buffer)
}
