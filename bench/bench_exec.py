"""Executors: the quickstart job over a replicated corpus with 1 vs 2 workers, and on Ray.

Run on demand (not part of the test suite)::

    .venv/bin/python bench/bench_exec.py                    # 1,536 sources, 2 rounds
    .venv/bin/python bench/bench_exec.py --sources 384 --repeat 3
    .venv/bin/python bench/bench_exec.py --pool disk --corpus /work/bench/corpus --no-ray \
        --durable-off                                       # the disk pool, fsync measured

Corpus: ``corpus.build_corpus`` -- the 12 ADS-B quickstart sources (15-minute
slices of the pinned ``traffic==2.13`` sample) replicated to ``--sources`` Parquet
files, replica ``r`` with every ``icao24`` suffixed ``-r<r>`` (distinct entities,
the same rows, times and values); ``--corpus DIR`` reads the first ``--sources``
files of a corpus already built there instead (read only: nothing is written to
it).  Job: the quickstart job with its strategy's ``group_cap`` removed, so the
whole budget is written (``bench_e2e.job_for``).  ``--pool disk`` runs it on the
disk-backed pool (``pool="disk"``: each source scored into a checkpointed
partition, by the executor's workers, then ranked in DuckDB).

Contenders, taking turns in each of ``--repeat`` rounds (the best time of each
counts; the machine may be shared, so the ratios are what to read):

* ``local x1``   -- ``executor="local"``: the lead reads and windows the next source
  while one thread scores the previous one (on the disk pool: each source read,
  scored and its partition written in the lead, one at a time); shards are written
  in the lead;
* ``process x1`` -- a spawn pool of one worker process (pool start included);
* ``process x2`` -- two worker processes: scoring and shard writing both run there;
* ``ray x2``     -- Ray tasks on a private cluster of 2 CPUs, started once before the
  rounds (a cluster is long-lived; its start is printed separately);
* with ``--durable-off``, ``local x1`` and ``process x2`` again with ``durable=False``
  (no fsync of the partitions' Arrow files and the staged shards; the partition commit
  records are still fsynced, and their fsync is the ``fsync`` part these runs report):
  the difference is what those fsync waits cost.

Every contender's artifact (shards and ``dataset_manifest.json``) is compared by
SHA-256 with ``local x1``'s: the run fails loudly if any byte differs.  The
targets (issue 13): ``local x1 / process x2`` >= 1.7x and ``ray x2 / process x2``
within 1.3x.  The stage telemetry of the best ``process x2`` round is printed
(executor, queue depth, wall seconds per stage, and where the score and stage
steps' time went, summed over the workers: read, features, write, fsync).  CPU
seconds (this process plus its reaped children) show the work each contender did
whatever the machine's load: two workers can only be 2x faster in wall time when
two CPUs are free for them.  Each figure is printed with the load average
(``os.getloadavg()``) taken right after its run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_e2e import job_for
from corpus import build_corpus, existing_corpus

SKIP = {"config.json", "dataset.commit.json", ".kuration-writer.lock"}


def digest(root: Path) -> str:
    """SHA-256 over (path, SHA-256) of every shard plus the manifest and the marker."""
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.name not in SKIP and ".kuration_staging" not in p.parts:
            h.update(str(p.relative_to(root)).encode())
            h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def _cpu() -> float:
    """CPU seconds of this process and its reaped children (a process pool's workers are
    reaped when the run closes its executor)."""
    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _contenders(args: argparse.Namespace) -> list[tuple[str, str, int, bool]]:
    """(name, executor, workers, durable) of every contender."""
    out = [
        ("local x1", "local", 1, True),
        ("process x1", "process", 1, True),
        ("process x2", "process", 2, True),
    ]
    if not args.no_ray:
        out.append(("ray x2", "ray", 2, True))
    if args.durable_off:
        out += [
            ("local x1 nofsync", "local", 1, False),
            ("process x2 nofsync", "process", 2, False),
        ]
    return out


def _run(raw: dict[str, Any], out: Path, pool: str, contender: tuple[str, str, int, bool]) -> Any:
    """One contender's run of the job into ``out`` (what ``run_job`` does, with ``durable``)."""
    from kuration import Pipeline

    _, executor, workers, durable = contender
    p = Pipeline.from_job(raw).options(
        executor=executor, workers=workers, pool=pool, durable=durable
    )
    return p.write(out, force=True)


def _parts(tele: dict[str, Any]) -> str:
    parts = dict(tele.get("parts_s") or {})
    return ", ".join(f"{k} {v:.1f}" for k, v in parts.items())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sources", type=int, default=1536)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--no-ray", action="store_true", help="leave Ray out")
    ap.add_argument("--pool", choices=("memory", "disk"), default="memory")
    ap.add_argument("--corpus", help="read an existing corpus here (never written)")
    ap.add_argument("--durable-off", action="store_true", help="also run without fsync")
    args = ap.parse_args()

    import pyarrow.parquet as pq

    contenders = _contenders(args)
    cluster = None
    if not args.no_ray:
        from kuration.core.ray_cluster import start_private

        t0 = time.perf_counter()
        cluster = start_private(2)  # as kur run does: no RAY_ADDRESS or stale cluster file
        print(f"ray private cluster (2 CPUs) started in {time.perf_counter() - t0:.1f} s")
    names = [c[0] for c in contenders]
    with tempfile.TemporaryDirectory(prefix="s13-exec-bench-") as tmp:
        tmpd = Path(tmp)
        if args.corpus:
            files = existing_corpus(Path(args.corpus), args.sources)
        else:
            files = build_corpus(tmpd / "corpus", args.sources)
        n_rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
        raw = job_for(files)
        best = dict.fromkeys(names, float("inf"))
        cpu = dict.fromkeys(names, 0.0)
        load = dict.fromkeys(names, (0.0, 0.0, 0.0))
        digests: dict[str, str] = {}
        telemetry: dict[str, list[dict[str, Any]]] = {}
        for _ in range(args.repeat):
            for c in contenders:
                name = c[0]
                out = tmpd / "out"
                shutil.rmtree(out, ignore_errors=True)
                c0 = _cpu()
                t0 = time.perf_counter()
                _run(raw, out, args.pool, c)
                dt = time.perf_counter() - t0
                c1 = _cpu()
                digests.setdefault(name, digest(out))
                if digests[name] != digests["local x1"]:
                    raise SystemExit(f"{name}: the artifact differs from local x1's")
                if dt < best[name]:
                    best[name], cpu[name], load[name] = dt, c1 - c0, os.getloadavg()
                    cfg = json.loads((out / "config.json").read_text())
                    telemetry[name] = cfg["provenance"]["execution"]["telemetry"]
        if cluster is not None:
            cluster.stop()
    print(
        f"{len(files)} sources, {n_rows:,} rows, pool={args.pool}; best of {args.repeat} "
        f"interleaved rounds on {os.cpu_count()} cores; artifacts byte-identical "
        f"({digests['local x1'][:16]})"
    )
    for name in names:
        c = f"{cpu[name]:8.2f} CPU s" if name != "ray x2" else "  (Ray workers: not children)"
        la = "/".join(f"{x:.2f}" for x in load[name])
        print(
            f"  {name:<19s} {best[name]:8.2f} s  {n_rows / best[name]:12,.0f} rows/s  {c}  "
            f"load {la}"
        )
    _ratios(best, args)
    print("the score step of each best round (parts: seconds summed where they ran):")
    for name in names:
        (t,) = [t for t in telemetry[name] if t["stage"] == "read+segment+features"]
        print(f"  {name:<19s} {t['wall_s']:8.2f} s  [{_parts(t)}]")
    for name in ("local x1", "process x2"):
        print(f"stage telemetry of the best {name} round (config.json):")
        for t in telemetry[name]:
            ex = t.get("executor") or "driver"
            depth = t.get("queue_depth")
            extra = f"  [{_parts(t)}]" if t.get("parts_s") else ""
            print(f"  {t['stage']:<24s} {t['wall_s']:8.3f} s  {ex:<8s} q={depth}{extra}")


def _ratios(best: dict[str, float], args: argparse.Namespace) -> None:
    """The ratios of the contenders' best wall times (measured in this run)."""
    ratio = best["local x1"] / best["process x2"]
    print(f"local x1 / process x2   = {ratio:.2f}x  (target >= 1.7x)")
    print(f"process x1 / process x2 = {best['process x1'] / best['process x2']:.2f}x")
    if not args.no_ray:
        print(
            f"ray x2 / process x2     = {best['ray x2'] / best['process x2']:.2f}x  (target <= 1.3x)"
        )
    if args.durable_off:
        for name in ("local x1", "process x2"):
            off = best[f"{name} nofsync"]
            print(
                f"{name}: durable / no fsync = {best[name] / off:.2f}x "
                f"({best[name] - off:+.1f} s of fsync waits)"
            )


if __name__ == "__main__":
    main()
