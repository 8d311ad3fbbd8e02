"""Foreign formats: opened through the import cache, imported explicitly,
and exported, as the command line does."""

import json
import os
import shutil
import struct
import subprocess
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


def tptp_message(id, *attributes):
    """One little-endian TPTP message: id, length, attributes."""
    body = b"".join(attributes)
    return struct.pack("<HI", id, len(body)) + body


def tptp_recording():
    """Two threads: m0 calling m1 on thread 1, m1 alone on thread 2."""
    L = lambda v: struct.pack("<Q", v)  # noqa: E731
    I = lambda v: struct.pack("<I", v)  # noqa: E731
    S = lambda text: text.encode() + b"\0"  # noqa: E731
    out = b"0TBF\x01\x00\x01\x01" + I(12)
    out += tptp_message(1011, L(0), L(0), L(0), I(0), S(""), L(0), L(0), S("A.java"), S(""),
                        S(""), L(0), L(0), S("demo/A"), S(""), I(0), I(0), I(0), S(""), S(""))
    for method in (0, 1):
        out += tptp_message(1012, S(f"m{method}"), S("()V"), b"\0" * 4, S(""), L(0), L(0),
                            S(""), L(0), L(0), L(method), S(""), S(""))
    entry = lambda thread, time, method, ticket: tptp_message(  # noqa: E731
        1015, L(0), L(thread), L(time), L(method), I(ticket), *[L(0)] * 5, S(""), S(""))
    leave = lambda thread, time, ticket: tptp_message(  # noqa: E731
        1016, L(0), L(thread), L(time), I(ticket), *[L(0)] * 6, S(""), S(""), S(""))
    return (out + entry(1, 1, 0, 1) + entry(1, 2, 1, 2) + entry(2, 3, 1, 3) + leave(1, 4, 2)
            + leave(2, 5, 3) + leave(1, 6, 1))


def test_tptp_recording_opens_as_dump_reads_it(tmp_path, own_cache):
    source = tmp_path / "run.trcbin"
    source.write_bytes(tptp_recording())
    with tracetree.open(source) as trace:
        assert trace.source_format == "tptp"
        assert len(trace.threads) == 2 and trace.status == "complete", trace.warnings
        nodes = [node for _, node in walk(trace)]
        assert [(n.depth, n.method) for n in nodes] == [(0, "demo.A.m0"), (1, "demo.A.m1"),
                                                        (0, "demo.A.m1")]
        out = tmp_path / "dump.jsonl"
        tracetree.dump(trace, out)
        assert [record(t, n) for t, n in walk(trace)] == dumped(
            out.read_text().splitlines(), KEYS)
    # Cut inside its last message: what is whole is kept, and the cut said.
    cut = tmp_path / "cut.trcbin"
    cut.write_bytes(tptp_recording()[:-20])
    with tracetree.open(cut) as trace:
        assert trace.status == "damaged"
        assert any("runs past the end" in w for w in trace.warnings), trace.warnings
        assert len([node for _, node in walk(trace)]) == 3
    with pytest.raises(tracetree.DamagedTraceError):
        tracetree.open(cut, strict=True)




def test_jfr_recording_of_a_jdk_opens_as_dump_reads_it(tmp_path, own_cache):
    """A recording made here by the JDK on PATH: its samples under Spin.main."""
    if not (shutil.which("javac") and shutil.which("java")):
        pytest.skip("no JDK (java, javac) on PATH to record with")
    shutil.copy(REPO / "testdata" / "Spin.java", tmp_path / "Spin.java")
    subprocess.run(["javac", "-d", str(tmp_path), str(tmp_path / "Spin.java")], check=True)
    recording = tmp_path / "spin.jfr"
    subprocess.run(["java", f"-XX:StartFlightRecording=filename={recording},settings=profile",
                    "-cp", str(tmp_path), "Spin"], check=True, capture_output=True)
    with tracetree.open(recording) as trace:
        assert trace.source_format == "jfr"
        nodes = [node for _, node in walk(trace)]
        assert any(node.method == "Spin.main" for node in nodes), [n.method for n in nodes[:20]]
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
