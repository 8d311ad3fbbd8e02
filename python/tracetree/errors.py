"""The exceptions tracetree raises, by meaning; each carries the library's message.

``TraceError`` is the base of them all. Some also derive from the built-in
exception a Python caller would expect: ``NotATraceError`` and
``InvalidArgumentError`` are ``ValueError``s, ``TraceOSError`` an ``OSError``,
``NoSuchNodeError`` a ``LookupError``.
"""

__all__ = [
    "TraceError",
    "DamagedTraceError",
    "NotATraceError",
    "TraceOSError",
    "InvalidArgumentError",
    "NoSuchNodeError",
    "LimitExceededError",
    "InternalError",
]


class TraceError(Exception):
    """Any error of tracetree."""


class DamagedTraceError(TraceError):
    """Malformed or damaged data: an undecodable object, a broken index, a
    missing reference object, a damaged source; and, with ``strict=True``,
    a trace or import with data left out or calls that never ended."""


class NotATraceError(TraceError, ValueError):
    """The file is not a trace tracetree reads (nor a format it imports)."""


class TraceOSError(TraceError, OSError):
    """Reading or writing a file failed (a missing file, a permission)."""


class InvalidArgumentError(TraceError, ValueError):
    """An argument the call cannot take: which one, and what was wrong."""


class NoSuchNodeError(TraceError, LookupError):
    """A node, handle, thread or event id that names nothing in this trace."""


class LimitExceededError(TraceError):
    """A count or size past a limit of the format or of tracetree."""


class InternalError(TraceError):
    """An invariant of tracetree broke: a bug; please report it."""
