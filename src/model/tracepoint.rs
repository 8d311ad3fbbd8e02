//! Tracepoints: the recorded events, leaves and containers.

use crate::common::{CodeLocationId, EventId, FieldId, MethodId, ThreadId, VariableId};
use crate::model::{JavaStr, Value};

/// The 12 tracepoint types, with their on-disk numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TracepointType {
    /// A method call (container).
    MethodCall = 0,
    /// An array element read.
    ReadArray = 1,
    /// A local variable read.
    ReadLocal = 2,
    /// A field read.
    ReadField = 3,
    /// An array element write.
    WriteArray = 4,
    /// A local variable write.
    WriteLocal = 5,
    /// A field write.
    WriteField = 6,
    /// A loop (container of iterations).
    Loop = 7,
    /// One loop iteration (container).
    LoopIteration = 8,
    /// A snapshot ("live") breakpoint hit.
    SnapshotBreakpoint = 9,
    /// An exception thrown.
    Throw = 10,
    /// An exception caught.
    Catch = 11,
}

impl TracepointType {
    /// All types, in on-disk order.
    pub const ALL: [TracepointType; 12] = [
        TracepointType::MethodCall,
        TracepointType::ReadArray,
        TracepointType::ReadLocal,
        TracepointType::ReadField,
        TracepointType::WriteArray,
        TracepointType::WriteLocal,
        TracepointType::WriteField,
        TracepointType::Loop,
        TracepointType::LoopIteration,
        TracepointType::SnapshotBreakpoint,
        TracepointType::Throw,
        TracepointType::Catch,
    ];

    /// The type with on-disk number `byte`.
    pub fn from_byte(byte: u8) -> Option<Self> {
        Self::ALL.get(byte as usize).copied()
    }

    /// Whether tracepoints of this type have children and a footer.
    pub fn is_container(self) -> bool {
        matches!(
            self,
            TracepointType::MethodCall | TracepointType::Loop | TracepointType::LoopIteration
        )
    }

    /// The type `tracetree dump` names `name` ([`name`](Self::name)'s
    /// inverse); `None` for no type's name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.name() == name)
    }

    /// The snake-case name used by `tracetree dump` (`method_call`, `read_array`, ...).
    pub fn name(self) -> &'static str {
        match self {
            TracepointType::MethodCall => "method_call",
            TracepointType::ReadArray => "read_array",
            TracepointType::ReadLocal => "read_local",
            TracepointType::ReadField => "read_field",
            TracepointType::WriteArray => "write_array",
            TracepointType::WriteLocal => "write_local",
            TracepointType::WriteField => "write_field",
            TracepointType::Loop => "loop",
            TracepointType::LoopIteration => "loop_iteration",
            TracepointType::SnapshotBreakpoint => "snapshot_breakpoint",
            TracepointType::Throw => "throw",
            TracepointType::Catch => "catch",
        }
    }
}

/// A tracepoint's status in a trace diff.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum DiffStatus {
    /// Not part of a diff (−1).
    #[default]
    None = -1,
    /// Unchanged (0).
    Unchanged = 0,
    /// Removed (1).
    Removed = 1,
    /// Added (2).
    Added = 2,
    /// The old side of an edit (3).
    EditedOld = 3,
    /// The new side of an edit (4).
    EditedNew = 4,
}

impl DiffStatus {
    /// The snake-case name `tracetree dump` writes (`added`, `edited_old`,
    /// ...); `None` outside a diff.
    pub fn name(self) -> Option<&'static str> {
        Some(match self {
            DiffStatus::None => return None,
            DiffStatus::Unchanged => "unchanged",
            DiffStatus::Removed => "removed",
            DiffStatus::Added => "added",
            DiffStatus::EditedOld => "edited_old",
            DiffStatus::EditedNew => "edited_new",
        })
    }

    /// The names of the changes a diff can be filtered by, as
    /// [`changes_named`](Self::changes_named) reads them.
    pub const CHANGE_NAMES: [&'static str; 3] = ["added", "removed", "edited"];

    /// The statuses the change `name` covers: `added`, `removed`, or
    /// `edited` (both sides of an edit); `None` for any other name.
    pub fn changes_named(name: &str) -> Option<&'static [DiffStatus]> {
        Some(match name {
            "added" => &[DiffStatus::Added],
            "removed" => &[DiffStatus::Removed],
            "edited" => &[DiffStatus::EditedOld, DiffStatus::EditedNew],
            _ => return None,
        })
    }

    /// Whether it marks a change: removed, added or either side of an
    /// edit.
    pub fn is_change(self) -> bool {
        !matches!(self, DiffStatus::None | DiffStatus::Unchanged)
    }

    /// Whether the tracepoint is part of a diff's left (old) trace:
    /// unchanged, removed or the old side of an edit.
    pub fn in_left(self) -> bool {
        matches!(
            self,
            DiffStatus::Unchanged | DiffStatus::Removed | DiffStatus::EditedOld
        )
    }

    /// Whether the tracepoint is part of a diff's right (new) trace:
    /// unchanged, added or the new side of an edit.
    pub fn in_right(self) -> bool {
        matches!(
            self,
            DiffStatus::Unchanged | DiffStatus::Added | DiffStatus::EditedNew
        )
    }

    /// The status written as `byte`.
    pub fn from_i8(byte: i8) -> Option<Self> {
        Some(match byte {
            -1 => DiffStatus::None,
            0 => DiffStatus::Unchanged,
            1 => DiffStatus::Removed,
            2 => DiffStatus::Added,
            3 => DiffStatus::EditedOld,
            4 => DiffStatus::EditedNew,
            _ => return None,
        })
    }
}

/// The fields every tracepoint starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TracepointHeader {
    /// The tracepoint type.
    pub tracepoint_type: TracepointType,
    /// Where it happened.
    pub code_location: CodeLocationId,
    /// The recording thread.
    pub thread: ThreadId,
    /// Its trace-wide id.
    pub event: EventId,
    /// Its diff status.
    pub diff_status: DiffStatus,
}

/// A decoded tracepoint: header, child diff statuses (containers) and the
/// type's own fields. A container's children and footer are separate objects.
#[derive(Debug, Clone, PartialEq)]
pub struct Tracepoint<'a> {
    /// The common header.
    pub header: TracepointHeader,
    /// Diff statuses of the children (containers only; usually empty).
    pub child_diff_statuses: Vec<DiffStatus>,
    /// The type-specific fields.
    pub body: TracepointBody<'a>,
}

/// [`Tracepoint::SAMPLE_COUNT_FLAG`].
pub(crate) const SAMPLE_COUNT_FLAG: i16 = Tracepoint::SAMPLE_COUNT_FLAG;

/// The type-specific fields of a tracepoint.
#[derive(Debug, Clone, PartialEq)]
pub enum TracepointBody<'a> {
    /// A method call.
    MethodCall {
        /// The called method.
        method: MethodId,
        /// The receiver (`Null` for static calls).
        receiver: Value<'a>,
        /// The arguments.
        arguments: Vec<Value<'a>>,
        /// Flags; bit 0 = incomplete, bit 1 =
        /// [`SAMPLE_COUNT_FLAG`](Tracepoint::SAMPLE_COUNT_FLAG).
        flags: i16,
    },
    /// `array[index] ➜ value`.
    ReadArray {
        /// The array.
        array: Value<'a>,
        /// The index.
        index: i32,
        /// The value read.
        value: Value<'a>,
    },
    /// `variable ➜ value`.
    ReadLocal {
        /// The variable.
        variable: VariableId,
        /// The value read.
        value: Value<'a>,
    },
    /// `receiver.field ➜ value`.
    ReadField {
        /// The field.
        field: FieldId,
        /// The object (`Null` for static fields).
        receiver: Value<'a>,
        /// The value read.
        value: Value<'a>,
    },
    /// `array[index] = value`.
    WriteArray {
        /// The array.
        array: Value<'a>,
        /// The index.
        index: i32,
        /// The value written.
        value: Value<'a>,
    },
    /// `variable = value`.
    WriteLocal {
        /// The variable.
        variable: VariableId,
        /// The value written.
        value: Value<'a>,
    },
    /// `receiver.field = value`.
    WriteField {
        /// The field.
        field: FieldId,
        /// The object (`Null` for static fields).
        receiver: Value<'a>,
        /// The value written.
        value: Value<'a>,
    },
    /// A loop.
    Loop {
        /// The loop's id.
        loop_id: i32,
    },
    /// One iteration of a loop.
    LoopIteration {
        /// The loop's id.
        loop_id: i32,
        /// The iteration, 0-based.
        iteration: i32,
    },
    /// A snapshot breakpoint hit.
    SnapshotBreakpoint {
        /// The breakpoint's UUID, high 64 bits.
        uuid_high: i64,
        /// The breakpoint's UUID, low 64 bits.
        uuid_low: i64,
        /// The stack, innermost first.
        stack: Vec<CodeLocationId>,
        /// Wall-clock time, milliseconds since the epoch.
        millis: i64,
        /// Captured values.
        values: Vec<Value<'a>>,
        /// The trace id, if any.
        trace_id: Option<JavaStr<'a>>,
    },
    /// An exception thrown.
    Throw {
        /// The exception.
        exception: Value<'a>,
    },
    /// An exception caught.
    Catch {
        /// The exception.
        exception: Value<'a>,
    },
}

/// The fields of a container's footer.
#[derive(Debug, Clone, PartialEq)]
pub enum Footer<'a> {
    /// A method call's outcome.
    MethodCall {
        /// The result (`Void` for void methods, `Null` when it threw).
        result: Value<'a>,
        /// The simple class name of the exception thrown, empty when none.
        exception: JavaStr<'a>,
    },
    /// A loop's iteration count.
    Loop {
        /// Iterations run.
        iterations: i32,
    },
    /// A loop iteration's footer (no fields).
    LoopIteration,
}

impl<'a> Tracepoint<'a> {
    /// Call flag bit 1: the call is a node of a merged sample tree (an
    /// imported JFR profile) and its result is the `long` count of samples
    /// passing through it, not a returned value.
    pub const SAMPLE_COUNT_FLAG: i16 = 2;

    /// The sample count of a call flagged
    /// [`SAMPLE_COUNT_FLAG`](Self::SAMPLE_COUNT_FLAG): the `long`
    /// result in its `footer`; `None` for any other tracepoint.
    pub fn sample_count(&self, footer: Option<&Footer<'_>>) -> Option<i64> {
        match (&self.body, footer) {
            (
                TracepointBody::MethodCall { flags, .. },
                Some(Footer::MethodCall {
                    result: Value::Long(count),
                    ..
                }),
            ) if flags & SAMPLE_COUNT_FLAG != 0 => Some(*count),
            _ => None,
        }
    }

    /// The tracepoint type.
    pub fn tracepoint_type(&self) -> TracepointType {
        self.header.tracepoint_type
    }

    /// The trace-wide event id.
    pub fn event(&self) -> EventId {
        self.header.event
    }

    /// Whether it has children and a footer.
    pub fn is_container(&self) -> bool {
        self.header.tracepoint_type.is_container()
    }

    /// Whether dropping the tracepoint frees memory (see
    /// [`Value::owns_memory`]); every field is named, as there.
    #[inline(always)]
    pub(crate) fn owns_memory(&self) -> bool {
        let Tracepoint {
            header: _,
            child_diff_statuses,
            body,
        } = self;
        child_diff_statuses.capacity() != 0
            || match body {
                TracepointBody::MethodCall {
                    method: _,
                    receiver,
                    arguments,
                    flags: _,
                } => arguments.capacity() != 0 || receiver.owns_memory(),
                TracepointBody::ReadArray {
                    array: owner,
                    index: _,
                    value,
                }
                | TracepointBody::WriteArray {
                    array: owner,
                    index: _,
                    value,
                }
                | TracepointBody::ReadField {
                    field: _,
                    receiver: owner,
                    value,
                }
                | TracepointBody::WriteField {
                    field: _,
                    receiver: owner,
                    value,
                } => owner.owns_memory() || value.owns_memory(),
                TracepointBody::ReadLocal { variable: _, value }
                | TracepointBody::WriteLocal { variable: _, value }
                | TracepointBody::Throw { exception: value }
                | TracepointBody::Catch { exception: value } => value.owns_memory(),
                TracepointBody::Loop { loop_id: _ }
                | TracepointBody::LoopIteration {
                    loop_id: _,
                    iteration: _,
                } => false,
                TracepointBody::SnapshotBreakpoint { .. } => true,
            }
    }

    /// A copy that borrows nothing.
    pub fn into_owned(self) -> Tracepoint<'static> {
        let body = match self.body {
            TracepointBody::MethodCall {
                method,
                receiver,
                arguments,
                flags,
            } => TracepointBody::MethodCall {
                method,
                receiver: receiver.into_owned(),
                arguments: arguments.into_iter().map(Value::into_owned).collect(),
                flags,
            },
            TracepointBody::ReadArray {
                array,
                index,
                value,
            } => TracepointBody::ReadArray {
                array: array.into_owned(),
                index,
                value: value.into_owned(),
            },
            TracepointBody::ReadLocal { variable, value } => TracepointBody::ReadLocal {
                variable,
                value: value.into_owned(),
            },
            TracepointBody::ReadField {
                field,
                receiver,
                value,
            } => TracepointBody::ReadField {
                field,
                receiver: receiver.into_owned(),
                value: value.into_owned(),
            },
            TracepointBody::WriteArray {
                array,
                index,
                value,
            } => TracepointBody::WriteArray {
                array: array.into_owned(),
                index,
                value: value.into_owned(),
            },
            TracepointBody::WriteLocal { variable, value } => TracepointBody::WriteLocal {
                variable,
                value: value.into_owned(),
            },
            TracepointBody::WriteField {
                field,
                receiver,
                value,
            } => TracepointBody::WriteField {
                field,
                receiver: receiver.into_owned(),
                value: value.into_owned(),
            },
            TracepointBody::Loop { loop_id } => TracepointBody::Loop { loop_id },
            TracepointBody::LoopIteration { loop_id, iteration } => {
                TracepointBody::LoopIteration { loop_id, iteration }
            }
            TracepointBody::SnapshotBreakpoint {
                uuid_high,
                uuid_low,
                stack,
                millis,
                values,
                trace_id,
            } => TracepointBody::SnapshotBreakpoint {
                uuid_high,
                uuid_low,
                stack,
                millis,
                values: values.into_iter().map(Value::into_owned).collect(),
                trace_id: trace_id.map(JavaStr::into_owned),
            },
            TracepointBody::Throw { exception } => TracepointBody::Throw {
                exception: exception.into_owned(),
            },
            TracepointBody::Catch { exception } => TracepointBody::Catch {
                exception: exception.into_owned(),
            },
        };
        Tracepoint {
            header: self.header,
            child_diff_statuses: self.child_diff_statuses,
            body,
        }
    }
}

impl Footer<'_> {
    /// A copy that borrows nothing.
    pub fn into_owned(self) -> Footer<'static> {
        match self {
            Footer::MethodCall { result, exception } => Footer::MethodCall {
                result: result.into_owned(),
                exception: exception.into_owned(),
            },
            Footer::Loop { iterations } => Footer::Loop { iterations },
            Footer::LoopIteration => Footer::LoopIteration,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::{ClassId, CodeLocationId};

    fn tracepoint(body: TracepointBody<'_>) -> Tracepoint<'_> {
        Tracepoint {
            header: TracepointHeader {
                tracepoint_type: TracepointType::WriteLocal,
                code_location: CodeLocationId(0),
                thread: ThreadId(0),
                event: EventId(0),
                diff_status: DiffStatus::None,
            },
            child_diff_statuses: Vec::new(),
            body,
        }
    }

    fn object<'a>(fields: Vec<(JavaStr<'a>, Value<'a>)>) -> Value<'a> {
        Value::Object {
            class: ClassId(1),
            identity_hash: 2,
            fields,
        }
    }

    #[test]
    fn memory_is_owned_by_captured_contents_and_strings_not_borrowed() {
        let bytes = b"borrowed";
        let borrowed = JavaStr::from_mutf8(bytes).expect("valid");
        let not_owning = [
            Value::Int(1),
            Value::Null,
            Value::String(borrowed.clone()),
            Value::StringBuilder {
                identity_hash: 3,
                text: borrowed.clone(),
            },
            object(Vec::new()),
            Value::String(JavaStr::new("")),
        ];
        for value in &not_owning {
            assert!(!value.owns_memory(), "{value:?}");
        }
        let owning = [
            Value::String(JavaStr::new("owned")),
            Value::KotlinClass(JavaStr::new("K")),
            object(vec![(borrowed.clone(), Value::Int(1))]),
            Value::Array {
                class: ClassId(1),
                identity_hash: 2,
                elements: vec![Value::Null],
                total_size: 1,
            },
        ];
        for value in &owning {
            assert!(value.owns_memory(), "{value:?}");
        }
        let write = |value| TracepointBody::WriteField {
            field: FieldId(0),
            receiver: Value::Null,
            value,
        };
        assert!(!tracepoint(write(Value::Int(1))).owns_memory());
        assert!(tracepoint(write(owning[0].clone())).owns_memory());
        let call = |arguments| TracepointBody::MethodCall {
            method: MethodId(0),
            receiver: Value::Null,
            arguments,
            flags: 0,
        };
        assert!(!tracepoint(call(Vec::new())).owns_memory());
        assert!(tracepoint(call(vec![Value::Int(1)])).owns_memory());
        let mut with_statuses = tracepoint(TracepointBody::Loop { loop_id: 1 });
        assert!(!with_statuses.owns_memory());
        with_statuses.child_diff_statuses.push(DiffStatus::Added);
        assert!(with_statuses.owns_memory());
    }
}

/// What a call or an access names: read from a tracepoint's first fields
/// without decoding the rest (a name walk's `WalkNode::name`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TracepointName {
    /// The method called.
    Method(MethodId),
    /// A field read or written.
    Field(FieldId),
    /// A local variable read or written.
    Variable(VariableId),
}

impl Tracepoint<'static> {
    /// A call of `method` with no receiver, arguments or code location:
    /// what an importer or the diff writes for a call it has only the
    /// method of.
    pub fn bare_call(thread: ThreadId, event: EventId, method: MethodId) -> Self {
        Tracepoint {
            header: TracepointHeader {
                tracepoint_type: TracepointType::MethodCall,
                code_location: CodeLocationId(-1),
                thread,
                event,
                diff_status: DiffStatus::None,
            },
            child_diff_statuses: Vec::new(),
            body: TracepointBody::MethodCall {
                method,
                receiver: Value::Null,
                arguments: Vec::new(),
                flags: 0,
            },
        }
    }
}
