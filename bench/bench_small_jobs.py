"""Benchmark what a process pool costs to start, and ``--workers 2`` on the quickstart.

Run on demand (not part of the test suite)::

    .venv/bin/python bench/bench_small_jobs.py              # 3 interleaved rounds
    .venv/bin/python bench/bench_small_jobs.py --rounds 5

Two figures, each in interleaved rounds so that a busy machine slows the contenders alike:

* the start-up of ``ProcessExecutor(W)`` (spawned workers that import what a scoring task
  imports, ``kuration.pipeline.run.scoring``, one task each, then shut down), for W = 1, 2:
  wall time and CPU time of this process plus its reaped children;
* ``kur run examples/adsb_quickstart/job.json`` (12 sources) with ``--workers 1`` and
  ``--workers 2``: CPU time of the child ``kur`` and its workers, and wall time.  Goal
  (issue 28): ``--workers 2`` never more than 5 % slower than one worker; a derived pool
  that small is not started (``kuration.pipeline.dispatch.workers_fit``).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kuration.core.executors import ProcessExecutor

ROOT = Path(__file__).resolve().parents[1]
JOB = ROOT / "examples" / "adsb_quickstart" / "job.json"
KUR = [sys.executable, "-m", "kuration.cli.main"]


def cpu() -> float:
    """User + system CPU seconds of this process and its reaped children."""
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def pool_start(workers: int) -> tuple[float, float]:
    """Wall and CPU seconds to start ``workers`` spawned processes, run one import task in
    each and shut them down."""
    c0, t0 = cpu(), time.perf_counter()
    ex = ProcessExecutor(workers)
    try:
        task = "import kuration.pipeline.run.scoring"
        for _, out in ex.iter_batches(exec, [task] * workers):
            assert not isinstance(out, Exception), out
    finally:
        ex.close()
    return time.perf_counter() - t0, cpu() - c0


def quickstart(workers: int, out: Path) -> tuple[float, float]:
    """Wall and CPU seconds of ``kur run`` on the quickstart with ``--workers``."""
    c0, t0 = cpu(), time.perf_counter()
    cmd = [*KUR, "run", str(JOB), "--out", str(out), "--force", "--workers", str(workers)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
    return time.perf_counter() - t0, cpu() - c0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    starts: dict[int, list[tuple[float, float]]] = {1: [], 2: []}
    runs: dict[int, list[tuple[float, float]]] = {1: [], 2: []}
    with tempfile.TemporaryDirectory(prefix="kur-small-") as tmp:
        for _ in range(args.rounds):
            for w in (1, 2):
                starts[w].append(pool_start(w))
                runs[w].append(quickstart(w, Path(tmp) / f"w{w}"))
    load = os.getloadavg()
    print(f"best of {args.rounds} interleaved rounds; load average {load[0]:.1f} {load[1]:.1f}")
    for w in (1, 2):
        wall, c = min(x[0] for x in starts[w]), min(x[1] for x in starts[w])
        print(f"process pool of {w}: start + one import task each + shutdown: wall {wall:.2f} s, "
              f"CPU {c:.2f} s ({c / w:.2f} s a worker)")  # fmt: skip
    best = {w: (min(x[0] for x in v), min(x[1] for x in v)) for w, v in runs.items()}
    for w in (1, 2):
        print(f"kur run quickstart --workers {w}: wall {best[w][0]:.2f} s, CPU {best[w][1]:.2f} s")
    print(
        f"--workers 2 / --workers 1: {best[2][1] / best[1][1]:.3f}x by CPU, "
        f"{best[2][0] / best[1][0]:.3f}x by wall (goal <= 1.05x)"
    )


if __name__ == "__main__":
    main()
