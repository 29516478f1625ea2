"""ShardWriter: chunk a Track into fixed-length shards and write them."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import OutputSpecError
from ..ids import safe_name, stable_hash12, tag_entity_id
from ..schema import SchemaSpec
from .containers import get_container
from .spec import ModalitySpec, OutputSpec
from .track import Track

__all__ = ["ShardWriter", "shard_stem", "write_track"]


def shard_stem(source_id: str, entity_id: Any, span_index: int | None) -> str:
    """``<readable prefix>_<hash12>``: portable, bounded, and unique per (source, entity, span)."""
    tag = tag_entity_id(entity_id)
    readable = f"{source_id}_{tag.partition(':')[2]}"
    if span_index is not None:
        readable += f"_span{span_index:03d}"
    return f"{safe_name(readable, 64)}_{stable_hash12(source_id, tag, str(span_index))}"


def _modality_array(m: ModalitySpec, track: Track, encoded: Mapping[str, np.ndarray]) -> np.ndarray:
    n = track.n_steps
    dt = np.dtype(m.dtype)
    where = f"source {track.source_id!r}, entity {track.entity_id!r}"
    if m.route == "field":
        if m.arg not in track.fields:
            raise OutputSpecError(f"modality {m.name!r}: {where} has no field {m.arg!r}")
        raw = track.fields[m.arg].reshape(n, -1) if m.shape == () else track.fields[m.arg]
        raw = raw[:, 0] if m.shape == () else raw
    elif m.route == "segment":
        if m.arg not in track.meta:
            raise OutputSpecError(f"modality {m.name!r}: {where} has no segment feature {m.arg!r}")
        raw = np.full(n, float(track.meta[m.arg]))
    else:
        if m.name not in encoded:
            raise OutputSpecError(f"modality {m.name!r}: the encoder returned no value for {where}")
        raw = np.asarray(encoded[m.name], dtype=np.float64).reshape((n, *m.shape))
    raw = np.where(track.present.reshape((n,) + (1,) * (raw.ndim - 1)), raw, 0.0)
    if dt.kind != "f":
        bad = np.isnan(raw).reshape(n, -1).any(axis=1) & track.present
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise OutputSpecError(
                f"modality {m.name!r} ({m.dtype}): missing value for present {where} at "
                f"row {track.start_idx + row} of the source"
            )
    out = raw.astype(dt)
    return out.reshape((n, *m.shape))


class ShardWriter:
    """Write tracks as shards of ``spec.shard_length`` steps under ``root/<split>/``.

    Shards are written to a same-directory temp file and moved into place with
    ``os.replace``, so a shard path never holds a partial file.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        spec: OutputSpec,
        schema: SchemaSpec,
        encoder: Any = None,
    ) -> None:
        self.root = Path(root)
        self.spec = spec
        self.schema = schema
        self.encoder = encoder
        self.container = get_container(spec.container)

    def _encode(self, track: Track) -> dict[str, np.ndarray]:
        names = [k for k, m in self.spec.modalities.items() if m.route == "encoder"]
        if not names:
            return {}
        if self.encoder is None:
            raise OutputSpecError(f"modalities {names} need an OutputEncoder")
        ctx = {
            "schema": self.schema,
            "track": {**track.meta, "source_id": track.source_id, "entity_id": track.entity_id},
        }
        recs = list(track.records())
        out: dict[str, list[np.ndarray]] = {n: [] for n in names}
        if hasattr(self.encoder, "encode_batch"):
            batch = self.encoder.encode_batch(recs, ctx)
            return {n: np.asarray(batch[n]) for n in names if n in batch}
        for t, rec in enumerate(recs):
            if not track.present[t]:
                for n in names:
                    m = self.spec.modalities[n]
                    out[n].append(np.zeros(m.shape))
                continue
            val = self.encoder.timestep(rec, ctx)
            for n in names:
                if n not in val:
                    raise OutputSpecError(
                        f"encoder hook gave no {n!r} for source {track.source_id!r}, entity "
                        f"{track.entity_id!r}, row {track.start_idx + t}"
                    )
                out[n].append(np.asarray(val[n], dtype=np.float64))
        return {n: np.stack(v) for n, v in out.items()}

    def write(self, track: Track, split: str) -> list[dict[str, Any]]:
        """Write one track; returns its manifest entries (paths relative to the root).

        Raises
        ------
        OutputSpecError
            A missing field, encoder value or segment feature for a present entity.
        """
        spec = self.spec
        encoded = self._encode(track)
        arrays = {k: _modality_array(m, track, encoded) for k, m in spec.modalities.items()}
        n = track.n_steps
        length = spec.shard_length
        stem = shard_stem(track.source_id, track.entity_id, track.span_index)
        split_dir = self.root / split
        split_dir.mkdir(parents=True, exist_ok=True)
        entries = []
        for i, start in enumerate(range(0, n, length)):
            stop = min(start + length, n)
            real = stop - start
            if real < length and spec.short_policy == "drop":
                break
            chunk = {k: v[start:stop] for k, v in arrays.items()}
            present = track.present[start:stop]
            padded = real < length and spec.short_policy == "pad"
            if padded:
                chunk = {k: _pad(v, length) for k, v in chunk.items()}
                present = _pad(present, length)
            if spec.presence_mask:
                chunk["_present"] = present.astype(bool)
            chunk["_n_steps"] = np.array(real, dtype=np.int64)
            data = self.container.dumps(chunk)
            rel = f"{split}/{stem}_shard{i:04d}{self.container.suffix}"
            path = self.root / rel
            tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
            with open(tmp, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
            entries.append(
                {
                    "path": rel,
                    "split": split,
                    "source_id": track.source_id,
                    "entity_id": tag_entity_id(track.entity_id),
                    "span_index": track.span_index,
                    "shard_index": i,
                    "start_idx": track.start_idx + start,
                    "n_steps": real,
                    "padded": padded,
                    "size": len(data),
                    "sha256": hashlib.sha256(data).hexdigest(),
                }
            )
        return entries


def _pad(a: np.ndarray, length: int) -> np.ndarray:
    out = np.zeros((length, *a.shape[1:]), dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


def write_track(
    root: str | os.PathLike[str],
    track: Track,
    spec: OutputSpec,
    *,
    schema: SchemaSpec,
    split: str = "train",
    encoder: Any = None,
) -> list[dict[str, Any]]:
    """Low-level: write one track's shards under ``root/<split>/`` and return manifest entries
    (no manifest, config or commit is written)."""
    spec.validate_against(schema, tuple(track.meta), has_encoder=encoder is not None)
    return ShardWriter(root, spec, schema, encoder).write(track, split)
