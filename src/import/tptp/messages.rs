//! The seed's message tables: each message id, its XML name and its
//! attributes' types in their fixed order, and a reader of attributes.

/// An attribute's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attribute {
    /// 1 byte.
    Byte,
    /// 2 bytes.
    Short,
    /// 4 bytes.
    Integer,
    /// 8 bytes.
    Long,
    /// NUL-terminated.
    String,
    /// An Integer count, then that many Strings.
    Strings,
    /// An Integer count, then that many Longs.
    Longs,
}

use Attribute::{Byte as B, Integer as I, Long as L, Longs as LA, String as S, Strings as SA};

/// Every message the seed lists: id, name, attributes after the header.
pub const MESSAGES: &[(u16, &str, &[Attribute])] = &[
    (1, "encoding", &[S]),
    (2, "frequency", &[L]),
    (1001, "node", &[S, S, S, I, L]),
    (1002, "processCreate", &[S, S, I, S, L, S]),
    (1003, "agentCreate", &[S, S, S, S, L, S, S]),
    (1004, "agentDestroy", &[S, L]),
    (1005, "traceStart", &[S, S, L, S]),
    (1006, "traceEnd", &[S, L, S]),
    (1007, "filter", &[S, S, S, S, S, S, S]),
    (1008, "option", &[S, S, S]),
    (1009, "threadStart", &[L, L, L, S, S, L, L, S, S, S]),
    (1010, "threadEnd", &[L, L, L, S, S]),
    (
        1011,
        "classDef",
        &[L, L, L, I, S, L, L, S, S, S, L, L, S, S, I, I, I, S, S],
    ),
    (
        1012,
        "methodDef",
        &[S, S, B, B, B, B, S, L, L, S, L, L, L, S, S],
    ),
    (
        1014,
        "objAlloc",
        &[L, L, L, B, L, L, L, L, L, L, L, S, S, S],
    ),
    (1015, "methodEntry", &[L, L, L, L, I, L, L, L, L, L, S, S]),
    (1016, "methodExit", &[L, L, L, I, L, L, L, L, L, L, S, S, S]),
    (1023, "gcStart", &[L, L, L, S, S]),
    (1024, "objFree", &[L, L, L, L, L, L, L, L, S, S]),
    (1027, "gcFinish", &[L, L, L, L, L, L, S, S]),
    (1030, "runtimeInitDone", &[L, L, L, S, S]),
    (1031, "runtimeShutdown", &[L, L, L, S, S]),
    (1032, "monWait", &[L, L, L, L, I, SA, LA]),
    (1033, "monWaited", &[L, L, L, L, I, SA, LA]),
    (1034, "monContendedEnter", &[L, L, L, L, I, SA, LA]),
    (1035, "monContendedEntered", &[L, L, L, I, SA, LA]),
    (1036, "agMethodEntry", &[L, L, L, L, L, L, L]),
    (1037, "agMethodExit", &[L, L]),
    (1038, "hdStart", &[L, L, S, L]),
    (1039, "gcRoot", &[L, L, S]),
    (1040, "objRef", &[L, L, L]),
    (1041, "custom", &[S]),
];

/// `encoding`.
pub const ENCODING: u16 = 1;
/// `threadStart`.
pub const THREAD_START: u16 = 1009;
/// `classDef`.
pub const CLASS_DEF: u16 = 1011;
/// `methodDef`.
pub const METHOD_DEF: u16 = 1012;
/// `methodEntry`.
pub const METHOD_ENTRY: u16 = 1015;
/// `methodExit`.
pub const METHOD_EXIT: u16 = 1016;

/// The name of message `id`, as `info` counts it: `gcStart (1023)`, or
/// `unknown message 77`.
pub fn message_name(id: u16) -> String {
    match MESSAGES.iter().find(|(known, ..)| *known == id) {
        Some((_, name, _)) => format!("{name} ({id})"),
        None => format!("unknown message {id}"),
    }
}

/// Reads a message's attributes in order; an attribute past the end of
/// the message reads as its default (0, empty).
#[derive(Debug, Clone)]
pub struct Attributes<'a> {
    body: &'a [u8],
    at: usize,
    big_endian: bool,
}

impl<'a> Attributes<'a> {
    /// A reader at the start of a message's attributes.
    pub fn new(body: &'a [u8], big_endian: bool) -> Self {
        Attributes {
            body,
            at: 0,
            big_endian,
        }
    }

    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut bytes = [0; N];
        if let Some(slice) = self.body.get(self.at..self.at + N) {
            bytes.copy_from_slice(slice);
        }
        self.at = (self.at + N).min(self.body.len());
        if self.big_endian {
            bytes.reverse();
        }
        bytes
    }

    /// A Long.
    pub fn long(&mut self) -> u64 {
        u64::from_le_bytes(self.take())
    }

    /// An Integer.
    pub fn integer(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }

    /// A NUL-terminated String (the rest of the message when it has no NUL).
    pub fn string(&mut self) -> &'a [u8] {
        let rest = &self.body[self.at..];
        match memchr::memchr(0, rest) {
            Some(end) => {
                self.at += end + 1;
                &rest[..end]
            }
            None => {
                self.at = self.body.len();
                rest
            }
        }
    }

    /// Skips one attribute of type `attribute`.
    pub fn skip(&mut self, attribute: Attribute) {
        match attribute {
            Attribute::Byte => self.at = (self.at + 1).min(self.body.len()),
            Attribute::Short => self.at = (self.at + 2).min(self.body.len()),
            Attribute::Integer => self.at = (self.at + 4).min(self.body.len()),
            Attribute::Long => self.at = (self.at + 8).min(self.body.len()),
            Attribute::String => {
                self.string();
            }
            Attribute::Strings => {
                for _ in 0..self.integer().min(self.body.len() as u32) {
                    self.string();
                }
            }
            Attribute::Longs => {
                let count = self.integer() as usize;
                self.at = self
                    .at
                    .saturating_add(count.saturating_mul(8))
                    .min(self.body.len());
            }
        }
    }

    /// Skips `count` Longs.
    pub fn skip_longs(&mut self, count: usize) {
        self.at = (self.at + 8 * count).min(self.body.len());
    }
}
