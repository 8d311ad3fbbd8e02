"""A trace opened with ``postprocess=True`` reads as ``tracetree print
--postprocess`` shows it: a Kotlin ``$default`` wrapper and its call are
one call, at the wrapper's handle."""

import json
import struct
import subprocess

import pytest
import tracetree

from test_formats import tptp_message


def wrapped_recording():
    """One thread: ``run`` calls ``callMe$default``, which calls ``callMe``
    of the same class (the pair the post-processing collapses)."""
    L = lambda v: struct.pack("<Q", v)  # noqa: E731
    I = lambda v: struct.pack("<I", v)  # noqa: E731
    S = lambda text: text.encode() + b"\0"  # noqa: E731
    out = b"0TBF\x01\x00\x01\x01" + I(12)
    out += tptp_message(1011, L(0), L(0), L(0), I(0), S(""), L(0), L(0), S("A.kt"), S(""),
                        S(""), L(0), L(0), S("demo/A"), S(""), I(0), I(0), I(0), S(""), S(""))
    for method, name in enumerate(["run", "callMe$default", "callMe"]):
        out += tptp_message(1012, S(name), S("()V"), b"\0" * 4, S(""), L(0), L(0),
                            S(""), L(0), L(0), L(method), S(""), S(""))
    entry = lambda time, method, ticket: tptp_message(  # noqa: E731
        1015, L(0), L(1), L(time), L(method), I(ticket), *[L(0)] * 5, S(""), S(""))
    leave = lambda time, ticket: tptp_message(  # noqa: E731
        1016, L(0), L(1), L(time), I(ticket), *[L(0)] * 6, S(""), S(""), S(""))
    return (out + entry(1, 0, 1) + entry(2, 1, 2) + entry(3, 2, 3)
            + leave(4, 3) + leave(5, 2) + leave(6, 1))


@pytest.fixture
def wrapped(tmp_path):
    source = tmp_path / "wrapped.trcbin"
    source.write_bytes(wrapped_recording())
    return source


def lines(trace):
    """(depth, method, child_count) of every node, in pre-order."""
    out = []
    stack = [(node, 0) for node in reversed(list(trace.roots(trace.threads[0])))]
    while stack:
        node, depth = stack.pop()
        assert node.depth == depth
        out.append((depth, node.method, node.child_count))
        stack.extend((child, depth + 1) for child in reversed(list(node.children())))
    return out


def test_nodes_read_as_the_view_shows_them(wrapped):
    with tracetree.open(wrapped) as raw, tracetree.open(wrapped, postprocess=True) as view:
        assert not raw.postprocess and view.postprocess
        assert "postprocessed" in repr(view)
        assert lines(raw) == [(0, "demo.A.run", 1), (1, "demo.A.callMe$default", 1),
                              (2, "demo.A.callMe", 0)]
        assert lines(view) == [(0, "demo.A.run", 1), (1, "demo.A.callMe", 0)]
        wrapper = raw.roots(0)[0].children()[0]
        call = view.roots(0)[0].children()[0]
        inner = wrapper.children()[0]
        # The view's call stands at the wrapper's place, showing the inner call.
        assert call.handle == wrapper.handle
        assert call.event_id == inner.event_id
        assert "$default" not in call.text and "callMe" in call.text
        assert call.parent == view.roots(0)[0]
        assert [a.method for a in call.ancestors()] == ["demo.A.run"]
        assert call.thread == wrapper.thread
        # Handles round-trip through the view, and name the same place in both.
        assert view.node(call.handle) == call
        assert raw.node(call.handle) == wrapper
        assert view.node_by_event(inner.event_id) == call
        assert view.node_by_event(wrapper.event_id) is None
        with pytest.raises(tracetree.NoSuchNodeError):
            view.node(inner.handle)


def test_searches_see_the_view(wrapped):
    with tracetree.open(wrapped) as raw, tracetree.open(wrapped, postprocess=True) as view:
        assert [h.node.method for h in raw.search("callMe")] == [
            "demo.A.callMe$default", "demo.A.callMe"]
        hits = list(view.search("callMe"))
        assert [(h.depth, h.node.method, h.path) for h in hits] == [
            (1, "demo.A.callMe", ["demo.A.run"])]
        assert hits[0].node == view.roots(0)[0].children()[0]
        assert list(view.search("callMe$default")) == []


def test_print_and_dump_match_the_command_line(wrapped, tmp_path, cli):
    with tracetree.open(wrapped, postprocess=True) as view:
        for name, flag in [("print", []), ("dump", [])]:
            ours = tmp_path / f"{name}.out"
            getattr(tracetree, name)(view, ours)
            theirs = subprocess.run(
                [str(cli), name, "--postprocess", str(view.trace_path)],
                check=True, capture_output=True, text=True,
            ).stdout
            assert ours.read_text() == theirs, name
            raw = tmp_path / f"{name}.raw"
            getattr(tracetree, name)(view, raw, postprocess=False)
            assert raw.read_text() != theirs
        printed = (tmp_path / "print.out").read_text()
        assert "$default" not in printed and "callMe" in printed
        assert len([json.loads(line) for line in (tmp_path / "dump.out").open()]) == 2
    # A path prints as recorded unless asked.
    by_path = tmp_path / "by-path.txt"
    tracetree.print(wrapped, by_path, postprocess=True)
    assert by_path.read_text() == printed


def test_call_stack_export_reads_the_view(wrapped, tmp_path):
    with tracetree.open(wrapped, postprocess=True) as view:
        folded = tmp_path / "view.folded"
        tracetree.export(view, folded, format="folded")
        stacks = dict(line.rsplit(" ", 1) for line in folded.read_text().splitlines())
        assert all("$default" not in stack for stack in stacks), stacks
        assert sum(int(weight) for weight in stacks.values()) == 2
        with pytest.raises(tracetree.InvalidArgumentError):
            tracetree.export(view, tmp_path / "rows", format="parquet")
        with pytest.raises(tracetree.InvalidArgumentError):
            view.to_arrow()
