"""Benchmark shard writing: MB/s of array payload per container, against plain ``np.savez``.

Run on demand (not part of the test suite)::

    .venv/bin/python bench/bench_write.py            # 400 tracks x 1,024 steps
    .venv/bin/python bench/bench_write.py --small    # 50 tracks, for a quick check
    .venv/bin/python bench/bench_write.py --frames   # add a (16, 16, 3) uint8 tensor per step

Three figures per container, all over the same arrays and in the same run:

* ``writer``: :class:`kuration.ShardWriter` end to end -- modality routing,
  zero-fill, chunking and padding, encoding, SHA-256, temp file + ``os.replace``;
* ``container``: only ``dumps`` + SHA-256 + the atomic write of chunks prepared beforehand;
* ``np.savez``: ``numpy.savez`` of those same prepared chunks to plain files.

MB/s is payload (the arrays' ``nbytes``, 1 MB = 1e6 bytes) over wall time, best of
``--repeat`` runs.  ``fsync`` is the extra time to make every shard durable
(what ``write_dataset(durable=True)`` adds before publishing the manifest).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from kuration import OutputSpec, SchemaSpec, ShardWriter, Track, get_container
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


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="50 tracks instead of 400")
    ap.add_argument("--frames", action="store_true", help="add a (16, 16, 3) uint8 modality")
    ap.add_argument("--steps", type=int, default=1024, help="steps per track")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--root", type=Path, help="scratch directory (default: a temp dir)")
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

        def savez() -> None:
            d = tmp / "savez"
            shutil.rmtree(d, ignore_errors=True)
            d.mkdir()
            for i, c in enumerate(chunks):
                np.savez(d / f"s{i:05d}.npz", **c)

        t_savez = best(savez, args.repeat)
        print(f"{'np.savez':>22}: {payload / 1e6 / t_savez:8.1f} MB/s  (baseline, {t_savez:.2f} s)")
        print(
            f"{'container':>10} {'writer MB/s':>12} {'vs savez':>9} {'container MB/s':>15} "
            f"{'vs savez':>9} {'on disk MB':>11} {'fsync s':>8}"
        )
        for name in CONTAINERS:
            try:
                codec = get_container(name)
                spec = spec_for(name, args.frames)
            except ImportError as exc:  # pragma: no cover - optional dependency
                print(f"{name:>10}: skipped ({exc})")
                continue
            out = tmp / name

            def writer(out: Path = out, spec: OutputSpec = spec) -> None:
                shutil.rmtree(out, ignore_errors=True)
                w = ShardWriter(out, spec, schema)
                for t in tracks:
                    w.write(t, "train")

            def container(out: Path = out, codec=codec) -> None:
                d = out / "raw"
                shutil.rmtree(d, ignore_errors=True)
                d.mkdir(parents=True)
                for i, c in enumerate(chunks):
                    data = codec.dumps(c)
                    hashlib.sha256(data).hexdigest()
                    write_bytes_atomic(d / f"s{i:05d}{codec.suffix}", data)

            t_writer = best(writer, args.repeat)
            t_container = best(container, args.repeat)
            files = sorted((out / "train").iterdir())
            on_disk = sum(p.stat().st_size for p in files)
            t0 = time.perf_counter()
            fsync_paths([*files, out / "train"])
            t_fsync = time.perf_counter() - t0
            print(
                f"{name:>10} {payload / 1e6 / t_writer:12.1f} {t_savez / t_writer:8.2f}x "
                f"{payload / 1e6 / t_container:15.1f} {t_savez / t_container:8.2f}x "
                f"{on_disk / 1e6:11.1f} {t_fsync:8.2f}"
            )
    finally:
        if args.root is None:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"(cpu count {os.cpu_count()}; best of {args.repeat})")


if __name__ == "__main__":
    main()
