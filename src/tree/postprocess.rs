//! [`Postprocessed`]: any [`TraceTree`] seen as the recorder's IDE plugin and
//! its trace diff see it, through the reference's `CompressingPostprocessor`
//! (lincheck 3.6, `TracePostprocessor.kt`, applied by its `LazyTraceReader`
//! to every tracepoint it loads).
//!
//! Each raw tracepoint goes through the reference's chain, in its order:
//! a call with one child `f` named `f$default` or `access$f` (same class)
//! becomes that child at the outer call's code location; `access$get…`
//! with 2 children and `access$set…` with 3 become the field access at the
//! last place; `getX()` (no arguments, one child: a read of field `x` of the
//! same class whose value's class is the return type) and `setX` (children
//! `<set-?>` then a write of `x`) become that access; coverage accesses
//! (`__$coverage_local$__`, `__$hits$__`, …) are dropped, as are loops
//! with no iterations, loops whose only iteration is dropped and every
//! iteration with no raw children; a loop whose last child is dropped
//! counts one iteration fewer. A replaced call's leaf takes the call's diff
//! status as a leaf's (edited old: removed, edited new: added).
//!
//! Invariants, as the reference's lazy reader has them:
//! - The tests read *raw* child counts (`events.size`) and a peek at child
//!   `i` gives the first child at raw position `≥ i` that is kept.
//! - A kept call whose peeked slots lie past its kept children shows the
//!   peeked child again after them (`loadAllChildren` compacts the kept
//!   children but leaves the peeked slots filled): a call with two raw
//!   children, the first dropped, shows the second twice; so does a loop
//!   whose last iteration is kept when an earlier child was dropped. The
//!   view shows what the reference's printer shows; its diff reads a
//!   children list up to the first empty slot, which differs only where a
//!   peeked slot is separated from the kept children by an empty one.
//! - A node ([`PostNode`]) is the raw node whose body, children and event id
//!   it shows, the raw child it stands for, and the code location and
//!   status it shows: nothing is materialized. Walks stream the inner
//!   reader's own walks; decisions read the raw tracepoint the walk gives,
//!   and only calls whose names could qualify and loops peek at children.
//! - Deviations: a chain of qualifying calls nested deeper than
//!   [`CHAIN_LIMIT`] is left as it is (the reference recurses without
//!   bound); the access path of a coverage array access is matched step by
//!   step (the reference matches its whole rendered text); a call's child
//!   diff statuses are its own, without those a peek adds.

use crate::common::{ClassId, CodeLocationId, FieldId, MethodId, ThreadId};
use crate::error::{Error, Result};
use crate::format::TraceContext;
use crate::model::{
    AccessLocation, DiffStatus, Footer, JavaStr, Tracepoint, TracepointBody, TracepointType, Type,
    Value,
};
use crate::read::{Visit, VisitDetail};
use crate::tree::TraceTree;

/// Nested qualifying calls resolved at most (the view recurses on them).
const CHAIN_LIMIT: u32 = 256;
/// Children read at once while scanning a children list.
const SCAN_PAGE: usize = 4096;

const COVERAGE_LOCALS: [&[u8]; 2] = [b"__$coverage_local$__", b"__$hits$__"];
const COVERAGE_FIELDS: [&[u8]; 3] = [b"__$hits$__", b"__$traceMask$__", b"__$classData$__"];
const COVERAGE_ARRAYS: [&[u8]; 4] = [
    b"__$coverage_local$__",
    b"__$hits$__",
    b"__$traceMask$__",
    b"__$classData$__",
];

/// A trace tree seen through the recorder's post-processing: what its IDE
/// plugin shows and what its trace diff compares (see the module doc).
/// Wraps any reader: `Postprocessed::new(&reader)` is itself a
/// [`TraceTree`] the printers, the dump and the diff take.
pub struct Postprocessed<'a, T> {
    inner: &'a T,
}

/// A node of [`Postprocessed`]: the raw node it shows, the raw child of its
/// parent it stands for, and the code location and diff status it shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PostNode<N> {
    inner: N,
    at: N,
    location: CodeLocationId,
    status: DiffStatus,
    fewer_iterations: bool,
}

impl<'a, T: TraceTree> Postprocessed<'a, T> {
    /// `inner` seen through the post-processing.
    pub fn new(inner: &'a T) -> Self {
        Postprocessed { inner }
    }
}

/// What the chain needs of a raw tracepoint.
#[derive(Clone, Copy)]
struct Raw<N> {
    node: N,
    location: CodeLocationId,
    status: DiffStatus,
}

fn raw<N>(node: N, tp: &Tracepoint<'_>) -> Raw<N> {
    Raw {
        node,
        location: tp.header.code_location,
        status: tp.header.diff_status,
    }
}

fn shown<N: Copy>(raw: Raw<N>) -> PostNode<N> {
    PostNode {
        inner: raw.node,
        at: raw.node,
        location: raw.location,
        status: raw.status,
        fewer_iterations: false,
    }
}

/// `DiffStatus.toLeaf()`.
fn as_leaf(status: DiffStatus) -> DiffStatus {
    match status {
        DiffStatus::EditedOld => DiffStatus::Removed,
        DiffStatus::EditedNew => DiffStatus::Added,
        other => other,
    }
}

/// Which names a call's method could qualify with.
#[derive(Clone, Copy, Default)]
struct Names {
    default: bool,
    access: bool,
    synthetic_get: bool,
    synthetic_set: bool,
    getter: bool,
    setter: bool,
}

fn names_of(name: &[u8]) -> Names {
    Names {
        default: name.ends_with(b"$default"),
        access: name.starts_with(b"access$"),
        synthetic_get: contains(name, b"access$get"),
        synthetic_set: contains(name, b"access$set"),
        getter: name.starts_with(b"get"),
        setter: name.starts_with(b"set"),
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// The slots of a kept container's children list that the chain peeked:
/// a call's by its raw child count and names, a loop's last (at most two,
/// ascending).
fn peeked_slots(ty: TracepointType, names: Names, n: usize) -> [Option<usize>; 2] {
    match ty {
        TracepointType::MethodCall => match n {
            1 => [Some(0), None],
            2 => [Some(0), Some(1)],
            3 if names.synthetic_get => [Some(1), None],
            3 if names.synthetic_set => [Some(2), None],
            _ => [None, None],
        },
        TracepointType::Loop if n > 0 => [Some(n - 1), None],
        _ => [None, None],
    }
}

/// `"get" + capitalized field name == method name`.
fn accessor_name(prefix: &[u8], method: &JavaStr<'_>, field: &JavaStr<'_>) -> bool {
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
fn type_of_class_name(name: &[u8]) -> Type<'static> {
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

fn java_str(bytes: &[u8]) -> JavaStr<'static> {
    JavaStr::from_mutf8(bytes)
        .map(JavaStr::into_owned)
        .unwrap_or_else(|_| JavaStr::new(&String::from_utf8_lossy(bytes)))
}

/// The type the reference derives from a value's class name
/// (`TRValue.className.toType()`).
fn type_of_value(context: &TraceContext, value: &Value<'_>) -> Result<Type<'static>> {
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

fn is_coverage(name: &[u8], set: &[&[u8]]) -> bool {
    set.contains(&name)
}

/// Whether an access path names a coverage array (any step's name
/// containing one of the names, paths by name followed a few steps deep).
fn coverage_path(context: &TraceContext, location: CodeLocationId) -> Result<bool> {
    if location.0 < 0 {
        return Ok(false);
    }
    let Ok(location) = context.code_location(location) else {
        return Ok(false);
    };
    let mut pending: Vec<(crate::common::AccessPathId, u32)> =
        location.access_path.into_iter().map(|p| (p, 0)).collect();
    while let Some((path, depth)) = pending.pop() {
        let Ok(path) = context.access_path(path) else {
            continue;
        };
        for step in &path.locations {
            let name = match step {
                AccessLocation::Local(variable) => context.variable(*variable)?.name.as_bytes(),
                AccessLocation::StaticField(field) | AccessLocation::ObjectField(field) => {
                    context.field(*field)?.name.as_bytes()
                }
                AccessLocation::ArrayElementByName(inner) => {
                    if depth < 8 {
                        pending.push((*inner, depth + 1));
                    }
                    continue;
                }
                AccessLocation::ArrayIndex(_) => continue,
            };
            if COVERAGE_ARRAYS.iter().any(|set| contains(name, set)) {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// A leaf's coverage test (`removeCoverageInstructions`), on its raw body
/// at the code location it shows.
fn coverage_leaf(
    context: &TraceContext,
    tp: &Tracepoint<'_>,
    location: CodeLocationId,
) -> Result<bool> {
    Ok(match &tp.body {
        TracepointBody::ReadArray { .. } | TracepointBody::WriteArray { .. } => {
            coverage_path(context, location)?
        }
        TracepointBody::ReadLocal { variable, .. }
        | TracepointBody::WriteLocal { variable, .. } => is_coverage(
            context.variable(*variable)?.name.as_bytes(),
            &COVERAGE_LOCALS,
        ),
        TracepointBody::ReadField { field, .. } | TracepointBody::WriteField { field, .. } => {
            is_coverage(context.field(*field)?.name.as_bytes(), &COVERAGE_FIELDS)
        }
        _ => false,
    })
}

/// A call the chain works on: its raw node (children, body) and facts.
struct Call<N> {
    node: PostNode<N>,
    method: MethodId,
    class: ClassId,
    no_arguments: bool,
    children: usize,
}

/// What a peek needs of a kept child.
struct Peeked<N> {
    node: PostNode<N>,
    ty: TracepointType,
    /// A call's method, a field access's field (class and name), a local's name.
    method: Option<MethodId>,
    field: Option<FieldId>,
    local_name: Option<Vec<u8>>,
    read_type: Option<Type<'static>>,
    no_arguments: bool,
}

impl<'a, T: TraceTree> Postprocessed<'a, T> {
    fn context(&self) -> &TraceContext {
        self.inner.context()
    }

    /// Decides a raw tracepoint: `None` when the view drops it.
    fn decide(
        &self,
        node: T::Node,
        tp: &Tracepoint<'_>,
        footer: Option<&Footer<'_>>,
        budget: u32,
    ) -> Result<Option<PostNode<T::Node>>> {
        let context = self.context();
        let here = raw(node, tp);
        match &tp.body {
            TracepointBody::MethodCall {
                method, arguments, ..
            } => {
                let method_descriptor = context.method(*method)?;
                let names = names_of(method_descriptor.name.as_bytes());
                if !(names.default
                    || names.access
                    || names.synthetic_get
                    || names.synthetic_set
                    || names.getter
                    || names.setter)
                    || budget == 0
                {
                    return Ok(Some(shown(here)));
                }
                let call = Call {
                    node: shown(here),
                    method: *method,
                    class: method_descriptor.class,
                    no_arguments: arguments.is_empty(),
                    children: self.inner.child_count(node)?,
                };
                self.chain(call, budget - 1)
            }
            TracepointBody::Loop { .. } => {
                let iterations = match footer {
                    Some(Footer::Loop { iterations }) => *iterations,
                    _ => 0,
                };
                if iterations == 0 {
                    return Ok(None);
                }
                let n = self.inner.child_count(node)?;
                let last = if n == 0 || budget == 0 {
                    None
                } else {
                    self.peek(node, n - 1, n, budget - 1)?
                };
                match last {
                    None if iterations == 1 => Ok(None),
                    None => Ok(Some(PostNode {
                        fewer_iterations: true,
                        ..shown(here)
                    })),
                    Some(_) => Ok(Some(shown(here))),
                }
            }
            TracepointBody::LoopIteration { .. } => {
                if self.inner.child_count(node)? == 0 {
                    Ok(None)
                } else {
                    Ok(Some(shown(here)))
                }
            }
            _ => {
                if coverage_leaf(context, tp, here.location)? {
                    Ok(None)
                } else {
                    Ok(Some(shown(here)))
                }
            }
        }
    }

    /// A raw node decided by itself (read through the inner tree).
    fn resolve(&self, node: T::Node, budget: u32) -> Result<Option<PostNode<T::Node>>> {
        let inner = self.inner;
        inner.visit(node, |tp, footer| self.decide(node, tp, footer, budget))?
    }

    /// The first kept child of `parent` at raw position `from` or later.
    fn peek(
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
    fn describe(&self, node: PostNode<T::Node>, tp: &Tracepoint<'_>) -> Result<Peeked<T::Node>> {
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
    fn chain(&self, mut call: Call<T::Node>, budget: u32) -> Result<Option<PostNode<T::Node>>> {
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
        let names = names_of(descriptor.name.as_bytes());
        let leaf = |access: &Peeked<T::Node>| PostNode {
            inner: access.node.inner,
            at: call.node.at,
            location: call.node.location,
            status: as_leaf(call.node.status),
            fewer_iterations: false,
        };
        // compressSyntheticFieldAccess.
        if (call.children == 2 || call.children == 3)
            && (names.synthetic_get || names.synthetic_set)
        {
            let slot = if names.synthetic_get { 1 } else { 2 };
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
    fn kept_access(&self, node: PostNode<T::Node>) -> Result<Option<PostNode<T::Node>>> {
        let context = self.context();
        self.inner.visit(node.inner, |tp, _| {
            Ok(if coverage_leaf(context, tp, node.location)? {
                None
            } else {
                Some(node)
            })
        })?
    }

    fn same_class(&self, a: ClassId, b: ClassId) -> Result<bool> {
        Ok(a == b || self.context().class(a)?.name == self.context().class(b)?.name)
    }

    /// Whether a view node shows children: a call or a loop's, not a leaf a
    /// call became.
    fn is_container(&self, node: PostNode<T::Node>) -> Result<bool> {
        self.inner.visit(node.inner, |tp, _| tp.is_container())
    }

    /// The kept children of a container, with the peeked slots after them,
    /// as the reference's printer lists them; `limit` stops the scan once
    /// that many are found.
    fn scan_children(
        &self,
        node: PostNode<T::Node>,
        limit: usize,
        mut keep: impl FnMut(PostNode<T::Node>),
    ) -> Result<usize> {
        let mut shown = 0;
        if !self.is_container(node)? {
            return Ok(shown);
        }
        let parent = node.inner;
        let n = self.inner.child_count(parent)?;
        let mut tracker = Tracker::default();
        let mut from = 0;
        while from < n {
            let page = self.inner.children_range(parent, from, SCAN_PAGE)?;
            if page.is_empty() {
                break;
            }
            from += page.len();
            for child in page {
                let kept = self.resolve(child, CHAIN_LIMIT)?;
                tracker.add(kept);
                if let Some(kept) = kept {
                    keep(kept);
                    shown += 1;
                    if shown >= limit {
                        return Ok(shown);
                    }
                }
            }
        }
        let slots = self.slots_of(parent, tracker.n)?;
        for again in tracker.stale(slots) {
            keep(again);
            shown += 1;
        }
        Ok(shown)
    }

    /// [`peeked_slots`] of a raw container.
    fn slots_of(&self, parent: T::Node, n: usize) -> Result<[Option<usize>; 2]> {
        let shape = self.shape_of(parent)?;
        Ok(peeked_slots(shape.ty, shape.names, n))
    }

    fn shape_of(&self, node: T::Node) -> Result<Shape> {
        let context = self.context();
        self.inner.visit(node, |tp, _| Shape::of(context, tp))?
    }

    /// Shows `tp` (the raw tracepoint of `node.inner`) as `node` shows it.
    fn show<R>(
        node: PostNode<T::Node>,
        tp: &Tracepoint<'_>,
        footer: Option<&Footer<'_>>,
        f: impl FnOnce(&Tracepoint<'_>, Option<&Footer<'_>>) -> R,
    ) -> R {
        if node.location == tp.header.code_location
            && node.status == tp.header.diff_status
            && !node.fewer_iterations
        {
            return f(tp, footer);
        }
        let mut changed = tp.clone();
        changed.header.code_location = node.location;
        changed.header.diff_status = node.status;
        match footer {
            Some(Footer::Loop { iterations }) if node.fewer_iterations => f(
                &changed,
                Some(&Footer::Loop {
                    iterations: iterations - 1,
                }),
            ),
            _ => f(&changed, footer),
        }
    }
}

/// What a children list's scan keeps to find the peeked slots past its
/// kept children: the raw count, the kept count, the first three children
/// and the last.
struct Tracker<N> {
    n: usize,
    kept: usize,
    first: [Option<Option<PostNode<N>>>; 3],
    last: Option<Option<PostNode<N>>>,
}

impl<N> Default for Tracker<N> {
    fn default() -> Self {
        Tracker {
            n: 0,
            kept: 0,
            first: [None, None, None],
            last: None,
        }
    }
}

impl<N: Copy> Tracker<N> {
    fn add(&mut self, child: Option<PostNode<N>>) {
        if self.n < 3 {
            self.first[self.n] = Some(child);
        }
        self.n += 1;
        if child.is_some() {
            self.kept += 1;
        }
        self.last = Some(child);
    }

    /// The children the reference lists again after the kept ones: each
    /// peeked slot past them holding the first kept child at or after it.
    fn stale(&self, slots: [Option<usize>; 2]) -> Vec<PostNode<N>> {
        let mut again = Vec::new();
        for slot in slots.into_iter().flatten() {
            if slot < self.kept || slot >= self.n {
                continue;
            }
            let found = if slot + 1 == self.n {
                self.last.flatten()
            } else {
                self.first
                    .iter()
                    .skip(slot)
                    .flatten()
                    .copied()
                    .flatten()
                    .next()
            };
            if let Some(found) = found {
                again.push(found);
            }
        }
        again
    }
}

/// What [`peeked_slots`] needs of a container.
#[derive(Clone, Copy)]
struct Shape {
    ty: TracepointType,
    names: Names,
}

impl Shape {
    fn of(context: &TraceContext, tp: &Tracepoint<'_>) -> Result<Shape> {
        let names = match &tp.body {
            TracepointBody::MethodCall { method, .. } => {
                names_of(context.method(*method)?.name.as_bytes())
            }
            _ => Names::default(),
        };
        Ok(Shape {
            ty: tp.tracepoint_type(),
            names,
        })
    }

    /// Whether a list of `n` children under it can show a peeked slot
    /// again (calls of up to three children, loops).
    fn may_repeat(self, n: usize) -> bool {
        peeked_slots(self.ty, self.names, n)[0].is_some()
    }
}

/// What a walk of the view hands its nodes to.
type Visitor<'f, N> = dyn FnMut(Visit<'_, PostNode<N>>) -> Result<()> + 'f;

/// Where a node is: its raw depth in the inner walk, its depth shown.
#[derive(Clone, Copy)]
struct Place {
    raw_depth: isize,
    depth: usize,
}

/// A loop iteration held until the walk's next node says whether it has
/// children.
struct Pending<N> {
    node: N,
    tracepoint: Tracepoint<'static>,
    footer: Option<Footer<'static>>,
    at: Place,
}

/// One open raw container in a streamed walk.
struct Frame<N> {
    /// Its raw depth in the inner walk (−1: the parent of the roots).
    raw_depth: isize,
    mode: Mode<N>,
}

enum Mode<N> {
    /// Its kept children are shown at `depth`.
    Show {
        shape: Shape,
        depth: usize,
        tracker: Tracker<N>,
    },
    /// Nothing under it is shown but `target`'s children, at `depth`.
    Hide { target: Option<(N, usize)> },
}

impl<'a, T: TraceTree> Postprocessed<'a, T> {
    /// Streams the view of `parent`'s raw children from `first` up to
    /// `next` (all when `None`) at `depth`, through the inner reader's walk.
    #[allow(clippy::too_many_arguments)]
    fn stream_children(
        &self,
        parent: T::Node,
        first: Option<T::Node>,
        next: Option<T::Node>,
        depth: usize,
        max_depth: Option<usize>,
        detail: VisitDetail,
        f: &mut Visitor<'_, T::Node>,
    ) -> Result<()> {
        let mut tracker = Tracker::default();
        let shape = self.shape_of(parent)?;
        if let Some(first) = first {
            // The children before `first`, for the peeked slots at the end.
            if next.is_none() && shape.may_repeat(self.inner.child_count(parent)?) {
                let mut from = 0;
                'scan: loop {
                    let page = self.inner.children_range(parent, from, SCAN_PAGE)?;
                    if page.is_empty() {
                        break;
                    }
                    from += page.len();
                    for child in page {
                        if child == first {
                            break 'scan;
                        }
                        tracker.add(self.resolve(child, CHAIN_LIMIT)?);
                    }
                }
            }
        }
        let mut frames: Vec<Frame<T::Node>> = vec![Frame {
            raw_depth: -1,
            mode: Mode::Show {
                shape,
                depth,
                tracker,
            },
        }];
        let context = self.context();
        let mut pending: Option<Pending<T::Node>> = None;
        let inner_detail = VisitDetail {
            child_counts: false,
            leaf_bodies: true,
        };
        self.inner
            .walk_visit_siblings(parent, first, next, None, inner_detail, |visit| {
                let Visit::Node {
                    node,
                    depth: raw_depth,
                    tracepoint,
                    footer,
                    ..
                } = visit
                else {
                    return Err(Error::internal(
                        "a walk asked for whole nodes gave a header or a fold",
                    ));
                };
                let raw_depth = raw_depth as isize;
                if let Some(iteration) = pending.take() {
                    let kept = raw_depth > iteration.at.raw_depth;
                    let shown = shown(raw(iteration.node, &iteration.tracepoint));
                    if let Some(Frame {
                        mode: Mode::Show { tracker, .. },
                        ..
                    }) = frames.last_mut()
                    {
                        tracker.add(kept.then_some(shown));
                    }
                    if kept {
                        self.show_plain(
                            shown,
                            &iteration.tracepoint,
                            iteration.footer.as_ref(),
                            iteration.at,
                            (max_depth, detail),
                            f,
                            &mut frames,
                        )?;
                    }
                }
                while frames.last().is_some_and(|top| top.raw_depth >= raw_depth) {
                    let top = frames.pop().expect("checked");
                    self.close(top, max_depth, detail, f)?;
                }
                let Some(top) = frames.last_mut() else {
                    return Err(Error::internal("a walk left its parent"));
                };
                match &mut top.mode {
                    Mode::Hide { target } => {
                        if let Some((target, depth)) = *target
                            && target == node
                        {
                            Self::open(
                                Shape::of(context, tracepoint)?,
                                raw_depth,
                                depth,
                                &mut frames,
                            );
                        }
                        Ok(())
                    }
                    Mode::Show { depth, tracker, .. } => {
                        let depth = *depth;
                        if tracepoint.tracepoint_type() == TracepointType::LoopIteration {
                            // Kept when it has children: when the walk's next
                            // node is one.
                            pending = Some(Pending {
                                node,
                                tracepoint: tracepoint.clone().into_owned(),
                                footer: footer.map(|footer| footer.clone().into_owned()),
                                at: Place { raw_depth, depth },
                            });
                            return Ok(());
                        }
                        let decided = self.decide(node, tracepoint, footer, CHAIN_LIMIT)?;
                        tracker.add(decided);
                        let Some(shown) = decided else {
                            if tracepoint.is_container() {
                                frames.push(Frame {
                                    raw_depth,
                                    mode: Mode::Hide { target: None },
                                });
                            }
                            return Ok(());
                        };
                        if shown.inner == node {
                            let at = Place { raw_depth, depth };
                            self.show_plain(
                                shown,
                                tracepoint,
                                footer,
                                at,
                                (max_depth, detail),
                                f,
                                &mut frames,
                            )?;
                        } else {
                            self.emit(shown, depth, detail, f)?;
                            let container = self.is_container(shown)?;
                            let target = if container {
                                if max_depth.is_some_and(|max| depth >= max) {
                                    self.fold(shown, depth, f)?;
                                    None
                                } else {
                                    Some((shown.inner, depth + 1))
                                }
                            } else {
                                None
                            };
                            frames.push(Frame {
                                raw_depth,
                                mode: Mode::Hide { target },
                            });
                        }
                        Ok(())
                    }
                }
            })?;
        if pending.is_some()
            && let Some(Frame {
                mode: Mode::Show { tracker, .. },
                ..
            }) = frames.last_mut()
        {
            tracker.add(None);
        }
        while let Some(top) = frames.pop() {
            if top.raw_depth == -1 && next.is_some() {
                break;
            }
            self.close(top, max_depth, detail, f)?;
        }
        Ok(())
    }

    /// Hands a raw node that shows itself to `f`, and opens its children.
    #[allow(clippy::too_many_arguments)]
    fn show_plain(
        &self,
        shown: PostNode<T::Node>,
        tracepoint: &Tracepoint<'_>,
        footer: Option<&Footer<'_>>,
        at: Place,
        (max_depth, detail): (Option<usize>, VisitDetail),
        f: &mut Visitor<'_, T::Node>,
        frames: &mut Vec<Frame<T::Node>>,
    ) -> Result<()> {
        let Place { raw_depth, depth } = at;
        let children = if detail.child_counts {
            Some(self.child_count(shown)?)
        } else {
            None
        };
        Self::show(shown, tracepoint, footer, |tracepoint, footer| {
            f(Visit::Node {
                node: shown,
                depth,
                tracepoint,
                footer,
                children,
            })
        })?;
        if tracepoint.is_container() {
            if max_depth.is_some_and(|max| depth >= max) {
                self.fold(shown, depth, f)?;
                frames.push(Frame {
                    raw_depth,
                    mode: Mode::Hide { target: None },
                });
            } else {
                Self::open(
                    Shape::of(self.context(), tracepoint)?,
                    raw_depth,
                    depth + 1,
                    frames,
                );
            }
        }
        Ok(())
    }

    /// Opens a shown raw container whose children show at `depth`.
    fn open(shape: Shape, raw_depth: isize, depth: usize, frames: &mut Vec<Frame<T::Node>>) {
        frames.push(Frame {
            raw_depth,
            mode: Mode::Show {
                shape,
                depth,
                tracker: Tracker::default(),
            },
        });
    }

    /// Closes a frame: a shown container's peeked slots past its kept
    /// children are shown again.
    fn close(
        &self,
        frame: Frame<T::Node>,
        max_depth: Option<usize>,
        detail: VisitDetail,
        f: &mut Visitor<'_, T::Node>,
    ) -> Result<()> {
        let Mode::Show {
            shape,
            depth,
            tracker,
        } = frame.mode
        else {
            return Ok(());
        };
        let slots = peeked_slots(shape.ty, shape.names, tracker.n);
        for again in tracker.stale(slots) {
            self.walk_from(&[again], depth, max_depth, detail, f)?;
        }
        Ok(())
    }

    fn fold(
        &self,
        node: PostNode<T::Node>,
        depth: usize,
        f: &mut Visitor<'_, T::Node>,
    ) -> Result<()> {
        let count = self.child_count(node)?;
        if count > 0 {
            f(Visit::Folded {
                count,
                depth: depth + 1,
            })?;
        }
        Ok(())
    }

    /// Hands `node` to `f` at `depth`, read through the inner tree.
    fn emit(
        &self,
        node: PostNode<T::Node>,
        depth: usize,
        detail: VisitDetail,
        f: &mut Visitor<'_, T::Node>,
    ) -> Result<()> {
        let children = if detail.child_counts {
            Some(self.child_count(node)?)
        } else {
            None
        };
        self.inner.visit(node.inner, |tracepoint, footer| {
            Self::show(node, tracepoint, footer, |tracepoint, footer| {
                f(Visit::Node {
                    node,
                    depth,
                    tracepoint,
                    footer,
                    children,
                })
            })
        })?
    }

    /// Walks view nodes as roots at `depth`.
    fn walk_from(
        &self,
        roots: &[PostNode<T::Node>],
        depth: usize,
        max_depth: Option<usize>,
        detail: VisitDetail,
        f: &mut Visitor<'_, T::Node>,
    ) -> Result<()> {
        for &root in roots {
            self.emit(root, depth, detail, f)?;
            if !self.is_container(root)? {
                continue;
            }
            if max_depth.is_some_and(|max| depth >= max) {
                self.fold(root, depth, f)?;
                continue;
            }
            self.stream_children(root.inner, None, None, depth + 1, max_depth, detail, f)?;
        }
        Ok(())
    }
}

impl<'a, T: TraceTree> TraceTree for Postprocessed<'a, T> {
    type Node = PostNode<T::Node>;

    fn context(&self) -> &TraceContext {
        self.inner.context()
    }

    fn thread_ids(&self) -> Vec<ThreadId> {
        self.inner.thread_ids()
    }

    fn roots(&self, thread: ThreadId) -> Result<Vec<Self::Node>> {
        let mut roots = Vec::new();
        for root in self.inner.roots(thread)? {
            if let Some(root) = self.resolve(root, CHAIN_LIMIT)? {
                roots.push(root);
            }
        }
        Ok(roots)
    }

    fn visit<R>(
        &self,
        node: Self::Node,
        f: impl FnOnce(&Tracepoint<'_>, Option<&Footer<'_>>) -> R,
    ) -> Result<R> {
        self.inner.visit(node.inner, |tracepoint, footer| {
            Self::show(node, tracepoint, footer, f)
        })
    }

    fn child_count(&self, node: Self::Node) -> Result<usize> {
        self.scan_children(node, usize::MAX, |_| {})
    }

    fn children(&self, node: Self::Node) -> Result<Vec<Self::Node>> {
        let mut children = Vec::new();
        self.scan_children(node, usize::MAX, |child| children.push(child))?;
        Ok(children)
    }

    fn children_range(
        &self,
        node: Self::Node,
        from: usize,
        count: usize,
    ) -> Result<Vec<Self::Node>> {
        let mut children = Vec::new();
        self.scan_children(node, from.saturating_add(count), |child| {
            children.push(child)
        })?;
        Ok(super::page_of(children, from, count))
    }

    /// Streams each root's raw subtree through the inner reader's walk,
    /// deciding each tracepoint as it passes.
    fn walk_visit(
        &self,
        roots: &[Self::Node],
        max_depth: Option<usize>,
        detail: VisitDetail,
        mut f: impl FnMut(Visit<'_, Self::Node>) -> Result<()>,
    ) -> Result<()> {
        self.walk_from(roots, 0, max_depth, detail, &mut f)
    }

    /// The inner reader's cuts, standing for the raw children they are.
    fn sibling_cuts(&self, node: Self::Node, bytes: u64) -> Result<Option<Vec<Self::Node>>> {
        if !self.is_container(node)? {
            return Ok(None);
        }
        Ok(self.inner.sibling_cuts(node.inner, bytes)?.map(|cuts| {
            cuts.into_iter()
                .map(|cut| PostNode {
                    inner: cut,
                    at: cut,
                    location: CodeLocationId(-1),
                    status: DiffStatus::None,
                    fewer_iterations: false,
                })
                .collect()
        }))
    }

    /// Streams the raw children the two bounds stand for.
    fn walk_visit_siblings(
        &self,
        parent: Self::Node,
        first: Option<Self::Node>,
        next: Option<Self::Node>,
        max_depth: Option<usize>,
        detail: VisitDetail,
        mut f: impl FnMut(Visit<'_, Self::Node>) -> Result<()>,
    ) -> Result<()> {
        if !self.is_container(parent)? {
            return Ok(());
        }
        let raw_first = first.map(|node| node.at);
        let raw_next = next.map(|node| node.at);
        // An empty run: the reader's cuts are ordered, so only equal bounds.
        if raw_first.is_some() && raw_first == raw_next {
            return Ok(());
        }
        self.stream_children(
            parent.inner,
            raw_first,
            raw_next,
            0,
            max_depth,
            detail,
            &mut f,
        )
    }
}
