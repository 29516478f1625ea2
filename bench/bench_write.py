"""Benchmark shard writing: MB/s of array payload per container, against plain ``np.savez``.

Run on demand (not part of the test suite)::

    .venv/bin/python bench/bench_write.py            # 400 tracks x 1,024 steps
    .venv/bin/python bench/bench_write.py --small    # 50 tracks, for a quick check
    .venv/bin/python bench/bench_write.py --frames   # add a (16, 16, 3) uint8 tensor per step
    .venv/bin/python bench/bench_write.py --record   # store the goal ratios for the README
    .venv/bin/python bench/bench_write.py --containers npz parquet   # only these

Three figures per container, all over the same arrays and in the same run:

* ``writer``: :class:`kuration.extend.ShardWriter` end to end -- modality routing,
  zero-fill, chunking and padding, encoding, SHA-256, temp file + ``os.replace``;
* ``container``: only ``dumps`` + SHA-256 + the atomic write of chunks prepared beforehand;
* ``np.savez``: ``numpy.savez`` of those same prepared chunks to plain files;
* ``pq.write_table``: for the parquet container, ``pyarrow.parquet.write_table`` of those
  same chunks (each array a column, a tensor a fixed-size list; snappy, the default) to
  plain files -- the parquet rows compare against it as well as against ``np.savez``.

Issue 15, goal 5: the npz writer and container at least 0.8x ``np.savez``, the parquet
writer and container at least 0.8x ``pq.write_table``; the last lines print those ratios.

MB/s is payload (the arrays' ``nbytes``, 1 MB = 1e6 bytes) over wall time, best of
``--repeat`` rounds; each round runs every candidate once, in turn, so a change in the
machine's load reaches them alike.  ``--root /dev/shm/...`` (tmpfs) takes the disk out.  ``fsync`` is the extra time to make every shard durable
(what ``write_dataset(durable=True)`` adds before publishing the manifest).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from kuration import OutputSpec, SchemaSpec, Track
from kuration.extend import ShardWriter, get_container
from kuration.output.commit import fsync_paths
from kuration.output.writer import write_bytes_atomic

CONTAINERS = ("npz", "json", "hdf5", "parquet")


def make_tracks(n_tracks: int, steps: int, frames: bool) -> tuple[SchemaSpec, list[Track]]:
    fields = [
        {"name": "position", "kind": "vector", "dims": 2},
        {"name": "altitude", "kind": "scalar"},
        {"name": "groundspeed", "kind": "scalar"},
        {"name": "track", "kind": "scalar"},
        {"name": "vertical_rate", "kind": "scalar"},
        {"name": "onground", "kind": "scalar"},
    ]
    if frames:
        fields.append({"name": "frame", "kind": "vector", "dims": 16 * 16 * 3})
    schema = SchemaSpec.from_dict({"sample_hz": 1.0, "fields": fields})
    rng = np.random.default_rng(0)
    tracks = []
    for i in range(n_tracks):
        present = rng.random(steps) > 0.05
        vals = {
            "position": 48.8 + rng.normal(size=(steps, 2)),
            "altitude": rng.normal(30000, 500, size=(steps, 1)),
            "groundspeed": rng.normal(400, 20, size=(steps, 1)),
            "track": rng.uniform(0, 360, size=(steps, 1)),
            "vertical_rate": rng.normal(0, 800, size=(steps, 1)),
            "onground": rng.integers(0, 2, size=(steps, 1)).astype(np.float64),
        }
        if frames:
            vals["frame"] = rng.integers(0, 256, size=(steps, 768)).astype(np.float64)
        for v in vals.values():
            v[~present] = np.nan
        tracks.append(Track(f"src{i // 20:03d}", f"e{i:05d}", 0, vals, present, 1.0, k0=0))
    return schema, tracks


def spec_for(container: str, frames: bool) -> OutputSpec:
    mods = {
        "position": {"dtype": "float64", "shape": [2], "source": "field:position"},
        "altitude": {"dtype": "float32", "shape": [], "source": "field:altitude"},
        "groundspeed": {"dtype": "float32", "shape": [], "source": "field:groundspeed"},
        "track": {"dtype": "float32", "shape": [], "source": "field:track"},
        "vertical_rate": {"dtype": "float32", "shape": [], "source": "field:vertical_rate"},
        "onground": {"dtype": "uint8", "shape": [], "source": "field:onground"},
    }
    if frames:
        mods["frame"] = {"dtype": "uint8", "shape": [16, 16, 3], "source": "field:frame"}
    return OutputSpec.from_dict(
        {"shard_length": 128, "short_policy": "pad", "container": container, "modalities": mods}
    )


def n_rows(chunk: dict[str, np.ndarray]) -> int:
    """The shard's step count (its arrays' first dimension)."""
    return next(a.shape[0] for a in chunk.values() if a.ndim)


def best_interleaved(fns: dict[str, Callable[[], None]], repeat: int) -> dict[str, float]:
    """Best wall seconds of each function over ``repeat`` rounds; every round runs each
    function once, in turn, so a change in the machine's load reaches all of them alike."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {name: min(t) for name, t in times.items()}


def savez_to(d: Path, chunks: list[dict[str, np.ndarray]]) -> None:
    """The npz baseline: ``np.savez`` of each chunk to a plain file."""
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    for i, c in enumerate(chunks):
        np.savez(d / f"s{i:05d}.npz", **c)


def write_table_to(d: Path, chunks: list[dict[str, np.ndarray]]) -> None:
    """The parquet baseline: each chunk as a table (a column per array, a tensor as a
    fixed-size list, a 0-d array repeated) through ``pq.write_table`` (snappy)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    for i, c in enumerate(chunks):
        cols = {}
        for k, a in c.items():
            if a.ndim == 0:
                cols[k] = pa.array(np.repeat(a, n_rows(c)))
            elif a.ndim == 1:
                cols[k] = pa.array(a)
            else:
                flat = pa.array(a.reshape(-1))
                cols[k] = pa.FixedSizeListArray.from_arrays(flat, a[0].size)
        pq.write_table(pa.table(cols), d / f"s{i:05d}.parquet")


def writer_to(out: Path, spec: OutputSpec, schema: SchemaSpec, tracks: list[Track]) -> None:
    """:class:`ShardWriter` end to end."""
    shutil.rmtree(out, ignore_errors=True)
    w = ShardWriter(out, spec, schema)
    for t in tracks:
        w.write(t, "train")


def container_to(d: Path, codec: Any, chunks: list[dict[str, np.ndarray]]) -> None:
    """The container alone: ``dumps`` + SHA-256 + atomic write of prepared chunks."""
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    for i, c in enumerate(chunks):
        data = codec.dumps(c)
        hashlib.sha256(data).hexdigest()
        write_bytes_atomic(d / f"s{i:05d}{codec.suffix}", data)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="50 tracks instead of 400")
    ap.add_argument("--frames", action="store_true", help="add a (16, 16, 3) uint8 modality")
    ap.add_argument("--steps", type=int, default=1024, help="steps per track")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--root", type=Path, help="scratch directory (default: a temp dir)")
    ap.add_argument(
        "--containers",
        nargs="+",
        choices=CONTAINERS,
        default=list(CONTAINERS),
        help="containers to measure (default: all)",
    )
    ap.add_argument(
        "--record", action="store_true", help="store the goal ratios in bench/results.json"
    )
    args = ap.parse_args()
    n_tracks = 50 if args.small else 400
    schema, tracks = make_tracks(n_tracks, args.steps, args.frames)
    tmp = args.root or Path(tempfile.mkdtemp(prefix="kur-write-bench-"))
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        chunk_writer = ShardWriter(tmp, spec_for("npz", args.frames), schema)
        chunks = [c for t in tracks for _, c in chunk_writer.shard_arrays(t)]
        payload = sum(a.nbytes for c in chunks for a in c.values())
        print(
            f"{n_tracks} tracks x {args.steps} steps -> {len(chunks)} shards of 128 steps, "
            f"{payload / 1e6:.1f} MB payload{' (with frames)' if args.frames else ''}"
        )
        fns: dict[str, Callable[[], None]] = {
            "np.savez": partial(savez_to, tmp / "savez", chunks),
            "pq.write_table": partial(write_table_to, tmp / "write_table", chunks),
        }
        names = []
        for name in args.containers:
            try:
                codec = get_container(name)
                spec = spec_for(name, args.frames)
            except ImportError as exc:  # pragma: no cover - optional dependency
                print(f"{name:>10}: skipped ({exc})")
                continue
            names.append(name)
            fns[f"{name} writer"] = partial(writer_to, tmp / name, spec, schema, tracks)
            # a folder of its own: the writer's rmtree must not also pay for these files
            fns[f"{name} container"] = partial(container_to, tmp / f"{name}-raw", codec, chunks)
        t = best_interleaved(fns, args.repeat)
        for base in ("np.savez", "pq.write_table"):
            print(f"{base:>22}: {payload / 1e6 / t[base]:8.1f} MB/s  (baseline, {t[base]:.2f} s)")
        print(
            f"{'container':>10} {'writer MB/s':>12} {'vs savez':>9} {'container MB/s':>15} "
            f"{'vs savez':>9} {'on disk MB':>11} {'fsync s':>8}"
        )
        for name in names:
            t_writer, t_container = t[f"{name} writer"], t[f"{name} container"]
            files = sorted((tmp / name / "train").iterdir())
            on_disk = sum(p.stat().st_size for p in files)
            t0 = time.perf_counter()
            fsync_paths([*files, tmp / name / "train"])
            t_fsync = time.perf_counter() - t0
            print(
                f"{name:>10} {payload / 1e6 / t_writer:12.1f} {t['np.savez'] / t_writer:8.2f}x "
                f"{payload / 1e6 / t_container:15.1f} {t['np.savez'] / t_container:8.2f}x "
                f"{on_disk / 1e6:11.1f} {t_fsync:8.2f}"
            )
        print("issue 15 goal 5 (at least 0.80x the baseline, same arrays, same run):")
        rows = []
        for name, base in (("npz", "np.savez"), ("parquet", "pq.write_table")):
            if name in names:
                w, c = t[base] / t[f"{name} writer"], t[base] / t[f"{name} container"]
                verdict = "ok" if min(w, c) >= 0.8 else "BELOW"
                print(f"  {name:>8} vs {base:<15} writer {w:5.2f}x  container {c:5.2f}x  {verdict}")
                where = "tmpfs" if str(tmp).startswith("/dev/shm") else "disk"
                rows.append(
                    {
                        "id": f"write-{name}",
                        "benchmark": f"`bench_write.py` ({n_tracks} tracks, {len(chunks)} shards, "
                        f"{where}): {name} writer / container vs `{base}`",
                        "measured": f"{w:.2f}x / {c:.2f}x",
                        "goal": ">= 0.8x",
                    }
                )
        if args.record:
            from perf_table import record

            record(rows)
    finally:
        if args.root is None:
            shutil.rmtree(tmp, ignore_errors=True)
    load = os.getloadavg()
    print(f"(cpu count {os.cpu_count()}; load average {load[0]:.2f}; best of {args.repeat})")


if __name__ == "__main__":
    main()
