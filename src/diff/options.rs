//! What a diff is asked to do ([`DiffOptions`]) and which threads it pairs
//! ([`match_threads`]), as the reference's `TraceDiffOptions` and its thread
//! matching.

use crate::error::{Error, Result};

/// How the threads of the two traces are paired.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ThreadMatching {
    /// Each left thread with the first unused right thread of the same name
    /// (the default).
    #[default]
    ByName,
    /// The n-th left thread with the n-th right thread (threads ordered by
    /// id, threads without tracepoints left out).
    ByIndex,
    /// The pairs given, by thread name (`left name`, `right name`), in
    /// order; the rest are unmatched.
    NameMap(Vec<(String, String)>),
    /// The pairs given, by thread index, in order; the rest are unmatched.
    IndexMap(Vec<(usize, usize)>),
}

/// What happens to a thread present in one trace only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnmatchedThreads {
    /// Diffed against nothing: all removed, or all added (the default).
    #[default]
    Diff,
    /// Left out of the diff.
    Skip,
    /// The diff fails.
    Error,
}

/// The options of [`diff_traces`](crate::diff::diff_traces): the
/// reference's `TraceDiffOptions`, plus the bound on Myers' work.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DiffOptions {
    /// How threads are paired.
    pub matching: ThreadMatching,
    /// Pair the two threads holding event id 0 first, whatever their
    /// names or positions (not with a map).
    pub start_threads: bool,
    /// Diff only the two threads holding event id 0 (implies
    /// `start_threads`).
    pub only_start_threads: bool,
    /// What happens to unmatched threads.
    pub unmatched: UnmatchedThreads,
    /// Diff traces that are diffs themselves.
    pub allow_diffs: bool,
    /// The most edits Myers' diff looks for between two children lists
    /// (past their common prefix) before it gives up for a linear alignment
    /// window by window (Myers' diff of 1024 children a side at a time,
    /// each window bound alike, else aligned by position): its time is
    /// O(list length × bound), its memory O(bound²): 8 bytes × bound² at
    /// most, 32 MiB for the default 2048. The reference has no bound.
    pub max_edits: usize,
    /// The most tracepoints of a side held in memory to align two
    /// children lists as they stream (the lists' unequal rest, subtrees
    /// included). Past it, the rest is read past keeping one key per child
    /// and written from the reader by node: the same diff, slower.
    pub max_held: usize,
    /// The most children's keys of a side held to align two lists read
    /// past (24 bytes each): such lists are aligned as the reference does
    /// (within [`max_edits`](Self::max_edits)). Longer ones are aligned
    /// window by window as they are read (as past `max_edits`, with a
    /// warning): memory bounded by the options, not by the lists.
    pub max_keys: usize,
    /// Compare the traces as the reference does, through its
    /// post-processing ([`Postprocessed`](crate::tree::Postprocessed):
    /// `$default` and `access$` pairs, synthetic and generated accessors
    /// compressed, coverage and empty loops dropped); off, as recorded.
    pub postprocess: bool,
    /// The least size in bytes of an aligned pair of strictly equal calls
    /// (or roots, loops) whose subtrees are compared by their bytes, and,
    /// when the same, copied as unchanged in one walk without keys (both
    /// sides' streams skip them): smaller ones are compared node by node,
    /// as cheaply. `0`: every one; `u64::MAX`: none. The same diff either
    /// way.
    pub min_copied_bytes: u64,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions {
            matching: ThreadMatching::ByName,
            start_threads: false,
            only_start_threads: false,
            unmatched: UnmatchedThreads::Diff,
            allow_diffs: false,
            max_edits: 2048,
            max_held: 1 << 18,
            max_keys: 1 << 21,
            postprocess: true,
            min_copied_bytes: 1 << 20,
        }
    }
}

impl DiffOptions {
    /// Fails on combinations the reference refuses: start threads with a
    /// map.
    pub fn check(&self) -> Result<()> {
        let custom = matches!(
            self.matching,
            ThreadMatching::NameMap(_) | ThreadMatching::IndexMap(_)
        );
        if custom && (self.start_threads || self.only_start_threads) {
            return Err(Error::invalid(
                "thread matching",
                "start threads cannot be matched when a thread map is given",
            ));
        }
        Ok(())
    }
}

/// One input thread, as matching sees it: a thread with a root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InputThread {
    /// Its id in its trace.
    pub(crate) id: i32,
    /// Its name (empty when the trace has none).
    pub(crate) name: String,
    /// Whether its root is event 0.
    pub(crate) starts: bool,
}

/// One thread of the diff: its name and the indices it pairs (`None`: not
/// present on that side).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadPair {
    /// The diff thread's name.
    pub name: String,
    /// Whether it pairs the start threads.
    pub start: bool,
    /// The left thread's index (its position among the left threads).
    pub left: Option<usize>,
    /// The right thread's index.
    pub right: Option<usize>,
}

fn pair_name(left: &str, right: &str) -> String {
    if left == right {
        left.to_string()
    } else {
        format!("left: {left}, right: {right}")
    }
}

/// The reference's thread map: the diff threads, in order.
pub(crate) fn match_threads(
    left: &[InputThread],
    right: &[InputThread],
    options: &DiffOptions,
) -> Result<Vec<ThreadPair>> {
    options.check()?;
    let mut map = Vec::new();
    let start = if options.start_threads || options.only_start_threads {
        let l = left.iter().position(|t| t.starts);
        let r = right.iter().position(|t| t.starts);
        match (l, r) {
            (Some(l), Some(r)) => {
                // The reference names them by the thread whose *id* is the
                // index (a quirk kept for byte compatibility).
                let name_of = |threads: &[InputThread], index: usize| {
                    threads
                        .iter()
                        .find(|t| t.id == index as i32)
                        .map_or_else(String::new, |t| t.name.clone())
                };
                let pair = ThreadPair {
                    name: format!(
                        "Start thread (left: {}, right: {})",
                        name_of(left, l),
                        name_of(right, r)
                    ),
                    start: true,
                    left: Some(l),
                    right: Some(r),
                };
                map.push(pair);
                Some((l, r))
            }
            _ => None,
        }
    } else {
        None
    };
    match &options.matching {
        ThreadMatching::ByName => {
            let mut used = vec![false; right.len()];
            for (l, thread) in left.iter().enumerate() {
                if start.is_some_and(|(sl, _)| sl == l) {
                    continue;
                }
                let r = (0..right.len()).find(|&r| {
                    !used[r] && right[r].name == thread.name && start.is_none_or(|(_, sr)| sr != r)
                });
                if let Some(r) = r {
                    used[r] = true;
                }
                map.push(ThreadPair {
                    name: thread.name.clone(),
                    start: false,
                    left: Some(l),
                    right: r,
                });
            }
            for (r, thread) in right.iter().enumerate() {
                if used[r] || start.is_some_and(|(_, sr)| sr == r) {
                    continue;
                }
                map.push(ThreadPair {
                    name: thread.name.clone(),
                    start: false,
                    left: None,
                    right: Some(r),
                });
            }
        }
        ThreadMatching::ByIndex => {
            let (mut l, mut r) = (0, 0);
            loop {
                if start.is_some_and(|(sl, _)| sl == l) {
                    l += 1;
                }
                if start.is_some_and(|(_, sr)| sr == r) {
                    r += 1;
                }
                let pair = match (left.get(l), right.get(r)) {
                    (Some(a), Some(b)) => ThreadPair {
                        name: pair_name(&a.name, &b.name),
                        start: false,
                        left: Some(l),
                        right: Some(r),
                    },
                    (Some(a), None) => ThreadPair {
                        name: a.name.clone(),
                        start: false,
                        left: Some(l),
                        right: None,
                    },
                    (None, Some(b)) => ThreadPair {
                        name: b.name.clone(),
                        start: false,
                        left: None,
                        right: Some(r),
                    },
                    (None, None) => break,
                };
                map.push(pair);
                l += 1;
                r += 1;
            }
        }
        ThreadMatching::NameMap(pairs) => {
            let (mut used_left, mut used_right) =
                (vec![false; left.len()], vec![false; right.len()]);
            for (left_name, right_name) in pairs {
                let l = (0..left.len())
                    .find(|&l| !used_left[l] && left[l].name == *left_name)
                    .ok_or_else(|| {
                        Error::invalid(
                            "thread map",
                            format!("there is no thread {left_name:?} in the left trace"),
                        )
                    })?;
                used_left[l] = true;
                // The reference skips right threads whose *left* index is
                // used (and then fails on a thread mapped twice); the first
                // right thread of the name not yet used is what it meant,
                // and the same thread wherever the reference succeeds.
                let named = |r: usize| right[r].name == *right_name;
                let r = (0..right.len())
                    .find(|&r| !used_left.get(r).copied().unwrap_or(false) && named(r))
                    .filter(|&r| !used_right[r])
                    .or_else(|| (0..right.len()).find(|&r| !used_right[r] && named(r)))
                    .ok_or_else(|| {
                        Error::invalid(
                            "thread map",
                            format!(
                                "there is no unmapped thread {right_name:?} in the right trace"
                            ),
                        )
                    })?;
                used_right[r] = true;
                map.push(ThreadPair {
                    name: pair_name(left_name, right_name),
                    start: false,
                    left: Some(l),
                    right: Some(r),
                });
            }
            unmapped(&mut map, left, &used_left, right, &used_right);
        }
        ThreadMatching::IndexMap(pairs) => {
            let (mut used_left, mut used_right) =
                (vec![false; left.len()], vec![false; right.len()]);
            for &(l, r) in pairs {
                let a = left.get(l).ok_or_else(|| {
                    Error::invalid(
                        "thread map",
                        format!("thread index {l} is not in the left trace"),
                    )
                })?;
                used_left[l] = true;
                let b = right.get(r).ok_or_else(|| {
                    Error::invalid(
                        "thread map",
                        format!("thread index {r} is not in the right trace"),
                    )
                })?;
                if std::mem::replace(&mut used_right[r], true) {
                    return Err(Error::invalid(
                        "thread map",
                        format!("thread {} of the right trace is mapped twice", b.name),
                    ));
                }
                map.push(ThreadPair {
                    name: pair_name(&a.name, &b.name),
                    start: false,
                    left: Some(l),
                    right: Some(r),
                });
            }
            unmapped(&mut map, left, &used_left, right, &used_right);
        }
    }
    if options.unmatched == UnmatchedThreads::Error {
        for pair in &map {
            let (side, other, index, threads) = match (pair.left, pair.right) {
                (Some(l), None) => ("left", "right", l, left),
                (None, Some(r)) => ("right", "left", r, right),
                _ => continue,
            };
            return Err(Error::invalid(
                "threads",
                format!(
                    "thread #{index} (id={}, name={}) from the {side} trace was not matched with any thread in the {other} trace",
                    threads[index].id, pair.name
                ),
            ));
        }
    }
    if options.only_start_threads && !map.first().is_some_and(|pair| pair.start) {
        return Err(Error::invalid(
            "threads",
            "only the start threads are to be diffed, but no pair of threads holds event 0",
        ));
    }
    Ok(map)
}

fn unmapped(
    map: &mut Vec<ThreadPair>,
    left: &[InputThread],
    used_left: &[bool],
    right: &[InputThread],
    used_right: &[bool],
) {
    for (l, thread) in left.iter().enumerate() {
        if !used_left[l] {
            map.push(ThreadPair {
                name: thread.name.clone(),
                start: false,
                left: Some(l),
                right: None,
            });
        }
    }
    for (r, thread) in right.iter().enumerate() {
        if !used_right[r] {
            map.push(ThreadPair {
                name: thread.name.clone(),
                start: false,
                left: None,
                right: Some(r),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn threads(names: &[&str]) -> Vec<InputThread> {
        names
            .iter()
            .enumerate()
            .map(|(i, name)| InputThread {
                id: i as i32,
                name: name.to_string(),
                starts: i == 0,
            })
            .collect()
    }

    fn sides(map: &[ThreadPair]) -> Vec<(Option<usize>, Option<usize>)> {
        map.iter().map(|p| (p.left, p.right)).collect()
    }

    #[test]
    fn by_name_then_right_only_threads() {
        let map = match_threads(
            &threads(&["a", "b", "c"]),
            &threads(&["a", "b-rerun", "c"]),
            &DiffOptions::default(),
        )
        .unwrap();
        assert_eq!(
            sides(&map),
            [
                (Some(0), Some(0)),
                (Some(1), None),
                (Some(2), Some(2)),
                (None, Some(1))
            ]
        );
    }

    #[test]
    fn by_index_names_differing_pairs() {
        let options = DiffOptions {
            matching: ThreadMatching::ByIndex,
            ..DiffOptions::default()
        };
        let map =
            match_threads(&threads(&["a", "b"]), &threads(&["x", "b", "c"]), &options).unwrap();
        assert_eq!(map[0].name, "left: a, right: x");
        assert_eq!(map[1].name, "b");
        assert_eq!(sides(&map)[2], (None, Some(2)));
    }

    #[test]
    fn a_name_map_at_the_same_index_works() {
        let options = DiffOptions {
            matching: ThreadMatching::NameMap(vec![("w".into(), "w-rerun".into())]),
            ..DiffOptions::default()
        };
        let map =
            match_threads(&threads(&["m", "w"]), &threads(&["m", "w-rerun"]), &options).unwrap();
        assert_eq!(map[0].name, "left: w, right: w-rerun");
        assert_eq!(
            sides(&map),
            [(Some(1), Some(1)), (Some(0), None), (None, Some(0))]
        );
    }

    #[test]
    fn unmatched_threads_can_be_an_error() {
        let options = DiffOptions {
            unmatched: UnmatchedThreads::Error,
            ..DiffOptions::default()
        };
        let error = match_threads(&threads(&["a"]), &threads(&["b"]), &options).unwrap_err();
        assert!(error.to_string().contains("not matched"), "{error}");
    }

    #[test]
    fn start_threads_pair_first() {
        let options = DiffOptions {
            start_threads: true,
            ..DiffOptions::default()
        };
        let map = match_threads(
            &threads(&["main", "w"]),
            &threads(&["main2", "w"]),
            &options,
        )
        .unwrap();
        assert_eq!(map[0].name, "Start thread (left: main, right: main2)");
        assert_eq!(sides(&map), [(Some(0), Some(0)), (Some(1), Some(1))]);
    }
}
