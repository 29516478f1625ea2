"""CuratedDatasetAdapter: a curated dataset read back in as sources (registered as ``curated``).

Curating a curated dataset closes the loop: shards written by
:func:`~kuration.write_dataset` become the input of another run.  Each source
is one track (``unit="track"``: its shards concatenated, padding trimmed) or
one shard (``unit="shard"``); its single entity is the track's entity, and
its fields are the dataset's modalities (a modality routed from a schema
field keeps that field's kind, semantics and unit, so metrics such as
``speed`` still apply).  Steps where ``_present`` is false are absent, not zeros.

Source URIs are ``<dataset>#<split>/<track stem>`` (or ``#<shard path>``);
:meth:`CuratedDatasetAdapter.sources` lists them.  Every read goes through
the verified loaders, so a dataset that is not committed, or whose bytes do
not match its manifest, is refused.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Hashable, Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ..contracts.schema import FieldSpec, SchemaSpec
from ..contracts.tick import Tick, TickTable, field_ints, is_int_field
from ..errors import AdapterError, DatasetIntegrityError, SchemaError
from ..sources.base import SOURCE_READER_TRAITS, InputAdapter, register_adapter
from .loaders import Dataset, read_shard_arrays
from .remote import is_url

__all__ = ["CuratedDatasetAdapter", "curated_schema"]

_UNITS = ("track", "shard")


def _track_key(entry: Mapping[str, Any]) -> str:
    path = str(entry.get("shard", entry["path"]))  # a packed shard's name, or its file
    stem, _, _ = path.rpartition("_shard")
    return stem or path


def _untag(tag: str) -> Hashable:
    """The entity id a type-tagged string stands for (scalars; other ids stay tagged)."""
    kind, _, rest = tag.partition(":")
    try:
        if kind == "int":
            return int(rest)
        if kind == "str":
            return rest
        if kind == "float":
            return float(rest)
        if kind == "bool":
            return bool(int(rest))
        if kind == "none":
            return None
        if kind == "bytes":
            return bytes.fromhex(rest)
    except ValueError:
        pass
    return tag


def curated_schema(dataset: str | os.PathLike[str] | Dataset) -> SchemaSpec:
    """A schema whose fields are the dataset's modalities.

    A modality routed from a field (``field:<name>``) of the dataset's own
    schema with the same number of components copies that field's
    declaration under the modality's name; any other modality becomes a
    plain scalar or vector field.  ``media:`` modalities (decoded frames) are
    left out: they are not numeric fields.

    Raises
    ------
    DatasetIntegrityError
        The dataset fails verification.
    SchemaError
        A modality name is not a valid field name.
    """
    ds = dataset if isinstance(dataset, Dataset) else Dataset(dataset)
    orig: dict[str, dict[str, Any]] = {}
    schema_doc = ds.config.get("schema") or {}
    for f in (*schema_doc.get("fields", []), *schema_doc.get("globals", [])):
        if isinstance(f, dict) and isinstance(f.get("name"), str):
            orig[f["name"]] = f
    fields = []
    for name, m in ds.manifest["modalities"].items():
        dims = int(np.prod(m["shape"])) if m["shape"] else 1
        src = str(m.get("source", ""))
        if src.startswith("media:"):
            continue  # decoded frames are not a numeric field (and would be huge as one)
        base = orig.get(src.partition(":")[2]) if src.startswith("field:") else None
        if base is not None and int(base.get("dims", 1)) == dims:
            fields.append(FieldSpec.from_dict({**base, "name": name}))
        else:
            fields.append(FieldSpec(name, "vector" if m["shape"] else "scalar", dims=dims))
    hz = ds.manifest.get("sample_hz") or ds.config.get("schema", {}).get("sample_hz")
    return SchemaSpec(
        tuple(fields), sample_hz=float(hz), name=f"curated-{schema_doc.get('name', 'dataset')}"
    )


class CuratedDatasetAdapter(InputAdapter):
    """Read a curated dataset as sources.

    Parameters
    ----------
    dataset : path
        The dataset directory (or its ``dataset_manifest.json``).
    schema : SchemaSpec, optional
        Defaults to :func:`curated_schema`; a given schema's fields must be
        modalities of the dataset with the same number of components.
    unit : {"track", "shard"}
        One source per track or per shard.
    split : str, optional
        Only this split's shards.
    verify : bool
        Check each shard's SHA-256 while reading.

    Raises
    ------
    DatasetIntegrityError
        The dataset is not committed or fails verification.
    SchemaError
        ``schema`` names a field the dataset does not have.
    AdapterError
        An unknown ``unit``.
    """

    name: ClassVar[str] = "curated"
    sources_are_files: ClassVar[bool] = False  # "<dataset>#<split>/<track>", checked on read

    def __init__(
        self,
        dataset: str | os.PathLike[str],
        schema: SchemaSpec | None = None,
        *,
        unit: str = "track",
        split: str | None = None,
        verify: bool = True,
    ) -> None:
        if unit not in _UNITS:
            raise AdapterError(f"unit must be one of {_UNITS}, got {unit!r}", adapter="curated")
        self._ds = Dataset(dataset)
        super().__init__(schema if schema is not None else curated_schema(self._ds))
        self.dataset = str(dataset)
        self.unit = unit
        self.split = split
        self.verify = verify
        mods = self._ds.manifest["modalities"]
        for f in self.schema.fields:
            m = mods.get(f.name)
            dims = (int(np.prod(m["shape"])) if m["shape"] else 1) if m else None
            if dims != f.dims:
                raise SchemaError(
                    f"the dataset has no modality of {f.dims} component(s) named {f.name!r} "
                    f"(modalities: {sorted(mods)})",
                    field=f.name,
                )
        self._groups: dict[str, list[dict[str, Any]]] = {}
        for e in self._ds.entries(split):
            key = _track_key(e) if unit == "track" else str(e.get("shard", e["path"]))
            self._groups.setdefault(key, []).append(e)

    # -- the source list --------------------------------------------------------------
    def sources(self) -> list[str]:
        """Every source URI of the dataset (manifest order)."""
        return [f"{self._ds.root}#{key}" for key in self._groups]

    def _entries(self, uri: str) -> list[dict[str, Any]]:
        root, sep, key = str(uri).rpartition("#")
        if not sep or key not in self._groups:
            raise DatasetIntegrityError(f"not a source of this curated dataset: {uri!r}")
        same = root == self._ds.root if is_url(root) else Path(root).resolve() == self._ds.root
        if not same:
            raise DatasetIntegrityError(f"{uri!r} belongs to another dataset")
        return sorted(self._groups[key], key=lambda e: int(e.get("shard_index", 0)))

    def source_id(self, uri: str) -> str:
        key = str(uri).rpartition("#")[2]
        if self.unit == "shard":
            key = key.rsplit(".", 1)[0]
        return key.replace("/", "_")

    def fingerprint(self, uri: str) -> str:
        """SHA-256 over the run fingerprint and the recorded checksums of the source's shards."""
        h = hashlib.sha256(str(self._ds.manifest.get("run_fingerprint", "")).encode())
        for e in self._entries(uri):
            h.update(f"\0{e.get('shard', e['path'])}\0{e['sha256']}".encode())
        return h.hexdigest()

    def options(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "unit": self.unit,
            "split": self.split,
            "verify": self.verify,
        }

    # -- reading ----------------------------------------------------------------------
    def read_table(self, uri: str) -> TickTable:
        entries = self._entries(uri)
        ds = self._ds
        mods = ds.manifest["modalities"]
        hz = float(self.schema.sample_hz)
        names = [f.name for f in self.schema.fields]
        parts: dict[str, list[np.ndarray]] = {n: [] for n in names}
        raw: dict[str, list[np.ndarray]] = {n: [] for n in names}
        present: list[np.ndarray] = []
        for e in entries:
            arrays = read_shard_arrays(
                e,
                ds.manifest["container"],
                root=ds.root,
                modalities={n: mods[n] for n in names},
                verify=self.verify,
            )
            n = int(e["n_steps"])
            for name in names:
                raw[name].append(arrays[name][:n].reshape(n, -1))
                parts[name].append(raw[name][-1].astype(np.float64))
            pres = arrays.get("_present")
            present.append(np.ones(n, bool) if pres is None else pres[:n].astype(bool))
        first = entries[0]
        t0 = first.get("start_time_s")
        k0 = round(float(t0) * hz) if t0 is not None else int(first.get("start_idx", 0))
        mask = np.concatenate(present) if present else np.zeros(0, bool)
        values, ints = {}, {}
        for f in self.schema.fields:
            name = f.name
            v = np.concatenate(parts[name]) if parts[name] else np.zeros((0, 1))
            v[~mask] = np.nan
            values[name] = v[:, None, :]
            if is_int_field(f) and raw[name]:  # the shard's integers, exactly
                x = np.concatenate(raw[name])
                valid = np.broadcast_to(mask[:, None], x.shape)
                ints[name] = field_ints(f, x, valid, uri, f"modality {name!r}")[:, None, :]
        return TickTable(
            source_id=self.source_id(uri),
            schema=self.schema,
            k0=k0,
            entity_ids=(_untag(str(first["entity_id"])),),
            values=values,
            present=mask[:, None],
            ints=ints,
        )

    def ticks(self, uri: str) -> Iterable[Tick]:
        return self.read_table(uri).iter_ticks()


def _factory(schema: SchemaSpec | None = None, **options: Any) -> CuratedDatasetAdapter:
    if "dataset" not in options:
        raise AdapterError("the curated adapter needs a 'dataset' option", adapter="curated")
    return CuratedDatasetAdapter(options.pop("dataset"), schema, **options)


register_adapter("curated", _factory, execution_traits=SOURCE_READER_TRAITS)
