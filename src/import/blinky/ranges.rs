//! The file's lines parsed in parallel, applied in order.
//!
//! Every line stands alone, so the file is cut into ranges of about
//! [`RANGE_BYTES`] that end at a newline. While the calling thread applies
//! the parsed lines of one batch of ranges in file order, rayon's workers
//! parse the next batch (a range per worker). Memory holds two batches of parsed lines, never
//! the file; the pages of each applied range are released.

use rayon::prelude::*;

use crate::error::Result;
use crate::storage::TraceBytes;

use super::line::{self, Line};

/// Bytes of text per range: large enough that parsing one outweighs
/// handing it to a worker, small enough that its parsed lines stay a few
/// MB.
const RANGE_BYTES: usize = 2 << 20;

/// Calls `apply` with every whole line of `bytes`, parsed, in file order,
/// and `progress` with the bytes applied so far after each range; returns
/// the offset of a cut last line (one with no newline), which is not
/// applied.
pub(super) fn for_each_parsed(
    bytes: &TraceBytes,
    progress: &dyn Fn(u64),
    apply: impl FnMut(Line<'_>) -> Result<()>,
) -> Result<Option<usize>> {
    for_each_parsed_in(bytes, RANGE_BYTES, progress, apply)
}

/// [`for_each_parsed`] with ranges of about `range_bytes`.
fn for_each_parsed_in(
    bytes: &TraceBytes,
    range_bytes: usize,
    progress: &dyn Fn(u64),
    mut apply: impl FnMut(Line<'_>) -> Result<()>,
) -> Result<Option<usize>> {
    let slice = bytes.as_slice();
    let whole = memchr::memrchr(b'\n', slice).map_or(0, |newline| newline + 1);
    let cut = (whole < slice.len()).then_some(whole);
    let batch_len = rayon::current_num_threads().max(1);
    let mut next_start = 0;
    let next_batch = |next_start: &mut usize| {
        let mut ranges = Vec::with_capacity(batch_len);
        while ranges.len() < batch_len && *next_start < whole {
            let end = range_end(slice, *next_start, range_bytes, whole);
            ranges.push(*next_start..end);
            *next_start = end;
        }
        ranges
    };
    let mut current = parse_batch(slice, next_batch(&mut next_start));
    while !current.is_empty() {
        let upcoming = next_batch(&mut next_start);
        let mut parsed = Vec::new();
        rayon::in_place_scope(|scope| -> Result<()> {
            scope.spawn(|_| parsed = parse_batch(slice, upcoming));
            for (range, lines) in std::mem::take(&mut current) {
                for line in lines {
                    apply(line)?;
                }
                bytes.release_around(range.start as u64..range.end as u64);
                progress(range.end as u64);
            }
            Ok(())
        })?;
        current = parsed;
    }
    Ok(cut)
}

/// The end of the range starting at `start`: just past the first newline
/// at or after `start + range_bytes`, or `whole`.
fn range_end(slice: &[u8], start: usize, range_bytes: usize, whole: usize) -> usize {
    let nominal = start.saturating_add(range_bytes);
    if nominal >= whole {
        return whole;
    }
    match memchr::memchr(b'\n', &slice[nominal..whole]) {
        Some(newline) => nominal + newline + 1,
        None => whole,
    }
}

/// A range and its lines, parsed.
type Parsed<'a> = (std::ops::Range<usize>, Vec<Line<'a>>);

/// The lines of each range, parsed on rayon's workers.
fn parse_batch(slice: &[u8], ranges: Vec<std::ops::Range<usize>>) -> Vec<Parsed<'_>> {
    ranges
        .into_par_iter()
        .map(|range| {
            let text = &slice[range.clone()];
            let mut lines = Vec::with_capacity(text.len() / 32);
            let mut start = 0;
            for newline in memchr::memchr_iter(b'\n', text) {
                lines.push(line::parse(&text[start..newline]));
                start = newline + 1;
            }
            (range, lines)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every whole line is applied once, in order, whatever the range
    /// size; a last line without newline is reported, not applied.
    #[test]
    fn lines_arrive_in_order_for_every_range_size() {
        let mut text = Vec::new();
        for i in 0..500u64 {
            match i % 5 {
                0 => text.extend_from_slice(format!("$$$,{i},{},0,1,0,{i},1\n", i % 3).as_bytes()),
                1 => text.extend_from_slice(b"program output\n"),
                2 => text.extend_from_slice(b"\n"),
                3 => text.extend_from_slice(format!("$$method$$,{i},m{i},a/B,1\n").as_bytes()),
                _ => text.extend_from_slice(format!("$line$,{i},1,2,3,-1,,,\r\n").as_bytes()),
            }
        }
        for tail in [&b""[..], b"$$$,1,2,3"] {
            let mut bytes = text.clone();
            bytes.extend_from_slice(tail);
            let expected: Vec<Line<'_>> = text
                .strip_suffix(b"\n")
                .unwrap()
                .split(|&b| b == b'\n')
                .map(line::parse)
                .collect();
            let trace = TraceBytes::from_vec(bytes.clone());
            for range_bytes in [1, 7, 64, 1000, 1 << 20] {
                let mut seen = Vec::new();
                let cut = for_each_parsed_in(&trace, range_bytes, &|_| {}, |parsed| {
                    seen.push(format!("{parsed:?}"));
                    Ok(())
                })
                .unwrap();
                let expected: Vec<String> = expected.iter().map(|l| format!("{l:?}")).collect();
                assert_eq!(seen, expected, "ranges of {range_bytes}");
                assert_eq!(cut, (!tail.is_empty()).then_some(text.len()));
            }
        }
    }
}
