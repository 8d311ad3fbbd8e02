"""Foreign formats: opened through the import cache, imported explicitly,
and exported, as the command line does."""

import json
import subprocess
import os
from pathlib import Path

import pytest
import tracetree

from conftest import REPO, TESTDATA
from test_nodes import KEYS, dumped, record, walk

SAMPLES = Path(os.environ.get("TRACETREE_SAMPLES", REPO.parent / "shared" / "samples"))
FLOWS = sorted(p for p in (SAMPLES / "flow").glob("*") if p.is_dir()) if SAMPLES.is_dir() else []


@pytest.mark.parametrize("recording", FLOWS or [None], ids=lambda p: p.name if p else "none")
def test_flow_recording_opens_through_the_cache(recording, tmp_path, own_cache):
    if recording is None:
        pytest.skip(f"no .flow recordings in {SAMPLES / 'flow'}")
    with tracetree.open(recording, from_="flow") as trace:
        assert trace.source_format == "flow"
        assert Path(trace.trace_path).parent == own_cache
        out = tmp_path / "dump.jsonl"
        tracetree.dump(trace, out)
        got = [record(t, n) for t, n in walk(trace)]
        assert got == dumped(out.read_text().splitlines(), KEYS)
        assert set(trace.to_arrow(columns=["source_format"]).read_all()
                   .column("source_format").to_pylist()) <= {"flow"}
    # Imported once: a second open reuses the import.
    with tracetree.open(recording) as again:
        assert again.trace_path == trace.trace_path
    imported = tmp_path / "imported.trace"
    summary = tracetree.import_trace(recording, imported)
    assert summary["threads"] == len(got and {r["thread"] for r in got})
    with tracetree.open(imported) as plain:
        assert plain.source_format == "v22"
        assert [record(t, n) for t, n in walk(plain)] == got


def test_no_cache_leaves_no_import(tmp_path, own_cache):
    if not FLOWS:
        pytest.skip(f"no .flow recordings in {SAMPLES / 'flow'}")
    with tracetree.open(FLOWS[0], no_cache=True) as trace:
        assert trace.threads
        scratch = Path(trace.trace_path).parent
        assert scratch != own_cache and scratch.is_dir()
    assert not own_cache.exists()


def test_call_stack_exports(tmp_path):
    with tracetree.open(TESTDATA[0]) as trace:
        folded = tmp_path / "stacks.folded"
        tracetree.export(trace, folded, format="folded")
        lines = folded.read_text().splitlines()
        assert lines and all(line.rsplit(" ", 1)[1].isdigit() for line in lines)
        speedscope = tmp_path / "profile.json"
        tracetree.export(TESTDATA[0], speedscope, format="speedscope")
        assert "speedscope" in json.loads(speedscope.read_text())["$schema"]
        with pytest.raises(tracetree.InvalidArgumentError):
            tracetree.export(trace, folded, format="folded")  # exists: needs force
        tracetree.export(trace, folded, format="folded", force=True)


BLINKY = (
    b"$$method$$,1,run,demo/A,1\n$enter$,10,1,-1,0,-2,,,\n$exit$,11,1,-1,0,-4,,,\n"
    b"$field$,12,1,7,3,180,demo/A,n,I;\nprogram says hi \xff\n$line$,13,1,7,0,-1,,,\n"
    b"$$$,1,4,0,1,x,10,$enter$,()V\n$$$,2,4,0,1,x,12,$field$,a,b\n"
    b"$$$,3,4,0,1,x,13,$line$\n$$$,4,4,0,1,x,11,$exit$\n$$$,5,4,0,0,x,11,$exit$\n"
)


def test_blinky_log_opens_with_what_its_import_skipped(tmp_path, own_cache):
    source = tmp_path / "run.log"
    source.write_bytes(BLINKY)
    with tracetree.open(source) as trace:
        assert trace.source_format == "blinky"
        assert Path(trace.trace_path).parent == own_cache
        kinds = [node.kind for _, node in walk(trace)]
        assert kinds.count("method_call") == 1 and kinds.count("read_field") == 1, kinds
        out = tmp_path / "dump.jsonl"
        tracetree.dump(trace, out)
        assert [record(t, n) for t, n in walk(trace)] == dumped(
            out.read_text().splitlines(), KEYS)


def test_packed_trace_opens_as_its_parts(tmp_path, cli):
    packed = tmp_path / "multi.packedtrace"
    subprocess.run([str(cli), "pack", str(TESTDATA[0]), "-o", str(packed)],
                   check=True, capture_output=True)
    with tracetree.open(TESTDATA[0]) as plain, tracetree.open(packed) as trace:
        assert [t.name for t in trace.threads] == [t.name for t in plain.threads]
        assert [record(t, n) for t, n in walk(trace)] == [
            record(t, n) for t, n in walk(plain)]


def test_polars_reads_the_arrow_stream():
    import polars
    with tracetree.open(TESTDATA[0]) as trace:
        frame = polars.from_arrow(trace.to_arrow().read_all())
        assert frame.height == sum(1 for _ in walk(trace))
        calls = frame.filter(polars.col("kind") == "method_call")
        assert calls.height > 0
