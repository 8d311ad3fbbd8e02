//! `tracetree dump --format jsonl`: one JSON object per tracepoint, depth-first
//! pre-order per thread, threads ascending by thread id.
//!
//! Keys: `thread`, `depth` (root = 0), `event_id`, `kind`, `children` (direct
//! children), `line` (of the code location; 0 when unknown), `file` (when
//! known), `method` (`Class.name`, calls only), `unfinished` (calls the
//! recorder never finished), `incomplete` (calls flagged incomplete),
//! `samples` (nodes of a merged sample tree: the samples passing through).

use std::io::Write;

use rustc_hash::FxHashMap;

use crate::common::{CodeLocationId, MethodId, ThreadId};
use crate::error::Result;
use crate::format::TraceContext;
use crate::model::{Footer, Tracepoint, TracepointBody, TracepointType};
use crate::print::ordered::{OrderedStats, Parallelism, run_ordered};
use crate::print::plan::{Cut, Source, plan};
use crate::tree::{TraceTree, Visit};

/// Bytes a walk gathers before it writes them out.
const GATHER_BYTES: usize = 64 * 1024;

/// Writes the JSON-lines dump of `threads` (all threads when `None`), on
/// all cores ([`Parallelism::default`]).
pub fn write_jsonl<T>(tree: &T, threads: Option<&[ThreadId]>, out: &mut impl Write) -> Result<()>
where
    T: TraceTree,
{
    write_jsonl_with(tree, threads, &Parallelism::default(), out).map(|_| ())
}

/// [`write_jsonl`] with the work shared out as `parallelism` says; the
/// output is the same byte for byte whatever it says.
pub fn write_jsonl_with<T>(
    tree: &T,
    threads: Option<&[ThreadId]>,
    parallelism: &Parallelism,
    out: &mut impl Write,
) -> Result<OrderedStats>
where
    T: TraceTree,
{
    let threads = &crate::tree::select_threads(&tree.thread_ids(), threads)?;
    let context = tree.context();
    if parallelism.workers <= 1 {
        let mut records = Records::default();
        for &thread in threads {
            let roots = tree.roots(thread)?;
            tree.walk_visit(&roots, None, true, |step| {
                records.step(context, thread, step, 0, out)
            })?;
        }
        out.write_all(&records.buffer)?;
        return Ok(OrderedStats::default());
    }
    let cut = Cut {
        headers: false,
        parents: false,
        max_depth: None,
    };
    let parts = plan(tree, threads, cut)?;
    run_ordered(
        parts,
        parallelism,
        Records::default,
        |records, part, sink| {
            match &part.source {
                Source::Header { .. } => {}
                Source::Line(node) => {
                    let children = tree.child_count(*node)?;
                    tree.visit(*node, |tracepoint, footer| {
                        records.record(
                            context,
                            part.thread,
                            part.depth,
                            children,
                            tracepoint,
                            footer,
                        )
                    })?;
                }
                Source::Trees(_) | Source::Children { .. } => {
                    part.walk(tree, None, true, |step| {
                        records.step(context, part.thread, step, part.depth, sink)
                    })?;
                }
            }
            sink.write_all(&records.buffer)?;
            records.buffer.clear();
            Ok(())
        },
        out,
    )
}

/// One worker's records, gathered in a buffer, with the name fragments it
/// has encoded.
#[derive(Default)]
struct Records {
    buffer: Vec<u8>,
    fragments: Fragments,
}

impl Records {
    /// The record of one step of a walk whose depths start at `depth`,
    /// written to `out` every [`GATHER_BYTES`].
    fn step<N>(
        &mut self,
        context: &TraceContext,
        thread: ThreadId,
        step: Visit<'_, N>,
        depth: usize,
        out: &mut impl Write,
    ) -> Result<()> {
        let Visit::Node {
            depth: below,
            tracepoint,
            footer,
            children,
            ..
        } = step
        else {
            return Ok(());
        };
        self.record(
            context,
            thread,
            depth + below,
            children.unwrap_or_default(),
            tracepoint,
            footer,
        );
        if self.buffer.len() >= GATHER_BYTES {
            out.write_all(&self.buffer)?;
            self.buffer.clear();
        }
        Ok(())
    }

    /// Appends one record and its line end: the keys, in order, of the
    /// module documentation; `incomplete` and `unfinished` only when true,
    /// `file`, `method` and `samples` only when known.
    fn record(
        &mut self,
        context: &TraceContext,
        thread: ThreadId,
        depth: usize,
        children: usize,
        tracepoint: &Tracepoint<'_>,
        footer: Option<&Footer<'_>>,
    ) {
        let buffer = &mut self.buffer;
        let mut number = itoa::Buffer::new();
        buffer.extend_from_slice(self.fragments.thread(thread));
        buffer.extend_from_slice(number.format(depth).as_bytes());
        buffer.extend_from_slice(b",\"event_id\":");
        buffer.extend_from_slice(number.format(tracepoint.event().0).as_bytes());
        buffer.extend_from_slice(self.fragments.kind(tracepoint.tracepoint_type()));
        buffer.extend_from_slice(number.format(children).as_bytes());
        buffer.extend_from_slice(
            self.fragments
                .location(context, tracepoint.header.code_location),
        );
        let mut incomplete = false;
        if let TracepointBody::MethodCall { method, flags, .. } = &tracepoint.body {
            if let Some(method) = self.fragments.method(context, *method) {
                buffer.extend_from_slice(method);
            }
            incomplete = flags & 1 != 0;
        }
        if incomplete {
            buffer.extend_from_slice(b",\"incomplete\":true");
        }
        if tracepoint.is_container() && footer.is_none() {
            buffer.extend_from_slice(b",\"unfinished\":true");
        }
        if let Some(samples) = tracepoint.sample_count(footer) {
            buffer.extend_from_slice(b",\"samples\":");
            buffer.extend_from_slice(number.format(samples).as_bytes());
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
