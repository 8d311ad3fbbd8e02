//! speedscope's file format (<https://www.speedscope.app/file-format-schema.json>):
//! `{"$schema", "profiles": [...], "shared": {"frames": [...]}}`, one
//! evented profile per thread whose `O`/`C` events open and close frames
//! by their index in `shared.frames`, at positions in unit "none". The
//! frames come last, as JSON keys may, so they are written once every
//! thread has met its names.

use std::fs::File;
use std::io::{BufWriter, Write};

use super::{FrameCache, Frames, Sink, Thread, Weight, Writer, finish_part, json_string};
use crate::error::Result;

/// The schema speedscope publishes for its files.
const SCHEMA: &str = "https://www.speedscope.app/file-format-schema.json";

/// The file's start, up to its first profile.
pub(super) fn head(out: &mut impl Write, name: &str) -> Result<()> {
    write!(
        out,
        "{{\"$schema\":\"{SCHEMA}\",\"exporter\":\"tracetree\",\"name\":"
    )?;
    json_string(out, name)?;
    out.write_all(b",\"activeProfileIndex\":0,\"profiles\":[")?;
    Ok(())
}

/// The file's end: the frames, by id.
pub(super) fn tail(out: &mut impl Write, frames: &Frames) -> Result<()> {
    out.write_all(b"],\"shared\":{\"frames\":[")?;
    for (i, name) in frames.names().iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        out.write_all(b"{\"name\":")?;
        json_string(out, name)?;
        out.write_all(b"}")?;
    }
    out.write_all(b"]}}\n")?;
    Ok(())
}

/// One thread's evented profile.
pub(super) struct Profile {
    /// The open frames, innermost last (a `C` event names its frame).
    open: Vec<u32>,
    events: u64,
    number: itoa::Buffer,
    out: BufWriter<File>,
}

impl Profile {
    pub(super) fn new(thread: &Thread, mut out: BufWriter<File>) -> Result<Self> {
        out.write_all(b"{\"type\":\"evented\",\"name\":")?;
        json_string(&mut out, &thread.name)?;
        out.write_all(b",\"unit\":\"none\",\"startValue\":0,\"events\":[")?;
        Ok(Profile {
            open: Vec::new(),
            events: 0,
            number: itoa::Buffer::new(),
            out,
        })
    }

    fn event(&mut self, kind: &[u8], frame: u32, at: u64) -> Result<()> {
        if self.events > 0 {
            self.out.write_all(b",")?;
        }
        self.events += 1;
        self.out.write_all(b"{\"type\":\"")?;
        self.out.write_all(kind)?;
        self.out.write_all(b"\",\"frame\":")?;
        self.out.write_all(self.number.format(frame).as_bytes())?;
        self.out.write_all(b",\"at\":")?;
        self.out.write_all(self.number.format(at).as_bytes())?;
        self.out.write_all(b"}")?;
        Ok(())
    }
}

impl Sink for Profile {
    fn open(&mut self, frame: u32, _frames: &FrameCache<'_>, at: u64) -> Result<()> {
        self.open.push(frame);
        self.event(b"O", frame, at)
    }

    fn close(&mut self, at: u64, _own: Weight) -> Result<()> {
        match self.open.pop() {
            Some(frame) => self.event(b"C", frame, at),
            None => Ok(()),
        }
    }
}

impl Writer for Profile {
    fn finish(mut self: Box<Self>, end: u64, _top: Weight) -> Result<(File, u64)> {
        self.out.write_all(b"],\"endValue\":")?;
        self.out.write_all(self.number.format(end).as_bytes())?;
        self.out.write_all(b"}")?;
        Ok((finish_part(self.out)?, self.events))
    }
}
