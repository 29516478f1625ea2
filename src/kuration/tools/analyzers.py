"""Analyzers: registered stream or artifact audits, run by :meth:`kuration.Pipeline.enrich`.

An analyzer is not a segment metric: it looks at a whole selection -- the
scored pool and what was kept from it -- and returns a JSON-ready report.
``scope`` says where it belongs in a plan: ``artifact`` analyzers read the
finished selection (a barrier after selection/writing); ``stream``
analyzers could observe segments as they stream past, but today's
reference runtime hands them the complete pool after scoring (and
:meth:`~kuration.Pipeline.explain` warns about it).

Contract::

    class MyAnalyzer:
        scope = "artifact"                     # or "stream"
        parameters = {"name": "what it sets"}  # listed by ``kur operators``
        def validate(self, params) -> None: ...          # raise AnalyzerError-like KurationError
        def analyze(self, subject: AnalysisSubject, params) -> dict: ...

Built-in analyzers
------------------
``audit``
    The curation audit of :mod:`kuration.tools.audit`: per feature the
    distribution shift of the selection against the pool (KS, W1), each
    feature's Spearman correlation with segment and source duration, and
    the coverage of the binning axes (covering radius, mean nearest
    distance, share of occupied cells reached).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from ..contracts.segment import Segment
from ..core.registry import Registry
from ..core.traits import ExecutionTraits, register_with_traits
from ..errors import PipelineError, RegistrationError
from ..selection.binning import feature_matrix
from .audit import coverage_metrics, distribution_shift, duration_correlations

__all__ = [
    "AnalysisSubject",
    "Analyzer",
    "AuditAnalyzer",
    "get_analyzer",
    "overlapping_rows",
    "register_analyzer",
    "registered_analyzers",
    "selected_rows",
]


@dataclass(frozen=True)
class AnalysisSubject:
    """What an analyzer sees.

    Attributes
    ----------
    pool : sequence of Segment
        Every scored segment, in canonical ``(source_id, start_idx)`` order.
    selected : tuple of int
        Indices into ``pool`` of the kept segments (count path), or of the
        segments overlapping an admitted track or span (hours path), sorted.
    features : tuple of str
        The strategy's feature names.
    axes : tuple of str
        The strategy's binning axes (may be empty).
    source_steps : mapping of str to int
        Ticks per source.
    """

    pool: Sequence[Segment]
    selected: tuple[int, ...]
    features: tuple[str, ...]
    axes: tuple[str, ...] = ()
    source_steps: Mapping[str, int] = field(default_factory=dict)


@runtime_checkable
class Analyzer(Protocol):
    """A registered audit (see the module docs)."""

    @property
    def scope(self) -> str:
        """Where it runs (a class attribute is enough: it is only read)."""
        ...

    def validate(self, params: Mapping[str, Any]) -> None: ...

    def analyze(self, subject: AnalysisSubject, params: Mapping[str, Any]) -> dict[str, Any]: ...


_ANALYZERS: Registry[Analyzer] = Registry("analyzer", builtin="analyzer")
_SCOPES = ("stream", "artifact")


def register_analyzer(
    name: str,
    analyzer: Analyzer,
    *,
    clobber: bool = False,
    execution_traits: ExecutionTraits | Mapping[str, Any] | None = None,
) -> None:
    """Register an analyzer under ``name`` (used as ``Pipeline.enrich(name, **params)``).

    Raises
    ------
    RegistrationError
        ``analyzer`` lacks ``validate``/``analyze``/``scope``, or its scope is not
        ``stream`` or ``artifact``.
    RegistrationError
        A ``ValueError``: ``name`` is taken and ``clobber`` is false.
    ExecutionTraitsError
        Invalid ``execution_traits`` (nothing is registered).
    """
    if not isinstance(analyzer, Analyzer) or getattr(analyzer, "scope", None) not in _SCOPES:
        raise RegistrationError(
            "an analyzer needs validate(), analyze() and scope 'stream' or 'artifact', got "
            f"{type(analyzer).__name__}"
        )
    register_with_traits(
        _ANALYZERS, "analyzer", name, analyzer, clobber=clobber, execution_traits=execution_traits
    )


def get_analyzer(name: str) -> Analyzer:
    """The analyzer registered as ``name`` (raises ``UnknownNameError``, a ``KeyError``)."""
    return _ANALYZERS.get(name)


def registered_analyzers() -> tuple[str, ...]:
    """Names of every registered analyzer, sorted."""
    return _ANALYZERS.names()


def _names(params: Mapping[str, Any], key: str) -> list[str] | None:
    v = params.get(key)
    if v is None:
        return None
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise PipelineError(f"analyzer 'audit' {key!r} must be a list of feature names")
    return list(v)


@dataclass(frozen=True)
class AuditAnalyzer:
    """The curation audit: distribution shift, duration bias and axis coverage."""

    scope: ClassVar[str] = "artifact"
    parameters: ClassVar[Mapping[str, str]] = MappingProxyType(
        {
            "features": "features to audit (default: every strategy feature)",
            "axes": "coverage axes (default: the bin axes, else the audited features)",
            "n_bins": "quantile cells per axis for cells_covered (4)",
            "coverage": "compute the axis coverage (true); false leaves it None",
        }
    )

    def validate(self, params: Mapping[str, Any]) -> None:
        extra = set(params) - set(self.parameters)
        if extra:
            raise PipelineError(
                f"analyzer 'audit' does not take {sorted(extra)} (takes {sorted(self.parameters)})"
            )
        _names(params, "features")
        _names(params, "axes")
        nb = params.get("n_bins", 4)
        if isinstance(nb, bool) or not isinstance(nb, int) or nb < 1:
            raise PipelineError("analyzer 'audit' 'n_bins' must be a positive integer")
        if not isinstance(params.get("coverage", True), bool):
            raise PipelineError("analyzer 'audit' 'coverage' is true or false")

    def analyze(self, subject: AnalysisSubject, params: Mapping[str, Any]) -> dict[str, Any]:
        """Returns ``{"n_pool", "n_selected", "distribution", "duration", "coverage"}``
        (``coverage`` is None with ``coverage=False``).

        Raises
        ------
        PipelineError
            A requested feature or axis the strategy does not define.
        """
        feats = _names(params, "features") or list(subject.features)
        axes = _names(params, "axes") or list(subject.axes) or feats
        unknown = sorted(set(feats + axes) - set(subject.features))
        if unknown:
            raise PipelineError(f"analyzer 'audit': unknown features {unknown}")
        pool = list(subject.pool)
        sel = np.asarray(subject.selected, dtype=np.int64)
        x = feature_matrix(pool, feats)
        distribution = {f: distribution_shift(x[:, j], x[sel, j]) for j, f in enumerate(feats)}
        return {
            "n_pool": len(pool),
            "n_selected": int(sel.size),
            "distribution": distribution,
            "duration": duration_correlations(pool, feats, subject.source_steps),
            "coverage": coverage_metrics(
                feature_matrix(pool, axes), sel.tolist(), int(params.get("n_bins", 4))
            )
            if params.get("coverage", True)
            else None,
        }


register_analyzer(
    "audit",
    AuditAnalyzer(),
    execution_traits={"scope": "artifact", "shape": "reduce", "fusion": "barrier", "state": "pool"},
)


def selected_rows(pool: Sequence[Segment], kept: Sequence[Segment]) -> tuple[int, ...]:
    """Indices into ``pool`` of the segments in ``kept`` (matched by ``(source_id, start_idx)``)."""
    want = {s.key for s in kept}
    return tuple(i for i, s in enumerate(pool) if s.key in want)


def overlapping_rows(
    pool: Sequence[Segment], spans: Sequence[tuple[str, int, int]]
) -> tuple[int, ...]:
    """Indices into ``pool`` of the segments overlapping any ``(source_id, first, last)`` tick
    span (``last`` inclusive): the windows an hours fill actually wrote from."""
    by_source: dict[str, list[tuple[int, int]]] = {}
    for sid, first, last in spans:
        by_source.setdefault(sid, []).append((first, last))
    out = []
    for i, s in enumerate(pool):
        for first, last in by_source.get(s.source_id, ()):
            if s.start_idx <= last and s.end_idx > first:
                out.append(i)
                break
    return tuple(out)
