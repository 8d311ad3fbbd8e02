"""Type stubs of tracetree's Rust extension; use the ``tracetree`` package."""

import os
from types import TracebackType
from typing import Any, Dict, Iterator, Literal, Optional, Sequence, Union, overload

import pyarrow

_Path = Union[str, "os.PathLike[str]"]
_ThreadArg = Union["Thread", int]
_ThreadsArg = Union[_ThreadArg, Sequence[_ThreadArg]]

KINDS: tuple[str, ...]
"""Every tracepoint kind as ``dump`` and ``Node.kind`` name it."""

def open(
    path: _Path,
    *,
    cache_dir: Optional[_Path] = None,
    no_cache: bool = False,
    strict: bool = False,
    from_: Optional[str] = None,
    postprocess: bool = False,
) -> "Trace":
    """Opens a trace of any format the ``tracetree`` command reads, lazily.

    A foreign trace (``.flow``, Blinky, TPTP, JFR, a compressed packed trace)
    is imported once into the cache (``cache_dir``, else the per-user cache;
    ``no_cache`` imports into a temporary folder removed with the trace),
    its format found from its layout unless ``from_`` names it (``"flow"``,
    ``"blinky"``, ``"tptp"``, ``"jfr"``, ``"packed"``). With ``strict``, a
    trace with data left out or calls that never ended raises
    ``DamagedTraceError`` instead of opening with ``warnings``. With
    ``postprocess``, nodes, searches, ``print``, ``dump`` and call-stack
    exports read it as ``tracetree print --postprocess`` shows it (the
    recorder's post-processing); handles are the same either way.
    """

class Thread:
    """A recorded thread."""

    @property
    def id(self) -> int:
        """Its id, as ``dump`` and the Parquet export give it."""
    @property
    def name(self) -> Optional[str]:
        """Its name, when the recorder wrote one."""

class Trace:
    """An open trace; a context manager (``close()`` on exit)."""

    @property
    def path(self) -> str:
        """The file it was opened from."""
    @property
    def trace_path(self) -> str:
        """The v22 trace read: the file itself, or its import in the cache."""
    @property
    def source_format(self) -> str:
        """``"v22"``, or the format it was imported from."""
    @property
    def status(self) -> Literal["complete", "unfinished", "damaged"]:
        """``"unfinished"``: calls or loops never ended; ``"damaged"``: data
        was left out or is missing (``warnings`` says what and where)."""
    @property
    def postprocess(self) -> bool:
        """Whether the trace is read through the recorder's post-processing."""
    @property
    def warnings(self) -> list[str]:
        """What the open found incomplete or damaged, one line each."""
    @property
    def threads(self) -> list[Thread]:
        """The recorded threads, ascending by id."""
    def roots(self, thread: _ThreadArg) -> "Children":
        """A thread's top-level tracepoints, a lazy sequence."""
    def node_by_event(self, event_id: int) -> Optional["Node"]:
        """The node with this event id (unique within a trace), or ``None``."""
    def node(self, handle: str) -> "Node":
        """The node a ``Node.handle`` names, also one from another process or
        an earlier open; ``NoSuchNodeError`` when none starts there."""
    def search(
        self,
        pattern: str = "",
        *,
        text: bool = False,
        kinds: Optional[Sequence[str]] = None,
        diff: Optional[Sequence[Literal["added", "removed", "edited"]]] = None,
        threads: Optional[_ThreadsArg] = None,
        ignore_case: bool = False,
        max: Optional[int] = None,
    ) -> "SearchHits":
        """Tracepoints whose name (or, with ``text``, printed line) holds
        ``pattern`` (empty: every tracepoint), handed over as they are
        found; in a diff trace, ``diff`` keeps only those changes
        (``search(diff=["added"])`` lists the added tracepoints); runs with
        the GIL released, stops on Ctrl-C."""
    def to_arrow(
        self,
        thread: Optional[_ThreadsArg] = None,
        root: Optional["Node"] = None,
        columns: Optional[Sequence[str]] = None,
        *,
        batch_rows: int = 65536,
    ) -> pyarrow.RecordBatchReader:
        """The Parquet export's rows, streamed as Arrow batches."""
    def close(self) -> None:
        """Releases the trace's files; its nodes cannot be read afterwards."""
    def __enter__(self) -> "Trace": ...
    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...

class Node:
    """A tracepoint, its properties read from the trace when asked for."""

    @property
    def event_id(self) -> int:
        """Its event id."""
    @property
    def kind(self) -> str:
        """Its kind as ``dump`` names it (one of ``KINDS``)."""
    @property
    def diff_status(self) -> Optional[str]:
        """Its status in a diff (``added``, ``removed``, ``unchanged``,
        ``edited_old``, ``edited_new``); ``None`` outside a diff."""
    @property
    def origin(self) -> Optional[tuple[Optional[int], Optional[int]]]:
        """In a packed diff, the ``(left, right)`` event ids it was made
        from (``None`` on a side without one); ``None`` outside a diff."""
    @property
    def thread(self) -> int:
        """Its thread's id."""
    @property
    def depth(self) -> int:
        """0 at the top of its thread."""
    @property
    def text(self) -> str:
        """Its line as ``tracetree print`` prints it."""
    @property
    def method(self) -> Optional[str]:
        """A call's method as ``Class.name``."""
    @property
    def arguments(self) -> Optional[list[str]]:
        """A call's arguments (or a write's value) as ``print`` shows them."""
    @property
    def result(self) -> Optional[str]:
        """A call's returned value, or a read's value."""
    @property
    def exception(self) -> Optional[str]:
        """The simple class name of the exception a call threw."""
    @property
    def code_location(self) -> Optional[tuple[Optional[str], int]]:
        """``(file, line)`` where it was recorded."""
    @property
    def child_count(self) -> int:
        """Its direct children."""
    def children(self, start: int = 0, count: Optional[int] = None) -> "Children":
        """Its children from ``start``: a lazy sequence read a page at a time."""
    @property
    def parent(self) -> Optional["Node"]:
        """The call or loop it is in; ``None`` at the top."""
    def ancestors(self) -> list["Node"]:
        """The calls and loops it is in, outermost first."""
    @property
    def handle(self) -> str:
        """A picklable string that ``Trace.node`` resolves to this node."""
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...

class Children(Sequence[Node]):
    """A call's children or a thread's roots, read a page at a time."""

    def __len__(self) -> int: ...
    @overload
    def __getitem__(self, index: int) -> Node: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Node]: ...
    def __iter__(self) -> Iterator[Node]: ...

class Hit:
    """A tracepoint a search found."""

    @property
    def node(self) -> Node: ...
    @property
    def thread(self) -> int: ...
    @property
    def event_id(self) -> int: ...
    @property
    def depth(self) -> int: ...
    @property
    def path(self) -> list[str]:
        """The names of the calls and loops above it, outermost first."""
    @property
    def line(self) -> str:
        """Its line as ``print`` shows it."""

class SearchHits(Iterator[Hit]):
    """The hits of a search, threads ascending, each in event order, each
    as soon as it is found (the search starts at the first ``next``)."""

    def __next__(self) -> Hit: ...
    @property
    def total(self) -> int:
        """Every hit, kept or not (runs the search to its end)."""
    @property
    def scanned(self) -> int:
        """Tracepoints looked at (runs the search to its end)."""

def print(
    trace: Union[Trace, _Path],
    out: _Path,
    *,
    verbose: bool = False,
    threads: Optional[_ThreadsArg] = None,
    max_depth: Optional[int] = None,
    event_ids: bool = False,
    postprocess: Optional[bool] = None,
) -> None:
    """Writes the trace as ``tracetree print`` prints it into the file ``out``;
    ``postprocess`` (default: as the ``Trace`` was opened) as ``print
    --postprocess``."""

def dump(
    trace: Union[Trace, _Path],
    out: _Path,
    *,
    threads: Optional[_ThreadsArg] = None,
    postprocess: Optional[bool] = None,
) -> None:
    """Writes the trace as ``tracetree dump`` does (JSON lines) into ``out``;
    ``postprocess`` as for ``print``."""

def diff(
    left: Union[Trace, _Path],
    right: Union[Trace, _Path],
    out: _Path,
    *,
    match_by: Literal["name", "index"] = "name",
    map: Optional[Union[Dict[str, str], Dict[int, int]]] = None,
    start_threads: bool = False,
    only_start_threads: bool = False,
    unmatched: Literal["diff", "skip", "error"] = "diff",
    allow_diffs: bool = False,
) -> Dict[str, Any]:
    """Diffs ``left`` against ``right`` as ``tracetree diff`` does and writes
    the packed diff at ``out``; returns its summary (``tracepoints``,
    ``bytes``, ``warnings``, and per diff thread ``thread``, ``name``,
    ``unchanged``, ``removed``, ``added``, ``edited``)."""

def export(
    trace: Union[Trace, _Path],
    out: _Path,
    *,
    format: Literal["parquet", "folded", "speedscope", "chrome", "perfetto"],
    threads: Optional[_ThreadsArg] = None,
    root: Optional[int] = None,
    name: Optional[str] = None,
    force: bool = False,
) -> None:
    """Exports as ``tracetree export`` does: a Parquet dataset folder, or call stacks."""

def import_trace(
    source: _Path, output: _Path, *, from_: Optional[str] = None, samples: bool = False
) -> dict[str, object]:
    """Imports a foreign trace into the v22 trace ``output``; returns what it found."""
