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

The fill itself never raises.  :func:`check_group_cap` refuses a plan in
which the cap is shorter than the shortest candidate of *every* group of a
split with a non-zero request (nothing could ever be admitted); a cap that
starves only some groups is recorded (``group_cap_starved``) and, if the
split ends under-filled, named by :func:`explain_underfill` as the binding
constraint.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..contracts.segment import Segment
from ..core.ids import tag_entity_id
from ..errors import BudgetGranularityWarning, EmptySplitError, GroupCapError

__all__ = [
    "BINDING_CONSTRAINTS",
    "Candidate",
    "FillResult",
    "aggregate_segments",
    "build_candidates",
    "check_group_cap",
    "explain_underfill",
    "fill_budgets",
    "settle_splits",
]

BINDING_CONSTRAINTS = ("group cap", "pool size", "track length")

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
    (NaN when none).  The arithmetic is :func:`build_candidates`' own (a mean
    is ``np.add.reduceat`` over the values divided by their count), so the one
    span computed here is bit for bit the one computed there; it can differ
    from ``np.mean`` in the last bit, whose summation order numpy does not fix.
    """
    over = [s for s in segments if s.start_idx <= last and s.end_idx > first]
    idx, off = np.arange(len(over)), np.array([0, len(over)])
    pr = np.array([s.priority for s in over], dtype=np.float64)
    p = _reduce_runs(pr, idx, off, how)[0]
    feats: dict[str, float] = {}
    for name in features:
        v = np.array([s.features.get(name, np.nan) for s in over], dtype=np.float64)
        feats[name] = float(_reduce_runs(v, idx, off, how)[0])
    return (-math.inf if math.isnan(p) else float(p)), feats


def _overlaps(
    segs: Sequence[Segment], a: np.ndarray, b: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each span's overlapping segments, flattened: segment indices and per-span offsets.

    Span ``i`` overlaps ``idx[off[i]:off[i + 1]]``, in segment order (``start_idx <= b``
    and ``end_idx > a``).
    """
    starts = np.fromiter((s.start_idx for s in segs), np.int64, len(segs))
    ends = np.fromiter((s.end_idx for s in segs), np.int64, len(segs))
    if np.all(ends[1:] >= ends[:-1]):  # one window length: a contiguous run per span
        lo = np.searchsorted(ends, a, side="right")
        hi = np.maximum(np.searchsorted(starts, b, side="right"), lo)
        n = hi - lo
        off = np.r_[0, np.cumsum(n)]
        idx = np.arange(off[-1]) - np.repeat(off[:-1] - lo, n)
        return idx, off
    rows, idx = np.nonzero((starts[None, :] <= b[:, None]) & (ends[None, :] > a[:, None]))
    return idx, np.r_[0, np.cumsum(np.bincount(rows, minlength=a.size))]


def _reduce_runs(vals: np.ndarray, idx: np.ndarray, off: np.ndarray, how: str) -> np.ndarray:
    """``how`` of the finite ``vals[idx]`` of each run (runs given by ``off``), NaN when none.

    ``np.maximum/minimum.reduceat`` give ``np.max/min`` exactly; a mean is the run's
    ``np.add.reduceat`` sum over its count, which can differ from ``np.mean`` in the last
    bit (numpy sums short runs in a different order); :func:`aggregate_segments` uses
    this same kernel, so the two always agree.
    """
    v = vals[idx]
    fin = np.isfinite(v)
    v = v[fin]
    cf = np.r_[0, np.cumsum(fin)]
    first = cf[off[:-1]]  # each run's first finite value in v
    n = cf[off[1:]] - first
    out = np.full(n.size, np.nan)
    has = n > 0
    if v.size:
        # non-empty runs only: each ends where the next non-empty one starts
        ufunc = {"max": np.maximum, "min": np.minimum, "mean": np.add}[how]
        red = ufunc.reduceat(v, first[has])
        if how == "mean":
            # np.sum starts short runs from +0.0, so a lone -0.0 sums to 0.0 there
            red = np.where(n[has] < 8, red + 0.0, red) / n[has]
        out[has] = red
    return out


def _source_candidates(
    sid: str,
    exts: Sequence[Any],
    segs: Sequence[Segment],
    pieces: list[tuple[int, int | None, int, int]],
    how: str,
    features: Sequence[str],
    src_group: str | None,
    by_label: bool,
) -> list[Candidate]:
    """The candidates of one source's spans ``(entity index, span, first, last)``, vectorised."""
    a = np.fromiter((p[2] for p in pieces), np.int64, len(pieces))
    b = np.fromiter((p[3] for p in pieces), np.int64, len(pieces))
    if segs:
        idx, off = _overlaps(segs, a, b)
    else:
        idx, off = np.zeros(0, np.intp), np.zeros(a.size + 1, np.int64)
    cols = {}
    for name in (None, *features):
        if name is None:
            vals = np.fromiter((s.priority for s in segs), np.float64, len(segs))
        else:
            vals = np.fromiter((s.features.get(name, np.nan) for s in segs), np.float64, len(segs))
        cols[name] = _reduce_runs(vals, idx, off, how).tolist()
    prio = [-math.inf if math.isnan(p) else p for p in cols.pop(None)]
    tagged = any(s.tags for s in segs)
    grouped = by_label and any(s.group is not None for s in segs)
    out: list[Candidate] = []
    for i, (e_idx, span, first, last) in enumerate(pieces):
        tags: frozenset[str] = frozenset()
        group = src_group
        if tagged or grouped:
            over = [segs[j] for j in idx[off[i] : off[i + 1]]]
            tags = frozenset(f"{k}={v}" for s in over for k, v in s.tags.items())
            if grouped:
                group = next((s.group for s in over if s.group is not None), None)
        feats = {name: cols[name][i] for name in features}
        ent = exts[e_idx].entity_id
        out.append(Candidate(sid, ent, e_idx, first, last, prio[i], feats, span, group, tags))
    return out


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

    Each candidate's priority and features aggregate the segments overlapping it
    as :func:`aggregate_segments` does, computed for all of a source's spans at
    once (``reduceat`` over the overlapping runs).

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
    _AGG[how]  # an unknown aggregate is a KeyError, as before
    out: list[Candidate] = []
    too_short = 0
    for sid in sorted(extents):
        segs = list(segments_by_source.get(sid, ()))
        src_group = group_of(sid) if group_of is not None else None
        pieces: list[tuple[int, int | None, int, int]] = []
        for e_idx, ext in enumerate(extents[sid]):
            if ext.last - ext.first + 1 < min_steps:
                too_short += 1
            elif span_steps is None:
                pieces.append((e_idx, None, ext.first, ext.last))
            else:
                for k, a in enumerate(range(ext.first, ext.last + 1, span_steps)):
                    pieces.append((e_idx, k, a, min(a + span_steps - 1, ext.last)))
        if pieces:
            out.extend(
                _source_candidates(
                    sid, extents[sid], segs, pieces, how, features, src_group, group_of is None
                )
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
        ``group_cap_excluded``/``_s``, ``group_cap_starved`` (groups whose
        shortest candidate is longer than the cap), ``shortest_track_s``
        (finite pool), ``tag_reserved``/``_s``, ``tag_reserve_capped_s``
        (cap exclusions in groups where the reserve admitted a candidate) and
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


def check_group_cap(
    fill: FillResult, *, overshoot: float | None, shard_seconds: float | None = None
) -> None:
    """Refuse a fill whose group cap starves every group of a split with a non-zero request.

    A group is starved when its shortest candidate is longer than the cap
    (``max_group_overshoot * requested / n_groups``): none of its tracks can
    ever be admitted.  When every group of a split is starved the split can
    only end empty, so planning stops here, before any shard is written.  A
    cap that starves only some groups is not an error: the other groups fill
    the split, and if it ends under-filled :func:`explain_underfill` names the
    cap as the binding constraint.

    Parameters
    ----------
    fill : FillResult
    overshoot : float or None
        The ``max_group_overshoot`` in effect (named in the message).
    shard_seconds : float, optional
        Shortest span length the output accepts (``shard_length`` with
        ``short_policy: "drop"``), so the span suggestion is one that works.

    Raises
    ------
    GroupCapError
        Naming the split, the cap (seconds), the shortest track and the ways
        out: a larger ``max_group_overshoot``, coarser groups (``group_of``),
        or spans (``span_seconds``) no longer than the cap.
    """
    capped = {
        split: b
        for split, b in fill.budget.items()
        if b.get("group_cap_s") is not None and b.get("groups", 0) and b["requested_s"] > 0
    }
    starved = [s for s, b in capped.items() if b["group_cap_starved"] >= b["groups"]]
    if not starved:
        return
    split, b = starved[0], capped[starved[0]]
    cap, n, shortest = float(b["group_cap_s"]), int(b["groups"]), float(b["shortest_track_s"])
    # the overshoot that lets a first track into every split, rounded up so it is enough
    need = max(
        float(c["shortest_track_s"]) * c["groups"] / c["requested_s"] for c in capped.values()
    )
    need = math.ceil(need * 100) / 100
    spans = f"split tracks into spans of at most {math.floor(cap)} s (span_seconds)"
    if shard_seconds is not None and shard_seconds > cap:
        spans = (
            f"spans (span_seconds) would have to be at most {math.floor(cap)} s, shorter "
            f"than one {shard_seconds:g} s shard with short_policy 'drop', so they cannot help"
        )
    raise GroupCapError(
        f"split {split!r}: the group cap ({float(overshoot or 0):g} x {b['requested_s']:g} s / {n} "
        f"groups = {cap:.1f} s) is shorter than the shortest candidate track "
        f"({shortest:g} s) of every group, so nothing can be admitted; raise "
        f"max_group_overshoot to at least {need:g} (that admits a first track in every split; "
        f"filling the budgets takes more), use coarser groups (group_of) so fewer groups share "
        f"the budget, or {spans}",
        split=split,
        cap_s=cap,
        shortest_s=shortest,
        n_groups=n,
        requested_s=float(b["requested_s"]),
    )


def explain_underfill(
    b: Mapping[str, Any], *, emitted_s: float, too_short: int = 0
) -> tuple[str | None, str]:
    """The constraint that kept one split below its request, and a sentence saying how.

    Parameters
    ----------
    b : mapping
        The split's budget block from :func:`fill_budgets`.
    emitted_s : float
        Seconds the split's planned shards hold.
    too_short : int
        Tracks left out for being shorter than ``min_track_seconds`` (all splits).

    Returns
    -------
    binding : {"group cap", "pool size", "track length"} or None
        None when the split emits at least its request (or requests nothing).
        ``group cap``: the cap refused candidates the budget had room for;
        ``pool size``: every finite-priority candidate was admitted and the pool
        still held less than the request; ``track length``: enough was admitted
        but shards dropped the tails (or whole tracks) shorter than a shard.
        The tag reserve only reorders admission, so it never lowers the admitted
        total on its own; when it used up the cap of groups the cap then refused,
        the detail of ``group cap`` says so.
    detail : str
    """
    req = float(b["requested_s"])
    if req <= 0 or emitted_s >= req:
        return None, ""
    admitted = float(b["admitted_s"])
    head = f"{emitted_s:.0f} s of {req:.0f} s emitted"
    if admitted < req and b.get("group_cap_excluded", 0):
        detail = (
            f"{head}: the group cap of {b['group_cap_s']:.1f} s per group ({b['groups']} groups) "
            f"refused {b['group_cap_excluded']} tracks ({b['group_cap_excluded_s']:.0f} s)"
        )
        if b.get("group_cap_starved"):
            detail += f"; {b['group_cap_starved']} groups have no track short enough to fit"
        if b.get("tag_reserve_capped_s"):
            detail += (
                f"; the tag reserve used the cap of groups where {b['tag_reserve_capped_s']:.0f} s "
                "were then refused"
            )
        return "group cap", detail + "; raise max_group_overshoot or use coarser groups"
    if admitted < req and not b["candidate_tracks"]:
        detail = f"{head}: the split's pool holds no finite-priority track"
        if not b.get("sources"):
            detail = f"{head}: no source was assigned to the split"
        elif b.get("nonfinite_excluded"):
            detail += f" ({b['nonfinite_excluded']} tracks have no finite priority)"
        if too_short:
            detail += f"; {too_short} tracks were shorter than min_track_seconds"
        return "pool size", detail + "; add sources or lower the request"
    if admitted < req:
        detail = (
            f"{head}: the pool holds {b['candidate_s']:.0f} s in {b['candidate_tracks']} "
            "finite-priority tracks, all admitted"
        )
        if b.get("nonfinite_excluded"):
            detail += (
                f"; {b['nonfinite_excluded']} tracks ({b['nonfinite_excluded_s']:.0f} s) "
                "have no finite priority"
            )
        if too_short:
            detail += f"; {too_short} tracks were shorter than min_track_seconds"
        return "pool size", detail + "; add sources or lower the request"
    return "track length", (
        f"{head}: {admitted:.0f} s admitted, but {admitted - emitted_s:.0f} s of track ends "
        "do not fill a whole shard (shard_length, short_policy)"
    )


def settle_splits(
    fill: FillResult,
    planned: Sequence[tuple[str, Candidate, list[dict[str, Any]]]],
    hz: float,
    too_short: int,
    allow_empty_split: bool,
) -> dict[str, tuple[str | None, str]]:
    """The binding constraint of each split from the shard plan (before any shard is written).

    Parameters
    ----------
    fill : FillResult
    planned : sequence of (split, candidate, manifest entries)
        The shard plan; each entry has ``n_steps``.
    hz : float
    too_short : int
        Tracks left out for being shorter than ``min_track_seconds``.
    allow_empty_split : bool

    Returns
    -------
    dict
        Per split, :func:`explain_underfill`'s ``(binding, detail)``.

    Raises
    ------
    EmptySplitError
        A split with a non-zero request plans no shard and ``allow_empty_split`` is false.
    """
    warn_coarse_units(fill, hz)
    out: dict[str, tuple[str | None, str]] = {}
    for split in fill.budget:
        b = fill.budget[split]
        entries = [e for sp, _, es in planned if sp == split for e in es]
        emitted = sum(e["n_steps"] for e in entries) / hz
        binding, detail = explain_underfill(b, emitted_s=emitted, too_short=too_short)
        out[split] = (binding, detail)
        if b["requested_s"] > 0 and not entries and not allow_empty_split:
            raise EmptySplitError(
                f"split {split!r} would be empty ({b['requested_s']:g} s requested); binding "
                f"constraint: {binding}: {detail}. Set allow_empty_split (job key "
                '"allow_empty_split": true) to write it anyway',
                split=split,
                requested_s=float(b["requested_s"]),
                binding=binding,
            )
    return out


BUDGET_TOLERANCE = 0.1


def warn_coarse_units(fill: FillResult, hz: float, tolerance: float = BUDGET_TOLERANCE) -> None:
    """Warn for every split whose admitted seconds exceed its request by more than ``tolerance``.

    Whole tracks (or spans) are admitted, so a split overshoots by less than its last
    admitted unit; when that unit is long next to the request (a football player's
    half against a 6-minute request) the overshoot is large.  The warning names the
    fix: ``span_seconds`` at most ``tolerance`` times the request.

    Warns
    -----
    BudgetGranularityWarning
        Naming the split, the requested and admitted hours and the longest admitted unit.
    """
    for split, b in fill.budget.items():
        req, adm = float(b["requested_s"]), float(b["admitted_s"])
        if req <= 0 or adm <= req * (1 + tolerance) or not fill.admitted.get(split):
            continue
        longest = max(c.n_steps for c in fill.admitted[split]) / hz
        warnings.warn(
            BudgetGranularityWarning(
                f"split {split!r}: {adm / 3600:.3g} h admitted for {req / 3600:.3g} h requested "
                f"(+{(adm / req - 1):.0%}): whole tracks are admitted and the admitted ones are up "
                f"to {longest:.3g} s long; set span_seconds (job key) to at most "
                f"{tolerance * req:.3g} s so tracks are cut into spans and the "
                f"split lands within {tolerance:.0%} of its request",
                split=split,
                requested_s=req,
                admitted_s=adm,
                unit_s=longest,
            ),
            stacklevel=2,
        )


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
