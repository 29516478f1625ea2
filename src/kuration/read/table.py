"""Shards as rows: one Arrow record batch per shard, and the per-modality feature description.

The table form of a dataset (``Dataset.to_arrow``) has one row per real step
(pad rows removed) and these columns, in this order:

==============  ==========================  =========================================
column          Arrow type                  meaning
==============  ==========================  =========================================
``_split``      string                      the shard's split
``_source``     string                      the source id
``_entity``     string                      the type-tagged entity id (``str:3c6444``)
``_shard``      string                      the shard path, relative to the dataset (packed: its shard name)
``_time_s``     float64, unit ``s``         seconds since the Unix epoch (UTC)
``_present``    bool                        the entity is present at this step
``<modality>``  its dtype; tensors are      the declared modalities, in manifest order
                fixed-size lists (flat)
==============  ==========================  =========================================

Field metadata carries ``kuration.shape`` (JSON, per-step shape, so a flat
tensor reshapes back) and ``kuration.unit`` (JSON) like the Parquet container.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["META_COLUMNS", "FeatureInfo", "shard_record_batch", "table_schema"]

META_COLUMNS = ("_split", "_source", "_entity", "_shard", "_time_s", "_present")


@dataclass(frozen=True)
class FeatureInfo:
    """One modality of a dataset, as :attr:`kuration.Dataset.features` describes it.

    Attributes
    ----------
    dtype : str
        NumPy dtype name (``float32``, ``uint8``...).
    shape : tuple of int
        Per-step shape; a shard holds ``(n_steps, *shape)``.
    unit : str, list of str or None
        pint unit, one per component when they differ; None when unitless or unknown.
    source : str
        The route it was filled from (``field:position``, ``segment:turn_p90``...).
    """

    dtype: str
    shape: tuple[int, ...]
    unit: str | tuple[str, ...] | None
    source: str


def feature_info(m: Mapping[str, Any]) -> FeatureInfo:
    unit = m.get("unit")
    return FeatureInfo(
        dtype=str(m["dtype"]),
        shape=tuple(int(s) for s in m.get("shape", [])),
        unit=tuple(unit) if isinstance(unit, list) else unit,
        source=str(m.get("source", "")),
    )


def _field(name: str, m: Mapping[str, Any]) -> Any:
    import pyarrow as pa

    shape = [int(s) for s in m.get("shape", [])]
    value = pa.from_numpy_dtype(np.dtype(m["dtype"]))
    typ = pa.list_(value, int(np.prod(shape))) if shape else value
    meta = {b"kuration.shape": json.dumps(shape).encode()}
    if m.get("unit") is not None:
        meta[b"kuration.unit"] = json.dumps(m["unit"]).encode()
    return pa.field(name, typ, nullable=False, metadata=meta)


def table_schema(modalities: Mapping[str, Mapping[str, Any]], with_present: bool = True) -> Any:
    """The Arrow schema of :func:`shard_record_batch` (see the module docstring)."""
    import pyarrow as pa

    fields = [
        pa.field(name, pa.string(), nullable=False) for name in ("_split", "_source", "_entity")
    ]
    fields.append(pa.field("_shard", pa.string(), nullable=False))
    fields.append(
        pa.field(
            "_time_s",
            pa.float64(),
            nullable=False,
            metadata={b"kuration.shape": b"[]", b"kuration.unit": b'"s"'},
        )
    )
    if with_present:
        fields.append(pa.field("_present", pa.bool_(), nullable=False))
    fields.extend(_field(name, m) for name, m in modalities.items())
    return pa.schema(fields)


def shard_record_batch(
    arrays: Mapping[str, np.ndarray],
    entry: Mapping[str, Any],
    modalities: Mapping[str, Mapping[str, Any]],
    schema: Any,
) -> Any:
    """One shard's real rows as a record batch of ``schema`` (:func:`table_schema`).

    Parameters
    ----------
    arrays : mapping of str to ndarray
        The shard's trimmed arrays: each modality ``(n, *shape)``, ``_time_s``
        ``(n,)`` float64 and (when written) ``_present`` ``(n,)`` bool.
    entry : mapping
        Its manifest entry (``split``, ``source_id``, ``entity_id``, ``path``).
    """
    import pyarrow as pa

    n = int(arrays["_time_s"].shape[0])
    cols: list[Any] = [
        pa.array([str(entry.get("split", ""))] * n, pa.string()),
        pa.array([str(entry.get("source_id", ""))] * n, pa.string()),
        pa.array([str(entry.get("entity_id", ""))] * n, pa.string()),
        pa.array([str(entry.get("shard", entry.get("path", "")))] * n, pa.string()),
        pa.array(np.asarray(arrays["_time_s"], dtype=np.float64)),
    ]
    if "_present" in schema.names:
        cols.append(pa.array(np.asarray(arrays["_present"], dtype=bool)))
    for name in modalities:
        a = np.ascontiguousarray(arrays[name])
        if a.ndim == 1:
            cols.append(pa.array(a))
        else:
            width = int(np.prod(a.shape[1:]))
            cols.append(pa.FixedSizeListArray.from_arrays(pa.array(a.reshape(-1)), width))
    return pa.RecordBatch.from_arrays(cols, schema=schema)
