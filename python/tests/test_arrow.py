"""``to_arrow``: the Parquet export's rows, streamed, into pandas and DuckDB."""

import collections
import json

import pytest
import tracetree

from conftest import REFERENCE_TRACES, TESTDATA, reference

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def dump_records(path, tmp_path):
    out = tmp_path / "dump.jsonl"
    tracetree.dump(path, out)
    return [json.loads(line) for line in out.read_text().splitlines()]


def calls_per_method(records):
    return collections.Counter(r["method"] for r in records if "method" in r)


TRACES = [str(p) for p in TESTDATA] + [str(p) for p in REFERENCE_TRACES if "crashed" not in p.name]


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.rsplit("/", 1)[-1])
def test_duckdb_counts_per_method_equal_dump(path, tmp_path):
    duckdb = pytest.importorskip("duckdb")
    expected = calls_per_method(dump_records(path, tmp_path))
    with tracetree.open(path) as trace:
        rows = trace.to_arrow(batch_rows=1000)
        got = duckdb.sql(
            "SELECT class || '.' || method AS m, count(*) AS n FROM rows "
            "WHERE kind = 'method_call' AND method IS NOT NULL GROUP BY m"
        ).fetchall()
    assert dict(got) == dict(expected)


@pytest.mark.parametrize("path", TESTDATA, ids=lambda p: p.name)
def test_pandas_rows_are_the_nodes(path, tmp_path):
    records = dump_records(path, tmp_path)
    with tracetree.open(path) as trace:
        frame = trace.to_arrow().read_pandas()
    assert len(frame) == len(records)
    assert list(frame["event_id"]) == [r["event_id"] for r in records]
    assert list(frame["depth"]) == [r["depth"] for r in records]
    assert list(frame["kind"].astype(str)) == [r["kind"] for r in records]
    assert set(frame["source_format"].astype(str)) == {"v22"}


@pytest.mark.parametrize("path", TESTDATA, ids=lambda p: p.name)
def test_same_rows_and_schema_as_the_parquet_export(path, tmp_path):
    out = tmp_path / "dataset"
    with tracetree.open(path) as trace:
        tracetree.export(trace, out, format="parquet", name="t")
        streamed = trace.to_arrow(batch_rows=7).read_all()
    parts = sorted((out / "trace=t").glob("thread=*/part-*.parquet"),
                   key=lambda p: (int(p.parent.name.split("=")[1]), p.name))
    exported = pa.concat_tables([pq.read_table(p) for p in parts])
    assert streamed.schema.remove_metadata() == exported.schema.remove_metadata()
    assert streamed.to_pylist() == exported.to_pylist()


def test_threads_root_and_columns(tmp_path):
    path = reference("small-stream.trace") if REFERENCE_TRACES else TESTDATA[-1]
    with tracetree.open(path) as trace:
        full = trace.to_arrow().read_all()
        thread = trace.threads[-1]
        one = trace.to_arrow(thread).read_all()
        assert one.num_rows > 0
        assert set(one.column("event_id").to_pylist()) < set(full.column("event_id").to_pylist())
        root = trace.roots(thread)[0]
        call = max(root.children(), key=lambda n: n.child_count)
        subtree = trace.to_arrow(root=call).read_all()
        rows = {r["event_id"]: r for r in full.to_pylist()}
        row = rows[call.event_id]
        expected_ids = [
            e for e in one.column("event_id").to_pylist()
            if row["event_id"] <= e <= row["subtree_end"]
        ]
        assert subtree.column("event_id").to_pylist() == expected_ids
        # A subtree's rows are the rows its thread's export has for them.
        assert subtree.to_pylist() == [rows[e] for e in expected_ids]
        picked = trace.to_arrow(columns=["method", "event_id"]).read_all()
        assert picked.column_names == ["method", "event_id"]
        assert picked.column("event_id") == full.column("event_id")
        with pytest.raises(tracetree.InvalidArgumentError, match="no column"):
            trace.to_arrow(columns=["nope"])
        with pytest.raises(tracetree.TraceError):
            trace.to_arrow(thread=12345)


def test_stream_memory_is_bounded_by_the_batch(generated):
    """Rows of a trace far larger than a batch stream through in little
    memory: in a process of its own, the peak resident set grows by much
    less than the trace's rows would take held whole. The trace is 64 MB;
    ``TRACETREE_STREAM_SIZE`` (``1GB``) makes it larger."""
    import os
    import subprocess
    import sys

    path = generated("mixed", os.environ.get("TRACETREE_STREAM_SIZE", "64MB"))
    script = (
        "import resource, sys, pyarrow, tracetree\n"
        "peak = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024\n"
        "trace = tracetree.open(sys.argv[1])\n"
        "before = peak()\n"
        "rows = whole = 0\n"
        "for batch in trace.to_arrow(batch_rows=8192):\n"
        "    rows += batch.num_rows\n"
        "    whole += batch.nbytes\n"
        "print(rows, whole, peak() - before)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(path)], check=True, capture_output=True, text=True
    ).stdout.split()
    rows, whole_bytes, grown = map(int, out)
    assert rows > 1_000_000
    # Held whole, the rows would take whole_bytes; streamed, the process
    # grew by a small part of that (the trace's mapped pages count too).
    assert grown < whole_bytes / 2, (grown, whole_bytes)
