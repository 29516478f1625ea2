"""The readers refuse anything but a committed, intact dataset -- and load a moved one."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from kuration import iter_shards, open_dataset, read_shard_arrays, shard_entries
from kuration.errors import DatasetIntegrityError
from kuration.extend import get_container


@pytest.fixture
def ds(tmp_path: Path, base_b) -> Path:
    dest = tmp_path / "ds"
    shutil.copytree(base_b.path, dest)
    return dest


def _repin(root: Path, name: str, data: bytes) -> None:
    """Replace a metadata file and re-pin its checksum in the commit (a consistent forgery)."""
    (root / name).write_bytes(data)
    key = {
        "dataset_manifest.json": "manifest_sha256",
        "config.json": "config_sha256",
        ".kuration_output_spec.json": "output_spec_sha256",
    }[name]
    commit = json.loads((root / "dataset.commit.json").read_text())
    commit[key] = hashlib.sha256(data).hexdigest()
    (root / "dataset.commit.json").write_text(json.dumps(commit))


def _edit_manifest(root: Path, fn) -> None:
    man = json.loads((root / "dataset_manifest.json").read_text())
    fn(man)
    _repin(root, "dataset_manifest.json", json.dumps(man).encode())


def test_a_moved_dataset_loads_by_directory_or_manifest_path(ds: Path, base_b) -> None:
    moved = ds.parent / "elsewhere" / "moved"
    shutil.move(ds, moved)
    n = len(base_b.manifest["shards"])
    assert sum(1 for _ in iter_shards(moved)) == n
    assert sum(1 for _ in iter_shards(moved / "dataset_manifest.json")) == n
    entry = shard_entries(moved, split="test")[0]
    arrays = read_shard_arrays(entry, "npz")  # the entry knows its dataset
    assert arrays["_n_steps"] == entry["n_steps"]


def test_duplicate_keys_and_non_finite_numbers_are_refused(ds: Path) -> None:
    text = (ds / "dataset_manifest.json").read_text()
    _repin(ds, "dataset_manifest.json", text.replace("{", '{"format": "x", ', 1).encode())
    with pytest.raises(DatasetIntegrityError, match="duplicate key 'format'"):
        open_dataset(ds)
    _repin(
        ds, "dataset_manifest.json", text.replace('"sample_hz": 1.0', '"sample_hz": NaN').encode()
    )
    with pytest.raises(DatasetIntegrityError, match="non-finite"):
        open_dataset(ds)


@pytest.mark.parametrize(
    "breakage",
    [
        lambda m: m["modalities"]["altitude"].update(dtype="object"),
        lambda m: m["modalities"]["position"].update(shape=[-2]),
        lambda m: m["modalities"].update(_sneaky={"dtype": "uint8", "shape": []}),
        lambda m: m["shards"][0].update(sha256="zz"),
        lambda m: m.update(shards={}),
    ],
)
def test_malformed_embedded_schemas_are_refused(ds: Path, breakage) -> None:
    _edit_manifest(ds, breakage)
    with pytest.raises(DatasetIntegrityError):
        open_dataset(ds)


def test_config_schema_and_marker_must_agree(ds: Path) -> None:
    cfg = json.loads((ds / "config.json").read_text())
    cfg["schema"]["sample_hz"] = -1
    _repin(ds, "config.json", json.dumps(cfg).encode())
    with pytest.raises(DatasetIntegrityError, match="embedded schema"):
        open_dataset(ds)


def test_manifest_must_agree_with_the_pinned_output_spec(ds: Path) -> None:
    _edit_manifest(ds, lambda m: m["modalities"]["onground"].update(dtype="float64"))
    with pytest.raises(DatasetIntegrityError, match="commit-pinned output spec"):
        open_dataset(ds)


def test_symlinked_metadata_and_special_files_are_refused(ds: Path, tmp_path: Path) -> None:
    real = tmp_path / "manifest-copy.json"
    shutil.copy(ds / "dataset_manifest.json", real)
    (ds / "dataset_manifest.json").unlink()
    (ds / "dataset_manifest.json").symlink_to(real)
    with pytest.raises(DatasetIntegrityError, match="symbolic link"):
        open_dataset(ds)
    (ds / "dataset_manifest.json").unlink()
    shutil.copy(real, ds / "dataset_manifest.json")
    (ds / "config.json").unlink()
    os.mkfifo(ds / "config.json")  # opening a FIFO must not block the reader
    with pytest.raises(DatasetIntegrityError, match="not a regular file"):
        open_dataset(ds)


def test_shard_paths_must_stay_inside_the_root(ds: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.npz"
    first = json.loads((ds / "dataset_manifest.json").read_text())["shards"][0]
    shutil.copy(ds / first["path"], outside)
    _edit_manifest(ds, lambda m: m["shards"][0].update(path="../outside.npz"))
    with pytest.raises(DatasetIntegrityError, match="escapes"):
        list(iter_shards(ds))


def test_symlinked_shards_and_split_directories_are_refused(ds: Path, tmp_path: Path) -> None:
    entry = shard_entries(ds)[0]
    shard = ds / entry["path"]
    keep = tmp_path / "keep.npz"
    shutil.move(shard, keep)
    shard.symlink_to(keep)
    with pytest.raises(DatasetIntegrityError, match="symbolic link"):
        list(iter_shards(ds))
    shard.unlink()
    shutil.move(keep, shard)
    split = ds / entry["split"]
    shutil.move(split, tmp_path / "split-elsewhere")
    split.symlink_to(tmp_path / "split-elsewhere")
    with pytest.raises(DatasetIntegrityError, match="symbolic link"):
        list(iter_shards(ds))


def test_states_other_than_committed_are_refused(ds: Path) -> None:
    commit = json.loads((ds / "dataset.commit.json").read_text())
    (ds / "dataset.commit.json").write_text(json.dumps({**commit, "state": "writing"}))
    with pytest.raises(DatasetIntegrityError, match="state 'writing'"):
        open_dataset(ds)
    (ds / "dataset.commit.json").unlink()
    with pytest.raises(DatasetIntegrityError, match="not a kuration dataset"):
        open_dataset(ds)


def test_pickled_arrays_are_never_loaded(ds: Path) -> None:
    entry = shard_entries(ds)[0]
    buf = io.BytesIO()
    np.savez(buf, position=np.array([{"x": 1}], dtype=object), _n_steps=np.array(1))
    data = buf.getvalue()
    (ds / entry["path"]).write_bytes(data)
    _edit_manifest(
        ds, lambda m: m["shards"][0].update(size=len(data), sha256=hashlib.sha256(data).hexdigest())
    )
    with pytest.raises(DatasetIntegrityError, match="cannot decode"):
        list(iter_shards(ds))


def test_legacy_absolute_entries_rebase_onto_the_given_directory(ds: Path, tmp_path: Path) -> None:
    stale = tmp_path / "gone"
    _edit_manifest(ds, lambda m: [e.update(path=str(stale / e["path"])) for e in m["shards"]])
    arrays = list(iter_shards(ds))
    assert len(arrays) == len(shard_entries(ds))
    man = json.loads((ds / "dataset_manifest.json").read_text())
    for e in man["shards"]:
        e["path"] = str(ds / e["split"] / Path(e["path"]).name)
    assert len(list(iter_shards(man))) == len(arrays)  # a manifest dictionary, absolute paths


def test_subsets_untrimmed_reads_and_container_override(ds: Path, base_b) -> None:
    only = list(iter_shards(ds, split="train", modalities=["onground"], trim=False, with_meta=True))
    assert {m["split"] for _, m in only} == {"train"}
    for arr, meta in only:
        assert set(arr) == {"onground", "_present", "_time_s"}
        assert arr["onground"].shape == (base_b.manifest["shard_length"],)
        assert arr["onground"].dtype == np.uint8
        assert int(arr["_present"].sum()) <= meta["n_steps"]
    with pytest.raises(KeyError, match="unknown modalities"):
        list(iter_shards(ds, modalities=["nope"]))
    npz = get_container("npz")
    assert len(list(iter_shards(ds, container=npz, registry={"npz": npz}))) == len(
        shard_entries(ds)
    )
