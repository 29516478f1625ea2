"""Peak RSS of a count selection (or an hours run) on the disk-backed pool at two corpus sizes (and in memory).

Run on demand (not part of the test suite)::

    .venv/bin/python bench/bench_pool.py                        # 1,536 vs 15,360 sources
    .venv/bin/python bench/bench_pool.py --small 96 --large 960  # quicker
    .venv/bin/python bench/bench_pool.py --corpus /tmp/corpus     # keep the corpus for a rerun
    .venv/bin/python bench/bench_pool.py --record                 # the ratios into bench/results.json
    .venv/bin/python bench/bench_pool.py --hours --small 192 --large 1920  # the hours run

Corpus: the 12 ADS-B quickstart sources (15 min slices) replicated to
``--large`` files with distinct entity ids (``bench/corpus.py``: the
same Parquet rows with every ``icao24`` suffixed ``-r<r>``); the small run
uses the first ``--small`` of those files.

Each measurement runs in a fresh subprocess (``python bench_pool.py --child``)
that imports kuration, runs ``Pipeline.from_job(job).select(n)`` and reports
its own peak RSS (``VmHWM`` of ``/proc/self/status``), wall and CPU time,
pool size and the selection's keys digest:

* ``disk``: ``options(pool="disk")`` with a fresh checkpoint directory (the
  quickstart strategy, with its group cap where it has one -- the figures up to
  issue 28 ran the earlier default, uniform-bins over turn_p90 x climb_std
  capped at one group per source; ``--no-group-cap`` drops the cap, as the
  figures of 384 -> 3,840 sources did); the peak of each stage is measured too (the
  high-water mark is reset through ``/proc/self/clear_refs`` before the
  score stage, the index load and the rest);
* ``memory``: the reference in-memory runtime on the same plan.

With ``--hours`` each child writes the quickstart job's dataset instead (its 4 h / 1 h
budget and 300 s spans, so the output stays the same size while the pool grows):
``Pipeline.from_job(job).options(pool=...).write(out)``; the per-stage peaks are
those of :mod:`kuration.pipeline.disk.hours` (score, then index load to the end),
and disk and memory must write the same ``dataset_manifest.json`` (its SHA-256 is
compared).

Printed: peak RSS per size and runtime, the large/small ratio per runtime
(target for the disk pool: <= 1.2x), whether disk and memory selected the
same segments at each size, and the disk pool's wall and CPU time over the
in-memory run's at each size (issue 28's target for ``--hours``: <= 1.3x).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))


def _peak_rss_mb() -> float:
    """This process's peak RSS: ``VmHWM`` (reset by exec, unlike ``ru_maxrss``, which
    keeps the forking parent's high-water mark on Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _hwm_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _stage_peaks(peaks: dict[str, float], hours: bool = False) -> Callable[[str], None]:
    """Record the peak RSS of each part of a disk-pool run in ``peaks``: ``setup`` (imports,
    plan), ``score``, ``connect`` (DuckDB), ``index`` (the load) and ``select`` (filters,
    bins, ranks, the top n).  The high-water mark is read and then reset (``5`` into
    ``/proc/self/clear_refs``) where each part starts."""
    from kuration.pipeline.disk import hours as disk_hours
    from kuration.pipeline.disk import pool as disk_pool

    module: Any = disk_hours if hours else disk_pool
    part = ["setup"]

    def boundary(nxt: str) -> None:
        peaks[part[0]] = max(peaks.get(part[0], 0.0), _hwm_mb())
        Path("/proc/self/clear_refs").write_text("5")
        part[0] = nxt

    def wrap(name: str, stage: str, after: str) -> None:
        fn = getattr(module, name)

        def measured(*a: Any, **k: Any) -> Any:
            boundary(stage)
            try:
                return fn(*a, **k)
            finally:
                boundary(after)

        setattr(module, name, measured)

    wrap("score_stage", "score", "connect")
    wrap("load_partitions", "index", "hours" if hours else "select")
    return boundary  # called once more at the end of the run


def _child(args: argparse.Namespace) -> None:
    from kuration import Pipeline

    peaks: dict[str, float] = {}
    end = None
    if args.pool == "disk" and Path("/proc/self/clear_refs").exists():
        end = _stage_peaks(peaks, args.hours)
    job = json.loads(Path(args.job).read_text())
    p = Pipeline.from_job(job) if args.hours else Pipeline.from_job(job).select(args.n)
    if args.pool == "disk":
        p = p.options(pool="disk", checkpoint_dir=args.ckpt)
    t0, c0 = time.perf_counter(), time.process_time()
    if args.hours:
        out = Path(f"{args.ckpt}-out")
        res: Any = p.write(out, force=True)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        keys = (out / "dataset_manifest.json").read_bytes()
        n_pool, n_out = res.scoring.summary()["segments"], len(res.manifest["shards"])
        shutil.rmtree(out, ignore_errors=True)
    else:
        res = p.run()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        keys = json.dumps([[s.source_id, s.start_idx] for s in res.selected]).encode()
        n_pool = res.n_pool if args.pool == "disk" else len(res.pool)
        n_out = len(res.selected)
    if end is not None:
        end("end")
    print(
        json.dumps(
            {
                "rss_mb": max([_peak_rss_mb(), *peaks.values()]),
                "stages_mb": peaks,
                "wall_s": wall,
                "cpu_s": cpu,
                "n_pool": n_pool,
                "n_selected": n_out,
                "selection_sha256": hashlib.sha256(keys).hexdigest(),
            }
        )
    )


def _job(files: list[Path], out: Path, group_cap: bool) -> Path:
    from bench_e2e import JOB, job_for

    from kuration.pipeline.spec.job import load_job

    job = job_for(files)
    cap = load_job(JOB)[0]["strategy"].get("group_cap")  # the shipped strategy may have none
    if group_cap and cap is not None:  # job_for drops it (bench_e2e writes the budget)
        job["strategy"]["group_cap"] = cap
    path = out / f"job-{len(files)}.json"
    path.write_text(json.dumps(job))
    return path


def _measure(job: Path, pool: str, n: int, tmp: Path, hours: bool = False) -> dict[str, Any]:
    ckpt = tmp / f"ck-{job.stem}-{pool}"
    cmd = [sys.executable, __file__, "--child", "--job", str(job), "--pool", pool]
    cmd += ["--n", str(n), "--ckpt", str(ckpt)] + (["--hours"] if hours else [])
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    shutil.rmtree(ckpt, ignore_errors=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _record(
    args: argparse.Namespace, res: dict[tuple[str, str], dict[str, Any]], pools: list[str]
) -> None:
    """The large/small peak RSS ratios into bench/results.json (row ``pool``)."""
    from perf_table import record

    def ratio(pool: str) -> str:
        a, b = res["small", pool]["rss_mb"], res["large", pool]["rss_mb"]
        return f"{b / a:.2f}x ({a:.0f} -> {b:.0f} MB)"

    cap = "without" if args.no_group_cap else "with"
    what = "the quickstart job's hours dataset" if args.hours else f"select {args.n}"
    bench = (
        f"`bench_pool.py{' --hours' if args.hours else ''}` ({args.small:,} -> {args.large:,} "
        f"sources, quickstart strategy {cap} its group cap, {what}): peak RSS large / small, "
        f"disk pool (load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores)"
    )
    measured = ratio("disk")
    if "memory" in pools:
        same = all(
            res[k, "disk"]["selection_sha256"] == res[k, "memory"]["selection_sha256"]
            for k in ("small", "large")
        )
        same_what = "manifests" if args.hours else "selections"
        bench += f"; in memory (disk == memory {same_what})"
        measured += f"; {ratio('memory')} ({'equal' if same else 'DIFFERENT'})"
    row_id = "pool-hours" if args.hours else "pool"
    record([{"id": row_id, "benchmark": bench, "measured": measured, "goal": "<= 1.2x (issue 13)"}])
    print("recorded in bench/results.json; run bench/perf_table.py --write")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", type=int, default=1536)
    ap.add_argument("--large", type=int, default=15360)
    ap.add_argument("--n", type=int, default=1000, help="segments to select")
    ap.add_argument("--no-memory", action="store_true", help="skip the in-memory runs")
    ap.add_argument("--no-group-cap", action="store_true", help="the strategy without its cap")
    ap.add_argument("--corpus", help="build the corpus here and keep it (reused when complete)")
    ap.add_argument("--record", action="store_true", help="store the ratios in bench/results.json")
    ap.add_argument("--hours", action="store_true", help="write the job's hours dataset")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--job", help=argparse.SUPPRESS)
    ap.add_argument("--pool", help=argparse.SUPPRESS)
    ap.add_argument("--ckpt", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(args)
        return
    from corpus import build_corpus

    tmp = Path(tempfile.mkdtemp(prefix="kuration-bench-pool-"))
    try:
        t0 = time.perf_counter()
        files = build_corpus(Path(args.corpus) if args.corpus else tmp / "corpus", args.large)
        print(f"corpus: {args.large} sources built in {time.perf_counter() - t0:.0f} s")
        cap = not args.no_group_cap
        jobs = {"small": _job(files[: args.small], tmp, cap), "large": _job(files, tmp, cap)}
        pools = ["disk"] if args.no_memory else ["disk", "memory"]
        res: dict[tuple[str, str], dict[str, Any]] = {}
        for size, job in jobs.items():
            for pool in pools:
                r = res[size, pool] = _measure(job, pool, args.n, tmp, args.hours)
                n_src = args.small if size == "small" else args.large
                print(
                    f"{pool:6s} {n_src:6d} sources: peak RSS {r['rss_mb']:7.1f} MB, "
                    f"{r['wall_s']:6.1f} s ({r['cpu_s']:.1f} s CPU), pool {r['n_pool']} "
                    f"segments, {r['n_selected']} {'shards' if args.hours else 'selected'}"
                )
                if r["stages_mb"]:
                    print(
                        "       peak RSS per stage (MB): "
                        + ", ".join(f"{k} {v:.1f}" for k, v in r["stages_mb"].items())
                    )
        for pool in pools:
            ratio = res["large", pool]["rss_mb"] / res["small", pool]["rss_mb"]
            print(
                f"{pool}: peak RSS large/small = {ratio:.2f}x (sources x{args.large / args.small:g})"
            )
        if "memory" in pools:
            for size in jobs:
                same = (
                    res[size, "disk"]["selection_sha256"] == res[size, "memory"]["selection_sha256"]
                )
                what = "write the same manifest" if args.hours else "select the same segments"
                print(f"{size}: disk and memory {what}: {same}")
                d, m = res[size, "disk"], res[size, "memory"]
                print(
                    f"{size}: disk / memory wall {d['wall_s'] / m['wall_s']:.2f}x, CPU "
                    f"{d['cpu_s'] / m['cpu_s']:.2f}x (issue 28: <= 1.3x for the hours run); "
                    f"load average {os.getloadavg()[0]:.1f}"
                )
        if args.record:
            _record(args, res, pools)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
