//! A diff trace's map back to its two inputs, read from its pack: for
//! each event of the diff, the left and right events it was made from
//! (`diff.idmap`), and for each thread of the diff, the left and right
//! threads it pairs (`diff.threadmap`), as the reference library's reader
//! exposes them (`diffEventIdMap`, `diffThreadIdMap`).
//!
//! Layout, big-endian as `DataOutputStream` writes it: the id map is one
//! line of two `i32` (left, right) per event of the diff, in event-id
//! order; the thread map an `i32` count, then per thread its diff index
//! and its left and right thread indices (positions among the input's
//! threads ordered by id). `-1` means none: an added event has no left
//! one, a removed one no right one, a virtual root neither.
//!
//! Invariants: the map is never loaded whole; an event is found by its
//! offset (`8 × id`), read through the pack's bytes (in place when
//! stored). Every length is checked against the entry before it sizes
//! anything. A damaged map leaves the diff readable: a thread map that
//! says more threads than it holds, or an id map cut mid-line, is left
//! out (whole lines kept) and said by `DiffMap::problem`; an input id
//! below `-1` is an error of the lookup that meets it. Each names the
//! pack and the entry.

use std::path::PathBuf;

use super::TraceBytes;
use super::packed::PackedTrace;
use crate::common::{EventId, ThreadId};
use crate::error::{Error, Result};

/// The id map's entry in a diff's pack.
const ID_MAP: &str = "diff.idmap";
/// The thread map's entry in a diff's pack.
const THREAD_MAP: &str = "diff.threadmap";
/// Bytes of one line of the id map.
const LINE: u64 = 8;

/// Where something of a diff came from: its counterparts in the left
/// (old) and right (new) inputs, `None` on a side that has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DiffOrigin<T> {
    /// The left input's counterpart.
    pub left: Option<T>,
    /// The right input's counterpart.
    pub right: Option<T>,
}

/// A diff trace's map back to its inputs (see the module's doc).
pub struct DiffMap {
    path: PathBuf,
    events: TraceBytes,
    threads: Vec<DiffOrigin<u32>>,
    problem: Option<String>,
}

impl std::fmt::Debug for DiffMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiffMap")
            .field("path", &self.path)
            .field("events", &self.len())
            .field("threads", &self.threads)
            .finish()
    }
}

impl DiffMap {
    /// The map of a diff's `pack`, `None` when it holds no id map (not a
    /// diff, or a diff packed without its provenance). What cannot be read
    /// is left out and said by [`problem`](Self::problem): lines past a
    /// cut id map, or the whole thread map when it is damaged.
    pub(crate) fn of(pack: &PackedTrace) -> Option<DiffMap> {
        let path = pack.path().to_path_buf();
        let mut problems = Vec::new();
        let events = match pack.entry_bytes(ID_MAP) {
            Ok(Some(events)) => events,
            Ok(None) => return None,
            Err(error) => {
                problems.push(error.to_string());
                TraceBytes::from_vec(Vec::new())
            }
        };
        let whole = events.len() - events.len() % LINE;
        if whole < events.len() {
            problems.push(format!(
                "entry {ID_MAP:?} is {} bytes long, not a whole number of {LINE}-byte lines: \
                 its last {} bytes are left out",
                events.len(),
                events.len() - whole
            ));
        }
        let events = events
            .slice(0..whole)
            .unwrap_or_else(|| TraceBytes::from_vec(Vec::new()));
        let threads = match pack.entry_bytes(THREAD_MAP) {
            Ok(Some(bytes)) => thread_map(bytes.as_slice()).unwrap_or_else(|problem| {
                problems.push(problem);
                Vec::new()
            }),
            Ok(None) => Vec::new(),
            Err(error) => {
                problems.push(error.to_string());
                Vec::new()
            }
        };
        let problem =
            (!problems.is_empty()).then(|| format!("{}: {}", path.display(), problems.join("; ")));
        Some(DiffMap {
            path,
            events,
            threads,
            problem,
        })
    }

    /// What could not be read of the map (it is left out), naming the
    /// pack and the entry; `None` when it was read whole.
    pub fn problem(&self) -> Option<&str> {
        self.problem.as_deref()
    }

    /// How many events the map covers (the diff's event ids are below).
    pub fn len(&self) -> u64 {
        self.events.len() / LINE
    }

    /// Whether the map covers no event.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The left and right events the diff's `event` was made from; `None`
    /// for an id the map does not cover.
    pub fn event(&self, event: EventId) -> Result<Option<DiffOrigin<EventId>>> {
        self.cursor(1).event(event)
    }

    /// A reader of origins that reads `lines` lines at a time: for walks
    /// that meet the events in order (a diff numbers each thread's events
    /// in pre-order).
    pub(crate) fn cursor(&self, lines: usize) -> DiffMapCursor<'_> {
        DiffMapCursor {
            map: self,
            first: 0,
            lines: Vec::new(),
            window: lines.max(1),
        }
    }

    /// The left and right thread indices (positions among each input's
    /// threads ordered by id) the diff's `thread` pairs; `None` for a
    /// thread the map does not name.
    pub fn thread(&self, thread: ThreadId) -> Option<DiffOrigin<u32>> {
        self.threads.get(usize::try_from(thread.0).ok()?).copied()
    }

    fn bad(&self, what: String) -> Error {
        Error::BadSource {
            path: self.path.clone(),
            what,
        }
    }
}

/// Origins read a window of lines at a time ([`DiffMap::cursor`]).
pub(crate) struct DiffMapCursor<'m> {
    map: &'m DiffMap,
    /// The event of `lines`' first line.
    first: u64,
    lines: Vec<u8>,
    /// Lines read at once.
    window: usize,
}

impl DiffMapCursor<'_> {
    /// As [`DiffMap::event`].
    pub(crate) fn event(&mut self, event: EventId) -> Result<Option<DiffOrigin<EventId>>> {
        let map = self.map;
        let Ok(index) = u64::try_from(event.0) else {
            return Ok(None);
        };
        if index >= map.len() {
            return Ok(None);
        }
        let held = self.lines.len() as u64 / LINE;
        if index < self.first || index >= self.first + held {
            let lines = (map.len() - index).min(self.window as u64) as usize;
            self.lines.resize(lines * LINE as usize, 0);
            if map.events.copy_at(index * LINE, &mut self.lines) < self.lines.len() {
                self.lines.clear();
                return Err(map.bad(format!(
                    "entry {ID_MAP:?} could not be read at event {index}"
                )));
            }
            self.first = index;
        }
        let at = ((index - self.first) * LINE) as usize;
        let int = |at: usize| {
            let b = &self.lines[at..at + 4];
            i32::from_be_bytes([b[0], b[1], b[2], b[3]])
        };
        let side = |id: i32| match id {
            -1 => Ok(None),
            id if id >= 0 => Ok(Some(EventId(id))),
            id => Err(map.bad(format!(
                "entry {ID_MAP:?} gives event {index} the input event id {id}"
            ))),
        };
        Ok(Some(DiffOrigin {
            left: side(int(at))?,
            right: side(int(at + 4))?,
        }))
    }
}

/// The thread map's lines, indexed by diff thread; each line's diff index
/// must be its position.
fn thread_map(bytes: &[u8]) -> std::result::Result<Vec<DiffOrigin<u32>>, String> {
    let int = |at: usize| -> Option<i32> {
        let bytes = bytes.get(at..at + 4)?;
        Some(i32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
    };
    let count = int(0).ok_or_else(|| format!("entry {THREAD_MAP:?} is cut short"))?;
    let room = bytes.len().saturating_sub(4) / 12;
    let count = usize::try_from(count)
        .ok()
        .filter(|&count| count <= room)
        .ok_or_else(|| {
            format!("entry {THREAD_MAP:?} says {count} threads but has room for {room}")
        })?;
    let side = |value: i32, what: &str| match value {
        -1 => Ok(None),
        v if v >= 0 => Ok(Some(v as u32)),
        v => Err(format!(
            "entry {THREAD_MAP:?} gives a {what} thread index of {v}"
        )),
    };
    (0..count)
        .map(|n| {
            let at = 4 + 12 * n;
            let (index, left, right) = (int(at), int(at + 4), int(at + 8));
            let (Some(index), Some(left), Some(right)) = (index, left, right) else {
                return Err(format!("entry {THREAD_MAP:?} is cut short"));
            };
            if usize::try_from(index).ok() != Some(n) {
                return Err(format!(
                    "entry {THREAD_MAP:?} names diff thread {index} at line {n}"
                ));
            }
            Ok(DiffOrigin {
                left: side(left, "left")?,
                right: side(right, "right")?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(values: &[i32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_be_bytes()).collect()
    }

    #[test]
    fn reads_a_thread_map() {
        let map = thread_map(&lines(&[2, 0, 0, 1, 1, -1, 0])).unwrap();
        assert_eq!(
            map,
            [
                DiffOrigin {
                    left: Some(0),
                    right: Some(1)
                },
                DiffOrigin {
                    left: None,
                    right: Some(0)
                }
            ]
        );
    }

    #[test]
    fn refuses_damaged_thread_maps() {
        let cases: [(&[i32], &str); 4] = [
            (&[], "cut short"),
            (&[3, 0, 0, 0], "says 3 threads but has room for 1"),
            (&[1, 1, 0, 0], "names diff thread 1 at line 0"),
            (&[1, 0, -2, 0], "left thread index of -2"),
        ];
        for (values, expected) in cases {
            let error = thread_map(&lines(values)).unwrap_err();
            assert!(error.contains(expected), "{values:?}: {error}");
        }
        // A huge count is refused before anything is sized by it.
        assert!(thread_map(&lines(&[i32::MAX])).is_err());
    }
}
