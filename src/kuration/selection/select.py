"""The selection engine: priorities over a scored pool, and leakage-free splits.

:func:`rank_pool` runs a strategy over a pool, always in canonical
``(source_id, start_idx)`` order whatever order the pool came in:

1. groups from the strategy's ``group`` rule (``Segment.group``);
2. filters (``Segment.priority = -inf`` for every segment that fails one);
3. quantile bins (``Segment.bin``) and derived tags (``Segment.tags``),
   fitted on the segments that passed the filters;
4. the method's priorities over the passing segments (``Segment.priority``;
   ``-inf`` means never selected).

The count path then keeps ``n`` segments (:func:`select_top`, or
:func:`kuration.selection.constraints.constrained_select` with tag floors and a group
cap); the hours path aggregates the priorities per track.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..contracts.segment import Segment
from ..core.progress import ProgressCallback, emit
from ..errors import StrategyError
from .binning import bin_segments
from .constraints import assign_groups, assign_tags
from .filters import apply_filters
from .methods import Method, get_method, register_method, registered_methods

if TYPE_CHECKING:
    from .strategy import Strategy

__all__ = [
    "Method",
    "PoolRanking",
    "apply_strategy",
    "assign_splits",
    "canonical",
    "get_method",
    "method_seed",
    "rank_pool",
    "register_method",
    "registered_methods",
    "select_top",
]


def canonical(segments: Sequence[Segment]) -> list[Segment]:
    """``segments`` sorted by ``(source_id, start_idx)``.

    Raises
    ------
    StrategyError
        If two segments share a key.
    """
    keys = [s.key for s in segments]  # each key built once (a property making a tuple)
    order = sorted(range(len(keys)), key=keys.__getitem__)
    for i, j in itertools.pairwise(order):
        if keys[i] == keys[j]:
            raise StrategyError(f"two segments share the key {keys[i]!r}")
    return [segments[i] for i in order]


def method_seed(strategy_seed: int, seed: int) -> int:
    """The seed a method sees: both the strategy's and the run's seed mixed by ``SeedSequence``."""
    return int(np.random.SeedSequence([int(strategy_seed), int(seed)]).generate_state(1)[0])


@dataclass(frozen=True)
class PoolRanking:
    """What :func:`rank_pool` did.

    Attributes
    ----------
    segments : tuple of Segment
        The pool in canonical order (the same objects, now with priority, bin, tags, group).
    edges : dict of str to list of float
        Interior bin edges per axis.
    excluded : tuple of (str or None)
        Per segment, why it got ``-inf`` (None for eligible ones).
    passed_filters : ndarray, shape (N,), bool
    """

    segments: tuple[Segment, ...]
    edges: dict[str, list[float]]
    excluded: tuple[str | None, ...]
    passed_filters: np.ndarray

    @property
    def priorities(self) -> np.ndarray:
        return np.array([s.priority for s in self.segments], dtype=np.float64)

    @property
    def n_eligible(self) -> int:
        return int(np.isfinite(self.priorities).sum())


def _minus_inf_reason(seg: Segment, strategy: Strategy) -> str:
    bad = [f for f in strategy.feature_names if not math.isfinite(seg.features.get(f, math.nan))]
    if bad and strategy.nan_policy == "exclude":
        return f"non-finite feature {', '.join(bad)} (nan_policy 'exclude')"
    return f"method {strategy.method!r} gave priority -inf"


def rank_pool(
    segments: Sequence[Segment],
    strategy: Strategy,
    seed: int,
    *,
    progress: ProgressCallback | None = None,
) -> PoolRanking:
    """Group, filter, bin, tag and rank the pool (in place; see the module docs).

    Parameters
    ----------
    segments : sequence of Segment
        Scored segments carrying every feature the strategy names.
    strategy : Strategy
    seed : int
        Mixed with ``strategy.seed`` into the method's seed.
    progress : callable, optional
        Receives ``selection``/``advance`` events with ``stage``.

    Raises
    ------
    StrategyError
        A missing feature, duplicate segment keys, or a method returning
        malformed priorities (wrong shape, NaN or +inf).
    """
    segs = canonical(segments)
    n = len(segs)
    stages = ("groups", "filters", "bins", "method")

    def step(i: int) -> None:
        emit(progress, "selection", "advance", current=i + 1, total=len(stages), stage=stages[i])

    assign_groups(segs, strategy.group)
    step(0)
    keep, reasons = apply_filters(segs, strategy.filters)
    step(1)
    edges = (
        bin_segments(segs, strategy.bin_axes, strategy.n_bins, fit=keep)
        if strategy.bin_axes
        else {}
    )
    assign_tags(segs, strategy.tags, fit=keep)
    step(2)
    rows = np.flatnonzero(keep)
    sub = [segs[i] for i in rows]
    method = get_method(strategy.method)
    mseed = method_seed(strategy.seed, seed)
    prio = np.full(n, -np.inf)
    if sub:
        p = np.asarray(
            method.priorities(sub, strategy.params, mseed, strategy.nan_policy), dtype=np.float64
        )
        if p.shape != (len(sub),):
            raise StrategyError(
                f"method {strategy.method!r} returned {p.shape} priorities for {len(sub)} segments"
            )
        if np.isnan(p).any() or np.isposinf(p).any():
            raise StrategyError(f"method {strategy.method!r} returned NaN or +inf priorities")
        prio[rows] = p
        explain = getattr(method, "explain", None)
        why = list(explain(sub, strategy.params)) if callable(explain) else [None] * len(sub)
        for j, i in enumerate(rows):
            if not np.isfinite(p[j]):
                said = why[j]
                reasons[i] = (
                    f"filtered out by method 'filter': {said.removeprefix('filtered out: ')}"
                    if said
                    else _minus_inf_reason(segs[i], strategy)
                )
    step(3)
    for s, v in zip(segs, prio.tolist(), strict=True):
        s.priority = float(v)
    return PoolRanking(tuple(segs), edges, tuple(reasons), keep)


def apply_strategy(
    segments: Sequence[Segment], strategy: Strategy, seed: int
) -> dict[str, list[float]]:
    """Rank the pool (:func:`rank_pool`) and return the bin edges per axis.

    Sets ``seg.priority`` (``-inf``: never selected), ``seg.bin``,
    ``seg.tags`` and ``seg.group`` on every segment.
    """
    return rank_pool(segments, strategy, seed).edges


def select_top(segments: Sequence[Segment], n: int) -> list[Segment]:
    """The ``n`` segments of highest ``priority`` (ties by canonical key); ``-inf``/NaN never."""
    ok = [s for s in segments if np.isfinite(s.priority)]
    ok.sort(key=lambda s: (-s.priority, s.key))
    return ok[: max(int(n), 0)]


def assign_splits(
    source_ids: Sequence[str], test_frac: float, seed: int, groups: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Assign each whole source to ``"train"`` or ``"test"`` (leakage-free, stratified).

    Rule: ``n_test = floor(test_frac * N + 1/2)`` sources in all, at least one
    when ``test_frac > 0`` and at most ``N - 1`` when ``test_frac < 1`` (for
    ``N >= 2``).  The count is shared among groups in proportion to their size
    by largest remainder (Hamilton's method; equal remainders go to the group
    whose seeded draw is lowest), so small groups are not starved.  Inside a
    group, sources are sorted, shuffled with ``numpy.random.default_rng(seed)``
    (one permutation per group, groups in sorted order) and the first ones go
    to test.  Sources missing from ``groups`` form the group ``""``.

    Raises
    ------
    ValueError
        If ``test_frac`` is outside [0, 1] or ids repeat.

    Examples
    --------
    >>> s = assign_splits(["a", "b", "c", "d"], 0.25, seed=0)
    >>> sorted(s.values())
    ['test', 'train', 'train', 'train']
    """
    if not (isinstance(test_frac, int | float) and 0.0 <= test_frac <= 1.0):
        raise StrategyError(f"test_frac must be within [0, 1], got {test_frac!r}")
    ids = sorted(source_ids)
    if len(set(ids)) != len(ids):
        raise StrategyError("source ids must be unique")
    total = len(ids)
    n_test = math.floor(test_frac * total + 0.5)
    if total >= 2:
        if test_frac > 0:
            n_test = max(n_test, 1)
        if test_frac < 1:
            n_test = min(n_test, total - 1)
    by_group: dict[str, list[str]] = {}
    for sid in ids:
        by_group.setdefault((groups or {}).get(sid, ""), []).append(sid)
    names = sorted(by_group)
    rng = np.random.default_rng(seed)
    perms = {g: [by_group[g][i] for i in rng.permutation(len(by_group[g]))] for g in names}
    draw = rng.random(len(names))
    quota = np.array([n_test * len(by_group[g]) / total for g in names]) if total else np.zeros(0)
    alloc = np.floor(quota).astype(np.int64)
    left = n_test - int(alloc.sum())
    if left > 0:
        by_rem = np.lexsort((draw, -(quota - alloc)))
        alloc[by_rem[:left]] += 1
    out: dict[str, str] = {}
    for g, k in zip(names, alloc.tolist(), strict=True):
        for i, sid in enumerate(perms[g]):
            out[sid] = "test" if i < k else "train"
    return out
