//! Modified UTF-8, as `java.io.DataOutput.writeUTF` writes it: U+0000 as
//! `C0 80`, supplementary characters as two 3-byte surrogates. Decoding
//! follows `DataInputStream.readUTF`: 1-, 2- and 3-byte forms, anything else
//! is malformed.

use std::borrow::Cow;

/// Checks `bytes`; on failure returns the position of the first bad byte.
pub fn validate(bytes: &[u8]) -> Result<(), usize> {
    let mut i = 0;
    while i < bytes.len() {
        // ASCII, the common case, eight bytes at a time.
        if let Some(word) = bytes
            .get(i..i + 8)
            .and_then(|w| <[u8; 8]>::try_from(w).ok())
            && u64::from_ne_bytes(word) & 0x8080_8080_8080_8080 == 0
        {
            i += 8;
            continue;
        }
        let b = bytes[i];
        if b < 0x80 {
            i += 1;
            continue;
        }
        let width = match b >> 4 {
            0xC | 0xD => 2,
            0xE => 3,
            _ => return Err(i),
        };
        if i + width > bytes.len() {
            return Err(i);
        }
        if bytes[i + 1..i + width].iter().any(|&c| c & 0xC0 != 0x80) {
            return Err(i);
        }
        i += width;
    }
    Ok(())
}

/// The UTF-16 code units of validated bytes, unpaired surrogates included.
///
/// Decoding follows `DataInputStream.readUTF`, so overlong 2- and 3-byte
/// forms decode to the unit they spell.
pub fn units(bytes: &[u8]) -> impl Iterator<Item = u16> + '_ {
    let mut i = 0;
    std::iter::from_fn(move || {
        let b = *bytes.get(i)? as u16;
        // Validated bytes always hold the continuation bytes; 0x80 keeps a
        // cut sequence harmless anyway.
        let next = |k: usize| bytes.get(i + k).copied().unwrap_or(0x80) as u16 & 0x3F;
        let (unit, width) = if b < 0x80 {
            (b, 1)
        } else if b >> 5 == 0b110 {
            (((b & 0x1F) << 6) | next(1), 2)
        } else {
            (((b & 0x0F) << 12) | (next(1) << 6) | next(2), 3)
        };
        i += width;
        Some(unit)
    })
}

/// The characters of validated bytes; each unpaired surrogate half becomes
/// `?`, as a JVM printing to a UTF-8 stream shows it.
pub fn chars(bytes: &[u8]) -> impl Iterator<Item = char> + '_ {
    char::decode_utf16(units(bytes)).map(|c| c.unwrap_or('?'))
}

/// Decodes validated bytes to UTF-16 code units.
pub fn to_utf16(bytes: &[u8]) -> Vec<u16> {
    units(bytes).collect()
}

/// Decodes validated bytes to text; unpaired surrogates become `?`.
pub fn decode(bytes: &[u8]) -> Cow<'_, str> {
    if bytes.is_ascii() {
        // ASCII (a raw NUL included, which `readUTF` accepts) is the same in
        // both encodings.
        if let Ok(text) = std::str::from_utf8(bytes) {
            return Cow::Borrowed(text);
        }
    }
    Cow::Owned(chars(bytes).collect())
}

/// Encodes text as modified UTF-8.
pub fn encode_str(text: &str) -> Vec<u8> {
    let units: Vec<u16> = text.encode_utf16().collect();
    encode_utf16(&units)
}

/// Encodes UTF-16 code units (unpaired surrogates allowed) as modified UTF-8.
pub fn encode_utf16(units: &[u16]) -> Vec<u8> {
    let mut out = Vec::with_capacity(units.len());
    for &u in units {
        match u {
            0x0001..=0x007F => out.push(u as u8),
            0x0000 | 0x0080..=0x07FF => {
                out.push(0xC0 | (u >> 6) as u8);
                out.push(0x80 | (u & 0x3F) as u8);
            }
            _ => {
                out.push(0xE0 | (u >> 12) as u8);
                out.push(0x80 | ((u >> 6) & 0x3F) as u8);
                out.push(0x80 | (u & 0x3F) as u8);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nul_is_two_bytes() {
        assert_eq!(encode_str("a\0b"), vec![b'a', 0xC0, 0x80, b'b']);
    }

    #[test]
    fn supplementary_characters_are_surrogate_pairs() {
        let bytes = encode_str("😀");
        assert_eq!(bytes, vec![0xED, 0xA0, 0xBD, 0xED, 0xB8, 0x80]);
        assert_eq!(decode(&bytes), "😀");
    }

    #[test]
    fn unpaired_surrogate_decodes_as_question_mark() {
        let bytes = [b'a', 0xED, 0xA0, 0xBD];
        assert!(validate(&bytes).is_ok());
        assert_eq!(decode(&bytes), "a?");
    }

    #[test]
    fn malformed_sequences_are_rejected_with_position() {
        assert_eq!(validate(&[b'a', 0x80]), Err(1));
        assert_eq!(validate(&[0xF0, 0x80, 0x80, 0x80]), Err(0));
        assert_eq!(validate(&[0xE0, 0x80]), Err(0));
        assert_eq!(validate(&[0xC3, 0x41]), Err(0));
    }

    #[test]
    fn round_trips_any_text() {
        let text = "naïve café — 日本 😀 nul:\0:end";
        assert_eq!(decode(&encode_str(text)), text);
    }
}
