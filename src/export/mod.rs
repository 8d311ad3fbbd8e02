//! Traces in the forms other tools read, each streamed from walks of the
//! lazy reader with memory bounded by configuration.
//!
//! - [`parquet`] (cargo feature `parquet`): a Hive-partitioned Parquet
//!   dataset, one row per tracepoint, for DuckDB, DataFusion and Spark.

#[cfg(feature = "parquet")]
pub mod parquet;
