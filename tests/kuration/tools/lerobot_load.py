"""Load a LeRobot dataset with lerobot's own LeRobotDataset and a torch DataLoader (run in
the lerobot env); write every frame's features to an .npz for comparison.

Usage: python lerobot_load.py ROOT OUT_NPZ KEY...
"""

from __future__ import annotations

import sys

import numpy as np
import torch
from lerobot.datasets.lerobot_dataset import LeRobotDataset


def main(root: str, out: str, *keys: str) -> None:
    ds = LeRobotDataset("kuration/export", root=root)
    loader = torch.utils.data.DataLoader(ds, batch_size=64, shuffle=False, num_workers=0)
    got: dict[str, list[np.ndarray]] = {k: [] for k in (*keys, "episode_index", "timestamp")}
    for batch in loader:
        for k in got:
            got[k].append(batch[k].numpy())
    np.savez(out, **{k: np.concatenate(v) for k, v in got.items()}, n=len(ds))
    print(len(ds), ds.num_episodes)


if __name__ == "__main__":
    main(*sys.argv[1:])
