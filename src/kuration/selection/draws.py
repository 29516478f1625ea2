"""Seeded uniform draws keyed by identity: the ``random`` method and seeded tie-breaks.

A draw depends only on the seed and the item's key (a segment's or a candidate's stable
id), never on the pool's order, size or the runtime that computes it, so the in-memory
pool, the disk pool and every executor give each item the same number.

Formula: ``u = (H(seed, key) >> 11) / 2**53`` with ``H`` the first 8 bytes, big-endian,
of BLAKE2b (RFC 7693) over ``"<seed>\\x1f<key>"`` in UTF-8: 53 uniform bits, so
``0 <= u < 1`` and every value is an exact float64.  :func:`seeded_ranks` uses the
63 high bits (``H >> 1``) as an int64 order key.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..core.ids import tag_entity_id

__all__ = [
    "candidate_key",
    "candidate_keys",
    "draw_candidates",
    "seeded_ranks",
    "seeded_uniform",
    "segment_key",
]

_SEP = "\x1f"


def _hashes(seed: int, keys: Iterable[str]) -> np.ndarray:
    pre = f"{int(seed)}{_SEP}"
    return np.fromiter(
        (
            int.from_bytes(hashlib.blake2b((pre + k).encode(), digest_size=8).digest(), "big")
            for k in keys
        ),
        np.uint64,
    )


def seeded_uniform(seed: int, keys: Iterable[str]) -> np.ndarray:
    """One uniform draw in ``[0, 1)`` per key (see the module formula), shape (n,), float64."""
    return (_hashes(seed, keys) >> np.uint64(11)).astype(np.float64) * 2.0**-53


def seeded_ranks(seed: int, keys: Iterable[str]) -> np.ndarray:
    """One non-negative int64 order key per key (the hash's 63 high bits), shape (n,)."""
    return (_hashes(seed, keys) >> np.uint64(1)).astype(np.int64)


def segment_key(source_id: str, entity: str | None, start_idx: int) -> str:
    """The draw key of a window: source, tagged entity (empty for a scene window), start."""
    return _SEP.join((source_id, entity or "", str(int(start_idx))))


def candidate_key(source_id: str, entity_id: Any, span: int) -> str:
    """The draw key of a fill candidate: source, tagged entity, span index (-1: whole track)."""
    return _SEP.join((source_id, tag_entity_id(entity_id), str(int(span))))


def candidate_keys(
    source_ids: Sequence[str],
    entity_ids: Sequence[Sequence[Any]],
    source: np.ndarray,
    entity: np.ndarray,
    span: np.ndarray,
) -> list[str]:
    """:func:`candidate_key` of every row of a candidate table's columns."""
    tags = [[tag_entity_id(e) for e in ents] for ents in entity_ids]
    return [
        _SEP.join((source_ids[s], tags[s][e], str(k)))
        for s, e, k in zip(source.tolist(), entity.tolist(), span.tolist(), strict=True)
    ]


def draw_candidates(table: Any, seed: int) -> None:
    """Give every candidate of finite priority in ``table`` (a
    :class:`~kuration.selection.candidates.CandidateTable`) its own seeded draw as its
    priority (in place): the ``random`` method's order over spans, uniform whatever a
    span's length or window count.  Candidates of ``-inf`` priority (no window passed the
    filters) stay out."""
    fin = np.isfinite(table.priority)
    keys = candidate_keys(
        table.source_ids, table.entity_ids, table.source, table.entity, table.span
    )
    draws = seeded_uniform(seed, keys)
    table.priority[fin] = draws[fin]
