"""End to end: ``kur run`` (workers=1) against ``pyarrow.parquet.read_table`` of the same files.

Run on demand (not part of the test suite)::

    .venv/bin/python bench/bench_e2e.py                  # 384 sources, 3 rounds
    .venv/bin/python bench/bench_e2e.py --sources 48 --repeat 2
    .venv/bin/python bench/bench_e2e.py --record         # the ratio into bench/results.json
    .venv/bin/python bench/bench_e2e.py --sources 96 --floor   # and the job's floor beside it

Corpus: the 12 ADS-B quickstart sources (``build_adsb_sources``, 15 min
slices) replicated to ``--sources`` files (``bench/corpus.py``).  Replica ``r`` of a source is the
same Parquet rows with every ``icao24`` id suffixed ``-r<r>`` (so each
replica holds distinct entities) and written under its own file name; the
rows, times and values are unchanged.

Contenders, taking turns in each of ``--repeat`` rounds (best time of each
counts, so a busy machine slows them alike):

* ``kur run``: :func:`kuration.run_job` of the quickstart job over the corpus
  with ``workers=1``, its strategy without ``group_cap`` (so the budget is
  written), a fresh output directory each round;
* ``pyarrow``: ``pq.read_table(path, use_threads=False)`` of every file.

Both report rows/s over the same total row count (removing the previous
round's output is not timed).  Two per-stage breakdowns are printed: the
StageTelemetry the run records in ``config.json``, with the parts a stage
measured (``parts_s``: read -- the source's SHA-256 included --, segment and features inside the
fused scoring call; the admitted sources read again and the fsync inside staging),
and timing wrappers the benchmark puts around the stage entry points (read,
segment, features, rank/fill, tracks/write; the rest is "other").
Target: kur run >= 0.5x pyarrow.

``--floor`` adds two contenders to the rounds, :func:`e2e_floor.floor_run` with and without
its ``reread`` (the least work a run of this job must do: one read and SHA-256 a source,
the seven features by the compiled kernels called directly, the selection, the admitted
spans written as npz shards with their hashes; see ``bench/e2e_floor.py``), and prints
every ratio by CPU time (``time.process_time``) as well as by wall time.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
JOB = ROOT / "examples" / "adsb_quickstart" / "job.json"


def job_for(files: list[Path]) -> dict[str, Any]:
    from kuration.pipeline.spec.job import load_job

    raw, _ = load_job(JOB)
    raw = json.loads(json.dumps(raw))
    raw["strategy"].pop("group_cap", None)  # the budget is written, not capped per group
    raw["sources"] = [str(p) for p in files]
    raw["workers"] = 1
    return raw


# -- stage timing (used when config.json carries no stage telemetry) ----------------------

STAGES = {
    "read": [
        # every pass reads through read_checked (one read, hashed and parsed)
        ("kuration.sources.timeseries", "TimeseriesAdapter", "read_checked"),
    ],
    "segment": [("kuration.contracts.segment", "Segmenter", "segments")],
    "features": [("kuration.metrics.features", "FeatureEngine", "score_segments")],
    "rank/fill": [
        (mod, None, fn)
        for mod in ("kuration.pipeline.dispatch.hours", "kuration.pipeline.run.steps")
        for fn in ("apply_strategy", "build_candidates", "build_candidate_table", "fill_budgets")
    ],
    "tracks/write": [
        ("kuration.pipeline.dispatch.hours", None, "track_from_table"),
        ("kuration.pipeline.run.steps", None, "track_from_table"),
        ("kuration.pipeline.run.stage_local", None, "track_from_table"),
        ("kuration.output.writer", "ShardWriter", "write"),
    ],
}


@contextmanager
def stage_timers() -> Iterator[dict[str, float]]:
    """Wrap each stage's entry points; nested calls of one stage count once."""
    import importlib

    spent: dict[str, float] = defaultdict(float)
    depth: dict[str, int] = defaultdict(int)
    undo: list[Callable[[], None]] = []

    def wrap(stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*a: Any, **k: Any) -> Any:
            depth[stage] += 1
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                depth[stage] -= 1
                if depth[stage] == 0:
                    spent[stage] += time.perf_counter() - t0

        return timed

    for stage, targets in STAGES.items():
        for mod_name, cls_name, attr in targets:
            try:
                owner: Any = importlib.import_module(mod_name)
            except ImportError:  # a module of another pipeline layout
                continue
            if cls_name is not None:
                owner = getattr(owner, cls_name)
            if not hasattr(owner, attr):
                continue
            old = getattr(owner, attr)
            setattr(owner, attr, wrap(stage, old))
            undo.append(lambda o=owner, a=attr, f=old: setattr(o, a, f))
    try:
        yield spent
    finally:
        for u in undo:
            u()


def telemetry_stages(out: Path) -> dict[str, float]:
    """The run's own StageTelemetry (``config.json``), stage -> wall seconds, if recorded;
    a stage that measured its parts (``parts_s``) also gives ``"stage / part"`` entries."""
    cfg = json.loads((out / "config.json").read_text())
    tel = cfg.get("provenance", {}).get("execution", {}).get("telemetry") or []
    got: dict[str, float] = defaultdict(float)
    for s in tel:
        if isinstance(s, dict) and s.get("wall_s") is not None:
            got[str(s.get("stage"))] += float(s["wall_s"])
            for part, sec in (s.get("parts_s") or {}).items():
                got[f"{s.get('stage')} / {part}"] += float(sec)
    return dict(got)


def _load() -> str:
    import os

    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sources", type=int, default=384)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--record", action="store_true", help="store the ratio in bench/results.json")
    ap.add_argument("--floor", action="store_true", help="time the job's floor (e2e_floor.py) too")
    args = ap.parse_args()

    from corpus import build_corpus

    from kuration import run_job

    with tempfile.TemporaryDirectory(prefix="bench-e2e-") as tmp:
        tmpd = Path(tmp)
        files = build_corpus(tmpd / "corpus", args.sources)
        n_rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
        raw = job_for(files)
        out = tmpd / "out"

        def run_kur() -> None:
            run_job(raw, out, workers=1)

        def run_arrow() -> None:
            for f in files:
                pq.read_table(f, use_threads=False)

        contenders = [("kur run", run_kur), ("pyarrow", run_arrow)]
        if args.floor:
            from e2e_floor import floor_run

            contenders += [
                ("floor", lambda: floor_run(files, tmpd / "floor")),
                ("floor+reread", lambda: floor_run(files, tmpd / "floor", reread=True)),
            ]
        best = {name: float("inf") for name, _ in contenders}
        cpu = dict(best)
        stages: dict[str, float] = {}
        recorded: dict[str, float] = {}
        for _ in range(args.repeat):
            for name, fn in contenders:
                if name == "kur run":
                    shutil.rmtree(out, ignore_errors=True)  # the last round's, untimed
                    with stage_timers() as spent:
                        c0, t0 = time.process_time(), time.perf_counter()
                        fn()
                        dt, dc = time.perf_counter() - t0, time.process_time() - c0
                    if dt < best[name]:
                        stages, recorded = {**spent, "_wall": dt}, telemetry_stages(out)
                else:
                    c0, t0 = time.process_time(), time.perf_counter()
                    fn()
                    dt, dc = time.perf_counter() - t0, time.process_time() - c0
                best[name] = min(best[name], dt)
                cpu[name] = min(cpu[name], dc)

    kur, arrow = n_rows / best["kur run"], n_rows / best["pyarrow"]
    print(
        f"{len(files)} sources, {n_rows} rows; best of {args.repeat} interleaved rounds "
        "(ratios are what counts: the machine is shared)"
    )
    print(f"kur run (workers=1)      : {kur:12,.0f} rows/s  ({best['kur run']:.2f} s)")
    print(f"pq.read_table (1 thread) : {arrow:12,.0f} rows/s  ({best['pyarrow']:.2f} s)")
    print(f"kur run / pyarrow = {kur / arrow:.3f}x   (target >= 0.5x)")
    if args.floor:
        print(f"by CPU time (best of each), {len(files)} sources; load average {_load()}:")
        for name, sec in cpu.items():
            print(
                f"  {name:<13s} {1e3 * sec / len(files):7.3f} CPU ms a source   "
                f"{cpu['pyarrow'] / sec:6.3f}x of pyarrow   (wall {best['pyarrow'] / best[name]:.3f}x)"
            )
    if args.record:
        from perf_table import record

        record(
            [
                {
                    "id": "e2e",
                    "benchmark": f"`bench_e2e.py` ({len(files)} sources, {n_rows / 1e6:.1f} M rows): "
                    "`kur run` workers=1 / `pq.read_table(use_threads=False)`",
                    "measured": f"{kur / arrow:.2f}x",
                    "goal": ">= 0.5x",
                }
            ]
        )
    wall = stages.pop("_wall", best["kur run"])
    if recorded:
        print("stage telemetry recorded in config.json (best kur round):")
        for name, sec in recorded.items():
            indent = "    " if " / " in name else "  "
            print(f"{indent}{name:<34s} {sec:7.3f} s  {100 * sec / wall:5.1f} %")
    print("per-stage, timed by the benchmark around each stage's entry points:")
    for name, s in stages.items():
        print(f"  {name:<14s} {s:7.3f} s  {100 * s / wall:5.1f} %")
    other = wall - sum(stages.values())
    print(f"  {'other':<14s} {other:7.3f} s  {100 * other / wall:5.1f} %")


if __name__ == "__main__":
    main()
