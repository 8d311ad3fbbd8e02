//! `tracetree dump --format jsonl`: one JSON object per tracepoint, depth-first
//! pre-order per thread, threads ascending by thread id.
//!
//! Keys: `thread`, `depth` (root = 0), `event_id`, `kind`, `children` (direct
//! children), `line` (of the code location; 0 when unknown), `file` (when
//! known), `method` (`Class.name`, calls only), `unfinished` (calls the
//! recorder never finished), `incomplete` (calls flagged incomplete),
//! `samples` (nodes of a merged sample tree: the samples passing through),
//! `diff` (a diff trace's status: `unchanged`, `removed`, `added`,
//! `edited_old`, `edited_new`).
//!
//! A leaf's record is its header's (it has no method, footer or samples),
//! so the walks skip leaves' bodies ([`VisitDetail::leaf_bodies`]): most
//! tracepoints are leaves, and decoding their values was most of a walk.

use std::collections::VecDeque;
use std::io::Write;

use rustc_hash::FxHashMap;

use crate::common::{CodeLocationId, MethodId, ThreadId};
use crate::error::Result;
use crate::format::TraceContext;
use crate::model::{Footer, Tracepoint, TracepointBody, TracepointHeader, TracepointType};
use crate::print::ordered::{OrderedStats, Parallelism, run_ordered};
use crate::print::plan::{CHILDREN_PER_RANGE, Cut, RUN_BYTES, Source, plan};
use crate::tree::{TraceTree, Visit, VisitDetail};

/// Bytes a walk gathers before it writes them out.
const GATHER_BYTES: usize = 64 * 1024;
/// The most text a worker holds back behind calls whose children it is
/// still counting; past it, the outermost such call is counted ahead.
const PENDING_BYTES: usize = 1 << 20;

/// What the dump's walks read: leaves by their headers only.
const LEAF_HEADERS: VisitDetail = VisitDetail {
    child_counts: false,
    leaf_bodies: false,
};

/// Writes the JSON-lines dump of `threads` (all threads when `None`), on
/// as many cores as rayon's pool has threads (`RAYON_NUM_THREADS` sets
/// it); the output is the same byte for byte however many there are.
pub fn write_jsonl<T>(tree: &T, threads: Option<&[ThreadId]>, out: &mut impl Write) -> Result<()>
where
    T: TraceTree,
{
    write_jsonl_with(tree, threads, &Parallelism::default(), out).map(|_| ())
}

/// [`write_jsonl`] with the work shared out as `parallelism` says; the
/// output is the same byte for byte whatever it says.
pub(crate) fn write_jsonl_with<T>(
    tree: &T,
    threads: Option<&[ThreadId]>,
    parallelism: &Parallelism,
    out: &mut impl Write,
) -> Result<OrderedStats>
where
    T: TraceTree,
{
    let threads = &crate::tree::select_threads(&tree.thread_ids(), threads)?;
    if parallelism.workers <= 1 {
        let mut records = Records::new(tree);
        for &thread in threads {
            let roots = tree.roots(thread)?;
            tree.walk_visit(&roots, None, LEAF_HEADERS, |step| {
                records.step(thread, step, 0, out)
            })?;
            records.finish(out)?;
        }
        return Ok(OrderedStats::default());
    }
    let cut = Cut {
        headers: false,
        parents: false,
        max_depth: None,
        line_counts: true,
        run_bytes: RUN_BYTES,
        children_per_range: CHILDREN_PER_RANGE,
    };
    let parts = plan(tree, threads, cut, parallelism.workers)?;
    run_ordered(
        parts,
        parallelism,
        || Records::new(tree),
        |records, part, sink| {
            match &part.source {
                Source::Header { .. } => {}
                Source::Line(node, counted) => {
                    let children = match counted {
                        Some(children) => *children,
                        None => tree.child_count(*node)?,
                    };
                    tree.visit(*node, |tracepoint, footer| {
                        records.head(part.thread, part.depth, &tracepoint.header);
                        records.counted(children);
                        records.tail(&tracepoint.header, Some(tracepoint), footer);
                    })?;
                }
                Source::Trees(_) | Source::Siblings { .. } | Source::Children { .. } => {
                    part.walk(tree, None, LEAF_HEADERS, |step| {
                        records.step(part.thread, step, part.depth, sink)
                    })?;
                }
            }
            records.finish(sink)
        },
        out,
    )
}

/// One worker's records, gathered in a buffer, with the name fragments it
/// has encoded.
///
/// # Counting children behind the walk
///
/// A record gives its node's direct children, yet counting them ahead (a
/// scan of the node's content that skips each child) reads every child
/// twice, once for the count and once for its own record. So the walk
/// counts nothing: a call's record is written up to its `"children":`
/// key, where a [`Hole`] marks the missing number, and the following
/// records are counted into it by their depths (a record one level deeper
/// than the innermost open call is its child; one at its depth or above
/// closes it). The text goes out up to the first hole still open, the
/// holes filled as it goes. A call whose held-back text passes
/// [`PENDING_BYTES`] (a large subtree) is counted ahead after all, so a
/// worker holds at most that much, whatever the trace.
struct Records<'t, T: TraceTree> {
    tree: &'t T,
    buffer: Vec<u8>,
    /// The holes in `buffer`, in order; those before the first open one
    /// are filled.
    holes: VecDeque<Hole>,
    /// Holes taken off the front of `holes` since the start.
    holes_passed: usize,
    /// The calls whose children are being counted, outermost first.
    open: Vec<OpenCall<T::Node>>,
    /// The buffer's length at which the next step writes out.
    write_at: usize,
    /// The bytes at the buffer's start already written out.
    written: usize,
    fragments: Fragments,
}

/// Where a record's child count goes, and the count once known.
struct Hole {
    at: usize,
    count: Option<usize>,
}

/// A call whose record waits for its child count.
struct OpenCall<N> {
    node: N,
    depth: usize,
    /// Its hole, numbered from the start of the walk.
    hole: usize,
    children: usize,
}

impl<'t, T: TraceTree> Records<'t, T> {
    fn new(tree: &'t T) -> Self {
        Records {
            tree,
            buffer: Vec::new(),
            holes: VecDeque::new(),
            holes_passed: 0,
            open: Vec::new(),
            write_at: GATHER_BYTES,
            written: 0,
            fragments: Fragments::default(),
        }
    }

    /// The record of one step of a walk whose depths start at `depth`,
    /// written to `out` every [`GATHER_BYTES`].
    fn step(
        &mut self,
        thread: ThreadId,
        step: Visit<'_, T::Node>,
        depth: usize,
        out: &mut impl Write,
    ) -> Result<()> {
        let (node, below, header, tracepoint, footer) = match step {
            Visit::Node {
                node,
                depth,
                tracepoint,
                footer,
                ..
            } => (node, depth, &tracepoint.header, Some(tracepoint), footer),
            Visit::Leaf {
                node,
                depth,
                ref header,
            } => (node, depth, header, None, None),
            Visit::Folded { .. } => return Ok(()),
        };
        let depth = depth + below;
        self.close_from(depth);
        if let Some(parent) = self.open.last_mut() {
            parent.children += 1;
        }
        self.head(thread, depth, header);
        if header.tracepoint_type.is_container() {
            self.holes.push_back(Hole {
                at: self.buffer.len(),
                count: None,
            });
            self.open.push(OpenCall {
                node,
                depth,
                hole: self.holes_passed + self.holes.len() - 1,
                children: 0,
            });
        } else {
            self.counted(0);
        }
        self.tail(header, tracepoint, footer);
        if self.buffer.len() >= self.write_at {
            self.write_out(out)?;
            self.write_at = self.buffer.len() + GATHER_BYTES;
        }
        Ok(())
    }

    /// Closes the open calls at `depth` or deeper: their counts are known.
    fn close_from(&mut self, depth: usize) {
        while let Some(call) = self.open.pop_if(|call| call.depth >= depth) {
            // A call counted ahead may have its hole written out already.
            let hole = call
                .hole
                .checked_sub(self.holes_passed)
                .and_then(|i| self.holes.get_mut(i));
            if let Some(hole) = hole {
                hole.count.get_or_insert(call.children);
            }
        }
    }

    /// Writes out what precedes the first open hole, filling the holes
    /// before it; first counts ahead the outermost open calls while the
    /// text held back behind them passes [`PENDING_BYTES`].
    fn write_out(&mut self, out: &mut impl Write) -> Result<()> {
        while let Some(first_open) = self.holes.iter().position(|hole| hole.count.is_none()) {
            let hole = first_open + self.holes_passed;
            if self.buffer.len() - self.holes[first_open].at < PENDING_BYTES {
                break;
            }
            let Some(call) = self.open.iter().find(|call| call.hole == hole) else {
                break;
            };
            self.holes[first_open].count = Some(self.tree.child_count(call.node)?);
        }
        let mut number = itoa::Buffer::new();
        while let Some(&Hole {
            at,
            count: Some(count),
        }) = self.holes.front()
        {
            out.write_all(&self.buffer[self.written..at])?;
            out.write_all(number.format(count).as_bytes())?;
            self.written = at;
            self.holes.pop_front();
            self.holes_passed += 1;
        }
        let end = self.holes.front().map_or(self.buffer.len(), |hole| hole.at);
        out.write_all(&self.buffer[self.written..end])?;
        self.written = end;
        // What is written goes once it is most of the buffer, so that text
        // held back is moved about once, not at every write.
        if self.written == self.buffer.len() {
            self.buffer.clear();
            self.written = 0;
        } else if self.written >= self.buffer.len() / 2 {
            self.buffer.drain(..self.written);
            for hole in &mut self.holes {
                hole.at -= self.written;
            }
            self.written = 0;
        }
        Ok(())
    }

    /// Closes every open call (the walk is over) and writes out the rest.
    fn finish(&mut self, out: &mut impl Write) -> Result<()> {
        self.close_from(0);
        self.write_out(out)
    }

    /// Appends a record up to its child count: the keys, in order, of the
    /// module documentation; a count or a hole follows, then
    /// [`tail`](Self::tail).
    fn head(&mut self, thread: ThreadId, depth: usize, header: &TracepointHeader) {
        let buffer = &mut self.buffer;
        let mut number = itoa::Buffer::new();
        buffer.extend_from_slice(self.fragments.thread(thread));
        buffer.extend_from_slice(number.format(depth).as_bytes());
        buffer.extend_from_slice(b",\"event_id\":");
        buffer.extend_from_slice(number.format(header.event.0).as_bytes());
        buffer.extend_from_slice(self.fragments.kind(header.tracepoint_type));
    }

    /// Appends a record's child count, known ahead.
    fn counted(&mut self, children: usize) {
        self.buffer
            .extend_from_slice(itoa::Buffer::new().format(children).as_bytes());
    }

    /// Appends the rest of a record after its child count, and its line
    /// end: `incomplete` and `unfinished` only when true, `file`,
    /// `method` and `samples` only when known. `tracepoint` is the whole
    /// tracepoint whose header `header` is, `None` for a leaf walked by
    /// its header only.
    fn tail(
        &mut self,
        header: &TracepointHeader,
        tracepoint: Option<&Tracepoint<'_>>,
        footer: Option<&Footer<'_>>,
    ) {
        let context = self.tree.context();
        let buffer = &mut self.buffer;
        buffer.extend_from_slice(self.fragments.location(context, header.code_location));
        let mut incomplete = false;
        if let Some(TracepointBody::MethodCall { method, flags, .. }) =
            tracepoint.map(|tracepoint| &tracepoint.body)
        {
            if let Some(method) = self.fragments.method(context, *method) {
                buffer.extend_from_slice(method);
            }
            incomplete = flags & 1 != 0;
        }
        if incomplete {
            buffer.extend_from_slice(b",\"incomplete\":true");
        }
        if header.tracepoint_type.is_container() && footer.is_none() {
            buffer.extend_from_slice(b",\"unfinished\":true");
        }
        if let Some(samples) = tracepoint.and_then(|tracepoint| tracepoint.sample_count(footer)) {
            buffer.extend_from_slice(b",\"samples\":");
            buffer.extend_from_slice(itoa::Buffer::new().format(samples).as_bytes());
        }
        if let Some(status) = header.diff_status.name() {
            buffer.extend_from_slice(b",\"diff\":\"");
            buffer.extend_from_slice(status.as_bytes());
            buffer.push(b'"');
        }
        buffer.extend_from_slice(b"}\n");
    }
}

/// JSON fragments a dump repeats, each encoded once per worker (those of
/// names bounded by the trace's reference objects, not by its
/// tracepoints) and copied whole into every record that has it.
#[derive(Default)]
struct Fragments {
    /// The thread of the last record and its record's start,
    /// `{"thread":N,"depth":`.
    thread: Option<(ThreadId, Box<[u8]>)>,
    /// Tracepoint type → `,"kind":"name","children":`.
    kinds: Vec<Box<[u8]>>,
    /// Code location → `,"line":N` and, if the file is known, `,"file":"…"`.
    locations: FxHashMap<CodeLocationId, Box<[u8]>>,
    /// Method → `,"method":"Class.name"` (if known).
    methods: FxHashMap<MethodId, Option<Box<[u8]>>>,
}

impl Fragments {
    /// `{"thread":N,"depth":` for `thread`.
    fn thread(&mut self, thread: ThreadId) -> &[u8] {
        if self.thread.as_ref().is_none_or(|(last, _)| *last != thread) {
            let start = format!("{{\"thread\":{},\"depth\":", thread.0);
            self.thread = Some((thread, start.into_bytes().into()));
        }
        self.thread.as_ref().map_or(&[], |(_, start)| start)
    }

    /// `,"kind":"name","children":`, after the event id.
    fn kind(&mut self, kind: TracepointType) -> &[u8] {
        if self.kinds.is_empty() {
            self.kinds = vec![Box::default(); TracepointType::ALL.len()];
            for each in TracepointType::ALL {
                if let Some(fragment) = self.kinds.get_mut(each as usize) {
                    let text = format!(",\"kind\":\"{}\",\"children\":", each.name());
                    *fragment = text.into_bytes().into();
                }
            }
        }
        self.kinds
            .get(kind as usize)
            .map_or(&[], |fragment| fragment)
    }

    fn location(&mut self, context: &TraceContext, id: CodeLocationId) -> &[u8] {
        self.locations.entry(id).or_insert_with(|| {
            let mut fragment = String::from(",\"line\":");
            let Ok(location) = context.code_location(id) else {
                fragment.push('0');
                return fragment.into_bytes().into();
            };
            fragment.push_str(itoa::Buffer::new().format(location.line));
            if let Ok(file) = context.string(location.file_name) {
                fragment.push_str(",\"file\":");
                push_json_string(&mut fragment, &file.decode());
            }
            fragment.into_bytes().into()
        })
    }

    fn method(&mut self, context: &TraceContext, id: MethodId) -> Option<&[u8]> {
        self.methods
            .entry(id)
            .or_insert_with(|| {
                let method = context.method(id).ok()?;
                let class = context
                    .class(method.class)
                    .map(|c| c.name.decode().into_owned())
                    .unwrap_or_default();
                let mut fragment = String::from(",\"method\":");
                push_json_string(
                    &mut fragment,
                    &if class.is_empty() {
                        method.name.decode().into_owned()
                    } else {
                        format!("{class}.{}", method.name.decode())
                    },
                );
                Some(fragment.into_bytes().into())
            })
            .as_deref()
    }
}

/// Appends `text` to `out` as a JSON string, quoted and escaped as
/// serde_json does: `"`, `\` and the control characters, the usual
/// ones by their short escapes and the others as `\u00xx`.
pub(crate) fn push_json_string(out: &mut String, text: &str) {
    out.push('"');
    let mut plain = 0;
    for (i, byte) in text.bytes().enumerate() {
        let escape = match byte {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0..0x20 => "",
            _ => continue,
        };
        out.push_str(&text[plain..i]);
        plain = i + 1;
        if escape.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(byte >> 4)]));
            out.push(char::from(HEX[usize::from(byte & 15)]));
        } else {
            out.push_str(escape);
        }
    }
    out.push_str(&text[plain..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::push_json_string;

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        let mut texts: Vec<String> = (0..128u8).map(|b| format!("a{}b", char::from(b))).collect();
        texts.extend(["", "\"", "\\\\\"\u{1f}", "é€😀\u{7f}\n", "plain text"].map(String::from));
        for text in texts {
            let mut ours = String::from("[");
            push_json_string(&mut ours, &text);
            assert_eq!(ours[1..], serde_json::to_string(&text).unwrap(), "{text:?}");
        }
    }
}
