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

:class:`Dataset` is also the user-facing handle, modelled on Hugging Face
``datasets`` where it fits (``docs/format.md``, "Reading", lists the
differences): ``len``, integer indexing (one shard is one item), slices and
``ds["train"]`` give views, ``features``, ``select_columns``, ``filter`` (on
shard metadata), ``shuffle(seed=)``, streaming iteration, and
``to_arrow``/``to_pandas``/``to_polars`` (one row per real step).
"""

from __future__ import annotations

import copy
import hashlib
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeGuard

import numpy as np

from ..contracts.schema import SchemaSpec
from ..core.jsonio import loads_strict
from ..core.remote import local_path
from ..errors import (
    DatasetIntegrityError,
    MissingExtraError,
    SchemaError,
    UnknownModalityError,
    UnknownSplitError,
)
from ..output.commit import (
    COMMIT_NAME,
    CONFIG_NAME,
    FORMAT,
    MANIFEST_NAME,
    MARKER_NAME,
    STAGING_NAME,
    read_commit,
    read_regular,
)
from ..output.containers import Container
from .lerobot import check_lerobot_manifest, verify_meta_files
from .packed import FILE_KEY, check_packed_manifest
from .remote import RemoteDataset, is_url, remote_dataset, remote_shard_rel
from .shards import (
    COMMIT_KEY,
    IDENTITY_KEY,
    ROOT_KEY,
    read_shard_arrays,
    resolve_container,
    shard_arrays,
    shard_file,
)
from .table import FeatureInfo, feature_info, shard_record_batch, table_schema

__all__ = [
    "Dataset",
    "iter_shards",
    "open_dataset",
    "read_shard_arrays",
    "shard_arrays",
    "shard_entries",
]

_SHA = re.compile(r"[0-9a-f]{64}")


def _strict(data: bytes, path: Path | str) -> Any:
    try:
        return loads_strict(data, what=str(path))
    except ValueError as exc:
        raise DatasetIntegrityError(str(exc), path=str(path)) from None


def _is_int(v: Any) -> TypeGuard[int]:
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
            self.root: Path | str | None = None
            self._remote: RemoteDataset | None = None
            self.manifest = dict(path)
            self._validate_manifest("<manifest dict>")
            self._init_view()
            return
        self._remote = None
        self._identity = ""
        if is_url(path):  # an object store (see kuration.read.remote)
            url = str(path).rstrip("/")
            if url.endswith("/" + MANIFEST_NAME):
                url = url[: -len(MANIFEST_NAME) - 1]
            self._remote = remote_dataset(url)
            self.root = url
            commit, commit_bytes, self._identity = self._remote.read_commit()
        else:
            p = Path(local_path(path))
            root = p.parent if p.name == MANIFEST_NAME else p
            local = root.resolve()
            self.root = local
            commit, commit_bytes = read_commit(local)
        if commit is None:
            what = (
                "does not exist"
                if self._remote is None and not local.exists()
                else _uncommitted(local if self._remote is None else None)
            )
            raise DatasetIntegrityError(what, path=str(self.root))
        if commit.get("state") != "committed":
            raise DatasetIntegrityError(
                f"dataset is in state {commit.get('state')!r}, not committed "
                "(a write is running or was interrupted; finish it with kur run --resume, resume=True)",
                path=str(self.root),
            )
        man_bytes = self._pinned(MANIFEST_NAME, commit.get("manifest_sha256"))
        cfg_bytes = self._pinned(CONFIG_NAME, commit.get("config_sha256"))
        marker: Any = None
        if commit.get("output_spec_sha256") is not None:
            marker_bytes = self._pinned(MARKER_NAME, commit.get("output_spec_sha256"))
            marker = _strict(marker_bytes, self._where(MARKER_NAME))
        self.commit_bytes = commit_bytes
        self.commit = commit
        self.manifest = _strict(man_bytes, self._where(MANIFEST_NAME))
        self.config = _strict(cfg_bytes, self._where(CONFIG_NAME))
        where = self._where(MANIFEST_NAME)
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
                    f"malformed embedded schema: {exc}", path=self._where(CONFIG_NAME)
                ) from None
        if marker is not None:
            self._check_marker(marker)
        self._init_view()

    def _init_view(self) -> None:
        self._shards: list[dict[str, Any]] = list(self.manifest["shards"])
        self._columns: list[str] = list(self.manifest["modalities"])
        named = self.manifest.get("splits")
        known = list(named) if isinstance(named, dict) else []
        known += [e["split"] for e in self.manifest["shards"] if e["split"] not in known]
        self._splits = tuple(known)

    def _where(self, name: str) -> str:
        """Where metadata file ``name`` lives (a path or a URL), for messages."""
        return f"{self.root or '.'}/{name}"

    def _pinned(self, name: str, sha: Any) -> bytes:
        path = self._where(name)
        if not isinstance(sha, str):
            raise DatasetIntegrityError(f"the commit pins no checksum for {name}", path=path)
        if self._remote is not None:
            data = self._remote.read(name)
        else:
            data = read_regular(Path(self.root or ".") / name)
        if hashlib.sha256(data).hexdigest() != sha:
            raise DatasetIntegrityError(f"{name} does not match the commit's checksum", path=path)
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
        layout = man.get("layout", "files")
        if layout not in ("files", "packed", "lerobot"):
            raise DatasetIntegrityError(f"unknown layout {layout!r}", path=where)
        self._files = {}
        if layout == "packed":
            self._files = check_packed_manifest(man, where)
        elif layout == "lerobot":  # a LeRobot folder: its meta/ files are checked here
            self._files = check_lerobot_manifest(man, where)
            if isinstance(self.root, Path):  # a remote root (a URL string) is not walked here
                verify_meta_files(self.root, self._files)

    def _check_marker(self, marker: Any) -> None:
        where = self._where(MARKER_NAME) if self.root else MARKER_NAME
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
        """The manifest's block of each modality of this view (``dtype``, ``shape``,
        ``source``, ``unit``)."""
        mods = self.manifest["modalities"]
        return {k: dict(mods[k]) for k in self._columns}

    @property
    def splits(self) -> tuple[str, ...]:
        """The dataset's split names (also those that hold no shard)."""
        return self._splits

    def check_split(self, split: str | None) -> None:
        """Raise :class:`~kuration.errors.UnknownSplitError` unless ``split`` is None or one
        of :attr:`splits`."""
        if split is not None and split not in self._splits:
            hint = ""
            if split in self.manifest["modalities"]:
                hint = f" ({split!r} is a modality: use select_columns([{split!r}]))"
            raise UnknownSplitError(
                split, self._splits, path=str(self.root) if self.root else None, hint=hint
            )

    def select_modalities(self, names: Sequence[str] | None) -> list[str]:
        """``names`` checked against the view (all its modalities when None).

        Raises
        ------
        UnknownModalityError
            For a modality the dataset does not have (a ``KeyError``).
        """
        mods = self._columns
        wanted = list(mods) if names is None else list(names)
        unknown = [m for m in wanted if m not in mods]
        if unknown:
            raise UnknownModalityError(f"unknown modalities {unknown} (dataset has {sorted(mods)})")
        return wanted

    def entries(self, split: str | None = None) -> list[dict[str, Any]]:
        """Manifest entries of this view (optionally of one split), in view order; copies
        that carry what :func:`read_shard_arrays` needs to find and check them on their own.

        Raises
        ------
        UnknownSplitError
            ``split`` is not one of :attr:`splits`.
        """
        self.check_split(split)
        return [self._entry(e) for e in self._shards if split is None or e.get("split") == split]

    def _entry(self, e: Mapping[str, Any]) -> dict[str, Any]:
        d = dict(e)
        if self._files:  # packed: the file record verify checks (kuration.read.packed)
            d[FILE_KEY] = self._files[d["path"]]
        if self.root is not None:
            d[ROOT_KEY] = str(self.root)
            d[COMMIT_KEY] = hashlib.sha256(self.commit_bytes).hexdigest()
            if self._identity:
                d[IDENTITY_KEY] = self._identity
        return d

    def shard_path(self, entry: Mapping[str, Any]) -> Path | str:
        """Where ``entry``'s bytes live (legacy absolute paths are rebased onto the root); a
        URL for a remote dataset.

        Raises
        ------
        DatasetIntegrityError
            A path that escapes the root or passes through a symlink.
        """
        if self._remote is not None:
            return self._remote.dest.where(remote_shard_rel(entry, self._remote.url))
        return shard_file(entry, Path(self.root) if self.root is not None else None)

    def check_generation(self) -> None:
        """Raise if the commit record changed since this dataset was opened."""
        if self.root is None:
            return
        if self._remote is not None:
            sha = hashlib.sha256(self.commit_bytes).hexdigest()
            self._remote.check_generation(sha, self._identity)
            return
        _, now = read_commit(Path(self.root))
        if now != self.commit_bytes:
            raise DatasetIntegrityError(
                "the dataset changed while it was being read (a writer replaced it)",
                path=str(self.root),
            )

    # -- the user-facing surface (modelled on Hugging Face ``datasets``) ----------------
    def _view(self, shards: list[dict[str, Any]], columns: list[str] | None = None) -> Dataset:
        out = copy.copy(self)
        out._shards = shards
        out._columns = list(self._columns if columns is None else columns)
        return out

    def __len__(self) -> int:
        """Number of shards in this view (one shard is one item)."""
        return len(self._shards)

    def __repr__(self) -> str:
        where = self.root if self.root is not None else "<manifest dict>"
        # the splits this view holds: ds["train"] shows train only
        held = {e["split"] for e in self._shards}
        splits = [s for s in self._splits if s in held]
        return (
            f"Dataset({str(where)!r}, shards={len(self)}, splits={splits}, columns={self._columns})"
        )

    def __getitem__(self, key: int | slice | str) -> Any:
        """``ds[i]``: one shard's item (see :meth:`item`); ``ds[a:b]``: a view of those
        shards; ``ds["train"]``: a view of one split.

        Raises
        ------
        IndexError
            An integer out of range.
        UnknownSplitError
            A string that is not one of :attr:`splits`.
        TypeError
            Any other key.
        """
        if isinstance(key, str):
            self.check_split(key)
            return self._view([e for e in self._shards if e["split"] == key])
        if isinstance(key, slice):
            return self._view(self._shards[key])
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            i = int(key)
            if not -len(self) <= i < len(self):
                raise IndexError(f"shard index {i} out of range ({len(self)} shards)")
            return self.item(self._entry(self._shards[i]))
        raise TypeError(f"a Dataset is indexed by int, slice or split name, not {key!r}")

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """Stream the view's items, one shard read at a time."""
        for entry in self.entries():
            yield self.item(entry)

    def item(self, entry: Mapping[str, Any], *, verify: bool = True) -> dict[str, Any]:
        """One shard as an item: its real steps (pad rows removed) and where it comes from.

        Returns
        -------
        dict
            ``<modality>``: ndarray ``(n_steps, *shape)`` in the declared dtype;
            ``_time_s``: ndarray ``(n_steps,)`` float64, seconds since the Unix
            epoch (UTC); ``_present``: ndarray ``(n_steps,)`` bool (when written);
            ``_split``, ``_source``, ``_entity`` (type-tagged), ``_shard``
            (relative path; for a packed shard the name it would have as a file of
            its own, without suffix): str.

        Raises
        ------
        DatasetIntegrityError
            See :func:`read_shard_arrays`.
        """
        arrays = shard_arrays(self, entry, self._columns, trim=True, verify=verify)
        return {
            **arrays,
            "_split": str(entry["split"]),
            "_source": str(entry.get("source_id", "")),
            "_entity": str(entry.get("entity_id", "")),
            "_shard": str(entry.get("shard", entry["path"])),
        }

    def select(self, indices: Sequence[int]) -> Dataset:
        """A view of the shards at ``indices`` (in that order), like ``datasets.Dataset.select``.

        Raises
        ------
        IndexError
            An index out of range.
        """
        n = len(self)
        idx = [int(i) for i in indices]
        bad = [i for i in idx if not -n <= i < n]
        if bad:
            raise IndexError(f"shard indices {bad[:5]} out of range ({n} shards)")
        return self._view([self._shards[i] for i in idx])

    @property
    def features(self) -> dict[str, FeatureInfo]:
        """Modality name -> :class:`~kuration.read.table.FeatureInfo` (dtype, per-step shape,
        unit, source) for the columns of this view."""
        mods = self.manifest["modalities"]
        return {k: feature_info(mods[k]) for k in self._columns}

    @property
    def column_names(self) -> list[str]:
        """The modality columns of this view."""
        return list(self._columns)

    def select_columns(self, names: str | Sequence[str]) -> Dataset:
        """A view with only these modalities (``_present`` and ``_time_s`` always come along).

        Raises
        ------
        KeyError
            A modality the dataset does not have.
        """
        wanted = self.select_modalities([names] if isinstance(names, str) else names)
        return self._view(self._shards, wanted)

    def filter(self, predicate: Callable[[dict[str, Any]], bool]) -> Dataset:
        """A view of the shards whose manifest entry satisfies ``predicate``.

        Unlike ``datasets.Dataset.filter`` the predicate sees one shard's
        metadata, not one row, so no shard is read: ``source_id``,
        ``entity_id`` (type-tagged), ``split``, ``span_index``, ``shard_index``,
        ``start_idx``, ``start_time_s``, ``n_steps``, ``padded``, ``path``.
        Filter rows on values with ``ds.to_arrow().filter(expression)``.
        """
        return self._view([e for e in self._shards if predicate({k: v for k, v in e.items()})])

    def shuffle(self, seed: int | None = None) -> Dataset:
        """A view with the shards in a random order: ``numpy.random.default_rng(seed)``'s
        permutation, so one seed gives one order on every machine (as in ``datasets``)."""
        order = np.random.default_rng(seed).permutation(len(self))
        return self._view([self._shards[int(i)] for i in order])

    def iter_batches(self) -> Iterator[Any]:
        """Stream the view as Arrow record batches, one per shard (real rows only), with the
        schema of :meth:`to_arrow`.

        Raises
        ------
        ImportError
            pyarrow is missing.
        """
        schema = self._schema()
        mods = self.manifest["modalities"]
        for entry in self.entries():
            arrays = shard_arrays(self, entry, self._columns, trim=True)
            yield shard_record_batch(arrays, entry, {k: mods[k] for k in self._columns}, schema)

    def _schema(self) -> Any:
        mods = self.manifest["modalities"]
        return table_schema(
            {k: mods[k] for k in self._columns}, bool(self.manifest.get("presence_mask", True))
        )

    def to_arrow(self) -> Any:
        """The view as one ``pyarrow.Table``: one row per real step (pad rows removed).

        Columns ``_split``, ``_source``, ``_entity``, ``_shard`` (strings),
        ``_time_s`` (float64 s since the epoch), ``_present`` (bool), then the
        modalities; a tensor modality is a fixed-size list column holding the
        flattened step, its field metadata ``kuration.shape`` gives the shape
        and ``kuration.unit`` the unit (JSON).
        """
        import pyarrow as pa

        return pa.Table.from_batches(list(self.iter_batches()), schema=self._schema())

    def to_pandas(self) -> Any:
        """:meth:`to_arrow` as a ``pandas.DataFrame`` (tensor cells are 1-D arrays).

        Raises
        ------
        MissingExtraError
            pandas is not installed (``pip install 'kuration-sdk[pandas]'``).
        """
        try:
            import pandas  # noqa: F401  (pyarrow's own error names no extra)
        except ImportError:
            raise MissingExtraError(
                "Dataset.to_pandas needs pandas: pip install 'kuration-sdk[pandas]'"
            ) from None
        return self.to_arrow().to_pandas()

    def to_polars(self) -> Any:
        """:meth:`to_arrow` as a ``polars.DataFrame`` (tensors are ``Array`` columns).

        Raises
        ------
        MissingExtraError
            polars is not installed (``pip install 'kuration-sdk[polars]'``).
        """
        try:
            import polars as pl
        except ImportError:
            raise MissingExtraError(
                "Dataset.to_polars needs polars: pip install 'kuration-sdk[polars]'"
            ) from None
        return pl.from_arrow(self.to_arrow())


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
        untrimmed) and the declared dtype; ``_present`` is bool; ``_time_s``
        is float64 seconds since the Unix epoch (UTC), NaN on pad rows.  A
        ``media:`` modality ``name`` comes as uint8 ``(n_steps, H, W, C)`` with
        its bool frame mask ``_present_<name>`` (zeros where false).

    Raises
    ------
    DatasetIntegrityError
        See :class:`Dataset` and :func:`read_shard_arrays`.
    UnknownSplitError
        ``split`` is not one of the dataset's splits.
    KeyError
        ``modalities`` names a modality the dataset does not have.
    """
    ds = dataset if isinstance(dataset, Dataset) else Dataset(dataset)
    wanted = ds.select_modalities(modalities)
    codec = resolve_container(container, ds.manifest["container"], registry)
    for entry in ds.entries(split):
        out = shard_arrays(ds, entry, wanted, trim=trim, verify=verify, container=codec)
        if with_meta:
            meta = {k: v for k, v in entry.items() if not k.startswith("_")}
            yield out, meta
        else:
            yield out


def _uncommitted(root: Path | None) -> str:
    """Why a folder without a commit record is refused: a first write that is running or was
    interrupted (its staging area is there), or no dataset at all."""
    if root is not None and (root / STAGING_NAME).exists():
        return (
            f"no {COMMIT_NAME} yet: a first write to it is running or was interrupted "
            "(finish it with kur run --resume, resume=True)"
        )
    return f"no {COMMIT_NAME}: not a kuration dataset"
