//! One chunk opened for decoding: its metadata, its constant pools as
//! offset tables, and its records.
//!
//! Constant pools are found through the checkpoint chain: the header points
//! at the chunk's last checkpoint event, and each checkpoint (size, type 1,
//! start, duration, *delta*, a flags byte, a pool count, then per pool a
//! type id, an entry count and the entries as key + value) points back by
//! its delta to the one before; a delta of 0 ends the chain. Opening a
//! chunk walks the chain once and records, per type and key, where the
//! value starts, skipping the value by its layout; a key seen in a later
//! checkpoint keeps the later value. Values are decoded only when asked for
//! ([`Chunk::pooled`]); callers memoize what they use often.
//!
//! Records (events, checkpoints, the metadata) follow the header back to
//! back up to the chunk's end, each a size and a type id first.
//! [`Records`] walks them; a size that is zero or runs past the chunk's end
//! stops the walk with an error at that record.

use rustc_hash::FxHashMap;

use super::chunk::{ChunkHeader, HEADER_SIZE};
use super::input::{Input, JfrError, JfrResult, JfrString};
use super::metadata::{CHECKPOINT_TYPE, Metadata};
use super::value::{Value, read_fields, read_value, skip_value};

/// A chunk's constant pools: per type index, per key, the offset of the
/// value in the chunk.
#[derive(Debug, Default)]
pub struct Pools {
    by_class: FxHashMap<u32, FxHashMap<i64, usize>>,
}

impl Pools {
    /// Where the value of `key` in the pool of the type at `class` starts.
    #[inline]
    pub fn offset(&self, class: u32, key: i64) -> Option<usize> {
        self.by_class.get(&class)?.get(&key).copied()
    }
}

/// A chunk ready for decoding.
#[derive(Debug)]
pub struct Chunk<'a> {
    /// The header.
    pub header: ChunkHeader,
    /// The chunk's bytes, header included.
    pub bytes: &'a [u8],
    /// Its types.
    pub metadata: Metadata,
    /// Its constant pools.
    pub pools: Pools,
    string_class: Option<u32>,
}

impl<'a> Chunk<'a> {
    /// Opens the chunk of `header` in `file` (the whole file): reads its
    /// metadata and indexes its constant pools.
    pub fn open(file: &'a [u8], header: &ChunkHeader) -> JfrResult<Chunk<'a>> {
        let start = header.offset as usize;
        let bytes = file
            .get(start..start.saturating_add(header.size as usize))
            .ok_or_else(|| JfrError::new(header.offset, "the chunk runs past the file"))?;
        let mut input = Input::new(bytes, header.offset, header.compressed_ints());
        input.seek(header.metadata as usize);
        let metadata = Metadata::read(&mut input)?;
        let string_class = metadata.class_named("java.lang.String");
        let mut chunk = Chunk {
            header: header.clone(),
            bytes,
            metadata,
            pools: Pools::default(),
            string_class,
        };
        chunk.pools = chunk.index_pools()?;
        Ok(chunk)
    }

    /// A cursor at `position` in the chunk.
    #[inline]
    pub fn input(&self, position: usize) -> Input<'a> {
        let mut input = Input::new(
            self.bytes,
            self.header.offset,
            self.header.compressed_ints(),
        );
        input.seek(position);
        input
    }

    /// Walks the checkpoint chain back from the header's last checkpoint.
    fn index_pools(&self) -> JfrResult<Pools> {
        let mut pools = Pools::default();
        let mut at = self.header.constant_pool as i64;
        // Each checkpoint lies before the one pointing at it, so the chain
        // has at most one link per byte of the chunk.
        while at >= HEADER_SIZE as i64 && (at as usize) < self.bytes.len() {
            let mut input = self.input(at as usize);
            let size = input.int()?;
            let end = (at as usize).saturating_add(usize::try_from(size).unwrap_or(usize::MAX));
            if size <= 0 || end > self.bytes.len() {
                return Err(input.error(format_args!("checkpoint size {size} exceeds the chunk")));
            }
            let mut input = Input::new(
                &self.bytes[..end],
                self.header.offset,
                self.header.compressed_ints(),
            );
            input.seek(at as usize);
            input.int()?;
            let type_id = input.long()? as u64;
            if type_id != CHECKPOINT_TYPE {
                return Err(input.error(format_args!(
                    "expected a checkpoint (type 1), found type {type_id}"
                )));
            }
            input.long()?; // start
            input.long()?; // duration
            let delta = input.long()?;
            input.u8()?; // flags
            let count = input.count(2, "constant pool")?;
            for _ in 0..count {
                self.index_pool(&mut input, &mut pools)?;
            }
            if delta == 0 {
                break;
            }
            if delta > 0 {
                return Err(input.error(format_args!(
                    "checkpoint delta {delta} points forward, not to an earlier checkpoint"
                )));
            }
            at = at.saturating_add(delta);
        }
        Ok(pools)
    }

    fn index_pool(&self, input: &mut Input<'a>, pools: &mut Pools) -> JfrResult<()> {
        let at = input.file_offset();
        let type_id = input.long()? as u64;
        let class = self.metadata.class_index(type_id).ok_or_else(|| {
            JfrError::new(at, format_args!("constant pool of unknown type {type_id}"))
        })?;
        let kind = self.metadata.class(class).kind;
        let count = input.count(2, "constant")?;
        let table = pools.by_class.entry(class).or_default();
        table.reserve(count);
        for _ in 0..count {
            let key = input.long()?;
            let offset = input.position();
            skip_value(&self.metadata, input, class, kind, 0)?;
            // The chain runs newest first: an older value never replaces it.
            table.entry(key).or_insert(offset);
        }
        Ok(())
    }

    /// The value of `key` in the pool of the type at `class`; `None` when
    /// the pool lacks it.
    pub fn pooled(&self, class: u32, key: i64) -> Option<JfrResult<Value<'a>>> {
        let offset = self.pools.offset(class, key)?;
        let mut input = self.input(offset);
        let kind = self.metadata.class(class).kind;
        Some(read_value(&self.metadata, &mut input, class, kind, 0))
    }

    /// The text of a string value, a pooled string looked up (`None` for
    /// the null string or a missing key).
    pub fn text(&self, string: &JfrString<'a>) -> Option<String> {
        match string {
            JfrString::Pooled(key) => match self.pooled(self.string_class?, *key)? {
                Ok(Value::String(pooled)) if !matches!(pooled, JfrString::Pooled(_)) => {
                    pooled.to_text().map(|t| t.into_owned())
                }
                _ => None,
            },
            other => other.to_text().map(|t| t.into_owned()),
        }
    }

    /// The records of the chunk, in order.
    pub fn records(&self) -> Records<'a> {
        Records {
            input: self.input(HEADER_SIZE),
            end: self.bytes.len(),
            failed: false,
        }
    }

    /// A cursor over the body of `record` (after its type id), limited to
    /// the record.
    #[inline]
    pub fn body(&self, record: &Record) -> Input<'a> {
        let mut input = Input::new(
            &self.bytes[..record.offset + record.size],
            self.header.offset,
            self.header.compressed_ints(),
        );
        input.seek(record.body);
        input
    }

    /// Decodes every event of the type at `class`, in order, calling
    /// `visit` with its record and fields; returns the error that ended
    /// the walk early, if one did.
    pub fn for_each_event(
        &self,
        class: u32,
        mut visit: impl FnMut(&Record, &[Value<'a>]),
    ) -> Option<JfrError> {
        let type_id = self.metadata.class(class).id;
        let mut fields = Vec::new();
        for record in self.records() {
            let record = match record {
                Ok(record) => record,
                Err(error) => return Some(error),
            };
            if record.type_id != type_id {
                continue;
            }
            let mut input = self.body(&record);
            if let Err(error) = read_fields(&self.metadata, &mut input, class, 0, &mut fields) {
                return Some(error);
            }
            visit(&record, &fields);
        }
        None
    }
}

/// One record of a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    /// Where it starts in the chunk.
    pub offset: usize,
    /// Its size in bytes.
    pub size: usize,
    /// Its type id.
    pub type_id: u64,
    /// Where its body (after the type id) starts in the chunk.
    pub body: usize,
}

/// The records of a chunk; an error ends the walk.
#[derive(Debug, Clone)]
pub struct Records<'a> {
    input: Input<'a>,
    end: usize,
    failed: bool,
}

impl Iterator for Records<'_> {
    type Item = JfrResult<Record>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.input.position() >= self.end {
            return None;
        }
        let offset = self.input.position();
        let result = (|| {
            let size = self.input.int()?;
            let fits = usize::try_from(size)
                .ok()
                .filter(|&s| s > 0 && s <= self.end - offset);
            let Some(size) = fits else {
                return Err(JfrError::new(
                    self.input.file_offset(),
                    format_args!(
                        "record at chunk offset {offset} has size {size}, outside the chunk"
                    ),
                ));
            };
            let type_id = self.input.long()? as u64;
            let body = self.input.position();
            if body > offset + size {
                return Err(self.input.error("a record's header runs past its size"));
            }
            self.input.seek(offset + size);
            Ok(Record {
                offset,
                size,
                type_id,
                body,
            })
        })();
        self.failed = result.is_err();
        Some(result)
    }
}
