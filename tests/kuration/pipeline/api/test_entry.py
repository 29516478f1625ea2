"""write_dataset() and curate() take the execution options Pipeline.options() takes."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from kuration import Pipeline, curate, write_dataset
from kuration.pipeline.disk.pool import DiskSelection

pytestmark = pytest.mark.filterwarnings("ignore::kuration.errors.BudgetGranularityWarning")


@pytest.fixture
def parts(small_job: dict, adsb_time_ordered: list[Path]) -> dict:
    p = Pipeline.from_job(small_job)
    spec = dataclasses.replace(p.output_spec, container="parquet")  # npz cannot stream
    return {
        "schema": p.schema,
        "adapter": p.adapter,
        "sources": [str(u) for u in adsb_time_ordered[:4]],  # streaming reads in time order
        "segmenter": p.segmenter,
        "strategy": p.strategy_,
        "spec": spec,
        "train_hours": 1.0,
        "test_hours": 0.25,
    }


@pytest.mark.slow
def test_write_dataset_takes_executor_streaming_and_pool(parts: dict, tmp_path: Path, digests):
    """``write_dataset(..., executor="process")`` was a TypeError; each option now reaches
    the plan (its config.json says so) and the bytes are the default run's."""
    write_dataset(tmp_path / "base", **parts)
    want = digests(tmp_path / "base")
    for name, kw in (
        ("process", {"executor": "process", "workers": 2}),
        ("disk", {"pool": "disk", "checkpoint_dir": tmp_path / "ck"}),
        ("stream", {"streaming": True}),
    ):
        res = write_dataset(tmp_path / name, **parts, **kw)
        assert digests(tmp_path / name) == want, name
        options = res.config["provenance"]["execution"]["plan"]["options"]
        for key, value in kw.items():
            got = options.get(key)
            assert got == (str(value) if isinstance(value, Path) else value), (name, key)


def test_curate_takes_executor_and_pool(parts: dict, tmp_path: Path) -> None:
    args = [parts[k] for k in ("schema", "adapter", "sources", "segmenter", "strategy")]
    mem = curate(*args, 30)
    disk = curate(*args, 30, pool="disk", executor="process", workers=2)
    assert isinstance(disk, DiskSelection)
    assert [s.key for s in disk.selected] == [s.key for s in mem.selected]
