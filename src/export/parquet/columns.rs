//! The buffers a row group's columns are filled into: plain vectors and
//! one string of text per column, handed to Arrow without a copy and
//! taken back once the row group is written, so that each row group
//! refills the memory of the one before.

use std::sync::Arc;

use arrow_array::types::{ArrowPrimitiveType, Int32Type};
use arrow_array::{Array, ArrayRef, DictionaryArray, PrimitiveArray, StringArray};
use arrow_buffer::{
    ArrowNativeType, BooleanBuffer, Buffer, NullBuffer, NullBufferBuilder, OffsetBuffer,
};
use rustc_hash::FxHashMap;

use crate::error::{Error, Result};

/// A column of numbers, every row a value.
pub(super) struct Numbers<T: ArrowPrimitiveType> {
    values: Vec<T::Native>,
}

impl<T: ArrowPrimitiveType> Numbers<T> {
    pub(super) fn with_capacity(rows: usize) -> Self {
        Numbers {
            values: Vec::with_capacity(rows),
        }
    }

    #[inline]
    pub(super) fn push(&mut self, value: T::Native) {
        self.values.push(value);
    }

    /// Replaces the value of row `row` (pushed before).
    #[inline]
    pub(super) fn set(&mut self, row: usize, value: T::Native) {
        if let Some(slot) = self.values.get_mut(row) {
            *slot = value;
        }
    }

    /// The row group's column; the column starts again, empty.
    pub(super) fn finish(&mut self) -> ArrayRef {
        self.finish_with(None)
    }

    fn finish_with(&mut self, nulls: Option<NullBuffer>) -> ArrayRef {
        let values = std::mem::take(&mut self.values);
        Arc::new(PrimitiveArray::<T>::new(values.into(), nulls))
    }

    /// Takes back the values of `array`, the column [`finish`](Self::finish)
    /// made, once nothing else holds them.
    pub(super) fn reclaim(&mut self, array: ArrayRef, rows: usize) {
        let buffer = array
            .as_any()
            .downcast_ref::<PrimitiveArray<T>>()
            .map(|a| a.values().inner().clone());
        drop(array);
        refill(&mut self.values, buffer, rows);
    }
}

/// A column of numbers, each row a value or null.
pub(super) struct OptionalNumbers<T: ArrowPrimitiveType> {
    numbers: Numbers<T>,
    nulls: NullBufferBuilder,
}

impl<T: ArrowPrimitiveType> OptionalNumbers<T> {
    pub(super) fn with_capacity(rows: usize) -> Self {
        OptionalNumbers {
            numbers: Numbers::with_capacity(rows),
            nulls: NullBufferBuilder::new(rows),
        }
    }

    #[inline]
    pub(super) fn push(&mut self, value: Option<T::Native>) {
        self.numbers.push(value.unwrap_or_default());
        self.nulls.append(value.is_some());
    }

    /// The row group's column; the column starts again, empty.
    pub(super) fn finish(&mut self) -> ArrayRef {
        self.numbers.finish_with(self.nulls.finish())
    }

    /// As [`Numbers::reclaim`].
    pub(super) fn reclaim(&mut self, array: ArrayRef, rows: usize) {
        self.numbers.reclaim(array, rows);
    }
}

/// A column of text, each row a string or null: the strings end to end in
/// one buffer, the rows' ends in another.
pub(super) struct Texts {
    values: String,
    ends: Vec<i32>,
    nulls: NullBufferBuilder,
}

impl Texts {
    pub(super) fn with_capacity(rows: usize, bytes: usize) -> Self {
        let mut ends = Vec::with_capacity(rows + 1);
        ends.push(0);
        Texts {
            values: String::with_capacity(bytes),
            ends,
            nulls: NullBufferBuilder::new(rows),
        }
    }

    /// Where the next row's string is written: finish it with
    /// [`end`](Self::end).
    #[inline]
    pub(super) fn text(&mut self) -> &mut String {
        &mut self.values
    }

    /// Ends the row whose string was written into [`text`](Self::text).
    #[inline]
    pub(super) fn end(&mut self) -> Result<()> {
        let end = i32::try_from(self.values.len()).map_err(|_| {
            Error::limit(
                "bytes of text in a Parquet row group",
                self.values.len(),
                i32::MAX,
            )
        })?;
        self.ends.push(end);
        self.nulls.append_non_null();
        Ok(())
    }

    #[inline]
    pub(super) fn push_null(&mut self) {
        self.ends.push(self.ends.last().copied().unwrap_or(0));
        self.nulls.append_null();
    }

    /// The row group's column; the column starts again, empty.
    pub(super) fn finish(&mut self) -> Result<ArrayRef> {
        let ends = std::mem::replace(&mut self.ends, vec![0]);
        let values = std::mem::take(&mut self.values);
        let array = StringArray::try_new(
            OffsetBuffer::new(ends.into()),
            Buffer::from_vec(values.into_bytes()),
            self.nulls.finish(),
        )
        .map_err(|e| Error::internal(format!("building a Parquet text column: {e}")))?;
        Ok(Arc::new(array))
    }

    /// Takes back the buffers of `array`, the column
    /// [`finish`](Self::finish) made, once nothing else holds them.
    pub(super) fn reclaim(&mut self, array: ArrayRef, rows: usize, bytes: usize) {
        let buffers = array
            .as_any()
            .downcast_ref::<StringArray>()
            .map(|a| (a.offsets().inner().inner().clone(), a.values().clone()));
        drop(array);
        let (ends, values) = buffers.unzip();
        refill(&mut self.ends, ends, rows + 1);
        self.ends.push(0);
        let mut bytes_back = Vec::new();
        refill(&mut bytes_back, values, bytes);
        // Empty, hence valid UTF-8.
        self.values = String::from_utf8(bytes_back).unwrap_or_default();
        if self.values.capacity() < bytes {
            self.values.reserve(bytes);
        }
    }
}

/// Makes `vector` an empty vector of at least `capacity`, from `buffer`'s
/// memory if it is no longer shared.
fn refill<T: ArrowNativeType>(vector: &mut Vec<T>, buffer: Option<Buffer>, capacity: usize) {
    if let Some(Ok(mut back)) = buffer.map(|b| b.into_vec::<T>()) {
        back.clear();
        *vector = back;
    }
    vector.clear();
    vector.reserve(capacity);
}

/// A dictionary-encoded string column whose keys the rows give: each
/// distinct value is added once per row group, so a row costs a key, not
/// a string hashed and compared.
pub(super) struct KeyedColumn {
    /// The rows' keys, [`NO_KEY`] for a null.
    keys: Vec<i32>,
    nulls: usize,
    values: Texts,
    known: FxHashMap<Arc<str>, i32>,
}

/// A null row's key: its place in the null bitmap is found from it when
/// the row group ends, not kept row by row.
const NO_KEY: i32 = -1;

impl KeyedColumn {
    pub(super) fn with_capacity(rows: usize) -> Self {
        KeyedColumn {
            keys: Vec::with_capacity(rows),
            nulls: 0,
            values: Texts::with_capacity(0, 0),
            known: FxHashMap::default(),
        }
    }

    /// The key of `value` in this row group's dictionary.
    pub(super) fn key(&mut self, value: &Arc<str>) -> Result<i32> {
        if let Some(&key) = self.known.get(value) {
            return Ok(key);
        }
        let key = i32::try_from(self.known.len()).map_err(|_| {
            Error::limit("values in a Parquet dictionary", self.known.len(), i32::MAX)
        })?;
        self.values.text().push_str(value);
        self.values.end()?;
        self.known.insert(value.clone(), key);
        Ok(key)
    }

    #[inline]
    pub(super) fn push(&mut self, key: Option<i32>) {
        self.nulls += usize::from(key.is_none());
        self.keys.push(key.unwrap_or(NO_KEY));
    }

    /// Adds `rows` rows of `key`.
    pub(super) fn push_n(&mut self, key: i32, rows: usize) {
        self.keys.resize(self.keys.len() + rows, key);
    }

    /// The row group's column; the dictionary starts again.
    pub(super) fn finish(&mut self) -> Result<ArrayRef> {
        self.known.clear();
        let mut keys = std::mem::take(&mut self.keys);
        let nulls = (std::mem::take(&mut self.nulls) > 0).then(|| {
            let valid = BooleanBuffer::collect_bool(keys.len(), |i| {
                keys.get(i).is_some_and(|&key| key != NO_KEY)
            });
            // A key in range under each null spares Arrow's check of the
            // keys a look at the bitmap for each.
            for key in &mut keys {
                *key = (*key).max(0);
            }
            NullBuffer::new(valid)
        });
        let keys = PrimitiveArray::<Int32Type>::new(keys.into(), nulls);
        let array = DictionaryArray::<Int32Type>::try_new(keys, self.values.finish()?)
            .map_err(|e| Error::internal(format!("building a Parquet dictionary column: {e}")))?;
        Ok(Arc::new(array))
    }

    /// Takes back the keys of `array`, the column [`finish`](Self::finish)
    /// made, once nothing else holds them.
    pub(super) fn reclaim(&mut self, array: ArrayRef, rows: usize) {
        let keys = array
            .as_any()
            .downcast_ref::<DictionaryArray<Int32Type>>()
            .map(|a| a.keys().values().inner().clone());
        drop(array);
        refill(&mut self.keys, keys, rows);
    }
}
