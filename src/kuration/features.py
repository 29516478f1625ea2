"""FeatureEngine: all of a strategy's metrics over one WindowBuffer per segment."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .buffer import WindowBuffer, build_window
from .dsl.compile import compile_metric
from .errors import StrategyError
from .registry import Registry
from .schema import SchemaSpec
from .segment import Segment
from .tick import TickTable

__all__ = ["FeatureEngine", "register_metric", "registered_metrics"]

MetricFn = Callable[[WindowBuffer], float]
_METRICS: Registry[MetricFn] = Registry("registered metric")


def register_metric(name: str, *, clobber: bool = False) -> Callable[[MetricFn], MetricFn]:
    """Decorator registering a per-segment metric ``fn(WindowBuffer) -> float`` under ``name``.

    Register at module scope of an importable module so worker processes see it.
    """

    def deco(fn: MetricFn) -> MetricFn:
        _METRICS.register(name, fn, clobber=clobber)
        return fn

    return deco


def registered_metrics() -> tuple[str, ...]:
    return _METRICS.names()


class FeatureEngine:
    """Compiles a strategy's ``define`` block and evaluates it per window.

    Parameters
    ----------
    define : mapping of str to str
        Feature name to metric expression.
    schema : SchemaSpec
    registered : sequence of str
        Names of ``@register_metric`` functions to compute as features of the same name.

    Raises
    ------
    MetricCompileError
        If any expression fails to compile (before any data is read).
    StrategyError
        If a registered metric name is unknown or collides with a defined one.
    """

    def __init__(
        self, define: Mapping[str, str], schema: SchemaSpec, registered: Sequence[str] = ()
    ) -> None:
        self.schema = schema
        self.define = dict(define)
        self.compiled = {n: compile_metric(e, schema, name=n) for n, e in self.define.items()}
        self.registered: dict[str, MetricFn] = {}
        for n in registered:
            if n in self.compiled:
                raise StrategyError(f"registered metric {n!r} collides with a defined feature")
            try:
                self.registered[n] = _METRICS.get(n)
            except KeyError as exc:
                raise StrategyError(str(exc)) from None

    @property
    def feature_names(self) -> tuple[str, ...]:
        return (*self.compiled, *self.registered)

    def score_window(self, buf: WindowBuffer) -> dict[str, float]:
        """Every feature of one window (NaN where a metric had no valid sample)."""
        out = {n: m(buf) for n, m in self.compiled.items()}
        for n, fn in self.registered.items():
            out[n] = float(fn(buf))
        return out

    def score_segments(self, table: TickTable, segments: Sequence[Segment]) -> None:
        """Fill ``seg.features`` for every segment of ``table`` (in place)."""
        for seg in segments:
            seg.features.update(self.score_window(build_window(table, seg.start_idx, seg.end_idx)))

    def to_dict(self) -> dict[str, Any]:
        return {"define": dict(self.define), "registered": list(self.registered)}
