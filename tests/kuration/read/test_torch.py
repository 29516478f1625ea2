"""kuration.read.torch.ShardDataset with a real DataLoader (two worker processes)."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch.utils.data import DataLoader  # noqa: E402

import kuration  # noqa: E402
from kuration import iter_shards, run_job  # noqa: E402
from kuration.read.torch import FrameDataset, ShardDataset  # noqa: E402

# small budgets filled with whole 15-minute tracks overshoot their request on purpose here
pytestmark = pytest.mark.filterwarnings("ignore::kuration.errors.BudgetGranularityWarning")


@pytest.fixture(scope="module")
def padded(tmp_path_factory, small_job):
    job = json.loads(json.dumps(small_job))
    job["budget"] = {"train_hours": 0.5, "test_hours": 0.1}
    return run_job(job, tmp_path_factory.mktemp("torch") / "ds")


@pytest.fixture(scope="module")
def small_job(adsb_job_dict, adsb_sources):
    job = json.loads(json.dumps(adsb_job_dict))
    job["sources"] = [str(p) for p in adsb_sources[:4]]
    return job


def test_items_are_tensors_in_the_declared_dtypes(padded) -> None:
    ds = ShardDataset(padded.path, split="train", include_meta=True)
    entries = [e for e in padded.manifest["shards"] if e["split"] == "train"]
    assert len(ds) == len(entries)
    item = ds[0]
    assert item["onground"].dtype == torch.uint8
    assert item["altitude"].dtype == torch.float32
    assert item["position"].dtype == torch.float64 and item["position"].shape[1:] == (2,)
    assert item["_present"].dtype == torch.bool
    assert item["_meta"]["path"] == entries[0]["path"]
    ref = next(iter_shards(padded.path, split="train"))
    n = int(item["_n_steps"])
    assert n == entries[0]["n_steps"] == len(ref["_time_s"])
    for k, v in ref.items():  # real steps first ...
        assert torch.equal(item[k][:n], torch.from_numpy(v))
    length = padded.manifest["shard_length"]  # ... then pad rows up to the shard length
    assert item["_time_s"].shape == (length,) and item["_time_s"][n:].isnan().all()
    assert not item["_present"][n:].any() and not item["altitude"][n:].any()
    assert ds.units["altitude"] == "ft" and ds.features["position"].shape == (2,)
    assert ds[-1]["_meta"]["path"] == entries[-1]["path"]
    with pytest.raises(IndexError):
        ds[len(ds)]


def test_dataloader_with_two_workers(padded) -> None:
    length = padded.manifest["shard_length"]

    ds = ShardDataset(padded.path, transform=_scale_altitude, include_meta=True)
    loader = DataLoader(ds, batch_size=4, num_workers=2, shuffle=False)
    seen = 0
    paths = []
    for batch in loader:
        assert batch["altitude"].shape[1:] == (length,)
        assert batch["position"].shape[1:] == (length, 2)
        assert batch["onground"].dtype == torch.uint8
        seen += batch["altitude"].shape[0]
        paths.extend(batch["_meta"]["path"])
    assert seen == len(ds)
    assert paths == [e["path"] for e in padded.manifest["shards"]]  # stable order


def _scale_altitude(item):
    item["altitude_m"] = item["altitude"] * 0.3048
    return item


def test_without_torch_the_error_names_the_extra(padded, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ImportError, match=r"kuration-sdk\[torch\]"):
        ShardDataset(padded.path)


@pytest.fixture(scope="module")
def kept(tmp_path_factory, small_job):
    """Short tails kept as they are: shards of different lengths."""
    job = json.loads(json.dumps(small_job))
    job["budget"] = {"train_hours": 0.5, "test_hours": 0.1}
    job["output"]["short_policy"] = "keep"
    return run_job(job, tmp_path_factory.mktemp("torch") / "kept")


def test_default_dataloader_batches_shards_of_different_lengths(kept) -> None:
    lengths = {e["n_steps"] for e in kept.manifest["shards"]}
    assert len(lengths) > 1  # the case that failed with 'stack expects each tensor...'
    ds = ShardDataset(kept.path, split="train")
    batches = list(DataLoader(ds, batch_size=8))
    length = kept.manifest["shard_length"]
    assert all(b["position"].shape[1:] == (length, 2) for b in batches)
    n = torch.cat([b["_n_steps"] for b in batches])
    assert n.tolist() == [e["n_steps"] for e in ds.entries]
    for b in batches:  # pad rows: absent, NaN time
        pad = torch.arange(length)[None, :] >= b["_n_steps"][:, None]
        assert not b["_present"][pad].any() and b["_time_s"][pad].isnan().all()
        assert not b["_time_s"][~pad].isnan().any()


def test_pad_collate_pads_to_the_longest_item_of_the_batch(kept) -> None:
    ds = ShardDataset(kept.path, pad_to=None)
    loader = DataLoader(ds, batch_size=8, collate_fn=ShardDataset.collate)
    for i, b in enumerate(loader):
        items = [ds[j] for j in range(8 * i, min(8 * i + 8, len(ds)))]
        longest = max(len(it["_time_s"]) for it in items)
        assert b["altitude"].shape == (len(items), longest)
        for row, it in enumerate(items):
            n = len(it["_time_s"])
            torch.testing.assert_close(
                b["altitude"][row, :n], it["altitude"], rtol=0, atol=0, equal_nan=True
            )
            assert not b["_present"][row, n:].any() and b["_time_s"][row, n:].isnan().all()
    with pytest.raises(kuration.errors.ReaderOptionError, match="pad_to"):
        ShardDataset(kept.path, pad_to=3)


def test_an_unknown_split_is_an_error_not_an_empty_dataset(kept) -> None:
    with pytest.raises(kuration.errors.UnknownSplitError, match="'test', 'train'"):
        ShardDataset(kept.path, split="nope")
    with pytest.raises(kuration.errors.UnknownSplitError):
        FrameDataset(kept.path, split="validation")


def test_frames_with_delta_timestamps_match_hand_computed_neighbours(kept) -> None:
    deltas = [-130.0, -1.0, 0.0, 2.0, 129.0]  # 1 Hz: crosses shard boundaries (128 steps)
    frames = FrameDataset(
        kept.path,
        split="train",
        delta_timestamps={"position": deltas, "_time_s": deltas, "_present": [-1.0, 0.0]},
    )
    # by hand: each track's real rows in time order, from the numpy reader
    tracks: dict[tuple, list] = {}
    for arrays, meta in iter_shards(kept.path, split="train", with_meta=True):
        key = (meta["source_id"], meta["entity_id"], meta["span_index"])
        tracks.setdefault(key, []).append((meta["start_idx"], arrays))
    flat = []
    for parts in tracks.values():
        parts.sort(key=lambda p: p[0])
        pos = np.concatenate([a["position"] for _, a in parts])
        t = np.concatenate([a["_time_s"] for _, a in parts])
        flat.extend((pos, t, i) for i in range(len(t)))
    assert len(frames) == len(flat)
    assert max(len(p[0]) for p in tracks.values()) > 1  # some track spans several shards
    for index in [*range(0, len(flat), 53), len(flat) - 1]:
        pos, t, i = flat[index]
        item = frames[index]
        assert item["_frame_index"] == i
        for k, d in enumerate(int(x) for x in deltas):
            j = i + d
            outside = not 0 <= j < len(t)
            assert bool(item["position_is_pad"][k]) == outside
            jj = min(max(j, 0), len(t) - 1)  # LeRobot clamps to the track
            np.testing.assert_array_equal(item["position"][k].numpy(), pos[jj])
            assert item["_time_s"][k].item() == t[jj]
            if not outside:
                assert item["_time_s"][k].item() == t[i] + d
        assert item["altitude"].shape == () and item["_present_is_pad"][0] == (i == 0)


def test_delta_timestamps_must_sit_on_the_sample_grid(kept) -> None:
    with pytest.raises(
        kuration.errors.ReaderOptionError, match=r"0.5 s is not a multiple of 1/1 s"
    ):
        FrameDataset(kept.path, delta_timestamps={"position": [0.0, 0.5]})
    with pytest.raises(kuration.errors.ReaderOptionError, match="'speed', which is not one of"):
        FrameDataset(kept.path, delta_timestamps={"speed": [0.0]})
    frames = FrameDataset(kept.path, split="test")
    batch = next(iter(DataLoader(frames, batch_size=8, num_workers=0)))
    assert batch["position"].shape == (8, 2) and batch["_time_s"].dtype == torch.float64
