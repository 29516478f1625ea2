"""Peak RSS of a count selection on the disk-backed pool at two corpus sizes (and the in-memory path).

Run on demand (not part of the test suite)::

    .venv/bin/python bench/bench_pool.py                        # 1,536 vs 15,360 sources
    .venv/bin/python bench/bench_pool.py --small 96 --large 960  # quicker
    .venv/bin/python bench/bench_pool.py --corpus /tmp/corpus     # keep the corpus for a rerun

Corpus: the 12 ADS-B quickstart sources (15 min slices) replicated to
``--large`` files with distinct entity ids (``bench/corpus.py``: the
same Parquet rows with every ``icao24`` suffixed ``-r<r>``); the small run
uses the first ``--small`` of those files.

Each measurement runs in a fresh subprocess (``python bench_pool.py --child``)
that imports kuration, runs ``Pipeline.from_job(job).select(n)`` and reports
its own peak RSS (``VmHWM`` of ``/proc/self/status``), wall time,
pool size and the selection's keys digest:

* ``disk``: ``options(pool="disk")`` with a fresh checkpoint directory (the
  quickstart strategy without its group cap, which the disk pool does not
  cover yet: uniform-bins over turn_p90 x climb_std);
* ``memory``: the reference in-memory runtime on the same plan.

Printed: peak RSS per size and runtime, the large/small ratio per runtime
(target for the disk pool: <= 1.2x), and whether disk and memory selected the
same segments at the small size.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
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


def _child(args: argparse.Namespace) -> None:
    from kuration import Pipeline

    job = json.loads(Path(args.job).read_text())
    p = Pipeline.from_job(job).select(args.n)
    if args.pool == "disk":
        p = p.options(pool="disk", checkpoint_dir=args.ckpt)
    t0 = time.perf_counter()
    res = p.run()
    wall = time.perf_counter() - t0
    keys = json.dumps([[s.source_id, s.start_idx] for s in res.selected]).encode()
    n_pool = res.n_pool if args.pool == "disk" else len(res.pool)  # type: ignore[union-attr]
    print(
        json.dumps(
            {
                "rss_mb": _peak_rss_mb(),
                "wall_s": wall,
                "n_pool": n_pool,
                "n_selected": len(res.selected),
                "selection_sha256": hashlib.sha256(keys).hexdigest(),
            }
        )
    )


def _job(files: list[Path], out: Path) -> Path:
    from bench_e2e import job_for

    job = job_for(files)
    path = out / f"job-{len(files)}.json"
    path.write_text(json.dumps(job))
    return path


def _measure(job: Path, pool: str, n: int, tmp: Path) -> dict[str, Any]:
    ckpt = tmp / f"ck-{job.stem}-{pool}"
    cmd = [sys.executable, __file__, "--child", "--job", str(job), "--pool", pool]
    cmd += ["--n", str(n), "--ckpt", str(ckpt)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    shutil.rmtree(ckpt, ignore_errors=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", type=int, default=1536)
    ap.add_argument("--large", type=int, default=15360)
    ap.add_argument("--n", type=int, default=1000, help="segments to select")
    ap.add_argument("--no-memory", action="store_true", help="skip the in-memory runs")
    ap.add_argument("--corpus", help="build the corpus here and keep it (reused when complete)")
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
        jobs = {"small": _job(files[: args.small], tmp), "large": _job(files, tmp)}
        pools = ["disk"] if args.no_memory else ["disk", "memory"]
        res: dict[tuple[str, str], dict[str, Any]] = {}
        for size, job in jobs.items():
            for pool in pools:
                r = res[size, pool] = _measure(job, pool, args.n, tmp)
                n_src = args.small if size == "small" else args.large
                print(
                    f"{pool:6s} {n_src:6d} sources: peak RSS {r['rss_mb']:7.1f} MB, "
                    f"{r['wall_s']:6.1f} s, pool {r['n_pool']} segments, "
                    f"{r['n_selected']} selected"
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
                print(f"{size}: disk and memory select the same segments: {same}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
