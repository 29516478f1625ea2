"""Benchmark start-up in fresh processes: ``kur --help``, ``import kuration``, ``kur run``'s imports.

Run on demand (not part of the test suite)::

    .venv/bin/python bench/bench_startup.py            # median of 15 runs each
    .venv/bin/python bench/bench_startup.py -n 31
    .venv/bin/python bench/bench_startup.py --record   # store the figures for the README

Every figure is the median wall time (and CPU time, user + system) of ``-n`` fresh
interpreters, measured in this run next to the baseline ``python -c pass`` (the
interpreter's own start-up), so a loaded machine shifts both; "over baseline" is the time
the command adds.  Goals (issue 15):
``kur --help`` under 0.15 s and ``import kuration`` under 0.25 s.  ``import kuration.cli.run``
is what ``kur run`` imports before it reads the job (every stage a run may use); it has no
goal, the figure tracks it (1.13 s cumulative in ``-X importtime`` while the robot metrics
imported ``scipy.signal``/``scipy.ndimage`` eagerly).  Then the top entries of
``python -X importtime`` (cumulative microseconds) for each, to show where the rest goes.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

GOALS = {"kur --help": 0.15, "import kuration": 0.25}


def commands() -> dict[str, list[str]]:
    """Name -> argv; ``kur`` is the console script installed next to this interpreter."""
    kur = Path(sys.executable).parent / "kur"
    script = [str(kur)] if kur.exists() else [shutil.which("kur") or "kur"]
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        "import kuration": [sys.executable, "-c", "import kuration"],
        "import timenet": [sys.executable, "-c", "import timenet"],
        "kur --help": [*script, "--help"],
        "kur run --help": [*script, "run", "--help"],
        "import kur run": [sys.executable, "-c", "import kuration.cli.run"],
    }


def median_times(argv: list[str], n: int) -> tuple[float, float]:
    """Median wall seconds and median CPU seconds (user + system, of the child) of ``n``
    runs of ``argv``; one untimed run first warms the file cache.  CPU time is what a
    loaded machine changes least: waiting for a core counts in wall time only."""
    subprocess.run(argv, stdout=subprocess.DEVNULL, check=True)
    walls, cpus = [], []
    for _ in range(n):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, check=True)
        walls.append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def importtime_top(code: str, top: int) -> list[tuple[int, int, str]]:
    """The ``top`` entries of ``python -X importtime -c code`` by cumulative microseconds."""
    res = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True, check=True
    )
    rows = []
    for line in res.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        self_us, cum_us, name = line.removeprefix("import time:").split("|")
        rows.append((int(cum_us), int(self_us), name.rstrip()))
    return sorted(rows, reverse=True)[:top]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=15, help="fresh processes per command (15)")
    ap.add_argument("--top", type=int, default=10, help="importtime entries to show (10)")
    ap.add_argument("--record", action="store_true", help="store the figures in bench/results.json")
    args = ap.parse_args()
    cmds = commands()
    times = {name: median_times(argv, args.n) for name, argv in cmds.items()}
    walls = {name: wall for name, (wall, _) in times.items()}
    base, base_cpu = times["python -c pass"]
    print(f"median of {args.n} fresh processes (baseline: python -c pass)")
    print(
        f"{'command':>18} {'wall s':>8} {'over baseline s':>16} {'vs baseline':>12} "
        f"{'cpu s':>7} {'goal (wall)':>12}"
    )
    for name, (wall, cpu) in times.items():
        goal = GOALS.get(name)
        verdict = "" if goal is None else f"<{goal:.2f} {'ok' if wall < goal else 'MISSED'}"
        print(
            f"{name:>18} {wall:8.3f} {wall - base:16.3f} {wall / base:11.2f}x "
            f"{cpu:7.3f} {verdict:>12}"
        )
    for label, code in (
        ("kur --help (import kuration.cli.main)", "import kuration.cli.main"),
        ("import kuration", "import kuration"),
        ("kur run (import kuration.cli.run)", "import kuration.cli.run"),
    ):
        print(f"\n-X importtime, {label}: top {args.top} by cumulative time")
        print(f"{'cumulative ms':>14} {'self ms':>8}  module")
        for cum, own, name in importtime_top(code, args.top):
            print(f"{cum / 1000:14.1f} {own / 1000:8.1f}  {name}")
    if args.record:
        from perf_table import record

        record(
            [
                {
                    "id": "startup",
                    "benchmark": "`bench_startup.py`: `import kuration`; `kur --help`: median wall "
                    f"(CPU) time of {args.n} fresh processes (`python -c pass` alone: "
                    f"{base:.3f} s ({base_cpu:.3f} s))",
                    "measured": f"{walls['import kuration']:.3f} s "
                    f"({times['import kuration'][1]:.3f} s); {walls['kur --help']:.3f} s "
                    f"({times['kur --help'][1]:.3f} s)",
                    "goal": "< 0.25 s; < 0.15 s",
                },
                {
                    "id": "startup-run",
                    "benchmark": "`bench_startup.py`: `import kuration.cli.run` (`kur run`'s "
                    f"imports): median wall (CPU) time of {args.n} fresh processes",
                    "measured": f"{walls['import kur run']:.3f} s "
                    f"({times['import kur run'][1]:.3f} s)",
                    "goal": "tracked (no goal)",
                },
            ]
        )
    load = os.getloadavg()
    print(f"\n(cpu count {os.cpu_count()}; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f})")


if __name__ == "__main__":
    main()
