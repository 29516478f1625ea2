"""``kur run examples/video/joined/job.json``: Big Buck Bunny curated by its own audio loudness
(the RMS envelope of the file's audio track, joined to the frames on the video's clock)."""

from __future__ import annotations

import json
from pathlib import Path

import av
import numpy as np
import pyarrow.parquet as pq
import pytest

from kuration import inspect_dataset, iter_shards
from kuration.cli.main import main
from kuration.sources.samples import build_audio_rms_sources

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "video" / "joined" / "job.json"


def _rms_by_hand(video: Path) -> np.ndarray:
    """The 25 Hz RMS envelope straight from PyAV (48 kHz 5.1: 1920 samples a frame interval)."""
    with av.open(str(video)) as c:
        samples = np.concatenate([f.to_ndarray() for f in c.decode(audio=0)], axis=1)
    n = samples.shape[1] // 1920
    blocks = samples[:, : n * 1920].astype(np.float64).reshape(samples.shape[0], n, 1920)
    return np.sqrt((blocks**2).mean(axis=(0, 2)))


def test_the_audio_rms_sample_is_the_envelope_on_the_video_clock(tmp_path, video_file) -> None:
    (series,) = build_audio_rms_sources(tmp_path)
    video = video_file("bigbuckbunny.mp4")
    assert series == video.with_name("bigbuckbunny.parquet")  # the adapter's {dir}/{stem}.mp4
    table = pq.read_table(series)
    assert table.column_names == ["time", "rms"]
    assert table.column("time").to_pylist() == [k / 25 for k in range(132)]
    np.testing.assert_array_equal(table.column("rms").to_numpy(), _rms_by_hand(video))


def test_kur_run_joined_example_writes_the_loudest_frames(
    tmp_path, video_file, direct_frames
) -> None:
    out = tmp_path / "out"
    assert main(["run", str(EXAMPLE), "--out", str(out), "--json"]) == 0
    assert inspect_dataset(out, verify=True).verification["valid"]
    video = video_file("bigbuckbunny.mp4")
    pts, frames = direct_frames(video, "rgb24", (72, 128))
    assert pts == [512 * i for i in range(132)]  # 25 fps, time base 1/12800: tick t is frame t
    rms = _rms_by_hand(video)
    spans: dict[int, float] = {}
    for arrays, entry in iter_shards(out, with_meta=True):
        start, steps = entry["start_idx"], entry["n_steps"]
        assert arrays["frame"].shape == (steps, 72, 128, 3) and arrays["_present_frame"].all()
        # the frame presented at each tick's time, as PyAV decodes it at 72x128
        np.testing.assert_array_equal(arrays["frame"], frames[start : start + steps])
        np.testing.assert_array_equal(arrays["rms"], rms[start : start + steps].astype(np.float32))
        spans[entry["span_index"]] = float(arrays["loudness"][0])
    # the admitted 1-second spans are the loudest by the independent envelope
    loudness = [rms[25 * k : 25 * k + 25].mean() for k in range(5)]
    ranked = np.argsort(loudness)[::-1].tolist()
    assert sorted(spans) == sorted(ranked[: len(spans)]) and len(spans) >= 2
    for k, v in spans.items():
        assert v == pytest.approx(loudness[k], rel=1e-6)
    manifest = json.loads((out / "dataset_manifest.json").read_text())
    assert manifest["modalities"]["frame"]["shape"] == [72, 128, 3]
