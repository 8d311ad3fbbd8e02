//! Dictionary string columns written from the keys the rows carry.
//!
//! The rows give each dictionary column as keys into the row group's own
//! dictionary of distinct values (`columns::KeyedColumn`). The `parquet`
//! crate's writer would hash every row's string again to build a
//! dictionary of its own; this module writes the column chunk from the
//! keys as they are, and the crate only writes its page headers and its
//! metadata (the chunk is spliced whole into the row group,
//! `SerializedRowGroupWriter::append_column`):
//!
//! - a dictionary page: the values, PLAIN (a 4-byte little-endian length
//!   before each);
//! - data pages (format v1) of [`PAGE_ROWS`] rows each: for a nullable
//!   column, the definition levels (1 for a value, 0 for a null) behind
//!   their 4-byte length (the validity bitmap as one bit-packed run, or
//!   one RLE run of 1s when the column has no null), then the bit width of
//!   the keys in one byte and the keys of the rows with a value;
//! - each page compressed with zstd at the level the other columns use.
//!
//! Levels and keys are in Parquet's RLE/bit-packed hybrid encoding: a run
//! of 8 or more equal values is an RLE run (a ULEB128 header
//! `length << 1`, then the value in whole little-endian bytes); the rest
//! is bit-packed in groups of 8 values (a header `groups << 1 | 1`, then
//! the values least significant bit first). A bit-packed stretch takes up
//! to 7 values of the run after it to fill its last group, since only a
//! page's last group may be padded.

use std::io::Write;

use arrow_array::types::Int32Type;
use arrow_array::{Array, DictionaryArray, StringArray};
use bytes::Bytes;
use parquet::basic::{Compression, Encoding, PageType, ZstdLevel};
use parquet::column::page::{CompressedPage, Page, PageWriter};
use parquet::column::writer::ColumnCloseResult;
use parquet::errors::{ParquetError, Result};
use parquet::file::metadata::{ColumnChunkMetaData, PageEncodingStats};
use parquet::file::writer::{SerializedPageWriter, SerializedRowGroupWriter, TrackedWrite};
use parquet::schema::types::ColumnDescPtr;

use crate::export::push_varint;

/// Rows in each data page (the `parquet` crate's default limit).
pub(super) const PAGE_ROWS: usize = 20_000;

/// Writes dictionary columns' chunks, its buffers reused from one chunk
/// to the next.
pub(super) struct DictionaryWriter {
    level: ZstdLevel,
    compressor: zstd::bulk::Compressor<'static>,
    /// The page being encoded, before compression.
    page: Vec<u8>,
    /// The page's keys of the rows with a value.
    keys: Vec<i32>,
}

impl DictionaryWriter {
    /// A writer compressing at `level`.
    pub(super) fn new(level: ZstdLevel) -> Result<Self> {
        let compressor = zstd::bulk::Compressor::new(level.compression_level())
            .map_err(|e| ParquetError::External(Box::new(e)))?;
        Ok(DictionaryWriter {
            level,
            compressor,
            page: Vec::new(),
            keys: Vec::new(),
        })
    }

    /// Appends `column` to `row_group` as the chunk of the column `descr`
    /// describes (its next column).
    pub(super) fn write<W: Write + Send>(
        &mut self,
        column: &DictionaryArray<Int32Type>,
        descr: ColumnDescPtr,
        row_group: &mut SerializedRowGroupWriter<'_, W>,
    ) -> Result<()> {
        let values = column
            .values()
            .as_any()
            .downcast_ref::<StringArray>()
            .ok_or_else(|| ParquetError::General("a dictionary of other than strings".into()))?;
        let nullable = descr.max_def_level() > 0;
        if !nullable && column.null_count() > 0 {
            return Err(ParquetError::General(format!(
                "nulls in the required column {}",
                descr.name()
            )));
        }
        let keys = column.keys();
        let bit_width = bit_width(values.len().saturating_sub(1) as u32);
        let mut chunk = TrackedWrite::new(Vec::new());
        let mut pages = SerializedPageWriter::new(&mut chunk);
        let (mut compressed, mut uncompressed, mut data_pages) = (0u64, 0u64, 0);
        let mut data_page_offset = None;

        self.page.clear();
        for value in values.iter() {
            let value = value.unwrap_or_default().as_bytes();
            self.page
                .extend_from_slice(&length(value.len())?.to_le_bytes());
            self.page.extend_from_slice(value);
        }
        let page = Page::DictionaryPage {
            buf: self.compress()?,
            num_values: length(values.len())?,
            encoding: Encoding::PLAIN,
            is_sorted: false,
        };
        let spec = pages.write_page(CompressedPage::new(page, self.page.len()))?;
        compressed += spec.compressed_size as u64;
        uncompressed += spec.uncompressed_size as u64;

        let rows = keys.len();
        for start in (0..rows).step_by(PAGE_ROWS) {
            let end = (start + PAGE_ROWS).min(rows);
            self.page.clear();
            let mut page_keys = &keys.values()[start..end];
            if nullable {
                // The levels behind their length, set once they are written.
                let length_at = self.page.len();
                self.page.extend_from_slice(&[0; 4]);
                match keys.nulls() {
                    // Levels of bit width 1 bit-packed are the validity
                    // bitmap (pages start at multiples of 8 rows).
                    Some(nulls) => {
                        let groups = (end - start).div_ceil(8);
                        push_varint(&mut self.page, (groups as u64) << 1 | 1);
                        let validity = nulls.inner().slice(start, end - start).sliced();
                        self.page.extend_from_slice(&validity[..groups]);
                        self.keys.clear();
                        let page_nulls = nulls.slice(start, end - start);
                        self.keys
                            .extend(page_nulls.valid_indices().map(|row| page_keys[row]));
                        page_keys = &self.keys;
                    }
                    // No null: one run of 1s.
                    None => {
                        push_varint(&mut self.page, ((end - start) as u64) << 1);
                        self.page.push(1);
                    }
                }
                let levels = length(self.page.len() - length_at - 4)?;
                self.page[length_at..length_at + 4].copy_from_slice(&levels.to_le_bytes());
            }
            self.page.push(bit_width);
            // Keys are in range: the dictionary array checked them.
            encode_hybrid(page_keys, bit_width, &mut self.page);
            let page = Page::DataPage {
                buf: self.compress()?,
                num_values: length(end - start)?,
                encoding: Encoding::RLE_DICTIONARY,
                def_level_encoding: Encoding::RLE,
                rep_level_encoding: Encoding::RLE,
                statistics: None,
            };
            let spec = pages.write_page(CompressedPage::new(page, self.page.len()))?;
            data_page_offset.get_or_insert(spec.offset as i64);
            compressed += spec.compressed_size as u64;
            uncompressed += spec.uncompressed_size as u64;
            data_pages += 1;
        }
        pages.close()?;
        let end = chunk.bytes_written() as i64;
        let chunk = Bytes::from(chunk.into_inner()?);

        let stats = |page_type, encoding, count| PageEncodingStats {
            page_type,
            encoding,
            count,
        };
        let metadata = ColumnChunkMetaData::builder(descr)
            .set_compression(Compression::ZSTD(self.level))
            .set_encodings(vec![
                Encoding::PLAIN,
                Encoding::RLE,
                Encoding::RLE_DICTIONARY,
            ])
            .set_page_encoding_stats(vec![
                stats(PageType::DICTIONARY_PAGE, Encoding::PLAIN, 1),
                stats(PageType::DATA_PAGE, Encoding::RLE_DICTIONARY, data_pages),
            ])
            .set_total_compressed_size(compressed as i64)
            .set_total_uncompressed_size(uncompressed as i64)
            .set_num_values(rows as i64)
            .set_dictionary_page_offset(Some(0))
            // No data page (no rows): where one would start.
            .set_data_page_offset(data_page_offset.unwrap_or(end))
            .build()?;
        let close = ColumnCloseResult {
            bytes_written: chunk.len() as u64,
            rows_written: rows as u64,
            metadata,
            bloom_filter: None,
            column_index: None,
            offset_index: None,
        };
        row_group.append_column(&chunk, close)
    }

    /// The page encoded so far, compressed.
    fn compress(&mut self) -> Result<Bytes> {
        let mut out = Vec::with_capacity(zstd::zstd_safe::compress_bound(self.page.len()));
        self.compressor
            .compress_to_buffer(&self.page, &mut out)
            .map_err(|e| ParquetError::External(Box::new(e)))?;
        Ok(out.into())
    }
}

/// A length as Parquet's 32-bit fields hold it.
fn length(length: usize) -> Result<u32> {
    u32::try_from(length)
        .map_err(|_| ParquetError::General(format!("{length} is too long for a Parquet page")))
}

/// The bits that hold every number up to `max`.
fn bit_width(max: u32) -> u8 {
    (u32::BITS - max.leading_zeros()) as u8
}

/// Appends `values` (non-negative, of `bit_width` bits at most) to `out`
/// in the RLE/bit-packed hybrid encoding (see the module's
/// documentation).
pub(super) fn encode_hybrid(values: &[i32], bit_width: u8, out: &mut Vec<u8>) {
    let (mut at, mut literal) = (0, 0);
    while at < values.len() {
        let value = values[at];
        let run = values[at..].iter().take_while(|&&v| v == value).count();
        // The pending stretch fills its last group from the run first.
        let fill = (8 - (at - literal) % 8) % 8;
        if run >= 8 && run > fill {
            bit_pack(&values[literal..at + fill], bit_width, out);
            push_varint(out, ((run - fill) as u64) << 1);
            let bytes = usize::from(bit_width).div_ceil(8);
            out.extend_from_slice(&value.to_le_bytes()[..bytes]);
            literal = at + run;
        }
        at += run;
    }
    bit_pack(&values[literal..], bit_width, out);
}

/// Appends `values` bit-packed, in groups of 8 (the last padded).
fn bit_pack(values: &[i32], bit_width: u8, out: &mut Vec<u8>) {
    if values.is_empty() {
        return;
    }
    let groups = values.len().div_ceil(8);
    push_varint(out, (groups as u64) << 1 | 1);
    let width = u32::from(bit_width);
    out.reserve(groups * usize::from(bit_width));
    let (mut bits, mut filled) = (0u64, 0u32);
    for &value in values {
        bits |= u64::from(value as u32) << filled;
        filled += width;
        while filled >= 8 {
            out.push(bits as u8);
            bits >>= 8;
            filled -= 8;
        }
    }
    // What is left of the last value, then zeros to the group's end.
    let written = values.len() * usize::from(bit_width) / 8;
    for _ in written..groups * usize::from(bit_width) {
        out.push(bits as u8);
        bits >>= 8;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Int32Array, RecordBatch};
    use arrow_schema::{DataType, Field, Schema};
    use parquet::arrow::ArrowSchemaConverter;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;

    use super::*;

    /// Keys in runs of 1 to 24 equal values (so that runs shorter than,
    /// as long as and longer than a group meet stretches of every
    /// length), a run in five null when `nulls`.
    fn keys(rows: usize, values: usize, nulls: bool, seed: u64) -> Vec<Option<i32>> {
        let mut state = seed;
        let mut next = move |below: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % below.max(1)
        };
        let mut keys = Vec::with_capacity(rows);
        while keys.len() < rows {
            let run = 1 + next(24) as usize;
            let key = (values > 0 && !(nulls && next(5) == 0)).then(|| next(values as u64) as i32);
            keys.extend(std::iter::repeat_n(key, run.min(rows - keys.len())));
        }
        keys
    }

    /// `column` written as the only column of a file (`nullable` or not).
    fn write_file(column: &DictionaryArray<Int32Type>, nullable: bool) -> Result<Bytes> {
        let data_type = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
        let schema = Schema::new(vec![Field::new("name", data_type, nullable)]);
        let parquet_schema = ArrowSchemaConverter::new().convert(&schema)?;
        let properties = Arc::new(WriterProperties::builder().build());
        let mut file =
            SerializedFileWriter::new(Vec::new(), parquet_schema.root_schema_ptr(), properties)?;
        let mut row_group = file.next_row_group()?;
        let mut writer = DictionaryWriter::new(ZstdLevel::default())?;
        writer.write(column, parquet_schema.column(0), &mut row_group)?;
        row_group.close()?;
        Ok(Bytes::from(file.into_inner()?))
    }

    /// Writes `keys` into `values` as a one-column file and reads the
    /// column back as strings.
    fn round_trip(keys: &[Option<i32>], values: usize, nullable: bool) -> Vec<Option<String>> {
        let names: Vec<String> = (0..values).map(|v| format!("value-{v}")).collect();
        let column = DictionaryArray::<Int32Type>::try_new(
            Int32Array::from(keys.to_vec()),
            Arc::new(StringArray::from(names)),
        )
        .unwrap();
        let bytes = write_file(&column, nullable).unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(bytes)
            .unwrap()
            .build()
            .unwrap();
        let batches: Vec<RecordBatch> = reader.map(|batch| batch.unwrap()).collect();
        batches
            .iter()
            .flat_map(|batch| {
                let strings = batch
                    .column(0)
                    .as_any()
                    .downcast_ref::<StringArray>()
                    .unwrap();
                strings
                    .iter()
                    .map(|s| s.map(str::to_string))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    #[test]
    fn keys_read_back_as_written_at_every_bit_width() {
        // 0 values (all null), 1 value (bit width 0), then widths 1 to 17
        // at and past their bounds; 2.3 pages of rows, the last partial.
        let rows = PAGE_ROWS * 2 + PAGE_ROWS / 3 + 5;
        for (seed, values) in [0, 1, 2, 3, 4, 5, 255, 256, 257, 65_536, 70_000]
            .into_iter()
            .enumerate()
        {
            // Required; nullable without a null (levels: one run); with nulls.
            for (nullable, nulls) in [(false, false), (true, false), (true, true)] {
                if values == 0 && !nulls {
                    continue;
                }
                let keys = keys(rows, values, nulls, seed as u64);
                let expected: Vec<Option<String>> = keys
                    .iter()
                    .map(|key| key.map(|k| format!("value-{k}")))
                    .collect();
                let read = round_trip(&keys, values, nullable);
                assert_eq!(read.len(), expected.len(), "{values} values");
                let first_difference = read.iter().zip(&expected).position(|(r, e)| r != e);
                assert_eq!(
                    first_difference, None,
                    "{values} values, nullable {nullable}, nulls {nulls}"
                );
            }
        }
        // A row group without rows (a thread without tracepoints): a
        // dictionary page and no data page.
        for (values, nullable) in [(0, true), (1, false), (3, true)] {
            assert!(round_trip(&[], values, nullable).is_empty());
        }
    }

    #[test]
    fn hybrid_runs_are_encoded_as_the_format_specifies() {
        let encoded = |values: &[i32], bit_width| {
            let mut out = Vec::new();
            encode_hybrid(values, bit_width, &mut out);
            out
        };
        // The specification's example: 0 to 7 bit-packed in 3 bits.
        assert_eq!(
            encoded(&[0, 1, 2, 3, 4, 5, 6, 7], 3),
            [0x03, 0x88, 0xC6, 0xFA]
        );
        // A short last group is padded to whole: 8 values, 2 bytes.
        assert_eq!(encoded(&[1, 2, 3], 2), [0x03, 0x39, 0x00]);
        // A run: its length shifted left, the value in one byte.
        assert_eq!(encoded(&[5; 10], 3), [0x14, 0x05]);
        // 3 ones fill their group with 5 of the 10 twos after them.
        assert_eq!(
            encoded(&[1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2], 2),
            [0x03, 0x95, 0xAA, 0x0A, 0x02]
        );
        // Bit width 0: runs without value bytes.
        assert_eq!(encoded(&[0; 20], 0), [0x28]);
        // A value of 9 bits takes 2 bytes in a run.
        assert_eq!(encoded(&[300; 8], 9), [0x10, 0x2C, 0x01]);
    }

    #[test]
    fn a_null_in_a_required_column_is_an_error() {
        let column = DictionaryArray::<Int32Type>::try_new(
            Int32Array::from(vec![Some(0), None]),
            Arc::new(StringArray::from(vec!["a"])),
        )
        .unwrap();
        let written = write_file(&column, false);
        assert!(
            written
                .unwrap_err()
                .to_string()
                .contains("nulls in the required column")
        );
    }
}
