"""One source's tracks as columns: a read-only sequence of :class:`TrackExtent`.

The disk-pool hours runtime (:mod:`kuration.pipeline.disk.hours`) keeps every
source's :class:`~kuration.pipeline.run.scoring.SourceInfo` for the whole run.  As a
tuple of :class:`TrackExtent` objects a track costs about 250 bytes (the object,
its ints, its gaps tuple); :class:`TrackColumns` holds the same values in int64
arrays and makes each object only when it is read, so a track costs its entity
id and about 40 bytes.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any, overload

import numpy as np

from ...errors import PipelineError
from ..run.scoring import TrackExtent

__all__ = ["TrackColumns"]


class TrackColumns(Sequence[TrackExtent]):
    """One source's tracks in roster order, stored by column.

    Parameters
    ----------
    entity_ids : sequence
        Each track's entity id.
    first, last : sequence of int, shape (n,), ticks
        Each track's extent ``[first, last]`` (inclusive).
    n_present : sequence of int, shape (n,)
        Ticks of the extent at which the entity is present.
    gaps : sequence of sequence of int, optional
        Each track's absent runs as flat ``(start, stop)`` pairs (:attr:`TrackExtent.gaps`);
        default: none.

    Raises
    ------
    PipelineError
        The columns differ in length.

    Notes
    -----
    Equal to any sequence of equal :class:`TrackExtent` (a tuple of them included), and
    hashed as that tuple.
    """

    __slots__ = ("_gap_at", "_gaps", "entity_ids", "first", "last", "n_present")

    def __init__(
        self,
        entity_ids: Sequence[Any],
        first: Sequence[int] | np.ndarray,
        last: Sequence[int] | np.ndarray,
        n_present: Sequence[int] | np.ndarray,
        gaps: Sequence[Sequence[int]] | None = None,
    ) -> None:
        self.entity_ids = tuple(entity_ids)
        n = len(self.entity_ids)
        self.first = np.asarray(first, np.int64)
        self.last = np.asarray(last, np.int64)
        self.n_present = np.asarray(n_present, np.int64)
        runs = [()] * n if gaps is None else gaps
        sizes = np.fromiter((len(g) for g in runs), np.int64, len(runs))
        if {self.first.shape, self.last.shape, self.n_present.shape, sizes.shape} != {(n,)}:
            raise PipelineError(f"track columns of different lengths ({n} entity ids)")
        self._gap_at = np.r_[0, np.cumsum(sizes)].astype(np.int64)
        self._gaps = np.fromiter(itertools.chain.from_iterable(runs), np.int64, int(sizes.sum()))

    def __len__(self) -> int:
        return len(self.entity_ids)

    @overload
    def __getitem__(self, i: int) -> TrackExtent: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[TrackExtent, ...]: ...
    def __getitem__(self, i: int | slice) -> TrackExtent | tuple[TrackExtent, ...]:
        if isinstance(i, slice):
            return tuple(self._extent(j) for j in range(len(self))[i])
        return self._extent(range(len(self))[i])

    def __iter__(self) -> Iterator[TrackExtent]:
        return (self._extent(j) for j in range(len(self)))

    def _extent(self, j: int) -> TrackExtent:
        a, b = int(self._gap_at[j]), int(self._gap_at[j + 1])
        return TrackExtent(
            self.entity_ids[j],
            int(self.first[j]),
            int(self.last[j]),
            int(self.n_present[j]),
            tuple(self._gaps[a:b].tolist()),
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"TrackColumns({len(self)} tracks)"

    def gap_columns(self) -> tuple[np.ndarray, np.ndarray]:
        """Every track's ``gaps`` laid end to end (int64, ticks) and each track's count of
        values in it (int64, two a run): what :func:`~kuration.selection.presence.present_ticks`
        would otherwise gather track by track."""
        return self._gaps, np.diff(self._gap_at)

    @property
    def nbytes(self) -> int:
        """Bytes held by the int64 columns (the entity ids not counted)."""
        cols = (self.first, self.last, self.n_present, self._gap_at, self._gaps)
        return sum(c.nbytes for c in cols)
