//! Chrome's Trace Event format (`chrome://tracing`, Perfetto's UI):
//! `{"traceEvents": [...]}` with a `thread_name` metadata event per thread
//! and a `B` (begin, named) and `E` (end) event per frame, `pid` 1, `tid`
//! the thread id, `ts` the position in microseconds. An `E` closes the
//! innermost open `B` of its thread, so it carries no name.

use std::fs::File;
use std::io::{BufWriter, Write};

use rustc_hash::FxHashMap;

use super::{FrameCache, Sink, Thread, Weight, Writer, finish_part, json_string};
use crate::error::Result;

/// The file's start.
pub(super) fn head(out: &mut impl Write) -> Result<()> {
    out.write_all(b"{\"traceEvents\":[")?;
    Ok(())
}

/// The file's end.
pub(super) fn tail(out: &mut impl Write) -> Result<()> {
    out.write_all(b"]}\n")?;
    Ok(())
}

/// One thread's events.
pub(super) struct Events {
    /// `,"pid":1,"tid":N,"ts":`: what every event of the thread repeats.
    common: Vec<u8>,
    /// Frame id → its name as a JSON string.
    names: FxHashMap<u32, Box<[u8]>>,
    events: u64,
    number: itoa::Buffer,
    out: BufWriter<File>,
}

impl Events {
    pub(super) fn new(thread: &Thread, mut out: BufWriter<File>) -> Result<Self> {
        let tid = thread.id.0;
        write!(
            out,
            "{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":{tid},\"args\":{{\"name\":"
        )?;
        json_string(&mut out, &thread.name)?;
        out.write_all(b"}}")?;
        Ok(Events {
            common: format!(",\"pid\":1,\"tid\":{tid},\"ts\":").into_bytes(),
            names: FxHashMap::default(),
            events: 1,
            number: itoa::Buffer::new(),
            out,
        })
    }
}

impl Sink for Events {
    fn open(&mut self, frame: u32, frames: &FrameCache<'_>, at: u64) -> Result<()> {
        let name = match self.names.get(&frame) {
            Some(name) => name,
            None => {
                let mut json = Vec::new();
                json_string(&mut json, frames.name(frame))?;
                self.names.entry(frame).or_insert(json.into())
            }
        };
        self.out.write_all(b",\n{\"ph\":\"B\",\"name\":")?;
        self.out.write_all(name)?;
        self.out.write_all(&self.common)?;
        self.out.write_all(self.number.format(at).as_bytes())?;
        self.out.write_all(b"}")?;
        self.events += 1;
        Ok(())
    }

    fn close(&mut self, at: u64, _own: Weight) -> Result<()> {
        self.out.write_all(b",\n{\"ph\":\"E\"")?;
        self.out.write_all(&self.common)?;
        self.out.write_all(self.number.format(at).as_bytes())?;
        self.out.write_all(b"}")?;
        self.events += 1;
        Ok(())
    }
}

impl Writer for Events {
    fn finish(self: Box<Self>, _end: u64, _top: Weight) -> Result<(File, u64)> {
        Ok((finish_part(self.out)?, self.events))
    }
}
