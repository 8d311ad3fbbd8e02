"""The library's errors as Python exceptions, with its messages."""


import pytest
import tracetree

from conftest import TESTDATA, copy_trace, reference


def test_not_a_trace(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("hello, not a trace\n")
    with pytest.raises(tracetree.NotATraceError) as raised:
        tracetree.open(text)
    assert isinstance(raised.value, ValueError)
    assert isinstance(raised.value, tracetree.TraceError)
    assert "not a trace" in str(raised.value) and str(text) in str(raised.value)


def test_missing_file(tmp_path):
    with pytest.raises(tracetree.TraceOSError) as raised:
        tracetree.open(tmp_path / "absent.trace")
    assert isinstance(raised.value, OSError)
    assert "absent.trace" in str(raised.value)


def test_cut_trace_is_damaged(tmp_path):
    """A trace cut in the middle of a block: read with warnings, or refused
    with strict."""
    source = TESTDATA[0]
    cut = copy_trace(source, tmp_path)
    data = cut.read_bytes()
    cut.write_bytes(data[: len(data) * 2 // 3])
    with tracetree.open(cut) as trace:
        assert trace.status == "damaged"
        assert trace.warnings and str(cut) in trace.warnings[0]
    with pytest.raises(tracetree.DamagedTraceError, match="strict"):
        tracetree.open(cut, strict=True)


def test_garbage_after_the_magic_is_damaged(tmp_path):
    source = TESTDATA[0]
    broken = tmp_path / "broken.trace"
    data = bytearray(source.read_bytes())
    for at in range(16, len(data), 7):
        data[at] = 0xEE
    broken.write_bytes(bytes(data))
    try:
        with tracetree.open(broken) as trace:
            assert trace.status == "damaged", trace.warnings
    except tracetree.DamagedTraceError as error:
        assert str(broken) in str(error) or "offset" in str(error)
    with pytest.raises(tracetree.DamagedTraceError):
        tracetree.open(broken, strict=True)


def test_crashed_reference_trace():
    path = reference("crashed.trace")
    with tracetree.open(path) as trace:
        assert trace.status in ("damaged", "unfinished")
        assert trace.warnings
    with pytest.raises(tracetree.DamagedTraceError):
        tracetree.open(path, strict=True)


def test_bad_arguments(tmp_path):
    with pytest.raises(tracetree.InvalidArgumentError, match="unknown format"):
        tracetree.open(TESTDATA[0], from_="nope")
    with tracetree.open(TESTDATA[0]) as trace:
        with pytest.raises(tracetree.NoSuchNodeError):
            trace.roots(4242)
        with pytest.raises(tracetree.InvalidArgumentError):
            tracetree.export(trace, tmp_path / "x", format="svg")


def test_nothing_written_beside_the_trace(tmp_path):
    trace_copy = copy_trace(TESTDATA[0], tmp_path / "")
    before = sorted(p.name for p in tmp_path.iterdir())
    with tracetree.open(trace_copy, no_cache=True) as trace:
        list(trace.search("a"))
        trace.to_arrow().read_all()
    assert sorted(p.name for p in tmp_path.iterdir()) == before
