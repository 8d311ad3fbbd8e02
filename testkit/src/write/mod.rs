//! Helpers of the writer tests: a tree of tracepoints described by name
//! (what a caller records, and what a loaded trace resolves back to), and a
//! checker of the dump layout rules of `FORMAT-NOTES.md`.

pub mod strategies;

use std::collections::HashSet;

use tracetree::TraceBytes;
use tracetree::common::{EventId, LogicalOffset};
use tracetree::lowlevel::{DecodedBlock, IndexCell, Object, ObjectKind};

use crate::layout::{FILE_HEADER_LEN, INDEX_FOOTER_LEN};
use tracetree::model::{AccessLocation, TracepointBody, Value};
use tracetree::read::{EagerTrace, NodeId};
use tracetree::tree::TraceTree;
use tracetree::write::{
    BreakpointSpec, CallOutcome, CallSpec, CodeLocationSpec, DumpOptions, DumpWriter, FieldSpec,
    MethodSpec, ThreadRecorder, TraceRecorder, ValueSpec, VariableSpec,
};
use tracetree::{Error, Result};

/// A leaf tracepoint, owning its specs.
#[derive(Debug, Clone, PartialEq)]
pub enum Leaf {
    ReadArray(ValueSpec<'static>, i32, ValueSpec<'static>),
    WriteArray(ValueSpec<'static>, i32, ValueSpec<'static>),
    ReadLocal(VariableSpec<'static>, ValueSpec<'static>),
    WriteLocal(VariableSpec<'static>, ValueSpec<'static>),
    ReadField(FieldSpec<'static>, ValueSpec<'static>, ValueSpec<'static>),
    WriteField(FieldSpec<'static>, ValueSpec<'static>, ValueSpec<'static>),
    Breakpoint(BreakpointSpec<'static>),
    Throw(ValueSpec<'static>),
    Catch(ValueSpec<'static>),
}

impl Leaf {
    /// Records the leaf through the recorder method of its kind.
    pub fn record(
        &self,
        t: &mut impl ThreadRecorder,
        at: Option<&CodeLocationSpec<'_>>,
    ) -> Result<EventId> {
        match self {
            Leaf::ReadArray(array, index, value) => {
                t.read_array(at, array.clone(), *index, value.clone())
            }
            Leaf::WriteArray(array, index, value) => {
                t.write_array(at, array.clone(), *index, value.clone())
            }
            Leaf::ReadLocal(variable, value) => t.read_local(at, variable, value.clone()),
            Leaf::WriteLocal(variable, value) => t.write_local(at, variable, value.clone()),
            Leaf::ReadField(field, receiver, value) => {
                t.read_field(at, field, receiver.clone(), value.clone())
            }
            Leaf::WriteField(field, receiver, value) => {
                t.write_field(at, field, receiver.clone(), value.clone())
            }
            Leaf::Breakpoint(breakpoint) => t.breakpoint(at, breakpoint.clone()),
            Leaf::Throw(exception) => t.throw(at, exception.clone()),
            Leaf::Catch(exception) => t.catch(at, exception.clone()),
        }
    }
}

/// A tracepoint and everything under it, by name.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Call {
        at: Option<CodeLocationSpec<'static>>,
        method: MethodSpec<'static>,
        receiver: ValueSpec<'static>,
        arguments: Vec<ValueSpec<'static>>,
        incomplete: bool,
        children: Vec<Node>,
        outcome: CallOutcome<'static>,
    },
    Loop {
        at: Option<CodeLocationSpec<'static>>,
        loop_id: i32,
        iterations: Vec<Vec<Node>>,
        count: i32,
    },
    Leaf {
        at: Option<CodeLocationSpec<'static>>,
        leaf: Leaf,
    },
}

impl Node {
    /// How many tracepoints the subtree has.
    pub fn size(&self) -> usize {
        match self {
            Node::Call { children, .. } => 1 + children.iter().map(Node::size).sum::<usize>(),
            Node::Loop { iterations, .. } => {
                1 + iterations
                    .iter()
                    .map(|children| 1 + children.iter().map(Node::size).sum::<usize>())
                    .sum::<usize>()
            }
            Node::Leaf { .. } => 1,
        }
    }
}

/// A thread by name, and its top-level tracepoints.
#[derive(Debug, Clone, PartialEq)]
pub struct Thread {
    pub name: String,
    pub roots: Vec<Node>,
}

/// Records `node` and its subtree, collecting event ids in pre-order.
pub fn record<T: ThreadRecorder>(t: &mut T, node: &Node, events: &mut Vec<EventId>) -> Result<()> {
    match node {
        Node::Call {
            at,
            method,
            receiver,
            arguments,
            incomplete,
            children,
            outcome,
        } => {
            let call = CallSpec {
                method,
                receiver: receiver.clone(),
                arguments: arguments.clone(),
                incomplete: *incomplete,
            };
            events.push(t.enter_call(at.as_ref(), call)?);
            for child in children {
                record(t, child, events)?;
            }
            t.exit_call(outcome.clone())
        }
        Node::Loop {
            at,
            loop_id,
            iterations,
            count,
        } => {
            events.push(t.enter_loop(at.as_ref(), *loop_id)?);
            for children in iterations {
                events.push(t.enter_iteration()?);
                for child in children {
                    record(t, child, events)?;
                }
                t.exit_iteration()?;
            }
            t.exit_loop(*count)
        }
        Node::Leaf { at, leaf } => {
            events.push(leaf.record(t, at.as_ref())?);
            Ok(())
        }
    }
}

/// Records `threads` one after the other through any writer; returns the
/// event ids the recorder returned, in pre-order per thread.
pub fn record_threads<R: TraceRecorder>(
    writer: &mut R,
    threads: &[Thread],
) -> Result<Vec<EventId>> {
    let mut events = Vec::new();
    for thread in threads {
        let id = writer.add_thread(thread.name.as_str())?;
        let mut t = writer.thread(id)?;
        for root in &thread.roots {
            record(&mut t, root, &mut events)?;
        }
    }
    Ok(events)
}

/// Writes `threads` with a dump writer; returns the files and the event ids
/// the recorder returned, in pre-order per thread.
pub fn write(threads: &[Thread], options: DumpOptions) -> Result<(Vec<u8>, Vec<u8>, Vec<EventId>)> {
    let mut writer = DumpWriter::with_options(options);
    let events = record_threads(&mut writer, threads)?;
    let (data, index) = writer.to_bytes()?;
    Ok((data, index, events))
}

/// The tree under `node`, resolved to names through the trace's context.
pub fn resolve(trace: &EagerTrace, node: NodeId) -> Result<Node> {
    let context = trace.context();
    let eager = trace.node(node);
    let tracepoint = eager.tracepoint();
    let footer = eager.footer();
    let header = &tracepoint.header;
    let at = CodeLocationSpec::from_id(header.code_location, context)?;
    let value = |v: &Value<'_>| ValueSpec::from_value(v, context);
    let children = || {
        eager
            .children()
            .iter()
            .map(|&child| resolve(trace, child))
            .collect::<Result<Vec<_>>>()
    };
    let leaf = |leaf| {
        Ok(Node::Leaf {
            at: at.clone(),
            leaf,
        })
    };
    match &tracepoint.body {
        TracepointBody::MethodCall {
            method,
            receiver,
            arguments,
            flags,
        } => {
            let footer = footer
                .as_ref()
                .ok_or_else(|| unwritable("call without footer"))?;
            Ok(Node::Call {
                at: at.clone(),
                method: MethodSpec::from_id(*method, context)?,
                receiver: value(receiver)?,
                arguments: arguments.iter().map(value).collect::<Result<_>>()?,
                incomplete: flags & 1 != 0,
                children: children()?,
                outcome: CallOutcome::from_footer(footer, context)?
                    .ok_or_else(|| unwritable("call closed by another footer"))?,
            })
        }
        TracepointBody::Loop { loop_id } => {
            let mut iterations = Vec::new();
            for (index, &child) in eager.children().iter().enumerate() {
                let iteration = trace.node(child);
                let iteration_tracepoint = iteration.tracepoint();
                let TracepointBody::LoopIteration {
                    loop_id: id,
                    iteration: number,
                } = iteration_tracepoint.body
                else {
                    return Err(unwritable("a loop child that is no iteration"));
                };
                assert_eq!(id, *loop_id, "iteration of another loop");
                assert_eq!(number as usize, index, "iterations numbered from 0");
                assert_eq!(
                    iteration_tracepoint.header.code_location, header.code_location,
                    "an iteration takes its loop's code location"
                );
                iterations.push(
                    iteration
                        .children()
                        .iter()
                        .map(|&c| resolve(trace, c))
                        .collect::<Result<Vec<_>>>()?,
                );
            }
            let count = match &footer {
                Some(tracetree::model::Footer::Loop { iterations }) => *iterations,
                other => return Err(unwritable(&format!("loop footer {other:?}"))),
            };
            Ok(Node::Loop {
                at,
                loop_id: *loop_id,
                iterations,
                count,
            })
        }
        TracepointBody::LoopIteration { .. } => Err(unwritable("an iteration outside a loop")),
        TracepointBody::ReadArray {
            array,
            index,
            value: v,
        } => leaf(Leaf::ReadArray(value(array)?, *index, value(v)?)),
        TracepointBody::WriteArray {
            array,
            index,
            value: v,
        } => leaf(Leaf::WriteArray(value(array)?, *index, value(v)?)),
        TracepointBody::ReadLocal { variable, value: v } => leaf(Leaf::ReadLocal(
            VariableSpec::from_id(*variable, context)?,
            value(v)?,
        )),
        TracepointBody::WriteLocal { variable, value: v } => leaf(Leaf::WriteLocal(
            VariableSpec::from_id(*variable, context)?,
            value(v)?,
        )),
        TracepointBody::ReadField {
            field,
            receiver,
            value: v,
        } => leaf(Leaf::ReadField(
            FieldSpec::from_id(*field, context)?,
            value(receiver)?,
            value(v)?,
        )),
        TracepointBody::WriteField {
            field,
            receiver,
            value: v,
        } => leaf(Leaf::WriteField(
            FieldSpec::from_id(*field, context)?,
            value(receiver)?,
            value(v)?,
        )),
        TracepointBody::SnapshotBreakpoint {
            uuid_high,
            uuid_low,
            stack,
            millis,
            values,
            trace_id,
        } => leaf(Leaf::Breakpoint(BreakpointSpec {
            uuid: ((*uuid_high as u64 as u128) << 64) | (*uuid_low as u64 as u128),
            stack: stack
                .iter()
                .map(|&frame| CodeLocationSpec::from_id(frame, context))
                .collect::<Result<_>>()?,
            millis: *millis,
            values: values.iter().map(value).collect::<Result<_>>()?,
            trace_id: trace_id.clone().map(|id| id.into_owned()),
        })),
        TracepointBody::Throw { exception } => leaf(Leaf::Throw(value(exception)?)),
        TracepointBody::Catch { exception } => leaf(Leaf::Catch(value(exception)?)),
    }
}

/// Every thread of a loaded trace, resolved to names, and its event ids in
/// pre-order.
pub fn load(data: Vec<u8>) -> Result<(Vec<Thread>, Vec<EventId>)> {
    let trace = EagerTrace::load(TraceBytes::from_vec(data))?;
    assert!(trace.report().is_complete(), "{:?}", trace.report());
    let mut threads = Vec::new();
    for thread in trace.threads() {
        let name = trace
            .context()
            .thread_name(thread.id)
            .map(|name| name.decode().into_owned())
            .unwrap_or_default();
        let roots = trace
            .roots(thread.id)?
            .iter()
            .map(|&root| resolve(&trace, root))
            .collect::<Result<_>>()?;
        threads.push(Thread { name, roots });
    }
    // Each thread's tree in pre-order, threads ascending (a streamed file
    // interleaves threads' blocks, so file order is not that).
    let mut events = Vec::new();
    for thread in trace.threads() {
        let mut stack: Vec<NodeId> = trace.roots(thread.id)?.into_iter().rev().collect();
        while let Some(node) = stack.pop() {
            let node = trace.node(node);
            events.push(node.tracepoint().event());
            stack.extend(node.children().iter().rev());
        }
    }
    Ok((threads, events))
}

/// The reference objects an object refers to by id, in no particular order.
pub fn references(object: &Object<'_>) -> Vec<(ObjectKind, i32)> {
    fn value(v: &Value<'_>, out: &mut Vec<(ObjectKind, i32)>) {
        match v {
            Value::Object { class, fields, .. } => {
                out.push((ObjectKind::ClassDescriptor, class.get()));
                fields.iter().for_each(|(_, f)| value(f, out));
            }
            Value::Array {
                class, elements, ..
            } => {
                out.push((ObjectKind::ClassDescriptor, class.get()));
                elements.iter().for_each(|e| value(e, out));
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    let code_location = |id: i32, out: &mut Vec<(ObjectKind, i32)>| {
        if id != -1 {
            out.push((ObjectKind::CodeLocation, id));
        }
    };
    match object {
        Object::MethodDescriptor(m) => out.push((ObjectKind::ClassDescriptor, m.class.get())),
        Object::FieldDescriptor(f) => out.push((ObjectKind::ClassDescriptor, f.class.get())),
        Object::AccessPath(p) => {
            for location in &p.locations {
                out.push(match *location {
                    AccessLocation::Local(v) => (ObjectKind::VariableDescriptor, v.get()),
                    AccessLocation::StaticField(f) | AccessLocation::ObjectField(f) => {
                        (ObjectKind::FieldDescriptor, f.get())
                    }
                    AccessLocation::ArrayElementByName(p) => (ObjectKind::AccessPath, p.get()),
                    AccessLocation::ArrayIndex(_) => continue,
                });
            }
        }
        Object::CodeLocation(l) => {
            let strings = [l.file_name, l.class_name, l.method_name]
                .into_iter()
                .chain(l.locals.iter().map(|local| local.name));
            for s in strings {
                if s.get() != -1 {
                    out.push((ObjectKind::String, s.get()));
                }
            }
            for path in l
                .access_path
                .iter()
                .chain(l.argument_paths.iter().flatten())
            {
                out.push((ObjectKind::AccessPath, path.get()));
            }
        }
        Object::Tracepoint(tp) => {
            code_location(tp.header.code_location.get(), &mut out);
            match &tp.body {
                TracepointBody::MethodCall {
                    method,
                    receiver,
                    arguments,
                    ..
                } => {
                    out.push((ObjectKind::MethodDescriptor, method.get()));
                    value(receiver, &mut out);
                    arguments.iter().for_each(|a| value(a, &mut out));
                }
                TracepointBody::ReadArray {
                    array, value: v, ..
                }
                | TracepointBody::WriteArray {
                    array, value: v, ..
                } => {
                    value(array, &mut out);
                    value(v, &mut out);
                }
                TracepointBody::ReadLocal { variable, value: v }
                | TracepointBody::WriteLocal { variable, value: v } => {
                    out.push((ObjectKind::VariableDescriptor, variable.get()));
                    value(v, &mut out);
                }
                TracepointBody::ReadField {
                    field,
                    receiver,
                    value: v,
                }
                | TracepointBody::WriteField {
                    field,
                    receiver,
                    value: v,
                } => {
                    out.push((ObjectKind::FieldDescriptor, field.get()));
                    value(receiver, &mut out);
                    value(v, &mut out);
                }
                TracepointBody::SnapshotBreakpoint { stack, values, .. } => {
                    stack.iter().for_each(|l| code_location(l.get(), &mut out));
                    values.iter().for_each(|v| value(v, &mut out));
                }
                TracepointBody::Throw { exception } | TracepointBody::Catch { exception } => {
                    value(exception, &mut out)
                }
                TracepointBody::Loop { .. } | TracepointBody::LoopIteration { .. } => {}
            }
        }
        Object::Footer(tracetree::model::Footer::MethodCall { result, .. }) => {
            value(result, &mut out)
        }
        _ => {}
    }
    out
}

/// Checks every layout rule of a dump: one block per thread, its id the
/// thread's position and its `THREAD_NAME` first; each reference object
/// written once, before the first object referring to it; one cell per
/// reference object (physical start; end = the block header's last byte),
/// one per container (logical start after its header, logical footer
/// offset) when its footer is written, the block's `BLOCK_START` cell after
/// its other cells; `EOF`; and the index footer.
pub fn check_dump_layout(data: &[u8], index: &[u8]) {
    let (cells, has_footer) = IndexCell::parse_file(index).expect("index cells");
    assert!(has_footer, "index footer");
    let footer_at = index.len() - INDEX_FOOTER_LEN;
    let footer_cell = cell_at(&index[footer_at..]);

    let mut expected = Vec::new();
    let mut written: HashSet<(ObjectKind, i32)> = HashSet::new();
    let mut position = 0;
    let mut last_data_start: i64 = 0;
    let (blocks, error) = DecodedBlock::decode_all(data);
    assert_eq!(error, None, "the data decodes");
    for block in &blocks {
        assert_eq!(
            block.thread.get(),
            position,
            "block ids are thread positions"
        );
        let data_start = block.payload_start().get();
        last_data_start = data_start as i64;
        match block.objects.first() {
            Some((_, Object::ThreadName(name))) => assert_eq!(name.thread, block.thread),
            other => panic!("block {position} starts with {other:?}, not THREAD_NAME"),
        }
        let mut open: Vec<(EventId, u64)> = Vec::new();
        for (i, (offset, object)) in block.objects.iter().enumerate() {
            for reference in references(object) {
                assert!(
                    written.contains(&reference),
                    "{:?} used at {offset} before it is written",
                    reference
                );
            }
            let next = block.objects.get(i + 1).map_or(block.end, |o| o.0);
            match object {
                Object::Tracepoint(tp) if tp.is_container() => {
                    open.push((tp.event(), next.get() - data_start))
                }
                Object::Tracepoint(_) => {}
                Object::Footer(_) => {
                    let (event, start) = open.pop().expect("footer of an open container");
                    expected.push(IndexCell::Container {
                        event,
                        start: LogicalOffset::new(start),
                        end: LogicalOffset::new(offset.get() - data_start),
                    });
                }
                reference => {
                    let (kind, id) = (reference.kind(), reference.reference_id().unwrap());
                    assert!(written.insert((kind, id)), "{kind} {id} written twice");
                    expected.push(IndexCell::Reference {
                        kind,
                        id,
                        at: *offset,
                        end: data_start as i64 - 1,
                    });
                }
            }
        }
        assert!(
            open.is_empty(),
            "a dump block closes every container it opens"
        );
        expected.push(IndexCell::Block {
            thread: block.thread,
            start: block.start,
            end: block.end,
        });
        // The thread name is not shared: the next block writes its own.
        written.remove(&(ObjectKind::ThreadName, block.thread.get()));
        position += 1;
    }
    let eof = blocks
        .last()
        .map_or(FILE_HEADER_LEN, |block| block.end.get() + 1);
    assert_eq!(eof as usize, data.len() - 1, "EOF is the last byte");
    assert_eq!(data[data.len() - 1], ObjectKind::Eof as u8, "EOF");
    assert_eq!(cells, expected, "index cells");
    let eof = if position == 0 {
        -1
    } else {
        last_data_start - 1
    };
    assert_eq!(footer_cell, (ObjectKind::Eof, -1, eof, eof));
}

/// Decodes the cell at the start of `bytes`: kind, id, start, end.
fn cell_at(bytes: &[u8]) -> (ObjectKind, i32, i64, i64) {
    (
        ObjectKind::from_byte(bytes[0]).expect("cell kind"),
        i32::from_be_bytes(bytes[1..5].try_into().unwrap()),
        i64::from_be_bytes(bytes[5..13].try_into().unwrap()),
        i64::from_be_bytes(bytes[13..21].try_into().unwrap()),
    )
}

/// The error for a trace shape the builder API cannot write: `found`.
fn unwritable(found: &str) -> Error {
    Error::Unsupported {
        path: None,
        expected: "a tree the builder API writes",
        found: found.to_string(),
    }
}
