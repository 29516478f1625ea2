"""Write ADS-B tracks into a LeRobot v3 dataset with lerobot's own writer (run in the lerobot env).

Usage: python lerobot_convert_adsb.py OUT_ROOT MIN_SECONDS PARQUET...

Converted data, labelled as such: each episode is one gap-free run (1 Hz, every value
present) of one aircraft's track from the project's ADS-B sample (OpenSky Network data
from the pinned traffic==2.13 wheel, MIT), at least MIN_SECONDS long;
``observation.state`` holds latitude, longitude (deg), altitude (ft), groundspeed (kt),
track (deg) and vertical rate (ft/min) as float32.  Written through
``LeRobotDataset.create``, ``add_frame``, ``save_episode`` and ``finalize``.
"""

from __future__ import annotations

import sys

import numpy as np
import pyarrow.parquet as pq
from lerobot.datasets.lerobot_dataset import LeRobotDataset

NAMES = ["latitude", "longitude", "altitude", "groundspeed", "track", "vertical_rate"]
TASK = "follow one aircraft's track (converted ADS-B recording)"


def runs(paths: list[str], min_len: int):
    for path in paths:
        t = pq.read_table(path, columns=["timestamp", "icao24", *NAMES]).to_pandas()
        for _, g in sorted(t.groupby("icao24"), key=lambda kv: kv[0]):
            g = g.sort_values("timestamp")
            ok = g[NAMES].notna().all(axis=1).to_numpy()
            step = np.diff(g["timestamp"].to_numpy(), prepend=-1) == 1000
            start = 0
            x = g[NAMES].to_numpy(np.float32)
            for i in range(1, len(g) + 1):
                if i == len(g) or not (ok[i] and step[i]):
                    if ok[start] and i - start >= min_len:
                        yield x[start:i]
                    start = i


def main(out: str, min_seconds: str, *paths: str) -> None:
    ds = LeRobotDataset.create(
        repo_id="kuration/adsb-converted",
        fps=1,
        root=out,
        robot_type=None,
        use_videos=False,
        features={"observation.state": {"dtype": "float32", "shape": (6,), "names": NAMES}},
    )
    n = 0
    for run in runs(list(paths), int(min_seconds)):
        for row in run:
            ds.add_frame({"observation.state": row, "task": TASK})
        ds.save_episode()
        n += 1
    ds.finalize()
    print(n)


if __name__ == "__main__":
    main(*sys.argv[1:])
