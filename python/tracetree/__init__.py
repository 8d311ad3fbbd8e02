"""Read JVM execution traces lazily: ``import tracetree``.

``tracetree.open(path)`` opens a trace of any format the ``tracetree``
command reads (a Lincheck recorder v22 trace, a packed trace, a ``.flow``
recording, Blinky, TPTP, JFR; a foreign one is imported once into the
per-user cache) without loading it. Its ``threads`` lead to ``roots``,
whose ``Node``s lead to ``children`` a page at a time; ``search`` finds
tracepoints by name or printed line; ``to_arrow`` streams one row per
tracepoint (the Parquet export's rows) as a ``pyarrow.RecordBatchReader``
for pandas, polars or DuckDB::

    import duckdb, tracetree
    calls = tracetree.open("app.trace").to_arrow(columns=["kind", "class", "method"])
    duckdb.sql("SELECT class || '.' || method AS m, count(*) AS n FROM calls "
               "WHERE kind = 'method_call' GROUP BY m ORDER BY n DESC LIMIT 10").show()
"""

from . import errors
from ._native import (
    KINDS,
    Children,
    Hit,
    Node,
    SearchHits,
    Thread,
    Trace,
    diff,
    dump,
    export,
    import_trace,
    open,
    print,
)
from .errors import (
    DamagedTraceError,
    InternalError,
    InvalidArgumentError,
    LimitExceededError,
    NoSuchNodeError,
    NotATraceError,
    TraceError,
    TraceOSError,
)

__all__ = [
    "KINDS",
    "Children",
    "DamagedTraceError",
    "Hit",
    "InternalError",
    "InvalidArgumentError",
    "LimitExceededError",
    "Node",
    "NoSuchNodeError",
    "NotATraceError",
    "SearchHits",
    "Thread",
    "Trace",
    "TraceError",
    "TraceOSError",
    "diff",
    "dump",
    "errors",
    "export",
    "import_trace",
    "open",
    "print",
]
