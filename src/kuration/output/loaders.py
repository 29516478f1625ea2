"""Reading a curated dataset back (numpy only).

Every read first checks the commit record: the dataset must be in
``state="committed"`` and the manifest must hash to the checksum the commit
pins.  Metadata must be regular files (no symlinks, no special files), JSON is
parsed strictly (no duplicate keys, no NaN), shard paths must stay inside the
dataset root, and each shard's bytes are checked against the recorded size and
SHA-256 before decoding (``verify=False`` skips the hashing for trusted data).
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DatasetIntegrityError
from ..jsonio import loads_strict
from .commit import COMMIT_NAME, CONFIG_NAME, FORMAT, MANIFEST_NAME
from .containers import get_container

__all__ = ["Dataset", "iter_shards", "open_dataset", "read_shard_arrays", "shard_entries"]


def _read_regular(path: Path, root: Path) -> bytes:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise DatasetIntegrityError("missing file", path=str(path)) from None
    if stat.S_ISLNK(st.st_mode):
        raise DatasetIntegrityError("refusing a symbolic link", path=str(path))
    if not stat.S_ISREG(st.st_mode):
        raise DatasetIntegrityError("not a regular file", path=str(path))
    return path.read_bytes()


def _strict(data: bytes, path: Path) -> Any:
    try:
        return loads_strict(data, what=str(path))
    except ValueError as exc:
        raise DatasetIntegrityError(str(exc), path=str(path)) from None


class Dataset:
    """A committed dataset opened for reading: ``root``, ``commit``, ``manifest``, ``config``.

    Raises
    ------
    DatasetIntegrityError
        Missing/invalid commit, a dataset still being written, metadata whose
        checksum does not match the commit, malformed JSON.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        p = Path(path)
        root = p.parent if p.name == MANIFEST_NAME else p
        self.root = root.resolve()
        commit_bytes = _read_regular(self.root / COMMIT_NAME, self.root)
        commit = _strict(commit_bytes, self.root / COMMIT_NAME)
        if not isinstance(commit, dict) or commit.get("format") != FORMAT:
            raise DatasetIntegrityError(
                f"not a {FORMAT} commit record", path=str(self.root / COMMIT_NAME)
            )
        if commit.get("state") != "committed":
            raise DatasetIntegrityError(
                f"dataset is in state {commit.get('state')!r}, not committed "
                "(a write was interrupted or is running)",
                path=str(self.root),
            )
        man_bytes = _read_regular(self.root / MANIFEST_NAME, self.root)
        if hashlib.sha256(man_bytes).hexdigest() != commit.get("manifest_sha256"):
            raise DatasetIntegrityError(
                "manifest does not match the commit's checksum", path=str(self.root / MANIFEST_NAME)
            )
        cfg_bytes = _read_regular(self.root / CONFIG_NAME, self.root)
        if hashlib.sha256(cfg_bytes).hexdigest() != commit.get("config_sha256"):
            raise DatasetIntegrityError(
                "config does not match the commit's checksum", path=str(self.root / CONFIG_NAME)
            )
        self.commit_bytes = commit_bytes
        self.commit: dict[str, Any] = commit
        self.manifest: dict[str, Any] = _strict(man_bytes, self.root / MANIFEST_NAME)
        self.config: dict[str, Any] = _strict(cfg_bytes, self.root / CONFIG_NAME)
        if not isinstance(self.manifest.get("shards"), list):
            raise DatasetIntegrityError(
                "manifest has no shard list", path=str(self.root / MANIFEST_NAME)
            )

    def entries(self, split: str | None = None) -> list[dict[str, Any]]:
        return [e for e in self.manifest["shards"] if split is None or e.get("split") == split]

    def shard_path(self, entry: dict[str, Any]) -> Path:
        rel = entry.get("path")
        if not isinstance(rel, str) or not rel or os.path.isabs(rel):
            raise DatasetIntegrityError(f"bad shard path {rel!r}", path=str(self.root))
        full = (self.root / rel).resolve()
        if self.root not in full.parents:
            raise DatasetIntegrityError(
                f"shard path {rel!r} escapes the dataset root", path=str(self.root)
            )
        return self.root / rel


def open_dataset(path: str | os.PathLike[str]) -> Dataset:
    """Open and check a committed dataset (directory or its ``dataset_manifest.json``)."""
    return Dataset(path)


def shard_entries(
    dataset: str | os.PathLike[str] | Dataset, split: str | None = None
) -> list[dict[str, Any]]:
    """Manifest entries (optionally of one split), in manifest order."""
    ds = dataset if isinstance(dataset, Dataset) else Dataset(dataset)
    return ds.entries(split)


def read_shard_arrays(
    entry: dict[str, Any],
    container: str,
    *,
    root: str | os.PathLike[str],
    modalities: dict[str, Any] | None = None,
    verify: bool = True,
) -> dict[str, np.ndarray]:
    """Read one shard: every array as stored (declared dtypes restored when ``modalities`` is given).

    Raises
    ------
    DatasetIntegrityError
        Path escapes, symlinks, special files, size or SHA-256 mismatch.
    """
    ds_root = Path(root).resolve()
    rel = entry.get("path")
    if (
        not isinstance(rel, str)
        or os.path.isabs(rel)
        or ds_root not in (ds_root / rel).resolve().parents
    ):
        raise DatasetIntegrityError(
            f"shard path {rel!r} escapes the dataset root", path=str(ds_root)
        )
    path = ds_root / rel
    data = _read_regular(path, ds_root)
    if verify:
        if len(data) != entry.get("size"):
            raise DatasetIntegrityError(
                f"shard is {len(data)} bytes, manifest says {entry.get('size')}", path=str(path)
            )
        if hashlib.sha256(data).hexdigest() != entry.get("sha256"):
            raise DatasetIntegrityError("shard SHA-256 does not match the manifest", path=str(path))
    try:
        arrays = get_container(container).loads(data)
    except (ValueError, OSError, KeyError) as exc:
        raise DatasetIntegrityError(f"cannot decode shard: {exc}", path=str(path)) from None
    for name, m in (modalities or {}).items():
        if name not in arrays:
            raise DatasetIntegrityError(f"shard lacks modality {name!r}", path=str(path))
        arrays[name] = arrays[name].astype(np.dtype(m["dtype"]), copy=False)
    return arrays


def iter_shards(
    dataset: str | os.PathLike[str] | Dataset,
    *,
    split: str | None = None,
    modalities: Sequence[str] | None = None,
    trim: bool = True,
    with_meta: bool = False,
    verify: bool = True,
) -> Iterator[Any]:
    """Yield each shard's arrays: the declared modalities plus ``_present``.

    Parameters
    ----------
    dataset : path or Dataset
        Dataset directory or its ``dataset_manifest.json``.
    split : str, optional
        Only this split.
    modalities : sequence of str, optional
        Only these modalities (``_present`` always comes along when written).
    trim : bool
        Cut padded shards back to their real ``_n_steps``.
    with_meta : bool
        Yield ``(arrays, entry)`` pairs.
    verify : bool
        Check each shard's size and SHA-256 before decoding.

    Yields
    ------
    dict of str to ndarray
        ``arrays[name]`` has shape (L, *shape) and the declared dtype.

    Raises
    ------
    DatasetIntegrityError
    """
    ds = dataset if isinstance(dataset, Dataset) else Dataset(dataset)
    mods = ds.manifest["modalities"]
    wanted = list(mods) if modalities is None else list(modalities)
    unknown = [m for m in wanted if m not in mods]
    if unknown:
        raise KeyError(f"unknown modalities {unknown} (dataset has {sorted(mods)})")
    for entry in ds.entries(split):
        arrays = read_shard_arrays(
            entry,
            ds.manifest["container"],
            root=ds.root,
            modalities={k: mods[k] for k in wanted},
            verify=verify,
        )
        n = int(arrays.pop("_n_steps"))
        out = {k: arrays[k] for k in wanted}
        if "_present" in arrays:
            out["_present"] = arrays["_present"].astype(bool)
        if trim:
            out = {k: v[:n] for k, v in out.items()}
        yield (out, entry) if with_meta else out
