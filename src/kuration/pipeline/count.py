"""The count path: select ``n`` segments, and compare strategies over one scored pool.

* :func:`select_segments` -- rank an already scored pool with a strategy and
  keep ``n`` segments under its tag floors and group cap.
* :func:`curate` -- score sources (:func:`~kuration.pipeline.scoring.score_sources`)
  then :func:`select_segments`.
* :func:`compare_strategies` / :func:`run_experiment` -- several strategies
  over the *same* scored pool, with a table of how each selection's feature
  distribution and coverage differ from the pool's.
* :func:`curate_job` / :func:`experiment_job` -- the same from a job file
  (what ``kur curate`` and ``kur experiment`` run).

Every :class:`CurationResult` carries per-bin, per-tag and per-group
accounting, the selection's distribution shift per feature, and an audit:
each feature's Spearman correlation with segment and source duration, and
for every segment of the pool whether it was selected and why.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..contracts.schema import SchemaSpec
from ..contracts.segment import Segment, Segmenter
from ..core.config import check_seed, check_workers
from ..core.progress import ProgressCallback, emit
from ..errors import StrategyError
from ..selection.binning import feature_matrix
from ..selection.constraints import constrained_select, resolve_floors, tag_label_sets
from ..selection.select import rank_pool
from ..selection.strategy import Strategy
from ..sources.base import InputAdapter
from ..tools.audit import coverage_metrics, distribution_shift, duration_correlations
from .scoring import ScoringResult, score_sources
from .strategy import load_strategy

__all__ = [
    "CurationResult",
    "ExperimentResult",
    "compare_strategies",
    "curate",
    "curate_job",
    "experiment_job",
    "run_experiment",
    "select_segments",
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

    Returns
    -------
    CurationResult

    Raises
    ------
    ValueError
        If ``n`` is negative or not an integer.
    StrategyError
        If the pool lacks a feature the strategy needs.
    """
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 0:
        raise ValueError(f"n must be an integer >= 0, got {n!r}")
    n = int(n)
    emit(progress, "selection", "start", total=4, strategy=strategy.name)
    t0 = time.perf_counter()
    ranking = rank_pool(segments, strategy, seed, progress=progress)
    pool = ranking.segments
    prio = ranking.priorities
    floors = {}
    label_sets = tag_label_sets(pool, strategy.tags)
    if strategy.tag_coverage:
        floors = resolve_floors(strategy.tag_coverage, label_sets, n)
    sel = constrained_select(
        prio,
        n,
        tags={t: [s.tags.get(t) for s in pool] for t in strategy.tags},
        label_sets=label_sets,
        floors=floors,
        groups=[s.group for s in pool],
        max_overshoot=(strategy.group_cap or {}).get("max_overshoot")
        if strategy.group_cap
        else None,
        excluded=ranking.excluded,
    )
    selection_s = time.perf_counter() - t0

    t1 = time.perf_counter()
    selected = tuple(pool[i] for i in sel.rows)
    is_sel = np.zeros(len(pool), dtype=bool)
    is_sel[sel.rows] = True
    eligible = np.isfinite(prio)
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
    features = [f for f in strategy.feature_names if pool and f in pool[0].features]
    fm = feature_matrix(pool, features) if features else np.zeros((len(pool), 0))
    distribution = {f: distribution_shift(fm[:, j], fm[is_sel, j]) for j, f in enumerate(features)}
    steps = dict(source_steps) if source_steps is not None else _source_steps(pool)
    audit = {"features": duration_correlations(pool, features, steps)}
    report_s = time.perf_counter() - t1
    emit(progress, "selection", "complete", total=4, strategy=strategy.name)
    return CurationResult(
        strategy=strategy,
        n_requested=n,
        seed=int(seed),
        selected=selected,
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


def curate(
    schema: SchemaSpec,
    adapter: InputAdapter,
    sources: Sequence[str],
    segmenter: Segmenter,
    strategy: Strategy,
    n: int,
    *,
    seed: int = 0,
    workers: int = 1,
    on_error: str = "skip",
    progress: ProgressCallback | None = None,
    plugins: Sequence[str] = (),
) -> CurationResult:
    """Score ``sources`` and select ``n`` segments with ``strategy`` (the count path).

    Parameters are those of :func:`~kuration.pipeline.scoring.score_sources` and
    :func:`select_segments`.

    Raises
    ------
    EmptyPoolError
        No source produced a segment.
    KurationError
        With ``on_error="raise"``, the first source error.
    """
    t0 = time.perf_counter()
    scoring = score_sources(
        schema,
        adapter,
        sources,
        segmenter,
        strategy,
        workers=workers,
        on_error=on_error,
        progress=progress,
        plugins=plugins,
    )
    scoring_s = time.perf_counter() - t0
    res = select_segments(
        scoring.segments,
        strategy,
        n,
        seed=seed,
        source_steps={sid: info.n_steps for sid, info in scoring.sources.items()},
        progress=progress,
    )
    return _with(res, scoring, scoring_s)


def _with(res: CurationResult, scoring: ScoringResult, scoring_s: float) -> CurationResult:
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
        standard deviation, and the coverage figures of
        :func:`kuration.tools.audit.coverage_metrics`.
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


def _merged_pool_strategy(strategies: Sequence[Strategy]) -> Strategy:
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
    emit(progress, "experiment", "complete", total=len(strategies))
    return ExperimentResult(n, results, axes, rows)


def run_experiment(
    schema: SchemaSpec,
    adapter: InputAdapter,
    sources: Sequence[str],
    segmenter: Segmenter,
    strategies: Sequence[Strategy],
    n: int,
    *,
    seed: int = 0,
    workers: int = 1,
    on_error: str = "skip",
    progress: ProgressCallback | None = None,
    plugins: Sequence[str] = (),
    axes: Sequence[str] | None = None,
    n_bins: int = 4,
) -> ExperimentResult:
    """Score ``sources`` once with every strategy's features, then :func:`compare_strategies`.

    Raises
    ------
    StrategyError
        No strategy, two strategies defining one feature differently, or repeated names.
    EmptyPoolError
        No source produced a segment.
    """
    if not strategies:
        raise StrategyError("run_experiment needs at least one strategy")
    merged = _merged_pool_strategy(strategies)
    t0 = time.perf_counter()
    scoring = score_sources(
        schema,
        adapter,
        sources,
        segmenter,
        merged,
        workers=workers,
        on_error=on_error,
        progress=progress,
        plugins=plugins,
    )
    scoring_s = time.perf_counter() - t0
    res = compare_strategies(
        scoring.segments,
        strategies,
        n,
        seed=seed,
        source_steps={sid: info.n_steps for sid, info in scoring.sources.items()},
        axes=axes,
        n_bins=n_bins,
        progress=progress,
    )
    return dataclasses.replace(
        res,
        results={k: _with(v, scoring, scoring_s) for k, v in res.results.items()},
        scoring=scoring.summary(),
        timing={"scoring_s": scoring_s, "total_s": time.perf_counter() - t0},
    )


def _job_parts(
    job: str | os.PathLike[str] | Mapping[str, Any],
) -> tuple[dict[str, Any], SchemaSpec, InputAdapter, Segmenter, list[str]]:
    from ..core.plugins import load_plugins
    from .job import job_components, load_job, resolve_sources

    raw, base = load_job(job)
    load_plugins(
        raw.get("plugins", []), include_entry_points=raw.get("include_plugin_entry_points", True)
    )
    schema, adapter, segmenter = job_components(raw)
    sources = resolve_sources(raw["sources"], base, adapter=adapter)
    return raw, schema, adapter, segmenter, sources


def _strategy(spec: Any, schema: SchemaSpec) -> Strategy:
    if isinstance(spec, Strategy):
        return spec
    if isinstance(spec, Path):
        spec = str(spec)
    return load_strategy(spec, schema)


def curate_job(
    job: str | os.PathLike[str] | Mapping[str, Any],
    n: int,
    *,
    strategy: Strategy | Mapping[str, Any] | str | os.PathLike[str] | None = None,
    seed: int | None = None,
    workers: int | None = None,
    progress: ProgressCallback | None = None,
) -> CurationResult:
    """:func:`curate` with the job's schema, adapter, sources and segmenter.

    ``strategy`` replaces the job's; ``seed`` and ``workers`` default to the job's.

    Raises
    ------
    JobError, SchemaError, StrategyError, MetricCompileError
        Before any data is read.
    """
    raw, schema, adapter, segmenter, sources = _job_parts(job)
    st = _strategy(strategy if strategy is not None else raw["strategy"], schema)
    return curate(
        schema,
        adapter,
        sources,
        segmenter,
        st,
        n,
        seed=int(raw.get("seed", 0)) if seed is None else check_seed(seed),
        workers=int(raw.get("workers", 1)) if workers is None else check_workers(workers),
        on_error=raw.get("on_error", "skip"),
        progress=progress,
        plugins=raw.get("plugins", []),  # workers import them: plugin metrics and transforms
    )


def experiment_job(
    job: str | os.PathLike[str] | Mapping[str, Any],
    strategies: Sequence[Strategy | Mapping[str, Any] | str | os.PathLike[str]],
    n: int,
    *,
    seed: int | None = None,
    workers: int | None = None,
    progress: ProgressCallback | None = None,
) -> ExperimentResult:
    """:func:`run_experiment` with the job's schema, adapter, sources and segmenter."""
    raw, schema, adapter, segmenter, sources = _job_parts(job)
    sts = [_strategy(s, schema) for s in strategies]
    return run_experiment(
        schema,
        adapter,
        sources,
        segmenter,
        sts,
        n,
        seed=int(raw.get("seed", 0)) if seed is None else check_seed(seed),
        workers=int(raw.get("workers", 1)) if workers is None else check_workers(workers),
        on_error=raw.get("on_error", "skip"),
        progress=progress,
        plugins=raw.get("plugins", []),  # workers import them: plugin metrics and transforms
    )
