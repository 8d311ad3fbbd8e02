//! Typed offsets and identifiers.
//!
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
