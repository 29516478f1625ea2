"""Reading a curated dataset back (numpy only).

Opening a dataset checks, before any shard is decoded:

* metadata files are regular files (no symlinks, FIFOs or devices) parsed as
  strict JSON (no duplicate keys, no NaN/Infinity);
* ``dataset.commit.json`` is in ``state="committed"`` (a dataset being
  written, or whose writer was killed, is refused) and the manifest, config
  and fingerprint marker hash to the checksums it pins;
* the manifest's embedded modality schema is well formed and agrees with the
  commit-pinned output spec, and the config's embedded schema parses.

Each shard path must be relative and resolve, without symlinks, to a regular
file beneath the dataset root; its bytes are read once, checked against the
recorded size and SHA-256 (``verify=False`` skips the hashing), and decoded
from that same snapshot.  After each shard the commit record is re-read: if
it changed, the dataset was replaced mid-read and the iteration stops with an
error rather than mixing generations.  A moved or copied dataset loads, since
current entries are relative to the directory passed.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..contracts.schema import SchemaSpec
from ..core.jsonio import loads_strict
from ..errors import DatasetIntegrityError, SchemaError, UnknownNameError
from ..output.commit import (
    COMMIT_NAME,
    CONFIG_NAME,
    FORMAT,
    MANIFEST_NAME,
    MARKER_NAME,
    read_commit,
    read_regular,
)
from ..output.containers import Container, get_container

__all__ = ["Dataset", "iter_shards", "open_dataset", "read_shard_arrays", "shard_entries"]

_SHA = re.compile(r"[0-9a-f]{64}")
_ROOT_KEY = "_dataset_root"
_COMMIT_KEY = "_commit_sha256"


def _strict(data: bytes, path: Path) -> Any:
    try:
        return loads_strict(data, what=str(path))
    except ValueError as exc:
        raise DatasetIntegrityError(str(exc), path=str(path)) from None


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_modalities(mods: Any, where: str) -> dict[str, dict[str, Any]]:
    if not isinstance(mods, dict) or not mods:
        raise DatasetIntegrityError("manifest 'modalities' must be a non-empty object", path=where)
    for name, m in mods.items():
        if not isinstance(name, str) or not name or name.startswith("_"):
            raise DatasetIntegrityError(f"bad modality name {name!r}", path=where)
        if not isinstance(m, dict) or not isinstance(m.get("dtype"), str):
            raise DatasetIntegrityError(f"modality {name!r} has no dtype", path=where)
        try:
            dt = np.dtype(m["dtype"])
        except TypeError:
            raise DatasetIntegrityError(
                f"modality {name!r}: unknown dtype {m['dtype']!r}", path=where
            ) from None
        if dt.kind not in "biuf":
            raise DatasetIntegrityError(f"modality {name!r}: dtype {dt} is not numeric", path=where)
        shape = m.get("shape")
        if not isinstance(shape, list) or not all(_is_int(s) and s >= 0 for s in shape):
            raise DatasetIntegrityError(f"modality {name!r}: malformed shape {shape!r}", path=where)
    return mods


def _check_entry(e: Any, where: str) -> None:
    if not isinstance(e, dict):
        raise DatasetIntegrityError("a manifest shard entry is not an object", path=where)
    if not isinstance(e.get("path"), str) or not e["path"]:
        raise DatasetIntegrityError(f"shard entry without a path: {e!r}", path=where)
    if not isinstance(e.get("split"), str) or not _is_int(e.get("n_steps")) or e["n_steps"] < 0:
        raise DatasetIntegrityError(f"malformed shard entry {e['path']!r}", path=where)
    size, sha = e.get("size"), e.get("sha256")
    if not (_is_int(size) and size >= 0 and isinstance(sha, str) and _SHA.fullmatch(sha)):
        raise DatasetIntegrityError(
            f"shard entry {e['path']!r} lacks a valid size/sha256", path=where
        )


class Dataset:
    """A committed dataset opened for reading.

    Parameters
    ----------
    path : path or mapping
        The dataset directory, its ``dataset_manifest.json``, or (legacy) a
        manifest dictionary whose shard paths are absolute; a dictionary has
        no commit record to check.

    Attributes
    ----------
    root : Path or None
    commit, manifest, config : dict
    commit_bytes : bytes
        The exact commit record this reader is bound to.

    Raises
    ------
    DatasetIntegrityError
        Missing or malformed commit, a dataset still being written (or whose
        writer died), metadata not matching the commit's checksums, symlinked
        or special metadata files, duplicate JSON keys, non-finite JSON
        numbers, malformed embedded schemas.
    """

    def __init__(self, path: str | os.PathLike[str] | Mapping[str, Any]) -> None:
        self.config: dict[str, Any] = {}
        self.commit: dict[str, Any] = {}
        self.commit_bytes = b""
        if isinstance(path, Mapping):
            self.root: Path | None = None
            self.manifest = dict(path)
            self._validate_manifest("<manifest dict>")
            return
        p = Path(path)
        root = p.parent if p.name == MANIFEST_NAME else p
        self.root = root.resolve()
        commit, commit_bytes = read_commit(self.root)
        if commit is None:
            raise DatasetIntegrityError(
                f"no {COMMIT_NAME}: not a kuration dataset", path=str(self.root)
            )
        if commit.get("state") != "committed":
            raise DatasetIntegrityError(
                f"dataset is in state {commit.get('state')!r}, not committed "
                "(a write is running or was interrupted; resume it with resume=True)",
                path=str(self.root),
            )
        man_bytes = self._pinned(MANIFEST_NAME, commit.get("manifest_sha256"))
        cfg_bytes = self._pinned(CONFIG_NAME, commit.get("config_sha256"))
        marker: Any = None
        if commit.get("output_spec_sha256") is not None:
            marker_bytes = self._pinned(MARKER_NAME, commit.get("output_spec_sha256"))
            marker = _strict(marker_bytes, self.root / MARKER_NAME)
        self.commit_bytes = commit_bytes
        self.commit = commit
        self.manifest = _strict(man_bytes, self.root / MANIFEST_NAME)
        self.config = _strict(cfg_bytes, self.root / CONFIG_NAME)
        where = str(self.root / MANIFEST_NAME)
        if not isinstance(self.manifest, dict) or self.manifest.get("format") != FORMAT:
            raise DatasetIntegrityError(f"not a {FORMAT} manifest", path=where)
        self._validate_manifest(where)
        if not isinstance(self.config, dict):
            raise DatasetIntegrityError("config is not an object", path=str(self.root))
        schema = self.config.get("schema")
        if schema is not None:
            try:
                SchemaSpec.from_dict(schema)
            except (SchemaError, TypeError, ValueError) as exc:
                raise DatasetIntegrityError(
                    f"malformed embedded schema: {exc}", path=str(self.root / CONFIG_NAME)
                ) from None
        if marker is not None:
            self._check_marker(marker)

    def _pinned(self, name: str, sha: Any) -> bytes:
        path = Path(self.root or ".") / name
        if not isinstance(sha, str):
            raise DatasetIntegrityError(f"the commit pins no checksum for {name}", path=str(path))
        data = read_regular(path)
        if hashlib.sha256(data).hexdigest() != sha:
            raise DatasetIntegrityError(
                f"{name} does not match the commit's checksum", path=str(path)
            )
        return data

    def _validate_manifest(self, where: str) -> None:
        man = self.manifest
        if not isinstance(man.get("shards"), list):
            raise DatasetIntegrityError("manifest has no shard list", path=where)
        if not isinstance(man.get("container"), str):
            raise DatasetIntegrityError("manifest names no container", path=where)
        sl = man.get("shard_length")
        if not (_is_int(sl) and sl >= 1):
            raise DatasetIntegrityError(f"malformed shard_length {sl!r}", path=where)
        _check_modalities(man.get("modalities"), where)
        for e in man["shards"]:
            _check_entry(e, where)

    def _check_marker(self, marker: Any) -> None:
        where = str(self.root / MARKER_NAME) if self.root else MARKER_NAME
        try:
            mods = marker["run"]["output"]["modalities"]
            pinned = {k: (np.dtype(v["dtype"]), list(v.get("shape", []))) for k, v in mods.items()}
        except (KeyError, TypeError, AttributeError):
            raise DatasetIntegrityError("malformed fingerprint marker", path=where) from None
        ours = {
            k: (np.dtype(v["dtype"]), list(v["shape"]))
            for k, v in self.manifest["modalities"].items()
        }
        if pinned != ours:
            raise DatasetIntegrityError(
                "manifest modalities disagree with the commit-pinned output spec", path=where
            )
        if marker.get("run_fingerprint") != self.commit.get("run_fingerprint"):
            raise DatasetIntegrityError("fingerprint marker names another run", path=where)

    @property
    def modalities(self) -> dict[str, dict[str, Any]]:
        return dict(self.manifest["modalities"])

    def select_modalities(self, names: Sequence[str] | None) -> list[str]:
        """``names`` checked against the dataset (all modalities when None).

        Raises
        ------
        KeyError
            For a modality the dataset does not have.
        """
        mods = self.manifest["modalities"]
        wanted = list(mods) if names is None else list(names)
        unknown = [m for m in wanted if m not in mods]
        if unknown:
            raise UnknownNameError(f"unknown modalities {unknown} (dataset has {sorted(mods)})")
        return wanted

    def entries(self, split: str | None = None) -> list[dict[str, Any]]:
        """Manifest entries (optionally of one split), in manifest order; copies that carry
        what :func:`read_shard_arrays` needs to find and check them on their own."""
        out = []
        for e in self.manifest["shards"]:
            if split is None or e.get("split") == split:
                d = dict(e)
                if self.root is not None:
                    d[_ROOT_KEY] = str(self.root)
                    d[_COMMIT_KEY] = hashlib.sha256(self.commit_bytes).hexdigest()
                out.append(d)
        return out

    def shard_path(self, entry: Mapping[str, Any]) -> Path:
        """Where ``entry``'s bytes live (legacy absolute paths are rebased onto the root).

        Raises
        ------
        DatasetIntegrityError
            A path that escapes the root or passes through a symlink.
        """
        return _shard_path(entry, self.root)

    def check_generation(self) -> None:
        """Raise if the commit record changed since this dataset was opened."""
        if self.root is None:
            return
        _, now = read_commit(self.root)
        if now != self.commit_bytes:
            raise DatasetIntegrityError(
                "the dataset changed while it was being read (a writer replaced it)",
                path=str(self.root),
            )


def _shard_path(entry: Mapping[str, Any], root: Path | None) -> Path:
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


def open_dataset(path: str | os.PathLike[str] | Mapping[str, Any]) -> Dataset:
    """Open and check a committed dataset (directory, its ``dataset_manifest.json``, or a
    legacy manifest dictionary)."""
    return Dataset(path)


def shard_entries(
    dataset: str | os.PathLike[str] | Mapping[str, Any] | Dataset, split: str | None = None
) -> list[dict[str, Any]]:
    """Manifest entries (optionally of one split), in manifest order.

    Raises
    ------
    DatasetIntegrityError
    """
    ds = dataset if isinstance(dataset, Dataset) else Dataset(dataset)
    return ds.entries(split)


def _resolve_container(
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
    base = root if root is not None else entry.get(_ROOT_KEY)
    ds_root = Path(base).resolve() if base is not None else None
    path = _shard_path(entry, ds_root)
    data = read_regular(path)
    if verify:
        if len(data) != entry.get("size"):
            raise DatasetIntegrityError(
                f"shard is {len(data)} bytes, manifest says {entry.get('size')}", path=str(path)
            )
        if hashlib.sha256(data).hexdigest() != entry.get("sha256"):
            raise DatasetIntegrityError("shard SHA-256 does not match the manifest", path=str(path))
    pinned = entry.get(_COMMIT_KEY)
    if ds_root is not None and isinstance(pinned, str):
        _, now = read_commit(ds_root)
        if hashlib.sha256(now).hexdigest() != pinned:
            raise DatasetIntegrityError(
                "the dataset changed while it was being read (a writer replaced it)",
                path=str(ds_root),
            )
    codec = _resolve_container(container, None, registry)
    try:
        arrays = codec.loads(data)
    except ImportError:
        raise
    except Exception as exc:
        raise DatasetIntegrityError(f"cannot decode shard: {exc}", path=str(path)) from None
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


def iter_shards(
    dataset: str | os.PathLike[str] | Mapping[str, Any] | Dataset,
    *,
    split: str | None = None,
    modalities: Sequence[str] | None = None,
    trim: bool = True,
    container: str | Container | None = None,
    with_meta: bool = False,
    registry: Mapping[str, Container] | None = None,
    verify: bool = True,
) -> Iterator[Any]:
    """Yield each shard's arrays: the declared modalities plus ``_present``.

    Parameters
    ----------
    dataset : path, manifest dictionary or Dataset
        Dataset directory or its ``dataset_manifest.json``.
    split : str, optional
        Only this split.
    modalities : sequence of str, optional
        Only these modalities (``_present`` always comes along when written).
    trim : bool
        Cut padded shards back to their real ``n_steps``.
    container : str or Container, optional
        Override the manifest's container.
    with_meta : bool
        Yield ``(arrays, entry)`` pairs; ``entry`` has ``source_id``,
        ``entity_id``, ``split``, ``padded``...
    registry : mapping of str to Container, optional
        Containers to use instead of the global registry.
    verify : bool
        Check each shard's size and SHA-256 before decoding.

    Yields
    ------
    dict of str to ndarray
        ``arrays[name]`` has shape (n_steps, *shape) (``shard_length`` rows
        untrimmed) and the declared dtype; ``_present`` is bool.  A ``media:``
        modality ``name`` comes as uint8 ``(n_steps, H, W, C)`` with its bool
        frame mask ``_present_<name>`` (zeros where false).

    Raises
    ------
    DatasetIntegrityError
        See :class:`Dataset` and :func:`read_shard_arrays`.
    KeyError
        ``modalities`` names a modality the dataset does not have.
    """
    ds = dataset if isinstance(dataset, Dataset) else Dataset(dataset)
    mods = ds.manifest["modalities"]
    wanted = ds.select_modalities(modalities)
    codec = _resolve_container(container, ds.manifest["container"], registry)
    for entry in ds.entries(split):
        arrays = read_shard_arrays(
            entry, codec, root=ds.root, modalities={k: mods[k] for k in wanted}, verify=verify
        )
        n = int(arrays.pop("_n_steps", entry["n_steps"]))
        out = {k: arrays[k] for k in wanted}
        if "_present" in arrays:
            out["_present"] = arrays["_present"].astype(bool, copy=False)
        for k in wanted:  # media modalities carry their frame mask (see kuration.output.media)
            if f"_present_{k}" in arrays:
                out[f"_present_{k}"] = arrays[f"_present_{k}"].astype(bool, copy=False)
        if trim:
            out = {k: v[:n] for k, v in out.items()}
        if with_meta:
            meta = {k: v for k, v in entry.items() if not k.startswith("_")}
            yield out, meta
        else:
            yield out
