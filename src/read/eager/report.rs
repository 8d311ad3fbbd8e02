//! [`LoadReport`]: what a whole read of a data file dropped or found
//! missing (the eager loader's, and the rebuild's alike).

use crate::common::PhysicalOffset;
use crate::error::DecodeError;

/// What a load found missing or dropped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadReport {
    /// The data file has no `EOF` object.
    pub missing_eof: bool,
    /// Bytes dropped from the start of a block that could not be read to
    /// its end (half-written, or damaged: see
    /// [`damage`](Self::damage)) to the end of the data.
    pub dropped_bytes: u64,
    /// Blocks that could not be read to their end (0 or 1): reading stops
    /// there, as nothing after it can be framed for sure.
    pub dropped_blocks: usize,
    /// Why that block could not be read, when it was not merely cut short
    /// by the end of the data: the first malformed object in it (an
    /// unknown kind or code, a count that cannot be). Not kept in
    /// sidecars: a later open that maps one says only that the block was
    /// cut short.
    pub damage: Option<DecodeError>,
    /// Containers that never got their footer.
    pub unfinished_containers: usize,
    /// Bytes after the `EOF` object (ignored).
    pub trailing_bytes: u64,
    /// Zeros at the end of the file, after the last bytes written (power
    /// loss, a filesystem allocating ahead), read as its end
    /// ([`TraceBytes::without_zero_tail`](crate::storage::TraceBytes::without_zero_tail)).
    pub zero_filled_bytes: u64,
}

impl LoadReport {
    /// Whether the trace was complete.
    pub fn is_complete(&self) -> bool {
        *self == LoadReport::default()
    }

    /// Records a block the data ends inside (a half-written last block),
    /// dropped from `start` to the data's end at `data_len`.
    pub(crate) fn drop_truncated(&mut self, start: PhysicalOffset, data_len: u64) {
        self.missing_eof = true;
        self.dropped_blocks = 1;
        self.dropped_bytes = data_len.saturating_sub(start.0);
    }

    /// Records a block that could not be decoded (`error`), dropped with
    /// everything after it from `start` to the data's end at `data_len`.
    pub(crate) fn drop_damaged(
        &mut self,
        start: PhysicalOffset,
        data_len: u64,
        error: DecodeError,
    ) {
        self.dropped_blocks = 1;
        self.dropped_bytes = data_len.saturating_sub(start.0);
        self.damage = Some(error);
    }

    /// What the read left out or found missing, and where, in one line
    /// for a user (`None` for a complete trace, even one with calls that
    /// never finished: a recording may stop while calls run). `data_len` is the length
    /// of the data that was read: the data file's less its zero-filled tail
    /// (`context().data().len()` of either reader). A trace without its
    /// end marker may still be being written, or its recorder stopped: the
    /// words fit both.
    pub fn summary(&self, data_len: u64) -> Option<String> {
        let mut parts = Vec::new();
        if self.missing_eof {
            parts.push(
                "no end marker (the recorder is still writing it, or stopped before the end)"
                    .to_string(),
            );
        }
        if self.dropped_blocks > 0 {
            let start = data_len.saturating_sub(self.dropped_bytes);
            let why = match &self.damage {
                Some(error) => format!("is damaged ({error})"),
                None => "is cut short (written halfway, or damaged)".to_string(),
            };
            parts.push(format!(
                "the block at offset {start} {why}: its {} to the end of the data were not read",
                bytes(self.dropped_bytes)
            ));
        }
        if self.trailing_bytes > 0 {
            parts.push(format!(
                "{} after the end marker at offset {} were ignored",
                bytes(self.trailing_bytes),
                data_len.saturating_sub(self.trailing_bytes + 1)
            ));
        }
        if self.zero_filled_bytes > 0 {
            parts.push(format!(
                "its last {} are zeros (left by power loss or written ahead), read as the end \
                 of the data",
                bytes(self.zero_filled_bytes)
            ));
        }
        // Calls still running when a recording stopped are part of a
        // whole trace (and printed as unfinished): said only beside the
        // rest.
        if !parts.is_empty() && self.unfinished_containers > 0 {
            parts.push(format!(
                "{} call(s) or loop(s) not finished",
                self.unfinished_containers
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// `n` bytes, in words.
fn bytes(n: u64) -> String {
    if n == 1 {
        "1 byte".to_string()
    } else {
        format!("{n} bytes")
    }
}
