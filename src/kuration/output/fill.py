"""The hours-as-budget fill over tracks.

Tracks (non-overlapping, unlike analysis windows) are the budget unit.  Each
split has its own pool of whole sources (leakage-free).  Within a pool,
tracks are ranked by priority (descending; ties by source, entity, span) and
admitted while the admitted duration is below the budget, so the budget is
honoured to within one track.  Tracks of non-finite priority are never
admitted; an exhausted pool leaves the budget under-filled and says so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..ids import tag_entity_id
from ..segment import Segment

__all__ = ["Candidate", "FillResult", "aggregate_segments", "fill_budgets"]


@dataclass(frozen=True)
class Candidate:
    """A track (or span) that may be admitted: ticks ``[first, last]`` of ``entity_id`` in ``source_id``."""

    source_id: str
    entity_id: Any
    entity_index: int
    first: int
    last: int
    priority: float
    features: Mapping[str, float]
    span_index: int | None = None
    group: str | None = None

    @property
    def n_steps(self) -> int:
        return self.last - self.first + 1

    def sort_key(self) -> tuple[float, str, str, int]:
        return (-self.priority, self.source_id, tag_entity_id(self.entity_id), self.span_index or 0)


@dataclass
class FillResult:
    admitted: dict[str, list[Candidate]]
    budget: dict[str, dict[str, Any]]


def aggregate_segments(
    segments: Sequence[Segment], first: int, last: int, how: str, features: Sequence[str]
) -> tuple[float, dict[str, float]]:
    """Priority and features of the span ``[first, last]`` from the segments overlapping it.

    ``how`` is max, mean or min.  Only finite priorities count; a span with
    none gets -inf (never admitted).  Features aggregate their finite values
    (NaN when none).
    """
    over = [s for s in segments if s.start_idx <= last and s.end_idx > first]
    fn = {"max": np.max, "mean": np.mean, "min": np.min}[how]
    pr = np.array([s.priority for s in over], dtype=np.float64)
    pr = pr[np.isfinite(pr)]
    priority = float(fn(pr)) if pr.size else -math.inf
    feats: dict[str, float] = {}
    for name in features:
        v = np.array([s.features.get(name, np.nan) for s in over], dtype=np.float64)
        v = v[np.isfinite(v)]
        feats[name] = float(fn(v)) if v.size else math.nan
    return priority, feats


def fill_budgets(
    candidates: Sequence[Candidate],
    split_of: Mapping[str, str],
    budgets_s: Mapping[str, float],
    sample_hz: float,
) -> FillResult:
    """Admit candidates split by split until each budget (seconds) is reached.

    Returns
    -------
    FillResult
        ``admitted[split]`` in admission order and, per split, the budget
        block: requested, candidate, admitted seconds, underfill, and the
        count/seconds of non-finite exclusions.
    """
    admitted: dict[str, list[Candidate]] = {}
    budget: dict[str, dict[str, Any]] = {}
    for split, req in budgets_s.items():
        pool = [c for c in candidates if split_of.get(c.source_id) == split]
        finite = [c for c in pool if math.isfinite(c.priority)]
        nonfinite = [c for c in pool if not math.isfinite(c.priority)]
        finite.sort(key=Candidate.sort_key)
        taken: list[Candidate] = []
        total = 0.0
        for c in finite:
            if total >= req:
                break
            taken.append(c)
            total += c.n_steps / sample_hz
        admitted[split] = taken
        cand_s = sum(c.n_steps for c in finite) / sample_hz
        budget[split] = {
            "requested_s": float(req),
            "candidate_s": cand_s,
            "candidate_tracks": len(finite),
            "admitted_s": total,
            "admitted_tracks": len(taken),
            "underfill_s": max(0.0, float(req) - total),
            "nonfinite_excluded": len(nonfinite),
            "nonfinite_excluded_s": sum(c.n_steps for c in nonfinite) / sample_hz,
            "sources": sorted({c.source_id for c in pool}),
        }
    return FillResult(admitted, budget)
