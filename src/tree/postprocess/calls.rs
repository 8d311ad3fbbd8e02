//! The call patterns of the chain: `$default` and `access$` pairs,
//! synthetic accessors (`access$get…` with 2 children, `access$set…` with
//! 3) and auto-generated ones (`getX()` reading field `x` of its class, with
//! the value's class as its return type; `setX` writing it after
//! `<set-?>`), each matched by peeking at the call's children by node.
//!
//! A peek at child `i` gives the first child at raw position `≥ i` that is
//! kept, decided as the reference's lazy reader decides it, with the
//! nesting of qualifying calls bounded by the budget
//! ([`CHAIN_LIMIT`](super::CHAIN_LIMIT)). A call that became a field
//! access shows the access at the call's code location, with the call's
//! status as a leaf's.

use crate::common::{ClassId, FieldId, MethodId};
use crate::error::Result;
use crate::format::TraceContext;
use crate::model::{JavaStr, Tracepoint, TracepointBody, TracepointType, Type, Value};
use crate::tree::TraceTree;

use super::{PostNode, Postprocessed, as_leaf};

/// Which names a call's method could qualify with: one bit per pattern.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Names(u8);

impl Names {
    const DEFAULT: u8 = 1;
    const ACCESS: u8 = 1 << 1;
    const SYNTHETIC_GET: u8 = 1 << 2;
    const SYNTHETIC_SET: u8 = 1 << 3;
    const GETTER: u8 = 1 << 4;
    const SETTER: u8 = 1 << 5;

    /// Whether any pattern could qualify.
    pub(super) fn any(self) -> bool {
        self.0 != 0
    }

    /// `access$get…`: a synthetic getter.
    pub(super) fn synthetic_get(self) -> bool {
        self.0 & Self::SYNTHETIC_GET != 0
    }

    /// `access$set…`: a synthetic setter.
    pub(super) fn synthetic_set(self) -> bool {
        self.0 & Self::SYNTHETIC_SET != 0
    }

    /// The names as the low six bits of a byte.
    pub(super) fn bits(self) -> u8 {
        self.0
    }

    /// The names of [`Names::bits`].
    pub(super) fn from_bits(bits: u8) -> Self {
        Names(bits & 0x3f)
    }
}

pub(super) fn names_of(name: &[u8]) -> Names {
    let bit = |set: bool, bit: u8| if set { bit } else { 0 };
    let accessors =
        bit(name.starts_with(b"get"), Names::GETTER) | bit(name.starts_with(b"set"), Names::SETTER);
    // Every pattern but a getter's and a setter's holds a `$`.
    if memchr::memchr(b'$', name).is_none() {
        return Names(accessors);
    }
    Names(
        accessors
            | bit(name.ends_with(b"$default"), Names::DEFAULT)
            | bit(name.starts_with(b"access$"), Names::ACCESS)
            | bit(contains(name, b"access$get"), Names::SYNTHETIC_GET)
            | bit(contains(name, b"access$set"), Names::SYNTHETIC_SET),
    )
}

pub(super) fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(haystack, needle).is_some()
}

/// `"get" + capitalized field name == method name`.
pub(super) fn accessor_name(prefix: &[u8], method: &JavaStr<'_>, field: &JavaStr<'_>) -> bool {
    let method = method.decode();
    let field = field.decode();
    let Some(rest) = method.strip_prefix(std::str::from_utf8(prefix).unwrap_or_default()) else {
        return false;
    };
    let mut chars = field.chars();
    match chars.next() {
        Some(first) => {
            let capital: String = first.to_uppercase().chain(chars).collect();
            rest == capital
        }
        None => rest.is_empty(),
    }
}

/// `String.toType()` of the reference, on a class name.
pub(super) fn type_of_class_name(name: &[u8]) -> Type<'static> {
    match name {
        b"I" | b"java.lang.Integer" => Type::Int,
        b"J" | b"java.lang.Long" => Type::Long,
        b"D" | b"java.lang.Double" => Type::Double,
        b"F" | b"java.lang.Float" => Type::Float,
        b"Z" | b"java.lang.Boolean" => Type::Boolean,
        b"B" | b"java.lang.Byte" => Type::Byte,
        b"S" | b"java.lang.Short" => Type::Short,
        b"C" | b"java.lang.Character" => Type::Char,
        [b'[', rest @ ..] => Type::Array(Box::new(type_of_class_name(rest))),
        [b'L', inner @ .., b';'] => Type::Object(java_str(inner)),
        _ => Type::Object(java_str(name)),
    }
}

pub(super) fn java_str(bytes: &[u8]) -> JavaStr<'static> {
    JavaStr::from_mutf8(bytes)
        .map(JavaStr::into_owned)
        .unwrap_or_else(|_| JavaStr::new(&String::from_utf8_lossy(bytes)))
}

/// The type the reference derives from a value's class name
/// (`TRValue.className.toType()`).
pub(super) fn type_of_value(context: &TraceContext, value: &Value<'_>) -> Result<Type<'static>> {
    let name: &[u8] = match value {
        Value::Null => b"null",
        Value::Void => b"void",
        Value::Byte(_) => b"java.lang.Byte",
        Value::Short(_) => b"java.lang.Short",
        Value::Int(_) => b"java.lang.Integer",
        Value::Long(_) => b"java.lang.Long",
        Value::Float(_) => b"java.lang.Float",
        Value::Double(_) => b"java.lang.Double",
        Value::Char(_) => b"java.lang.Character",
        Value::Boolean(_) => b"java.lang.Boolean",
        Value::KotlinUnit => b"kotlin.Unit",
        Value::String(_)
        | Value::RawString(_)
        | Value::JavaClass(_)
        | Value::KotlinClass(_)
        | Value::StringBuilder { .. } => b"java.lang.String",
        Value::Object { class, .. } | Value::Array { class, .. } => {
            return Ok(type_of_class_name(context.class(*class)?.name.as_bytes()));
        }
    };
    Ok(type_of_class_name(name))
}

/// A call the chain works on: its raw node (children, body) and facts.
pub(super) struct Call<N> {
    pub(super) node: PostNode<N>,
    pub(super) method: MethodId,
    pub(super) class: ClassId,
    pub(super) no_arguments: bool,
    pub(super) children: usize,
}

/// What a peek needs of a kept child.
pub(super) struct Peeked<N> {
    pub(super) node: PostNode<N>,
    pub(super) ty: TracepointType,
    /// A call's method, a field access's field (class and name), a local's name.
    pub(super) method: Option<MethodId>,
    pub(super) field: Option<FieldId>,
    pub(super) local_name: Option<Vec<u8>>,
    pub(super) read_type: Option<Type<'static>>,
    pub(super) no_arguments: bool,
}

impl<T: TraceTree> Postprocessed<T> {
    /// The first kept child of `parent` at raw position `from` or later.
    pub(super) fn peek(
        &self,
        parent: T::Node,
        from: usize,
        n: usize,
        budget: u32,
    ) -> Result<Option<Peeked<T::Node>>> {
        for index in from..n {
            let Some(&child) = self.inner.children_range(parent, index, 1)?.first() else {
                return Ok(None);
            };
            // Decided and described in one read when it shows itself.
            let decided = self.inner.visit(child, |tp, footer| -> Result<_> {
                Ok(match self.decide(child, tp, footer, budget)? {
                    None => None,
                    Some(node) if node.inner == child => Some(Ok(self.describe(node, tp)?)),
                    Some(node) => Some(Err(node)),
                })
            })??;
            match decided {
                None => continue,
                Some(Ok(peeked)) => return Ok(Some(peeked)),
                Some(Err(node)) => {
                    return self
                        .inner
                        .visit(node.inner, |tp, _| self.describe(node, tp))?
                        .map(Some);
                }
            }
        }
        Ok(None)
    }

    /// What a peek needs of a kept node whose raw tracepoint is `tp`.
    pub(super) fn describe(
        &self,
        node: PostNode<T::Node>,
        tp: &Tracepoint<'_>,
    ) -> Result<Peeked<T::Node>> {
        let context = self.context();
        let mut peeked = Peeked {
            node,
            ty: tp.tracepoint_type(),
            method: None,
            field: None,
            local_name: None,
            read_type: None,
            no_arguments: false,
        };
        match &tp.body {
            TracepointBody::MethodCall {
                method, arguments, ..
            } => {
                peeked.method = Some(*method);
                peeked.no_arguments = arguments.is_empty();
            }
            TracepointBody::ReadField { field, value, .. } => {
                peeked.field = Some(*field);
                peeked.read_type = Some(type_of_value(context, value)?);
            }
            TracepointBody::WriteField { field, .. } => peeked.field = Some(*field),
            TracepointBody::ReadLocal { variable, .. }
            | TracepointBody::WriteLocal { variable, .. } => {
                peeked.local_name = Some(context.variable(*variable)?.name.as_bytes().to_vec());
            }
            _ => {}
        }
        Ok(peeked)
    }

    /// The reference's chain on a call whose name could qualify.
    pub(super) fn chain(
        &self,
        mut call: Call<T::Node>,
        budget: u32,
    ) -> Result<Option<PostNode<T::Node>>> {
        let context = self.context();
        // compressDefaultPairs, then compressAccessPairs.
        for suffix_pair in [true, false] {
            if call.children != 1 {
                break;
            }
            let name = context.method(call.method)?.name.as_bytes();
            let qualifies = if suffix_pair {
                name.ends_with(b"$default")
            } else {
                name.starts_with(b"access$")
            };
            if !qualifies {
                continue;
            }
            let Some(child) = self.peek(call.node.inner, 0, 1, budget)? else {
                continue;
            };
            let Some(child_method) = child.method else {
                continue;
            };
            let child_descriptor = context.method(child_method)?;
            if !self.same_class(call.class, child_descriptor.class)? {
                continue;
            }
            let child_name = child_descriptor.name.as_bytes();
            let pair = if suffix_pair {
                name.strip_suffix(b"$default") == Some(child_name)
            } else {
                name.strip_prefix(b"access$") == Some(child_name)
            };
            if !pair {
                continue;
            }
            call = Call {
                node: PostNode {
                    inner: child.node.inner,
                    status: child.node.status,
                    ..call.node
                },
                method: child_method,
                class: child_descriptor.class,
                no_arguments: child.no_arguments,
                children: self.inner.child_count(child.node.inner)?,
            };
        }
        let descriptor = context.method(call.method)?;
        let names = self.memo.names(context, call.method)?;
        let leaf = |access: &Peeked<T::Node>| PostNode {
            inner: access.node.inner,
            at: call.node.at,
            location: call.node.location,
            status: as_leaf(call.node.status),
            fewer_iterations: false,
        };
        // compressSyntheticFieldAccess.
        if (call.children == 2 || call.children == 3)
            && (names.synthetic_get() || names.synthetic_set())
        {
            let slot = if names.synthetic_get() { 1 } else { 2 };
            if let Some(access) = self.peek(call.node.inner, slot, call.children, budget)?
                && matches!(
                    access.ty,
                    TracepointType::ReadField | TracepointType::WriteField
                )
            {
                return self.kept_access(leaf(&access));
            }
        }
        // compressAutoGeneratedFieldAccess.
        if call.children == 1 || call.children == 2 {
            let Some(first) = self.peek(call.node.inner, 0, call.children, budget)? else {
                return Ok(Some(call.node));
            };
            if call.children == 1 {
                if first.ty == TracepointType::ReadField
                    && let Some(field) = first.field
                {
                    let field = context.field(field)?;
                    if self.same_class(descriptor.class, field.class)?
                        && call.no_arguments
                        && first.read_type.as_ref() == Some(&descriptor.return_type)
                        && accessor_name(b"get", &descriptor.name, &field.name)
                    {
                        return self.kept_access(leaf(&first));
                    }
                }
            } else if let Some(second) = self.peek(call.node.inner, 1, 2, budget)?
                && matches!(
                    first.ty,
                    TracepointType::ReadLocal | TracepointType::WriteLocal
                )
                && first.local_name.as_deref() == Some(b"<set-?>".as_slice())
                && second.ty == TracepointType::WriteField
                && let Some(field) = second.field
            {
                let field = context.field(field)?;
                if self.same_class(descriptor.class, field.class)?
                    && accessor_name(b"set", &descriptor.name, &field.name)
                {
                    return self.kept_access(leaf(&second));
                }
            }
        }
        Ok(Some(call.node))
    }

    /// A field access a call became, unless it is a coverage field.
    pub(super) fn kept_access(&self, node: PostNode<T::Node>) -> Result<Option<PostNode<T::Node>>> {
        self.inner.visit(node.inner, |tp, _| {
            Ok(if self.coverage_leaf(tp, node.location)? {
                None
            } else {
                Some(node)
            })
        })?
    }

    pub(super) fn same_class(&self, a: ClassId, b: ClassId) -> Result<bool> {
        Ok(a == b || self.context().class(a)?.name == self.context().class(b)?.name)
    }
}
