"""kur init on LeRobot v3 folders written by ``robovet demo --v3`` (robovet 0.2.2, MIT)."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from kuration import inspect_dataset
from kuration.cli.main import main as kur_main

pytest.importorskip("av", reason="media extra")  # a dev dependency: present in CI


def _demo(path: Path, *, clean: bool) -> Path:
    robovet = str(Path(sys.executable).parent / "robovet")
    flags = ["--v3", *(["--clean"] if clean else [])]
    subprocess.run([robovet, "demo", str(path), *flags], check=True, capture_output=True)
    return path


@pytest.mark.slow
@pytest.mark.parametrize("clean", [True, False])
def test_init_then_run_on_a_robovet_dataset(clean: bool, tmp_path: Path, capsys) -> None:
    data = _demo(tmp_path / "demo", clean=clean)
    assert kur_main(["init", str(data), "--out", str(tmp_path / "job")]) == 0
    printed = capsys.readouterr().out
    assert "4 episodes, 451 frames at 30 fps" in printed
    assert "sample rate: 30 Hz (info.json fps)" in printed
    assert (
        "state_shoulder_pan: observation.state[shoulder_pan], a number (no unit given)" in printed
    )
    job = json.loads((tmp_path / "job" / "job.json").read_text())
    schema = json.loads((tmp_path / "job" / "schema.json").read_text())
    assert schema["sample_hz"] == 30 and set(schema["media"]) == {"cam_top", "cam_wrist"}
    assert job["adapter"]["type"] == "lerobot" and job["sources"] == [str(data.resolve())]
    if clean:
        assert "repair" not in job["adapter"] and "defect:" not in printed
    else:  # robovet's four v3 defects, each named, and the two repairs they need
        assert job["adapter"]["repair"] == ["stats", "video_windows"]
        assert printed.count("  defect: ") == 4
        assert "quantiles q01..q99" in printed and "holds 115 frames for 119" in printed
        assert "kept out (a source filter): ep000003_task000" in printed  # 4 frames missing
    # whole episodes overshoot a tiny budget: init says so instead of promising 10%
    assert "spans: none (whole episodes); a split may overshoot its request" in printed
    assert "lands within 10% of its request" not in printed
    with warnings.catch_warnings():  # pytest's "error" filter off: kur prints the warning
        warnings.simplefilter("default")
        assert (
            kur_main(["run", str(tmp_path / "job" / "job.json"), "--out", str(tmp_path / "o")]) == 0
        )
    coarse = [ln for ln in capsys.readouterr().err.splitlines() if "h requested (+" in ln]
    # the advice never names a span shorter than the job's window
    window = float(job["segmenter"]["window"])
    assert coarse and all(
        f"no span is shorter than one window ({window:.3g} s)" in m for m in coarse
    )
    assert not any("set span_seconds" in m for m in coarse), coarse
    rep = inspect_dataset(tmp_path / "o", verify=True)
    assert rep.verification["valid"] and rep.verification["checked"] > 0
    cfg = json.loads((tmp_path / "o" / "config.json").read_text())
    assert cfg["results"]["budget"]["train"]["admitted_tracks"] >= 1
    counts = {s["source_id"]: s for s in cfg["pipeline"]["sources"]}
    if not clean:  # each repair counted on the episode it touched
        assert counts["ep000001_task000"]["repaired_stats"] == 1
        assert counts["ep000001_task000"]["repaired_video_windows"] == 1
        assert counts["ep000003_task000"]["missing_frames:cam_top"] == 4
        admitted = {
            e["source_id"]
            for e in json.loads((tmp_path / "o" / "dataset_manifest.json").read_text())["shards"]
        }
        assert admitted and "ep000003_task000" not in admitted


def test_angles_only_where_the_dataset_says_so(tmp_path: Path, capsys) -> None:
    data = _demo(tmp_path / "demo", clean=True)
    info_path = data / "meta" / "info.json"
    info = json.loads(info_path.read_text())
    info["features"]["observation.state"]["unit"] = "deg"
    info_path.write_text(json.dumps(info))
    assert kur_main(["init", str(data), "--out", str(tmp_path / "job")]) == 0
    assert (
        "state_wrist_roll: observation.state[wrist_roll], angle in deg" in capsys.readouterr().out
    )
    schema = json.loads((tmp_path / "job" / "schema.json").read_text())
    roll = next(f for f in schema["fields"] if f["name"] == "state_wrist_roll")
    assert roll["semantics"] == "angular" and roll["unit"] == "deg"
    strategy = json.loads((tmp_path / "job" / "strategy.json").read_text())
    assert strategy["define"]["state_wrist_roll_motion"].endswith("angle_delta | abs | mean")
