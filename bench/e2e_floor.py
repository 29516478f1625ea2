"""The floor of ``bench_e2e.py``'s job: the least work a ``kur run`` of it must do, no framework.

Used by ``bench_e2e.py --floor`` (and runnable alone)::

    .venv/bin/python bench/e2e_floor.py --sources 96

What a run of the quickstart job cannot avoid, written straight against the libraries
``kur run`` uses and timed as one pass over the corpus:

1. each source read once into memory, its SHA-256 taken over those bytes and the
   Parquet decoded from the same buffer (``ParquetFile(BufferReader).read`` of the job's
   columns on one thread, the ids dictionary-encoded as ``kur run`` reads them; a
   ``pq.read_table`` of a buffer goes through the dataset layer and costs 3x more), rows
   ordered by (entity, tick) and
   laid onto a dense ``ticks x entities`` grid (the first row of each cell);
2. the job's seven features per track window (120 s, stride 60 s, windows where the
   entity is present) with the compiled kernels called directly
   (:mod:`kuration.metrics.dsl.kernels` for speed, heading and the wrapped angle steps on
   the grid, shared ECEF pairs; :mod:`kuration.metrics.dsl.reduces` for p90, max, std
   and mean over the windows gathered as ``(G, 120, 1, 1)``);
3. the selection: the two filters, quantile bins over two axes, the uniform-bins
   priorities (rank within the joint bin plus a seeded tiebreak), 300 s spans ranked by
   their windows' mean priority, sources split 80/20, spans admitted until 4 h / 1 h;
4. the admitted spans written as the job's shards are (``npz`` of 128 steps, padded,
   the job's seven modalities plus ``_present``, ``_n_steps``, ``_time_s``,
   ``_entity``: ``np.savez`` to bytes, SHA-256 of the bytes, a temporary file then
   ``os.replace``), then the manifest's JSON and its SHA-256.

With ``reread=True`` the grids are not kept between the passes: each admitted source is
read, hashed and laid out again before its shards are written (what ``kur run`` does to
stay inside its memory budget at scale).  Not counted: validation (null, range and
off-grid checks, duplicates and collision policies), warnings, checkpoints, telemetry,
config.json's reports and the fsyncs; their cost is part of what ``kur run`` pays above
this floor.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from numpy.lib.stride_tricks import sliding_window_view

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

HZ = 1.0
WINDOW, STRIDE, SPAN, SHARD, MIN_TRACK = 120, 60, 300, 128, 120
BUDGET = {"train": 4 * 3600, "test": 1 * 3600}
FIELDS = {  # the job's adapter: field -> columns
    "position": ["latitude", "longitude"],
    "altitude": ["altitude"],
    "groundspeed": ["groundspeed"],
    "track": ["track"],
    "vertical_rate": ["vertical_rate"],
    "onground": ["onground"],
}
OUT_DTYPE = {"altitude": np.float32, "groundspeed": np.float32, "track": np.float32}
OUT_DTYPE |= {"vertical_rate": np.float32, "onground": np.uint8, "position": np.float64}
COLUMNS = ["timestamp", "icao24", *(c for cols in FIELDS.values() for c in cols)]


@dataclass
class Grid:
    """One source on its tick grid: values (T, E, D) per field, presence (T, E)."""

    k0: int
    ids: list[str]
    values: dict[str, np.ndarray]
    present: np.ndarray


def read_grid(path: Path) -> tuple[Grid, str]:
    """One read: the bytes, their SHA-256, the decode from that buffer, the grid."""
    buf = path.read_bytes()
    digest = hashlib.sha256(buf).hexdigest()
    pf = pq.ParquetFile(pa.BufferReader(buf), read_dictionary=["icao24"])
    tbl = pf.read(columns=COLUMNS, use_threads=False)
    enc = tbl.column("icao24").unify_dictionaries().combine_chunks()
    ids = enc.dictionary.to_pylist()
    codes = enc.indices.to_numpy()
    k = np.rint(tbl.column("timestamp").to_numpy() * (1e-3 * HZ)).astype(np.int64)
    order = np.lexsort((k, codes))
    c_o, k_o = codes[order], k[order]
    first = np.r_[True, (c_o[1:] != c_o[:-1]) | (k_o[1:] != k_o[:-1])]
    rows, c_o, k_o = order[first], c_o[first], k_o[first]
    k0 = int(k_o.min())
    n_t, n_e = int(k_o.max()) - k0 + 1, len(ids)
    cell = (k_o - k0) * n_e + c_o
    present = np.zeros(n_t * n_e, dtype=bool)
    present[cell] = True
    values = {}
    for name, cols in FIELDS.items():
        arr = np.full((n_t * n_e, len(cols)), np.nan)
        for j, c in enumerate(cols):
            arr[cell, j] = tbl.column(c).to_numpy(zero_copy_only=False)[rows]
        values[name] = arr.reshape(n_t, n_e, len(cols))
    return Grid(k0, ids, values, present.reshape(n_t, n_e)), digest


def window_features(g: Grid) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """The occupied (window start, entity) pairs and the seven features of each, (G,)."""
    from kuration.metrics.dsl import kernels, reduces

    n_t, n_e = g.present.shape
    starts = np.arange(0, n_t - WINDOW + 1, STRIDE)
    if starts.size == 0:
        return starts, starts, {}
    csum = np.concatenate([np.zeros((1, n_e), np.int64), np.cumsum(g.present, 0)])
    occ = (csum[starts + WINDOW] - csum[starts]) > 0  # (W, E)
    w_idx, e_idx = np.nonzero(occ)
    pos = g.values["position"]
    pairs = kernels.geodetic_pairs(pos, None)
    spd = kernels.geodetic_speed(pos, None, HZ, 400.0, pairs)
    head = kernels.geodetic_heading(pairs) if pairs is not None else kernels.heading(pos, pos)
    turn = np.abs(kernels.angle_delta(g.values["track"], 360.0, 30.0, HZ))
    rev = np.abs(kernels.angle_delta(head, 360.0, None, HZ))
    cnt = np.where(np.isnan(spd), np.nan, 1.0)

    def win(x: np.ndarray, drop: int = 0) -> np.ndarray:  # (T, E, 1) -> (G, WINDOW - drop, 1, 1)
        view = sliding_window_view(x[..., 0], WINDOW, axis=0)  # (T - W + 1, E, WINDOW)
        return view[starts[w_idx], e_idx, drop:][:, :, None, None]

    # a window leaves out the ticks its maps looked back over (as the engine does):
    # one for a step (speed, the track's turn), two for the heading's turn
    s_w = win(spd, 1)
    srt, n = reduces.sorted_values(s_w)
    t_srt, t_n = reduces.sorted_values(win(turn, 1))
    feats = {
        "speed_p90": reduces.percentile(srt, n, 90.0),
        "speed_max": reduces.extreme(s_w, "max"),
        "turn_p90": reduces.percentile(t_srt, t_n, 90.0),
        "climb_std": reduces.std(win(g.values["vertical_rate"])),
        "aircraft_mean": reduces.mean(win(cnt, 1)),
        "altitude_mean": reduces.mean(win(g.values["altitude"])),
        "reversal": reduces.extreme(win(rev, 2), "max"),
    }
    return starts[w_idx], e_idx, feats


def select(pool: list[tuple[int, np.ndarray, np.ndarray, dict[str, np.ndarray]]], seed: int = 0):
    """Filters, quantile bins, uniform-bins priorities, 300 s spans, the budget fill.
    Returns ``{split: [(source index, entity, first step, n steps, turn_p90)]}``."""
    src = np.concatenate([np.full(s.size, i) for i, s, _, _ in pool])
    start = np.concatenate([s for _, s, _, _ in pool])
    ent = np.concatenate([e for _, _, e, _ in pool])
    f = {k: np.concatenate([p[3][k] for p in pool]) for k in pool[0][3]}
    keep = (f["speed_max"] < 399.0) & (f["reversal"] < 150.0)
    keep &= np.isfinite(f["turn_p90"]) & np.isfinite(f["climb_std"])
    cells = []
    for ax in ("turn_p90", "climb_std"):
        edges = np.unique(np.quantile(f[ax][keep], [0.25, 0.5, 0.75]))
        cells.append(np.searchsorted(edges, f[ax], side="left"))
    cell = cells[0] * 8 + cells[1]
    rng = np.random.default_rng(seed)
    key, tie = rng.random(src.size), rng.random(src.size)
    order = np.lexsort((key, cell))
    run = np.r_[True, cell[order][1:] != cell[order][:-1]]
    run_start = np.maximum.accumulate(np.where(run, np.arange(src.size), 0))
    rank = np.empty(src.size)
    rank[order] = np.arange(src.size) - run_start
    prio = np.where(keep, -(rank + tie), -np.inf)
    # spans: (source, entity, start // SPAN), priority = mean over their windows
    span = start // SPAN
    uid, inv = np.unique(np.stack([src, ent, span]), axis=1, return_inverse=True)
    inv = inv.reshape(-1)
    ok = np.isfinite(prio)
    tot = np.bincount(inv, np.where(ok, prio, 0.0), uid.shape[1])
    num = np.bincount(inv, ok, uid.shape[1])
    fin = np.bincount(inv, ~ok, uid.shape[1]) == 0
    sp_prio = np.where((num > 0) & fin, tot / np.maximum(num, 1), -np.inf)
    turn_mean = np.bincount(inv, np.nan_to_num(f["turn_p90"]), uid.shape[1]) / np.bincount(
        inv, minlength=uid.shape[1]
    )
    n_src = len(pool)
    split_of = np.where(np.random.default_rng(seed + 1).random(n_src) < 0.2, 1, 0)
    admitted: dict[str, list[tuple[int, int, int, int, float]]] = {"train": [], "test": []}
    left = dict(BUDGET)
    for j in np.argsort(-sp_prio, kind="stable").tolist():
        if not np.isfinite(sp_prio[j]):
            break
        s, e, sp = (int(v) for v in uid[:, j])
        name = ("train", "test")[split_of[s]]
        if left[name] < SPAN:
            if left["train"] < SPAN and left["test"] < SPAN:
                break
            continue
        left[name] -= SPAN
        admitted[name].append((s, e, sp * SPAN, SPAN, float(turn_mean[j])))
    return admitted


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **dict(sorted(arrays.items())))
    return buf.getvalue()


def write_spans(g: Grid, spans: list[tuple], split: str, out: Path, sid: str) -> list[dict]:
    """Each admitted span cut into padded 128-step npz shards, hashed, written atomically."""
    entries = []
    n_t = g.present.shape[0]
    for _, e, first, n_steps, turn in spans:
        stop = min(first + n_steps, n_t)
        for a in range(first, stop, SHARD):
            b = min(a + SHARD, stop)
            pad = SHARD - (b - a)
            chunk = {}
            for name, dt in OUT_DTYPE.items():
                v = g.values[name][a:b, e]
                v = v if v.shape[-1] > 1 else v[:, 0]
                chunk[name] = np.pad(
                    np.nan_to_num(v).astype(dt), [(0, pad)] + [(0, 0)] * (v.ndim - 1)
                )
            chunk["turn_p90"] = np.full(SHARD, turn, dtype=np.float32)
            chunk["_present"] = np.pad(g.present[a:b, e], (0, pad))
            chunk["_n_steps"] = np.array(b - a, dtype=np.int64)
            t = (g.k0 + np.arange(a, a + SHARD)) / HZ
            t[b - a :] = np.nan
            chunk["_time_s"] = t
            chunk["_entity"] = np.array(f"str:{g.ids[e]}")
            data = npz_bytes(chunk)
            rel = f"{split}/{sid}-{e}-{a}.npz"
            tmp = out / (rel + ".tmp")
            tmp.write_bytes(data)
            os.replace(tmp, out / rel)
            entries.append(
                {"path": rel, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
            )
    return entries


def floor_run(files: list[Path], out: Path, *, reread: bool = False) -> dict[str, Any]:
    """One floor run of the job over ``files`` into ``out`` (emptied first)."""
    shutil.rmtree(out, ignore_errors=True)
    for split in BUDGET:
        (out / split).mkdir(parents=True)
    grids: list[Grid | None] = []
    digests, pool = [], []
    for i, f in enumerate(files):
        g, d = read_grid(f)
        digests.append(d)
        starts, ents, feats = window_features(g)
        if feats:
            pool.append((i, starts, ents, feats))
        grids.append(None if reread else g)
    admitted = select(pool)
    entries = []
    for split, spans in admitted.items():
        by_src: dict[int, list[tuple]] = {}
        for sp in spans:
            by_src.setdefault(sp[0], []).append(sp)
        for s, sps in sorted(by_src.items()):
            g = grids[s] or read_grid(files[s])[0]
            entries += write_spans(g, sps, split, out, files[s].stem)
    manifest = json.dumps({"sources": digests, "shards": entries}, sort_keys=True).encode()
    (out / "manifest.json").write_bytes(manifest)
    return {"shards": len(entries), "manifest_sha256": hashlib.sha256(manifest).hexdigest()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sources", type=int, default=96)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from corpus import build_corpus

    with tempfile.TemporaryDirectory(prefix="bench-floor-") as tmp:
        files = build_corpus(Path(tmp) / "corpus", args.sources)
        best: dict[str, float] = {}
        for _ in range(args.repeat):
            for name, fn in (
                ("pyarrow", lambda: [pq.read_table(f, use_threads=False) for f in files]),
                ("floor", lambda: floor_run(files, Path(tmp) / "out")),
                ("floor+reread", lambda: floor_run(files, Path(tmp) / "out", reread=True)),
            ):
                c0 = time.process_time()
                fn()
                best[name] = min(best.get(name, np.inf), time.process_time() - c0)
    n = len(files)
    for name, sec in best.items():
        print(
            f"{name:<14s} {1e3 * sec / n:7.3f} CPU ms a source  ratio {best['pyarrow'] / sec:.3f}x"
        )


if __name__ == "__main__":
    main()
