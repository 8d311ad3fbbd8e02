//! Codecs of the reference objects (kinds 0–7). Each `decode` starts after
//! the kind byte; each `encode` writes the kind byte too.

use std::io::{self, Write};

use crate::common::PhysicalOffset;
use crate::common::{
    AccessPathId, ClassId, CodeLocationId, FieldId, MethodId, StringId, ThreadId, VariableId,
};
use crate::error::{DecodeError, DecodeErrorKind};
use crate::format::ObjectKind;
use crate::format::bytes::{ByteReader, WriteBigEndian, preallocation};
use crate::format::skip::Cursor;
use crate::format::value::len_i32;
use crate::model::{
    AccessLocation, AccessPath, ClassDescriptor, CodeLocation, CodeLocationKind, FieldDescriptor,
    LocalKind, LocalName, MethodDescriptor, StringObject, ThreadName, Type, VariableDescriptor,
};

type DecodeResult<T> = Result<T, DecodeError>;

impl<'a> ThreadName<'a> {
    /// Decodes the fields after the kind byte.
    pub fn decode(reader: &mut ByteReader<'a>) -> DecodeResult<Self> {
        Ok(ThreadName {
            thread: ThreadId(reader.i32()?),
            name: reader.utf()?,
        })
    }

    /// Encodes the object, kind byte first.
    pub fn encode<W: Write + ?Sized>(&self, out: &mut W) -> io::Result<()> {
        out.put_u8(ObjectKind::ThreadName as u8)?;
        out.put_i32(self.thread.0)?;
        out.put_utf(&self.name)
    }
}

impl<'a> ClassDescriptor<'a> {
    /// Decodes the fields after the kind byte.
    pub fn decode(reader: &mut ByteReader<'a>) -> DecodeResult<Self> {
        Ok(ClassDescriptor {
            id: ClassId(reader.i32()?),
            name: reader.utf()?,
        })
    }

    /// Encodes the object, kind byte first.
    pub fn encode<W: Write + ?Sized>(&self, out: &mut W) -> io::Result<()> {
        out.put_u8(ObjectKind::ClassDescriptor as u8)?;
        out.put_i32(self.id.0)?;
        out.put_utf(&self.name)
    }
}

impl<'a> MethodDescriptor<'a> {
    /// Decodes the fields after the kind byte.
    pub fn decode(reader: &mut ByteReader<'a>) -> DecodeResult<Self> {
        let id = MethodId(reader.i32()?);
        let class = ClassId(reader.i32()?);
        let name = reader.utf()?;
        let return_type = Type::decode(reader)?;
        let count = reader.count("parameter type", 1)?;
        let mut parameter_types = Vec::with_capacity(preallocation(count));
        for _ in 0..count {
            parameter_types.push(Type::decode(reader)?);
        }
        Ok(MethodDescriptor {
            id,
            class,
            name,
            return_type,
            parameter_types,
        })
    }

    /// Encodes the object, kind byte first.
    pub fn encode<W: Write + ?Sized>(&self, out: &mut W) -> io::Result<()> {
        out.put_u8(ObjectKind::MethodDescriptor as u8)?;
        out.put_i32(self.id.0)?;
        out.put_i32(self.class.0)?;
        out.put_utf(&self.name)?;
        self.return_type.encode(out)?;
        out.put_i32(len_i32(self.parameter_types.len())?)?;
        for parameter in &self.parameter_types {
            parameter.encode(out)?;
        }
        Ok(())
    }
}

impl<'a> FieldDescriptor<'a> {
    /// Decodes the fields after the kind byte.
    pub fn decode(reader: &mut ByteReader<'a>) -> DecodeResult<Self> {
        Ok(FieldDescriptor {
            id: FieldId(reader.i32()?),
            class: ClassId(reader.i32()?),
            name: reader.utf()?,
            field_type: Type::decode(reader)?,
            is_static: reader.bool()?,
            is_final: reader.bool()?,
            is_volatile: reader.bool()?,
        })
    }

    /// Encodes the object, kind byte first.
    pub fn encode<W: Write + ?Sized>(&self, out: &mut W) -> io::Result<()> {
        out.put_u8(ObjectKind::FieldDescriptor as u8)?;
        out.put_i32(self.id.0)?;
        out.put_i32(self.class.0)?;
        out.put_utf(&self.name)?;
        self.field_type.encode(out)?;
        out.put_bool(self.is_static)?;
        out.put_bool(self.is_final)?;
        out.put_bool(self.is_volatile)
    }
}

impl<'a> VariableDescriptor<'a> {
    /// Decodes the fields after the kind byte.
    pub fn decode(reader: &mut ByteReader<'a>) -> DecodeResult<Self> {
        Ok(VariableDescriptor {
            id: VariableId(reader.i32()?),
            name: reader.utf()?,
            variable_type: Type::decode(reader)?,
        })
    }

    /// Encodes the object, kind byte first.
    pub fn encode<W: Write + ?Sized>(&self, out: &mut W) -> io::Result<()> {
        out.put_u8(ObjectKind::VariableDescriptor as u8)?;
        out.put_i32(self.id.0)?;
        out.put_utf(&self.name)?;
        self.variable_type.encode(out)
    }
}

impl<'a> StringObject<'a> {
    /// Decodes the fields after the kind byte.
    pub fn decode(reader: &mut ByteReader<'a>) -> DecodeResult<Self> {
        Ok(StringObject {
            id: StringId(reader.i32()?),
            value: reader.utf()?,
        })
    }

    /// Encodes the object, kind byte first.
    pub fn encode<W: Write + ?Sized>(&self, out: &mut W) -> io::Result<()> {
        out.put_u8(ObjectKind::String as u8)?;
        out.put_i32(self.id.0)?;
        out.put_utf(&self.value)
    }
}

impl AccessPath {
    /// Decodes the fields after the kind byte.
    pub fn decode(reader: &mut ByteReader<'_>) -> DecodeResult<Self> {
        let id = AccessPathId(reader.i32()?);
        let count = reader.count("access location", 5)?;
        let mut locations = Vec::with_capacity(preallocation(count));
        for _ in 0..count {
            locations.push(AccessLocation::decode(reader)?);
        }
        Ok(AccessPath { id, locations })
    }

    /// Encodes the object, kind byte first.
    pub fn encode<W: Write + ?Sized>(&self, out: &mut W) -> io::Result<()> {
        out.put_u8(ObjectKind::AccessPath as u8)?;
        out.put_i32(self.id.0)?;
        out.put_i32(len_i32(self.locations.len())?)?;
        for location in &self.locations {
            location.encode(out)?;
        }
        Ok(())
    }
}

fn optional_path(raw: i32) -> Option<AccessPathId> {
    (raw != -1).then_some(AccessPathId(raw))
}

impl CodeLocation {
    /// Decodes the fields after the kind byte.
    pub fn decode(reader: &mut ByteReader<'_>) -> DecodeResult<Self> {
        let kind_offset = reader.offset();
        let kind = match reader.u8()? {
            0 => CodeLocationKind::Line,
            1 => CodeLocationKind::Access,
            2 => CodeLocationKind::MethodCall,
            other => {
                return Err(DecodeError::new(
                    PhysicalOffset(kind_offset),
                    DecodeErrorKind::UnknownCodeLocationKind(other),
                ));
            }
        };
        let id = CodeLocationId(reader.i32()?);
        let file_name = StringId(reader.i32()?);
        let class_name = StringId(reader.i32()?);
        let method_name = StringId(reader.i32()?);
        let line = reader.i32()?;
        let access_path = optional_path(reader.i32()?);
        let argument_count = reader.count("argument", 4)?;
        let mut argument_paths = Vec::with_capacity(preallocation(argument_count));
        for _ in 0..argument_count {
            argument_paths.push(optional_path(reader.i32()?));
        }
        let local_count = reader.count("local", 8)?;
        // The kinds follow the names: checked before anything is built, so
        // that bytes which are not a code location (a speculative parse,
        // hostile data) do not fill memory with names first.
        let mut kinds = reader.clone();
        kinds.bytes(local_count * 4)?;
        for _ in 0..local_count {
            let kind_offset = kinds.offset();
            let kind = kinds.i32()?;
            if !(0..=2).contains(&kind) {
                return Err(DecodeError::new(
                    PhysicalOffset(kind_offset),
                    DecodeErrorKind::UnknownLocalKind(kind),
                ));
            }
        }
        let mut names = Vec::with_capacity(preallocation(local_count));
        for _ in 0..local_count {
            names.push(StringId(reader.i32()?));
        }
        let mut locals = Vec::with_capacity(preallocation(local_count));
        for name in names {
            let kind_offset = reader.offset();
            let kind = match reader.i32()? {
                0 => LocalKind::This,
                1 => LocalKind::Parameter,
                2 => LocalKind::Variable,
                other => {
                    return Err(DecodeError::new(
                        PhysicalOffset(kind_offset),
                        DecodeErrorKind::UnknownLocalKind(other),
                    ));
                }
            };
            locals.push(LocalName { name, kind });
        }
        Ok(CodeLocation {
            kind,
            id,
            file_name,
            class_name,
            method_name,
            line,
            access_path,
            argument_paths,
            locals,
        })
    }

    /// Encodes the object, kind byte first.
    pub fn encode<W: Write + ?Sized>(&self, out: &mut W) -> io::Result<()> {
        out.put_u8(ObjectKind::CodeLocation as u8)?;
        out.put_u8(self.kind as u8)?;
        out.put_i32(self.id.0)?;
        out.put_i32(self.file_name.0)?;
        out.put_i32(self.class_name.0)?;
        out.put_i32(self.method_name.0)?;
        out.put_i32(self.line)?;
        out.put_i32(self.access_path.map_or(-1, |p| p.0))?;
        out.put_i32(len_i32(self.argument_paths.len())?)?;
        for path in &self.argument_paths {
            out.put_i32(path.map_or(-1, |p| p.0))?;
        }
        out.put_i32(len_i32(self.locals.len())?)?;
        for local in &self.locals {
            out.put_i32(local.name.0)?;
        }
        for local in &self.locals {
            out.put_i32(local.kind as i32)?;
        }
        Ok(())
    }
}

/// Skipping reference objects without building them (see
/// [`crate::format::skip`]): each accepts exactly what its `decode` accepts
/// and consumes the same bytes, and allocates nothing, whatever the counts
/// (the parallel rebuild parses at guessed offsets, where counts are
/// whatever the bytes hold). `None` means "refused".
impl Cursor<'_> {
    /// Skips the reference object of `kind` after its kind byte.
    pub(crate) fn reference(&mut self, kind: ObjectKind) -> Option<()> {
        match kind {
            ObjectKind::ThreadName | ObjectKind::ClassDescriptor | ObjectKind::String => {
                self.i32()?;
                self.utf()
            }
            ObjectKind::MethodDescriptor => {
                self.advance(8)?;
                self.utf()?;
                self.java_type()?;
                self.list(1, Self::java_type)
            }
            ObjectKind::FieldDescriptor => {
                self.advance(8)?;
                self.utf()?;
                self.java_type()?;
                self.advance(3)
            }
            ObjectKind::VariableDescriptor => {
                self.i32()?;
                self.utf()?;
                self.java_type()
            }
            ObjectKind::AccessPath => {
                self.i32()?;
                self.list(5, Self::access_location)
            }
            ObjectKind::CodeLocation => {
                if self.u8()? > 2 {
                    return None;
                }
                self.advance(24)?;
                let arguments = self.i32()?;
                let arguments = self.count(arguments as i64, 4)?;
                self.advance(arguments * 4)?;
                let locals = self.i32()?;
                let locals = self.count(locals as i64, 8)?;
                self.advance(locals * 4)?;
                for _ in 0..locals {
                    if !(0..=2).contains(&self.i32()?) {
                        return None;
                    }
                }
                Some(())
            }
            _ => None,
        }
    }

    /// Skips a count (checked as `ByteReader::count` checks it, against
    /// `min_element_len` bytes per element) and that many `element`s.
    fn list(&mut self, min_element_len: usize, element: fn(&mut Self) -> Option<()>) -> Option<()> {
        let count = self.i32()?;
        for _ in 0..self.count(count as i64, min_element_len)? {
            element(self)?;
        }
        Some(())
    }

    /// Skips a `Type`, as `Type::decode` reads it.
    fn java_type(&mut self) -> Option<()> {
        for _ in 0..=crate::format::MAX_NESTING {
            match self.u8()? {
                0 => continue,
                8 => return self.utf(),
                1..=10 => return Some(()),
                _ => return None,
            }
        }
        None
    }

    /// Skips an `AccessLocation`, as `AccessLocation::decode` reads it.
    fn access_location(&mut self) -> Option<()> {
        if self.u8()? > 4 {
            return None;
        }
        self.i32().map(drop)
    }
}
