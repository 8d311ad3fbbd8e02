//! Skipping an object without building it: how long it is and, for a
//! tracepoint, its common header. Scans that only need where each child
//! starts and what it is (the lazy reader's child lists, walks over
//! headers, the index repair) use this instead of [`Object::decode`], which
//! builds every value.
//!
//! Each codec has its own skip method next to its `decode` (`Value::skip`,
//! `Tracepoint::skip`, `Footer::skip`, reading through this module's
//! `Cursor`); they check the same things as decoding (counts against the
//! bytes left, nesting depth, modified UTF-8, diff statuses, value codes),
//! and the tests check that skipping accepts exactly what decoding accepts
//! and consumes the same bytes. The skipper reports no error
//! itself: whenever it refuses an object, the object is decoded with
//! [`Object::decode`], which gives the error (so errors come from the one
//! decoder). Reference objects are skipped too (`Cursor::reference`, next to
//! their codecs), without building their lists: the parallel rebuild parses
//! at guessed offsets, where a code location's counts can be any number the
//! bytes hold.
//!
//! The hot paths are inlined and relax no check: a value with a fixed-size
//! payload is taken by a table lookup on its code (`FIXED_PAYLOAD`), and
//! modified UTF-8 passes ASCII eight bytes at a time. The tests compare the
//! skipper with the decoders on generated, reference and corrupted objects:
//! same acceptance, same length, same header.

use crate::error::DecodeError;
use crate::format::bytes::ByteReader;
use crate::format::{Object, ObjectKind};
use crate::model::{Footer, Tracepoint, TracepointHeader, TracepointType};
use crate::mutf8;

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

/// Skips the object at the start of `bytes` when it is well formed: what it
/// was and its length. `None` for malformed bytes (decode them to learn
/// why) and for a footer when `open_container` is `None`.
#[inline(always)]
pub fn try_skip(bytes: &[u8], open_container: Option<TracepointType>) -> Option<(Skipped, usize)> {
    Cursor::new(bytes).object(open_container)
}

/// The header and length of the well-formed tracepoint (kind byte
/// included) at the start of `bytes`; `None` for any other object and for
/// a malformed tracepoint. Scans meeting mostly tracepoints try this
/// before [`try_skip`], which then only sees the other objects.
#[inline(always)]
pub fn try_skip_tracepoint(bytes: &[u8]) -> Option<(TracepointHeader, usize)> {
    let (&kind, rest) = bytes.split_first()?;
    if kind != ObjectKind::Tracepoint as u8 {
        return None;
    }
    let mut cursor = Cursor::new(rest);
    let header = Tracepoint::skip(&mut cursor)?;
    Some((header, 1 + cursor.at()))
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
    Footer::skip(&mut cursor, container)?;
    Some(1 + cursor.at())
}

/// Bytes being skipped; every read is bounds-checked and `None` means
/// "refused". The codecs' skip methods (`Value::skip`) read through it.
/// It holds the bytes not yet read, so that a read checks one length and
/// moves one slice.
pub(crate) struct Cursor<'a> {
    rest: &'a [u8],
    len: usize,
}

impl<'a> Cursor<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Cursor {
            rest: bytes,
            len: bytes.len(),
        }
    }

    /// Bytes read so far.
    #[inline(always)]
    fn at(&self) -> usize {
        self.len - self.rest.len()
    }

    #[inline(always)]
    pub(crate) fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (bytes, rest) = self.rest.split_first_chunk::<N>()?;
        self.rest = rest;
        Some(*bytes)
    }

    /// The next `N` bytes, without moving.
    #[inline(always)]
    pub(crate) fn peek<const N: usize>(&self) -> Option<[u8; N]> {
        self.rest.first_chunk::<N>().copied()
    }

    #[inline(always)]
    pub(crate) fn advance(&mut self, len: usize) -> Option<()> {
        self.rest = self.rest.get(len..)?;
        Some(())
    }

    #[inline(always)]
    pub(crate) fn u8(&mut self) -> Option<u8> {
        let (&byte, rest) = self.rest.split_first()?;
        self.rest = rest;
        Some(byte)
    }

    #[inline(always)]
    pub(crate) fn i32(&mut self) -> Option<i32> {
        self.take::<4>().map(i32::from_be_bytes)
    }

    #[inline(always)]
    pub(crate) fn remaining(&self) -> usize {
        self.rest.len()
    }

    /// A count checked as `ByteReader::check_count` checks it.
    #[inline(always)]
    pub(crate) fn count(&mut self, count: i64, min_element_len: usize) -> Option<usize> {
        let fits = count >= 0
            && (count as u64).saturating_mul(min_element_len.max(1) as u64)
                <= self.remaining() as u64;
        fits.then_some(count as usize)
    }

    #[inline(always)]
    pub(crate) fn utf(&mut self) -> Option<()> {
        let len = u16::from_be_bytes(self.take::<2>()?) as usize;
        let (bytes, rest) = self.rest.split_at_checked(len)?;
        mutf8::validate(bytes).ok()?;
        self.rest = rest;
        Some(())
    }

    /// Runs `skip` on a copy of the cursor and moves to where the copy
    /// ended: for skips not inlined, so that the caller's cursor, whose
    /// address no call then takes, can stay in registers.
    #[inline(always)]
    pub(crate) fn out_of_line(&mut self, skip: impl FnOnce(&mut Self) -> Option<()>) -> Option<()> {
        let mut copy = Cursor {
            rest: self.rest,
            len: self.len,
        };
        skip(&mut copy)?;
        self.rest = copy.rest;
        Some(())
    }

    #[inline(always)]
    fn object(mut self, open: Option<TracepointType>) -> Option<(Skipped, usize)> {
        let byte = self.u8()?;
        // Tracepoints first: most objects are.
        if byte == ObjectKind::Tracepoint as u8 {
            let header = Tracepoint::skip(&mut self)?;
            let kind = ObjectKind::Tracepoint;
            return Some((
                Skipped {
                    kind,
                    header: Some(header),
                },
                self.at(),
            ));
        }
        let kind = ObjectKind::from_byte(byte)?;
        let header = match kind {
            ObjectKind::Tracepoint => Some(Tracepoint::skip(&mut self)?),
            ObjectKind::TracepointFooter => {
                Footer::skip(&mut self, open?)?;
                None
            }
            ObjectKind::BlockStart => {
                self.i32()?;
                None
            }
            ObjectKind::BlockEnd | ObjectKind::Eof => None,
            kind => {
                self.out_of_line(|cursor| cursor.reference(kind))?;
                None
            }
        };
        Some((Skipped { kind, header }, self.at()))
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
    if Footer::skip(&mut cursor, container).is_some() {
        reader.bytes(cursor.at())?;
        return Ok(());
    }
    crate::model::Footer::decode(reader, container).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::FILE_HEADER_LEN;
    use crate::generate::raw::{self, SynthOptions};

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
        let (data, _) = raw::generate(&SynthOptions {
            threads: 1,
            bytes: 64 << 10,
            block_bytes: 4096,
            ..SynthOptions::default()
        });
        assert!(objects(&data).len() > 1000);
    }

    #[test]
    fn skipping_agrees_with_decoding_on_corrupted_objects() {
        let (data, _) = raw::generate(&SynthOptions {
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

    /// Value skipping (its table-driven fast path for fixed-size codes,
    /// empty objects and arrays, and the general path) against decoding,
    /// for every code near the known ones, every count near the fast
    /// path's, nesting depths around the limit and every cut length.
    #[test]
    fn value_skipping_agrees_with_decoding() {
        use crate::format::MAX_NESTING;
        use crate::model::Value;
        // The value nested in `depth` one-element arrays, cut to `len`
        // bytes after the arrays' headers.
        let agree = |value: &[u8], depth: usize| {
            let mut nested = Vec::new();
            for _ in 0..depth {
                nested.extend_from_slice(&[0, 0, 0, 2, 0, 0, 0, 9, 0xFF, 0xFF, 0xFF, 0xFE]);
            }
            let heads = nested.len();
            nested.extend_from_slice(value);
            for _ in 0..depth {
                nested.extend_from_slice(&[0, 0, 0, 1]);
            }
            let cuts = (heads..=heads + value.len()).chain([nested.len() - 1, nested.len()]);
            for len in cuts {
                let bytes = &nested[..len];
                let mut cursor = Cursor::new(bytes);
                let skipped = Value::skip(&mut cursor, 0).map(|()| cursor.at());
                let mut reader = ByteReader::new(bytes, 0);
                let decoded = Value::decode(&mut reader).ok().map(|_| reader.position());
                assert_eq!(skipped, decoded, "{bytes:02x?} at depth {depth}");
            }
        };
        let mut payload: Vec<u8> = (0..40u8).map(|i| i.wrapping_mul(37) | 0x01).collect();
        payload[4..8].copy_from_slice(&[0, 0, 0, 1]); // a short string's length
        for code in -20i32..=3 {
            for count in [-3i32, -2, -1, 0, 1, 2] {
                let mut bytes = code.to_be_bytes().to_vec();
                bytes.extend_from_slice(&[0, 0, 0, 5]); // identity hash / payload
                bytes.extend_from_slice(&count.to_be_bytes());
                bytes.extend_from_slice(&[0, 1, b'a', 0xFF, 0xFF, 0xFF, 0xFB]);
                bytes.extend_from_slice(&payload);
                for depth in [0, 1, MAX_NESTING - 1, MAX_NESTING, MAX_NESTING + 1] {
                    agree(&bytes, depth);
                }
            }
        }
    }

    /// Reference objects are skipped without decoding them (nothing is
    /// built, whatever their counts), accepting what decoding accepts.
    #[test]
    fn code_locations_are_skipped_without_decoding() {
        let code_location = |arguments: i32, kinds: &[i32]| {
            let mut bytes = vec![ObjectKind::CodeLocation as u8, 2];
            bytes.extend_from_slice(&[0; 24]);
            bytes.extend_from_slice(&arguments.to_be_bytes());
            bytes.extend(std::iter::repeat_n(0xAB, 4 * arguments.max(0) as usize));
            bytes.extend_from_slice(&(kinds.len() as i32).to_be_bytes());
            bytes.extend(kinds.iter().flat_map(|_| 7i32.to_be_bytes()));
            bytes.extend(kinds.iter().flat_map(|kind| kind.to_be_bytes()));
            bytes.push(ObjectKind::BlockEnd as u8);
            bytes
        };
        let bytes = code_location(100_000, &[0, 1, 2, 2]);
        let (skipped, len) = try_skip(&bytes, None).expect("skipped, not decoded");
        assert_eq!(skipped.kind, ObjectKind::CodeLocation);
        assert_eq!(len, bytes.len() - 1);
        assert_eq!(assert_agree(&bytes, None), Some(len));
        for kinds in [&[3][..], &[0, -1], &[2, 0, 9]] {
            let bytes = code_location(10, kinds);
            assert_eq!(try_skip(&bytes, None), None, "{kinds:?}");
            assert_eq!(assert_agree(&bytes, None), None);
        }
        // Counts past the bytes left are refused, by both.
        let mut bytes = code_location(10, &[0]);
        bytes[27..31].copy_from_slice(&1_000i32.to_be_bytes());
        assert_eq!(try_skip(&bytes, None), None);
        assert_eq!(assert_agree(&bytes, None), None);
    }

    #[test]
    fn skipping_agrees_with_decoding_on_reference_traces() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/reference-traces");
        let path = dir.join("all-types-dump.trace");
        let Ok(data) = std::fs::read(&path) else {
            tracetree_testkit::skip::cannot_run(&format!("{} is missing", path.display()));
            return;
        };
        // The dump writer writes one block per thread: one stack suffices.
        assert!(objects(&data).len() > 100);
    }
}
