"""hours_selection_review: why each track or span was admitted or not, from a write result alone."""

from __future__ import annotations

import math
from collections import Counter
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ..errors import PipelineError
from .audit import span_length_audit

if TYPE_CHECKING:
    from ..selection.fill import FillResult

__all__ = ["hours_selection_review"]

_REASONS = {
    "admitted": "ranked high enough to fit the budget",
    "tag-reserve": "admitted first as the best candidate of a tag that would otherwise be missing",
    "budget-full": "finite priority, but the budget was already full when its turn came",
    "group-cap": "its group had reached the group cap in hours",
    "non-finite": "no finite priority (every overlapping segment was filtered out or NaN)",
}


class _WriteResult(Protocol):
    """The fields of :class:`kuration.DatasetWriteResult` read here (tools sit below the
    pipeline, so the class is named by what is read of it)."""

    @property
    def manifest(self) -> dict[str, Any]: ...
    @property
    def fill(self) -> FillResult | None: ...
    @property
    def excluded_short(self) -> int: ...


def _stats(v: list[float]) -> dict[str, float | None]:
    a = np.array([x for x in v if math.isfinite(x)], dtype=np.float64)
    if a.size == 0:
        return {"min": None, "median": None, "max": None}
    return {"min": float(a.min()), "median": float(np.median(a)), "max": float(a.max())}


def hours_selection_review(result: _WriteResult, max_examples: int = 5) -> dict[str, Any]:
    """Explain an hours-budget fill without rescoring anything.

    Parameters
    ----------
    result : DatasetWriteResult
        What :func:`kuration.write_dataset` returned.
    max_examples : int
        Span examples kept per split and reason (bounded, highest priority first).

    Returns
    -------
    dict
        ``reasons`` (what each decision means), ``too_short_excluded`` and per split:
        ``requested_s``, ``admitted_s``, ``emitted_s``, ``utilization`` (emitted / requested),
        ``underfill_s``, ``decisions`` (count and seconds per reason), ``priority`` (min/median/max
        of admitted and of rejected candidates), ``cutoff_priority`` (lowest admitted),
        ``span_length`` (:func:`~kuration.tools.audit.span_length_audit`: priority and
        features against span length, admitted lengths against the pool's) and
        ``examples`` per reason.

    Raises
    ------
    ValueError
        If the result carries no fill (not produced by the hours path).
    """
    fill = result.fill
    if fill is None:
        raise PipelineError("this result has no hours fill to review", step="review")
    hz = float(result.manifest["sample_hz"])
    budget = result.manifest["budget"]
    out: dict[str, Any] = {
        "reasons": dict(_REASONS),
        "too_short_excluded": result.excluded_short,
        "splits": {},
    }
    for split, pool in fill.pools.items():
        why = fill.decisions.get(split, {})
        counts: Counter[str] = Counter()
        secs: dict[str, float] = {}
        examples: dict[str, list[dict[str, Any]]] = {}
        for c in sorted(pool, key=lambda c: c.sort_key()):
            reason = why.get(c.ident(), "budget-full")
            counts[reason] += 1
            secs[reason] = secs.get(reason, 0) + c.n_steps / hz
            ex = examples.setdefault(reason, [])
            if len(ex) < max_examples:
                ex.append(
                    {
                        "source_id": c.source_id,
                        "entity_id": c.ident()[1],
                        "span_index": c.span_index,
                        "first": c.first,
                        "last": c.last,
                        "seconds": c.n_steps / hz,
                        "priority": c.priority if math.isfinite(c.priority) else None,
                        "group": c.group,
                    }
                )
        admitted = [c.priority for c in pool if why.get(c.ident()) in ("admitted", "tag-reserve")]
        rejected = [
            c.priority for c in pool if why.get(c.ident()) not in ("admitted", "tag-reserve")
        ]
        b = budget.get(split, {})
        req = float(b.get("requested_s", 0.0))
        cands = list(pool)
        names = sorted({k for c in cands for k in c.features})
        span_audit = span_length_audit(
            np.array([c.n_steps / hz for c in cands]),
            np.array([c.priority for c in cands]),
            {n: np.array([c.features.get(n, math.nan) for c in cands]) for n in names},
            np.array([why.get(c.ident()) in ("admitted", "tag-reserve") for c in cands], bool),
        )
        out["splits"][split] = {
            "requested_s": req,
            "admitted_s": b.get("admitted_s"),
            "emitted_s": b.get("emitted_s"),
            "utilization": (b.get("emitted_s", 0.0) / req) if req else None,
            "underfill_s": b.get("underfill_s"),
            "decisions": {r: {"count": counts[r], "seconds": secs[r]} for r in sorted(counts)},
            "priority": {"admitted": _stats(admitted), "rejected": _stats(rejected)},
            "cutoff_priority": _stats(admitted)["min"],
            "span_length": span_audit,
            "examples": examples,
        }
    return out
