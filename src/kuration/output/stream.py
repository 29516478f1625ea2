"""The stream writer: shards flushed from a source's tick stream (``streaming=True``).

The second pass of a streaming run reads each source again, block by block
(:class:`~kuration.sources.stream.TickStream`), and writes the admitted
tracks of that source without ever holding a whole track: each active
(entity, span) keeps a buffer of at most ``shard_length`` records, and a
shard is encoded and written as soon as its buffer is full (or its track
ends).  A shard holds the same bytes as the one
:meth:`~kuration.output.writer.ShardWriter.write` cuts from the whole track:
the sub-track of one shard goes through the same encoding
(:meth:`ShardWriter.iter_shard_arrays`), and every modality it supports is
elementwise.  Containers and modalities that need a whole track (npz, media,
``encoder:`` modalities) are refused before reading
(:func:`kuration.pipeline.stream.passes.check_streaming`).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..contracts.tick import TickTable
from ..contracts.track import Track
from ..errors import OutputSpecError
from .writer import ShardWriter, ensure_dir

__all__ = ["StreamTrack", "write_stream"]


@dataclass
class StreamTrack:
    """One admitted track to write from the stream.

    Attributes
    ----------
    split : str
    entity_id : hashable
    entity_row : int
        The entity's column in the blocks' roster.
    first, last : int
        Ticks ``[first, last]`` (inclusive) on the source's grid.
    span_index : int or None
    meta : dict
        Features and priority (read by ``segment:`` modalities).
    planned : list of dict
        Its manifest entries without size and checksum
        (:func:`~kuration.output.writer.plan_entries`), filled in as shards are written.
    """

    split: str
    entity_id: Hashable
    entity_row: int
    first: int
    last: int
    span_index: int | None
    meta: dict[str, Any]
    planned: list[dict[str, Any]]
    _buf: dict[str, dict[str, np.ndarray]] = field(default_factory=dict, repr=False)
    _fill: int = 0
    _cursor: int = -1
    _shard: int = 0

    @property
    def done(self) -> bool:
        return self._cursor > self.last


def write_stream(
    writer: ShardWriter,
    source_id: str,
    k0: int,
    blocks: Iterable[TickTable],
    tracks: Sequence[StreamTrack],
) -> int:
    """Write every shard of ``tracks`` from the blocks of one source.

    Parameters
    ----------
    writer : ShardWriter
        Encodes and writes each shard (its ``on_shard`` journals it).
    source_id : str
    k0 : int
        Grid index of the source's first tick (block positions are relative to it).
    blocks : iterable of TickTable
        The source's consecutive tick blocks (:meth:`TickStream.blocks`).
    tracks : sequence of StreamTrack
        Filled in place: each ``planned`` entry gets ``size`` and ``sha256``.

    Returns
    -------
    int
        The largest number of tracks buffered at once.

    Raises
    ------
    OutputSpecError
        A track the stream did not cover, or a value that does not fit its modality.
    """
    order = sorted(tracks, key=lambda t: (t.first, t.split, str(t.entity_id)))
    for t in order:
        t._cursor = t.first
    waiting = list(reversed(order))
    active: list[StreamTrack] = []
    most = 0
    length = writer.spec.shard_length
    for blk in blocks:
        b0 = blk.k0 - k0
        b1 = b0 + blk.n_steps
        while waiting and waiting[-1].first < b1:
            active.append(waiting.pop())
        most = max(most, len(active))
        for t in active:
            _feed(writer, source_id, k0, blk, b0, min(b1, t.last + 1), t, length)
        active = [t for t in active if not t.done]
    left = [t for t in order if not t.done]
    if left:
        t = left[0]
        raise OutputSpecError(
            f"internal: the stream of {source_id!r} ended at an admitted track's tick "
            f"{t._cursor} (entity {t.entity_id!r}, ticks {t.first}..{t.last})"
        )
    return most


def _feed(
    writer: ShardWriter,
    source_id: str,
    k0: int,
    blk: TickTable,
    b0: int,
    stop: int,
    t: StreamTrack,
    length: int,
) -> None:
    """Append ticks ``[t._cursor, stop)`` of ``t`` (absent before the block), flushing full shards."""
    while t._cursor < stop:
        if not t._buf:
            t._buf = _empty(blk, length)
        n = min(length - t._fill, stop - t._cursor)
        lo = t._cursor - b0  # negative: ticks of a gap before the block (absent)
        rows = slice(t._fill, t._fill + n)
        buf = t._buf
        if lo >= 0:
            e = t.entity_row
            sl = slice(lo, lo + n)
            for k, v in blk.values.items():
                buf["values"][k][rows] = v[sl, e]
            for k, v in blk.globals.items():
                buf["globals"][k][rows] = v[sl]
            for k, v in blk.ints.items():
                buf["ints"][k][rows] = v[sl] if v.ndim == 2 else v[sl, e]
            buf["present"][""][rows] = blk.present[sl, e]
        else:
            n = min(n, -lo)
            rows = slice(t._fill, t._fill + n)
        t._fill += n
        t._cursor += n
        if t._fill == length or t._cursor > t.last:
            _flush(writer, source_id, k0, blk.sample_hz, t)


def _empty(blk: TickTable, length: int) -> dict[str, dict[str, np.ndarray]]:
    """A buffer of ``length`` absent records shaped like ``blk``'s per-entity rows."""
    return {
        "values": {k: np.full((length, *v.shape[2:]), np.nan) for k, v in blk.values.items()},
        "globals": {k: np.full((length, *v.shape[1:]), np.nan) for k, v in blk.globals.items()},
        "ints": {
            k: np.zeros((length, *(v.shape[1:] if v.ndim == 2 else v.shape[2:])), v.dtype)
            for k, v in blk.ints.items()
        },
        "present": {"": np.zeros(length, dtype=bool)},
    }


def _flush(writer: ShardWriter, source_id: str, k0: int, hz: float, t: StreamTrack) -> None:
    """Encode and write the buffered shard of ``t`` (a short tail follows the short policy)."""
    n, buf = t._fill, t._buf
    index = t._shard
    sub = Track(
        source_id=source_id,
        entity_id=t.entity_id,
        start_idx=t.first + index * writer.spec.shard_length,
        fields={k: v[:n].copy() for k, v in buf["values"].items()},
        present=buf["present"][""][:n].copy(),
        sample_hz=hz,
        globals={k: v[:n].copy() for k, v in buf["globals"].items()},
        span_index=t.span_index,
        meta=dict(t.meta),
        k0=k0,
        ints={k: v[:n].copy() for k, v in buf["ints"].items()},
    )
    t._buf, t._fill, t._shard = {}, 0, index + 1
    shards = list(writer.iter_shard_arrays(sub))
    if not shards:  # a short tail dropped by short_policy="drop" (not planned either)
        return
    if index >= len(t.planned):
        raise OutputSpecError(f"internal: shard plan mismatch for {source_id!r}")
    _, chunk = shards[0]
    ensure_dir(writer.root / t.split)
    writer.write_shard(t.planned[index], chunk)


def entries_of(tracks: Sequence[StreamTrack]) -> list[Mapping[str, Any]]:
    """Every written entry of ``tracks``, in each track's shard order."""
    return [e for t in tracks for e in t.planned]
