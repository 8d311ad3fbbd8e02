"""Searches from Python: the hits, and Ctrl-C stopping one."""

import json
import signal
import threading
import time

import pytest
import tracetree

from conftest import TESTDATA


def methods_in_dump(path, tmp_path):
    out = tmp_path / "dump.jsonl"
    tracetree.dump(path, out)
    return [json.loads(line) for line in out.read_text().splitlines()]


@pytest.mark.parametrize("path", TESTDATA, ids=lambda p: p.name)
def test_search_finds_the_calls_dump_lists(path, tmp_path):
    records = methods_in_dump(path, tmp_path)
    names = sorted({r["method"].rsplit(".", 1)[-1] for r in records if "method" in r})
    assert names
    with tracetree.open(path) as trace:
        for name in names:
            expected = [
                r["event_id"]
                for r in records
                if r["kind"] == "method_call" and name in r.get("method", "").rsplit(".", 1)[-1]
            ]
            hits = trace.search(name, kinds=["method_call"])
            got = [hit.event_id for hit in hits]
            assert sorted(got) == sorted(expected), name
            assert hits.total == len(expected)
        hit = next(iter(trace.search(names[0], kinds=["method_call"])))
        assert hit.node.event_id == hit.event_id
        assert hit.line == hit.node.text
        assert hit.depth == hit.node.depth
        assert len(hit.path) == hit.depth == len(hit.node.ancestors())
        assert list(trace.search(names[0], kinds=["read_field"], max=0)) == []


def test_search_arguments_are_checked():
    with tracetree.open(TESTDATA[0]) as trace:
        with pytest.raises(tracetree.InvalidArgumentError, match="no tracepoint kind"):
            trace.search("x", kinds=["call"])
        with pytest.raises(tracetree.TraceError):
            list(trace.search("x", threads=[12345]))


def test_ctrl_c_stops_a_search(generated):
    """SIGINT while a search runs raises KeyboardInterrupt from it, and the
    trace stays usable. The search is made long (a text search of every
    line, repeated) so that the signal finds it running."""
    path = generated("mixed", "64MB")
    with tracetree.open(path) as trace:
        started = threading.Event()

        def interrupt():
            started.wait()
            time.sleep(0.2)
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

        sender = threading.Thread(target=interrupt)
        sender.start()
        interrupted_in = None
        rounds = 0
        try:
            # Each round is a whole search of the trace; the signal lands in
            # one of them (a round is far longer than the Python between).
            started.set()
            while rounds < 50:
                hits = trace.search("no such text anywhere", text=True)
                found = list(hits)  # the search runs here
                assert found == []
                rounds += 1
        except KeyboardInterrupt as error:
            frame = error.__traceback__
            while frame.tb_next is not None:
                frame = frame.tb_next
            interrupted_in = frame.tb_frame.f_code.co_name, frame.tb_lineno
        sender.join()
        assert interrupted_in is not None, "the search never saw the signal"
        source = open(__file__).read().splitlines()
        assert "the search runs here" in source[interrupted_in[1] - 1], interrupted_in
        assert rounds < 50
        # The trace is still usable, and a new search runs to its end.
        first = trace.roots(trace.threads[0])[0]
        assert list(trace.search(first.method.rsplit(".", 1)[-1], max=1))


def test_hits_stream_in_order_and_an_abandoned_search_ends(generated):
    """Hits come one thread after another, each in event order, as the
    command line lists them; a search left half read holds nothing up."""
    path = generated("mixed", "8MB", threads=3)
    with tracetree.open(path) as trace:
        hits = trace.search("compute", max=5000)
        got = [(hit.thread, hit.event_id) for hit in hits]
        assert got and got == sorted(got, key=lambda h: h[0])
        for thread in {t for t, _ in got}:
            ids = [e for t, e in got if t == thread]
            assert ids == sorted(ids)
        assert hits.total >= len(got) and hits.scanned > 0
        for _ in range(20):
            started = iter(trace.search("compute"))
            assert next(started).event_id == got[0][1]
            del started
        assert [(h.thread, h.event_id) for h in trace.search("compute", max=5000)] == got
        with pytest.raises(tracetree.InvalidArgumentError, match="no thread 99"):
            next(iter(trace.search("compute", threads=[99])))
