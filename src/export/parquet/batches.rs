//! The export's rows as a stream of Arrow record batches, for callers that
//! hand them to an engine in memory (the Python bindings' `to_arrow`)
//! instead of writing Parquet.
//!
//! The rows are built by the export's own walk (`fill` over `rows`): the
//! same columns, values and order as the part files. The walk runs on a
//! thread of its own and hands each batch over a channel of one, so that
//! the next batch fills while the caller reads one: at most three batches
//! exist at once (one read, one waiting, one filling), whatever the
//! trace's size. Dropping the stream stops the walk at its next batch.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, sync_channel};
use std::thread::JoinHandle;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use super::{Walk, fill, schema};
use crate::common::ThreadId;
use crate::error::{Error, Result};
use crate::read::{LazyNode, LazyTraceReader};

/// What [`RecordBatches::new`] streams.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct BatchOptions {
    /// What the `source_format` column says (`v22`, `flow`, `jfr`, …).
    pub source_format: String,
    /// Rows per batch (at least 1): a row group's worth in the export.
    pub batch_rows: usize,
    /// Only these threads, ascending (all when `None`).
    pub threads: Option<Vec<ThreadId>>,
    /// Only this node's subtree (its rows as its thread's export has
    /// them); `threads`, when also given, must hold its thread.
    pub root: Option<LazyNode>,
    /// Only these of the export's columns (the [module](super)'s table
    /// lists them), in this order (all when `None`).
    pub columns: Option<Vec<String>>,
}

impl BatchOptions {
    /// The default rows per batch: 65,536.
    pub const DEFAULT_BATCH_ROWS: usize = 1 << 16;

    /// Every row of every thread, in batches of
    /// [`DEFAULT_BATCH_ROWS`](Self::DEFAULT_BATCH_ROWS), the
    /// `source_format` column saying `source_format`.
    pub fn new(source_format: impl Into<String>) -> Self {
        BatchOptions {
            source_format: source_format.into(),
            batch_rows: Self::DEFAULT_BATCH_ROWS,
            threads: None,
            root: None,
            columns: None,
        }
    }
}

/// The Parquet export's rows of a trace, batch by batch: threads in
/// ascending order, each in pre-order (an iterator; see
/// [`RecordBatches::new`]).
pub struct RecordBatches {
    schema: SchemaRef,
    /// Indexes into the full schema's columns, when only some are wanted.
    projection: Option<Vec<usize>>,
    batches: Option<Receiver<Result<RecordBatch>>>,
    walker: Option<JoinHandle<()>>,
}

impl RecordBatches {
    /// Streams the rows [`ParquetOptions::export`](super::ParquetOptions::export) writes
    /// for `reader`'s trace (or the part `options` selects) as Arrow
    /// record batches of `options.batch_rows` rows, built on a thread of
    /// their own while the caller reads the previous one. Fails at once on
    /// a thread or column the trace or schema does not have.
    pub fn new(reader: Arc<LazyTraceReader>, options: &BatchOptions) -> Result<RecordBatches> {
        record_batches(reader, options)
    }
}

/// [`RecordBatches::new`].
fn record_batches(reader: Arc<LazyTraceReader>, options: &BatchOptions) -> Result<RecordBatches> {
    if options.batch_rows == 0 {
        return Err(Error::invalid("batch size", "must be at least 1 row"));
    }
    let walks = match options.root {
        Some(node) => {
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
            vec![Walk::Subtree(node)]
        }
        None => super::super::selected_threads(&reader, options.threads.as_deref())?
            .into_iter()
            .map(Walk::Thread)
            .collect(),
    };
    let full = schema();
    let (schema, projection) = match &options.columns {
        None => (full, None),
        Some(columns) => {
            let indexes = columns
                .iter()
                .map(|name| {
                    full.index_of(name).map_err(|_| {
                        let names: Vec<&str> =
                            full.fields().iter().map(|f| f.name().as_str()).collect();
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
            (Arc::new(projected), Some(indexes))
        }
    };
    let (send, batches) = sync_channel::<Result<RecordBatch>>(1);
    let format = options.source_format.clone();
    let rows = options.batch_rows;
    let walker = std::thread::Builder::new()
        .name("tracetree-batches".into())
        .spawn(move || {
            for walk in walks {
                let filled = fill(&reader, walk, &format, rows, &|_| {}, |batch, _| {
                    // A closed channel: the caller dropped the stream.
                    send.send(Ok(batch))
                        .map_err(|_| Error::internal("stream closed"))
                });
                if let Err(error) = filled {
                    let _ = send.send(Err(error));
                    return;
                }
            }
        })
        .map_err(|e| Error::io(std::env::temp_dir(), e))?;
    Ok(RecordBatches {
        schema,
        projection,
        batches: Some(batches),
        walker: Some(walker),
    })
}

impl RecordBatches {
    /// The batches' columns: the export's (the [module](super)'s table), or
    /// the columns asked for.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

impl Iterator for RecordBatches {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Result<RecordBatch>> {
        let batch = match self.batches.as_ref()?.recv() {
            Ok(batch) => batch,
            Err(_) => {
                // The walk ended (with every batch sent): its thread is done.
                self.batches = None;
                if let Some(walker) = self.walker.take()
                    && let Err(panic) = walker.join()
                {
                    std::panic::resume_unwind(panic);
                }
                return None;
            }
        };
        Some(batch.and_then(|batch| {
            match &self.projection {
                None => Ok(batch),
                Some(indexes) => batch
                    .project(indexes)
                    .map_err(|e| Error::internal(e.to_string())),
            }
        }))
    }
}

impl Drop for RecordBatches {
    /// Stops the walk: its next batch finds the channel closed.
    fn drop(&mut self) {
        self.batches = None;
        if let Some(walker) = self.walker.take() {
            let _ = walker.join();
        }
    }
}

impl std::fmt::Debug for RecordBatches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordBatches")
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}
