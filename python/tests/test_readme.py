"""The README's "From Python" example runs, and its answer is dump's."""

import collections
import json
import re

import pytest
import tracetree

from conftest import REPO, REFERENCE_TRACES, TESTDATA


def readme_example():
    text = (REPO / "README.md").read_text()
    section = text.split("## From Python", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_readme_example_is_three_lines():
    assert len(readme_example().strip().splitlines()) == 3


@pytest.mark.parametrize(
    "path",
    [p for p in REFERENCE_TRACES if p.name == "medium-stream.trace"] or TESTDATA[:1],
    ids=lambda p: p.name,
)
def test_readme_example_counts_the_top_methods(path, tmp_path):
    pytest.importorskip("duckdb")
    code = readme_example()
    assert '"app.trace"' in code
    scope = {}
    exec(code.replace('"app.trace"', repr(str(path))), scope)
    out = tmp_path / "dump.jsonl"
    tracetree.dump(path, out)
    counts = collections.Counter(
        json.loads(line).get("method") for line in out.read_text().splitlines()
    )
    counts.pop(None, None)
    expected = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:10]
    assert scope["top"] == expected
