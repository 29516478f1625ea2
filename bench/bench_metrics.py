"""Benchmark the batched metric engine on real windows: windows per second of a 10-metric strategy.

Run on demand (not part of the test suite)::

    .venv/bin/python bench/bench_metrics.py                 # 120-tick windows, stride 10
    .venv/bin/python bench/bench_metrics.py --stride 60 --tsfresh-windows 60
    .venv/bin/python bench/bench_metrics.py --stride 60 10 1 --record   # ratios into bench/results.json

Data: the ADS-B quickstart sample (``kuration.sources.samples.build_adsb_sources``:
12 sources of 15 min at 1 Hz, ~30-60 aircraft each), read into TickTables
before timing.  Four contenders evaluate the same windows:

* ``kuration``: ``FeatureEngine.score_segments`` (the batched path) on the
  10-metric strategy below, timings include every derived series (geodetic
  speed, wrapped turn rate) and all reduces;
* ``floor``: the same 10 features with the engine's kernels called directly, no engine
  (``bench/metrics_floor.py``); its values must equal the engine's bit for bit, and
  ``kuration / floor`` is what the engine costs above its kernels;
* ``numpy``: a hand-written numpy pass over the same arrays computing the same
  10 numbers per window (a reference written without the engine's kernels; its
  results are checked against the engine's to 1e-9);
* ``tsfresh``: ``extract_features`` with ``MinimalFCParameters`` on the same
  windows, one series per (window, quantity), fed the already-derived speed and
  turn series (which favours tsfresh), single process (``n_jobs=0``), on a
  subset of windows because it is slow.

The contenders take turns in each of ``--repeat`` rounds and the best time of
each counts, so a busy machine slows them alike.  Each stride given to ``--stride`` gets
its own rounds.

Targets (issues 15 and 28): kuration >= 20x tsfresh's windows/s at stride 60 and >= 50x
at strides 10 and 1, and never more than 10% slower than the numpy pass (numpy / kuration
<= 1.1).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pymap3d
from numpy.lib.stride_tricks import sliding_window_view

from kuration import SchemaSpec, Segmenter
from kuration.extend import FeatureEngine, build_window
from kuration.metrics.alloc import retain_freed_memory
from kuration.pipeline.spec.job import load_job
from kuration.sources import adapter_from_dict
from kuration.sources.samples import build_adsb_sources

sys.path.insert(0, str(Path(__file__).resolve().parent))
from metrics_floor import floor_pass

ROOT = Path(__file__).resolve().parents[1]
JOB = ROOT / "examples" / "adsb_quickstart" / "job.json"

DEFINE = {
    "speed_p90": "field:position | speed | p90",
    "speed_mean": "field:position | speed | mean",
    "aircraft_mean": "field:position | speed | entities:count | mean",
    "turn_p90": "field:track | angle_delta | abs | p90",
    "climb_std": "field:vertical_rate | std",
    "climb_min": "field:vertical_rate | min",
    "alt_mean": "field:altitude | mean",
    "alt_median": "field:altitude | median",
    "gs_max": "field:groundspeed | max",
    "ground_frac": "field:onground | where:>0.5 | frac",
}


# -- the hand-written numpy lower bound ---------------------------------------------------


def _pct(flat: np.ndarray, q: float) -> np.ndarray:
    """numpy 'linear' percentile of each row, NaN ignored (sort-based, vectorized)."""
    srt = np.sort(flat, axis=1)
    n = (~np.isnan(srt)).sum(axis=1)
    out = np.full(flat.shape[0], np.nan)
    ok = n > 0
    vi = (n[ok] - 1) * (q / 100.0)
    lo = np.floor(vi).astype(np.intp)
    hi = np.minimum(lo + 1, n[ok] - 1)
    rows = np.flatnonzero(ok)
    a, b = srt[rows, lo], srt[rows, hi]
    g = vi - lo
    out[ok] = np.where(g >= 0.5, b - (b - a) * (1 - g), a + (b - a) * g)
    return out


def numpy_pass(table, starts: np.ndarray, length: int) -> dict[str, np.ndarray]:
    hz = table.sample_hz
    pres = table.present
    v = {k: np.where(pres[..., None], a, np.nan) for k, a in table.values.items()}
    s0, step = int(starts[0]), int(starts[1] - starts[0]) if len(starts) > 1 else 1

    def win(a: np.ndarray, drop: int = 0) -> np.ndarray:
        w = np.moveaxis(sliding_window_view(a, length, axis=0), -1, 1)
        w = w[s0 : s0 + (len(starts) - 1) * step + 1 : step, drop:]
        return w.reshape(w.shape[0], -1)

    pos = v["position"]
    x, y, z = pymap3d.geodetic2ecef(pos[..., 0], pos[..., 1], np.zeros(pos.shape[:2]))
    d = np.stack([x, y, z], -1)
    spd = np.full(pres.shape, np.nan)
    spd[1:] = np.minimum(np.sqrt(((d[1:] - d[:-1]) ** 2).sum(-1)) * hz, 400.0)
    trk = v["track"][..., 0]
    turn = np.full(pres.shape, np.nan)
    dt = trk[1:] - trk[:-1]
    turn[1:] = np.abs(np.clip(180.0 - np.mod(180.0 - dt, 360.0), -30.0 / hz, 30.0 / hz))
    ws, wt = win(spd, 1), win(turn, 1)
    vr, alt = win(v["vertical_rate"][..., 0]), win(v["altitude"][..., 0])
    gs, og = win(v["groundspeed"][..., 0]), win(v["onground"][..., 0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN windows give NaN
        cnt = (~np.isnan(spd)).sum(axis=1).astype(float)
        cnt[cnt == 0] = np.nan
        out = {
            "speed_p90": _pct(ws, 90),
            "speed_mean": np.nanmean(ws, axis=1),
            "aircraft_mean": np.nanmean(win(cnt[:, None], 1), axis=1),
            "turn_p90": _pct(wt, 90),
            "climb_std": np.nanstd(vr, axis=1),
            "climb_min": np.nanmin(vr, axis=1),
            "alt_mean": np.nanmean(alt, axis=1),
            "alt_median": _pct(alt, 50),
            "gs_max": np.nanmax(gs, axis=1),
            "ground_frac": np.nansum(og > 0.5, axis=1) / (~np.isnan(og)).sum(axis=1),
        }
    return out


# -- tsfresh -----------------------------------------------------------------------------


def tsfresh_frame(table, starts: np.ndarray, length: int):
    """Long-format frame: one series per (window, quantity), entity samples in tick order."""
    import pandas as pd

    hz = table.sample_hz
    pres = table.present
    v = {k: np.where(pres[..., None], a, np.nan)[..., 0] for k, a in table.values.items()}
    pos = np.where(pres[..., None], table.values["position"], np.nan)
    x, y, z = pymap3d.geodetic2ecef(pos[..., 0], pos[..., 1], np.zeros(pres.shape))
    d = np.stack([x, y, z], -1)
    spd = np.full(pres.shape, np.nan)
    spd[1:] = np.minimum(np.sqrt(((d[1:] - d[:-1]) ** 2).sum(-1)) * hz, 400.0)
    series = {
        "speed": spd,
        "vertical_rate": v["vertical_rate"],
        "altitude": v["altitude"],
        "groundspeed": v["groundspeed"],
        "onground": v["onground"],
        "track": v["track"],
    }
    frames = []
    for i, s in enumerate(starts):
        for kind, a in series.items():
            w = a[s : s + length].reshape(-1)
            ok = ~np.isnan(w)
            frames.append(
                pd.DataFrame({"id": i, "time": np.flatnonzero(ok), "kind": kind, "value": w[ok]})
            )
    return pd.concat(frames, ignore_index=True)


def tsfresh_runner(tables, starts_by_table, length: int, n_windows: int):
    """A zero-argument function running ``extract_features`` on the first ``n_windows``
    windows (frame built beforehand, not timed), and that window count."""
    import pandas as pd
    from tsfresh import extract_features
    from tsfresh.feature_extraction import MinimalFCParameters

    parts, done = [], 0
    for t, starts in zip(tables, starts_by_table, strict=True):
        take = starts[: max(0, n_windows - done)]
        if take.size:
            f = tsfresh_frame(t, take, length)
            f["id"] += done
            parts.append(f)
            done += take.size
    frame = pd.concat(parts, ignore_index=True)

    def run() -> None:
        extract_features(
            frame,
            column_id="id",
            column_sort="time",
            column_kind="kind",
            column_value="value",
            default_fc_parameters=MinimalFCParameters(),
            n_jobs=0,
            disable_progressbar=True,
        )

    return run, done


# -- main --------------------------------------------------------------------------------


CPU: dict[str, float] = {}  # best CPU seconds of each contender (interleaved_best fills it)


def interleaved_best(fns: dict, repeat: int) -> dict[str, float]:
    """Best wall time of each function over ``repeat`` rounds, the contenders taking turns
    within a round so that a busy machine slows them alike (best CPU time into :data:`CPU`)."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeat):
        for name, fn in fns.items():
            t0, c0 = time.perf_counter(), time.process_time()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
            CPU[name] = min(CPU.get(name, float("inf")), time.process_time() - c0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--window", type=int, default=120)
    ap.add_argument("--stride", type=int, nargs="+", default=[10], help="one or more strides")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tsfresh-windows", type=int, default=120)
    ap.add_argument("--per-window", action="store_true", help="also time score_window per window")
    ap.add_argument(
        "--record",
        action="store_true",
        help="store the ratios in bench/results.json (strides 60, 10 and 1, the issues' targets)",
    )
    args = ap.parse_args()
    if args.record and not set(args.stride) <= {60, 10, 1}:
        raise SystemExit("bench_metrics: error: --record is for --stride 60, 10 or 1")

    job, _ = load_job(JOB)
    schema = SchemaSpec.from_dict(job["schema"])
    adapter = adapter_from_dict(job["adapter"], schema)
    with tempfile.TemporaryDirectory() as tmp:
        tables = [adapter.read_table(str(p)) for p in build_adsb_sources(tmp, slice_minutes=15)]
    engine = FeatureEngine(DEFINE, schema)
    # as the pipeline's batched pass does before scoring whole sources (all contenders
    # run in this process, so the numpy pass and tsfresh get the same allocator)
    retain_freed_memory()
    for stride in args.stride:
        measure_stride(args, stride, tables, engine)


def measure_stride(
    args: argparse.Namespace, stride: int, tables: list[Any], engine: FeatureEngine
) -> None:
    """The interleaved rounds at one stride, their report and (``--record``) their row."""
    CPU.clear()
    seg = Segmenter(args.window, stride)
    segs_by_table = [seg.segments(t.source_id, t.present) for t in tables]
    grid_by_table = [seg.starts(t.n_steps) for t in tables]
    n_windows = sum(len(s) for s in segs_by_table)

    def run_engine() -> None:
        for t, segs in zip(tables, segs_by_table, strict=True):
            engine.score_segments(t, segs)

    def run_numpy() -> list[dict[str, np.ndarray]]:
        return [numpy_pass(t, g, args.window) for t, g in zip(tables, grid_by_table, strict=True)]

    def run_floor() -> list[dict[str, np.ndarray]]:
        return [
            floor_pass(t.values, t.sample_hz, g, args.window)
            for t, g in zip(tables, grid_by_table, strict=True)
        ]

    # the lower bound computes the same numbers; the floor the same bits
    run_engine()
    ref, flo = run_numpy(), run_floor()
    for segs, g, r, f in zip(segs_by_table, grid_by_table, ref, flo, strict=True):
        idx = np.searchsorted(g, [s.start_idx for s in segs])
        for k in DEFINE:
            got = np.array([s.features[k] for s in segs])
            np.testing.assert_allclose(got, r[k][idx], rtol=1e-9, equal_nan=True, err_msg=k)
            np.testing.assert_array_equal(got, f[k][idx], err_msg=f"floor {k}")

    run_ts, n_ts = tsfresh_runner(tables, grid_by_table, args.window, args.tsfresh_windows)
    best = interleaved_best(
        {"kuration": run_engine, "floor": run_floor, "numpy": run_numpy, "tsfresh": run_ts},
        args.repeat,
    )
    wps = {k: n_windows / best[k] for k in ("kuration", "floor", "numpy")}
    wps_ts = n_ts / best["tsfresh"]
    print(
        f"windows: {n_windows} of {args.window} ticks, stride {stride}, "
        f"{len(tables)} sources, {len(DEFINE)} metrics; best of {args.repeat} interleaved rounds; "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    for name, label in (
        ("kuration", "kuration batched  "),
        ("floor", "floor (kernels)   "),
        ("numpy", "numpy hand-written"),
    ):
        print(
            f"{label}: {wps[name]:10.1f} windows/s  ({best[name] * 1e3:.1f} ms, "
            f"CPU {CPU[name] * 1e3:.1f} ms)"
        )
    print(
        f"tsfresh minimal   : {wps_ts:10.1f} windows/s  "
        f"({n_ts} windows in {best['tsfresh'] * 1e3:.1f} ms, CPU {CPU['tsfresh'] * 1e3:.1f} ms)"
    )
    if args.per_window:

        def run_slow() -> None:
            for t, segs in zip(tables, segs_by_table, strict=True):
                for s in segs:
                    engine.score_window(build_window(t, s.start_idx, s.end_idx))

        t_slow = interleaved_best({"slow": run_slow}, 1)["slow"]
        print(f"kuration per-window: {n_windows / t_slow:9.1f} windows/s")
    target = {60: 20}.get(stride, 50)
    print(
        f"kuration / tsfresh = {wps['kuration'] / wps_ts:.1f}x   (target >= 20x at stride 60, 50x "
        "at 10 and 1)"
    )
    print(f"numpy / kuration   = {wps['numpy'] / wps['kuration']:.2f}x   (target <= 1.1x)")
    # the same ratios from CPU seconds: steadier than wall time on a shared machine
    per_ts = CPU["tsfresh"] / n_ts  # CPU seconds a tsfresh window
    cpu_ts = per_ts * n_windows / CPU["kuration"]
    cpu_np = CPU["kuration"] / CPU["numpy"]
    floor_ts = per_ts * n_windows / CPU["floor"]
    over_floor = CPU["kuration"] / CPU["floor"]
    print(f"by CPU time: kuration / tsfresh = {cpu_ts:.1f}x, numpy / kuration = {cpu_np:.2f}x")
    print(
        f"by CPU time: floor / tsfresh = {floor_ts:.1f}x, kuration / floor = {over_floor:.2f}x "
        f"(the engine's CPU over the floor's); {target}x tsfresh allows "
        f"{1e3 * per_ts * n_windows / target / len(tables):.2f} ms a source, the floor takes "
        f"{1e3 * CPU['floor'] / len(tables):.2f}, the engine {1e3 * CPU['kuration'] / len(tables):.2f}"
    )
    if args.record:
        record_ratios(
            stride,
            (wps["kuration"] / wps_ts, cpu_ts),
            (wps["numpy"] / wps["kuration"], cpu_np),
            (floor_ts, over_floor),
        )


def record_ratios(
    stride: int,
    vs_tsfresh: tuple[float, float],
    numpy_over: tuple[float, float],
    floor: tuple[float, float],
) -> None:
    """The ``metrics-stride-<stride>`` row of bench/results.json (strides 60, 10 and 1): each
    ratio by wall time, then by CPU time; the floor's ratios by CPU time."""
    from perf_table import record

    target = {60: 20, 10: 50, 1: 50}[stride]
    record(
        [
            {
                "id": f"metrics-stride-{stride}",
                "benchmark": f"`bench_metrics.py --stride {stride}`: kuration / tsfresh; "
                "numpy pass / kuration (wall, CPU); floor / tsfresh, kuration / floor (CPU)",
                "measured": f"{vs_tsfresh[0]:.1f}x (CPU {vs_tsfresh[1]:.1f}x); "
                f"{numpy_over[0]:.2f}x (CPU {numpy_over[1]:.2f}x); "
                f"floor {floor[0]:.1f}x, {floor[1]:.2f}x",
                "goal": f">= {target}x; <= 1.1x",
            }
        ]
    )


if __name__ == "__main__":
    main()
