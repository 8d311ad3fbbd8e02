//! Access paths as text (`other`, `grid[arr[i]]`, `Account.GRID[1]`), and the
//! shape of a path the owner rules look at.
//!
//! Locations render left to right: a local variable by its name, a static
//! field as `Class.field`, an object field by its name, array elements as
//! `[index]` or `[path]`. A local or field location is followed by a dot
//! when a field follows; an index is not (`items[2]name`, as the reference
//! has it). A local variable named `this` prints nothing, not even its dot,
//! so `[local this, field history]` is `history`.

use std::fmt::Write as _;

use crate::common::{AccessPathId, IdMap};
use crate::error::Result;
use crate::format::ObjectKind;
use crate::format::TraceContext;
use crate::model::AccessLocation;

use crate::print::text::names::{Names, dense_for, key};
use crate::print::text::words::{missing, optional, push_int, push_missing};

/// How deep `[path]` elements may nest inside each other. Real paths nest a
/// few levels; a malformed trace may make a path contain itself.
const MAX_NESTING: usize = 16;

/// What the owner rules need to know about a path once the `this`
/// locations are taken out of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PathShape {
    /// Nothing but `this`: the access is on `this`, and no owner prints.
    OnlyThis,
    /// A single static field named `INSTANCE` (a Kotlin `object`).
    ObjectInstance,
    /// A single static field named `Companion` (a companion object).
    Companion,
    /// Anything else.
    Other,
}

/// An access path rendered once, for every line that uses it.
#[derive(Debug, Clone)]
pub(super) struct PathText {
    /// The path with its `this` locations skipped (call owners, argument
    /// names), dots decided by the location that follows in the path.
    pub full: String,
    /// The path without its `this` locations (field and array owners).
    /// Differs from `full` only when a `this` stands right before a field
    /// in the middle of a path, which real paths never do.
    pub filtered: String,
    /// The shape of the filtered path.
    pub shape: PathShape,
}

impl PathText {
    /// Renders the path `id`; a path the trace does not hold renders as a
    /// placeholder of shape [`PathShape::Other`].
    pub fn new(names: &mut Names<'_>, id: AccessPathId) -> Result<PathText> {
        let context = names.context();
        let Some(path) = optional(context.access_path(id))? else {
            let missing = missing(ObjectKind::AccessPath, id.0);
            return Ok(PathText {
                full: missing.clone(),
                filtered: missing,
                shape: PathShape::Other,
            });
        };
        let mut filtered = Vec::with_capacity(path.locations.len());
        for &location in &path.locations {
            if !is_this(context, location)? {
                filtered.push(location);
            }
        }
        let shape = match filtered[..] {
            [] => PathShape::OnlyThis,
            [AccessLocation::StaticField(field)] => {
                match optional(context.field(field))?.map(|f| f.name.as_bytes()) {
                    Some(b"INSTANCE") => PathShape::ObjectInstance,
                    Some(b"Companion") => PathShape::Companion,
                    _ => PathShape::Other,
                }
            }
            _ => PathShape::Other,
        };
        let mut full = String::new();
        render(&mut full, names, &path.locations, 0)?;
        let filtered = if filtered.len() == path.locations.len() {
            full.clone()
        } else {
            let mut text = String::new();
            render(&mut text, names, &filtered, 0)?;
            text
        };
        Ok(PathText {
            full,
            filtered,
            shape,
        })
    }
}

/// Whether `location` is the local variable `this`.
fn is_this(context: &TraceContext, location: AccessLocation) -> Result<bool> {
    Ok(match location {
        AccessLocation::Local(variable) => {
            optional(context.variable(variable))?.is_some_and(|v| v.name.as_bytes() == b"this")
        }
        _ => false,
    })
}

fn render(
    out: &mut String,
    names: &mut Names<'_>,
    locations: &[AccessLocation],
    nesting: usize,
) -> Result<()> {
    let context = names.context();
    for (i, &location) in locations.iter().enumerate() {
        if is_this(context, location)? {
            continue;
        }
        let field_follows = matches!(
            locations.get(i + 1),
            Some(AccessLocation::StaticField(_) | AccessLocation::ObjectField(_))
        );
        let dot = if field_follows { "." } else { "" };
        match location {
            AccessLocation::Local(variable) => {
                out.push_str(names.variable(variable)?);
                out.push_str(dot);
            }
            AccessLocation::StaticField(field) => {
                match names.field(field)? {
                    Some(f) => {
                        let f = names.field_at(f);
                        out.push_str(names.class_at(f.class).adorned());
                        out.push('.');
                        out.push_str(&f.name);
                    }
                    None => push_missing(out, ObjectKind::FieldDescriptor, field.0),
                }
                out.push_str(dot);
            }
            AccessLocation::ObjectField(field) => {
                match names.field(field)? {
                    Some(f) => out.push_str(&names.field_at(f).name),
                    None => push_missing(out, ObjectKind::FieldDescriptor, field.0),
                }
                out.push_str(dot);
            }
            AccessLocation::ArrayIndex(index) => {
                out.push('[');
                push_int(out, index.into());
                out.push(']');
            }
            AccessLocation::ArrayElementByName(path) => {
                out.push('[');
                match optional(context.access_path(path))? {
                    Some(_) if nesting >= MAX_NESTING => {
                        let _ = write!(
                            out,
                            "<nested too deep: {} {}>",
                            ObjectKind::AccessPath,
                            path.0
                        );
                    }
                    Some(inner) => render(out, names, &inner.locations, nesting + 1)?,
                    None => push_missing(out, ObjectKind::AccessPath, path.0),
                }
                out.push(']');
            }
        }
    }
    Ok(())
}

/// The access paths rendered so far, by id.
#[derive(Debug)]
pub(super) struct Paths(IdMap<PathText>);

impl Paths {
    /// No path yet, for the access paths of `context`.
    pub fn new(context: &TraceContext) -> Self {
        Paths(dense_for(context, ObjectKind::AccessPath))
    }

    /// The access path `id`, rendered (names resolved through `names`).
    pub fn get(&mut self, names: &mut Names<'_>, id: AccessPathId) -> Result<&PathText> {
        let path = self
            .0
            .get_or_try_insert_with(key(id), || PathText::new(names, id))?;
        Ok(path)
    }
}
