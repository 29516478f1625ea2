"""Where an entity is absent inside its track: gap runs, and present ticks per interval.

A track's extent ``[first, last]`` runs from the entity's first present tick to its last;
an aircraft that leaves coverage and comes back an hour later has an extent an hour longer
than the time it was seen.  Its *gaps* are the absent runs inside the extent, each
``[start, stop)`` on the source's tick grid (``first < start < stop <= last``).  They are
the compact form :class:`~kuration.pipeline.run.scoring.TrackExtent` keeps (``O(gaps)``, never
``O(ticks)``), from which :func:`present_ticks` counts the present ticks of any interval:
the candidates use it to drop spans where the entity is never present and to report how
much of the admitted time holds data.

:func:`absent_runs` finds the gaps block by block: the streaming first pass calls it on
every block with the entity's last present tick so far, the in-memory pass once on the
whole source; both get the same runs.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["absent_runs", "gap_tuples", "present_ticks"]


def absent_runs(
    present: np.ndarray, t0: int = 0, last: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The gaps that end inside one block of ticks: absent runs after an earlier present tick.

    Parameters
    ----------
    present : ndarray, shape (T, E), bool
        Presence of each of ``E`` entities at the block's ``T`` ticks.
    t0 : int
        The tick (source grid) of the block's first row.
    last : ndarray, shape (E,), int64, optional
        Each entity's last present tick before the block, -1 when none (default: none).

    Returns
    -------
    entity : ndarray, shape (G,), int64
        The entity (column of ``present``) of each gap.
    start, stop : ndarray, shape (G,), int64, ticks
        Each gap ``[start, stop)``: absent from ``start`` (just after a present tick, which
        may precede the block) to ``stop`` (a present tick in the block).  Sorted by entity,
        then time.  A run of absence before an entity's first present tick, or after its
        last one in the block, is no gap (it is outside the extent, or continues into the
        next block).
    """
    n_t, n_e = present.shape
    prev = np.full(n_e, -1, np.int64) if last is None else np.asarray(last, np.int64)
    padded = np.empty((n_e, n_t + 1), np.int8)
    padded[:, 0] = (prev >= 0) & (prev == t0 - 1)
    padded[:, 1:] = present.T
    step = np.diff(padded, axis=1)  # +1 where presence resumes, -1 where it stops
    ent, t = np.nonzero(step)  # by entity, then time: rises and falls alternate
    rise = step[ent, t] > 0
    same = np.r_[False, ent[1:] == ent[:-1]]
    # a rise after a fall in the block resumes a gap that began at the fall; the block's
    # first rise of an entity resumes one that began after its last tick before the block
    start = np.where(same, np.r_[0, t[:-1]] + t0, prev[ent] + 1)
    keep = rise & (same | (prev[ent] >= 0))
    e = ent[keep].astype(np.int64)
    return e, start[keep].astype(np.int64), t[keep].astype(np.int64) + t0


def gap_tuples(
    entity: np.ndarray, start: np.ndarray, stop: np.ndarray, n_entities: int
) -> list[tuple[int, ...]]:
    """Per entity, its gaps as one flat tuple of plain ints ``(start0, stop0, start1, ...)``.

    ``entity``, ``start`` and ``stop`` are :func:`absent_runs`'s (several blocks'
    concatenated in time order); the runs of each entity keep their order.
    """
    order = np.argsort(entity, kind="stable")
    flat = np.stack([start[order], stop[order]], axis=1).ravel().tolist()
    counts = np.bincount(entity, minlength=n_entities) * 2
    bounds = np.r_[0, np.cumsum(counts)].tolist()
    return [tuple(flat[bounds[e] : bounds[e + 1]]) for e in range(n_entities)]


def _gap_columns(extents: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """The tracks' gaps end to end (int64) and each track's number of runs: taken as they
    are from tracks held by column (a ``gap_columns()`` method, as the disk pool's
    ``TrackColumns`` has), else gathered track by track."""
    if callable(getattr(extents, "gap_columns", None)):
        flat, sizes = extents.gap_columns()  # type: ignore[attr-defined]
        return np.asarray(flat, np.int64), np.asarray(sizes, np.int64) // 2
    gaps = [e.gaps for e in extents]
    n_gaps = np.fromiter((len(g) // 2 for g in gaps), np.int64, len(gaps))
    flat = np.fromiter(itertools.chain.from_iterable(gaps), np.int64, int(n_gaps.sum()) * 2)
    return flat, n_gaps


def present_ticks(
    extents: Sequence[Any], entity: np.ndarray, lo: np.ndarray, hi: np.ndarray
) -> np.ndarray:
    """Present ticks of each interval ``[lo, hi]`` (inclusive) of one source's tracks.

    Parameters
    ----------
    extents : sequence of TrackExtent
        One source's tracks, in roster order; each one's ``gaps`` (flat ``(start, stop)``
        pairs, see :func:`absent_runs`) are its absent runs.  A track without gaps is
        present at every tick of its extent.
    entity : ndarray, shape (n,), int
        Each interval's track (index into ``extents``).
    lo, hi : ndarray, shape (n,), int64, ticks
        Each interval, inclusive, within its track's extent.

    Returns
    -------
    ndarray, shape (n,), int64
        ``hi - lo + 1`` less the ticks of the track's gaps inside ``[lo, hi]``.

    Notes
    -----
    Every track's gaps are laid on one axis, track ``e`` shifted by ``e * width`` (``width``
    past every tick), so that one ``searchsorted`` over the sorted gap starts serves all
    intervals: with ``F(x)`` the absent ticks before ``x`` on that axis, an interval holds
    ``F(hi + 1) - F(lo)`` absent ticks.
    """
    entity = np.asarray(entity, np.int64)
    lo, hi = np.asarray(lo, np.int64), np.asarray(hi, np.int64)
    length = hi - lo + 1
    flat, n_gaps = _gap_columns(extents)
    if not n_gaps.sum() or not lo.size:
        return length
    width = max(int(flat.max()), int(hi.max())) + 2
    shift = np.repeat(np.arange(len(extents), dtype=np.int64) * width, n_gaps)
    starts, stops = flat[0::2] + shift, flat[1::2] + shift
    done = np.r_[0, np.cumsum(stops - starts)]  # absent ticks of the first j gaps

    def absent_before(x: np.ndarray) -> np.ndarray:
        j = np.searchsorted(starts, x, side="left")  # gaps starting before x
        over = np.maximum(stops[np.maximum(j - 1, 0)] - x, 0)  # the last one may reach past x
        return done[j] - np.where(j > 0, over, 0)

    base = entity * width
    return length - (absent_before(base + hi + 1) - absent_before(base + lo))
