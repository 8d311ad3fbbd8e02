//! The file's lines parsed in parallel, applied in order.
//!
//! Every line stands alone, so the file is cut into ranges of about
//! [`RANGE_BYTES`] that end at a newline. While the calling thread applies
//! the parsed lines of one batch of ranges in file order, rayon's workers
//! parse the next batch (a range per worker). An execution of the common
//! shape is read from its line's start in one scan, each number parsed as
//! its `,` is looked for, and only the rest of the line is searched for the
//! newline (eight bytes at a time); any other line is cut at its newline
//! first. The first reading's executions of known threads are read up to
//! THREAD only. A range's lines are kept
//! compact: an execution by its three numbers, a run of program output or
//! malformed lines by its length, any other line (a declaration: rare) by
//! its place, parsed again when applied; so a range's parsed lines take
//! at most a few times its bytes (the shortest line kept alone, a
//! `$$x$,` declaration, is 6 bytes). Memory holds two batches of parsed
//! lines, never the file; the pages of each applied range are released.

use std::cell::Cell;
use std::collections::BTreeSet;
use std::sync::{PoisonError, RwLock};

use rayon::prelude::*;
use rustc_hash::FxHashSet;

use crate::error::Result;
use crate::storage::TraceBytes;

use super::line::{self, Line};

/// Bytes of text per range: large enough that parsing one outweighs
/// handing it to a worker, small enough that its parsed lines stay a few
/// MB.
pub(super) const RANGE_BYTES: usize = 1 << 20;

/// Which executions a pass applies.
#[derive(Debug, Clone, Copy)]
pub(super) enum Executions<'a> {
    /// Every one.
    All,
    /// None of the threads in the set (those the caller has learnt all it
    /// needs about: it adds to the set as it applies, and ranges parsed
    /// later leave them out), and within each range only the first of a
    /// thread's executions of an instruction since the range's start or its
    /// last instruction declaration: the instructions' meanings cannot
    /// change in between, so the others tell nothing new about which
    /// threads make tracepoints.
    Distinct(&'a RwLock<BTreeSet<u64>>),
}

/// Calls `apply` with every whole line of `bytes` (but the executions
/// `executions` leaves out), parsed, in file order, reading ranges of
/// about `range_bytes`, and `progress` with the bytes applied so far after
/// each range; returns the offset of a cut last line (one with no
/// newline), which is not applied.
pub(super) fn for_each_parsed(
    bytes: &TraceBytes,
    range_bytes: usize,
    executions: Executions<'_>,
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
    let mut current = parse_batch(slice, next_batch(&mut next_start), executions);
    while !current.is_empty() {
        let upcoming = next_batch(&mut next_start);
        let mut parsed = Vec::new();
        rayon::in_place_scope(|scope| -> Result<()> {
            scope.spawn(|_| parsed = parse_batch(slice, upcoming, executions));
            for (range, lines) in std::mem::take(&mut current) {
                for line in lines {
                    match line {
                        Parsed::Execution {
                            thread,
                            depth,
                            instruction,
                        } => apply(Line::Execution {
                            thread,
                            depth,
                            instruction,
                        })?,
                        Parsed::Run { malformed, lines } => {
                            for _ in 0..lines {
                                apply(if malformed {
                                    Line::Malformed
                                } else {
                                    Line::Output
                                })?;
                            }
                        }
                        Parsed::Other { start, end } => apply(line::parse(&slice[start..end]))?,
                    }
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

/// A line, parsed compactly.
#[derive(Debug, Clone, Copy)]
enum Parsed {
    /// An execution of the common shape ([`line::plain_start`]).
    Execution {
        thread: u64,
        depth: i64,
        instruction: u64,
    },
    /// A run of program output lines, or of malformed ones: lines that
    /// only count.
    Run { malformed: bool, lines: usize },
    /// Any other line: its place in the file, without the newline.
    Other { start: usize, end: usize },
}

/// A range and its lines, parsed.
type ParsedRange = (std::ops::Range<usize>, Vec<Parsed>);

/// The lines of each range, parsed on rayon's workers.
fn parse_batch(
    slice: &[u8],
    ranges: Vec<std::ops::Range<usize>>,
    executions: Executions<'_>,
) -> Vec<ParsedRange> {
    ranges
        .into_par_iter()
        .map(|range| {
            let lines = match executions {
                Executions::All => parse_range(slice, range.clone(), |_| None, |_| true),
                Executions::Distinct(known) => {
                    let known: FxHashSet<u64> = known
                        .read()
                        .unwrap_or_else(PoisonError::into_inner)
                        .iter()
                        .copied()
                        .collect();
                    let mut seen = FxHashSet::default();
                    // Lines of `$$$` shape are executions or malformed:
                    // those of known threads need no more reading.
                    // The last known thread met: runs of one thread's
                    // lines take no lookup.
                    let last = Cell::new(None);
                    let skip = |text: &[u8]| {
                        let (thread, at) = line::thread_start(text)?;
                        if last.get() != Some(thread) {
                            if !known.contains(&thread) {
                                return None;
                            }
                            last.set(Some(thread));
                        }
                        Some(at)
                    };
                    parse_range(slice, range.clone(), skip, |parsed| match *parsed {
                        Parsed::Execution {
                            thread,
                            instruction,
                            ..
                        } => seen.insert((thread, instruction)),
                        Parsed::Other { start, end } => {
                            if let Line::Instruction(_) = line::parse(&slice[start..end]) {
                                seen.clear();
                            }
                            true
                        }
                        Parsed::Run { .. } => true,
                    })
                }
            };
            (range, lines)
        })
        .collect()
}

/// For a line [`line::plain_start`] does not read: whether it only counts, as
/// malformed (`Some(true)`) or as program output (`Some(false)`).
fn counted(text: &[u8]) -> Option<bool> {
    if text.first() != Some(&b'$') {
        return Some(false);
    }
    match line::parse(text) {
        Line::Output => Some(false),
        Line::Malformed => Some(true),
        _ => None,
    }
}

/// The lines of `range`, parsed, but those `skip` leaves out unparsed and
/// those `keep` leaves out parsed. `skip` is given the text from a line's
/// start on (past its newline) and returns, for a line it leaves out, an
/// offset at or before the newline.
#[inline]
fn parse_range(
    slice: &[u8],
    range: std::ops::Range<usize>,
    skip: impl Fn(&[u8]) -> Option<usize>,
    mut keep: impl FnMut(&Parsed) -> bool,
) -> Vec<Parsed> {
    let text = &slice[range.clone()];
    let mut lines = Vec::with_capacity(text.len() / 48);
    let mut start = 0;
    while let Some(rest) = text.get(start..).filter(|rest| !rest.is_empty()) {
        if let Some(at) = skip(rest) {
            let Some(newline) = line::find(rest, at, b'\n') else {
                break;
            };
            start += newline + 1;
            continue;
        }
        let (parsed, newline) = match line::plain_start(rest) {
            Some(((thread, depth, instruction), at)) => {
                let Some(newline) = line::find(rest, at, b'\n') else {
                    break;
                };
                let execution = Parsed::Execution {
                    thread,
                    depth,
                    instruction,
                };
                (execution, newline)
            }
            None => {
                let Some(newline) = memchr::memchr(b'\n', rest) else {
                    break;
                };
                match counted(&rest[..newline]) {
                    Some(malformed) => {
                        match lines.last_mut() {
                            Some(Parsed::Run {
                                malformed: m,
                                lines,
                            }) if *m == malformed => *lines += 1,
                            _ => lines.push(Parsed::Run {
                                malformed,
                                lines: 1,
                            }),
                        }
                        start += newline + 1;
                        continue;
                    }
                    None => {
                        let other = Parsed::Other {
                            start: range.start + start,
                            end: range.start + start + newline,
                        };
                        (other, newline)
                    }
                }
            }
        };
        if keep(&parsed) {
            lines.push(parsed);
        }
        start += newline + 1;
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Program output (blank lines and lone `$` included) and malformed
    /// lines are kept as runs: a range of short lines takes little memory.
    #[test]
    fn lines_that_only_count_are_kept_as_runs() {
        let text = b"x\n\n$\n$$$,1,2,3,4,5,6,7\n$$$,\n$,\n\n$x$,1,2,3\n".repeat(1000);
        let lines = parse_range(&text, 0..text.len(), |_| None, |_| true);
        // Per repeat: output run, execution, malformed run, output run,
        // instruction.
        assert_eq!(lines.len(), 5000);
        let (mut outputs, mut malformed) = (0, 0);
        for parsed in &lines {
            match *parsed {
                Parsed::Run {
                    malformed: true,
                    lines,
                } => malformed += lines,
                Parsed::Run { lines, .. } => outputs += lines,
                _ => {}
            }
        }
        assert_eq!((outputs, malformed), (5000, 1000));
    }

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
                let cut =
                    for_each_parsed(&trace, range_bytes, Executions::All, &|_| {}, |parsed| {
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
