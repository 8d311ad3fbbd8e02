"""A node's handle names the same node in another process and after a reopen."""

import pickle
import subprocess
import sys

import tracetree

from conftest import TESTDATA


def test_handle_round_trips_through_pickle_and_another_process(tmp_path):
    path = TESTDATA[0]
    with tracetree.open(path) as trace:
        thread = trace.threads[-1]
        root = trace.roots(thread)[0]
        node = list(root.children())[-1]
        handle, event_id, text = node.handle, node.event_id, node.text
        assert isinstance(handle, str)
        assert trace.node(handle) == node
    pickled = tmp_path / "handle.pickle"
    pickled.write_bytes(pickle.dumps(handle))
    script = (
        "import pickle, sys, tracetree\n"
        "handle = pickle.loads(open(sys.argv[2], 'rb').read())\n"
        "with tracetree.open(sys.argv[1]) as trace:\n"
        "    node = trace.node(handle)\n"
        "    print(node.event_id)\n"
        "    print(node.text)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(path), str(pickled)],
        check=True, capture_output=True, text=True,
    ).stdout.splitlines()
    assert out == [str(event_id), text]
    # After a reopen, in this process.
    with tracetree.open(path) as again:
        resolved = again.node(pickle.loads(pickled.read_bytes()))
        assert (resolved.event_id, resolved.text) == (event_id, text)
        assert resolved.depth == 1


def test_bad_handles_raise():
    with tracetree.open(TESTDATA[0]) as trace:
        node = trace.roots(trace.threads[0])[0]
        thread, offset = node.handle.split(":")
        try:
            trace.node("nonsense")
        except tracetree.InvalidArgumentError as error:
            assert isinstance(error, ValueError)
            assert "THREAD:OFFSET" in str(error)
        else:
            raise AssertionError("a malformed handle was accepted")
        for bad in [f"{thread}:{int(offset) + 1}", f"9999:{offset}", f"{thread}:{2**40}"]:
            try:
                trace.node(bad)
            except tracetree.NoSuchNodeError as error:
                assert isinstance(error, LookupError)
            else:
                raise AssertionError(f"{bad} resolved")
