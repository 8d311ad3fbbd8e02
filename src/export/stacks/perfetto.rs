//! Perfetto's protobuf trace (`perfetto_trace.proto`): a `Trace` is a
//! repeated `TracePacket packet = 1`, so each thread's packets are written
//! as they come and the threads' parts simply follow one another.
//!
//! Each thread is a packet sequence of its own (`trusted_packet_sequence_id`
//! its place among the exported threads): a first packet clears the
//! sequence's incremental state and describes the thread's track
//! (`TrackDescriptor` with a `ThreadDescriptor`: pid 1, the thread id and
//! name); then each frame is a `TrackEvent` slice begin and end on that
//! track, at the position as nanoseconds. A begin names its frame by an
//! interned id (`name_iid`, the frame id + 1), the name itself carried in
//! the packet's `interned_data` the first time the sequence uses it.
//!
//! The handful of fields is written by a small encoder (varints and
//! length-delimited fields), each packet built in a buffer reused for the
//! next.

use std::fs::File;
use std::io::{BufWriter, Write};

use super::{FrameCache, Sink, Thread, Weight, Writer, finish_part};
use crate::error::Result;
use crate::export::push_varint;

/// Field numbers of `perfetto_trace.proto`.
mod field {
    pub const TRACE_PACKET: u32 = 1;
    // TracePacket
    pub const TIMESTAMP: u32 = 8;
    pub const TRUSTED_PACKET_SEQUENCE_ID: u32 = 10;
    pub const TRACK_EVENT: u32 = 11;
    pub const INTERNED_DATA: u32 = 12;
    pub const SEQUENCE_FLAGS: u32 = 13;
    pub const TRACK_DESCRIPTOR: u32 = 60;
    // TrackDescriptor
    pub const UUID: u32 = 1;
    pub const NAME: u32 = 2;
    pub const THREAD: u32 = 4;
    // ThreadDescriptor
    pub const PID: u32 = 1;
    pub const TID: u32 = 2;
    pub const THREAD_NAME: u32 = 5;
    // TrackEvent
    pub const TYPE: u32 = 9;
    pub const NAME_IID: u32 = 10;
    pub const TRACK_UUID: u32 = 11;
    // InternedData
    pub const EVENT_NAMES: u32 = 2;
    // EventName
    pub const IID: u32 = 1;
    pub const EVENT_NAME: u32 = 2;
}

/// `TracePacket.SequenceFlags`.
const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;
const SEQ_NEEDS_INCREMENTAL_STATE: u64 = 2;

/// `TrackEvent.Type`.
const TYPE_SLICE_BEGIN: u64 = 1;
const TYPE_SLICE_END: u64 = 2;

/// A varint field.
fn uint(out: &mut Vec<u8>, field: u32, value: u64) {
    push_varint(out, u64::from(field) << 3);
    push_varint(out, value);
}

/// A length-delimited field (bytes, string or message).
fn bytes(out: &mut Vec<u8>, field: u32, value: &[u8]) {
    push_varint(out, (u64::from(field) << 3) | 2);
    push_varint(out, value.len() as u64);
    out.extend_from_slice(value);
}

/// One thread's track.
pub(super) struct Track {
    sequence: u64,
    uuid: u64,
    /// Frame ids whose names this sequence has interned.
    interned: Vec<bool>,
    packet: Vec<u8>,
    message: Vec<u8>,
    inner: Vec<u8>,
    packets: u64,
    out: BufWriter<File>,
}

impl Track {
    pub(super) fn new(thread: &Thread, out: BufWriter<File>) -> Result<Self> {
        let mut track = Track {
            sequence: u64::from(thread.sequence),
            // Any id unique in the trace; the thread id's bits, kept off 0.
            uuid: (1 << 32) | u64::from(thread.id.0 as u32),
            interned: Vec::new(),
            packet: Vec::new(),
            message: Vec::new(),
            inner: Vec::new(),
            packets: 0,
            out,
        };
        let (mut thread_descriptor, mut descriptor) = (Vec::new(), Vec::new());
        uint(&mut thread_descriptor, field::PID, 1);
        // int64: a negative id is its two's complement.
        uint(
            &mut thread_descriptor,
            field::TID,
            i64::from(thread.id.0) as u64,
        );
        bytes(
            &mut thread_descriptor,
            field::THREAD_NAME,
            thread.name.as_bytes(),
        );
        uint(&mut descriptor, field::UUID, track.uuid);
        bytes(&mut descriptor, field::NAME, thread.name.as_bytes());
        bytes(&mut descriptor, field::THREAD, &thread_descriptor);
        track.packet.clear();
        uint(
            &mut track.packet,
            field::TRUSTED_PACKET_SEQUENCE_ID,
            track.sequence,
        );
        uint(
            &mut track.packet,
            field::SEQUENCE_FLAGS,
            SEQ_INCREMENTAL_STATE_CLEARED,
        );
        bytes(&mut track.packet, field::TRACK_DESCRIPTOR, &descriptor);
        track.write_packet()?;
        Ok(track)
    }

    /// Writes the packet built in `self.packet` as one `Trace.packet`.
    fn write_packet(&mut self) -> Result<()> {
        self.message.clear();
        bytes(&mut self.message, field::TRACE_PACKET, &self.packet);
        self.out.write_all(&self.message)?;
        self.packets += 1;
        Ok(())
    }

    /// A slice begin or end at `at`; a begin names its frame.
    fn slice(&mut self, kind: u64, at: u64, name: Option<(u32, &str)>) -> Result<()> {
        self.packet.clear();
        uint(&mut self.packet, field::TIMESTAMP, at);
        uint(
            &mut self.packet,
            field::TRUSTED_PACKET_SEQUENCE_ID,
            self.sequence,
        );
        uint(
            &mut self.packet,
            field::SEQUENCE_FLAGS,
            SEQ_NEEDS_INCREMENTAL_STATE,
        );
        self.message.clear();
        uint(&mut self.message, field::TYPE, kind);
        uint(&mut self.message, field::TRACK_UUID, self.uuid);
        if let Some((frame, text)) = name {
            let iid = u64::from(frame) + 1;
            uint(&mut self.message, field::NAME_IID, iid);
            let index = frame as usize;
            if self.interned.len() <= index {
                self.interned.resize(index + 1, false);
            }
            if !self.interned[index] {
                self.interned[index] = true;
                self.inner.clear();
                uint(&mut self.inner, field::IID, iid);
                bytes(&mut self.inner, field::EVENT_NAME, text.as_bytes());
                let mut interned = Vec::with_capacity(self.inner.len() + 4);
                bytes(&mut interned, field::EVENT_NAMES, &self.inner);
                bytes(&mut self.packet, field::INTERNED_DATA, &interned);
            }
        }
        let event = std::mem::take(&mut self.message);
        bytes(&mut self.packet, field::TRACK_EVENT, &event);
        self.message = event;
        self.write_packet()
    }
}

impl Sink for Track {
    fn open(&mut self, frame: u32, frames: &FrameCache<'_>, at: u64) -> Result<()> {
        self.slice(TYPE_SLICE_BEGIN, at, Some((frame, frames.name(frame))))
    }

    fn close(&mut self, at: u64, _own: Weight) -> Result<()> {
        self.slice(TYPE_SLICE_END, at, None)
    }
}

impl Writer for Track {
    fn finish(self: Box<Self>, _end: u64, _top: Weight) -> Result<(File, u64)> {
        Ok((finish_part(self.out)?, self.packets))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The encoder against bytes worked out by hand from the protobuf
    /// encoding rules.
    #[test]
    fn fields_encode_as_protobuf_does() {
        let mut out = Vec::new();
        push_varint(&mut out, 300);
        assert_eq!(out, [0xac, 0x02]);
        out.clear();
        uint(&mut out, 60, 1);
        assert_eq!(out, [0xe0, 0x03, 0x01]);
        out.clear();
        bytes(&mut out, 2, b"ab");
        assert_eq!(out, [0x12, 0x02, b'a', b'b']);
        out.clear();
        uint(&mut out, 2, -1i64 as u64);
        assert_eq!(out.len(), 11);
        assert_eq!(out[10], 0x01);
    }
}
