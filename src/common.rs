//! The ground types every layer shares: typed offsets, identifiers and
//! object kinds. This module imports nothing of the crate.
//!
//! Typed offsets and identifiers://!
//! A [`LogicalOffset`] counts bytes in one thread's logical stream (the
//! concatenated payloads of that thread's blocks); a [`PhysicalOffset`] counts
//! bytes in the data file. They never mix: converting one into the other goes
//! through a block table. Identifiers of different object kinds are distinct
//! types too, so a class id cannot be passed where a method id is expected.

use std::fmt;

macro_rules! offset_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        pub struct $name(pub u64);

        impl $name {
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
        pub struct $name(pub i32);

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
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
