//! A trace as a Hive-partitioned Parquet dataset, for engines that scale
//! out (DuckDB, DataFusion, Spark).
//!
//! Layout: `DIR/trace=NAME/thread=N/part-K.parquet` (one row per
//! tracepoint, pre-order, which is event order within a thread) and
//! `DIR/trace=NAME/threads.parquet` (thread number, name, tracepoint
//! count), so that traces exported into one `DIR` form one dataset.
//! Columns, in order:
//!
//! | column | type | |
//! |---|---|---|
//! | `event_id` | int64 | the tracepoint's event id |
//! | `parent_id` | int64, null for roots | its parent's event id |
//! | `depth` | uint32 | 0 for a thread's top level |
//! | `child_index` | uint32 | its place among its parent's children (or the thread's roots) |
//! | `subtree_end` | int64 | the last event id under it (itself for a leaf): descendants are `event_id BETWEEN x.event_id + 1 AND x.subtree_end` within the thread |
//! | `kind` | dictionary string | `method_call`, `read_field`, … as `dump` names them |
//! | `class`, `method`, `descriptor` | dictionary strings, null but for calls | the called method (`a.b.C`, `name`, `(I)V`) |
//! | `file`, `line` | dictionary string, int32 | the code location (line 0 when unknown) |
//! | `result`, `exception` | nullable strings | a call's returned value or thrown exception's class as `print` shows them; the value a read returned |
//! | `args` | nullable string | a call's arguments, or the value a write stored, as a JSON array of printed values |
//! | `samples` | nullable int64 | the sample count of an imported sample tree's node |
//! | `source_format` | dictionary string | `v22`, or the format the trace was imported from |
//! | `diff_status` | dictionary string, null but in a diff | `unchanged`, `removed`, `added`, `edited_old`, `edited_new` |
//! | `left_event_id`, `right_event_id` | nullable int64 | in a packed diff, the inputs' events it was made from |
//!
//! Each thread is exported on its own rayon worker by one walk (`rows`),
//! row groups of `row_group_rows` rows compressed with zstd and streamed
//! to the file: the dictionary columns from the keys the rows carry
//! (`dictionary`), the others through the `parquet` crate's Arrow column
//! writers. With fewer threads than workers, each thread's row groups
//! are encoded and written on a thread of their own while the walk fills
//! the next (two row groups in memory; the walk and the encoding each get
//! a core). Progress is reported in bytes of the thread's stream (its
//! length known before the walk, its rows only after). A new part starts
//! every `ROW_GROUPS_PER_PART` (16) row groups. The partition is written
//! under a temporary name beside it and renamed into place only when
//! whole.

mod batches;
mod columns;
mod dictionary;
mod rows;

pub use batches::RecordBatches;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{channel, sync_channel};

use arrow_array::DictionaryArray;
use arrow_array::builder::{Int32Builder, Int64Builder, StringBuilder};
use arrow_array::types::Int32Type;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::arrow_writer::{ArrowRowGroupWriterFactory, compute_leaves};
use parquet::arrow::{ArrowSchemaConverter, ArrowWriter, add_encoded_arrow_schema_to_metadata};
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::SchemaDescriptor;
use rayon::prelude::*;

use crate::common::ThreadId;
use crate::error::{Error, Result};
use crate::read::{LazyNode, LazyTraceReader, WalkDetail, WalkNode};
use dictionary::DictionaryWriter;
use rows::Rows;

/// The zstd level of every page: the `parquet` crate's default (1).
fn zstd_level() -> ZstdLevel {
    ZstdLevel::default()
}

/// Row groups written to one part file before the next part starts.
pub(crate) const ROW_GROUPS_PER_PART: usize = 16;

/// What to export, and how: for [`ParquetOptions::export`] and
/// [`RecordBatches::new`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ParquetOptions {
    /// The partition's name: `trace=NAME`.
    pub trace_name: String,
    /// What the `source_format` column says (`v22`, `flow`, `jfr`, …).
    pub source_format: String,
    /// Rows per row group, and per record batch (at least 1).
    pub row_group_rows: usize,
    /// Only these threads (all when `None`).
    pub threads: Option<Vec<ThreadId>>,
    /// Only this node's subtree (its rows as its thread's export has
    /// them); `threads`, when also given, must hold its thread.
    pub root: Option<LazyNode>,
    /// Only these of the columns (the [module](self)'s table lists them),
    /// in this order (all when `None`).
    pub columns: Option<Vec<String>>,
    /// Replace an existing partition of the same name.
    pub force: bool,
}

impl ParquetOptions {
    /// The default rows per row group: 262,144.
    pub const DEFAULT_ROW_GROUP_ROWS: usize = 1 << 18;

    /// Options for a trace named `trace_name`, read from `source_format`.
    pub fn new(trace_name: impl Into<String>, source_format: impl Into<String>) -> Self {
        ParquetOptions {
            trace_name: trace_name.into(),
            source_format: source_format.into(),
            row_group_rows: Self::DEFAULT_ROW_GROUP_ROWS,
            threads: None,
            root: None,
            columns: None,
            force: false,
        }
    }
}

/// What an export wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParquetSummary {
    /// The partition `DIR/trace=NAME`.
    pub partition: PathBuf,
    /// Rows (tracepoints) by thread.
    pub rows: Vec<(ThreadId, u64)>,
    /// Bytes of Parquet written.
    pub bytes: u64,
}

/// The columns of a thread's rows.
pub(crate) fn schema() -> SchemaRef {
    let dictionary = || DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
    Arc::new(Schema::new(vec![
        Field::new("event_id", DataType::Int64, false),
        Field::new("parent_id", DataType::Int64, true),
        Field::new("depth", DataType::UInt32, false),
        Field::new("child_index", DataType::UInt32, false),
        Field::new("subtree_end", DataType::Int64, false),
        Field::new("kind", dictionary(), false),
        Field::new("class", dictionary(), true),
        Field::new("method", dictionary(), true),
        Field::new("descriptor", dictionary(), true),
        Field::new("file", dictionary(), true),
        Field::new("line", DataType::Int32, false),
        Field::new("result", DataType::Utf8, true),
        Field::new("exception", DataType::Utf8, true),
        Field::new("args", DataType::Utf8, true),
        Field::new("samples", DataType::Int64, true),
        Field::new("source_format", dictionary(), false),
        Field::new("diff_status", dictionary(), true),
        Field::new("left_event_id", DataType::Int64, true),
        Field::new("right_event_id", DataType::Int64, true),
    ]))
}

impl ParquetOptions {
    /// Exports `reader`'s trace into the dataset directory `dir`, threads
    /// in parallel; `progress` receives the bytes of the threads' streams
    /// read as their rows are written, which sum to the exported threads'
    /// [`ThreadInfo::bytes`](crate::read::ThreadInfo::bytes).
    pub fn export(
        &self,
        reader: &LazyTraceReader,
        dir: &Path,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<ParquetSummary> {
        export_parquet(reader, dir, self, progress)
    }
}

/// [`ParquetOptions::export`].
fn export_parquet(
    reader: &LazyTraceReader,
    dir: &Path,
    options: &ParquetOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<ParquetSummary> {
    let walks = selected_walks(reader, options)?;
    let (schema, projection) = projected_schema(options.columns.as_deref())?;
    let name = partition_name(&options.trace_name)?;
    let partition = dir.join(format!("trace={name}"));
    if partition.exists() && !options.force {
        return Err(Error::invalid(
            "output",
            format!(
                "{} exists (give --force to replace it)",
                partition.display()
            ),
        ));
    }
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |e| Error::io(path, e)
    };
    // The dataset's folder is made, not the folders above it (as a file's
    // are not).
    match std::fs::create_dir(dir) {
        Err(e) if !(e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir()) => {
            return Err(Error::io(dir, e));
        }
        _ => {}
    }
    let temporary = dir.join(format!(".trace={name}.tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&temporary);
    let _listed = crate::storage::TemporaryName::new(&temporary);
    std::fs::create_dir(&temporary).map_err(io(&temporary))?;
    // Fewer threads than workers: each also gets a writer thread.
    let pipelined = walks.len() < rayon::current_num_threads();
    let written = (|| {
        let rows: Vec<(ThreadId, u64, u64)> = walks
            .par_iter()
            .map(|&walk| {
                let columns = (&schema, projection.as_deref());
                export_thread(
                    reader, walk, &temporary, options, columns, pipelined, progress,
                )
            })
            .collect::<Result<_>>()?;
        let bytes = write_threads(reader, &rows, &temporary.join("threads.parquet"))?
            + rows.iter().map(|r| r.2).sum::<u64>();
        Ok((rows, bytes))
    })();
    let (rows, bytes) = match written {
        Ok(written) => written,
        Err(error) => {
            let _ = std::fs::remove_dir_all(&temporary);
            return Err(error);
        }
    };
    if partition.exists() {
        let old = dir.join(format!(".trace={name}.old-{}", std::process::id()));
        std::fs::rename(&partition, &old).map_err(io(&partition))?;
        let _ = std::fs::remove_dir_all(&old);
    }
    std::fs::rename(&temporary, &partition).map_err(io(&partition))?;
    Ok(ParquetSummary {
        partition,
        rows: rows.into_iter().map(|(t, r, _)| (t, r)).collect(),
        bytes,
    })
}

/// A trace name usable as a Hive partition value.
fn partition_name(name: &str) -> Result<String> {
    let clean: String = name
        .chars()
        .map(|c| match c {
            '/' | '\\' | '=' | '\0' => '_',
            c => c,
        })
        .collect();
    if clean.is_empty() || clean.starts_with('.') {
        return Err(Error::invalid(
            "trace name",
            format!("{name:?} cannot name a trace partition"),
        ));
    }
    Ok(clean)
}

/// Writes one thread's parts (or the rows of one subtree of it) into
/// `partition/thread=N/`, with the columns of `columns` (the schema, and
/// the full schema's indexes of its columns when projected); returns the
/// thread, its rows and the bytes written. `pipelined`: the row groups
/// are encoded and written on a thread of their own while the walk fills
/// the next (for when cores would otherwise be idle).
fn export_thread(
    reader: &LazyTraceReader,
    walk: Walk,
    partition: &Path,
    options: &ParquetOptions,
    (schema, projection): (&SchemaRef, Option<&[usize]>),
    pipelined: bool,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<(ThreadId, u64, u64)> {
    let thread = walk.thread(reader);
    let folder = partition.join(format!("thread={}", thread.0));
    std::fs::create_dir(&folder).map_err(|e| Error::io(&folder, e))?;
    let mut parts = Parts::new(folder, schema.clone(), options.row_group_rows)?;
    if !pipelined {
        let (format, group) = (&options.source_format, options.row_group_rows);
        let count = fill(reader, walk, format, group, progress, |batch, rows| {
            parts.write(&project(batch.clone(), projection)?)?;
            rows.recycle(batch);
            Ok(())
        })?;
        return Ok((thread, count, parts.finish()?));
    }
    std::thread::scope(|scope| {
        let (send, batches) = sync_channel::<RecordBatch>(1);
        let (give_back, back) = channel::<RecordBatch>();
        let writer = scope.spawn(move || {
            for batch in batches {
                parts.write(&project(batch.clone(), projection)?)?;
                // The walk may have stopped: then nothing takes it back.
                let _ = give_back.send(batch);
            }
            parts.finish()
        });
        let stopped = || Error::internal("the Parquet writer stopped");
        let mut in_flight = 0;
        let (format, group) = (&options.source_format, options.row_group_rows);
        let filled = fill(reader, walk, format, group, progress, |batch, rows| {
            send.send(batch).map_err(|_| stopped())?;
            in_flight += 1;
            // One row group written while the next fills: the one before
            // comes back first.
            if in_flight > 1 {
                rows.recycle(back.recv().map_err(|_| stopped())?);
                in_flight -= 1;
            }
            Ok(())
        });
        // The writer ends when its channel closes.
        drop(send);
        let written = writer
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        // A writer's error is why the walk could not hand it more: it is
        // the one to report.
        let bytes = written?;
        Ok((thread, filled?, bytes))
    })
}

/// What one [`fill`] walks: a whole thread, or one node's subtree.
#[derive(Debug, Clone, Copy)]
enum Walk {
    Thread(ThreadId),
    Subtree(LazyNode),
}

impl Walk {
    /// The thread walked.
    fn thread(self, reader: &LazyTraceReader) -> ThreadId {
        match self {
            Walk::Thread(thread) => thread,
            Walk::Subtree(node) => reader.node_thread(node),
        }
    }
}

/// What `options` exports of `reader`'s trace: its root's subtree, or each
/// thread it selects, ascending; checked against the trace.
fn selected_walks(reader: &LazyTraceReader, options: &ParquetOptions) -> Result<Vec<Walk>> {
    if options.row_group_rows == 0 {
        return Err(Error::invalid("row group size", "must be at least 1 row"));
    }
    let Some(node) = options.root else {
        return Ok(super::selected_threads(reader, options.threads.as_deref())?
            .into_iter()
            .map(Walk::Thread)
            .collect());
    };
    let thread = reader.node_thread(node);
    if let Some(threads) = &options.threads
        && !threads.contains(&thread)
    {
        return Err(Error::invalid(
            "root",
            format!("the node is in thread {thread}, not among the threads given"),
        ));
    }
    // Checks the node is this reader's.
    reader.node(node)?;
    Ok(vec![Walk::Subtree(node)])
}

/// The schema of `columns` (the whole schema when `None`), and the whole
/// schema's indexes of its columns when they are a projection.
fn projected_schema(columns: Option<&[String]>) -> Result<(SchemaRef, Option<Vec<usize>>)> {
    let full = schema();
    let Some(columns) = columns else {
        return Ok((full, None));
    };
    let indexes = columns
        .iter()
        .map(|name| {
            full.index_of(name).map_err(|_| {
                let names: Vec<&str> = full.fields().iter().map(|f| f.name().as_str()).collect();
                Error::invalid(
                    "column",
                    format!("no column {name:?} (columns: {})", names.join(", ")),
                )
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let projected = full
        .project(&indexes)
        .map_err(|e| Error::internal(e.to_string()))?;
    Ok((Arc::new(projected), Some(indexes)))
}

/// `batch` with only the columns at `projection` (all when `None`).
fn project(batch: RecordBatch, projection: Option<&[usize]>) -> Result<RecordBatch> {
    match projection {
        None => Ok(batch),
        Some(indexes) => batch
            .project(indexes)
            .map_err(|e| Error::internal(e.to_string())),
    }
}

/// Walks `walk` (a thread, or a subtree) into rows of `row_group_rows`
/// and hands each row group to `hand` with the rows, to be given their
/// memory back; returns the row count. A subtree's rows are the rows its
/// thread's export has for it: depths, parent and place in its thread.
fn fill(
    reader: &LazyTraceReader,
    walk: Walk,
    source_format: &str,
    row_group_rows: usize,
    progress: &(dyn Fn(u64) + Sync),
    mut hand: impl FnMut(RecordBatch, &mut Rows<'_>) -> Result<()>,
) -> Result<u64> {
    let thread = walk.thread(reader);
    let length = reader
        .threads()
        .iter()
        .find(|info| info.id == thread)
        .map_or(0, |info| info.bytes);
    let mut rows = Rows::new(
        reader.context(),
        schema(),
        source_format,
        row_group_rows,
        reader.diff_map(),
    );
    // The depth of the walk's top level in its thread.
    let mut base = 0;
    if let Walk::Subtree(node) = walk {
        let parent = reader.parent(node)?;
        let parent_event = parent
            .map(|parent| reader.node(parent).map(|data| data.tracepoint().event().0))
            .transpose()?;
        base = reader.ancestors(node)?.len();
        rows.below(parent_event, reader.position(node)?);
    }
    let mut take = |rows: &mut Rows<'_>| -> Result<u64> {
        let batch = rows.batch(reader)?;
        let count = batch.num_rows() as u64;
        hand(batch, rows)?;
        Ok(count)
    };
    let (mut count, mut reported) = (0u64, 0u64);
    let visit = |walked: &WalkNode<'_>| {
        let tracepoint = walked
            .tracepoint
            .ok_or_else(|| Error::internal("a full walk without its tracepoint"))?;
        let depth = base + walked.depth;
        // Subtrees the node closes end here, not in the reader.
        rows.close_deeper(depth);
        if rows.len() >= row_group_rows {
            count += take(&mut rows)?;
            let at = walked.node.offset().0;
            progress(at.saturating_sub(reported));
            reported = at;
        }
        rows.push(walked.node, depth, tracepoint, walked.footer)?;
        Ok(true)
    };
    match walk {
        Walk::Thread(thread) => reader.walk_thread(thread, WalkDetail::Full, visit)?,
        Walk::Subtree(node) => reader.walk_subtree(node, WalkDetail::Full, visit)?,
    }
    rows.end_walk();
    // A thread without rows still has a part: an empty one.
    if rows.len() > 0 || count == 0 {
        count += take(&mut rows)?;
    }
    progress(length.saturating_sub(reported));
    Ok(count)
}

/// The part files of one thread.
struct Parts {
    folder: PathBuf,
    schema: SchemaRef,
    /// The Parquet schema `schema` maps to.
    parquet_schema: SchemaDescriptor,
    /// The writer's properties, the Arrow schema in the file's metadata.
    properties: Arc<WriterProperties>,
    dictionaries: DictionaryWriter,
    writer: Option<(SerializedFileWriter<File>, ArrowRowGroupWriterFactory)>,
    next_part: usize,
    groups_in_part: usize,
    bytes: u64,
}

impl Parts {
    fn new(folder: PathBuf, schema: SchemaRef, row_group_rows: usize) -> Result<Self> {
        let mut properties = properties(row_group_rows);
        let parquet_schema = ArrowSchemaConverter::new()
            .with_coerce_types(properties.coerce_types())
            .convert(&schema)
            .map_err(parquet_error)?;
        add_encoded_arrow_schema_to_metadata(&schema, &mut properties);
        Ok(Parts {
            folder,
            schema,
            parquet_schema,
            properties: Arc::new(properties),
            dictionaries: DictionaryWriter::new(zstd_level()).map_err(parquet_error)?,
            writer: None,
            next_part: 0,
            groups_in_part: 0,
            bytes: 0,
        })
    }

    /// Writes one row group, starting a new part when the current is full:
    /// the dictionary columns from their keys (`dictionary`), the others
    /// through the `parquet` crate's Arrow column writers.
    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        if self.groups_in_part >= ROW_GROUPS_PER_PART {
            self.close_part()?;
        }
        if self.writer.is_none() {
            let path = self.folder.join(format!("part-{}.parquet", self.next_part));
            let file = File::create(&path).map_err(|e| Error::io(&path, e))?;
            let writer = SerializedFileWriter::new(
                file,
                self.parquet_schema.root_schema_ptr(),
                self.properties.clone(),
            )
            .map_err(parquet_error)?;
            let factory = ArrowRowGroupWriterFactory::new(&writer, self.schema.clone());
            self.writer = Some((writer, factory));
            self.next_part += 1;
            self.groups_in_part = 0;
        }
        let (writer, factory) = self.writer.as_mut().expect("opened above");
        let column_writers = factory
            .create_column_writers(self.groups_in_part)
            .map_err(parquet_error)?;
        let mut row_group = writer.next_row_group().map_err(parquet_error)?;
        let columns = self.schema.fields().iter().zip(batch.columns());
        for ((index, (field, array)), mut column_writer) in columns.enumerate().zip(column_writers)
        {
            if let Some(keyed) = array.as_any().downcast_ref::<DictionaryArray<Int32Type>>() {
                let descr = self.parquet_schema.column(index);
                self.dictionaries
                    .write(keyed, descr, &mut row_group)
                    .map_err(parquet_error)?;
                continue;
            }
            for leaf in compute_leaves(field, array).map_err(parquet_error)? {
                column_writer.write(&leaf).map_err(parquet_error)?;
            }
            let chunk = column_writer.close().map_err(parquet_error)?;
            chunk
                .append_to_row_group(&mut row_group)
                .map_err(parquet_error)?;
        }
        row_group.close().map_err(parquet_error)?;
        self.groups_in_part += 1;
        Ok(())
    }

    fn close_part(&mut self) -> Result<()> {
        if let Some((writer, _)) = self.writer.take() {
            writer.close().map_err(parquet_error)?;
            let path = self
                .folder
                .join(format!("part-{}.parquet", self.next_part - 1));
            self.bytes += std::fs::metadata(&path).map_or(0, |m| m.len());
        }
        Ok(())
    }

    fn finish(mut self) -> Result<u64> {
        self.close_part()?;
        Ok(self.bytes)
    }
}

/// zstd, row groups of `row_group_rows`, for the columns the `parquet`
/// crate writes (the dictionary columns' pages are `dictionary`'s, with
/// neither statistics nor a second dictionary). Event ids, rising within a
/// thread and nearly all distinct, are delta-encoded instead of looked up
/// in a dictionary that would never pay; so are depths and child indexes,
/// which change by little from one row to the next in pre-order (bit
/// packing their differences costs less than a dictionary's lookup per
/// row, for about the same size). The free-form text columns
/// (`result`, `exception`, `args`) have no min/max statistics, which no
/// query prunes them by, and `result` and `args` no Parquet dictionary
/// (their values rarely repeat within a page; zstd finds what does).
fn properties(row_group_rows: usize) -> WriterProperties {
    let mut builder = WriterProperties::builder()
        .set_compression(Compression::ZSTD(zstd_level()))
        .set_max_row_group_row_count(Some(row_group_rows))
        .set_write_batch_size(8192);
    for column in ["result", "args"] {
        builder = builder.set_column_dictionary_enabled(column.into(), false);
    }
    for column in ["result", "exception", "args"] {
        builder = builder.set_column_statistics_enabled(column.into(), EnabledStatistics::None);
    }
    for column in [
        "event_id",
        "parent_id",
        "subtree_end",
        "depth",
        "child_index",
    ] {
        builder = builder
            .set_column_dictionary_enabled(column.into(), false)
            .set_column_encoding(column.into(), Encoding::DELTA_BINARY_PACKED);
    }
    builder.build()
}

/// `threads.parquet`: thread number, name and tracepoint count.
fn write_threads(
    reader: &LazyTraceReader,
    rows: &[(ThreadId, u64, u64)],
    path: &Path,
) -> Result<u64> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("thread", DataType::Int32, false),
        Field::new("name", DataType::Utf8, true),
        Field::new("tracepoint_count", DataType::Int64, false),
    ]));
    let mut thread = Int32Builder::new();
    let mut name = StringBuilder::new();
    let mut count = Int64Builder::new();
    for &(id, tracepoints, _) in rows {
        thread.append_value(id.0);
        name.append_option(reader.thread_name(id));
        count.append_value(tracepoints as i64);
    }
    let arrays: Vec<ArrayRef> = vec![
        Arc::new(thread.finish()),
        Arc::new(name.finish()),
        Arc::new(count.finish()),
    ];
    let batch =
        RecordBatch::try_new(schema.clone(), arrays).map_err(|e| Error::internal(e.to_string()))?;
    let file = File::create(path).map_err(|e| Error::io(path, e))?;
    let mut writer =
        ArrowWriter::try_new(file, schema, Some(properties(1 << 20))).map_err(parquet_error)?;
    writer.write(&batch).map_err(parquet_error)?;
    writer.close().map_err(parquet_error)?;
    Ok(std::fs::metadata(path).map_or(0, |m| m.len()))
}

/// A Parquet writer's failure, as the I/O error it usually is.
fn parquet_error(error: parquet::errors::ParquetError) -> Error {
    Error::from(std::io::Error::other(error))
}
