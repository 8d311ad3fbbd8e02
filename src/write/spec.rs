//! What callers of a [`TraceRecorder`](crate::write::TraceRecorder) pass:
//! classes, methods, fields, variables, code locations and values described
//! by name. A writer interns each description to the reference object it
//! stands for; callers never see an id.
//!
//! Strings are [`JavaStr`]s, so any UTF-16 sequence (unpaired surrogate
//! halves, NUL) can be recorded; every constructor also accepts `&str` and
//! `String` (anything `Into<JavaStr>`).

use crate::model::{CodeLocationKind, JavaStr, LocalKind, Type};

/// The type `name` (an object of that class, `java.lang.String`).
#[cfg(any(test, feature = "generate"))]
pub(crate) fn class_type<'a>(name: impl Into<JavaStr<'a>>) -> Type<'a> {
    Type::Object(name.into())
}

/// The type of arrays of `element`.
#[cfg(any(test, feature = "generate"))]
pub(crate) fn array_type(element: Type<'_>) -> Type<'_> {
    Type::Array(Box::new(element))
}

/// A method: its declaring class, name and signature.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MethodSpec<'a> {
    /// The declaring class (`lincheckdriver.Account`).
    pub class: JavaStr<'a>,
    /// The method name (`<init>` for constructors).
    pub name: JavaStr<'a>,
    /// Parameter types.
    pub parameter_types: Vec<Type<'a>>,
    /// The return type.
    pub return_type: Type<'a>,
}

impl<'a> MethodSpec<'a> {
    /// A method of `class` named `name`.
    pub fn new(
        class: impl Into<JavaStr<'a>>,
        name: impl Into<JavaStr<'a>>,
        parameter_types: Vec<Type<'a>>,
        return_type: Type<'a>,
    ) -> Self {
        MethodSpec {
            class: class.into(),
            name: name.into(),
            parameter_types,
            return_type,
        }
    }
}

/// A field: its declaring class, name, type and modifiers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldSpec<'a> {
    /// The declaring class.
    pub class: JavaStr<'a>,
    /// The field name.
    pub name: JavaStr<'a>,
    /// The field type.
    pub field_type: Type<'a>,
    /// `static`.
    pub is_static: bool,
    /// `final`.
    pub is_final: bool,
    /// `volatile`.
    pub is_volatile: bool,
}

impl<'a> FieldSpec<'a> {
    /// An instance field, neither final nor volatile.
    pub fn new(
        class: impl Into<JavaStr<'a>>,
        name: impl Into<JavaStr<'a>>,
        field_type: Type<'a>,
    ) -> Self {
        FieldSpec {
            class: class.into(),
            name: name.into(),
            field_type,
            is_static: false,
            is_final: false,
            is_volatile: false,
        }
    }

    /// The same field, `static` or not.
    pub fn with_static(mut self, is_static: bool) -> Self {
        self.is_static = is_static;
        self
    }

    /// The same field, `final` or not.
    pub fn with_final(mut self, is_final: bool) -> Self {
        self.is_final = is_final;
        self
    }

    /// The same field, `volatile` or not.
    pub fn with_volatile(mut self, is_volatile: bool) -> Self {
        self.is_volatile = is_volatile;
        self
    }
}

/// A local variable: its name and type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct VariableSpec<'a> {
    /// The variable name.
    pub name: JavaStr<'a>,
    /// Its type.
    pub variable_type: Type<'a>,
}

impl<'a> VariableSpec<'a> {
    /// A variable named `name` of type `variable_type`.
    pub fn new(name: impl Into<JavaStr<'a>>, variable_type: Type<'a>) -> Self {
        VariableSpec {
            name: name.into(),
            variable_type,
        }
    }
}

/// One step of an [`AccessPathSpec`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum AccessStep<'a> {
    /// A local variable.
    Local(VariableSpec<'a>),
    /// A static field.
    StaticField(FieldSpec<'a>),
    /// A field of the object reached so far.
    ObjectField(FieldSpec<'a>),
    /// An element of the array reached so far, at a constant index.
    ArrayIndex(i32),
    /// An element of the array reached so far, at the index another path names
    /// (`grid[i]`: the path `i`).
    ArrayElementByName(AccessPathSpec<'a>),
}

/// How a value was reached, outermost step first (`this.grid[i][0]`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct AccessPathSpec<'a> {
    /// The steps.
    pub steps: Vec<AccessStep<'a>>,
}

impl<'a> AccessPathSpec<'a> {
    /// A path of `steps`.
    pub fn new(steps: Vec<AccessStep<'a>>) -> Self {
        AccessPathSpec { steps }
    }

    /// The path naming local variable `variable`.
    pub fn local(variable: VariableSpec<'a>) -> Self {
        Self::new(vec![AccessStep::Local(variable)])
    }

    /// The path naming static field `field`.
    pub fn static_field(field: FieldSpec<'a>) -> Self {
        Self::new(vec![AccessStep::StaticField(field)])
    }

    /// This path followed by field `field` of the object it reaches.
    pub fn then_field(mut self, field: FieldSpec<'a>) -> Self {
        self.steps.push(AccessStep::ObjectField(field));
        self
    }

    /// This path followed by element `index` of the array it reaches.
    pub fn then_index(mut self, index: i32) -> Self {
        self.steps.push(AccessStep::ArrayIndex(index));
        self
    }

    /// This path followed by the element at the index `index_path` names.
    pub fn then_element(mut self, index_path: AccessPathSpec<'a>) -> Self {
        self.steps.push(AccessStep::ArrayElementByName(index_path));
        self
    }
}

/// A local visible at a code location.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LocalSpec<'a> {
    /// Its name; `None` when unknown.
    pub name: Option<JavaStr<'a>>,
    /// What it is.
    pub kind: LocalKind,
}

/// Where in the source a tracepoint happened.
///
/// Code locations are interned by their whole content: two tracepoints given
/// equal specs share one `CODE_LOCATION`. Tracepoints whose place is not known
/// at all take no spec (`None`), which the format writes as id −1.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CodeLocationSpec<'a> {
    /// A plain line, an access, or a call site.
    pub kind: CodeLocationKind,
    /// The source file name (`Account.kt`); `None` when unknown.
    pub file: Option<JavaStr<'a>>,
    /// The class name; `None` when unknown.
    pub class: Option<JavaStr<'a>>,
    /// The method name; `None` when unknown.
    pub method: Option<JavaStr<'a>>,
    /// The line number.
    pub line: i32,
    /// The access path of the accessed value or the call's receiver.
    pub access_path: Option<AccessPathSpec<'a>>,
    /// Access paths naming each call argument (`None`: that argument has no
    /// name); empty when no argument has one.
    pub arguments: Vec<Option<AccessPathSpec<'a>>>,
    /// The locals visible here.
    pub locals: Vec<LocalSpec<'a>>,
}

impl<'a> CodeLocationSpec<'a> {
    /// A location of `kind` at `file`:`line` in `class`.`method`, with no
    /// access path, argument names or locals.
    pub fn new(
        kind: CodeLocationKind,
        file: impl Into<JavaStr<'a>>,
        class: impl Into<JavaStr<'a>>,
        method: impl Into<JavaStr<'a>>,
        line: i32,
    ) -> Self {
        CodeLocationSpec {
            kind,
            file: Some(file.into()),
            class: Some(class.into()),
            method: Some(method.into()),
            line,
            access_path: None,
            arguments: Vec::new(),
            locals: Vec::new(),
        }
    }

    /// A plain line.
    pub fn line(
        file: impl Into<JavaStr<'a>>,
        class: impl Into<JavaStr<'a>>,
        method: impl Into<JavaStr<'a>>,
        line: i32,
    ) -> Self {
        Self::new(CodeLocationKind::Line, file, class, method, line)
    }

    /// A field, variable or array access.
    pub fn access(
        file: impl Into<JavaStr<'a>>,
        class: impl Into<JavaStr<'a>>,
        method: impl Into<JavaStr<'a>>,
        line: i32,
    ) -> Self {
        Self::new(CodeLocationKind::Access, file, class, method, line)
    }

    /// A call site.
    pub fn call(
        file: impl Into<JavaStr<'a>>,
        class: impl Into<JavaStr<'a>>,
        method: impl Into<JavaStr<'a>>,
        line: i32,
    ) -> Self {
        Self::new(CodeLocationKind::MethodCall, file, class, method, line)
    }

    /// The same location with the access path of its accessed value or receiver.
    pub fn with_access_path(mut self, path: AccessPathSpec<'a>) -> Self {
        self.access_path = Some(path);
        self
    }

    /// The same location with one more argument name (`None`: unnamed).
    pub fn with_argument(mut self, path: Option<AccessPathSpec<'a>>) -> Self {
        self.arguments.push(path);
        self
    }

    /// The same location with one more visible local.
    pub fn with_local(mut self, name: impl Into<JavaStr<'a>>, kind: LocalKind) -> Self {
        self.locals.push(LocalSpec {
            name: Some(name.into()),
            kind,
        });
        self
    }
}

/// A recorded value, with the classes of objects and arrays given by name.
///
/// Mirrors [`Value`](crate::model::Value): one variant per value code.
/// Floats are kept as their bits so NaN payloads survive (see
/// [`DumpOptions`](crate::write::DumpOptions) for the dump writer's NaN rule).
#[derive(Debug, Clone, PartialEq)]
pub enum ValueSpec<'a> {
    /// `null` (code −1).
    Null,
    /// No value (−2): the result of a `void` method.
    Void,
    /// `byte` (−3).
    Byte(i8),
    /// `short` (−4).
    Short(i16),
    /// `int` (−5).
    Int(i32),
    /// `long` (−6).
    Long(i64),
    /// `float` (−7), as its IEEE-754 bits.
    Float(u32),
    /// `double` (−8), as its IEEE-754 bits.
    Double(u64),
    /// `char` (−9), one UTF-16 code unit.
    Char(u16),
    /// A `String` (−10).
    String(JavaStr<'a>),
    /// Kotlin's `Unit` (−11).
    KotlinUnit,
    /// Text shown as is (−12).
    RawString(JavaStr<'a>),
    /// `boolean` (−13).
    Boolean(bool),
    /// A Java class literal (−14), by class name.
    JavaClass(JavaStr<'a>),
    /// A Kotlin class literal (−15), by class name.
    KotlinClass(JavaStr<'a>),
    /// A `StringBuilder` (−16) and its content.
    StringBuilder {
        /// The JVM identity hash code.
        identity_hash: i32,
        /// The builder's text.
        text: JavaStr<'a>,
    },
    /// An object of class `class`, with its captured fields.
    Object {
        /// The object's class name (`lincheckdriver.Account`).
        class: JavaStr<'a>,
        /// The JVM identity hash code.
        identity_hash: i32,
        /// Captured fields, by name, in order.
        fields: Vec<(JavaStr<'a>, ValueSpec<'a>)>,
    },
    /// An array of class `class` (`[I`), with its first captured elements.
    Array {
        /// The array's class name.
        class: JavaStr<'a>,
        /// The JVM identity hash code.
        identity_hash: i32,
        /// Captured elements.
        elements: Vec<ValueSpec<'a>>,
        /// The array's full length.
        total_size: i32,
    },
}

impl<'a> ValueSpec<'a> {
    /// A `float`.
    pub fn float(value: f32) -> Self {
        ValueSpec::Float(value.to_bits())
    }

    /// A `double`.
    pub fn double(value: f64) -> Self {
        ValueSpec::Double(value.to_bits())
    }

    /// A `String`.
    pub fn string(text: impl Into<JavaStr<'a>>) -> Self {
        ValueSpec::String(text.into())
    }

    /// Text shown as is.
    pub fn raw_string(text: impl Into<JavaStr<'a>>) -> Self {
        ValueSpec::RawString(text.into())
    }

    /// A `StringBuilder` holding `text`.
    pub fn string_builder(identity_hash: i32, text: impl Into<JavaStr<'a>>) -> Self {
        ValueSpec::StringBuilder {
            identity_hash,
            text: text.into(),
        }
    }

    /// An object of class `class` with no captured fields; add some with
    /// [`with_field`](Self::with_field).
    pub fn object(class: impl Into<JavaStr<'a>>, identity_hash: i32) -> Self {
        ValueSpec::Object {
            class: class.into(),
            identity_hash,
            fields: Vec::new(),
        }
    }

    /// An array of class `class` and length `total_size` with no captured
    /// elements; add some with [`with_element`](Self::with_element).
    pub fn array(class: impl Into<JavaStr<'a>>, identity_hash: i32, total_size: i32) -> Self {
        ValueSpec::Array {
            class: class.into(),
            identity_hash,
            elements: Vec::new(),
            total_size,
        }
    }

    /// The same object with one more captured field. Other values are
    /// returned unchanged.
    pub fn with_field(
        mut self,
        name: impl Into<JavaStr<'a>>,
        value: impl Into<ValueSpec<'a>>,
    ) -> Self {
        if let ValueSpec::Object { fields, .. } = &mut self {
            fields.push((name.into(), value.into()));
        }
        self
    }

    /// The same array with one more captured element. Other values are
    /// returned unchanged.
    pub fn with_element(mut self, value: impl Into<ValueSpec<'a>>) -> Self {
        if let ValueSpec::Array { elements, .. } = &mut self {
            elements.push(value.into());
        }
        self
    }
}

macro_rules! value_from {
    ($($t:ty => $variant:ident),* $(,)?) => {$(
        impl From<$t> for ValueSpec<'_> {
            fn from(value: $t) -> Self {
                ValueSpec::$variant(value)
            }
        }
    )*};
}

value_from!(i8 => Byte, i16 => Short, i32 => Int, i64 => Long, bool => Boolean);

impl From<f32> for ValueSpec<'_> {
    fn from(value: f32) -> Self {
        ValueSpec::float(value)
    }
}

impl From<f64> for ValueSpec<'_> {
    fn from(value: f64) -> Self {
        ValueSpec::double(value)
    }
}

impl<'a> From<&str> for ValueSpec<'a> {
    fn from(text: &str) -> Self {
        ValueSpec::string(text)
    }
}

impl From<String> for ValueSpec<'_> {
    fn from(text: String) -> Self {
        ValueSpec::string(text)
    }
}

impl<'a> From<JavaStr<'a>> for ValueSpec<'a> {
    fn from(text: JavaStr<'a>) -> Self {
        ValueSpec::String(text)
    }
}

/// A method call being entered: the method, its receiver and arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct CallSpec<'a> {
    /// The called method.
    pub method: &'a MethodSpec<'a>,
    /// The receiver; `Null` for static calls.
    pub receiver: ValueSpec<'a>,
    /// The arguments.
    pub arguments: Vec<ValueSpec<'a>>,
    /// Whether recording started inside this call, so some of its
    /// tracepoints are missing (flag bit 0).
    pub incomplete: bool,
}

impl<'a> CallSpec<'a> {
    /// A static call of `method` without arguments.
    pub fn new(method: &'a MethodSpec<'a>) -> Self {
        CallSpec {
            method,
            receiver: ValueSpec::Null,
            arguments: Vec::new(),
            incomplete: false,
        }
    }

    /// The same call on `receiver`.
    pub fn on(mut self, receiver: ValueSpec<'a>) -> Self {
        self.receiver = receiver;
        self
    }

    /// The same call with one more argument.
    pub fn with_argument(mut self, argument: impl Into<ValueSpec<'a>>) -> Self {
        self.arguments.push(argument.into());
        self
    }

    /// The same call, marked as entered before recording started.
    pub fn incomplete(mut self) -> Self {
        self.incomplete = true;
        self
    }
}

/// How a method call ended.
#[derive(Debug, Clone, PartialEq)]
pub enum CallOutcome<'a> {
    /// It returned this value (`Void` for `void` methods, `KotlinUnit` for `Unit`).
    Returned(ValueSpec<'a>),
    /// It threw an exception of this *simple* class name
    /// (`IllegalStateException`); the name may not be empty.
    Threw(JavaStr<'a>),
    /// It had not returned when the trace ended (`<unfinished method>`).
    Unfinished,
    /// Its end was not tracked (`<untracked result>`).
    Untracked,
}

impl<'a> CallOutcome<'a> {
    /// Returned from a `void` method.
    pub const VOID: CallOutcome<'static> = CallOutcome::Returned(ValueSpec::Void);

    /// Returned `value`.
    pub fn returned(value: impl Into<ValueSpec<'a>>) -> Self {
        CallOutcome::Returned(value.into())
    }

    /// Threw an exception of simple class name `exception`.
    pub fn threw(exception: impl Into<JavaStr<'a>>) -> Self {
        CallOutcome::Threw(exception.into())
    }
}

impl<'a, T: Into<ValueSpec<'a>>> From<T> for CallOutcome<'a> {
    fn from(value: T) -> Self {
        CallOutcome::Returned(value.into())
    }
}

/// A snapshot ("live") breakpoint hit.
#[derive(Debug, Clone, PartialEq)]
pub struct BreakpointSpec<'a> {
    /// The breakpoint's UUID.
    pub uuid: u128,
    /// The stack, innermost frame first (`None`: an unknown frame).
    pub stack: Vec<Option<CodeLocationSpec<'a>>>,
    /// Wall-clock time, milliseconds since the epoch.
    pub millis: i64,
    /// Captured values.
    pub values: Vec<ValueSpec<'a>>,
    /// The trace id, if any.
    pub trace_id: Option<JavaStr<'a>>,
}

impl<'a> BreakpointSpec<'a> {
    /// A hit of breakpoint `uuid` at `millis`, with no stack, values or trace id.
    pub fn new(uuid: u128, millis: i64) -> Self {
        BreakpointSpec {
            uuid,
            stack: Vec::new(),
            millis,
            values: Vec::new(),
            trace_id: None,
        }
    }

    /// The same hit with one more (outer) stack frame.
    pub fn with_frame(mut self, frame: CodeLocationSpec<'a>) -> Self {
        self.stack.push(Some(frame));
        self
    }

    /// The same hit with one more captured value.
    pub fn with_value(mut self, value: impl Into<ValueSpec<'a>>) -> Self {
        self.values.push(value.into());
        self
    }

    /// The same hit with a trace id.
    pub fn with_trace_id(mut self, trace_id: impl Into<JavaStr<'a>>) -> Self {
        self.trace_id = Some(trace_id.into());
        self
    }
}

/// A tracepoint without children: what the builder's leaf methods
/// ([`ThreadRecorder::read_local`](crate::write::ThreadRecorder::read_local)
/// and the others) hand to the one function that records a leaf.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum LeafSpec<'a> {
    /// `array[index] ➜ value`.
    ReadArray {
        /// The array.
        array: ValueSpec<'a>,
        /// The index.
        index: i32,
        /// The value read.
        value: ValueSpec<'a>,
    },
    /// `array[index] = value`.
    WriteArray {
        /// The array.
        array: ValueSpec<'a>,
        /// The index.
        index: i32,
        /// The value written.
        value: ValueSpec<'a>,
    },
    /// `variable ➜ value`.
    ReadLocal {
        /// The variable.
        variable: &'a VariableSpec<'a>,
        /// The value read.
        value: ValueSpec<'a>,
    },
    /// `variable = value`.
    WriteLocal {
        /// The variable.
        variable: &'a VariableSpec<'a>,
        /// The value written.
        value: ValueSpec<'a>,
    },
    /// `receiver.field ➜ value`.
    ReadField {
        /// The field.
        field: &'a FieldSpec<'a>,
        /// The object; `Null` for static fields.
        receiver: ValueSpec<'a>,
        /// The value read.
        value: ValueSpec<'a>,
    },
    /// `receiver.field = value`.
    WriteField {
        /// The field.
        field: &'a FieldSpec<'a>,
        /// The object; `Null` for static fields.
        receiver: ValueSpec<'a>,
        /// The value written.
        value: ValueSpec<'a>,
    },
    /// A snapshot breakpoint hit.
    Breakpoint(BreakpointSpec<'a>),
    /// An exception thrown.
    Throw {
        /// The exception.
        exception: ValueSpec<'a>,
    },
    /// An exception caught.
    Catch {
        /// The exception.
        exception: ValueSpec<'a>,
    },
}
