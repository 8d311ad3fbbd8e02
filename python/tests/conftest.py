"""Fixtures: the traces the tests read, each test's own cache folder.

Traces: the repository's ``testdata/``; the reference recorder's traces in
``TRACETREE_REFERENCE_TRACES`` (default ``../shared/reference-traces`` from
the repository), skipped visibly when absent; and traces generated with the
command line's ``tracetree gen`` (``TRACETREE_CLI``, default
``target/release/tracetree``), skipped visibly when it is not built.
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TESTDATA = sorted((REPO / "testdata").glob("*.trace"))
REFERENCE = Path(
    os.environ.get("TRACETREE_REFERENCE_TRACES", REPO.parent / "shared" / "reference-traces")
)
REFERENCE_TRACES = sorted(REFERENCE.glob("*.trace")) if REFERENCE.is_dir() else []


def cli_path():
    """The ``tracetree`` binary, or None when it is not built."""
    path = Path(os.environ.get("TRACETREE_CLI", REPO / "target" / "release" / "tracetree"))
    return path if path.is_file() and os.access(path, os.X_OK) else None


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    """Every test imports and keeps lookups in a cache folder of its own."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("TRACETREE_CACHE_DIR", str(cache))
    return cache


@pytest.fixture(scope="session")
def cli():
    path = cli_path()
    if path is None:
        pytest.skip("the tracetree command is not built (cargo build --release -p tracetree-cli)")
    return path


@pytest.fixture(scope="session")
def generated(tmp_path_factory):
    """``generated(shape, size)``: a trace made by ``tracetree gen``, once per session."""
    folder = tmp_path_factory.mktemp("generated")
    made = {}

    def make(shape, size="8MB", threads=2):
        key = (shape, size, threads)
        if key not in made:
            binary = cli_path()
            if binary is None:
                pytest.skip("the tracetree command is not built: no generated traces")
            out = folder / f"{shape}-{size}-{threads}.trace"
            subprocess.run(
                [str(binary), "gen", str(out), "--size", size, "--shape", shape,
                 "--threads", str(threads)],
                check=True, capture_output=True,
            )
            made[key] = out
        return made[key]

    return make


def reference(name):
    """The reference trace ``name``; skips (visibly) when it is absent."""
    path = REFERENCE / name
    if not path.is_file():
        pytest.skip(f"no reference trace {path}")
    return path


def copy_trace(trace, folder):
    """A copy of ``trace`` and its index in ``folder``."""
    out = Path(folder) / trace.name
    shutil.copyfile(trace, out)
    index = trace.with_name(trace.name + ".idx")
    if index.is_file():
        shutil.copyfile(index, out.with_name(out.name + ".idx"))
    return out
