"""``tracetree.diff``: the recorder's trace diff from Python, checked
against the reference's own diffs of the bundled pairs."""

import subprocess

import pytest

import tracetree
from conftest import REFERENCE

DIFF_CASES = REFERENCE / "diff"


def case(name):
    left = DIFF_CASES / f"{name}.left.trace"
    if not left.is_file():
        pytest.skip(f"no reference diff case {left}")
    return left, DIFF_CASES / f"{name}.right.trace"


@pytest.mark.parametrize("name, match_by", [("edits", "name"), ("match-index", "index")])
def test_a_diff_prints_as_the_reference_diff(tmp_path, cli, name, match_by):
    left, right = case(name)
    out = tmp_path / f"{name}.diff.packedtrace"
    summary = tracetree.diff(left, right, out, match_by=match_by)
    printed = subprocess.run(
        [str(cli), "print", "--verbose", str(out)], check=True, capture_output=True
    ).stdout
    assert printed == (DIFF_CASES / f"{name}.diff.txt").read_bytes()
    # The summary's counts are the pack's statuses.
    with tracetree.open(out) as diff:
        statuses = {}

        def count(node):
            statuses[node.thread] = statuses.get(node.thread, 0) + 1
            for child in node.children():
                count(child)

        for thread in diff.threads:
            for root in diff.roots(thread):
                count(root)
    counted = sum(
        t["unchanged"] + t["removed"] + t["added"] + 2 * t["edited"] for t in summary["threads"]
    )
    assert counted <= summary["tracepoints"] == sum(statuses.values())


def test_open_traces_diff_too_and_bad_options_are_typed(tmp_path):
    left, right = case("edits")
    with tracetree.open(left) as l, tracetree.open(right) as r:
        summary = tracetree.diff(l, r, tmp_path / "d.packedtrace")
    assert len(summary["threads"]) == 2
    assert any(t["removed"] or t["added"] or t["edited"] for t in summary["threads"])
    with pytest.raises(tracetree.InvalidArgumentError):
        tracetree.diff(left, right, tmp_path / "x.packedtrace", match_by="size")
    with pytest.raises(tracetree.InvalidArgumentError):
        tracetree.diff(left, right, tmp_path / "x.packedtrace", unmatched="maybe")
    # A diff is refused as an input unless allowed.
    with pytest.raises(tracetree.TraceError):
        tracetree.diff(tmp_path / "d.packedtrace", right, tmp_path / "y.packedtrace")


def test_search_keeps_the_changes_of_a_diff(tmp_path, cli):
    left, right = case("edits")
    out = tmp_path / "d.packedtrace"
    summary = tracetree.diff(left, right, out)
    added = sum(t["added"] for t in summary["threads"])
    edited = sum(t["edited"] for t in summary["threads"])
    with tracetree.open(out) as diff:
        hits = diff.search(diff=["added"])
        assert [h.line[:2] for h in hits] == ["+ "] * added
        assert hits.total == added
        assert diff.search(diff=["edited"]).total == 2 * edited
        # A pattern narrows the changes to those it names.
        both = diff.search("process", diff=["added", "edited"])
        assert all(h.line[:2] in ("+ ", "! ") for h in both)
        with pytest.raises(tracetree.InvalidArgumentError, match="no change"):
            diff.search(diff=["moved"])
    with tracetree.open(left) as plain:
        with pytest.raises(tracetree.TraceError, match="not a diff"):
            list(plain.search(diff=["added"]))


def test_a_diff_node_says_its_status_and_the_inputs_events(tmp_path):
    left, right = case("edits")
    out = tmp_path / "d.packedtrace"
    tracetree.diff(left, right, out)
    with tracetree.open(out) as diff, tracetree.open(left) as old, tracetree.open(right) as new:
        seen = set()
        for hit in diff.search(diff=["added", "removed", "edited"], max=100000):
            node = hit.node
            status = node.diff_status
            l, r = node.origin
            expected = {"added": (False, True), "removed": (True, False)}.get(status, (True, True))
            assert (l is not None, r is not None) == expected, status
            if status in seen:
                continue
            seen.add(status)
            # The counterpart's line is the diff's line without its marker.
            side, event = (old, l) if status in ("removed", "edited_old") else (new, r)
            assert side.node_by_event(event).text == node.text[2:]
        assert seen == {"added", "removed", "edited_old", "edited_new"}
    with tracetree.open(left) as plain:
        node = plain.roots(plain.threads[0])[0]
        assert node.diff_status is None and node.origin is None
