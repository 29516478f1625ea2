"""LeRobot v3 datasets written by third-party tools, for the LeRobot tests.

* ``robovet demo DIR --v3`` (robovet 0.2.2, MIT): a 4-episode SO-100-style dataset
  with two shared MP4 cameras; without ``--clean`` it injects labelled defects
  (episode 1: corrupted ``stats/action/mean`` and a video window 4 ms off the grid;
  episode 3: its top-camera window 4 frames short; global ``observation.state``
  quantiles q01/q99 swapped).
* ``rdq.synthetic`` (rdq 0.3.4, MIT): episodes of smooth reaching motion, with
  its own fault injectors (dropped frames, swapped timestamps, a metadata
  length lie...), written as v3 without video.

Both are dev dependencies; a missing one fails the tests (it is required).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

BIN = Path(sys.executable).parent


def robovet_demo(path: Path, *, clean: bool) -> Path:
    """Write ``robovet demo PATH --v3 [--clean]`` and return PATH."""
    cmd = [str(BIN / "robovet"), "demo", str(path), "--v3", *(["--clean"] if clean else [])]
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    return path


def rdq_dataset(path: Path, *, faults: dict[int, str] | None = None, **write: object) -> Path:
    """An rdq synthetic v3 dataset of 6 episodes (30 fps, no video); ``faults`` maps an
    episode to an rdq injector name (``drop_frames``, ``reverse_time``, ...)."""
    from rdq import synthetic

    eps = synthetic.make_episodes(n_episodes=6, length=90, fps=30, seed=3)
    for i, name in (faults or {}).items():
        getattr(synthetic, name)(eps[i])
    synthetic.write_dataset(path, eps, fps=30, with_video=False, **write)
    return path


def jitter_timestamps(path: Path, episode: int, seconds: float) -> None:
    """Shift every timestamp of one episode by ``seconds`` (off the 1/fps grid)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    f = path / "data" / "chunk-000" / "file-000.parquet"
    t = pq.read_table(f)
    ts = t.column("timestamp").to_numpy().astype(np.float64)
    ep = t.column("episode_index").to_numpy()
    ts[ep == episode] += seconds
    t = t.set_column(t.column_names.index("timestamp"), "timestamp", pa.array(ts, pa.float32()))
    pq.write_table(t, f)


def split_data_file(path: Path, first: int) -> None:
    """Move the episodes from ``first`` on into data file-001 while the episodes table still
    names file-000 for them (the huggingface/lerobot#2401 converter defect)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    f = path / "data" / "chunk-000" / "file-000.parquet"
    t = pq.read_table(f)
    late = pc.greater_equal(t.column("episode_index"), first)
    pq.write_table(t.filter(late), f.with_name("file-001.parquet"))
    pq.write_table(t.filter(pc.invert(late)), f)
