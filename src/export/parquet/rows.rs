//! One thread's rows, filled by one walk of its stream.
//!
//! The walk decodes every tracepoint in pre-order and fills the columns
//! (`columns`) a row group at a time, writing each value's text straight
//! into its column. A row's `subtree_end` (the last event id under it) is
//! known when its subtree closes: when the walk meets the next node no
//! deeper than it, the end is the event id of the row before. The rows
//! whose subtrees are still open when their row group is written (the
//! nesting at that point: a few) ask the reader for their subtree's last
//! node ([`LazyTraceReader::last_descendant`]: a child count and a page of
//! children per level, cached; a node whose last child is the open row
//! below it ends where that one does). Memory: the open nesting, the
//! names met, and one row group, whose buffers the next row group reuses.

use std::sync::Arc;

use arrow_array::types::{Int32Type, Int64Type, UInt32Type};
use arrow_array::{ArrayRef, Int32Array, RecordBatch};
use arrow_schema::SchemaRef;
use rustc_hash::FxHashMap;

use crate::common::{CodeLocationId, EventId, MethodId};
use crate::error::{Error, Result};
use crate::format::TraceContext;
use crate::model::{Footer, SAMPLE_COUNT_FLAG, Tracepoint, TracepointBody, Type, Value};
use crate::print::TextFormatter;
use crate::print::jsonl::push_json_string;
use crate::read::{LazyNode, LazyTraceReader};
use crate::storage::diff_map::{DiffMap, DiffMapCursor};

use super::columns::{KeyedColumn, Numbers, OptionalNumbers, Texts};

/// The most rows the columns are sized for up front (a larger row group
/// grows them as it fills).
const MAX_PRESIZED_ROWS: usize = 1 << 20;

/// Lines of a diff's id map read at once (8 bytes each).
const ORIGINS_READ_AT_ONCE: usize = 8192;

/// A method's class, name and JVM descriptor.
type MethodNames = (Arc<str>, Arc<str>, Arc<str>);

/// A method's keys in the row group's class, method and descriptor
/// dictionaries.
type MethodKeys = [i32; 3];

/// A row whose subtree the walk has not left yet.
struct OpenRow {
    node: LazyNode,
    event: i32,
    depth: usize,
    /// Children met so far.
    children: u32,
    /// Its place in the row group being gathered; `None` once written.
    row: Option<usize>,
}

/// One thread's rows, a row group at a time.
pub(super) struct Rows<'c> {
    context: &'c TraceContext,
    schema: SchemaRef,
    source_format: &'c str,
    formatter: TextFormatter<'c>,
    methods: FxHashMap<MethodId, Option<MethodNames>>,
    locations: FxHashMap<CodeLocationId, (i32, Option<Arc<str>>)>,
    /// This row group's keys by method, code location (line, file key)
    /// and tracepoint type.
    method_keys: FxHashMap<MethodId, Option<MethodKeys>>,
    location_keys: FxHashMap<CodeLocationId, (i32, Option<i32>)>,
    kind_keys: [Option<i32>; 16],
    /// This row group's keys by diff status (`DiffStatus as i32 + 1`).
    diff_keys: [Option<i32>; 8],
    /// A diff's map back to its inputs, read in event order.
    origins: Option<DiffMapCursor<'c>>,
    /// The open nesting, outermost first.
    open: Vec<OpenRow>,
    /// The parent of the top-level rows ([`below`](Self::below)), and how
    /// many of its children (or of the thread's roots) came before.
    top_parent: Option<i64>,
    roots: u32,
    /// The event id of the row pushed last.
    last_event: i32,
    columns: Columns,
    /// Rows the columns are sized for.
    capacity: usize,
    text: String,
}

/// The columns of one row group.
struct Columns {
    rows: usize,
    event_id: Numbers<Int64Type>,
    parent_id: OptionalNumbers<Int64Type>,
    depth: Numbers<UInt32Type>,
    child_index: Numbers<UInt32Type>,
    subtree_end: Numbers<Int64Type>,
    kind: KeyedColumn,
    class: KeyedColumn,
    method: KeyedColumn,
    descriptor: KeyedColumn,
    file: KeyedColumn,
    line: Numbers<Int32Type>,
    result: Texts,
    exception: Texts,
    args: Texts,
    samples: OptionalNumbers<Int64Type>,
    /// Filled when the row group ends: every row has the same value.
    source_format: KeyedColumn,
    diff_status: KeyedColumn,
    left_event_id: OptionalNumbers<Int64Type>,
    right_event_id: OptionalNumbers<Int64Type>,
}

/// Bytes of text a row is expected to have in the `result` and `args`
/// columns, to size them.
const TEXT_BYTES_PER_ROW: usize = 8;

impl Columns {
    /// Columns sized for a row group of `rows`, so that filling them
    /// seldom grows and copies a buffer.
    fn with_capacity(rows: usize) -> Self {
        let text = || Texts::with_capacity(rows, rows * TEXT_BYTES_PER_ROW);
        Columns {
            rows: 0,
            event_id: Numbers::with_capacity(rows),
            parent_id: OptionalNumbers::with_capacity(rows),
            depth: Numbers::with_capacity(rows),
            child_index: Numbers::with_capacity(rows),
            subtree_end: Numbers::with_capacity(rows),
            kind: KeyedColumn::with_capacity(rows),
            class: KeyedColumn::with_capacity(rows),
            method: KeyedColumn::with_capacity(rows),
            descriptor: KeyedColumn::with_capacity(rows),
            file: KeyedColumn::with_capacity(rows),
            line: Numbers::with_capacity(rows),
            result: text(),
            exception: Texts::with_capacity(rows, 0),
            args: text(),
            samples: OptionalNumbers::with_capacity(rows),
            source_format: KeyedColumn::with_capacity(rows),
            diff_status: KeyedColumn::with_capacity(rows),
            left_event_id: OptionalNumbers::with_capacity(rows),
            right_event_id: OptionalNumbers::with_capacity(rows),
        }
    }
}

impl<'c> Rows<'c> {
    pub(super) fn new(
        context: &'c TraceContext,
        schema: SchemaRef,
        source_format: &'c str,
        row_group_rows: usize,
        diff_map: Option<&'c DiffMap>,
    ) -> Self {
        Rows {
            context,
            schema,
            source_format,
            formatter: TextFormatter::new(context, false),
            methods: FxHashMap::default(),
            locations: FxHashMap::default(),
            method_keys: FxHashMap::default(),
            location_keys: FxHashMap::default(),
            kind_keys: [None; 16],
            diff_keys: [None; 8],
            origins: diff_map.map(|map| map.cursor(ORIGINS_READ_AT_ONCE)),
            open: Vec::new(),
            top_parent: None,
            roots: 0,
            last_event: 0,
            columns: Columns::with_capacity(row_group_rows.min(MAX_PRESIZED_ROWS)),
            capacity: row_group_rows.min(MAX_PRESIZED_ROWS),
            text: String::new(),
        }
    }

    /// Makes the top-level rows the children of the event `parent` (none:
    /// the thread's roots), the first of them its child number `index`:
    /// for the rows of a subtree.
    pub(super) fn below(&mut self, parent: Option<i32>, index: usize) {
        self.top_parent = parent.map(i64::from);
        self.roots = u32::try_from(index).unwrap_or(u32::MAX);
    }

    /// Rows gathered since the last [`batch`](Self::batch).
    pub(super) fn len(&self) -> usize {
        self.columns.rows
    }

    /// Adds the row of `node`, a tracepoint at `depth` in its thread's tree
    /// (pre-order).
    pub(super) fn push(
        &mut self,
        node: LazyNode,
        depth: usize,
        tracepoint: &Tracepoint<'_>,
        footer: Option<&Footer<'_>>,
    ) -> Result<()> {
        self.close_deeper(depth);
        let event = tracepoint.event().0;
        let (parent, index) = match self.open.last_mut() {
            Some(open) => {
                open.children += 1;
                (Some(i64::from(open.event)), open.children - 1)
            }
            None => {
                self.roots += 1;
                (self.top_parent, self.roots - 1)
            }
        };
        let columns = &mut self.columns;
        self.open.push(OpenRow {
            node,
            event,
            depth,
            children: 0,
            row: Some(columns.rows),
        });
        self.last_event = event;
        columns.rows += 1;
        columns.event_id.push(i64::from(event));
        columns.parent_id.push(parent);
        columns.depth.push(depth as u32);
        columns.child_index.push(index);
        // Set when the subtree closes, or when the row group is written.
        columns.subtree_end.push(i64::from(event));
        let kind = tracepoint.tracepoint_type();
        let kind_key = match self.kind_keys[kind as usize] {
            Some(key) => key,
            None => {
                let key = columns.kind.key(&Arc::from(kind.name()))?;
                self.kind_keys[kind as usize] = Some(key);
                key
            }
        };
        columns.kind.push(Some(kind_key));
        let code_location = tracepoint.header.code_location;
        let (line, file) = match self.location_keys.get(&code_location) {
            Some(&keys) => keys,
            None => {
                let (line, file) = location(self.context, &mut self.locations, code_location);
                let file = file.map(|file| columns.file.key(&file)).transpose()?;
                let keys = (line, file);
                self.location_keys.insert(code_location, keys);
                keys
            }
        };
        columns.line.push(line);
        columns.file.push(file);
        columns.samples.push(tracepoint.sample_count(footer));
        let status = tracepoint.header.diff_status;
        // `None` is -1: the slots go from 0.
        let slot = (status as i32 + 1) as usize;
        let status_key = match (self.diff_keys[slot], status.name()) {
            (Some(key), _) => Some(key),
            (None, Some(name)) => {
                let key = columns.diff_status.key(&Arc::from(name))?;
                self.diff_keys[slot] = Some(key);
                Some(key)
            }
            (None, None) => None,
        };
        columns.diff_status.push(status_key);
        let origin = match &mut self.origins {
            Some(origins) => origins.event(tracepoint.event())?,
            None => None,
        };
        let side = |side: Option<EventId>| side.map(|event| i64::from(event.0));
        columns
            .left_event_id
            .push(origin.and_then(|o| side(o.left)));
        columns
            .right_event_id
            .push(origin.and_then(|o| side(o.right)));
        self.body(tracepoint, footer)
    }

    /// The columns that depend on the kind of tracepoint: the called
    /// method and its arguments, result and exception; the value a read
    /// returned (`result`) or a write stored (`args`).
    fn body(&mut self, tracepoint: &Tracepoint<'_>, footer: Option<&Footer<'_>>) -> Result<()> {
        let columns = &mut self.columns;
        let mut keys = None;
        let (mut result, mut exception, mut args) = (false, false, false);
        match &tracepoint.body {
            TracepointBody::MethodCall {
                method,
                arguments,
                flags,
                ..
            } => {
                let sampled = flags & SAMPLE_COUNT_FLAG != 0;
                keys = match self.method_keys.get(method) {
                    Some(&keys) => keys,
                    None => {
                        let names = method_names(self.context, &mut self.methods, *method);
                        let keys = match names {
                            Some((class, name, descriptor)) => Some([
                                columns.class.key(&class)?,
                                columns.method.key(&name)?,
                                columns.descriptor.key(&descriptor)?,
                            ]),
                            None => None,
                        };
                        self.method_keys.insert(*method, keys);
                        keys
                    }
                };
                json_texts(
                    &mut self.formatter,
                    &mut self.text,
                    columns.args.text(),
                    arguments,
                )?;
                args = true;
                if let Some(Footer::MethodCall {
                    result: value,
                    exception: thrown,
                }) = footer
                {
                    // A sample tree's count is the `samples` column.
                    if !sampled && !matches!(value, Value::Void) && thrown.is_empty() {
                        self.formatter.write_value(columns.result.text(), value)?;
                        result = true;
                    }
                    if !thrown.is_empty() {
                        columns.exception.text().push_str(&thrown.decode());
                        exception = true;
                    }
                }
            }
            TracepointBody::ReadArray { value, .. }
            | TracepointBody::ReadLocal { value, .. }
            | TracepointBody::ReadField { value, .. } => {
                self.formatter.write_value(columns.result.text(), value)?;
                result = true;
            }
            TracepointBody::WriteArray { value, .. }
            | TracepointBody::WriteLocal { value, .. }
            | TracepointBody::WriteField { value, .. } => {
                let values = std::slice::from_ref(value);
                json_texts(
                    &mut self.formatter,
                    &mut self.text,
                    columns.args.text(),
                    values,
                )?;
                args = true;
            }
            _ => {}
        }
        columns.class.push(keys.map(|k| k[0]));
        columns.method.push(keys.map(|k| k[1]));
        columns.descriptor.push(keys.map(|k| k[2]));
        for (column, written) in [
            (&mut columns.result, result),
            (&mut columns.exception, exception),
            (&mut columns.args, args),
        ] {
            if written {
                column.end()?;
            } else {
                column.push_null();
            }
        }
        Ok(())
    }

    /// Closes the subtrees of the open rows at `depth` or deeper: each
    /// ends at the row pushed last.
    pub(super) fn close_deeper(&mut self, depth: usize) {
        while let Some(open) = self.open.pop_if(|open| open.depth >= depth) {
            if let Some(row) = open.row {
                self.columns
                    .subtree_end
                    .set(row, i64::from(self.last_event));
            }
        }
    }

    /// Closes every open subtree: the walk has ended.
    pub(super) fn end_walk(&mut self) {
        self.close_deeper(0);
    }

    /// The rows gathered as one batch; the columns start again, empty
    /// until [`recycle`](Self::recycle) gives them back their memory. The
    /// rows of this group whose subtrees are still open find their ends
    /// in `reader`.
    pub(super) fn batch(&mut self, reader: &LazyTraceReader) -> Result<RecordBatch> {
        // Innermost first: a node whose last child is the open node below
        // it ends where that one does (one step, however deep the nesting).
        let mut deeper: Option<(LazyNode, i32)> = None;
        for open in self.open.iter_mut().rev() {
            // The rows of earlier groups (outer ones) are written already.
            let Some(row) = open.row.take() else { break };
            let end = match (reader.last_child(open.node)?, deeper) {
                (Some(child), Some((node, end))) if child == node => end,
                (Some(child), _) => {
                    let last = reader.last_descendant(child)?;
                    reader.node(last)?.tracepoint().event().0
                }
                (None, _) => open.event,
            };
            self.columns.subtree_end.set(row, i64::from(end));
            deeper = Some((open.node, end));
        }
        let c = &mut self.columns;
        if c.rows > 0 {
            let key = c.source_format.key(&Arc::from(self.source_format))?;
            c.source_format.push_n(key, c.rows);
        }
        c.rows = 0;
        let arrays: Vec<ArrayRef> = vec![
            c.event_id.finish(),
            c.parent_id.finish(),
            c.depth.finish(),
            c.child_index.finish(),
            c.subtree_end.finish(),
            c.kind.finish()?,
            c.class.finish()?,
            c.method.finish()?,
            c.descriptor.finish()?,
            c.file.finish()?,
            c.line.finish(),
            c.result.finish()?,
            c.exception.finish()?,
            c.args.finish()?,
            c.samples.finish(),
            c.source_format.finish()?,
            c.diff_status.finish()?,
            c.left_event_id.finish(),
            c.right_event_id.finish(),
        ];
        self.method_keys.clear();
        self.location_keys.clear();
        self.kind_keys = [None; 16];
        self.diff_keys = [None; 8];
        RecordBatch::try_new(self.schema.clone(), arrays)
            .map_err(|e| Error::internal(format!("building a Parquet row group: {e}")))
    }

    /// Gives the columns back the memory of `batch`, written and no longer
    /// needed, for the next row group.
    pub(super) fn recycle(&mut self, batch: RecordBatch) {
        let rows = self.capacity;
        let bytes = rows * TEXT_BYTES_PER_ROW;
        let c = &mut self.columns;
        let mut arrays = batch.columns().to_vec().into_iter();
        drop(batch);
        let mut next = || {
            arrays
                .next()
                .unwrap_or_else(|| Arc::new(Int32Array::from(Vec::<i32>::new())))
        };
        c.event_id.reclaim(next(), rows);
        c.parent_id.reclaim(next(), rows);
        c.depth.reclaim(next(), rows);
        c.child_index.reclaim(next(), rows);
        c.subtree_end.reclaim(next(), rows);
        c.kind.reclaim(next(), rows);
        c.class.reclaim(next(), rows);
        c.method.reclaim(next(), rows);
        c.descriptor.reclaim(next(), rows);
        c.file.reclaim(next(), rows);
        c.line.reclaim(next(), rows);
        c.result.reclaim(next(), rows, bytes);
        c.exception.reclaim(next(), rows, 0);
        c.args.reclaim(next(), rows, bytes);
        c.samples.reclaim(next(), rows);
        c.source_format.reclaim(next(), rows);
        c.diff_status.reclaim(next(), rows);
        c.left_event_id.reclaim(next(), rows);
        c.right_event_id.reclaim(next(), rows);
    }
}

/// A code location's line and file, cached.
fn location(
    context: &TraceContext,
    cache: &mut FxHashMap<CodeLocationId, (i32, Option<Arc<str>>)>,
    code_location: CodeLocationId,
) -> (i32, Option<Arc<str>>) {
    cache
        .entry(code_location)
        .or_insert_with(|| match context.code_location(code_location) {
            Ok(location) => {
                let file = context
                    .string(location.file_name)
                    .ok()
                    .map(|f| Arc::from(f.decode().as_ref()));
                (location.line, file)
            }
            Err(_) => (0, None),
        })
        .clone()
}

/// A method's class, name and descriptor, cached by method.
fn method_names(
    context: &TraceContext,
    cache: &mut FxHashMap<MethodId, Option<MethodNames>>,
    method: MethodId,
) -> Option<MethodNames> {
    cache
        .entry(method)
        .or_insert_with(|| {
            let method = context.method(method).ok()?;
            let class = context
                .class(method.class)
                .map(|c| c.name.decode().into_owned())
                .unwrap_or_default();
            let mut descriptor = String::from("(");
            for parameter in &method.parameter_types {
                push_descriptor(&mut descriptor, parameter);
            }
            descriptor.push(')');
            push_descriptor(&mut descriptor, &method.return_type);
            Some((
                Arc::from(class),
                Arc::from(method.name.decode().as_ref()),
                Arc::from(descriptor),
            ))
        })
        .clone()
}

/// Appends the JVM descriptor of `ty` (`I`, `[J`, `Ljava/lang/String;`).
fn push_descriptor(out: &mut String, ty: &Type<'_>) {
    match ty {
        Type::Array(element) => {
            out.push('[');
            push_descriptor(out, element);
        }
        Type::Boolean => out.push('Z'),
        Type::Byte => out.push('B'),
        Type::Char => out.push('C'),
        Type::Double => out.push('D'),
        Type::Float => out.push('F'),
        Type::Int => out.push('I'),
        Type::Long => out.push('J'),
        Type::Short => out.push('S'),
        Type::Void => out.push('V'),
        Type::Object(name) => {
            out.push('L');
            out.push_str(&name.decode().replace('.', "/"));
            out.push(';');
        }
    }
}

/// Values' texts as a JSON array of strings, appended to `json`.
fn json_texts(
    formatter: &mut TextFormatter<'_>,
    text: &mut String,
    json: &mut String,
    values: &[Value<'_>],
) -> Result<()> {
    json.push('[');
    for (i, value) in values.iter().enumerate() {
        if i > 0 {
            json.push(',');
        }
        text.clear();
        formatter.write_value(text, value)?;
        push_json_string(json, text);
    }
    json.push(']');
    Ok(())
}
