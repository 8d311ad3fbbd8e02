//! The ground types every layer shares: typed offsets, identifiers and
//! object kinds. This module imports nothing of the crate.
//!
//! A [`LogicalOffset`] counts bytes in one thread's logical stream (the
//! concatenated payloads of that thread's blocks); a [`PhysicalOffset`] counts
//! bytes in the data file. They never mix: converting one into the other goes
//! through a block table. Identifiers of different object kinds are distinct
//! types too, so a class id cannot be passed where a method id is expected.
//! Their fields are private to the crate: other crates make and read them
//! through `new` and `get` (or `From`). An [`IndexCell`] says where one
//! object is, in the offset space of its kind.

use std::fmt;

use std::collections::hash_map::Entry;

use rustc_hash::FxHashMap;

macro_rules! offset_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        pub struct $name(pub(crate) u64);

        impl $name {
            /// The offset `offset` bytes from the start.
            #[inline]
            pub const fn new(offset: u64) -> Self {
                $name(offset)
            }

            /// The number of bytes from the start.
            #[inline]
            pub const fn get(self) -> u64 {
                self.0
            }

            /// The offset `delta` bytes further on (also `offset + delta`).
            #[inline]
            #[allow(clippy::should_implement_trait)] // `Add<u64>` is implemented too
            pub fn add(self, delta: u64) -> Self {
                $name(self.0 + delta)
            }

            /// The number of bytes from `earlier` to `self` (`self >= earlier`).
            #[inline]
            pub fn distance_from(self, earlier: Self) -> u64 {
                self.0 - earlier.0
            }
        }

        impl std::ops::Add<u64> for $name {
            type Output = $name;

            #[inline]
            fn add(self, delta: u64) -> $name {
                $name(self.0 + delta)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }

        impl From<u64> for $name {
            fn from(offset: u64) -> Self {
                $name(offset)
            }
        }

        impl From<$name> for u64 {
            fn from(offset: $name) -> u64 {
                offset.0
            }
        }
    };
}

offset_type!(
    /// An offset in a thread's logical stream: 0 is the first payload byte of
    /// the thread's first block.
    LogicalOffset
);
offset_type!(
    /// An offset in the data file, counted from its first byte.
    PhysicalOffset
);

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        pub struct $name(pub(crate) i32);

        impl $name {
            /// The id written as `id`.
            #[inline]
            pub const fn new(id: i32) -> Self {
                $name(id)
            }

            /// The id as written.
            #[inline]
            pub const fn get(self) -> i32 {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }

        impl From<i32> for $name {
            fn from(id: i32) -> Self {
                $name(id)
            }
        }

        impl From<$name> for i32 {
            fn from(id: $name) -> i32 {
                id.0
            }
        }
    };
}

id_type!(
    /// The trace-wide id of a tracepoint (one JVM-wide counter).
    EventId
);
id_type!(
    /// The id of a recorded thread, as written in blocks and tracepoints.
    ThreadId
);
id_type!(
    /// The id of a `CLASS_DESCRIPTOR`.
    ClassId
);
id_type!(
    /// The id of a `METHOD_DESCRIPTOR`.
    MethodId
);
id_type!(
    /// The id of a `FIELD_DESCRIPTOR`.
    FieldId
);
id_type!(
    /// The id of a `VARIABLE_DESCRIPTOR`.
    VariableId
);
id_type!(
    /// The id of a `STRING` reference object.
    StringId
);
id_type!(
    /// The id of an `ACCESS_PATH`.
    AccessPathId
);
id_type!(
    /// The id of a `CODE_LOCATION`.
    CodeLocationId
);

/// The kind byte every object starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ObjectKind {
    /// A thread's name.
    ThreadName = 0,
    /// A class descriptor.
    ClassDescriptor = 1,
    /// A method descriptor.
    MethodDescriptor = 2,
    /// A field descriptor.
    FieldDescriptor = 3,
    /// A local variable descriptor.
    VariableDescriptor = 4,
    /// A shared string.
    String = 5,
    /// An access path.
    AccessPath = 6,
    /// A code location.
    CodeLocation = 7,
    /// A tracepoint (a container's header, or a leaf).
    Tracepoint = 8,
    /// A container's footer.
    TracepointFooter = 9,
    /// The start of a block.
    BlockStart = 10,
    /// The end of a block.
    BlockEnd = 11,
    /// The end of the file.
    Eof = 12,
}

impl ObjectKind {
    /// All kinds, in on-disk order.
    pub const ALL: [ObjectKind; 13] = [
        ObjectKind::ThreadName,
        ObjectKind::ClassDescriptor,
        ObjectKind::MethodDescriptor,
        ObjectKind::FieldDescriptor,
        ObjectKind::VariableDescriptor,
        ObjectKind::String,
        ObjectKind::AccessPath,
        ObjectKind::CodeLocation,
        ObjectKind::Tracepoint,
        ObjectKind::TracepointFooter,
        ObjectKind::BlockStart,
        ObjectKind::BlockEnd,
        ObjectKind::Eof,
    ];

    /// The kind written as `byte`.
    pub fn from_byte(byte: u8) -> Option<Self> {
        Self::ALL.get(byte as usize).copied()
    }

    /// Whether objects of this kind are reference objects (kinds 0–7).
    pub fn is_reference(self) -> bool {
        (self as u8) <= ObjectKind::CodeLocation as u8
    }

    /// The name `docs/FORMAT.md` uses (`CLASS_DESCRIPTOR`).
    pub fn name(self) -> &'static str {
        match self {
            ObjectKind::ThreadName => "THREAD_NAME",
            ObjectKind::ClassDescriptor => "CLASS_DESCRIPTOR",
            ObjectKind::MethodDescriptor => "METHOD_DESCRIPTOR",
            ObjectKind::FieldDescriptor => "FIELD_DESCRIPTOR",
            ObjectKind::VariableDescriptor => "VARIABLE_DESCRIPTOR",
            ObjectKind::String => "STRING",
            ObjectKind::AccessPath => "ACCESS_PATH",
            ObjectKind::CodeLocation => "CODE_LOCATION",
            ObjectKind::Tracepoint => "TRACEPOINT",
            ObjectKind::TracepointFooter => "TRACEPOINT_FOOTER",
            ObjectKind::BlockStart => "BLOCK_START",
            ObjectKind::BlockEnd => "BLOCK_END",
            ObjectKind::Eof => "EOF",
        }
    }
}

impl fmt::Display for ObjectKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A decoded index cell: where one object of the data file is, in the
/// offset space of its kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IndexCell {
    /// A reference object (kinds 0–7) starting at `at` in the data file.
    Reference {
        /// Its kind.
        kind: ObjectKind,
        /// Its id.
        id: i32,
        /// Where it starts.
        at: PhysicalOffset,
        /// The cell's end field as written: unused (writers store various
        /// values there; [`IndexCell::canonical`] sets it to −1).
        end: i64,
    },
    /// A block of `thread`.
    Block {
        /// The block's thread.
        thread: ThreadId,
        /// Its `BLOCK_START`.
        start: PhysicalOffset,
        /// Its `BLOCK_END`.
        end: PhysicalOffset,
    },
    /// A container (a call, loop or iteration) and its content.
    Container {
        /// The container's event id.
        event: EventId,
        /// Its content's first byte (just after its header) in its
        /// thread's logical stream.
        start: LogicalOffset,
        /// Its `TRACEPOINT_FOOTER` in the same stream.
        end: LogicalOffset,
    },
}

impl IndexCell {
    /// The kind of object the cell locates (`BLOCK_START` for a block,
    /// `TRACEPOINT` for a container).
    pub fn kind(&self) -> ObjectKind {
        match *self {
            IndexCell::Reference { kind, .. } => kind,
            IndexCell::Block { .. } => ObjectKind::BlockStart,
            IndexCell::Container { .. } => ObjectKind::Tracepoint,
        }
    }

    /// The cell with only the fields that carry meaning: a reference
    /// cell's unused `end` becomes −1. Two indexes describe the same trace
    /// when their canonical cells are the same set.
    pub fn canonical(self) -> IndexCell {
        match self {
            IndexCell::Reference { kind, id, at, .. } => IndexCell::Reference {
                kind,
                id,
                at,
                end: -1,
            },
            other => other,
        }
    }
}

/// In words, for users: what the cell says is where (`the block of thread
/// 2 at bytes 10..2,700 of the data file`, `the call or loop with event id
/// 7, bytes 12..340 of its thread's stream`, `thread name 3 at byte 120
/// of the data file`).
impl fmt::Display for IndexCell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            IndexCell::Block { thread, start, end } => write!(
                f,
                "the block of thread {thread} at bytes {start}..{} of the data file",
                end.0.saturating_add(1)
            ),
            IndexCell::Container { event, start, end } => write!(
                f,
                "the call or loop with event id {event}, bytes {start}..{end} of its thread's stream"
            ),
            IndexCell::Reference { kind, id, at, .. } => {
                let name = kind.name().to_ascii_lowercase().replace('_', " ");
                write!(f, "{name} {id} at byte {at} of the data file")
            }
        }
    }
}

/// Values by the small integer id of an object: in a vector indexed by id
/// below a bound (a lookup costs no hashing), in a hash map at and above
/// it. Recorders number their objects from 0, so a bound of the number of
/// objects a source holds keeps them all in the vector while the vector
/// never outgrows that number, whatever ids a damaged source names.
#[derive(Debug)]
pub(crate) struct IdMap<T> {
    dense: Vec<Option<T>>,
    /// Ids below this go to `dense`.
    bound: u64,
    sparse: FxHashMap<u64, T>,
}

impl<T> IdMap<T> {
    /// A map keeping ids below `bound` in its vector.
    pub(crate) fn with_dense_below(bound: u64) -> Self {
        IdMap {
            dense: Vec::new(),
            bound,
            sparse: FxHashMap::default(),
        }
    }

    /// The value of `id`.
    #[inline]
    pub(crate) fn get(&self, id: u64) -> Option<&T> {
        if id < self.bound {
            self.dense.get(id as usize)?.as_ref()
        } else {
            self.sparse.get(&id)
        }
    }

    /// The value of `id`, to change.
    #[inline]
    pub(crate) fn get_mut(&mut self, id: u64) -> Option<&mut T> {
        if id < self.bound {
            self.dense.get_mut(id as usize)?.as_mut()
        } else {
            self.sparse.get_mut(&id)
        }
    }

    /// Sets the value of `id`.
    pub(crate) fn insert(&mut self, id: u64, value: T) {
        if id < self.bound {
            *self.dense_slot(id) = Some(value);
        } else {
            self.sparse.insert(id, value);
        }
    }

    /// The value of `id`, made by `make` if there is none yet.
    #[inline]
    pub(crate) fn get_or_try_insert_with<E>(
        &mut self,
        id: u64,
        make: impl FnOnce() -> std::result::Result<T, E>,
    ) -> std::result::Result<&mut T, E> {
        if id >= self.bound {
            return Ok(match self.sparse.entry(id) {
                Entry::Occupied(value) => value.into_mut(),
                Entry::Vacant(slot) => slot.insert(make()?),
            });
        }
        let slot = self.dense_slot(id);
        match slot {
            Some(value) => Ok(value),
            None => Ok(slot.insert(make()?)),
        }
    }

    /// The vector's slot for `id` (below the bound), grown to hold it.
    fn dense_slot(&mut self, id: u64) -> &mut Option<T> {
        let index = id as usize;
        if self.dense.len() <= index {
            self.dense.resize_with(index + 1, || None);
        }
        &mut self.dense[index]
    }
}

#[cfg(test)]
mod tests {
    use super::IdMap;

    #[test]
    fn ids_past_the_bound_go_to_the_hash_map_and_grow_no_vector() {
        let mut map = IdMap::with_dense_below(4);
        map.insert(2, "two");
        map.insert(u64::from(-1i32 as u32), "none");
        map.insert(1 << 40, "far");
        assert_eq!(map.dense.len(), 3);
        assert_eq!(map.sparse.len(), 2);
        assert_eq!(map.get(2), Some(&"two"));
        assert_eq!(map.get(0), None);
        assert_eq!(map.get(3), None);
        assert_eq!(map.get(1 << 40), Some(&"far"));
        assert_eq!(map.get(u64::from(-1i32 as u32)), Some(&"none"));
        if let Some(value) = map.get_mut(2) {
            *value = "deux";
        }
        assert_eq!(map.get(2), Some(&"deux"));
    }

    #[test]
    fn a_failed_make_inserts_nothing_and_a_made_value_is_kept() {
        let mut map = IdMap::with_dense_below(8);
        for id in [5, 100] {
            assert_eq!(map.get_or_try_insert_with(id, || Err("bad")), Err("bad"));
            assert_eq!(map.get(id), None);
            assert_eq!(
                map.get_or_try_insert_with(id, || Ok::<_, ()>(7)),
                Ok(&mut 7)
            );
            // Made once: a second maker is not called.
            assert_eq!(
                map.get_or_try_insert_with(id, || Err::<i32, _>("called")),
                Ok(&mut 7)
            );
        }
    }
}
