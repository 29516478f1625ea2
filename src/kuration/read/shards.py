"""Reading one shard: path checks, size and SHA-256 verification, decoding, trimming.

The building blocks of :mod:`kuration.read.loaders`; a manifest entry from
:meth:`kuration.Dataset.entries` carries its dataset root and commit checksum,
so :func:`read_shard_arrays` can check it on its own.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ..errors import DatasetIntegrityError
from ..output.commit import read_commit, read_regular
from ..output.containers import Container, get_container
from .lerobot import read_lerobot_shard
from .packed import read_packed_shard
from .remote import is_url, remote_dataset, remote_shard_bytes


class OpenedDataset(Protocol):
    """What reading a shard needs of a :class:`~kuration.Dataset` (its loader imports this
    module, so the class is named here by these two attributes only)."""

    root: Path | str | None
    manifest: Any


__all__ = ["read_shard_arrays", "shard_arrays"]

ROOT_KEY = "_dataset_root"
COMMIT_KEY = "_commit_sha256"
IDENTITY_KEY = "_commit_identity"  # a remote commit record's version/ETag


def shard_file(entry: Mapping[str, Any], root: Path | None) -> Path:
    rel = entry.get("path")
    if not isinstance(rel, str) or not rel:
        raise DatasetIntegrityError(f"bad shard path {rel!r}")
    if root is None:
        if not os.path.isabs(rel):
            raise DatasetIntegrityError(f"a manifest dictionary needs absolute paths, got {rel!r}")
        return Path(rel)
    if os.path.isabs(rel):  # legacy entry: rebase onto the directory we were given
        rel = f"{entry.get('split')}/{Path(rel).name}"
    parts = Path(rel).parts
    if any(p in ("..", ".", "") for p in parts) or "\\" in rel:
        raise DatasetIntegrityError(f"shard path {rel!r} escapes the dataset root", path=str(root))
    full = root.joinpath(*parts)
    try:
        resolved = full.resolve(strict=False)
    except OSError:
        raise DatasetIntegrityError(f"cannot resolve shard path {rel!r}", path=str(root)) from None
    if resolved != full:
        raise DatasetIntegrityError(
            f"shard path {rel!r} passes through a symbolic link or escapes the root",
            path=str(root),
        )
    return full


def resolve_container(
    container: str | Container | None,
    default: str | None,
    registry: Mapping[str, Container] | None,
) -> Container:
    if container is not None and not isinstance(container, str):
        return container
    name = container or default
    if name is None:
        raise DatasetIntegrityError("no container given and the entry names none")
    if registry is not None and name in registry:
        return registry[name]
    try:
        return get_container(name)
    except KeyError as exc:
        raise DatasetIntegrityError(str(exc)) from None


def read_shard_arrays(
    entry: Mapping[str, Any],
    container: str | Container | None = None,
    *,
    verify: bool = True,
    root: str | os.PathLike[str] | None = None,
    modalities: Mapping[str, Mapping[str, Any]] | None = None,
    registry: Mapping[str, Container] | None = None,
) -> dict[str, np.ndarray]:
    """Read one shard: every stored array (``_n_steps`` and ``_present`` included).

    Parameters
    ----------
    entry : mapping
        A manifest entry, best one from :func:`shard_entries` (it knows its root).
    container : str or Container
        The dataset's container (the manifest's ``container``).
    verify : bool
        Check the recorded size and SHA-256 before decoding.
    root : path, optional
        The dataset directory, when ``entry`` does not carry it.
    modalities : mapping, optional
        The manifest's modality block: restores declared dtypes and shapes.

    Returns
    -------
    dict of str to ndarray
        Untrimmed arrays, ``(L, *shape)``.

    Raises
    ------
    DatasetIntegrityError
        Path escapes, symlinks, special files, size or SHA-256 mismatch, an
        undecodable shard, a missing modality, a changed commit record.
    """
    base = root if root is not None else entry.get(ROOT_KEY)
    path: Path | str
    if base is not None and is_url(base):  # an object store: read through fsspec
        arrays, path = _read_remote(entry, str(base).rstrip("/"), verify, container, registry)
    else:
        ds_root = Path(base).resolve() if base is not None else None
        path = shard_file(entry, ds_root)
        if "row_group" in entry:  # packed into a shared Parquet file (layout="packed")
            arrays = read_packed_shard(entry, path, verify=verify)
            _check_generation(entry, ds_root)
        elif "lerobot_episode" in entry:  # rows of a LeRobot data file (layout="lerobot")
            arrays = read_lerobot_shard(entry, path, verify=verify)
            _check_generation(entry, ds_root)
        else:
            arrays = _read_file(entry, path, verify, container, registry, ds_root)
    if "_n_steps" in arrays and int(arrays["_n_steps"]) != entry.get(
        "n_steps", int(arrays["_n_steps"])
    ):
        raise DatasetIntegrityError(
            f"shard holds {int(arrays['_n_steps'])} real steps, manifest says {entry.get('n_steps')}",
            path=str(path),
        )
    for name, m in (modalities or {}).items():
        if name not in arrays:
            raise DatasetIntegrityError(f"shard lacks modality {name!r}", path=str(path))
        a = arrays[name]
        shape = tuple(m.get("shape", ()))
        if a.shape[1:] != shape:
            if a.ndim == 0 or int(np.prod(a.shape[1:])) != int(np.prod(shape)):
                raise DatasetIntegrityError(
                    f"modality {name!r} has shape {a.shape}, declared (L, {shape})", path=str(path)
                )
            a = a.reshape((a.shape[0], *shape))
        arrays[name] = a.astype(np.dtype(m["dtype"]), copy=False)
    return arrays


def _check_generation(entry: Mapping[str, Any], ds_root: Path | None) -> None:
    pinned = entry.get(COMMIT_KEY)
    if ds_root is not None and isinstance(pinned, str):
        _, now = read_commit(ds_root)
        if hashlib.sha256(now).hexdigest() != pinned:
            raise DatasetIntegrityError(
                "the dataset changed while it was being read (a writer replaced it)",
                path=str(ds_root),
            )


def _read_file(
    entry: Mapping[str, Any],
    path: Path,
    verify: bool,
    container: str | Container | None,
    registry: Mapping[str, Container] | None,
    ds_root: Path | None,
) -> dict[str, np.ndarray]:
    """A shard file of its own: read once, checked, decoded from that snapshot."""
    data = read_regular(path)
    _verify(data, entry, str(path), verify)
    _check_generation(entry, ds_root)
    return _decode(data, str(path), container, registry)


def _read_remote(
    entry: Mapping[str, Any],
    url: str,
    verify: bool,
    container: str | Container | None,
    registry: Mapping[str, Container] | None,
) -> tuple[dict[str, np.ndarray], str]:
    """A shard object of a remote dataset: fetched once, checked, the commit record's
    identity re-checked (see :mod:`kuration.read.remote`), decoded from that snapshot."""
    if "row_group" in entry or "lerobot_episode" in entry:
        raise DatasetIntegrityError(
            "a packed or LeRobot dataset (layout 'packed', 'lerobot') is read from a local folder",
            path=url,
        )
    data, where = remote_shard_bytes(entry, url)
    _verify(data, entry, where, verify)
    pinned = entry.get(COMMIT_KEY)
    if isinstance(pinned, str):
        remote_dataset(url).check_generation(pinned, str(entry.get(IDENTITY_KEY, "")))
    return _decode(data, where, container, registry), where


def _verify(data: bytes, entry: Mapping[str, Any], path: str, verify: bool) -> None:
    if verify:
        if len(data) != entry.get("size"):
            raise DatasetIntegrityError(
                f"shard is {len(data)} bytes, manifest says {entry.get('size')}", path=path
            )
        if hashlib.sha256(data).hexdigest() != entry.get("sha256"):
            raise DatasetIntegrityError("shard SHA-256 does not match the manifest", path=path)


def _decode(
    data: bytes,
    path: str,
    container: str | Container | None,
    registry: Mapping[str, Container] | None,
) -> dict[str, np.ndarray]:
    codec = resolve_container(container, None, registry)
    try:
        return codec.loads(data)
    except ImportError:
        raise
    except Exception as exc:
        raise DatasetIntegrityError(f"cannot decode shard: {exc}", path=str(path)) from None


def shard_arrays(
    ds: OpenedDataset,
    entry: Mapping[str, Any],
    columns: Sequence[str],
    *,
    trim: bool = True,
    verify: bool = True,
    container: Container | None = None,
) -> dict[str, np.ndarray]:
    """One shard's modalities ``columns``, ``_present`` (when written), the frame masks
    ``_present_<name>`` of ``media:`` modalities, and ``_time_s``.

    ``_time_s`` is float64 seconds since the Unix epoch per step (NaN on pad
    rows); shards written before it existed get it from the manifest
    (``start_time_s + i / sample_hz``).

    Raises
    ------
    DatasetIntegrityError
        See :func:`read_shard_arrays`.
    """
    mods = ds.manifest["modalities"]
    codec = container or resolve_container(None, ds.manifest["container"], None)
    arrays = read_shard_arrays(
        entry, codec, root=ds.root, modalities={k: mods[k] for k in columns}, verify=verify
    )
    n = int(arrays.pop("_n_steps", entry["n_steps"]))
    out = {k: arrays[k] for k in columns}
    if "_present" in arrays:
        out["_present"] = arrays["_present"].astype(bool, copy=False)
    for k in columns:  # media modalities carry their frame mask (see kuration.output.media)
        if f"_present_{k}" in arrays:
            out[f"_present_{k}"] = arrays[f"_present_{k}"].astype(bool, copy=False)
    time_s = arrays.get("_time_s")
    if time_s is None:  # written before _time_s existed
        length = len(out[columns[0]]) if columns else n
        hz = float(ds.manifest.get("sample_hz", 1.0))
        time_s = float(entry.get("start_time_s", 0.0)) + np.arange(length) / hz
        time_s[n:] = np.nan
    out["_time_s"] = np.asarray(time_s, dtype=np.float64)
    if trim:
        out = {k: v[:n] for k, v in out.items()}
    return out
