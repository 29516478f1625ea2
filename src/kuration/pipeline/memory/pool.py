"""Ranking a scored pool on the count path: keep ``n`` segments, or compare strategies.

* :func:`select_segments` -- rank an already scored pool with a strategy and
  keep ``n`` segments under its tag floors and group cap.
* :func:`compare_strategies` -- several strategies over the *same* scored pool,
  with a table of how each selection's feature distribution and coverage
  differ from the pool's.

Every :class:`CurationResult` carries per-bin, per-tag and per-group
accounting, the selection's distribution shift per feature, and an audit
(from the registered ``audit`` analyzer): each feature's Spearman correlation
with segment and source duration, and for every segment of the pool whether
it was selected and why.  The Pipeline runs these after scoring
(:mod:`kuration.pipeline.dispatch.execute`); :mod:`kuration.pipeline.api.count` holds the
function-style entry points over it.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...contracts.segment import Segment
from ...core.progress import ProgressCallback, emit
from ...errors import PipelineError, StrategyError
from ...selection.binning import feature_matrix
from ...selection.constraints import constrained_select, resolve_floors, tag_label_sets
from ...selection.draws import seeded_ranks, segment_key
from ...selection.select import method_seed, rank_pool
from ...selection.strategy import Strategy
from ...tools.analyzers import AnalysisSubject, get_analyzer
from ...tools.audit import coverage_metrics, distribution_shift
from ..run.scoring import ScoringResult

__all__ = [
    "CurationResult",
    "ExperimentResult",
    "compare_strategies",
    "merged_pool_strategy",
    "select_segments",
    "with_scoring",
]


@dataclass(frozen=True)
class CurationResult:
    """A count-path selection and its accounting.

    Attributes
    ----------
    strategy : Strategy
    n_requested : int
    seed : int
    selected : tuple of Segment
        By priority, highest first.
    pool : tuple of Segment
        The whole pool in canonical order, with priority, bin, tags and group set.
    reasons : tuple of str
        Aligned with ``pool``: why each segment was selected or rejected.
    edges : dict of str to list of float
        Interior quantile-bin edges per axis.
    bins : list of dict
        Per occupied joint bin: ``bin``, ``pool``, ``eligible``, ``selected``.
    tags : dict
        Per tag and label: ``pool``, ``eligible``, ``selected`` and, with a
        floor, ``floor``, ``met`` and ``why`` when unmet.
    groups : dict
        Per group: ``pool``, ``eligible``, ``selected``; with a cap, the cap.
    shortfall : int
        ``n_requested - len(selected)``.
    shortfall_reason : str or None
    distribution : dict
        Per feature: :func:`kuration.tools.audit.distribution_shift` of the
        selection against the pool.
    audit : dict
        ``features``: :func:`kuration.tools.audit.duration_correlations`.
    timing : dict
        ``selection_s`` (ranking and selection), ``report_s`` and, from
        :func:`curate`, ``scoring_s``.
    scoring : dict or None
        The scoring summary (sources scored, failed, skipped and why).
    """

    strategy: Strategy
    n_requested: int
    seed: int
    selected: tuple[Segment, ...]
    pool: tuple[Segment, ...]
    reasons: tuple[str, ...]
    edges: dict[str, list[float]]
    bins: list[dict[str, Any]]
    tags: dict[str, Any]
    groups: dict[str, Any]
    shortfall: int
    shortfall_reason: str | None
    distribution: dict[str, dict[str, Any]]
    audit: dict[str, Any]
    timing: dict[str, float] = field(default_factory=dict)
    scoring: dict[str, Any] | None = None

    @property
    def n_selected(self) -> int:
        return len(self.selected)

    @property
    def n_eligible(self) -> int:
        return sum(1 for s in self.pool if np.isfinite(s.priority))

    def segment_reasons(self) -> list[dict[str, Any]]:
        """One row per pool segment: key, selected, priority and reason."""
        chosen = {s.key for s in self.selected}
        return [
            {
                "source_id": s.source_id,
                "start_idx": s.start_idx,
                "end_idx": s.end_idx,
                "selected": s.key in chosen,
                "priority": float(s.priority) if np.isfinite(s.priority) else None,
                "reason": r,
            }
            for s, r in zip(self.pool, self.reasons, strict=True)
        ]

    def summary(self) -> dict[str, Any]:
        """The headline figures (no per-segment rows)."""
        return {
            "strategy": self.strategy.name,
            "method": self.strategy.method,
            "n_requested": self.n_requested,
            "n_selected": self.n_selected,
            "n_pool": len(self.pool),
            "n_eligible": self.n_eligible,
            "shortfall": self.shortfall,
            "shortfall_reason": self.shortfall_reason,
            "timing": dict(self.timing),
        }

    def to_dict(self, *, segments: bool = True) -> dict[str, Any]:
        """JSON-ready form; ``segments=False`` leaves out the per-segment audit rows."""
        out: dict[str, Any] = {
            **self.summary(),
            "seed": self.seed,
            "strategy_spec": self.strategy.to_dict(),
            "selected": [s.to_dict() for s in self.selected],
            "bin_edges": self.edges,
            "bins": self.bins,
            "tags": self.tags,
            "groups": self.groups,
            "distribution": self.distribution,
            "audit": {"features": self.audit["features"]},
            "scoring": self.scoring,
        }
        if segments:
            out["audit"]["segments"] = self.segment_reasons()
        return out


def _source_steps(segments: Sequence[Segment]) -> dict[str, int]:
    out: dict[str, int] = {}
    for s in segments:
        out[s.source_id] = max(out.get(s.source_id, 0), s.end_idx)
    return out


def _count_by(keys: Sequence[Any], mask: np.ndarray) -> dict[Any, int]:
    out: dict[Any, int] = {}
    for k, m in zip(keys, mask.tolist(), strict=True):
        if m:
            out[k] = out.get(k, 0) + 1
    return out


def select_segments(
    segments: Sequence[Segment],
    strategy: Strategy,
    n: int,
    *,
    seed: int = 0,
    source_steps: Mapping[str, int] | None = None,
    progress: ProgressCallback | None = None,
    tie_break: str = "name",
) -> CurationResult:
    """Rank a scored pool with ``strategy`` and keep at most ``n`` segments.

    The segments are ranked in place (priority, bin, tags and group are set
    on them).  Without tag coverage or a group cap the selection is exactly
    the ``n`` highest priorities (ties by canonical key); with them, see
    :func:`kuration.selection.constraints.constrained_select`.  Filtered-out segments
    are never selected, even when fewer than ``n`` remain (the shortfall is
    reported).

    Parameters
    ----------
    segments : sequence of Segment
        A scored pool (any order; results depend only on its content).
    strategy : Strategy
    n : int
        Segments to select (>= 0).
    seed : int
        Mixed with ``strategy.seed`` for the method's randomness.
    source_steps : mapping of source id to its length in ticks, optional
        For the source-duration audit (default: each source's last segment end).
    progress : callable, optional
        ``selection`` start/advance/complete events.
    tie_break : {"name", "seed"}
        Equal priorities in canonical order (source, start), or by a seeded draw per
        window (:func:`seeded_ties`).

    Returns
    -------
    CurationResult

    Raises
    ------
    PipelineError
        A ``ValueError``: ``n`` is negative or not an integer.
    StrategyError
        If the pool lacks a feature the strategy needs.
    """
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 0:
        raise PipelineError(f"n must be an integer >= 0, got {n!r}", step="select")
    n = int(n)
    emit(progress, "selection", "start", total=4, strategy=strategy.name)
    t0 = time.perf_counter()
    ranking = rank_pool(segments, strategy, seed, progress=progress)
    pool = ranking.segments
    label_sets = tag_label_sets(pool, strategy.tags)
    tie = seeded_ties(pool, strategy, seed) if tie_break == "seed" else None
    sel = _constrained(ranking, strategy, label_sets, n, tie)
    selection_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    is_sel = np.zeros(len(pool), dtype=bool)
    is_sel[sel.rows] = True
    eligible = np.isfinite(ranking.priorities)
    bins, tags, groups = _accounting(pool, strategy, label_sets, sel, is_sel, eligible)
    distribution, audit = _audit(pool, strategy, is_sel, source_steps)
    report_s = time.perf_counter() - t1
    emit(progress, "selection", "complete", total=4, strategy=strategy.name)
    return CurationResult(
        strategy=strategy,
        n_requested=n,
        seed=int(seed),
        selected=tuple(pool[i] for i in sel.rows),
        pool=pool,
        reasons=tuple(sel.reasons),
        edges=ranking.edges,
        bins=bins,
        tags=tags,
        groups=groups,
        shortfall=sel.shortfall,
        shortfall_reason=sel.shortfall_reason,
        distribution=distribution,
        audit=audit,
        timing={"selection_s": selection_s, "report_s": report_s},
    )


def seeded_ties(pool: Sequence[Segment], strategy: Strategy, seed: int) -> np.ndarray:
    """One seeded order key per window (int64, shape ``(len(pool),)``) that orders equal
    priorities (``tie_break: "seed"``).  It hashes each window's source, entity and start
    with a seed of its own (the method seed xor ``0x5EED``, as the hours path does), so it
    is not the ``random`` method's draw and depends on no other window."""
    keys = (segment_key(s.source_id, s.entity, s.start_idx) for s in pool)
    return seeded_ranks(method_seed(strategy.seed, seed) ^ 0x5EED, keys)


def _constrained(
    ranking: Any,
    strategy: Strategy,
    label_sets: Mapping[str, Any],
    n: int,
    tie: np.ndarray | None = None,
) -> Any:
    """The ``n`` best of a ranked pool under the strategy's tag floors and group cap."""
    pool = ranking.segments
    floors = {}
    if strategy.tag_coverage:
        floors = resolve_floors(strategy.tag_coverage, label_sets, n)
    cap = strategy.group_cap
    return constrained_select(
        ranking.priorities,
        n,
        tags={t: [s.tags.get(t) for s in pool] for t in strategy.tags},
        label_sets=label_sets,
        floors=floors,
        groups=[s.group for s in pool],
        max_overshoot=(cap or {}).get("max_overshoot") if cap else None,
        excluded=ranking.excluded,
        tie=tie,
    )


def _accounting(
    pool: Sequence[Segment],
    strategy: Strategy,
    label_sets: Mapping[str, Any],
    sel: Any,
    is_sel: np.ndarray,
    eligible: np.ndarray,
) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    """Per-bin, per-tag and per-group counts of pool, eligible and selected segments."""
    everyone = np.ones(len(pool), dtype=bool)

    bins: list[dict[str, Any]] = []
    if strategy.bin_axes:
        keys = [tuple(s.bin or ()) for s in pool]
        p, e, c = _count_by(keys, everyone), _count_by(keys, eligible), _count_by(keys, is_sel)
        bins = [
            {"bin": list(k), "pool": p[k], "eligible": e.get(k, 0), "selected": c.get(k, 0)}
            for k in sorted(p)
        ]
    tags: dict[str, Any] = {}
    for t, labels in label_sets.items():
        col = [s.tags.get(t) for s in pool]
        p, e, c = _count_by(col, everyone), _count_by(col, eligible), _count_by(col, is_sel)
        rep = sel.tag_report.get(t, {}).get("labels", {})
        tags[t] = {
            lab: {
                "pool": p.get(lab, 0),
                "eligible": e.get(lab, 0),
                "selected": c.get(lab, 0),
                **{k: v for k, v in rep.get(lab, {}).items() if k in ("floor", "met", "why")},
            }
            for lab in labels
        }
        if None in p:
            tags[t]["(none)"] = {
                "pool": p[None],
                "eligible": e.get(None, 0),
                "selected": c.get(None, 0),
            }
    groups: dict[str, Any] = {}
    gcol = [s.group for s in pool]
    if any(g is not None for g in gcol) or sel.group_report:
        p, e, c = _count_by(gcol, everyone), _count_by(gcol, eligible), _count_by(gcol, is_sel)
        groups = {
            "per_group": {
                str(g): {"pool": p[g], "eligible": e.get(g, 0), "selected": c.get(g, 0)}
                for g in sorted(p, key=str)
            }
        }
        if sel.group_report:
            groups.update({k: v for k, v in sel.group_report.items() if k != "per_group"})
    return bins, tags, groups


def _audit(
    pool: Sequence[Segment],
    strategy: Strategy,
    is_sel: np.ndarray,
    source_steps: Mapping[str, int] | None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The registered ``audit`` analyzer's distribution shift and duration correlations
    (without its quadratic axis coverage)."""
    features = tuple(f for f in strategy.feature_names if pool and f in pool[0].features)
    steps = dict(source_steps) if source_steps is not None else _source_steps(pool)
    report: dict[str, Any] = {"distribution": {}, "duration": {}}
    if features:
        subject = AnalysisSubject(pool, tuple(np.flatnonzero(is_sel).tolist()), features, (), steps)
        report = get_analyzer("audit").analyze(
            subject, {"features": list(features), "coverage": False}
        )
    return report["distribution"], {"features": report["duration"]}


def with_scoring(res: CurationResult, scoring: ScoringResult, scoring_s: float) -> CurationResult:
    """``res`` with the scoring time and summary of the pool it selected from."""
    return dataclasses.replace(
        res, timing={"scoring_s": scoring_s, **res.timing}, scoring=scoring.summary()
    )


@dataclass(frozen=True)
class ExperimentResult:
    """Several strategies over one scored pool.

    Attributes
    ----------
    n_requested : int
    results : dict of strategy name to CurationResult
    axes : tuple of str
        Features the comparison is made on.
    comparison : list of dict
        One row per strategy: method, selected count, selection time, per
        axis the KS statistic and the Wasserstein distance over the pool's
        standard deviation, the coverage figures of
        :func:`kuration.tools.audit.coverage_metrics`, and ``vs_random``: the
        same figures minus the random control's (``radius``, ``mean_nn``,
        ``cells_covered``) and the Jaccard index of the two selections.
    scoring : dict or None
    timing : dict
    """

    n_requested: int
    results: dict[str, CurationResult]
    axes: tuple[str, ...]
    comparison: list[dict[str, Any]]
    scoring: dict[str, Any] | None = None
    timing: dict[str, float] = field(default_factory=dict)

    def table(self) -> list[dict[str, Any]]:
        """The comparison rows."""
        return [dict(r) for r in self.comparison]

    def to_dict(self, *, segments: bool = False) -> dict[str, Any]:
        return {
            "n_requested": self.n_requested,
            "axes": list(self.axes),
            "comparison": self.table(),
            "results": {k: v.to_dict(segments=segments) for k, v in self.results.items()},
            "scoring": self.scoring,
            "timing": dict(self.timing),
        }


def merged_pool_strategy(strategies: Sequence[Strategy]) -> Strategy:
    """One top-k strategy computing every feature of ``strategies`` (the pool they share).

    Raises
    ------
    StrategyError
        Two strategies define one feature differently, or a name is both defined and registered.
    """
    define: dict[str, str] = {}
    registered: list[str] = []
    for st in strategies:
        for name, expr in st.define.items():
            if define.setdefault(name, expr) != expr:
                raise StrategyError(
                    f"strategies define {name!r} differently ({define[name]!r} vs {expr!r})"
                )
        registered += [r for r in st.registered if r not in registered]
    clash = set(define) & set(registered)
    if clash:
        raise StrategyError(f"{sorted(clash)} are both defined and registered metrics")
    # transforms and scorers too (a clash of outputs raises when the pool is scored)
    transforms = [t for st in strategies for t in st.transforms]
    scorers = [sc for st in strategies for sc in st.scorers]
    return Strategy(
        name="experiment-pool",
        define=define,
        method="top-k",
        registered=tuple(registered),
        transforms=tuple(t for i, t in enumerate(transforms) if t not in transforms[:i]),
        scorers=tuple(sc for i, sc in enumerate(scorers) if sc not in scorers[:i]),
    )


def compare_strategies(
    segments: Sequence[Segment],
    strategies: Sequence[Strategy],
    n: int,
    *,
    seed: int = 0,
    source_steps: Mapping[str, int] | None = None,
    axes: Sequence[str] | None = None,
    n_bins: int = 4,
    progress: ProgressCallback | None = None,
) -> ExperimentResult:
    """Run every strategy on its own copy of the same pool and compare the selections.

    Parameters
    ----------
    axes : sequence of str, optional
        Features to compare on (default: the features every strategy
        defines, or all of the pool's when they share none).
    n_bins : int
        Quantile bins per axis for the ``cells_covered`` figure.

    Raises
    ------
    StrategyError
        Two strategies share a name, or an axis is not a pool feature.
    """
    names = [s.name for s in strategies]
    if len(set(names)) != len(names):
        raise StrategyError(f"strategy names must be distinct, got {names}")
    strategies = with_random_control(strategies)
    pool0 = sorted(segments, key=lambda s: s.key)
    if axes is None:
        common = (
            set.intersection(*(set(s.feature_names) for s in strategies)) if strategies else set()
        )
        feats = list(pool0[0].features) if pool0 else []
        axes = [f for f in feats if f in common] or feats
    axes = tuple(axes)
    matrix = feature_matrix(pool0, axes)
    emit(progress, "experiment", "start", total=len(strategies))
    results: dict[str, CurationResult] = {}
    rows: list[dict[str, Any]] = []
    for i, st in enumerate(strategies, 1):
        copy = [s.copy() for s in pool0]
        res = select_segments(copy, st, n, seed=seed, source_steps=source_steps, progress=progress)
        results[st.name] = res
        index = {s.key: j for j, s in enumerate(pool0)}
        rows_sel = [index[s.key] for s in res.selected]
        row: dict[str, Any] = {
            "strategy": st.name,
            "method": st.method,
            "n_selected": res.n_selected,
            "n_eligible": res.n_eligible,
            "selection_s": res.timing["selection_s"],
        }
        for j, ax in enumerate(axes):
            d = distribution_shift(matrix[:, j], matrix[rows_sel, j])
            row[f"ks:{ax}"] = d["ks"]
            row[f"w1std:{ax}"] = d["wasserstein_std"]
        row.update(coverage_metrics(matrix, rows_sel, n_bins))
        rows.append(row)
        emit(progress, "experiment", "advance", current=i, total=len(strategies), strategy=st.name)
    _against_random(rows, results, strategies)
    emit(progress, "experiment", "complete", total=len(strategies))
    return ExperimentResult(n, results, axes, rows)


def with_random_control(strategies: Sequence[Strategy]) -> list[Strategy]:
    """``strategies`` with a ``random`` control appended when none of them uses that method:
    the first strategy's pool (features, group) ranked by a seeded uniform draw, with no
    filter, bin or cap, named ``random`` (``random (control)`` if that name is taken)."""
    out = list(strategies)
    if not out or any(s.method == "random" for s in out):
        return out
    name = "random" if all(s.name != "random" for s in out) else "random (control)"
    control = dataclasses.replace(
        out[0],
        name=name,
        method="random",
        params={},
        bin_axes=(),
        filters=(),
        tags={},
        tag_coverage={},
        group_cap=None,
    )
    return [*out, control]


def _against_random(
    rows: list[dict[str, Any]], results: Mapping[str, CurationResult], sts: Sequence[Strategy]
) -> None:
    """Each row's ``vs_random``: its coverage figures minus the (first) random strategy's,
    and the Jaccard index ``|A & R| / |A | R|`` of the two selections' window keys."""
    ref = next((i for i, s in enumerate(sts) if s.method == "random"), None)
    if ref is None:
        return
    base = rows[ref]
    r_keys = {s.key for s in results[sts[ref].name].selected}
    for row, st in zip(rows, sts, strict=True):
        keys = {s.key for s in results[st.name].selected}
        union = keys | r_keys
        vs: dict[str, Any] = {"strategy": base["strategy"]}
        for k in ("radius", "mean_nn", "cells_covered"):
            a, b = row.get(k), base.get(k)
            vs[k] = None if a is None or b is None else float(a) - float(b)
        vs["jaccard"] = len(keys & r_keys) / len(union) if union else None
        row["vs_random"] = vs
