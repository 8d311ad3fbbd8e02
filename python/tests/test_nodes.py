"""Paging through every node of a trace gives what ``dump`` gives."""

import json
import subprocess

import pytest
import tracetree

from conftest import REFERENCE_TRACES, TESTDATA, reference


def walk(trace):
    """Every node in dump's order (threads ascending, pre-order), paged
    through ``roots`` and ``children`` as a user would, with its thread."""
    for thread in trace.threads:
        stack = [iter(trace.roots(thread))]
        while stack:
            node = next(stack[-1], None)
            if node is None:
                stack.pop()
                continue
            yield thread.id, node
            if node.child_count:
                stack.append(iter(node.children()))


def record(thread, node):
    """The node as a dump record (the keys dump gives every node)."""
    record = {
        "thread": thread,
        "depth": node.depth,
        "event_id": node.event_id,
        "kind": node.kind,
        "children": node.child_count,
    }
    location = node.code_location
    record["line"] = location[1] if location else 0
    if location and location[0] is not None:
        record["file"] = location[0]
    if node.method is not None:
        record["method"] = node.method
    return record


def dumped(lines, keys):
    return [{k: v for k, v in json.loads(line).items() if k in keys} for line in lines]


KEYS = {"thread", "depth", "event_id", "kind", "children", "line", "file", "method"}


def check_against_dump(path, tmp_path):
    out = tmp_path / "dump.jsonl"
    tracetree.dump(path, out)
    expected = dumped(out.read_text().splitlines(), KEYS)
    with tracetree.open(path) as trace:
        got = [record(thread, node) for thread, node in walk(trace)]
    assert len(got) == len(expected)
    for got_record, want in zip(got, expected):
        assert got_record == want
    return got


@pytest.mark.parametrize("path", TESTDATA, ids=lambda p: p.name)
def test_testdata_pages_match_dump(path, tmp_path):
    assert check_against_dump(path, tmp_path)


@pytest.mark.parametrize("name", [p.name for p in REFERENCE_TRACES] or ["small-stream.trace"])
def test_reference_pages_match_dump(name, tmp_path):
    check_against_dump(reference(name), tmp_path)


@pytest.mark.parametrize("name", ["small-stream.trace", "small-dump.trace", "all-types-stream.trace"])
def test_reference_model_structure(name):
    """The reference implementation's own structure (its ``.jsonl``)."""
    path = reference(name)
    expected_path = path.with_name(path.name + ".jsonl")
    if not expected_path.is_file():
        pytest.skip(f"no {expected_path}")
    keys = {"thread", "depth", "event_id", "kind", "children"}
    expected = dumped(expected_path.read_text().splitlines(), keys)
    with tracetree.open(path) as trace:
        got = [{k: v for k, v in record(t, n).items() if k in keys} for t, n in walk(trace)]
    assert got == expected


def test_generated_pages_match_cli_dump(cli, generated, tmp_path):
    """Against the command line's dump, on a generated trace of each shape."""
    for shape in ["mixed", "threads", "deep"]:
        path = generated(shape, "2MB")
        dump = subprocess.run(
            [str(cli), "dump", str(path)], check=True, capture_output=True, text=True
        ).stdout.splitlines()
        with tracetree.open(path) as trace:
            got = [record(t, n) for t, n in walk(trace)]
        assert got == dumped(dump, KEYS), shape


@pytest.mark.parametrize("path", TESTDATA, ids=lambda p: p.name)
def test_text_is_the_printed_line(path, tmp_path):
    out = tmp_path / "print.txt"
    tracetree.print(path, out)
    printed = [
        line.strip()
        for line in out.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    with tracetree.open(path) as trace:
        texts = [node.text for _, node in walk(trace)]
    assert texts == printed


def test_pages_slices_and_navigation():
    with tracetree.open(TESTDATA[0]) as trace:
        every = [node for _, node in walk(trace)]
        wide = max(every, key=lambda n: n.child_count)
        children = wide.children()
        assert len(children) == wide.child_count
        listed = list(children)
        assert [n.event_id for n in children[1:3]] == [n.event_id for n in listed[1:3]]
        assert children[-1] == listed[-1]
        assert list(children[::2]) == listed[::2]
        assert list(wide.children(1, 2)) == listed[1:3]
        assert len(wide.children(start=len(listed) + 5)) == 0
        with pytest.raises(IndexError):
            children[len(listed)]
        for child in listed:
            assert child.parent == wide
            assert child.ancestors()[-1] == wide
            assert child.depth == wide.depth + 1
        found = trace.node_by_event(listed[-1].event_id)
        assert found == listed[-1] and found.depth == wide.depth + 1
        assert trace.node_by_event(2**31 - 1) is None
        assert "Node #" in repr(wide) and wide.kind in repr(wide)
        assert wide.kind in tracetree.KINDS


def test_closed_trace_raises():
    trace = tracetree.open(TESTDATA[0])
    node = trace.roots(trace.threads[0])[0]
    trace.close()
    with pytest.raises(tracetree.TraceError, match="closed"):
        node.kind
    with pytest.raises(tracetree.TraceError):
        trace.threads
