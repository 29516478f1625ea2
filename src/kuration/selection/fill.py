"""The hours-as-budget fill over tracks (or sub-track spans).

Tracks, unlike analysis windows, do not overlap, so they are the budget unit.
:func:`build_candidates` turns each entity's extent in each source into one
candidate, or into consecutive spans of ``span_steps`` when subdividing; each
gets the priority, features, tags and group of the segments overlapping it,
aggregated by ``clip_aggregate``.

:func:`fill_budgets` then works split by split on pools of whole sources
(leakage-free, decoupled: a split only ever sees its own pool):

1. candidates of non-finite priority are excluded (``-inf`` means never);
2. with tag coverage, each tag's highest-priority candidate is admitted first
   (rarest tag first, by pool seconds), while the reserved time stays within
   ``min_tag_frac`` of the budget;
3. the rest are admitted in descending priority (ties: source, entity, span)
   while the admitted time is below the budget, so it is honoured to within
   one candidate;
4. with a group cap, a candidate that would take its group past
   ``max_group_overshoot * budget / n_groups`` is skipped and counted.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..contracts.segment import Segment
from ..core.ids import tag_entity_id

__all__ = [
    "Candidate",
    "FillResult",
    "aggregate_segments",
    "build_candidates",
    "fill_budgets",
]

_AGG: dict[str, Callable[[np.ndarray], Any]] = {"max": np.max, "mean": np.mean, "min": np.min}


@dataclass(frozen=True)
class Candidate:
    """A track or span that may be admitted: ticks ``[first, last]`` of ``entity_id`` in ``source_id``."""

    source_id: str
    entity_id: Any
    entity_index: int
    first: int
    last: int
    priority: float
    features: Mapping[str, float]
    span_index: int | None = None
    group: str | None = None
    tags: frozenset[str] = field(default_factory=frozenset)

    @property
    def n_steps(self) -> int:
        return self.last - self.first + 1

    def sort_key(self) -> tuple[float, str, str, int]:
        return (-self.priority, self.source_id, tag_entity_id(self.entity_id), self.span_index or 0)

    def ident(self) -> tuple[str, str, int]:
        span = -1 if self.span_index is None else self.span_index
        return (self.source_id, tag_entity_id(self.entity_id), span)


@dataclass
class FillResult:
    """``admitted[split]`` in admission order, ``budget[split]`` (the accounting block) and
    ``decisions[split]``: every pooled candidate's ``ident()`` mapped to why it was or was not
    admitted (``admitted``, ``tag-reserve``, ``budget-full``, ``group-cap``, ``non-finite``)."""

    admitted: dict[str, list[Candidate]]
    budget: dict[str, dict[str, Any]]
    decisions: dict[str, dict[tuple[str, str, int], str]] = field(default_factory=dict)
    pools: dict[str, list[Candidate]] = field(default_factory=dict)


def aggregate_segments(
    segments: Sequence[Segment], first: int, last: int, how: str, features: Sequence[str]
) -> tuple[float, dict[str, float]]:
    """Priority and features of the span ``[first, last]`` from the segments overlapping it.

    ``how`` is max, mean or min.  Only finite priorities count; a span with
    none gets -inf (never admitted).  Features aggregate their finite values
    (NaN when none).
    """
    over = [s for s in segments if s.start_idx <= last and s.end_idx > first]
    fn = _AGG[how]
    pr = np.array([s.priority for s in over], dtype=np.float64)
    pr = pr[np.isfinite(pr)]
    priority = float(fn(pr)) if pr.size else -math.inf
    feats: dict[str, float] = {}
    for name in features:
        v = np.array([s.features.get(name, np.nan) for s in over], dtype=np.float64)
        v = v[np.isfinite(v)]
        feats[name] = float(fn(v)) if v.size else math.nan
    return priority, feats


def _overlapping(
    segs: Sequence[Segment], starts: np.ndarray, first: int, last: int
) -> list[Segment]:
    hi = int(np.searchsorted(starts, last, side="right"))
    return [s for s in segs[:hi] if s.end_idx > first]


def build_candidates(
    extents: Mapping[str, Sequence[Any]],
    segments_by_source: Mapping[str, Sequence[Segment]],
    *,
    how: str,
    features: Sequence[str],
    min_steps: int = 1,
    span_steps: int | None = None,
    group_of: Callable[[str], str | None] | None = None,
) -> tuple[list[Candidate], int]:
    """One candidate per entity extent (or per span of ``span_steps``).

    Parameters
    ----------
    extents : mapping of source id to sequence of TrackExtent
        ``entity_id``, ``first``, ``last`` of each entity, in roster order.
    segments_by_source : mapping of source id to segments sorted by ``start_idx``
    how : {"max", "mean", "min"}
    min_steps : int
        Whole tracks shorter than this are left out (counted in the second return value).
    span_steps : int, optional
        Subdivide each track into consecutive spans of this many steps.
    group_of : callable, optional
        Source id to group label; without it a candidate takes the first
        group label of its overlapping segments.

    Returns
    -------
    candidates : list of Candidate
    too_short : int
    """
    out: list[Candidate] = []
    too_short = 0
    for sid in sorted(extents):
        segs = list(segments_by_source.get(sid, ()))
        starts = np.array([s.start_idx for s in segs], dtype=np.int64)
        src_group = group_of(sid) if group_of is not None else None
        for e_idx, ext in enumerate(extents[sid]):
            if ext.last - ext.first + 1 < min_steps:
                too_short += 1
                continue
            if span_steps is None:
                pieces = [(None, ext.first, ext.last)]
            else:
                pieces = [
                    (k, a, min(a + span_steps - 1, ext.last))
                    for k, a in enumerate(range(ext.first, ext.last + 1, span_steps))
                ]
            for span, a, b in pieces:
                over = _overlapping(segs, starts, a, b)
                prio, feats = aggregate_segments(over, a, b, how, features)
                tags = frozenset(f"{k}={v}" for s in over for k, v in s.tags.items())
                group = src_group
                if group_of is None:
                    group = next((s.group for s in over if s.group is not None), None)
                out.append(
                    Candidate(sid, ext.entity_id, e_idx, a, b, prio, feats, span, group, tags)
                )
    return out, too_short


def fill_budgets(
    candidates: Sequence[Candidate],
    split_of: Mapping[str, str],
    budgets_s: Mapping[str, float],
    sample_hz: float,
    *,
    max_group_overshoot: float | None = None,
    tag_coverage: bool = False,
    tag_names: Collection[str] | None = None,
    min_tag_frac: float = 0.1,
) -> FillResult:
    """Admit candidates split by split until each budget (seconds) is reached.

    Parameters
    ----------
    split_of : mapping of source id to split name
        Whole sources per split (a candidate of an unassigned source is in no pool).
    budgets_s : mapping of split name to requested seconds
    max_group_overshoot : float, optional
        Enables the group cap: a group's admitted seconds never exceed
        ``max_group_overshoot * requested / n_groups`` (groups of the split's
        finite pool; an unlabelled candidate is its own group ``""``).
    tag_coverage : bool
        Admit each tag's highest-priority candidate first.
    tag_names : collection of str, optional
        Only tags of these names (a candidate's tags are ``"name=label"``).
    min_tag_frac : float
        The tag reserve never takes more than this fraction of the budget.

    Returns
    -------
    FillResult
        Per split: ``requested_s``, ``candidate_s``/``candidate_tracks`` (finite
        pool), ``admitted_s``/``admitted_tracks``, ``underfill_s``,
        ``nonfinite_excluded``/``_s``, ``group_cap_s`` and
        ``group_cap_excluded``/``_s``, ``tag_reserved``/``_s`` and
        ``tags_uncovered``, and the split's ``sources``.
    """
    admitted: dict[str, list[Candidate]] = {}
    budget: dict[str, dict[str, Any]] = {}
    decisions: dict[str, dict[tuple[str, str, int], str]] = {}
    pools: dict[str, list[Candidate]] = {}
    hz = float(sample_hz)
    for split, requested in budgets_s.items():
        req = float(requested)
        pool = [c for c in candidates if split_of.get(c.source_id) == split]
        finite = sorted((c for c in pool if math.isfinite(c.priority)), key=Candidate.sort_key)
        nonfinite = [c for c in pool if not math.isfinite(c.priority)]
        groups = sorted({c.group or "" for c in finite})
        cap = None
        if max_group_overshoot is not None and groups:
            cap = float(max_group_overshoot) * req / len(groups)
        adm = _Admission(hz, cap)
        all_tags = sorted(
            {
                t
                for c in finite
                for t in c.tags
                if tag_names is None or t.partition("=")[0] in tag_names
            }
        )
        if tag_coverage:
            limit = float(min_tag_frac) * req
            pool_s = {t: sum(c.n_steps for c in finite if t in c.tags) for t in all_tags}
            for tag in sorted(all_tags, key=lambda t: (pool_s[t], t)):  # rarest first
                if any(tag in c.tags for c in adm.taken):
                    continue
                best = next(c for c in finite if tag in c.tags)
                d = best.n_steps / hz
                if adm.total >= req or adm.reserved + d > limit + 1e-9 or not adm.fits(best):
                    continue
                adm.admit(best, reserve=True)
        capped: dict[tuple[str, str, int], Candidate] = {}
        for c in finite:
            if adm.total >= req:
                break
            if c.ident() in adm.seen:
                continue
            if not adm.fits(c):
                capped[c.ident()] = c
                continue
            adm.admit(c)
        covered = {t for c in adm.taken for t in c.tags}
        admitted[split] = adm.taken
        why: dict[tuple[str, str, int], str] = {c.ident(): "non-finite" for c in nonfinite}
        for c in finite:
            why[c.ident()] = "group-cap" if c.ident() in capped else "budget-full"
        for c in adm.taken:
            why[c.ident()] = "tag-reserve" if c.ident() in adm.reserved_ids else "admitted"
        decisions[split] = why
        pools[split] = [*finite, *nonfinite]
        budget[split] = {
            "requested_s": req,
            "candidate_s": sum(c.n_steps for c in finite) / hz,
            "candidate_tracks": len(finite),
            "admitted_s": adm.total,
            "admitted_tracks": len(adm.taken),
            "underfill_s": max(0.0, req - adm.total),
            "nonfinite_excluded": len(nonfinite),
            "nonfinite_excluded_s": sum(c.n_steps for c in nonfinite) / hz,
            "group_cap_s": cap,
            "groups": len(groups),
            "group_cap_excluded": len(capped),
            "group_cap_excluded_s": sum(c.n_steps for c in capped.values()) / hz,
            "tag_reserved": adm.n_reserved,
            "tag_reserved_s": adm.reserved,
            "tags_uncovered": [t for t in all_tags if t not in covered],
            "sources": sorted({c.source_id for c in pool}),
        }
    return FillResult(admitted, budget, decisions, pools)


class _Admission:
    """Running state of one split's fill."""

    def __init__(self, hz: float, cap: float | None) -> None:
        self.hz = hz
        self.cap = cap
        self.taken: list[Candidate] = []
        self.seen: set[tuple[str, str, int]] = set()
        self.by_group: dict[str, float] = {}
        self.total = 0.0
        self.reserved = 0.0
        self.n_reserved = 0
        self.reserved_ids: set[tuple[str, str, int]] = set()

    def fits(self, c: Candidate) -> bool:
        if self.cap is None:
            return True
        return self.by_group.get(c.group or "", 0.0) + c.n_steps / self.hz <= self.cap + 1e-9

    def admit(self, c: Candidate, *, reserve: bool = False) -> None:
        d = c.n_steps / self.hz
        self.taken.append(c)
        self.seen.add(c.ident())
        self.total += d
        g = c.group or ""
        self.by_group[g] = self.by_group.get(g, 0.0) + d
        if reserve:
            self.reserved += d
            self.n_reserved += 1
            self.reserved_ids.add(c.ident())
