"""Issue 13's figures in one run: streaming, the disk pool, executors, remote and packed output.

Run on demand (not part of the test suite)::

    .venv/bin/python bench/bench_scale.py            # the sizes the issue names (an hour or more)
    .venv/bin/python bench/bench_scale.py --quick    # small sizes: minutes, the same checks
    .venv/bin/python bench/bench_scale.py --only stream,packed

Each part is its own benchmark script, run here one after another in a fresh
subprocess so that every peak RSS is that process's own and no part warms the
next one's caches.  Their output is passed through unchanged; every ratio a
part prints is measured within that part's run (both sides in the same
subprocess, taking turns), never against a figure from another day.

==========  ===================================================  ==========================
part        what it measures                                      target (issue 13)
==========  ===================================================  ==========================
stream      peak RSS of a streamed run over one source 10x        <= 1.2x
            longer than the 1x source (``bench_stream.py``)
pool        peak RSS of the disk-backed pool at 15,360 vs 1,536   <= 1.2x
            sources, a count plan (``bench_pool.py``)
pool-hours  the same for the quickstart's hours dataset           <= 1.2x
            (``bench_pool.py --hours``)
exec        local x1 / process x2 and ray x2 / process x2 on      >= 1.7x; <= 1.3x
            1,536 sources, artifacts compared byte for byte
            (``bench_exec.py``)
remote      a write to a loopback S3 server killed and resumed,   byte-identical
            read back against the local run (``bench_remote.py``)
packed      packed output vs ``pq.write_table`` of the same       >= 0.8x
            rows; files vs shards (``bench_packed.py``)
==========  ===================================================  ==========================

The inputs are real recordings made larger honestly (the 12 quickstart
sources replicated with distinct entity ids, or the 3 h recording
concatenated in time); each script's docstring says exactly how.  A part that
fails (a differing byte, a crash) makes this script exit 1 after the others
have run.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

# part -> (script, arguments at the sizes, arguments with --quick)
PARTS: dict[str, tuple[str, list[str], list[str]]] = {
    "stream": ("bench_stream.py", [], ["--copies", "3"]),
    "pool": ("bench_pool.py", [], ["--small", "96", "--large", "960"]),
    "pool-hours": ("bench_pool.py", ["--hours"], ["--hours", "--small", "96", "--large", "960"]),
    "exec": (
        "bench_exec.py",
        ["--sources", "1536", "--repeat", "2"],
        ["--sources", "96", "--repeat", "1"],
    ),
    "remote": ("bench_remote.py", ["--repeat", "2"], ["--repeat", "1"]),
    "packed": (
        "bench_packed.py",
        ["--sources", "1536", "--repeat", "1"],
        ["--sources", "48", "--repeat", "1"],
    ),
}


def run_part(name: str, quick: bool) -> tuple[int, float]:
    """Run one part's script in a fresh interpreter; its exit status and wall seconds."""
    script, full, small = PARTS[name]
    cmd = [sys.executable, str(HERE / script), *(small if quick else full)]
    print(f"\n=== {name}: {' '.join(cmd[1:])}", flush=True)
    t0 = time.perf_counter()
    rc = subprocess.call(cmd)
    return rc, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, the same checks")
    ap.add_argument("--only", default=",".join(PARTS), help="comma-separated parts to run")
    args = ap.parse_args(argv)
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in PARTS]
    if unknown:
        ap.error(f"unknown part(s) {unknown}; choose from {sorted(PARTS)}")
    results = {n: run_part(n, args.quick) for n in names}
    print("\n=== summary")
    for n, (rc, wall) in results.items():
        print(f"{n:8s} {'ok' if rc == 0 else f'FAILED (exit {rc})':18s} {wall:8.1f} s")
    return 0 if all(rc == 0 for rc, _ in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
