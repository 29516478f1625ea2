"""Packed columns built a row group at a time, and the shard digests of a row group.

:mod:`kuration.output.packed` writes a packed file row group by row group.
Building each row group's columns track by track (cut the track, coerce its
modalities, pad it, concatenate) costs a few hundred microseconds of Python
per track, which at a million tracks is most of the write.  Here the shards of
one source that fall in one row group are built at once: one gather index
(source grid row or pad) for all their rows, one fancy-index gather per field
and one coercion per modality over the gathered rows, with the coercion rules
of the per-file writer (:func:`~kuration.output.writer.track_arrays`: the
checks and casts are elementwise, pad rows are absent, so the result equals
the per-track columns concatenated).  A gathered batch that fails a check is
rebuilt track by track, so the error names the track and row exactly as the
per-file writer does.

:func:`row_group_digests` computes every shard's canonical digest
(:func:`~kuration.output.packed.shard_digest`) from the row group's columns:
the canonical streams of all shards with the same row count are laid out in
one ``uint8`` array with numpy, then each shard is one ``hashlib`` call per
stream part (hashlib releases the GIL, so this runs beside the encoding).
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..contracts.tick import TickTable
from ..contracts.track import Track
from ..errors import OutputSpecError
from .spec import ModalitySpec, OutputSpec
from .writer import _coerce, _field_array

__all__ = ["ShardCut", "batchable", "cut_columns", "row_group_digests"]

#: columns every packed file has besides the modalities (``_present`` when the mask is on)
STRING_COLUMNS = ("_entity", "_source")


@dataclass(frozen=True)
class ShardCut:
    """Where a planned shard's rows are in its source: ``table`` (the source's grid),
    ``entity_row`` (its column in the grid) and ``meta`` (the segment features and
    priority ``segment:`` modalities read).  ``entry`` is the shard's planned manifest
    entry (``start_idx``, ``n_steps``, ``n_rows`` of the source grid)."""

    entry: Mapping[str, Any]
    table: TickTable
    entity_row: int
    meta: Mapping[str, Any]


def batchable(spec: OutputSpec) -> bool:
    """Whether the modalities can be built for many tracks at once: field and segment
    routes only (encoder hooks and media frames are per track)."""
    return all(m.route in ("field", "segment") for m in spec.modalities.values())


def _gather_index(cuts: Sequence[ShardCut]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Grid row, entity column and real-row mask of every packed row of ``cuts``."""
    n_rows = np.array([c.entry["n_rows"] for c in cuts], dtype=np.int64)
    n_steps = np.array([c.entry["n_steps"] for c in cuts], dtype=np.int64)
    start = np.array([c.entry["start_idx"] for c in cuts], dtype=np.int64)
    ent = np.array([c.entity_row for c in cuts], dtype=np.int64)
    first = np.cumsum(n_rows) - n_rows
    local = np.arange(int(n_rows.sum()), dtype=np.int64) - np.repeat(first, n_rows)
    real = local < np.repeat(n_steps, n_rows)
    # pad rows read the shard's first row (a valid index); they are absent, so coerced to 0
    t = np.repeat(start, n_rows) + np.where(real, local, 0)
    return t, np.repeat(ent, n_rows), real


def _segment_values(m: ModalitySpec, cuts: Sequence[ShardCut]) -> np.ndarray:
    values = []
    for c in cuts:
        if m.arg not in c.meta:
            raise OutputSpecError(f"modality {m.name!r}: no segment feature {m.arg!r}")
        v = c.meta[m.arg]
        values.append(np.nan if v is None else float(v))
    return np.repeat(np.array(values, dtype=np.float64), [c.entry["n_rows"] for c in cuts])


def cut_columns(spec: OutputSpec, cuts: Sequence[ShardCut]) -> dict[str, np.ndarray]:
    """The packed columns (modalities, ``_present``, ``_time_s``, ``_n_steps``) of
    consecutive shards of one source, pad rows included, built with whole-batch numpy
    operations; equal to the per-track columns of the same shards.

    Parameters
    ----------
    spec : OutputSpec
        Field and segment modalities only (:func:`batchable`).
    cuts : sequence of ShardCut
        Shards of one source table, in packed row order.

    Returns
    -------
    dict of str to ndarray
        Each ``(rows, *shape)`` in its declared dtype; ``_present`` bool, ``_time_s``
        float64 seconds (NaN on pad rows), ``_n_steps`` int64.

    Raises
    ------
    OutputSpecError
        A check of :func:`~kuration.output.writer.track_arrays` fails somewhere in the
        batch (the caller rebuilds track by track to name the track and row).
    """
    table = cuts[0].table
    t, e, real = _gather_index(cuts)
    cell = t * table.present.shape[1] + e  # row-major (tick, entity) cell of the grid

    def take(v: np.ndarray) -> np.ndarray:  # v[t, e] as one flat gather
        return np.take(v.reshape(-1, *v.shape[2:]), cell, axis=0)

    present = take(table.present) & real
    args = {m.arg for m in spec.modalities.values() if m.route == "field"}  # only these
    batch = Track(
        source_id=table.source_id,
        entity_id=table.entity_ids[cuts[0].entity_row],
        start_idx=0,
        fields={k: take(v) for k, v in table.values.items() if k in args},
        present=present,
        sample_hz=table.sample_hz,
        globals={k: np.take(v, t, axis=0) for k, v in table.globals.items() if k in args},
        k0=table.k0,
        ints={
            k: np.take(v, t, axis=0) if v.ndim == 2 else take(v)
            for k, v in table.ints.items()
            if k in args
        },
    )
    cols: dict[str, np.ndarray] = {}
    for name, m in spec.modalities.items():
        raw = _field_array(m, batch) if m.route == "field" else _segment_values(m, cuts)
        cols[name] = _coerce(m, raw, batch)
    if spec.presence_mask:
        cols["_present"] = present
    time_s = (t + table.k0) / float(table.sample_hz)
    time_s[~real] = np.nan
    cols["_time_s"] = time_s
    n_rows = [c.entry["n_rows"] for c in cuts]
    cols["_n_steps"] = np.repeat(np.array([c.entry["n_steps"] for c in cuts], np.int64), n_rows)
    return cols


def _le(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<"))


def _streams(
    cols: Mapping[str, np.ndarray], names: Sequence[str], starts: np.ndarray, n: int
) -> np.ndarray:
    """The canonical stream parts of ``names`` for shards of ``n`` rows at ``starts``,
    one ``uint8`` row per shard (shards at consecutive rows are copied without a gather)."""
    k = len(starts)
    parts: list[tuple[bytes, np.ndarray]] = []
    width = 0
    contiguous = bool(np.all(np.diff(starts) == n))
    for name in names:
        a = _le(np.asarray(cols[name]))
        kind = a.dtype.str
        if name == "_n_steps":  # 0-d per shard
            head = f"_n_steps\0{kind}\0\0".encode() + struct.pack("<Q", 8)
            body = a[starts].reshape(k, 1).view(np.uint8)
        else:
            tail = "".join(f",{d}" for d in a.shape[1:])
            per_row = a.dtype.itemsize * int(np.prod(a.shape[1:], dtype=np.int64))
            head = f"{name}\0{kind}\0{n}{tail}\0".encode() + struct.pack("<Q", n * per_row)
            flat = a.reshape(len(a), -1).view(np.uint8)
            if contiguous:
                s0 = int(starts[0]) if k else 0
                body = flat[s0 : s0 + k * n].reshape(k, n * per_row)
            else:
                body = flat[starts[:, None] + np.arange(n, dtype=np.int64)].reshape(k, -1)
        parts.append((head, body))
        width += len(head) + body.shape[1]
    out = np.empty((k, width), dtype=np.uint8)
    pos = 0
    for head, body in parts:
        out[:, pos : pos + len(head)] = np.frombuffer(head, np.uint8)
        pos += len(head)
        out[:, pos : pos + body.shape[1]] = body
        pos += body.shape[1]
    return out


def row_group_digests(
    cols: Mapping[str, np.ndarray],
    starts: Sequence[int],
    rows: Sequence[int],
    entities: Sequence[str],
) -> list[tuple[int, str]]:
    """:func:`~kuration.output.packed.shard_digest` of every shard of a row group from its
    columns: shard ``i`` is rows ``starts[i]`` to ``starts[i] + rows[i]`` of entity
    ``entities[i]``.

    Returns
    -------
    list of (int, str)
        Size and hex SHA-256 of each shard's canonical row bytes, in input order.
    """
    names = sorted([*(k for k in cols if k not in STRING_COLUMNS), "_entity"])
    cut = names.index("_entity")
    before, after = names[:cut], names[cut + 1 :]
    start_arr = np.asarray(starts, dtype=np.int64)
    rows_arr = np.asarray(rows, dtype=np.int64)
    out: list[tuple[int, str]] = [(0, "")] * len(start_arr)
    for n in np.unique(rows_arr):
        which = np.flatnonzero(rows_arr == n)
        head = _streams(cols, before, start_arr[which], int(n))
        tail = _streams(cols, after, start_arr[which], int(n))
        fixed = head.shape[1] + tail.shape[1]
        for i, a, b in zip(which.tolist(), head, tail, strict=True):
            body = entities[i].encode()
            h = hashlib.sha256(a)
            h.update(b"_entity\0str\0\0" + struct.pack("<Q", len(body)) + body)
            h.update(b)
            out[i] = (fixed + 21 + len(body), h.hexdigest())
    return out
