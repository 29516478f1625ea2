"""Benchmark the commit's durability: per-file ``fsync`` on a thread pool against one
``syncfs`` of the destination's filesystem.

Run on demand (not part of the test suite)::

    .venv/bin/python bench/bench_sync.py                      # 370 shards of 64 KiB, 5 rounds
    .venv/bin/python bench/bench_sync.py --files 2000 --size 16384 --dir /data/runs

Each round writes ``--files`` new files of ``--size`` random bytes (page cache only, not yet
durable) into a folder under ``--dir`` (default: the repository's ``runs/``, where the
quickstart writes), then makes them durable one way, timed; the two ways take turns.  The
guarantee is the same: every byte written before the call is on disk when it returns
(``syncfs`` flushes the whole filesystem, which also holds the files' directory entries;
Linux >= 5.8 reports its write-back errors).  ``fsync_paths`` is what ``kur run`` does
today: the files and their directories, 16 threads.  Wall time counts (the work is the
disk's; the CPU time is printed too).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from kuration.output.commit import fsync_paths, syncfs_path

ROOT = Path(__file__).resolve().parents[1]


def write_files(folder: Path, files: int, size: int) -> list[Path]:
    folder.mkdir(parents=True)
    out = []
    for i in range(files):
        p = folder / f"shard-{i:05d}.bin"
        p.write_bytes(os.urandom(size))
        out.append(p)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=370)
    ap.add_argument("--size", type=int, default=65_536)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dir", type=Path, default=ROOT / "runs")
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    wall: dict[str, list[float]] = {"fsync_paths": [], "syncfs": []}
    cpu: dict[str, list[float]] = {"fsync_paths": [], "syncfs": []}
    base = Path(tempfile.mkdtemp(prefix="kur-sync-", dir=args.dir))
    try:
        for r in range(args.rounds):
            for name in wall:
                folder = base / f"{name}-{r}"
                paths = write_files(folder, args.files, args.size)
                t0, c0 = time.perf_counter(), time.process_time()
                if name == "syncfs":
                    syncfs_path(folder)
                else:
                    fsync_paths([*paths, folder, base])
                wall[name].append(time.perf_counter() - t0)
                cpu[name].append(time.process_time() - c0)
                shutil.rmtree(folder)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    load = os.getloadavg()[0]
    mb = args.files * args.size / 2**20
    print(f"{args.files} files x {args.size} B ({mb:.1f} MiB) under {args.dir}; "
          f"{args.rounds} interleaved rounds; load average {load:.1f}")  # fmt: skip
    for name in wall:
        print(f"  {name:<12s} wall median {statistics.median(wall[name]) * 1e3:8.1f} ms, "
              f"best {min(wall[name]) * 1e3:8.1f} ms; CPU median "
              f"{statistics.median(cpu[name]) * 1e3:6.1f} ms")  # fmt: skip
    ratio = statistics.median(wall["syncfs"]) / statistics.median(wall["fsync_paths"])
    print(f"  syncfs / fsync_paths: {ratio:.2f}x by median wall")


if __name__ == "__main__":
    main()
