"""CPU profile of issue 15's two benchmarks: where each CPU millisecond per source goes.

Run on demand (not part of the test suite)::

    .venv/bin/python bench/profile_perf.py e2e --sources 384
    .venv/bin/python bench/profile_perf.py metrics --stride 60
    .venv/bin/python bench/profile_perf.py metrics --stride 10 --top 25

Every figure is CPU time (``time.thread_time`` of the thread that did the work, or
``time.process_time`` for a whole step), so it holds on a shared machine where wall
time does not.  ``bench/PROFILE.md`` records one run of each and its reading.

``e2e`` (the ``bench_e2e.py`` corpus and job): the floor, ``pq.read_table(use_threads=False)``
of every file; then one ``kur run`` (workers=1) with CPU timers around each step of the
hours run and around the stage entry points inside the scoring step (read, segment,
features, fingerprint, which run on two threads); then a second run under cProfile (one
profiler per thread) for the functions that own the time.

``metrics`` (the ``bench_metrics.py`` strategy and windows): the engine's CPU per source
split by compiled metric stage (source, each map, the reduce; a stage shared by several
metrics is charged to the first that computes it), the hand-written numpy pass split the
same way (its floor), tsfresh's CPU per window, and a cProfile of the engine.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import shutil
import sys
import tempfile
import threading
import time
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"


# -- profiling helpers -------------------------------------------------------------------


@contextmanager
def thread_profiles() -> Iterator[list[cProfile.Profile]]:
    """cProfile in this thread and in every thread started meanwhile (one profiler each),
    timed by each thread's CPU clock (time spent waiting for the GIL or a queue is not counted)."""
    profs: list[cProfile.Profile] = []
    orig = threading.Thread.run

    def run(self: threading.Thread) -> None:
        p = cProfile.Profile(time.thread_time)
        profs.append(p)
        p.enable()
        try:
            orig(self)
        finally:
            p.disable()

    threading.Thread.run = run  # type: ignore[method-assign]
    main = cProfile.Profile(time.thread_time)
    profs.append(main)
    main.enable()
    try:
        yield profs
    finally:
        main.disable()
        threading.Thread.run = orig  # type: ignore[method-assign]


def print_top(profs: list[cProfile.Profile], per: float, unit: str, top: int) -> None:
    """The ``top`` functions by own CPU time, then by cumulative time, in ms per ``unit``."""
    stats: pstats.Stats | None = None
    for p in profs:
        try:
            s = pstats.Stats(p, stream=io.StringIO())
        except TypeError:  # a profiler that recorded nothing
            continue
        stats = s if stats is None else stats.add(s) or stats
    if stats is None:
        return
    rows = stats.stats  # type: ignore[attr-defined]

    def name(k: tuple[str, int, str]) -> str:
        f, line, fn = k
        if f == "~":
            return fn
        parts = Path(f).parts
        short = "/".join(parts[parts.index("kuration") :]) if "kuration" in parts else parts[-1]
        return f"{short}:{line}({fn})"

    for title, col in (("own time (tottime)", 2), ("cumulative", 3)):
        print(f"  top {top} by {title}, ms per {unit} (calls per {unit}):")
        for k, v in sorted(rows.items(), key=lambda kv: -kv[1][col])[:top]:
            print(f"    {1e3 * v[col] / per:8.3f}  {v[1] / per:8.1f}  {name(k)}")


# -- e2e ---------------------------------------------------------------------------------

ENTRY = {  # stage -> (module, class or None, attribute): timed by thread CPU
    # score pass and staging reread alike: one read of the file, hashed and parsed
    "read (every pass, hashing included)": [
        ("kuration.sources.timeseries", "TimeseriesAdapter", "read_checked")
    ],
    "segment": [("kuration.contracts.segment", "Segmenter", "segments")],
    "features": [("kuration.metrics.features", "FeatureEngine", "score_segments")],
    "fingerprint (disk pool's partition keys)": [
        ("kuration.sources.base", "InputAdapter", "fingerprint")
    ],
}


@contextmanager
def entry_timers() -> Iterator[dict[str, float]]:
    """Thread CPU seconds inside each :data:`ENTRY` point (nested calls of one stage once)."""
    import importlib

    spent: dict[str, float] = defaultdict(float)
    local = threading.local()
    undo: list[Callable[[], None]] = []

    def wrap(stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*a: Any, **k: Any) -> Any:
            depth = getattr(local, stage, 0)
            setattr(local, stage, depth + 1)
            c0 = time.thread_time()
            try:
                return fn(*a, **k)
            finally:
                setattr(local, stage, depth)
                if depth == 0:
                    spent[stage] += time.thread_time() - c0

        return timed

    for stage, targets in ENTRY.items():
        for mod, cls, attr in targets:
            owner: Any = importlib.import_module(mod)
            owner = getattr(owner, cls) if cls else owner
            old = getattr(owner, attr)
            setattr(owner, attr, wrap(stage, old))
            undo.append(lambda o=owner, a=attr, f=old: setattr(o, a, f))
    try:
        yield spent
    finally:
        for u in undo:
            u()


@contextmanager
def step_timers() -> Iterator[dict[str, tuple[float, float]]]:
    """Process CPU and wall seconds of each step of the hours run (``hours.STEPS``)."""
    from kuration.pipeline.dispatch import hours

    spent: dict[str, tuple[float, float]] = {}
    old = hours.STEPS

    def wrap(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(r: Any) -> Any:
            c0, t0 = time.process_time(), time.perf_counter()
            try:
                return fn(r)
            finally:
                spent[name] = (time.process_time() - c0, time.perf_counter() - t0)

        return timed

    hours.STEPS = tuple((n, wrap(n, f)) for n, f in old)
    try:
        yield spent
    finally:
        hours.STEPS = old


def e2e(args: argparse.Namespace) -> None:
    from bench_e2e import job_for
    from corpus import build_corpus

    from kuration import run_job

    with tempfile.TemporaryDirectory(prefix="perf-profile-e2e-") as tmp:
        tmpd = Path(tmp)
        files = build_corpus(tmpd / "corpus", args.sources)
        n_src = len(files)
        n_rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
        mrows = n_rows / 1e6
        raw = job_for(files)
        out = tmpd / "out"
        print(f"e2e: {n_src} sources, {n_rows} rows; {load()} at start")

        def arrow() -> tuple[float, float]:
            c0, t0 = time.thread_time(), time.perf_counter()
            for f in files:
                pq.read_table(f, use_threads=False)
            return time.thread_time() - c0, time.perf_counter() - t0

        def kur() -> tuple[float, float, dict[str, float], dict[str, tuple[float, float]]]:
            shutil.rmtree(out, ignore_errors=True)
            with entry_timers() as inner, step_timers() as steps:
                c0, t0 = time.process_time(), time.perf_counter()
                run_job(raw, out, workers=1)
                cpu, wall = time.process_time() - c0, time.perf_counter() - t0
            return cpu, wall, dict(inner), dict(steps)

        def kur_ops() -> dict[str, float]:
            shutil.rmtree(out, ignore_errors=True)
            with pipeline_op_timers() as ops:
                run_job(raw, out, workers=1)
            return dict(ops)

        # interleaved, best CPU of each over --repeat rounds
        best_arrow, arrow_wall, best_kur = float("inf"), float("inf"), None
        for _ in range(args.repeat):
            a_cpu, a_wall = arrow()
            best_arrow, arrow_wall = min(best_arrow, a_cpu), min(arrow_wall, a_wall)
            got = kur()
            if best_kur is None or got[0] < best_kur[0]:
                best_kur = got
        assert best_kur is not None
        cpu, wall, inner, steps = best_kur

        def row(name: str, sec: float, indent: str = "  ") -> None:
            print(
                f"{indent}{name:<30s} {sec:8.3f} s CPU {1e3 * sec / n_src:8.2f} ms/source "
                f"{sec / mrows:7.3f} s/M rows {100 * sec / cpu:5.1f} %"
            )

        print(f"best of {args.repeat} interleaved rounds by CPU; {load()} after")
        print("pq.read_table(use_threads=False) floor: ", end="")
        print(
            f"{best_arrow:.3f} s CPU, {1e3 * best_arrow / n_src:.2f} ms/source, "
            f"{best_arrow / mrows:.3f} s/M rows, {n_rows / best_arrow / 1e6:.2f} M rows/s"
        )
        print(
            f"kur run: {cpu:.3f} s CPU ({wall:.3f} s wall), {n_rows / cpu / 1e6:.2f} M rows/CPU s; "
            f"ratio vs pyarrow: CPU {best_arrow / cpu:.3f}x, wall {arrow_wall / wall:.3f}x "
            f"(pyarrow {arrow_wall:.3f} s wall)"
        )
        print("per step of the hours run (process CPU):")
        for name, (c, _w) in steps.items():
            row(name, c)
        row(
            "(outside the steps: preflight, lease, import)", cpu - sum(c for c, _ in steps.values())
        )
        print("inside the steps, per stage entry point (thread CPU):")
        for name, sec in inner.items():
            row(name, sec, "    ")
        ops = kur_ops()
        print("features by compiled metric stage (one more run; thread CPU):")
        for name, sec in sorted(ops.items(), key=lambda kv: -kv[1]):
            row(name, sec, "      ")
        if args.no_cprofile:
            return
        shutil.rmtree(out, ignore_errors=True)
        with thread_profiles() as profs:
            run_job(raw, out, workers=1)
        print("cProfile of one more run (profiler overhead inflates small calls):")
        print_top(profs, n_src, "source", args.top)


# -- metrics -----------------------------------------------------------------------------


def numpy_parts(table, starts: np.ndarray, length: int, t: dict[str, float]) -> None:
    """``bench_metrics.numpy_pass`` cut into timed parts (the floor of each engine stage)."""
    import pymap3d
    from bench_metrics import _pct
    from numpy.lib.stride_tricks import sliding_window_view

    def tick(name: str, c0: float) -> float:
        c1 = time.thread_time()
        t[name] += c1 - c0
        return c1

    c = time.thread_time()
    hz, pres = table.sample_hz, table.present
    v = {k: np.where(pres[..., None], a, np.nan) for k, a in table.values.items()}
    c = tick("fields (presence mask)", c)
    s0, step = int(starts[0]), int(starts[1] - starts[0]) if len(starts) > 1 else 1

    def win(a: np.ndarray, drop: int = 0) -> np.ndarray:
        w = np.moveaxis(sliding_window_view(a, length, axis=0), -1, 1)
        w = w[s0 : s0 + (len(starts) - 1) * step + 1 : step, drop:]
        return w.reshape(w.shape[0], -1)

    pos = v["position"]
    x, y, z = pymap3d.geodetic2ecef(pos[..., 0], pos[..., 1], np.zeros(pos.shape[:2]))
    d = np.stack([x, y, z], -1)
    c = tick("geodetic -> ECEF (pymap3d, every grid cell)", c)
    spd = np.full(pres.shape, np.nan)
    spd[1:] = np.minimum(np.sqrt(((d[1:] - d[:-1]) ** 2).sum(-1)) * hz, 400.0)
    c = tick("speed (diff, norm, clamp)", c)
    trk = v["track"][..., 0]
    turn = np.full(pres.shape, np.nan)
    dt = trk[1:] - trk[:-1]
    turn[1:] = np.abs(np.clip(180.0 - np.mod(180.0 - dt, 360.0), -30.0 / hz, 30.0 / hz))
    c = tick("turn (angle_delta, abs)", c)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ws, wt = win(spd, 1), win(turn, 1)
        vr, alt = win(v["vertical_rate"][..., 0]), win(v["altitude"][..., 0])
        gs, og = win(v["groundspeed"][..., 0]), win(v["onground"][..., 0])
        c = tick("windows (copies)", c)
        _pct(ws, 90), np.nanmean(ws, axis=1)
        c = tick("reduce speed p90 + mean", c)
        cnt = (~np.isnan(spd)).sum(axis=1).astype(float)
        cnt[cnt == 0] = np.nan
        np.nanmean(win(cnt[:, None], 1), axis=1)
        c = tick("reduce entities:count mean", c)
        _pct(wt, 90)
        c = tick("reduce turn p90", c)
        np.nanstd(vr, axis=1), np.nanmin(vr, axis=1)
        c = tick("reduce climb std + min", c)
        np.nanmean(alt, axis=1), _pct(alt, 50)
        c = tick("reduce alt mean + median", c)
        np.nanmax(gs, axis=1)
        np.nansum(og > 0.5, axis=1) / (~np.isnan(og)).sum(axis=1)
        tick("reduce gs max + ground frac", c)


ROWS_NOTE = "  (not in the total: np.sort of every window's samples as rows, 3 streams)"


def floor_parts(table, starts: np.ndarray, length: int, t: dict[str, float]) -> None:
    """The least numpy work each feature needs, timed alone (its inputs prepared untimed).

    * ``ECEF trig``: ``radians``, ``sin`` and ``cos`` of the valid latitudes and longitudes
      (the closed form that the golden shards fix; the rest of the speed chain excluded);
    * ``order statistics``: for each of the three order-statistic streams (speed, turn,
      altitude), the less of one ``np.partition`` per window on its valid samples (already
      gathered) and one ``np.sort`` of the stream's valid samples (what any scheme sharing
      work between overlapping windows must at least do);
    * ``one pass per other reduce``: the cheapest NaN-skipping pass over the grid
      (``np.fmax.reduce`` per tick) for each stream of the six moment / extreme /
      fraction reduces (the engine takes per-tick partials too).

    Printed beside the floor, not in its total: numpy's sort of every window's valid samples
    laid out as rows, the three streams together (the engine's own kernel below coverage 40).
    """
    from kuration.metrics.dsl import kernels

    pos = table.values["position"]
    ok = ~np.isnan(pos[..., 0])
    lat, lon = pos[..., 0][ok], pos[..., 1][ok]
    c = time.thread_time()
    la, lo = np.radians(lat), np.radians(lon)
    np.sin(la), np.cos(la), np.sin(lo), np.cos(lo)
    t["ECEF trig (4 x sin/cos of valid samples)"] += time.thread_time() - c
    spd = kernels.geodetic_speed(pos, None, table.sample_hz, 400.0)[..., 0]
    trk = table.values["track"]
    turn = np.abs(kernels.angle_delta(trk, 360.0, 30.0, table.sample_hz))[..., 0]
    alt = table.values["altitude"][..., 0]
    for name, x, lag in (("speed", spd, 1), ("turn", turn, 1), ("altitude", alt, 0)):
        windows = []
        for s in starts:
            w = x[s + lag : s + length].reshape(-1)
            w = w[~np.isnan(w)]
            if w.size:
                k = (w.size - 1) * 9 // 10
                windows.append((w, (k, min(k + 1, w.size - 1))))
        c = time.thread_time()
        for w, k in windows:
            np.partition(w, k)
        per_window = time.thread_time() - c
        valid = x[~np.isnan(x)]
        c = time.thread_time()
        np.sort(valid)
        once = time.thread_time() - c
        label = "np.partition per window" if per_window <= once else "one np.sort of the stream"
        t[f"order statistic: {name} (the less of partition per window, one sort)"] += min(
            per_window, once
        )
        t[f"  ({name}: {label} is the less)"] += 0.0
        # what a per-window order statistic costs with numpy's own sort: every window's
        # samples as one row (+inf after them), the rows sorted (not in the floor's total)
        rows = np.full((len(windows), max((w.size for w, _ in windows), default=0)), np.inf)
        for i, (w, _) in enumerate(windows):
            rows[i, : w.size] = w
        c = time.thread_time()
        rows.sort(axis=1)
        t[ROWS_NOTE] += time.thread_time() - c
    streams = [spd, table.values["vertical_rate"][..., 0], alt, table.values["groundspeed"][..., 0]]
    streams += [table.values["onground"][..., 0], ok.astype(np.float64)]
    c = time.thread_time()
    for x in streams:
        np.fmax.reduce(x, axis=1)
    t["one NaN-skipping pass per other reduce (6 x np.fmax.reduce)"] += time.thread_time() - c


def instrument(engine: Any, spent: dict[str, float]) -> list[tuple[Any, ...]]:
    """Add the thread CPU of each compiled stage of ``engine``'s metrics (source, maps,
    reduce) to ``spent``; returns what :func:`restore` puts back."""
    from kuration.metrics.dsl.values import Op

    def timed(label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def run(*a: Any, **k: Any) -> Any:
            c0 = time.thread_time()
            try:
                return fn(*a, **k)
            finally:
                spent[label] += time.thread_time() - c0

        return run

    saved = []
    for name, m in engine.compiled.items():
        saved.append((m, m._source, m._ops, m._reduce))
        src = m.stages[0].text if m.stages else m._source_key
        object.__setattr__(m, "_source", timed(f"{name}: {src}", m._source))
        object.__setattr__(
            m, "_ops", tuple(Op(o.key, timed(f"{name}: | {o.key}", o.fn), o.window) for o in m._ops)
        )
        r = m._reduce
        ticks = None if r.ticks is None else timed(f"{name}: reduce", r.ticks)
        object.__setattr__(
            m, "_reduce", replace(r, window=timed(f"{name}: reduce", r.window), ticks=ticks)
        )
    return saved


def restore(saved: list[tuple[Any, ...]]) -> None:
    for m, s, o, r in saved:
        object.__setattr__(m, "_source", s)
        object.__setattr__(m, "_ops", o)
        object.__setattr__(m, "_reduce", r)


@contextmanager
def op_timers(engine: Any) -> Iterator[dict[str, float]]:
    """Thread CPU of each compiled stage of ``engine``'s metrics while the block runs."""
    spent: dict[str, float] = defaultdict(float)
    saved = instrument(engine, spent)
    try:
        yield spent
    finally:
        restore(saved)


@contextmanager
def pipeline_op_timers() -> Iterator[dict[str, float]]:
    """:func:`instrument` every engine the scoring step builds while the block runs."""
    from kuration.pipeline.run import scoring

    spent: dict[str, float] = defaultdict(float)
    old = scoring.strategy_engine

    def build(*a: Any, **k: Any) -> Any:
        engine = old(*a, **k)
        instrument(engine, spent)
        return engine

    scoring.strategy_engine = build
    try:
        yield spent
    finally:
        scoring.strategy_engine = old


def fixed_cost(engine: Any, table: Any, window: int, stride: int, repeat: int) -> float:
    """Best CPU seconds of one ``score_segments`` call over a table of one entity and
    ``2 * window`` ticks: what the compiled program costs whatever the data (Python, and
    numpy's per-call work), best of ``repeat`` x 50 calls."""
    from kuration import Segmenter

    busiest = int(np.argmax(table.present[: 2 * window].sum(axis=0)))
    small = table.view(0, 2 * window, busiest)
    segs = Segmenter(window, stride).segments(small.source_id, small.present)
    best = float("inf")
    for _ in range(repeat + 1):  # the first round warms up
        c0 = time.thread_time()
        for _ in range(50):
            engine.score_segments(small, segs)
        best = min(best, (time.thread_time() - c0) / 50)
    return best


ORDER_STATS = ("speed_p90", "turn_p90", "alt_median")


def engine_stage(label: str) -> str:
    """The stage of the floor's (``metrics_floor.STAGE``) that a compiled stage of the engine
    (``op_timers``' label, ``"<metric>: <stage>"``) belongs to."""
    metric, _, stage = label.partition(": ")
    if stage in ("field:position", "| speed"):
        return "speed chain"
    if stage in ("field:track", "| angle_delta", "| abs"):
        return "turn rate"
    if stage == "reduce" and metric in ORDER_STATS:
        return "order statistics"
    return "other reduces (with their fields, filter, entity count)"


def by_stage_vs_floor(
    per_op: dict[str, float], total: float, tables: list[Any], grids: list[Any], args: Any
) -> None:
    """The engine's CPU by stage beside the floor's (``metrics_floor.floor_pass``, its parts
    timed), ms a source, best of ``--repeat`` rounds of each by its total."""
    from metrics_floor import STAGE, Timer, floor_pass

    best: tuple[float, dict[str, float]] | None = None
    for _ in range(args.repeat):
        timer = Timer()
        c0 = time.thread_time()
        for t, g in zip(tables, grids, strict=True):
            floor_pass(t.values, t.sample_hz, g, args.window, timer)
        took = time.thread_time() - c0
        if best is None or took < best[0]:
            best = (took, dict(timer.spent))
    assert best is not None
    f_total, f_parts = best
    n_src = len(tables)
    eng: dict[str, float] = defaultdict(float)
    flo: dict[str, float] = defaultdict(float)
    for label, sec in per_op.items():
        eng[engine_stage(label)] += sec
    for part, sec in f_parts.items():
        flo[STAGE.get(part, "other reduces (with their fields, filter, entity count)")] += sec
    eng["outside the stages (engine) / the timers (floor)"] = total - sum(per_op.values())
    flo["outside the stages (engine) / the timers (floor)"] = f_total - sum(f_parts.values())
    print("engine and floor by stage (thread CPU ms/source; engine / floor):")
    for stage in dict.fromkeys([*eng, *flo]):
        e, f = 1e3 * eng[stage] / n_src, 1e3 * flo[stage] / n_src
        print(f"    {e:8.3f} {f:8.3f}  {e / f if f > 0 else float('nan'):6.2f}x  {stage}")
    print(
        f"    {1e3 * total / n_src:8.3f} {1e3 * f_total / n_src:8.3f}  "
        f"{total / f_total:6.2f}x  total"
    )
    for part in (k for k in f_parts if k.startswith("speed chain")):
        print(f"             {1e3 * f_parts[part] / n_src:8.3f}  (floor) {part}")
    eng_os = {m: sum(v for k, v in per_op.items() if k == f"{m}: reduce") for m in ORDER_STATS}
    print("  order statistics by feature (engine, floor):")
    for m in ORDER_STATS:
        print(f"    {1e3 * eng_os[m] / n_src:8.3f} {1e3 * f_parts[m] / n_src:8.3f}  {m}")


def metrics(args: argparse.Namespace) -> None:
    from bench_metrics import DEFINE, JOB, numpy_pass, tsfresh_runner

    from kuration import SchemaSpec, Segmenter
    from kuration.extend import FeatureEngine
    from kuration.metrics.alloc import retain_freed_memory
    from kuration.pipeline.spec.job import load_job
    from kuration.sources import adapter_from_dict
    from kuration.sources.samples import build_adsb_sources

    job, _ = load_job(JOB)
    schema = SchemaSpec.from_dict(job["schema"])
    adapter = adapter_from_dict(job["adapter"], schema)
    with tempfile.TemporaryDirectory(prefix="perf-profile-metrics-") as tmp:
        tables = [adapter.read_table(str(p)) for p in build_adsb_sources(tmp, slice_minutes=15)]
    seg = Segmenter(args.window, args.stride)
    segs = [seg.segments(t.source_id, t.present) for t in tables]
    grids = [seg.starts(t.n_steps) for t in tables]
    n_src, n_win = len(tables), sum(len(s) for s in segs)
    cells = sum(t.present.size for t in tables)
    rows = sum(int(t.present.sum()) for t in tables)
    engine = FeatureEngine(DEFINE, schema)
    retain_freed_memory()
    print(
        f"metrics: stride {args.stride}, window {args.window}: {n_src} sources, {n_win} windows, "
        f"{rows} present samples in {cells} grid cells (ticks x entities); {load()} at start"
    )

    def run_engine() -> None:
        for t, s in zip(tables, segs, strict=True):
            engine.score_segments(t, s)

    run_engine()  # warm
    run_ts, n_ts = tsfresh_runner(tables, grids, args.window, args.tsfresh_windows)
    best: dict[str, float] = defaultdict(lambda: float("inf"))
    for _ in range(args.repeat):  # interleaved, best CPU of each
        for name, fn in (
            ("kuration", run_engine),
            (
                "numpy",
                lambda: [numpy_pass(t, g, args.window) for t, g in zip(tables, grids, strict=True)],
            ),
            ("tsfresh", run_ts),
        ):
            c0 = time.thread_time()
            fn()
            best[name] = min(best[name], time.thread_time() - c0)
    ms = {k: 1e3 * v / n_src for k, v in best.items()}
    print(f"best of {args.repeat} interleaved rounds by CPU; {load()} after")
    print(
        f"  kuration : {ms['kuration']:8.2f} ms/source  {1e6 * best['kuration'] / n_win:8.2f} us/window"
    )
    print(
        f"  numpy    : {ms['numpy']:8.2f} ms/source  {1e6 * best['numpy'] / n_win:8.2f} us/window"
    )
    print(f"  tsfresh  : {1e6 * best['tsfresh'] / n_ts:8.2f} us/window ({n_ts} windows)")
    ratio = (n_win / best["kuration"]) / (n_ts / best["tsfresh"])
    print(
        f"  kuration / tsfresh (CPU) = {ratio:.1f}x; numpy / kuration = "
        f"{best['kuration'] / best['numpy']:.2f}x"
    )

    # per stage, best of --repeat by the total
    per_op: dict[str, float] | None = None
    for _ in range(args.repeat):
        with op_timers(engine) as spent:
            c0 = time.thread_time()
            run_engine()
            total = time.thread_time() - c0
        if per_op is None or total < per_op["_total"]:
            per_op = {**spent, "_total": total}
    assert per_op is not None
    total = per_op.pop("_total")
    print("kuration by compiled stage (first metric to compute a shared stage pays), ms/source:")
    for k, v in sorted(per_op.items(), key=lambda kv: -kv[1]):
        print(f"    {1e3 * v / n_src:8.3f}  {k}")
    print(f"    {1e3 * (total - sum(per_op.values())) / n_src:8.3f}  (engine outside the stages)")
    by_stage_vs_floor(per_op, total, tables, grids, args)
    fixed = fixed_cost(engine, tables[0], args.window, args.stride, args.repeat)
    print(
        f"    {1e3 * fixed:8.3f}  fixed cost: the same program on one entity's first "
        f"{2 * args.window} ticks (the calls, not the data)"
    )
    np_parts: dict[str, float] | None = None
    for _ in range(args.repeat):
        got: dict[str, float] = defaultdict(float)
        for t, g in zip(tables, grids, strict=True):
            numpy_parts(t, g, args.window, got)
        if np_parts is None or sum(got.values()) < sum(np_parts.values()):
            np_parts = dict(got)
    assert np_parts is not None
    print("the hand-written numpy pass by part, ms/source:")
    for k, v in np_parts.items():
        print(f"    {1e3 * v / n_src:8.3f}  {k}")
    floor: dict[str, float] | None = None
    for _ in range(args.repeat):
        got = defaultdict(float)
        for t, g in zip(tables, grids, strict=True):
            floor_parts(t, g, args.window, got)
        if floor is None or sum(got.values()) < sum(floor.values()):
            floor = dict(got)  # (the rows note counts in the choice of the best round only)
    assert floor is not None
    print("the floor: the least numpy work per feature (floor_parts), ms/source:")
    for k, v in floor.items():
        print(f"    {1e3 * v / n_src:8.3f}  {k}")
    fsum = sum(v for k, v in floor.items() if k != ROWS_NOTE)
    per_win_ts = best["tsfresh"] / n_ts
    print(
        f"    {1e3 * fsum / n_src:8.3f}  floor total = {(n_win / fsum) * per_win_ts:.1f}x tsfresh "
        f"(kuration now {(n_win / best['kuration']) * per_win_ts:.1f}x)"
    )
    for target in (20, 50):
        need = n_win * per_win_ts / target
        print(f"    {target}x tsfresh needs <= {1e3 * need / n_src:.3f} ms/source")
    if args.no_cprofile:
        return
    with thread_profiles() as profs:
        run_engine()
    print("cProfile of one engine pass (profiler overhead inflates small calls):")
    print_top(profs, n_src, "source", args.top)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    e = sub.add_parser("e2e")
    e.add_argument("--sources", type=int, default=384)
    m = sub.add_parser("metrics")
    m.add_argument("--window", type=int, default=120)
    m.add_argument("--stride", type=int, default=60)
    m.add_argument("--tsfresh-windows", type=int, default=120)
    for p in (e, m):
        p.add_argument("--repeat", type=int, default=2)
        p.add_argument("--top", type=int, default=20)
        p.add_argument("--no-cprofile", action="store_true")
    args = ap.parse_args()
    e2e(args) if args.what == "e2e" else metrics(args)


if __name__ == "__main__":
    main()
