"""kuration.read.torch.ShardDataset with a real DataLoader (two worker processes)."""

from __future__ import annotations

import json
import sys

import pytest

torch = pytest.importorskip("torch")

from torch.utils.data import DataLoader  # noqa: E402

from kuration import iter_shards, run_job  # noqa: E402
from kuration.read.torch import ShardDataset  # noqa: E402

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
    for k, v in ref.items():
        assert torch.equal(item[k], torch.from_numpy(v))
    assert ds[-1]["_meta"]["path"] == entries[-1]["path"]
    with pytest.raises(IndexError):
        ds[len(ds)]


def test_dataloader_with_two_workers(padded) -> None:
    length = padded.manifest["shard_length"]

    ds = ShardDataset(padded.path, trim=False, transform=_scale_altitude, include_meta=True)
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
