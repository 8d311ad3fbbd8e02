"""Figures for BENCHMARKS.md: the Python bindings beside their baselines.

    python python/benches/bench.py [--cli target/release/tracetree] [--size 1GB]

Makes its traces with ``tracetree gen`` in a temporary folder, then
measures, each the best of a few runs:

- iterating the children of one call with over a million children
  (``Node.children()``), beside a bare Python loop of the same count, and
  reading each child's ``event_id`` too;
- ``Trace.to_arrow()`` of the generated trace (every batch pulled through
  the C stream interface), beside the Parquet export of the same trace
  (``tracetree.export(..., format="parquet")``, the same walk and rows
  plus encoding), in rows per second;
- a name search from Python beside the command line's ``tracetree search``.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import tracetree

REPO = Path(__file__).resolve().parents[2]


def best(f, runs=3):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", default=str(REPO / "target" / "release" / "tracetree"))
    parser.add_argument("--size", default="256MB", help="the mixed trace's size")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        os.environ["TRACETREE_CACHE_DIR"] = str(folder / "cache")
        wide = folder / "wide.trace"
        mixed = folder / "mixed.trace"
        subprocess.run([args.cli, "gen", str(wide), "--size", "60MB", "--shape", "wide"],
                       check=True, capture_output=True)
        subprocess.run([args.cli, "gen", str(mixed), "--size", args.size],
                       check=True, capture_output=True)

        with tracetree.open(wide) as trace:
            call = trace.roots(trace.threads[0])[0]
            while call.child_count == 1:
                call = call.children()[0]
            count = call.child_count

            def iterate():
                for _ in call.children():
                    pass

            def iterate_ids():
                for child in call.children():
                    child.event_id

            def bare():
                for _ in range(count):
                    pass

            print(f"children of one call: {count:,}")
            print(f"  iterate Node.children(): {best(iterate, args.runs):.3f} s")
            print(f"  ... reading event_id:    {best(iterate_ids, args.runs):.3f} s")
            print(f"  bare Python loop:        {best(bare, args.runs):.3f} s")

        with tracetree.open(mixed) as trace:
            rows = 0

            def stream():
                nonlocal rows
                rows = 0
                for batch in trace.to_arrow():
                    rows += batch.num_rows

            streamed = best(stream, args.runs)
            out = folder / "dataset"

            def export():
                tracetree.export(trace, out, format="parquet", name="t", force=True)

            exported = best(export, args.runs)
            cores = len(os.sched_getaffinity(0))
            print(f"to_arrow of the {args.size} mixed trace: {rows:,} rows")
            print(f"  to_arrow:        {streamed:.3f} s, {rows / streamed / 1e6:.2f} M rows/s "
                  f"(one walker thread)")
            print(f"  Parquet export:  {exported:.3f} s, {rows / exported / 1e6:.2f} M rows/s "
                  f"({cores} cores, threads in parallel)")

            name = "compute"

            def py_search():
                list(trace.search(name, max=1000))

            def cli_search():
                subprocess.run([args.cli, "search", str(mixed), name],
                               check=False, capture_output=True)

            print(f"search {name!r}: Python {best(py_search, args.runs):.3f} s, "
                  f"command line {best(cli_search, args.runs):.3f} s")


if __name__ == "__main__":
    sys.exit(main())
