"""The hours-as-budget fill over tracks (or sub-track spans).

Tracks, unlike analysis windows, do not overlap, so they are the budget unit.
:func:`build_candidate_table` (:mod:`kuration.selection.candidates`) turns each
entity's extent in each source into one candidate row, or into consecutive spans
of ``span_steps`` when subdividing; each gets the priority, features, tags and
group of the segments overlapping it, aggregated by ``clip_aggregate``.
:func:`build_candidates` is the same as a list of :class:`Candidate` objects.

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

It works on the table's columns (a sort, then a loop over positions that stops
when the budget is full); only the admitted candidates become objects, and the
pool and decisions it returns are views over the table
(:class:`~kuration.selection.candidates.CandidateRows`,
:class:`~kuration.selection.candidates.DecisionMap`).

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
from typing import Any, NamedTuple

import numpy as np

from ..contracts.segment import Segment
from ..errors import BudgetGranularityWarning, EmptySplitError, GroupCapError
from .candidates import (
    REASONS,
    Candidate,
    CandidateRows,
    CandidateTable,
    DecisionMap,
    aggregate_segments,
    build_candidate_table,
)

__all__ = [
    "BINDING_CONSTRAINTS",
    "Candidate",
    "CandidateTable",
    "FillResult",
    "aggregate_segments",
    "build_candidate_table",
    "build_candidates",
    "check_group_cap",
    "explain_underfill",
    "fill_budgets",
    "settle_splits",
]

BINDING_CONSTRAINTS = ("group cap", "pool size", "track length")

_WHY = {r: np.uint8(i) for i, r in enumerate(REASONS)}


@dataclass
class FillResult:
    """``admitted[split]`` in admission order, ``budget[split]`` (the accounting block) and
    ``decisions[split]``: every pooled candidate's ``ident()`` mapped to why it was or was not
    admitted (``admitted``, ``tag-reserve``, ``budget-full``, ``group-cap``, ``non-finite``);
    ``pools[split]``: the split's finite pool in admission order, then its non-finite
    candidates.  From :func:`fill_budgets`, ``decisions`` and ``pools`` are read-only views
    over the candidate table (objects are made when read)."""

    admitted: dict[str, list[Candidate]]
    budget: dict[str, dict[str, Any]]
    decisions: dict[str, Mapping[tuple[str, str, int], str]] = field(default_factory=dict)
    pools: dict[str, Sequence[Candidate]] = field(default_factory=dict)


def build_candidates(
    extents: Mapping[str, Sequence[Any]],
    segments_by_source: Mapping[str, Sequence[Segment]],
    *,
    how: str,
    features: Sequence[str],
    min_steps: int = 1,
    span_steps: int | None = None,
    group_of: Callable[[str], str | None] | None = None,
    veto: bool = False,
) -> tuple[list[Candidate], int]:
    """One candidate per entity extent (or per span of ``span_steps``), as objects.

    :func:`build_candidate_table`'s rows, each made a :class:`Candidate`; the
    pipeline keeps the table itself (a few dozen bytes per span instead of an
    object of about a kilobyte).

    Parameters
    ----------
    extents : mapping of source id to sequence of TrackExtent
        ``entity_id``, ``first``, ``last`` of each entity, in roster order.
    segments_by_source : mapping of source id to segments sorted by ``start_idx``
    how : {"max", "mean", "min"}
    features : sequence of str
    min_steps : int
        Whole tracks shorter than this are left out (counted in the second return value).
    span_steps : int, optional
        Subdivide each track into consecutive spans of this many steps.
    group_of : callable, optional
        Source id to group label; without it a candidate takes the first
        group label of its overlapping segments.
    veto : bool
        A candidate overlapping a segment of priority ``-inf`` gets ``-inf`` itself.

    Returns
    -------
    candidates : list of Candidate
    too_short : int

    Raises
    ------
    KeyError
        ``how`` is not max, mean or min.
    """
    table, too_short = build_candidate_table(
        extents,
        segments_by_source,
        how=how,
        features=features,
        min_steps=min_steps,
        span_steps=span_steps,
        group_of=group_of,
        veto=veto,
    )
    return list(table), too_short


def fill_budgets(
    candidates: Sequence[Candidate] | CandidateTable,
    split_of: Mapping[str, str],
    budgets_s: Mapping[str, float],
    sample_hz: float,
    *,
    max_group_overshoot: float | None = None,
    tag_coverage: bool = False,
    tag_names: Collection[str] | None = None,
    min_tag_frac: float = 0.1,
    count: str = "span",
) -> FillResult:
    """Admit candidates split by split until each budget (seconds) is reached.

    Parameters
    ----------
    candidates : CandidateTable or sequence of Candidate
        A sequence of objects is read into a table first (and its objects are
        the ones returned).
    split_of : mapping of source id to split name
        Whole sources per split (a candidate of an unassigned source is in no pool).
    budgets_s : mapping of split name to requested seconds
    sample_hz : float
        Ticks per second (a candidate lasts ``n_steps / sample_hz`` seconds).
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
    count : {"span", "present"}
        What a candidate's seconds are: its span, ``(last - first + 1) / sample_hz``
        (the default), or the ticks at which its entity is present over ``sample_hz``
        (``present``); every ``_s`` figure of the budget block counts the same way.

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
    table = CandidateTable.of(candidates)
    hz = float(sample_hz)
    out = FillResult({}, {}, {}, {})
    split_code = [split_of.get(s) for s in table.source_ids]
    for split, requested in budgets_s.items():
        in_split = np.array([sp == split for sp in split_code], bool)
        rows = np.flatnonzero(in_split[table.source]) if in_split.size else np.zeros(0, np.intp)
        pool = _Pool(table, rows, hz, count)
        req = float(requested)
        cap = None
        if max_group_overshoot is not None and pool.groups:
            cap = float(max_group_overshoot) * req / len(pool.groups)
        adm = _Admission(pool, cap)
        all_tags = pool.tag_universe(tag_names)
        if tag_coverage:
            _reserve_tags(pool, adm, all_tags, req, float(min_tag_frac) * req)
        refused = np.zeros(pool.finite.size, bool)  # positions refused by the cap
        for pos in range(pool.finite.size):
            if adm.total >= req:
                break
            code = int(pool.ident[pos])
            if code in adm.seen:
                continue
            if not adm.fits(pos):
                refused[pos] = True
                continue
            adm.admit(pos)
        capped = _Capped.of(pool, refused)
        out.admitted[split] = [table.candidate(int(pool.finite[p])) for p in adm.taken]
        out.budget[split] = _budget_block(pool, adm, capped, req, all_tags)
        out.decisions[split] = _decisions(pool, adm, capped)
        out.pools[split] = CandidateRows(table, np.concatenate([pool.finite, pool.nonfinite]))
    return out


class _Pool:
    """One split's pool: its finite rows in admission order (``finite``, a position in it is
    what the fill loops over) with their columns, and its non-finite rows."""

    def __init__(self, table: CandidateTable, rows: np.ndarray, hz: float, count: str) -> None:
        fin = np.isfinite(table.priority[rows])
        self.table, self.rows, self.hz = table, rows, hz
        self.finite = table.order(rows[fin])
        self.nonfinite = rows[~fin]
        self.all_steps = table.present if count == "present" else table.n_steps
        self.steps = self.all_steps[self.finite]
        self.ident = table.ident_codes()[self.finite]
        self.tags = table.tags[self.finite]
        # group labels: None and "" are one group ""; sorted, as group keys per position
        codes, inv = np.unique(table.group[self.finite], return_inverse=True)
        label = ["" if g < 0 else table.groups[g] or "" for g in codes.tolist()]
        self.groups = sorted(set(label))
        index = {g: i for i, g in enumerate(self.groups)}
        key = np.array([index[x] for x in label], np.int64)
        self.group = key[inv.reshape(-1)] if codes.size else np.zeros(0, np.int64)

    def seconds(self, pos: int) -> float:
        return int(self.steps[pos]) / self.hz

    def tag_set(self, pos: int) -> frozenset[str]:
        return self.table.tag_sets[int(self.tags[pos])]

    def tag_universe(self, names: Collection[str] | None) -> list[str]:
        """The pool's tags (only those named ``names``), sorted."""
        sets = [self.table.tag_sets[c] for c in np.unique(self.tags).tolist()]
        return sorted({t for s in sets for t in s if names is None or t.partition("=")[0] in names})


class _Capped(NamedTuple):
    """The candidates the group cap refused: each distinct ident code (``codes``) and the
    last position at which it was refused (``pos``), both int64 arrays."""

    codes: np.ndarray
    pos: np.ndarray

    @classmethod
    def of(cls, pool: _Pool, refused: np.ndarray) -> _Capped:
        at = np.flatnonzero(refused)[::-1]  # latest first: unique keeps each code's last
        codes, first = np.unique(pool.ident[at], return_index=True)
        return cls(codes.astype(np.int64), at[first].astype(np.int64))


class _Admission:
    """Running state of one split's fill (positions in the pool's admission order)."""

    def __init__(self, pool: _Pool, cap: float | None) -> None:
        self.pool = pool
        self.cap = cap
        self.taken: list[int] = []
        self.seen: set[int] = set()
        self.by_group: dict[int, float] = {}
        self.total = 0.0
        self.reserved = 0.0
        self.n_reserved = 0
        self.reserved_ids: set[int] = set()

    def fits(self, pos: int) -> bool:
        if self.cap is None:
            return True
        g = int(self.pool.group[pos])
        return self.by_group.get(g, 0.0) + self.pool.seconds(pos) <= self.cap + 1e-9

    def admit(self, pos: int, *, reserve: bool = False) -> None:
        d = self.pool.seconds(pos)
        self.taken.append(pos)
        self.seen.add(int(self.pool.ident[pos]))
        self.total += d
        g = int(self.pool.group[pos])
        self.by_group[g] = self.by_group.get(g, 0.0) + d
        if reserve:
            self.reserved += d
            self.n_reserved += 1
            self.reserved_ids.add(int(self.pool.ident[pos]))


def _reserve_tags(
    pool: _Pool, adm: _Admission, all_tags: list[str], req: float, limit: float
) -> None:
    """Admit each tag's best candidate first, rarest tag (fewest pool seconds) first, while
    the reserve stays within ``limit`` seconds."""
    codes, first, inv = np.unique(pool.tags, return_index=True, return_inverse=True)
    steps = np.zeros(codes.size, np.int64)
    np.add.at(steps, inv.reshape(-1), pool.steps)
    sets = [pool.table.tag_sets[c] for c in codes.tolist()]
    pool_s = {
        t: sum(int(n) for s, n in zip(sets, steps.tolist(), strict=True) if t in s)
        for t in all_tags
    }
    best = {
        t: min(int(p) for s, p in zip(sets, first.tolist(), strict=True) if t in s)
        for t in all_tags
    }
    for tag in sorted(all_tags, key=lambda t: (pool_s[t], t)):  # rarest first
        if any(tag in pool.tag_set(p) for p in adm.taken):
            continue
        pos = best[tag]
        d = pool.seconds(pos)
        if adm.total >= req or adm.reserved + d > limit + 1e-9 or not adm.fits(pos):
            continue
        adm.admit(pos, reserve=True)


def _budget_block(
    pool: _Pool, adm: _Admission, capped: _Capped, req: float, all_tags: list[str]
) -> dict[str, Any]:
    """The split's accounting block (see :func:`fill_budgets`)."""
    hz, cap = pool.hz, adm.cap
    shortest = np.full(len(pool.groups), math.inf)
    np.minimum.at(shortest, pool.group, pool.steps / hz)
    starved = [
        g
        for g, s in zip(pool.groups, shortest.tolist(), strict=True)
        if cap is not None and s > cap + 1e-9
    ]
    reserved_groups = {
        int(pool.group[p]) for p in adm.taken if int(pool.ident[p]) in adm.reserved_ids
    }
    covered = {t for p in adm.taken for t in pool.tag_set(p)}
    steps_of, groups_of = pool.steps[capped.pos], pool.group[capped.pos]
    in_reserved = np.isin(groups_of, np.array(sorted(reserved_groups), np.int64))
    table = pool.table
    return {
        "requested_s": req,
        "candidate_s": int(pool.steps.sum()) / hz,
        "candidate_tracks": int(pool.finite.size),
        "admitted_s": adm.total,
        "admitted_tracks": len(adm.taken),
        "underfill_s": max(0.0, req - adm.total),
        "nonfinite_excluded": int(pool.nonfinite.size),
        "nonfinite_excluded_s": int(pool.all_steps[pool.nonfinite].sum()) / hz,
        "group_cap_s": cap,
        "groups": len(pool.groups),
        "group_cap_excluded": int(capped.codes.size),
        "group_cap_excluded_s": int(steps_of.sum()) / hz,
        "group_cap_starved": len(starved),
        "shortest_track_s": float(shortest.min()) if pool.groups else None,
        "tag_reserved": adm.n_reserved,
        "tag_reserved_s": adm.reserved,
        "tag_reserve_capped_s": int(steps_of[in_reserved].sum()) / hz,
        "tags_uncovered": [t for t in all_tags if t not in covered],
        "sources": sorted(
            {table.source_ids[s] for s in np.unique(table.source[pool.rows]).tolist()}
        ),
    }


def _decisions(pool: _Pool, adm: _Admission, capped: _Capped) -> DecisionMap:
    """Why each pooled candidate was or was not admitted, one entry per ident (the
    non-finite rows first, then the finite ones in admission order)."""
    rows = np.concatenate([pool.nonfinite, pool.finite])
    ident = pool.table.ident_codes()[rows]
    n_codes = int(ident.max()) + 1 if ident.size else 0

    def among(codes: np.ndarray) -> np.ndarray:  # np.isin(ident, codes) by a lookup table
        hit = np.zeros(n_codes + 1, bool)  # one spare slot: codes past the pool's are no row
        hit[np.minimum(codes, n_codes)] = True
        hit[n_codes] = False
        return hit[ident]

    why = np.where(among(pool.ident), _WHY["budget-full"], _WHY["non-finite"])
    taken = [int(pool.ident[p]) for p in adm.taken]
    for reason, codes in (
        ("group-cap", capped.codes),
        ("admitted", taken),
        ("tag-reserve", [c for c in taken if c in adm.reserved_ids]),
    ):
        why[among(np.asarray(codes, np.int64))] = _WHY[reason]
    _, first = np.unique(ident, return_index=True)
    keep = np.sort(first)
    return DecisionMap(pool.table, rows[keep], why[keep].astype(np.uint8))


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
    b: Mapping[str, Any],
    *,
    emitted_s: float,
    too_short: int = 0,
    duration: Callable[[float], str] | None = None,
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
    duration : callable, optional
        Writes a duration in seconds as text (``kur run`` passes hours); by default
        whole seconds (``"120 s"``, the cap with one decimal), as config.json records it.

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
    sec = duration or _whole_seconds
    cap = duration or _tenth_seconds
    admitted = float(b["admitted_s"])
    head = f"{sec(emitted_s)} of {sec(req)} emitted"
    if admitted < req and b.get("group_cap_excluded", 0):
        detail = (
            f"{head}: the group cap of {cap(b['group_cap_s'])} per group ({b['groups']} groups) "
            f"refused {b['group_cap_excluded']} tracks ({sec(b['group_cap_excluded_s'])})"
        )
        if b.get("group_cap_starved"):
            detail += f"; {b['group_cap_starved']} groups have no track short enough to fit"
        if b.get("tag_reserve_capped_s"):
            detail += (
                f"; the tag reserve used the cap of groups where {sec(b['tag_reserve_capped_s'])} "
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
            f"{head}: the pool holds {sec(b['candidate_s'])} in {b['candidate_tracks']} "
            "finite-priority tracks, all admitted"
        )
        if b.get("nonfinite_excluded"):
            detail += (
                f"; {b['nonfinite_excluded']} tracks ({sec(b['nonfinite_excluded_s'])}) "
                "have no finite priority"
            )
        if too_short:
            detail += f"; {too_short} tracks were shorter than min_track_seconds"
        return "pool size", detail + "; add sources or lower the request"
    return "track length", (
        f"{head}: {sec(admitted)} admitted, but {sec(admitted - emitted_s)} of track ends "
        "do not fill a whole shard (shard_length, short_policy)"
    )


def _whole_seconds(s: float) -> str:
    return f"{s:.0f} s"


def _tenth_seconds(s: float) -> str:
    return f"{s:.1f} s"


def settle_splits(
    fill: FillResult,
    planned: Sequence[tuple[str, Candidate, list[dict[str, Any]]]],
    hz: float,
    too_short: int,
    allow_empty_split: bool,
    min_unit_s: float = 0.0,
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
    min_unit_s : float
        The shortest unit the run could admit (one window, seconds): no advice names a
        shorter span.

    Returns
    -------
    dict
        Per split, :func:`explain_underfill`'s ``(binding, detail)``.

    Raises
    ------
    EmptySplitError
        A split with a non-zero request plans no shard and ``allow_empty_split`` is false.
    """
    warn_coarse_units(fill, hz, min_unit_s=min_unit_s)
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


def warn_coarse_units(
    fill: FillResult, hz: float, tolerance: float = BUDGET_TOLERANCE, min_unit_s: float = 0.0
) -> None:
    """Warn for every split whose admitted seconds exceed its request by more than ``tolerance``.

    Whole tracks (or spans) are admitted, so a split overshoots by less than its last
    admitted unit; when that unit is long next to the request (a football player's
    half against a 6-minute request) the overshoot is large.  The warning names the
    fix: ``span_seconds`` at most ``tolerance`` times the request, or, when that is
    shorter than ``min_unit_s`` (one window: no span is shorter), a larger request.

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
        if tolerance * req >= min_unit_s:
            fix = (
                f"set span_seconds (job key) to at most {tolerance * req:.3g} s so tracks are "
                f"cut into spans and the split lands within {tolerance:.0%} of its request"
            )
        else:
            fix = (
                f"no span is shorter than one window ({min_unit_s:.3g} s), so only a request of "
                f"at least {min_unit_s / tolerance:.3g} s lands within {tolerance:.0%}"
            )
        warnings.warn(
            BudgetGranularityWarning(
                f"split {split!r}: {adm / 3600:.3g} h admitted for {req / 3600:.3g} h requested "
                f"(+{(adm / req - 1):.0%}): whole tracks are admitted and the admitted ones are up "
                f"to {longest:.3g} s long; {fix}",
                split=split,
                requested_s=req,
                admitted_s=adm,
                unit_s=longest,
            ),
            stacklevel=2,
        )
