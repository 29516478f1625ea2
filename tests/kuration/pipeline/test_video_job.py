"""``kur run examples/video/job.json``: real footage curated by motion energy, frames in the shards."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from kuration import inspect_dataset, iter_shards, run_job
from kuration.cli.main import main

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "video" / "job.json"


@pytest.fixture(scope="module")
def example_out(tmp_path_factory) -> Path:
    """The shipped example run once through the CLI (``kur run``), one worker."""
    out = tmp_path_factory.mktemp("video") / "out"
    assert main(["run", str(EXAMPLE), "--out", str(out), "--json"]) == 0
    return out


def _digests(root: Path) -> dict[str, str]:
    skip = {"config.json", "dataset.commit.json", ".kuration-writer.lock"}
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name not in skip
    }


@pytest.mark.slow
def test_kur_run_video_example_writes_the_decoded_frames(
    example_out, video_file, direct_frames
) -> None:
    out = example_out
    assert inspect_dataset(out, verify=True).verification["valid"]
    pts, frames = direct_frames(video_file("bikes.mp4"))
    assert pts == [512 * i for i in range(250)]  # 25 fps, time base 1/12800: tick t is frame t
    spans: dict[int, float] = {}
    n = 0
    for arrays, entry in iter_shards(out, with_meta=True):
        start, steps = entry["start_idx"], entry["n_steps"]
        assert arrays["frame"].dtype == np.uint8 and arrays["frame"].shape == (steps, 272, 640, 3)
        np.testing.assert_array_equal(arrays["frame"], frames[start : start + steps])
        assert arrays["_present_frame"].all()
        spans[entry["span_index"]] = float(arrays["motion_energy"][0])
        n += steps
    assert n == 100  # the 4-second budget: two 2-second spans
    manifest = json.loads((out / "dataset_manifest.json").read_text())
    assert manifest["modalities"]["frame"] == {
        "dtype": "uint8",
        "shape": [272, 640, 3],
        "source": "media:frame",
        "unit": None,  # pixel values: no unit
    }
    # the admitted spans are the two with the most motion (the motion_energy BatchTransform,
    # one frame of lookbehind), by numpy on an independent decode
    _, gray = direct_frames(video_file("bikes.mp4"), "gray", (36, 64))
    energy = np.abs(np.diff(gray.astype(np.float64), axis=0)).mean(axis=(1, 2, 3))
    by_span = [energy[max(50 * k - 1, 0) : 50 * k + 49].mean() for k in range(5)]
    assert set(spans) == set(np.argsort(by_span)[-2:].tolist())


@pytest.mark.slow
def test_video_job_is_byte_identical_across_worker_counts(
    tmp_path, video_file, remux_with_gap
) -> None:
    """Two real sources (carphone and a copy remuxed with a 5-frame hole), so that workers=2
    really spawns processes, which rebuild VideoAdapter from its registered name."""
    from kuration.pipeline.spec.job import load_job

    src = video_file("carphone_pristine.mp4")
    gap = remux_with_gap(src, tmp_path / "carphone_gap.mp4", after=60 * 1001, gap=5 * 1001)
    job, _ = load_job(EXAMPLE)
    job["sources"] = [str(src), str(gap)]
    job["schema"]["sample_hz"] = 30000 / 1001
    frame = {"shape": [144, 176, 3], "frame_rate": "30000/1001", "time_base": "1/30000"}
    job["schema"]["media"]["frame"].update(frame)
    job["output"]["modalities"]["frame"]["shape"] = frame["shape"]
    job["budget"] = {"train_hours": 0.0011, "test_hours": 0.00055}  # two spans, one span
    run_job(job, tmp_path / "one", workers=1)
    run_job(job, tmp_path / "two", workers=2, executor="process")
    one = _digests(tmp_path / "one")
    assert one == _digests(tmp_path / "two")
    assert {p.split("/")[0] for p in one if p.endswith(".npz")} == {"train", "test"}


@pytest.mark.slow
def test_a_video_dataset_reingests_without_its_frames(example_out) -> None:
    from kuration import CuratedDatasetAdapter

    adapter = CuratedDatasetAdapter(example_out)
    assert adapter.schema.field_names == ("frame_time", "motion_energy")
    uri = adapter.sources()[0]
    assert adapter.read_table(uri).values["frame_time"].shape[1:] == (1, 1)
