"""The object-per-candidate fill as it was before the columnar one (kept as the reference).

``fill_budgets`` below is the fill that ran up to the columnar
:class:`~kuration.selection.candidates.CandidateTable`, verbatim but for its
docstring; tests/kuration/selection/test_candidates.py checks the columnar
fill against it result by result (admission order, accounting, decisions, pools).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from kuration.selection.fill import Candidate, FillResult


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
    """The reference fill (see the module docstring)."""
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
        shortest: dict[str, float] = {}
        for c in finite:
            g = c.group or ""
            shortest[g] = min(shortest.get(g, math.inf), c.n_steps / hz)
        starved = [g for g in groups if cap is not None and shortest[g] > cap + 1e-9]
        reserved_groups = {c.group or "" for c in adm.taken if c.ident() in adm.reserved_ids}
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
            "group_cap_starved": len(starved),
            "shortest_track_s": min(shortest.values()) if shortest else None,
            "tag_reserved": adm.n_reserved,
            "tag_reserved_s": adm.reserved,
            "tag_reserve_capped_s": sum(
                c.n_steps for c in capped.values() if (c.group or "") in reserved_groups
            )
            / hz,
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
