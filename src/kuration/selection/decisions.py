"""Each pooled candidate's admission reason, one byte per row (:class:`DecisionMap`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

Ident = tuple[str, str, int]

__all__ = ["DecisionMap"]

#: Why a pooled candidate was or was not admitted (:class:`DecisionMap` stores the index).
REASONS = ("admitted", "tag-reserve", "budget-full", "group-cap", "non-finite")


class DecisionMap(Mapping[Ident, str]):
    """Each pooled candidate's :meth:`Candidate.ident` mapped to its reason (one of
    :data:`REASONS`), stored as one byte per row; the ident keys are made when read."""

    __slots__ = ("_index", "codes", "rows", "table")

    def __init__(self, table: Any, rows: np.ndarray, codes: np.ndarray) -> None:
        self.table = table
        self.rows = rows
        self.codes = codes
        self._index: dict[Ident, int] | None = None

    def _lookup(self) -> dict[Ident, int]:
        if self._index is None:
            self._index = {self.table.ident(r): i for i, r in enumerate(self.rows.tolist())}
        return self._index

    def __getitem__(self, key: Ident) -> str:
        return REASONS[int(self.codes[self._lookup()[key]])]

    def __contains__(self, key: object) -> bool:
        return key in self._lookup()

    def __iter__(self) -> Iterator[Ident]:
        return (self.table.ident(r) for r in self.rows.tolist())

    def __len__(self) -> int:
        return int(self.rows.size)

    def counts(self) -> dict[str, int]:
        """How many candidates each reason holds (reasons with none left out)."""
        n = np.bincount(self.codes, minlength=len(REASONS))
        return {r: int(k) for r, k in zip(REASONS, n.tolist(), strict=True) if k}

    def __repr__(self) -> str:
        return f"DecisionMap({self.counts()})"
