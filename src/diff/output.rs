//! The diff trace being written: tracepoints of either input re-interned
//! into the output's own reference objects (each input's ids translated once,
//! through the writer's pool, as the reference's cloner does), each with its
//! diff status and its entry in the id map.

use std::io::Write;

use rustc_hash::FxHashMap;

use crate::common::{ClassId, CodeLocationId, EventId, FieldId, MethodId, ThreadId, VariableId};
use crate::diff::bulk::reference_objects;
use crate::error::{Error, Result};
use crate::format::TraceContext;
use crate::model::{DiffStatus, Footer, Tracepoint, TracepointBody, Value};
use crate::read::RawSubtree;
use crate::write::{
    BuildTarget, CodeLocationSpec, FieldSpec, MethodSpec, StreamingThread, StreamingWriter,
    VariableSpec,
};

/// One input's ids translated into the output's: each reference object is
/// interned once, the first time a tracepoint of the input names it.
pub(crate) struct Reinterner<'c> {
    context: &'c TraceContext,
    methods: FxHashMap<MethodId, MethodId>,
    fields: FxHashMap<FieldId, FieldId>,
    variables: FxHashMap<VariableId, VariableId>,
    code_locations: FxHashMap<CodeLocationId, CodeLocationId>,
    classes: FxHashMap<ClassId, ClassId>,
}

impl<'c> Reinterner<'c> {
    /// A translation from `context`'s ids.
    pub(crate) fn new(context: &'c TraceContext) -> Self {
        Reinterner {
            context,
            methods: FxHashMap::default(),
            fields: FxHashMap::default(),
            variables: FxHashMap::default(),
            code_locations: FxHashMap::default(),
            classes: FxHashMap::default(),
        }
    }

    fn code_location(
        &mut self,
        id: CodeLocationId,
        out: &StreamingThread,
    ) -> Result<CodeLocationId> {
        if id.0 == -1 {
            return Ok(id);
        }
        if let Some(&id) = self.code_locations.get(&id) {
            return Ok(id);
        }
        let spec = CodeLocationSpec::from_id(id, self.context)?;
        let translated = out.pool().intern_code_location(spec.as_ref())?;
        self.code_locations.insert(id, translated);
        Ok(translated)
    }

    fn method(&mut self, id: MethodId, out: &StreamingThread) -> Result<MethodId> {
        if let Some(&id) = self.methods.get(&id) {
            return Ok(id);
        }
        let translated = out
            .pool()
            .intern_method(&MethodSpec::from_id(id, self.context)?)?;
        self.methods.insert(id, translated);
        Ok(translated)
    }

    fn field(&mut self, id: FieldId, out: &StreamingThread) -> Result<FieldId> {
        if let Some(&id) = self.fields.get(&id) {
            return Ok(id);
        }
        let translated = out
            .pool()
            .intern_field(&FieldSpec::from_id(id, self.context)?)?;
        self.fields.insert(id, translated);
        Ok(translated)
    }

    fn variable(&mut self, id: VariableId, out: &StreamingThread) -> Result<VariableId> {
        if let Some(&id) = self.variables.get(&id) {
            return Ok(id);
        }
        let translated = out
            .pool()
            .intern_variable(&VariableSpec::from_id(id, self.context)?)?;
        self.variables.insert(id, translated);
        Ok(translated)
    }

    fn class(&mut self, id: ClassId, out: &StreamingThread) -> Result<ClassId> {
        if let Some(&id) = self.classes.get(&id) {
            return Ok(id);
        }
        let translated = out.pool().intern_class(&self.context.class(id)?.name)?;
        self.classes.insert(id, translated);
        Ok(translated)
    }

    /// `value` given the output's class ids in place.
    fn translate_value(&mut self, value: &mut Value<'_>, out: &StreamingThread) -> Result<()> {
        match value {
            Value::Object { class, fields, .. } => {
                *class = self.class(*class, out)?;
                for (_, value) in fields.iter_mut() {
                    self.translate_value(value, out)?;
                }
            }
            Value::Array {
                class, elements, ..
            } => {
                *class = self.class(*class, out)?;
                self.translate_values(elements, out)?;
            }
            _ => {}
        }
        Ok(())
    }

    fn translate_values(&mut self, values: &mut [Value<'_>], out: &StreamingThread) -> Result<()> {
        values
            .iter_mut()
            .try_for_each(|value| self.translate_value(value, out))
    }

    /// `body` given the output's ids in place.
    fn translate_body(
        &mut self,
        body: &mut TracepointBody<'_>,
        out: &StreamingThread,
    ) -> Result<()> {
        match body {
            TracepointBody::MethodCall {
                method,
                receiver,
                arguments,
                ..
            } => {
                *method = self.method(*method, out)?;
                self.translate_value(receiver, out)?;
                self.translate_values(arguments, out)?;
            }
            TracepointBody::ReadArray { array, value, .. }
            | TracepointBody::WriteArray { array, value, .. } => {
                self.translate_value(array, out)?;
                self.translate_value(value, out)?;
            }
            TracepointBody::ReadLocal { variable, value }
            | TracepointBody::WriteLocal { variable, value } => {
                *variable = self.variable(*variable, out)?;
                self.translate_value(value, out)?;
            }
            TracepointBody::ReadField {
                field,
                receiver,
                value,
            }
            | TracepointBody::WriteField {
                field,
                receiver,
                value,
            } => {
                *field = self.field(*field, out)?;
                self.translate_value(receiver, out)?;
                self.translate_value(value, out)?;
            }
            TracepointBody::Loop { .. } | TracepointBody::LoopIteration { .. } => {}
            TracepointBody::SnapshotBreakpoint { stack, values, .. } => {
                for frame in stack.iter_mut() {
                    *frame = self.code_location(*frame, out)?;
                }
                self.translate_values(values, out)?;
            }
            TracepointBody::Throw { exception } | TracepointBody::Catch { exception } => {
                self.translate_value(exception, out)?;
            }
        }
        Ok(())
    }

    /// A container's footer, owned, given the output's ids in place (a
    /// call that never returned: the recorder's unfinished-method result).
    pub(crate) fn translate_footer(
        &mut self,
        footer: Option<Footer<'static>>,
        out: &StreamingThread,
    ) -> Result<Footer<'static>> {
        Ok(match footer {
            Some(mut footer) => {
                if let Footer::MethodCall { result, .. } = &mut footer {
                    self.translate_value(result, out)?;
                }
                footer
            }
            None => Footer::unfinished_method(),
        })
    }

    /// A container's footer with the output's ids; a call that never
    /// returned gets the recorder's unfinished-method result.
    pub(crate) fn footer(
        &mut self,
        footer: Option<&Footer<'_>>,
        out: &StreamingThread,
    ) -> Result<Footer<'static>> {
        self.translate_footer(footer.map(|f| f.clone().into_owned()), out)
    }
}

/// One diff thread being written: its tracepoints, numbered from the
/// diff's counter, and their lines of the id map.
pub(crate) struct ThreadOut<'w, W: Write> {
    pub(crate) thread: StreamingThread,
    pub(crate) id: ThreadId,
    pub(crate) next_event: &'w mut i64,
    pub(crate) idmap: &'w mut W,
    /// Whether subtrees are copied as their bytes ([`copy_raw`](Self::copy_raw)).
    pub(crate) raw: Option<RawCopy<'w>>,
}

/// What copying subtrees as their bytes needs: the inputs' tables agree
/// and the output's pool holds every object of both under its own id
/// ([`seed_pool`]), so that the bytes of either input name in the output
/// what they name in it. The copying input's objects are written into a
/// thread before its first such copy (the bytes do not say which they
/// name), so only a subtree at least as large as them is copied first.
pub(crate) struct RawCopy<'c> {
    context: &'c TraceContext,
    table_bytes: u64,
    written: bool,
}

impl<'c> RawCopy<'c> {
    /// Copies from the input of `context` ([`seed_pool`]'s table bytes).
    pub(crate) fn new(context: &'c TraceContext, table_bytes: u64) -> Self {
        RawCopy {
            context,
            table_bytes,
            written: false,
        }
    }
}

/// Puts every reference object of `left` and `right` (whose tables agree)
/// into the pool of `out` under its own id; the encoded bytes of the
/// right's objects.
pub(crate) fn seed_pool(
    out: &StreamingWriter,
    left: &TraceContext,
    right: &TraceContext,
) -> Result<u64> {
    if !std::ptr::eq(left, right) {
        reference_objects(left, |object, _| out.add_reference(object))?;
    }
    let mut bytes = 0;
    reference_objects(right, |object, len| {
        bytes += len;
        out.add_reference(object)
    })?;
    Ok(bytes)
}

/// Takes the next event id of `next_event` and writes its id-map line.
fn take_event(
    next_event: &mut i64,
    idmap: &mut impl Write,
    left: Option<EventId>,
    right: Option<EventId>,
) -> Result<EventId> {
    let event =
        i32::try_from(*next_event).map_err(|_| Error::limit("event ids", *next_event, i32::MAX))?;
    *next_event += 1;
    let mut line = [0u8; 8];
    line[..4].copy_from_slice(&left.map_or(-1, |e| e.0).to_be_bytes());
    line[4..].copy_from_slice(&right.map_or(-1, |e| e.0).to_be_bytes());
    idmap.write_all(&line)?;
    Ok(EventId(event))
}

impl<W: Write> ThreadOut<'_, W> {
    /// Takes the next event id and writes its id-map line.
    fn event(&mut self, left: Option<EventId>, right: Option<EventId>) -> Result<EventId> {
        take_event(self.next_event, self.idmap, left, right)
    }

    /// Writes `subtree`, of the right input, as unchanged from its bytes,
    /// each tracepoint's ids patched in (its left event from `left`, given
    /// its right one); how many tracepoints it wrote, or `None`, having
    /// written nothing, where bytes are not copied (the tables differ, or
    /// the thread's first copy is smaller than them).
    pub(crate) fn copy_raw(
        &mut self,
        mut subtree: RawSubtree<'_>,
        mut left: impl FnMut(EventId) -> Result<EventId>,
    ) -> Result<Option<u64>> {
        let Some(raw) = &mut self.raw else {
            return Ok(None);
        };
        if !raw.written {
            if subtree.remaining() < raw.table_bytes {
                return Ok(None);
            }
            let thread = &mut self.thread;
            reference_objects(raw.context, |object, _| thread.push_reference(object))?;
            raw.written = true;
        }
        let (next_event, idmap) = (&mut *self.next_event, &mut *self.idmap);
        let count = self.thread.push_raw_subtree(
            || subtree.next_object(),
            DiffStatus::Unchanged,
            |right| take_event(next_event, idmap, Some(left(right)?), Some(right)),
        )?;
        Ok(Some(count))
    }

    /// Writes a copy of `tracepoint` (from the input `from` translates)
    /// with `status`; `left` and `right` are its id-map line.
    pub(crate) fn copy(
        &mut self,
        from: &mut Reinterner<'_>,
        tracepoint: &Tracepoint<'_>,
        status: DiffStatus,
        left: Option<EventId>,
        right: Option<EventId>,
    ) -> Result<EventId> {
        self.copy_owned(from, &mut tracepoint.clone(), status, left, right)
    }

    /// Writes `tracepoint` (from the input `from` translates) with
    /// `status`, translating its ids in place; `left` and `right` are its
    /// id-map line.
    pub(crate) fn copy_owned(
        &mut self,
        from: &mut Reinterner<'_>,
        tracepoint: &mut Tracepoint<'_>,
        status: DiffStatus,
        left: Option<EventId>,
        right: Option<EventId>,
    ) -> Result<EventId> {
        let header = &mut tracepoint.header;
        header.code_location = from.code_location(header.code_location, &self.thread)?;
        from.translate_body(&mut tracepoint.body, &self.thread)?;
        let event = self.event(left, right)?;
        let header = &mut tracepoint.header;
        (header.thread, header.event, header.diff_status) = (self.id, event, status);
        tracepoint.child_diff_statuses.clear();
        self.thread.push_tracepoint(tracepoint)?;
        Ok(event)
    }

    /// Writes the virtual root `<diff>.<root>()` that holds a thread whose
    /// roots differ.
    pub(crate) fn virtual_root(&mut self) -> Result<EventId> {
        let method = self.thread.pool().intern_method(&MethodSpec::new(
            "<diff>",
            "<root>",
            Vec::new(),
            crate::model::Type::Void,
        ))?;
        let event = self.event(None, None)?;
        self.thread
            .push_tracepoint(&Tracepoint::bare_call(self.id, event, method))?;
        Ok(event)
    }

    /// Closes the innermost open container.
    pub(crate) fn close(&mut self, footer: &Footer<'_>) -> Result<()> {
        self.thread.push_footer(footer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::bulk::reference_objects;
    use crate::model::Footer;
    use crate::read::{LazyTraceReader, Visit, VisitDetail};
    use crate::tree::TraceTree;

    /// Each thread's tracepoints in pre-order, with depth and footer.
    fn nodes(
        trace: &LazyTraceReader,
    ) -> Vec<Vec<(usize, Tracepoint<'static>, Option<Footer<'static>>)>> {
        trace
            .thread_ids()
            .into_iter()
            .map(|thread| {
                let roots = TraceTree::roots(trace, thread).unwrap();
                let mut nodes = Vec::new();
                trace
                    .walk_visit(&roots, None, VisitDetail::default(), |step| {
                        if let Visit::Node {
                            depth,
                            tracepoint,
                            footer,
                            ..
                        } = step
                        {
                            let footer = footer.map(|f| f.clone().into_owned());
                            nodes.push((depth, tracepoint.clone().into_owned(), footer));
                        }
                        Ok(())
                    })
                    .unwrap();
                nodes
            })
            .collect()
    }

    /// A trace's subtrees copied as their bytes, over a pool seeded with
    /// its objects, are its subtrees with the thread, event ids and status
    /// given, and child diff statuses dropped; the copy's index finds them.
    #[cfg(feature = "generate")]
    #[test]
    fn subtrees_copied_as_bytes_are_the_subtrees_renumbered() {
        let scratch = tempfile::tempdir().unwrap();
        let (input, output) = (
            scratch.path().join("in.trace"),
            scratch.path().join("out.trace"),
        );
        crate::generate::samples::all_types()
            .unwrap()
            .save(&input)
            .unwrap();
        let reader = LazyTraceReader::open(&input).unwrap();
        let writer = StreamingWriter::create(&output).unwrap();
        seed_pool(&writer, reader.context(), reader.context()).unwrap();
        let mut copied = 0;
        for (n, thread) in reader.thread_ids().into_iter().enumerate() {
            let mut out = writer
                .new_thread_with_id(ThreadId(n as i32 + 5), "copy")
                .unwrap();
            reference_objects(reader.context(), |object, _| out.push_reference(object)).unwrap();
            for root in TraceTree::roots(&reader, thread).unwrap() {
                let mut subtree = reader.raw_subtree(root).unwrap().unwrap();
                copied += out
                    .push_raw_subtree(
                        || subtree.next_object(),
                        DiffStatus::Unchanged,
                        |event| Ok(EventId(event.0 + 1000)),
                    )
                    .unwrap();
            }
            out.finish().unwrap();
        }
        writer.close().unwrap();
        let copy = LazyTraceReader::open(&output).unwrap();
        let (expected, found) = (nodes(&reader), nodes(&copy));
        assert_eq!(
            copied,
            expected.iter().map(Vec::len).sum::<usize>() as u64,
            "every tracepoint copied"
        );
        assert_eq!(expected.len(), found.len());
        for (n, (expected, found)) in expected.into_iter().zip(found).enumerate() {
            assert_eq!(expected.len(), found.len(), "thread {n}");
            for ((depth, mut tracepoint, footer), found) in expected.into_iter().zip(found) {
                let header = &mut tracepoint.header;
                header.thread = ThreadId(n as i32 + 5);
                header.event = EventId(header.event.0 + 1000);
                header.diff_status = DiffStatus::Unchanged;
                tracepoint.child_diff_statuses.clear();
                assert_eq!((depth, tracepoint, footer), found);
            }
        }
    }
}
