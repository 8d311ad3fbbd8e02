//! One thread's rows: two walks of its stream.
//!
//! A row's `subtree_end` (the last event id under it) is known only when
//! its subtree closes, long after the row itself in pre-order (a thread's
//! root closes last). So a first walk, of headers only, finds every
//! subtree's end from the depths of the nodes that follow it (a node's
//! subtree ends just before the next node no deeper than it) and writes
//! it at the row's ordinal into an unlinked temporary file, 4 bytes a row,
//! through a window of the latest rows. The second walk decodes every
//! tracepoint in pre-order, reads the ends back a window at a time, and
//! fills the columns (`columns`) a row group at a time, writing each
//! value's text straight into its column. Memory: the open nesting, the
//! names met, and one row group, whose buffers the next row group reuses.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use arrow_array::types::{Int32Type, Int64Type, UInt32Type};
use arrow_array::{ArrayRef, Int32Array, RecordBatch};
use arrow_schema::SchemaRef;
use rustc_hash::FxHashMap;

use crate::common::{CodeLocationId, MethodId, ThreadId};
use crate::error::{Error, Result};
use crate::format::TraceContext;
use crate::model::{Footer, SAMPLE_COUNT_FLAG, Tracepoint, TracepointBody, Type, Value};
use crate::print::TextFormatter;
use crate::print::jsonl::push_json_string;
use crate::read::{LazyTraceReader, WalkDetail};

use super::columns::{KeyedColumn, Numbers, Texts};

/// The most rows the columns are sized for up front (a larger row group
/// grows them as it fills).
const MAX_PRESIZED_ROWS: usize = 1 << 20;

/// Rows whose subtree ends are gathered in memory before being written.
const ENDS_WINDOW: usize = 1 << 16;

/// Finds the subtree end of every row of `thread` into an unlinked
/// temporary file (row `i`'s end at byte `4 i`); returns the file and the
/// row count.
pub(super) fn subtree_ends(reader: &LazyTraceReader, thread: ThreadId) -> Result<(File, u64)> {
    let file = tempfile::tempfile().map_err(|e| Error::io(std::env::temp_dir(), e))?;
    let mut ends = Ends {
        file: &file,
        base: 0,
        window: Vec::with_capacity(ENDS_WINDOW),
    };
    // Open nodes: (ordinal, depth).
    let mut open: Vec<(u64, usize)> = Vec::new();
    let mut ordinal = 0u64;
    let mut last_event = 0i32;
    reader.walk_thread(thread, WalkDetail::Headers, |walked| {
        while let Some(&(row, depth)) = open.last() {
            if depth < walked.depth {
                break;
            }
            ends.close(row, last_event)?;
            open.pop();
        }
        ends.open()?;
        open.push((ordinal, walked.depth));
        last_event = walked.header.event.0;
        ordinal += 1;
        Ok(true)
    })?;
    while let Some((row, _)) = open.pop() {
        ends.close(row, last_event)?;
    }
    ends.flush()?;
    Ok((file, ordinal))
}

/// Subtree ends on their way to the file: a window of the latest rows in
/// memory, written whole when full. A row still open then (one of the
/// nodes enclosing the window's end: a few) is written alone when it
/// closes.
struct Ends<'f> {
    file: &'f File,
    /// The first row of the window.
    base: u64,
    window: Vec<i32>,
}

impl Ends<'_> {
    /// Makes room for the next row.
    fn open(&mut self) -> Result<()> {
        if self.window.len() == ENDS_WINDOW {
            self.flush()?;
        }
        self.window.push(0);
        Ok(())
    }

    fn close(&mut self, row: u64, end: i32) -> Result<()> {
        match row.checked_sub(self.base) {
            Some(i) => self.window[i as usize] = end,
            None => self.write_at(row, &end.to_le_bytes())?,
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        let bytes: Vec<u8> = self.window.iter().flat_map(|e| e.to_le_bytes()).collect();
        self.write_at(self.base, &bytes)?;
        self.base += self.window.len() as u64;
        self.window.clear();
        Ok(())
    }

    fn write_at(&self, row: u64, bytes: &[u8]) -> Result<()> {
        self.file
            .write_all_at(bytes, row * 4)
            .map_err(|e| Error::io(std::env::temp_dir(), e))
    }
}

/// Reads back, in row order, what [`subtree_ends`] wrote, a window of
/// rows at a time.
pub(super) struct EndReader {
    file: File,
    bytes: Vec<u8>,
    window: Vec<i32>,
    next: usize,
}

impl EndReader {
    pub(super) fn new(file: File) -> Self {
        EndReader {
            file,
            bytes: vec![0; ENDS_WINDOW * 4],
            window: Vec::with_capacity(ENDS_WINDOW),
            next: 0,
        }
    }

    #[inline]
    fn next(&mut self) -> Result<i32> {
        if self.next == self.window.len() {
            self.refill()?;
        }
        let end = self.window.get(self.next).copied();
        self.next += 1;
        end.ok_or_else(|| Error::Usage("fewer subtree ends than rows".into()))
    }

    /// Reads the next window (at least one row unless the file ends).
    fn refill(&mut self) -> Result<()> {
        let mut filled = 0;
        while filled < self.bytes.len() {
            match self.file.read(&mut self.bytes[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(std::env::temp_dir(), e)),
            }
        }
        self.window.clear();
        self.window.extend(
            self.bytes[..filled]
                .chunks_exact(4)
                .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        );
        self.next = 0;
        Ok(())
    }
}

/// A method's class, name and JVM descriptor.
type MethodNames = (Arc<str>, Arc<str>, Arc<str>);

/// A method's keys in the row group's class, method and descriptor
/// dictionaries.
type MethodKeys = [i32; 3];

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
    /// The open nesting: (event id, depth, children met so far).
    open: Vec<(i32, usize, u32)>,
    roots: u32,
    columns: Columns,
    /// Rows the columns are sized for.
    capacity: usize,
    text: String,
}

/// The columns of one row group.
struct Columns {
    rows: usize,
    event_id: Numbers<Int64Type>,
    parent_id: Numbers<Int64Type>,
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
    samples: Numbers<Int64Type>,
    /// Filled when the row group ends: every row has the same value.
    source_format: KeyedColumn,
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
            parent_id: Numbers::with_capacity(rows),
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
            samples: Numbers::with_capacity(rows),
            source_format: KeyedColumn::with_capacity(rows),
        }
    }
}

impl<'c> Rows<'c> {
    pub(super) fn new(
        context: &'c TraceContext,
        schema: SchemaRef,
        source_format: &'c str,
        row_group_rows: usize,
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
            open: Vec::new(),
            roots: 0,
            columns: Columns::with_capacity(row_group_rows.min(MAX_PRESIZED_ROWS)),
            capacity: row_group_rows.min(MAX_PRESIZED_ROWS),
            text: String::new(),
        }
    }

    /// Rows gathered since the last [`batch`](Self::batch).
    pub(super) fn len(&self) -> usize {
        self.columns.rows
    }

    /// Adds the row of one tracepoint at `depth` in its thread's tree
    /// (pre-order), its subtree's end read from `ends`.
    pub(super) fn push(
        &mut self,
        depth: usize,
        tracepoint: &Tracepoint<'_>,
        footer: Option<&Footer<'_>>,
        ends: &mut EndReader,
    ) -> Result<()> {
        while self.open.last().is_some_and(|&(_, d, _)| d >= depth) {
            self.open.pop();
        }
        let event = tracepoint.event().0;
        let (parent, index) = match self.open.last_mut() {
            Some((parent, _, children)) => {
                *children += 1;
                (Some(i64::from(*parent)), *children - 1)
            }
            None => {
                self.roots += 1;
                (None, self.roots - 1)
            }
        };
        self.open.push((event, depth, 0));
        let columns = &mut self.columns;
        columns.rows += 1;
        columns.event_id.push(i64::from(event));
        columns.parent_id.push_option(parent);
        columns.depth.push(depth as u32);
        columns.child_index.push(index);
        columns.subtree_end.push(i64::from(ends.next()?));
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
        columns.samples.push_option(tracepoint.sample_count(footer));
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

    /// The rows gathered as one batch; the columns start again, empty
    /// until [`recycle`](Self::recycle) gives them back their memory.
    pub(super) fn batch(&mut self) -> Result<RecordBatch> {
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
        ];
        self.method_keys.clear();
        self.location_keys.clear();
        self.kind_keys = [None; 16];
        RecordBatch::try_new(self.schema.clone(), arrays)
            .map_err(|e| Error::Usage(format!("building a Parquet row group: {e}")))
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
