//! One tracepoint as one line of text: [`TextFormatter`].

use std::fmt::Write as _;

use crate::common::AccessPathId;
use crate::common::{CodeLocationId, FieldId, MethodId, VariableId};
use crate::error::Result;
use crate::format::ObjectKind;
use crate::format::TraceContext;
use crate::model::{DiffStatus, Footer, Tracepoint, TracepointBody, Value};
use crate::print::parent::Parent;
use crate::print::text::names::{ClassSlot, Locations, Names};
use crate::print::text::path::{PathShape, Paths};
use crate::print::text::value::{Access, READ, push_value};
use crate::print::text::words::{adorn, is_inline, push_int, push_java_str, push_missing};

/// Renders tracepoints as the reference printer's lines, without
/// indentation or line end.
///
/// A formatter borrows the trace's [`TraceContext`] and caches what it
/// derives from its reference objects (short class names, location
/// suffixes, rendered access paths), so keep one for many lines.
/// Reference objects the trace does not hold print as placeholders
/// (`<missing CLASS_DESCRIPTOR 12>`); a string id the trace does not hold
/// prints as `<unknown>`, as in the reference. Only failures to read an
/// object that is there (a malformed lazily decoded object) are errors.
#[derive(Debug)]
pub struct TextFormatter<'c> {
    owners: Owners<'c>,
    locations: Locations,
    verbose: bool,
}

/// The names and rendered paths the parts of a line are written from.
#[derive(Debug)]
struct Owners<'c> {
    names: Names<'c>,
    paths: Paths,
}

impl<'c> TextFormatter<'c> {
    /// A formatter over `context`; `verbose` adds each line's ` at File:LINE`.
    pub fn new(context: &'c TraceContext, verbose: bool) -> Self {
        TextFormatter {
            owners: Owners {
                names: Names::new(context),
                paths: Paths::new(context),
            },
            locations: Locations::new(context),
            verbose,
        }
    }

    /// Appends the text of one value as the printer shows it (`"text"`,
    /// `Class@3`, `42`, `null`).
    pub fn write_value(&mut self, out: &mut String, value: &Value<'_>) -> Result<()> {
        push_value(out, &mut self.owners.names, value)
    }

    /// Appends the text of `tracepoint` to `out`. `footer` is the container's
    /// footer (`None` for leaves, and for containers a crashed recorder never
    /// finished: a call prints `: <unfinished method>`, a loop
    /// `loop(0 iterations)`); `parent` describes its direct parent. On error,
    /// `out` may hold part of the line.
    // Long: one arm per tracepoint body, each in the reference printer's
    // words, read side by side.
    pub fn write_tracepoint(
        &mut self,
        out: &mut String,
        tracepoint: &Tracepoint<'_>,
        footer: Option<&Footer<'_>>,
        parent: Parent,
    ) -> Result<()> {
        let context = self.owners.names.context();
        let location = self
            .locations
            .get(context, tracepoint.header.code_location)?;
        let access_path = location.access_path;
        let owners = &mut self.owners;
        if !matches!(tracepoint.body, TracepointBody::SnapshotBreakpoint { .. }) {
            push_diff_prefix(out, tracepoint.header.diff_status);
        }
        match &tracepoint.body {
            TracepointBody::MethodCall {
                method,
                receiver,
                arguments,
                ..
            } => {
                owners.push_call(out, access_path, *method, receiver, parent)?;
                owners.push_arguments(out, &location.argument_paths, arguments)?;
                match tracepoint.sample_count(footer) {
                    // A merged sample tree's node: its count, not a result.
                    Some(samples) => {
                        out.push_str(": ");
                        push_int(out, samples);
                        out.push_str(" samples");
                    }
                    None => owners.push_result(out, footer)?,
                }
            }
            TracepointBody::ReadArray {
                array,
                index,
                value,
            } => owners.push_array_access(out, access_path, array, *index, Access::Read, value)?,
            TracepointBody::WriteArray {
                array,
                index,
                value,
            } => owners.push_array_access(out, access_path, array, *index, Access::Write, value)?,
            TracepointBody::ReadLocal { variable, value } => {
                owners.push_local_access(out, *variable, Access::Read, value)?
            }
            TracepointBody::WriteLocal { variable, value } => {
                owners.push_local_access(out, *variable, Access::Write, value)?
            }
            TracepointBody::ReadField {
                field,
                receiver,
                value,
            } => {
                owners.push_field_access(out, access_path, *field, receiver, Access::Read, value)?
            }
            TracepointBody::WriteField {
                field,
                receiver,
                value,
            } => owners.push_field_access(
                out,
                access_path,
                *field,
                receiver,
                Access::Write,
                value,
            )?,
            TracepointBody::Loop { .. } => {
                // The count comes from the footer, not from the children.
                let iterations = match footer {
                    Some(Footer::Loop { iterations }) => *iterations,
                    _ => 0,
                };
                out.push_str("loop(");
                push_int(out, iterations.into());
                out.push_str(" iterations)");
            }
            TracepointBody::LoopIteration { iteration, .. } => {
                // 1-based, with Java's `int` arithmetic.
                out.push_str("<iteration ");
                push_int(out, iteration.wrapping_add(1).into());
                out.push('>');
            }
            TracepointBody::SnapshotBreakpoint {
                uuid_high,
                uuid_low,
                stack,
                ..
            } => {
                let (high, low) = (*uuid_high as u64, *uuid_low as u64);
                let _ = write!(
                    out,
                    "Live breakpoint [{:08x}-{:04x}-{:04x}-{:04x}-{:012x}]",
                    high >> 32,
                    (high >> 16) & 0xFFFF,
                    high & 0xFFFF,
                    low >> 48,
                    low & 0xFFFF_FFFF_FFFF
                );
                // The only type whose location sits mid-line.
                if self.verbose {
                    out.push_str(&location.suffix);
                }
                return owners.push_stack(out, stack);
            }
            TracepointBody::Throw { exception } => {
                out.push_str("throw ");
                push_value(out, &mut owners.names, exception)?;
            }
            TracepointBody::Catch { exception } => {
                out.push_str("catch(");
                push_value(out, &mut owners.names, exception)?;
                out.push(')');
            }
        }
        // ` at File:LINE` in verbose mode.
        if self.verbose {
            out.push_str(&location.suffix);
        }
        Ok(())
    }
}

impl Owners<'_> {
    /// `owner.method`, or `new Class`, of a call.
    fn push_call(
        &mut self,
        out: &mut String,
        access_path: Option<AccessPathId>,
        method: MethodId,
        receiver: &Value<'_>,
        parent: Parent,
    ) -> Result<()> {
        let Some(slot) = self.names.method(method)? else {
            push_missing(out, ObjectKind::MethodDescriptor, method.0);
            return Ok(());
        };
        let method = self.names.method_at(slot);
        let class = method.class;
        if method.is_constructor {
            // Constructors are recorded with a null receiver; no owner rules.
            out.push_str("new ");
            out.push_str(self.names.class_at(class).adorned());
            return Ok(());
        }
        self.push_call_owner(out, access_path, class, receiver, parent)?;
        out.push_str(&self.names.method_at(slot).name);
        Ok(())
    }

    /// The owner rules of a call; the first that applies wins.
    fn push_call_owner(
        &mut self,
        out: &mut String,
        access_path: Option<AccessPathId>,
        class: ClassSlot,
        receiver: &Value<'_>,
        parent: Parent,
    ) -> Result<()> {
        let is_static = matches!(receiver, Value::Null);
        // 1. A static call from inside its own class (or its companion's).
        if is_static && self.called_from_defining_class(class, parent)? {
            return Ok(());
        }
        // 2. The receiver's access path.
        if let Some(path) = access_path {
            let path = self.paths.get(&mut self.names, path)?;
            match path.shape {
                PathShape::OnlyThis => {}
                PathShape::ObjectInstance => {
                    out.push_str(self.names.class_at(class).adorned());
                    out.push('.');
                }
                PathShape::Companion => {
                    if !self.called_from_defining_class(class, parent)? {
                        let full = self.names.class_at(class).full();
                        let outer = full.rfind("$Companion").map_or(full, |at| &full[..at]);
                        out.push_str(adorn(outer));
                        out.push('.');
                    }
                }
                PathShape::Other => {
                    out.push_str(&path.full);
                    out.push('.');
                }
            }
            return Ok(());
        }
        // 3. The receiver's value.
        if !is_static {
            push_value(out, &mut self.names, receiver)?;
            out.push('.');
            return Ok(());
        }
        // 4. Top-level Kotlin functions (`RefKt`); 5. other static methods;
        // 6. methods of no class (an import's `<truncated>` root) bare.
        let class = self.names.class_at(class);
        if !class.full().is_empty() && !class.full().ends_with("Kt") {
            out.push_str(class.adorned());
            out.push('.');
        }
        Ok(())
    }

    /// Whether the direct parent is a call of a method of `class`, or of the
    /// class whose companion `class` is.
    fn called_from_defining_class(&mut self, class: ClassSlot, parent: Parent) -> Result<bool> {
        let Parent::Call(parent) = parent else {
            return Ok(false);
        };
        let Some(parent) = self.names.method(parent)? else {
            return Ok(false);
        };
        let parent_class = self.names.method_at(parent).class;
        let (class, parent_class) = (
            self.names.class_at(class).full(),
            self.names.class_at(parent_class).full(),
        );
        Ok(class == parent_class || class.strip_suffix("$Companion") == Some(parent_class))
    }

    /// `(a, name ➜ 5, obj)`: names only when there is one per argument; a
    /// named argument shows its value only when it is an inline value.
    fn push_arguments(
        &mut self,
        out: &mut String,
        names: &[Option<AccessPathId>],
        arguments: &[Value<'_>],
    ) -> Result<()> {
        let named = names.len() == arguments.len();
        out.push('(');
        for (i, argument) in arguments.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            match names.get(i).copied().flatten().filter(|_| named) {
                None => push_value(out, &mut self.names, argument)?,
                Some(name) => {
                    out.push_str(&self.paths.get(&mut self.names, name)?.full);
                    if is_inline(argument) {
                        out.push_str(READ);
                        push_value(out, &mut self.names, argument)?;
                    }
                }
            }
        }
        out.push(')');
        Ok(())
    }

    /// `: result`, `: threw Exception`, the two markers, or nothing (void).
    fn push_result(&mut self, out: &mut String, footer: Option<&Footer<'_>>) -> Result<()> {
        let Some(Footer::MethodCall { result, exception }) = footer else {
            // Never finished: the recorder crashed inside the call. (The
            // reference prints `: null` here.)
            out.push_str(": <unfinished method>");
            return Ok(());
        };
        if !exception.is_empty() {
            out.push_str(": threw ");
            push_java_str(out, exception);
            return Ok(());
        }
        match result {
            Value::Void => {}
            Value::String(text)
                if matches!(
                    text.as_bytes(),
                    b"<unfinished method>" | b"<untracked result>"
                ) =>
            {
                out.push_str(": ");
                push_java_str(out, text);
            }
            result => {
                out.push_str(": ");
                push_value(out, &mut self.names, result)?;
            }
        }
        Ok(())
    }

    /// `name ➜ value` / `name = value`.
    fn push_local_access(
        &mut self,
        out: &mut String,
        variable: VariableId,
        access: Access,
        value: &Value<'_>,
    ) -> Result<()> {
        out.push_str(self.names.variable(variable)?);
        access.push(out);
        push_value(out, &mut self.names, value)
    }

    /// `owner.field ➜ value` / `owner.field = value`.
    fn push_field_access(
        &mut self,
        out: &mut String,
        access_path: Option<AccessPathId>,
        field: FieldId,
        receiver: &Value<'_>,
        access: Access,
        value: &Value<'_>,
    ) -> Result<()> {
        let descriptor = self.names.field(field)?;
        // A captured Kotlin local (`Ref$IntRef.element`) shows as its owner alone.
        let lambda_capture = descriptor.is_some_and(|f| self.names.field_at(f).is_lambda_capture);
        // A constant push, not a variable-length copy of "." or "".
        let dot = |out: &mut String| {
            if !lambda_capture {
                out.push('.');
            }
        };
        if let Some(path) = access_path {
            let path = self.paths.get(&mut self.names, path)?;
            if path.shape != PathShape::OnlyThis {
                out.push_str(&path.filtered);
                dot(out);
            }
        } else if !matches!(receiver, Value::Null) {
            push_value(out, &mut self.names, receiver)?;
            dot(out);
        } else if let Some(f) = descriptor {
            out.push_str(self.names.class_at(self.names.field_at(f).class).adorned());
            dot(out);
        }
        match descriptor {
            Some(_) if lambda_capture => {}
            Some(f) => out.push_str(&self.names.field_at(f).name),
            None => push_missing(out, ObjectKind::FieldDescriptor, field.0),
        }
        access.push(out);
        push_value(out, &mut self.names, value)
    }

    /// `owner[index] ➜ value` / `owner[index] = value`; the path holds the
    /// indices before the last.
    fn push_array_access(
        &mut self,
        out: &mut String,
        access_path: Option<AccessPathId>,
        array: &Value<'_>,
        index: i32,
        access: Access,
        value: &Value<'_>,
    ) -> Result<()> {
        if let Some(path) = access_path {
            let path = self.paths.get(&mut self.names, path)?;
            if path.shape != PathShape::OnlyThis {
                out.push_str(&path.filtered);
            }
        } else {
            push_value(out, &mut self.names, array)?;
        }
        out.push('[');
        push_int(out, index.into());
        out.push(']');
        access.push(out);
        push_value(out, &mut self.names, value)
    }

    /// `, stacktrace: [Cls.method, …]`: the first three frames, then
    /// ` ... (N more)`.
    fn push_stack(&self, out: &mut String, stack: &[CodeLocationId]) -> Result<()> {
        out.push_str(", stacktrace: [");
        for (i, &frame) in stack.iter().take(3).enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            self.names.push_frame(out, frame)?;
        }
        if stack.len() > 3 {
            out.push_str(" ... (");
            push_int(out, (stack.len() - 3) as i64);
            out.push_str(" more)");
        }
        out.push(']');
        Ok(())
    }
}

/// The diff-view marker before a line: none outside diffs.
fn push_diff_prefix(out: &mut String, status: DiffStatus) {
    out.push_str(match status {
        DiffStatus::None => "",
        DiffStatus::Unchanged => "  ",
        DiffStatus::Removed => "- ",
        DiffStatus::Added => "+ ",
        DiffStatus::EditedOld | DiffStatus::EditedNew => "! ",
    });
}
