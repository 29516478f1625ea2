"""kuration.Dataset as a user handle: the HF-datasets habits, checked against the numpy reader."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kuration import FeatureInfo, iter_shards, open_dataset, shard_entries
from kuration.errors import MissingExtraError, UnknownModalityError, UnknownSplitError


@pytest.fixture(scope="module")
def path(quick: dict[str, Path]) -> Path:
    return quick["npz"]


def test_len_indexing_slices_and_split_views(path: Path) -> None:
    ds = open_dataset(path)
    entries = json.loads((path / "dataset_manifest.json").read_text())["shards"]
    assert len(ds) == len(entries) and ds.splits == ("test", "train")
    train = ds["train"]
    assert len(train) == sum(e["split"] == "train" for e in entries)
    assert {it["_split"] for it in train} == {"train"}
    assert "splits=['train']," in repr(train) and "splits=['test', 'train']," in repr(ds)
    first = ds[0]
    ref, meta = next(iter_shards(path, with_meta=True))
    assert first["_shard"] == meta["path"] == entries[0]["path"]
    assert first["_entity"] == meta["entity_id"] and first["_source"] == meta["source_id"]
    for k, v in ref.items():
        np.testing.assert_array_equal(first[k], v)
    assert ds[-1]["_shard"] == entries[-1]["path"]
    assert [it["_shard"] for it in ds[1:3]] == [e["path"] for e in entries[1:3]]
    assert len(ds.select([2, 0])) == 2 and ds.select([2, 0])[1]["_shard"] == entries[0]["path"]
    with pytest.raises(IndexError):
        ds[len(ds)]
    with pytest.raises(TypeError):
        ds[1.5]  # type: ignore[index]


def test_unknown_splits_name_the_ones_that_exist(path: Path) -> None:
    ds = open_dataset(path)
    for call in (
        lambda: ds["validation"],
        lambda: list(iter_shards(path, split="validation")),
        lambda: shard_entries(path, split="validation"),
    ):
        with pytest.raises(UnknownSplitError, match="no split 'validation'.*'test', 'train'"):
            call()
    with pytest.raises(KeyError, match="is a modality: use select_columns"):
        ds["altitude"]
    with pytest.raises(UnknownModalityError, match="unknown modalities"):
        ds.select_columns(["nope"])


def test_features_carry_dtype_shape_and_the_schema_unit(path: Path) -> None:
    f = open_dataset(path).features
    assert f["position"] == FeatureInfo("float64", (2,), "deg", "field:position")
    assert f["altitude"].unit == "ft" and f["vertical_rate"].unit == "ft/min"
    assert f["onground"].unit is None  # unitless
    assert f["turn_p90"] == FeatureInfo("float32", (), "deg", "segment:turn_p90")  # declared


def test_to_arrow_has_one_row_per_real_step(path: Path) -> None:
    ds = open_dataset(path)
    table = ds.to_arrow()
    entries = shard_entries(path)
    assert table.num_rows == sum(e["n_steps"] for e in entries)  # pad rows removed
    assert table.column_names[:6] == [
        "_split",
        "_source",
        "_entity",
        "_shard",
        "_time_s",
        "_present",
    ]
    assert not np.isnan(table.column("_time_s").to_numpy()).any()
    pos = table.column("position").combine_chunks().flatten().to_numpy().reshape(-1, 2)
    ref = np.concatenate([a["position"] for a in iter_shards(path)])
    np.testing.assert_array_equal(pos, ref)
    assert json.loads(table.schema.field("position").metadata[b"kuration.unit"]) == "deg"
    # the grid: consecutive real steps of one shard are one sample period apart
    first = table.filter(
        table.column("_shard").to_numpy(zero_copy_only=False) == entries[0]["path"]
    )
    assert np.allclose(np.diff(first.column("_time_s").to_numpy()), 1.0)
    assert first.column("_time_s")[0].as_py() == entries[0]["start_time_s"]
    df = ds.select_columns("altitude").to_pandas()
    assert list(df.columns) == [*table.column_names[:6], "altitude"] and len(df) == table.num_rows
    pl = ds["test"].to_polars()
    assert pl.height == sum(e["n_steps"] for e in entries if e["split"] == "test")
    assert pl["position"].dtype.shape == (2,)


def test_to_pandas_without_pandas_names_the_extra(path: Path, monkeypatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "pandas", None)  # an import of pandas now fails
    with pytest.raises(MissingExtraError, match=r"pip install 'kuration-sdk\[pandas\]'"):
        open_dataset(path)["train"].to_pandas()


def test_filter_shuffle_and_streaming(path: Path) -> None:
    ds = open_dataset(path)
    long = ds.filter(lambda e: e["n_steps"] == 128)
    assert len(long) and all(it["_time_s"].shape == (128,) for it in long)
    one = ds.shuffle(seed=7)
    assert [e["path"] for e in one.entries()] == [e["path"] for e in ds.shuffle(seed=7).entries()]
    order = np.random.default_rng(7).permutation(len(ds))
    assert [e["path"] for e in one.entries()] == [ds.entries()[i]["path"] for i in order]
    batches = list(ds["train"].select_columns(["position"]).iter_batches())
    assert len(batches) == len(ds["train"])
    assert sum(b.num_rows for b in batches) == sum(e["n_steps"] for e in ds["train"].entries())


def test_kur_inspect_shows_each_modality_unit(path: Path) -> None:
    import subprocess
    import sys

    kur = str(Path(sys.executable).parent / "kur")
    text = subprocess.run([kur, "inspect", str(path)], capture_output=True, text=True, check=True)
    line = next(ln for ln in text.stdout.splitlines() if "vertical_rate" in ln)
    assert "ft/min" in line and "field:vertical_rate" in line
    # the execution is one line (executor, workers, stages); config.json keeps the rest
    ex = next(ln for ln in text.stdout.splitlines() if ln.startswith("execution:"))
    assert " x1, " in ex and "stages in" in ex and "telemetry'" not in text.stdout
    rep = subprocess.run(
        [kur, "inspect", str(path), "--json"], capture_output=True, text=True, check=True
    )
    assert json.loads(rep.stdout)["modalities"]["position"]["unit"] == "deg"
