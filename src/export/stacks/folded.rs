//! Folded stacks: `thread;outer;inner WEIGHT`, one line per distinct stack
//! with a weight of its own, in the order the stacks were first met.
//! Frames are kept as a trie of (parent stack, frame) → stack id; a line's
//! text is built from the trie only when the thread's part is written.
//!
//! Of a diff, `thread;outer;inner LEFT RIGHT`, as FlameGraph's
//! `difffolded.pl` writes two profiles (inferno's `--differential` reads
//! it), a line per stack weighing something on either side: LEFT counts
//! the tracepoints of the left trace (unchanged, removed, an edit's old
//! side), RIGHT those of the right (unchanged, added, an edit's new side).
//! The two sides of an edit have the same frame name, so their stacks
//! merge, and each column is what the folded export of that input alone
//! weighs (a sample tree's edited call: its old samples carried over to
//! the new side's frame, whose children are both sides').

use std::fs::File;
use std::io::{BufWriter, Write};

use rustc_hash::FxHashMap;

use super::{FrameCache, Sink, Thread, Weight, Writer, finish_part};
use crate::error::Result;

/// One thread's stacks.
pub(super) struct Folded {
    thread: String,
    /// Stack id → (parent stack, frame); stack 0 is the thread itself.
    stacks: Vec<(u32, u32)>,
    children: FxHashMap<(u32, u32), u32>,
    /// Weights by stack id.
    weights: Vec<Weight>,
    /// Frame id → its name as a folded frame (`;` and line ends replaced).
    names: FxHashMap<u32, Box<str>>,
    /// The open stacks, innermost last.
    path: Vec<u32>,
    /// Write the two columns of a diff.
    differential: bool,
    out: BufWriter<File>,
}

impl Folded {
    pub(super) fn new(thread: &Thread, out: BufWriter<File>, differential: bool) -> Self {
        Folded {
            thread: frame_text(&thread.name),
            stacks: vec![(0, u32::MAX)],
            children: FxHashMap::default(),
            weights: vec![Weight::default()],
            names: FxHashMap::default(),
            path: Vec::new(),
            differential,
            out,
        }
    }
}

/// A name as one frame of a folded line: `;` separates frames and a line
/// end ends the record, so both become other characters.
fn frame_text(name: &str) -> String {
    name.replace(';', ",").replace(['\n', '\r'], " ")
}

impl Sink for Folded {
    fn open(&mut self, frame: u32, frames: &FrameCache<'_>, _at: u64) -> Result<()> {
        let parent = self.path.last().copied().unwrap_or(0);
        let next = self.stacks.len() as u32;
        let stack = *self.children.entry((parent, frame)).or_insert(next);
        if stack == next {
            self.stacks.push((parent, frame));
            self.weights.push(Weight::default());
            self.names
                .entry(frame)
                .or_insert_with(|| frame_text(frames.name(frame)).into());
        }
        self.path.push(stack);
        Ok(())
    }

    fn close(&mut self, _at: u64, own: Weight) -> Result<()> {
        if let Some(stack) = self.path.pop() {
            self.weights[stack as usize].add(own);
        }
        Ok(())
    }
}

impl Writer for Folded {
    fn finish(mut self: Box<Self>, _end: u64, top: Weight) -> Result<(File, u64)> {
        self.weights[0].add(top);
        let mut lines = 0;
        let mut frames = Vec::new();
        let mut number = itoa::Buffer::new();
        for (stack, weight) in self.weights.iter().enumerate() {
            let weighs = match self.differential {
                true => weight.left + weight.right > 0,
                false => weight.all > 0,
            };
            if !weighs {
                continue;
            }
            frames.clear();
            let mut at = stack as u32;
            while at != 0 {
                let (parent, frame) = self.stacks[at as usize];
                frames.push(frame);
                at = parent;
            }
            self.out.write_all(self.thread.as_bytes())?;
            for frame in frames.iter().rev() {
                self.out.write_all(b";")?;
                self.out.write_all(self.names[frame].as_bytes())?;
            }
            let columns = match self.differential {
                true => &[weight.left, weight.right][..],
                false => &[weight.all][..],
            };
            for &column in columns {
                self.out.write_all(b" ")?;
                self.out.write_all(number.format(column).as_bytes())?;
            }
            self.out.write_all(b"\n")?;
            lines += 1;
        }
        Ok((finish_part(self.out)?, lines))
    }
}
