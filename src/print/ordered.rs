//! Work units run on several threads, their output written in order.
//!
//! [`run_ordered`] hands numbered units to worker threads; each worker
//! writes its unit's output in chunks through a [`ChunkSink`], and the
//! calling thread writes the chunks of unit 0, then unit 1, and so on. The
//! chunks produced but not yet written never exceed a fixed cap: a worker
//! ahead of the unit being written waits for room, while the worker of the
//! unit being written always gets one more (so it never waits for units
//! behind it).

use std::io::{self, Write};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Condvar, Mutex};

use crate::error::{Error, Result};

/// How the printers share out their work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Parallelism {
    /// Worker threads; 1 runs the plain sequential walk on the calling
    /// thread.
    pub workers: usize,
    /// Output chunks (of about `CHUNK_BYTES` each) produced but not yet
    /// written, at most.
    pub buffers: usize,
}

impl Default for Parallelism {
    /// As many workers as rayon's pool has threads (`RAYON_NUM_THREADS`
    /// sets it), and four buffers per worker.
    fn default() -> Self {
        let workers = rayon::current_num_threads().max(1);
        Parallelism {
            workers,
            buffers: 4 * workers,
        }
    }
}

/// What a parallel run observed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct OrderedStats {
    /// Work units run.
    pub units: usize,
    /// The most chunks produced but not yet written at any one time.
    pub peak_in_flight: usize,
}

/// The size a worker gathers before it hands a chunk on.
pub const CHUNK_BYTES: usize = 1 << 20;

/// One message from a worker about its unit.
enum Message {
    Chunk(Vec<u8>),
    Failed(Error),
}

/// Chunks in flight and the unit being written.
struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
    cap: usize,
}

struct GateState {
    /// The unit whose chunks the writer is writing.
    head: usize,
    in_flight: usize,
    peak: usize,
    /// The writer has stopped; workers give up.
    stopped: bool,
}

impl Gate {
    /// Waits for room for one more chunk of unit `seq`; false once the
    /// writer has stopped.
    fn acquire(&self, seq: usize) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        // Units behind the head leave one place free for the head.
        while !state.stopped
            && ((seq != state.head && state.in_flight + 1 >= self.cap)
                || (seq == state.head && state.in_flight >= self.cap))
        {
            state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        if state.stopped {
            return false;
        }
        state.in_flight += 1;
        state.peak = state.peak.max(state.in_flight);
        true
    }

    fn update(&self, f: impl FnOnce(&mut GateState)) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut state);
        drop(state);
        self.changed.notify_all();
    }
}

/// Where a worker writes its unit's output: gathered into chunks of about
/// [`CHUNK_BYTES`], each handed to the writer once full (and the last when
/// the unit ends), so many small writes cost one hand-over per chunk.
pub struct ChunkSink<'g> {
    seq: usize,
    gate: &'g Gate,
    spare: &'g Spare,
    sender: Sender<Message>,
    pending: Vec<u8>,
}

/// Chunks the writer has written, emptied for workers to fill again: the
/// chunks in flight are capped, so a few buffers serve a whole run, and
/// their pages are not faulted in afresh for every chunk.
struct Spare(Mutex<Vec<Vec<u8>>>);

impl Spare {
    /// An empty chunk, one written before if there is one.
    fn take(&self) -> Vec<u8> {
        let spare = self.0.lock().unwrap_or_else(|e| e.into_inner()).pop();
        spare.unwrap_or_else(|| Vec::with_capacity(CHUNK_BYTES))
    }

    /// Keeps `chunk`, once written, for [`take`](Self::take), up to `most`.
    fn give(&self, mut chunk: Vec<u8>, most: usize) {
        chunk.clear();
        let mut spare = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if spare.len() < most {
            spare.push(chunk);
        }
    }
}

impl ChunkSink<'_> {
    /// Hands the gathered bytes to the writer as one chunk.
    fn send_pending(&mut self) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::take(&mut self.pending);
        self.send(chunk)
    }

    /// Hands `chunk` to the writer, once there is room for it.
    fn send(&mut self, chunk: Vec<u8>) -> io::Result<()> {
        let stopped = || io::Error::new(io::ErrorKind::BrokenPipe, "the output was abandoned");
        if !self.gate.acquire(self.seq) {
            return Err(stopped());
        }
        self.sender
            .send(Message::Chunk(chunk))
            .map_err(|_| stopped())
    }
}

/// Where a printer that gathers its text in a buffer hands it over: a
/// [`ChunkSink`] takes the buffer itself as a chunk (the text is not
/// copied on its way to the writer), [`Flushed`] writes it out.
pub trait Gathered {
    /// The text a printer gathers before it hands it over.
    const GATHER_BYTES: usize;

    /// An empty buffer to gather text in.
    fn buffer(&mut self) -> String;

    /// Takes the text gathered in `buffer`, leaving it empty: ready for
    /// more when `more`, else without capacity.
    fn hand_over(&mut self, buffer: &mut String, more: bool) -> io::Result<()>;
}

impl Gathered for ChunkSink<'_> {
    const GATHER_BYTES: usize = CHUNK_BYTES;

    fn buffer(&mut self) -> String {
        // Spare chunks are empty, so valid UTF-8.
        String::from_utf8(self.spare.take()).unwrap_or_default()
    }

    fn hand_over(&mut self, buffer: &mut String, more: bool) -> io::Result<()> {
        if buffer.is_empty() {
            if !more {
                // Nothing to send: its memory serves another unit.
                self.spare
                    .give(std::mem::take(buffer).into_bytes(), self.gate.cap);
            }
            return Ok(());
        }
        // Whatever came through `Write` first goes first.
        self.send_pending()?;
        let next = if more { self.buffer() } else { String::new() };
        let chunk = std::mem::replace(buffer, next).into_bytes();
        self.send(chunk)
    }
}

/// A writer as a [`Gathered`]: each buffer written out.
pub struct Flushed<'w, W: Write>(pub &'w mut W);

impl<W: Write> Gathered for Flushed<'_, W> {
    const GATHER_BYTES: usize = 64 * 1024;

    fn buffer(&mut self) -> String {
        String::with_capacity(Self::GATHER_BYTES + 4096)
    }

    fn hand_over(&mut self, buffer: &mut String, _more: bool) -> io::Result<()> {
        self.0.write_all(buffer.as_bytes())?;
        buffer.clear();
        Ok(())
    }
}

impl Drop for ChunkSink<'_> {
    /// Gives the buffer it took for more output back.
    fn drop(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        if pending.capacity() > 0 {
            self.spare.give(pending, self.gate.cap);
        }
    }
}

impl Write for ChunkSink<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        if self.pending.capacity() == 0 {
            self.pending = self.spare.take();
        }
        self.pending.extend_from_slice(bytes);
        if self.pending.len() >= CHUNK_BYTES {
            self.send_pending()?;
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Runs `units` on `parallelism.workers` threads, each through `run` with
/// its worker's state (made by `init` on that thread) and a sink for its
/// output, and writes their outputs to `out` in the units' order. Stops at
/// the first error (of a unit, in order, or of `out`).
pub fn run_ordered<U: Send, S>(
    units: Vec<U>,
    parallelism: &Parallelism,
    init: impl Fn() -> S + Sync,
    run: impl Fn(&mut S, U, &mut ChunkSink<'_>) -> Result<()> + Sync,
    out: &mut impl Write,
) -> Result<OrderedStats> {
    let unit_count = units.len();
    let gate = Gate {
        state: Mutex::new(GateState {
            head: 0,
            in_flight: 0,
            peak: 0,
            stopped: false,
        }),
        changed: Condvar::new(),
        cap: parallelism.buffers.max(2),
    };
    // Units are taken in order under this lock, and their receivers queued
    // to the writer under it, so receivers arrive in the units' order.
    let queue = Mutex::new(units.into_iter().enumerate());
    let spare = Spare(Mutex::new(Vec::new()));
    let (receivers_in, receivers_out) = mpsc::channel::<Receiver<Message>>();
    let result = std::thread::scope(|scope| {
        for _ in 0..parallelism.workers.max(1) {
            let receivers_in = receivers_in.clone();
            let (queue, gate, spare, init, run) = (&queue, &gate, &spare, &init, &run);
            scope.spawn(move || {
                let mut state = init();
                loop {
                    let (seq, unit, sender) = {
                        let mut queue = queue.lock().unwrap_or_else(|e| e.into_inner());
                        let Some((seq, unit)) = queue.next() else {
                            return;
                        };
                        let (sender, receiver) = mpsc::channel();
                        if receivers_in.send(receiver).is_err() {
                            return;
                        }
                        (seq, unit, sender)
                    };
                    let mut sink = ChunkSink {
                        seq,
                        gate,
                        spare,
                        sender,
                        pending: Vec::new(),
                    };
                    let result = run(&mut state, unit, &mut sink)
                        .and_then(|()| sink.send_pending().map_err(Error::from));
                    if let Err(error) = result {
                        let _ = sink.sender.send(Message::Failed(error));
                        return;
                    }
                }
            });
        }
        drop(receivers_in);
        let written = write_in_order(&receivers_out, &gate, &spare, out);
        gate.update(|state| state.stopped = true);
        drop(receivers_out);
        written
    });
    result?;
    let peak = gate.state.lock().unwrap_or_else(|e| e.into_inner()).peak;
    Ok(OrderedStats {
        units: unit_count,
        peak_in_flight: peak,
    })
}

/// The writer's side of [`run_ordered`]: every unit's chunks in turn.
fn write_in_order(
    receivers: &Receiver<Receiver<Message>>,
    gate: &Gate,
    spare: &Spare,
    out: &mut impl Write,
) -> Result<()> {
    for (seq, receiver) in receivers.iter().enumerate() {
        gate.update(|state| state.head = seq);
        for message in receiver.iter() {
            match message {
                Message::Chunk(chunk) => {
                    gate.update(|state| state.in_flight -= 1);
                    out.write_all(&chunk)?;
                    spare.give(chunk, gate.cap);
                }
                Message::Failed(error) => return Err(error),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_and_handed_over_text_comes_out_in_order() {
        let units: Vec<usize> = (0..40).collect();
        let parallelism = Parallelism {
            workers: 3,
            buffers: 2,
        };
        let mut out = Vec::new();
        let stats = run_ordered(
            units,
            &parallelism,
            || (),
            |(), unit, sink| {
                sink.write_all(format!("w{unit} ").as_bytes())?;
                let mut buffer = sink.buffer();
                assert!(buffer.is_empty());
                buffer.push_str(&format!("h{unit} "));
                sink.hand_over(&mut buffer, true)?;
                assert!(buffer.is_empty());
                sink.write_all(format!("x{unit} ").as_bytes())?;
                buffer.push_str(&format!("l{unit}\n"));
                sink.hand_over(&mut buffer, false)?;
                assert_eq!(buffer.capacity(), 0);
                // A buffer left empty goes back to the spares, whole.
                let mut unused = sink.buffer();
                sink.hand_over(&mut unused, false)?;
                assert_eq!(unused.capacity(), 0);
                Ok(())
            },
            &mut out,
        )
        .unwrap();
        let expected: String = (0..40)
            .map(|unit| format!("w{unit} h{unit} x{unit} l{unit}\n"))
            .collect();
        assert_eq!(String::from_utf8(out).unwrap(), expected);
        assert_eq!(stats.units, 40);
        assert!(stats.peak_in_flight <= 2, "{stats:?}");
    }

    #[test]
    fn a_flushed_writer_takes_each_buffer_whole() {
        let mut written = Vec::new();
        let mut out = Flushed(&mut written);
        let mut buffer = out.buffer();
        buffer.push_str("one\n");
        out.hand_over(&mut buffer, true).unwrap();
        buffer.push_str("two\n");
        out.hand_over(&mut buffer, false).unwrap();
        assert!(buffer.is_empty());
        assert_eq!(written, b"one\ntwo\n");
    }
}
