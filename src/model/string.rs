//! [`JavaStr`]: a string as the JVM wrote it, in modified UTF-8.

use std::borrow::Cow;
use std::fmt;

use crate::mutf8;

/// A string in modified UTF-8 (`DataOutput.writeUTF`), borrowed from the
/// trace bytes when decoded, owned when built by a writer.
///
/// The bytes are validated when the string is decoded or built; turning them
/// into Rust text ([`JavaStr::decode`]) happens only when asked.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JavaStr<'a>(Cow<'a, [u8]>);

impl<'a> JavaStr<'a> {
    /// Wraps bytes already checked by [`mutf8::validate`].
    pub(crate) fn from_validated(bytes: &'a [u8]) -> Self {
        JavaStr(Cow::Borrowed(bytes))
    }

    /// Checks `bytes` as modified UTF-8 and wraps them.
    pub fn from_mutf8(bytes: &'a [u8]) -> Result<Self, usize> {
        mutf8::validate(bytes)?;
        Ok(JavaStr(Cow::Borrowed(bytes)))
    }

    /// The raw modified UTF-8 bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// Whether the string is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The text, with each unpaired surrogate half shown as `?` (as a JVM
    /// printing to a UTF-8 stream shows it).
    pub fn decode(&self) -> Cow<'_, str> {
        mutf8::decode(&self.0)
    }

    /// The text's characters, each unpaired surrogate half as `?` (what
    /// [`JavaStr::decode`] holds, without allocating).
    pub fn chars(&self) -> impl Iterator<Item = char> + '_ {
        mutf8::chars(&self.0)
    }

    /// The string's UTF-16 code units, unpaired surrogates included.
    pub fn to_utf16(&self) -> Vec<u16> {
        mutf8::to_utf16(&self.0)
    }

    /// Whether dropping the string frees memory (it does not borrow its
    /// bytes and has some).
    #[inline(always)]
    pub(crate) fn owns_memory(&self) -> bool {
        matches!(&self.0, Cow::Owned(bytes) if bytes.capacity() != 0)
    }

    /// A copy that borrows nothing.
    pub fn into_owned(self) -> JavaStr<'static> {
        JavaStr(Cow::Owned(self.0.into_owned()))
    }
}

impl JavaStr<'static> {
    /// Encodes Rust text as modified UTF-8.
    pub fn new(text: &str) -> Self {
        JavaStr(Cow::Owned(mutf8::encode_str(text)))
    }

    /// Encodes UTF-16 code units (unpaired surrogates allowed) as modified UTF-8.
    pub fn from_utf16(units: &[u16]) -> Self {
        JavaStr(Cow::Owned(mutf8::encode_utf16(units)))
    }
}

/// Rust text, encoded as modified UTF-8: what every spec and writer
/// taking a name accepts (`impl Into<JavaStr>`).
impl<'a> From<&str> for JavaStr<'a> {
    fn from(text: &str) -> Self {
        JavaStr::new(text)
    }
}

impl<'a> From<String> for JavaStr<'a> {
    fn from(text: String) -> Self {
        JavaStr::new(&text)
    }
}

impl<'a> From<&String> for JavaStr<'a> {
    fn from(text: &String) -> Self {
        JavaStr::new(text)
    }
}

impl<'a> From<&JavaStr<'a>> for JavaStr<'a> {
    fn from(text: &JavaStr<'a>) -> Self {
        text.clone()
    }
}

impl fmt::Debug for JavaStr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.decode(), f)
    }
}

impl fmt::Display for JavaStr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.decode())
    }
}
