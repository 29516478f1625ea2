"""export_lerobot: a curated dataset as LeRobot v3, checked by three outside checkers, read back
by kuration's LeRobot adapter and loaded by lerobot 0.6.1's own LeRobotDataset.

The curated dataset comes from ``robovet demo --v3 --clean`` (robovet 0.2.2, MIT) through
``kur init`` and ``kur run``.  lerobot runs in the cached Python 3.12 environment of
tests/lerobot_env.py; a build that fails fails the round-trip test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from kuration import iter_shards
from kuration.cli.main import main as kur_main
from kuration.contracts.schema import SchemaSpec
from kuration.errors import DestinationError
from kuration.sources.lerobot import LeRobotAdapter
from kuration.tools.lerobot_export import export_lerobot

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("export")
    cmd = [str(BIN / "robovet"), "demo", str(tmp / "demo"), "--v3", "--clean"]
    subprocess.run(cmd, check=True, capture_output=True)
    assert kur_main(["init", str(tmp / "demo"), "--out", str(tmp / "job")]) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # whole episodes against a tiny budget
        assert kur_main(["run", str(tmp / "job" / "job.json"), "--out", str(tmp / "cur")]) == 0
    export_lerobot(tmp / "cur", tmp / "lr", robot_type="so100")
    return tmp / "cur", tmp / "lr"


def _data(root: Path) -> dict[str, np.ndarray]:
    t = pq.read_table(root / "data" / "chunk-000" / "file-000.parquet").to_pydict()
    return {k: np.asarray(v) for k, v in t.items()}


def test_layout_splits_and_frames_equal_the_curated_shards(exported: tuple[Path, Path]) -> None:
    cur, lr = exported
    info = json.loads((lr / "meta" / "info.json").read_text())
    shards = list(iter_shards(cur, with_meta=True))
    tracks = sorted({(e["split"] != "train", e["source_id"]) for _, e in shards})
    n_train = sum(1 for t in tracks if not t[0])
    assert info["splits"] == {"train": f"0:{n_train}", "test": f"{n_train}:{len(tracks)}"}
    assert info["total_episodes"] == len(tracks)
    assert info["total_frames"] == sum(a["state"].shape[0] for a, _ in shards)
    data = _data(lr)
    for ep, (_, sid) in enumerate(tracks):
        ours = np.concatenate(
            [
                a["state"]
                for a, e in sorted(shards, key=lambda p: p[1]["shard_index"])
                if e["source_id"] == sid
            ]
        )
        rows = data["episode_index"] == ep
        np.testing.assert_array_equal(
            np.stack(data["observation.state"][rows]), ours.astype(np.float32)
        )
    tasks = pq.read_table(lr / "meta" / "tasks.parquet").to_pydict()
    assert tasks["task"] == ["Pick up the cube and place it in the bin."]  # robovet's own task
    assert json.loads((lr / "meta" / "kuration_config.json").read_text())["results"]["budget"]


def test_kurations_lerobot_adapter_reads_the_export_back(exported: tuple[Path, Path]) -> None:
    _, lr = exported
    schema = SchemaSpec.from_dict(
        {"name": "x", "sample_hz": 30, "fields": [{"name": "state", "kind": "vector", "dims": 6}]}
    )
    a = LeRobotAdapter(schema, fields={"state": "observation.state"})
    data = _data(lr)
    for uri in a.expand(str(lr)):  # every check passes: index ranges, timestamps, stats, totals
        t = a.read_table(uri)
        rows = data["episode_index"] == int(uri.rsplit("=", 1)[1])
        np.testing.assert_array_equal(
            t.values["state"][:, 0], np.stack(data["observation.state"][rows])
        )


def test_three_outside_checkers_pass(exported: tuple[Path, Path]) -> None:
    _, lr = exported
    robovet = subprocess.run(
        [str(BIN / "robovet"), "doctor", str(lr)], capture_output=True, text=True
    )
    assert " 0 fail " in robovet.stdout, robovet.stdout
    doctor = subprocess.run(
        [str(BIN / "lerobot-doctor"), "check", str(lr)], capture_output=True, text=True
    )
    assert (
        doctor.returncode == 0 and "[FAIL]" not in doctor.stdout and "[ERROR]" not in doctor.stdout
    )
    rdq = subprocess.run([str(BIN / "rdq"), "check", str(lr)], capture_output=True, text=True)
    assert rdq.returncode == 0 and "No problems found" in rdq.stdout, rdq.stdout


def test_lerobot_loads_the_export_and_its_frames_equal_ours(
    exported: tuple[Path, Path], tmp_path: Path
) -> None:
    from lerobot_env import lerobot_python

    _, lr = exported
    script = Path(__file__).with_name("lerobot_load.py")
    out = tmp_path / "frames.npz"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    cams = ["observation.images.cam_top", "observation.images.cam_wrist"]
    cmd = [lerobot_python(), str(script), str(lr), str(out), "observation.state", "action", *cams]
    subprocess.run(cmd, check=True, capture_output=True, env=env, timeout=600)
    got = np.load(out)
    data = _data(lr)
    assert int(got["n"]) == len(data["index"])
    np.testing.assert_array_equal(got["observation.state"], np.stack(data["observation.state"]))
    np.testing.assert_array_equal(got["action"], np.stack(data["action"]))
    np.testing.assert_array_equal(got["episode_index"], data["episode_index"])
    # the cameras: re-encoded (H.264, yuv420p), so equal up to the codec's loss, frame for frame
    cur = exported[0]
    shards = sorted(iter_shards(cur, with_meta=True), key=lambda p: p[1]["shard_index"])
    order = sorted({(e["split"] != "train", e["source_id"]) for _, e in shards})
    for cam in ("cam_top", "cam_wrist"):
        ours = np.concatenate(
            [a[cam] for _, sid in order for a, e in shards if e["source_id"] == sid]
        ).astype(np.float64)
        theirs = np.round(np.transpose(got[f"observation.images.{cam}"], (0, 2, 3, 1)) * 255)
        per_frame = np.abs(theirs - ours).mean(axis=(1, 2, 3))
        assert per_frame.max() < 3.0  # 8-bit levels
        assert np.abs(theirs[1:] - ours[:-1]).mean() > per_frame.mean()  # not a frame off


def test_an_existing_folder_is_never_overwritten(exported: tuple[Path, Path]) -> None:
    cur, lr = exported
    before = sorted(p.name for p in lr.rglob("*"))
    with pytest.raises(DestinationError, match="exists"):
        export_lerobot(cur, lr)
    assert sorted(p.name for p in lr.rglob("*")) == before
