"""Selection methods (priorities over a scored pool) and leakage-free splits.

A method turns a pool of scored, binned segments into one priority per
segment; the count path keeps the ``n`` highest, the hours path aggregates
priorities per track.  ``-inf`` means "never select".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from .binning import bin_segments
from .errors import StrategyError
from .registry import Registry
from .segment import Segment

if TYPE_CHECKING:
    from .strategy import Strategy

__all__ = [
    "Method",
    "apply_strategy",
    "assign_splits",
    "get_method",
    "register_method",
    "registered_methods",
    "select_top",
]


class Method(Protocol):
    """A selection method.

    ``validate(params, features, axes)`` raises :class:`StrategyError` on bad
    parameters; ``priorities(segments, params, seed, nan_policy)`` returns an
    array of shape (N,), float64, aligned with ``segments``.
    """

    def validate(
        self, params: Mapping[str, Any], features: Sequence[str], axes: Sequence[str]
    ) -> None: ...

    def priorities(
        self, segments: Sequence[Segment], params: Mapping[str, Any], seed: int, nan_policy: str
    ) -> np.ndarray: ...


_METHODS: Registry[Method] = Registry("selection method")


def register_method(name: str, method: Method, *, clobber: bool = False) -> None:
    """Register a selection method under ``name``."""
    _METHODS.register(name, method, clobber=clobber)


def get_method(name: str) -> Method:
    return _METHODS.get(name)


def registered_methods() -> tuple[str, ...]:
    return _METHODS.names()


def _check_keys(params: Mapping[str, Any], allowed: set[str], method: str) -> None:
    extra = set(params) - allowed
    if extra:
        raise StrategyError(
            f"method {method!r} does not take {sorted(extra)} (takes {sorted(allowed)})"
        )


def _rank_nan_lowest(prio: np.ndarray, bad: np.ndarray, nan_policy: str) -> np.ndarray:
    out = prio.copy()
    if not bad.any():
        return out
    if nan_policy == "exclude":
        out[bad] = -np.inf
    else:
        good = out[~bad & np.isfinite(out)]
        floor = (good.min() if good.size else 0.0) - 1.0
        out[bad] = floor
    return out


@dataclass(frozen=True)
class UniformBins:
    """Equal share per occupied bin: a seeded round-robin over the joint quantile bins.

    Within each bin, segments get a seeded random rank ``r``; the priority is
    ``-(r + u)`` with ``u`` a seeded uniform tie-break in [0, 1), so taking the
    top ``n`` takes one segment from every occupied bin before a second from any.
    """

    def validate(
        self, params: Mapping[str, Any], features: Sequence[str], axes: Sequence[str]
    ) -> None:
        _check_keys(params, set(), "uniform-bins")
        if not axes:
            raise StrategyError(
                "method 'uniform-bins' needs bin axes (strategy 'bin': {'axes': [...]})"
            )

    def priorities(
        self, segments: Sequence[Segment], params: Mapping[str, Any], seed: int, nan_policy: str
    ) -> np.ndarray:
        n = len(segments)
        rng = np.random.default_rng(seed)
        shuffle = rng.permutation(n)
        tiebreak = rng.random(n)
        bins = np.array([s.bin for s in segments], dtype=np.int64).reshape(n, -1)
        bad = (bins < 0).any(axis=1)
        _, inv = np.unique(bins, axis=0, return_inverse=True)
        inv = inv.reshape(-1)
        order = np.lexsort((shuffle, inv))  # by bin, then by the seeded shuffle
        rank = np.empty(n, dtype=np.float64)
        starts = np.flatnonzero(np.r_[True, inv[order][1:] != inv[order][:-1]])
        run_start = np.repeat(starts, np.diff(np.r_[starts, n]))
        rank[order] = np.arange(n) - run_start
        return _rank_nan_lowest(-(rank + tiebreak), bad, nan_policy)


@dataclass(frozen=True)
class TopK:
    """Rank by one feature: ``{"by": name, "descending": true}``."""

    def validate(
        self, params: Mapping[str, Any], features: Sequence[str], axes: Sequence[str]
    ) -> None:
        _check_keys(params, {"by", "descending"}, "top-k")
        by = params.get("by")
        if by not in features:
            raise StrategyError(
                f"method 'top-k' needs 'by' naming a feature ({', '.join(features)}), got {by!r}"
            )
        if not isinstance(params.get("descending", True), bool):
            raise StrategyError("top-k 'descending' must be true or false")

    def priorities(
        self, segments: Sequence[Segment], params: Mapping[str, Any], seed: int, nan_policy: str
    ) -> np.ndarray:
        vals = np.array([s.features[params["by"]] for s in segments], dtype=np.float64)
        if not params.get("descending", True):
            vals = -vals
        bad = ~np.isfinite(vals)
        return _rank_nan_lowest(np.where(bad, 0.0, vals), bad, nan_policy)


register_method("uniform-bins", UniformBins())
register_method("top-k", TopK())


def select_top(segments: Sequence[Segment], n: int) -> list[Segment]:
    """The ``n`` segments of highest ``priority`` (ties by canonical key); ``-inf``/NaN never."""
    ok = [s for s in segments if np.isfinite(s.priority)]
    ok.sort(key=lambda s: (-s.priority, s.key))
    return ok[: max(int(n), 0)]


def assign_splits(
    source_ids: Sequence[str], test_frac: float, seed: int, groups: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Assign each whole source to ``"train"`` or ``"test"`` (leakage-free).

    Sources are sorted, then shuffled with ``numpy.random.default_rng(seed)``
    within each group (stratified); in each group ``round(test_frac * n)``
    sources go to test, at least one when ``test_frac > 0`` and the group has
    two or more sources.

    Raises
    ------
    ValueError
        If ``test_frac`` is outside [0, 1] or ids repeat.
    """
    if not 0.0 <= test_frac <= 1.0:
        raise ValueError(f"test_frac must be within [0, 1], got {test_frac!r}")
    ids = sorted(source_ids)
    if len(set(ids)) != len(ids):
        raise ValueError("source ids must be unique")
    by_group: dict[str, list[str]] = {}
    for sid in ids:
        by_group.setdefault((groups or {}).get(sid, ""), []).append(sid)
    out: dict[str, str] = {}
    rng = np.random.default_rng(seed)
    for g in sorted(by_group):
        members = by_group[g]
        perm = [members[i] for i in rng.permutation(len(members))]
        n_test = round(test_frac * len(members))
        if test_frac > 0 and n_test == 0 and len(members) >= 2:
            n_test = 1
        if test_frac < 1 and n_test == len(members) and len(members) >= 2:
            n_test -= 1
        for i, sid in enumerate(perm):
            out[sid] = "test" if i < n_test else "train"
    return out


def apply_strategy(
    segments: Sequence[Segment], strategy: Strategy, seed: int
) -> dict[str, list[float]]:
    """Bin the pool (if the strategy has axes) and set every segment's priority; returns bin edges."""
    edges = bin_segments(segments, strategy.bin_axes, strategy.n_bins) if strategy.bin_axes else {}
    method_seed = int(np.random.SeedSequence([int(strategy.seed), int(seed)]).generate_state(1)[0])
    prio = get_method(strategy.method).priorities(
        segments, strategy.params, method_seed, strategy.nan_policy
    )
    for s, p in zip(segments, prio, strict=True):
        s.priority = float(p)
    return edges
