//! Skipping an object without building it: how long it is and, for a
//! tracepoint, its common header. Scans that only need where each child
//! starts and what it is (the lazy reader's child lists, walks over
//! headers, the index repair) use this instead of [`Object::decode`], which
//! builds every value.
//!
//! The skipper follows the decoders field by field and checks the same
//! things (counts against the bytes left, nesting depth, modified UTF-8,
//! diff statuses, value codes); the tests check that it accepts exactly
//! what they accept and consumes the same bytes. It reports no error
//! itself: whenever it refuses an object, the object is decoded with
//! [`Object::decode`], which gives the error (so errors come from the one
//! decoder). Reference objects, rare between tracepoints, are decoded too.

use crate::error::DecodeError;
use crate::format::bytes::ByteReader;
use crate::format::offset::{CodeLocationId, EventId, ThreadId};
use crate::format::types::MAX_NESTING;
use crate::format::{Object, ObjectKind, mutf8};
use crate::model::{DiffStatus, TracepointHeader, TracepointType};

/// What a skipped object was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Skipped {
    /// Its kind.
    pub kind: ObjectKind,
    /// A tracepoint's common header.
    pub header: Option<TracepointHeader>,
}

/// Skips the object at the reader's position, as [`Object::decode`] would
/// read it (`open_container` is the type of the innermost open container,
/// which a footer needs).
#[inline]
pub fn skip_object(
    reader: &mut ByteReader<'_>,
    open_container: Option<TracepointType>,
) -> Result<Skipped, DecodeError> {
    let rest = reader.clone().bytes(reader.remaining())?;
    if let Some((skipped, len)) = Cursor::new(rest).object(open_container) {
        reader.bytes(len)?;
        return Ok(skipped);
    }
    let object = Object::decode(reader, open_container)?;
    let header = match &object {
        Object::Tracepoint(tracepoint) => Some(tracepoint.header),
        _ => None,
    };
    Ok(Skipped {
        kind: object.kind(),
        header,
    })
}

/// Skips the object at the start of `bytes` when it is a well-formed
/// tracepoint, footer or block marker: what it was and its length. `None`
/// for anything else (a reference object, or malformed bytes: decode them to
/// learn why).
#[inline(always)]
pub fn try_skip(bytes: &[u8], open_container: Option<TracepointType>) -> Option<(Skipped, usize)> {
    Cursor::new(bytes).object(open_container)
}

/// The length of the well-formed footer (kind byte included) at the start
/// of `bytes` of a container of type `container`; `None` when it is not one.
#[inline]
pub fn try_skip_footer(bytes: &[u8], container: TracepointType) -> Option<usize> {
    let (&kind, rest) = bytes.split_first()?;
    if kind != ObjectKind::TracepointFooter as u8 {
        return None;
    }
    let mut cursor = Cursor::new(rest);
    cursor.footer(container)?;
    Some(1 + cursor.at)
}

/// Bytes being skipped; every read is bounds-checked and `None` means
/// "refused".
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Cursor { bytes, at: 0 }
    }

    #[inline(always)]
    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let bytes = self.bytes.get(self.at..self.at + N)?;
        self.at += N;
        bytes.try_into().ok()
    }

    #[inline(always)]
    fn advance(&mut self, len: usize) -> Option<()> {
        (len <= self.bytes.len() - self.at).then(|| self.at += len)
    }

    #[inline(always)]
    fn u8(&mut self) -> Option<u8> {
        let byte = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(byte)
    }

    #[inline(always)]
    fn i32(&mut self) -> Option<i32> {
        self.take::<4>().map(i32::from_be_bytes)
    }

    #[inline(always)]
    fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }

    /// A count checked as `ByteReader::check_count` checks it.
    #[inline(always)]
    fn count(&mut self, count: i64, min_element_len: usize) -> Option<usize> {
        let fits = count >= 0
            && (count as u64).saturating_mul(min_element_len.max(1) as u64)
                <= self.remaining() as u64;
        fits.then_some(count as usize)
    }

    #[inline]
    fn utf(&mut self) -> Option<()> {
        let len = u16::from_be_bytes(self.take::<2>()?) as usize;
        let bytes = self.bytes.get(self.at..self.at + len)?;
        mutf8::validate(bytes).ok()?;
        self.at += len;
        Some(())
    }

    #[inline(always)]
    fn object(mut self, open: Option<TracepointType>) -> Option<(Skipped, usize)> {
        let kind = ObjectKind::from_byte(self.u8()?)?;
        let header = match kind {
            ObjectKind::Tracepoint => Some(self.tracepoint()?),
            ObjectKind::TracepointFooter => {
                self.footer(open?)?;
                None
            }
            ObjectKind::BlockStart => {
                self.i32()?;
                None
            }
            ObjectKind::BlockEnd | ObjectKind::Eof => None,
            _ => return None, // reference objects are decoded
        };
        Some((Skipped { kind, header }, self.at))
    }

    #[inline(always)]
    fn tracepoint(&mut self) -> Option<TracepointHeader> {
        let [kind, location @ .., diff] = self.take::<14>()?;
        let tracepoint_type = TracepointType::from_byte(kind)?;
        let field =
            |at: usize| i32::from_be_bytes(location[at..at + 4].try_into().expect("4 bytes"));
        let header = TracepointHeader {
            tracepoint_type,
            code_location: CodeLocationId(field(0)),
            thread: ThreadId(field(4)),
            event: EventId(field(8)),
            diff_status: DiffStatus::from_i8(diff as i8)?,
        };
        if tracepoint_type.is_container() {
            let count = self.u8()?;
            for _ in 0..count {
                DiffStatus::from_i8(self.u8()? as i8)?;
            }
        }
        match tracepoint_type {
            TracepointType::MethodCall => {
                self.i32()?;
                self.value(0)?;
                let count = self.i32()?;
                for _ in 0..self.count(count as i64, 4)? {
                    self.value(0)?;
                }
                self.advance(2)?;
            }
            TracepointType::ReadArray | TracepointType::WriteArray => {
                self.value(0)?;
                self.i32()?;
                self.value(0)?;
            }
            TracepointType::ReadLocal | TracepointType::WriteLocal => {
                self.i32()?;
                self.value(0)?;
            }
            TracepointType::ReadField | TracepointType::WriteField => {
                self.i32()?;
                self.value(0)?;
                self.value(0)?;
            }
            TracepointType::Loop => self.advance(4)?,
            TracepointType::LoopIteration => self.advance(8)?,
            TracepointType::SnapshotBreakpoint => {
                self.advance(16)?;
                let frames = self.i32()?;
                let frames = self.count(frames as i64, 4)?;
                self.advance(frames * 4)?;
                self.advance(8)?;
                let values = self.i32()?;
                for _ in 0..self.count(values as i64, 4)? {
                    self.value(0)?;
                }
                if self.u8()? != 0 {
                    self.utf()?;
                }
            }
            TracepointType::Throw | TracepointType::Catch => self.value(0)?,
        }
        Some(header)
    }

    fn footer(&mut self, container: TracepointType) -> Option<()> {
        match container {
            TracepointType::MethodCall => {
                self.value(0)?;
                self.utf()
            }
            TracepointType::Loop => self.advance(4),
            _ => Some(()),
        }
    }

    fn value(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_NESTING {
            return None;
        }
        match self.i32()? {
            -1 | -2 | -11 => Some(()),
            -3 | -13 => self.advance(1),
            -4 | -9 => self.advance(2),
            -5 | -7 => self.advance(4),
            -6 | -8 => self.advance(8),
            -10 | -12 | -14 | -15 => self.utf(),
            -16 => {
                self.advance(4)?;
                self.utf()
            }
            class if class >= 0 => {
                self.advance(4)?;
                let count = self.i32()?;
                if count >= 0 {
                    for _ in 0..self.count(count as i64, 6)? {
                        self.utf()?;
                        self.value(depth + 1)?;
                    }
                } else {
                    for _ in 0..self.count(-(count as i64) - 1, 4)? {
                        self.value(depth + 1)?;
                    }
                    self.advance(4)?;
                }
                Some(())
            }
            _ => None,
        }
    }
}

/// Skips the footer of a container of type `container`, after its kind
/// byte.
pub fn skip_footer(
    reader: &mut ByteReader<'_>,
    container: TracepointType,
) -> Result<(), DecodeError> {
    let rest = reader.clone().bytes(reader.remaining())?;
    let mut cursor = Cursor::new(rest);
    if cursor.footer(container).is_some() {
        reader.bytes(cursor.at)?;
        return Ok(());
    }
    crate::model::Footer::decode(reader, container).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::FILE_HEADER_LEN;
    use crate::read::synth::{self, SynthOptions};

    /// Skips and decodes the object at the start of `bytes` alike.
    fn assert_agree(bytes: &[u8], open: Option<TracepointType>) -> Option<usize> {
        let mut decoder = ByteReader::new(bytes, 0);
        let decoded = Object::decode(&mut decoder, open);
        let mut skipper = ByteReader::new(bytes, 0);
        let skipped = skip_object(&mut skipper, open);
        match (decoded, skipped) {
            (Ok(object), Ok(skipped)) => {
                assert_eq!(skipper.position(), decoder.position());
                assert_eq!(skipped.kind, object.kind());
                if let Object::Tracepoint(tracepoint) = &object {
                    assert_eq!(skipped.header, Some(tracepoint.header));
                }
                Some(decoder.position())
            }
            (Err(a), Err(b)) => {
                assert_eq!(a, b);
                None
            }
            (a, b) => panic!("decoder {a:?}, skipper {b:?}"),
        }
    }

    /// Walks the objects of a data file, checking each, keeping the stack
    /// of open container types; returns the object offsets and open types.
    fn objects(data: &[u8]) -> Vec<(usize, Option<TracepointType>)> {
        let mut at = FILE_HEADER_LEN as usize;
        let mut open: Vec<TracepointType> = Vec::new();
        let mut seen = Vec::new();
        // One thread per stack is enough for single-thread traces.
        while at < data.len() {
            let innermost = open.last().copied();
            seen.push((at, innermost));
            let mut reader = ByteReader::new(&data[at..], at as u64);
            let object = Object::decode(&mut reader, innermost).unwrap();
            match &object {
                Object::Tracepoint(t) if t.is_container() => open.push(t.tracepoint_type()),
                Object::Footer(_) => {
                    open.pop();
                }
                Object::Eof => break,
                _ => {}
            }
            assert_eq!(
                assert_agree(&data[at..], innermost),
                Some(reader.position())
            );
            at += reader.position();
        }
        seen
    }

    #[test]
    fn skipping_agrees_with_decoding_on_a_synthetic_trace() {
        let (data, _) = synth::generate(&SynthOptions {
            threads: 1,
            bytes: 64 << 10,
            block_bytes: 4096,
            ..SynthOptions::default()
        });
        assert!(objects(&data).len() > 1000);
    }

    #[test]
    fn skipping_agrees_with_decoding_on_corrupted_objects() {
        let (data, _) = synth::generate(&SynthOptions {
            threads: 1,
            bytes: 16 << 10,
            block_bytes: 4096,
            ..SynthOptions::default()
        });
        let mut bytes = data.clone();
        for (at, open) in objects(&data).into_iter().take(300) {
            for position in at..(at + 40).min(data.len()) {
                for flip in [0xFF, 0x80, 0x01] {
                    bytes[position] ^= flip;
                    assert_agree(&bytes[at..], open);
                    // Cut short too.
                    assert_agree(&bytes[at..position], open);
                    bytes[position] ^= flip;
                }
            }
        }
    }

    #[test]
    fn skipping_agrees_with_decoding_on_reference_traces() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/reference-traces");
        let path = dir.join("all-types-dump.trace");
        let Ok(data) = std::fs::read(&path) else {
            eprintln!("skipped: {} not found", path.display());
            return;
        };
        // The dump writer writes one block per thread: one stack suffices.
        assert!(objects(&data).len() > 100);
    }
}
