//! What `info` shows of a recording: version, chunks, start, duration and
//! the count and bytes of every event type, as `jfr summary` counts them
//! (records by type id, over every chunk, each type named by the first
//! chunk declaring it; types declared but never recorded count 0; a record
//! whose type no metadata declares is `<id> (missing event metadata)`),
//! plus the `jdk.DataLoss` events and the damage found. The checkpoint
//! records are named as the `jfr` tool of the JDK that made the recording
//! names them: `jdk.CheckPoint` up to JDK 18, `jdk.Checkpoint` from JDK 19
//! (the version read from `jdk.JVMInformation`; the newer name without
//! one).
//!
//! Chunks are counted in parallel, one pass over their records each; the
//! counts merge in file order.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

use super::value::{Value, read_fields};
use super::{Chunk, Recording};
use crate::error::Result;

/// The event type of a data-loss report.
pub const DATA_LOSS: &str = "jdk.DataLoss";

/// Counts of one event type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TypeCount {
    /// The type's name.
    pub name: String,
    /// Its records.
    pub count: u64,
    /// Their bytes.
    pub size: u64,
}

/// A recording's summary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JfrSummary {
    /// The first chunk's version.
    pub version: (u16, u16),
    /// Whole chunks read.
    pub chunks: usize,
    /// The first chunk's start, ns since the epoch.
    pub start_nanos: i64,
    /// The sum of the chunks' durations, ns.
    pub duration_nanos: i64,
    /// Counts by type, most recorded first (then by name): [`types`](Self::types).
    types: Vec<TypeCount>,
    /// `jdk.DataLoss` events.
    pub data_loss_events: u64,
    /// The bytes they say were lost.
    pub data_loss_bytes: u64,
    /// Damaged or skipped chunks, one line each.
    pub damage: Vec<String>,
    /// The JVM's version string (`jdk.JVMInformation`), when recorded.
    pub jvm_version: Option<String>,
}

/// One chunk's counts.
#[derive(Default)]
struct ChunkCounts {
    declared: Vec<(u64, String)>,
    counts: HashMap<u64, (u64, u64)>,
    data_loss: (u64, u64),
    damage: Option<String>,
    jvm_version: Option<String>,
}

impl JfrSummary {
    /// Summarizes the recording at `path`.
    pub fn read(path: &Path) -> Result<JfrSummary> {
        summarize(path)
    }

    /// Each event type's name, records and their bytes, most recorded
    /// first (then by name).
    pub fn types(&self) -> impl Iterator<Item = (&str, u64, u64)> {
        self.types
            .iter()
            .map(|t| (t.name.as_str(), t.count, t.size))
    }
}

/// [`JfrSummary::read`].
fn summarize(path: &Path) -> Result<JfrSummary> {
    let recording = Recording::open(path)?;
    let mut summary = JfrSummary {
        damage: recording.damage().iter().map(|d| d.to_string()).collect(),
        ..JfrSummary::default()
    };
    if let Some(first) = recording.chunks().first() {
        summary.version = (first.major, first.minor);
        summary.start_nanos = first.start_nanos;
    }
    let chunks = recording.map_chunks(|_, chunk| {
        let mut counts = ChunkCounts::default();
        for class in chunk.metadata.classes.iter().filter(|c| c.is_event()) {
            counts.declared.push((class.id, class.name.clone()));
        }
        let loss = chunk.metadata.class_named(DATA_LOSS);
        let amount = loss.and_then(|c| chunk.metadata.class(c).field("amount"));
        counts.jvm_version = jvm_version(chunk);
        let mut fields = Vec::new();
        for record in chunk.records() {
            let record = match record {
                Ok(record) => record,
                Err(error) => {
                    counts.damage = Some(error.to_string());
                    break;
                }
            };
            let entry = counts.counts.entry(record.type_id).or_default();
            entry.0 += 1;
            entry.1 += record.size as u64;
            let Some(loss) = loss.filter(|&c| chunk.metadata.class(c).id == record.type_id) else {
                continue;
            };
            counts.data_loss.0 += 1;
            let mut input = chunk.body(&record);
            if read_fields(&chunk.metadata, &mut input, loss, 0, &mut fields).is_ok() {
                let bytes = amount.and_then(|i| fields.get(i)).and_then(Value::as_i64);
                counts.data_loss.1 += bytes.unwrap_or(0).max(0) as u64;
            }
        }
        counts
    });
    let mut by_id: HashMap<u64, TypeCount> = HashMap::new();
    let named = |name: &str| TypeCount {
        name: name.to_string(),
        count: 0,
        size: 0,
    };
    by_id.insert(0, named("jdk.Metadata"));
    let chunks: Vec<_> = chunks.into_iter().collect();
    summary.jvm_version = chunks
        .iter()
        .flatten()
        .find_map(|chunk| chunk.jvm_version.clone());
    let major = summary.jvm_version.as_deref().and_then(java_major);
    let checkpoint = match major {
        Some(major) if major < 19 => "jdk.CheckPoint",
        _ => "jdk.Checkpoint",
    };
    by_id.insert(1, named(checkpoint));
    for (header, chunk) in recording.chunks().iter().zip(chunks) {
        let chunk = match chunk {
            Ok(chunk) => chunk,
            Err(error) => {
                let offset = header.offset;
                summary
                    .damage
                    .push(format!("chunk at offset {offset}: {error}; chunk skipped"));
                continue;
            }
        };
        summary.chunks += 1;
        summary.duration_nanos += header.duration_nanos;
        for (id, name) in chunk.declared {
            by_id.entry(id).or_insert_with(|| named(&name));
        }
        for (id, (count, size)) in chunk.counts {
            let entry = by_id
                .entry(id)
                .or_insert_with(|| named(&format!("{id} (missing event metadata)")));
            entry.count += count;
            entry.size += size;
        }
        summary.data_loss_events += chunk.data_loss.0;
        summary.data_loss_bytes += chunk.data_loss.1;
        if let Some(error) = chunk.damage {
            let offset = header.offset;
            summary.damage.push(format!(
                "chunk at offset {offset}: {error}; the rest of the chunk is skipped"
            ));
        }
    }
    summary.types = by_id.into_values().collect();
    summary
        .types
        .sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.name.cmp(&b.name)));
    Ok(summary)
}

/// The `jvmVersion` of the chunk's first `jdk.JVMInformation` event.
fn jvm_version(chunk: &Chunk<'_>) -> Option<String> {
    let class = chunk.metadata.class_named("jdk.JVMInformation")?;
    let field = chunk.metadata.class(class).field("jvmVersion")?;
    let mut version = None;
    chunk.for_each_event(class, |_, fields| {
        if let (None, Some(Value::String(text))) = (&version, fields.get(field)) {
            version = chunk.text(text);
        }
    });
    version
}

/// The Java feature version in a JVM version string such as `OpenJDK
/// 64-Bit Server VM (17.0.15+6-Debian) for linux-amd64 ...`.
fn java_major(version: &str) -> Option<u32> {
    let inside = version.split_once('(')?.1;
    let digits: String = inside.chars().take_while(char::is_ascii_digit).collect();
    let major: u32 = digits.parse().ok()?;
    // Versions before 9 were written `1.8.0_...`.
    if major == 1 {
        let rest = inside.strip_prefix("1.")?;
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        return digits.parse().ok();
    }
    Some(major)
}

impl fmt::Display for JfrSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "jfr version: {}.{}", self.version.0, self.version.1)?;
        writeln!(f, "jfr chunks: {}", self.chunks)?;
        if let Some(version) = &self.jvm_version {
            writeln!(f, "jfr jvm: {version}")?;
        }
        writeln!(f, "jfr start: {} ns since the epoch", self.start_nanos)?;
        writeln!(
            f,
            "jfr duration: {} s ({} ns)",
            (self.duration_nanos + 500_000_000) / 1_000_000_000,
            self.duration_nanos
        )?;
        writeln!(
            f,
            "jfr data loss: {} {DATA_LOSS} events, {} bytes lost",
            self.data_loss_events, self.data_loss_bytes
        )?;
        for damage in &self.damage {
            writeln!(f, "jfr damaged: {damage}")?;
        }
        let events: u64 = self.types.iter().map(|t| t.count).sum();
        writeln!(f, "jfr events: {events} (count, bytes by type)")?;
        for t in &self.types {
            writeln!(f, "  {} {} {}", t.name, t.count, t.size)?;
        }
        Ok(())
    }
}
