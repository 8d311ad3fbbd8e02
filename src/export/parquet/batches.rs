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

use super::{ParquetOptions, fill, project, projected_schema, selected_walks};
use crate::error::{Error, Result};
use crate::read::LazyTraceReader;

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
    /// Streams the rows [`ParquetOptions::export`] writes for `reader`'s
    /// trace with `options` (its threads, root and columns; `trace_name`
    /// and `force` are the export's) as Arrow record batches of
    /// `options.row_group_rows` rows, built on a thread of their own while
    /// the caller reads the previous one. Fails at once on a thread, node
    /// or column the trace or schema does not have.
    pub fn new(reader: Arc<LazyTraceReader>, options: &ParquetOptions) -> Result<RecordBatches> {
        record_batches(reader, options)
    }
}

/// [`RecordBatches::new`].
fn record_batches(reader: Arc<LazyTraceReader>, options: &ParquetOptions) -> Result<RecordBatches> {
    let walks = selected_walks(&reader, options)?;
    let (schema, projection) = projected_schema(options.columns.as_deref())?;
    let (send, batches) = sync_channel::<Result<RecordBatch>>(1);
    let format = options.source_format.clone();
    let rows = options.row_group_rows;
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
        Some(batch.and_then(|batch| project(batch, self.projection.as_deref())))
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
