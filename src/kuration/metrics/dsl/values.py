"""Types shared by the metric compiler: the static value type, compiled stages, context."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ...contracts.schema import FieldSpec, SchemaSpec
from ...errors import MetricCompileError
from .frame import Frame, Stream
from .grammar import Stage

__all__ = ["Ctx", "Key", "Op", "OpFn", "Reduce", "ReduceFn", "SourceFn", "ValueType"]


@dataclass(frozen=True)
class ValueType:
    """Static type of the value flowing between two stages.

    Attributes
    ----------
    kind : {"scalar", "vector", "categorical", "bool"}
    dims : int
        Component count ``D``.
    semantics : {"position", "angular", "bitmask"} or None
    unit : str or None
        pint unit of a scalar (or of every component of a vector); None when unitless.
    per_entity : bool
        One value per entity and tick (False after ``entities:``, for globals and events).
    per_window : bool
        One value per window (a ``feature:`` source).
    spec : FieldSpec or None
        The field a position, bitmask or categorical value comes from.
    max_rate : float or None
        Outlier clamp in ``unit`` per second (positions: metres per second).
    """

    kind: str
    dims: int
    semantics: str | None
    unit: str | None
    per_entity: bool = True
    per_window: bool = False
    spec: FieldSpec | None = field(default=None, repr=False)
    max_rate: float | None = None

    @property
    def numeric(self) -> bool:
        return self.kind in ("scalar", "bool") and self.dims == 1

    def describe(self) -> str:
        what = {"bool": "boolean"}.get(self.kind, self.kind)
        if self.kind == "vector":
            what = f"{self.dims}-component vector"
        if self.semantics:
            what = f"{self.semantics} {what}"
        if self.per_window:
            what += " (one value per window)"
        elif not self.per_entity:
            what += " (per tick)"
        return what


Key = tuple[str, ...]
OpFn = Callable[[Stream, Frame, Key], Stream]
ReduceFn = Callable[[Stream, Frame, Key], np.ndarray]
SourceFn = Callable[[Frame], Stream]


@dataclass(frozen=True)
class Op:
    """One compiled stage: its cache key (the token text), its function, and whether it
    needs the window level."""

    key: str
    fn: OpFn
    window: bool = False


@dataclass(frozen=True)
class Reduce:
    """A compiled reduce: ``window`` works on window-level streams; ``ticks``, when the
    reduce decomposes over ticks, works on a source-level stream from per-tick partials
    (same results, cost independent of the window length)."""

    window: ReduceFn
    ticks: ReduceFn | None = None


class Ctx:
    """Compilation state: the expression, the schema and an error factory."""

    def __init__(self, expr: str, schema: SchemaSpec, name: str | None) -> None:
        self.expr = expr
        self.schema = schema
        self.name = name
        self.hz = float(schema.sample_hz)

    def fail(self, msg: str, st: Stage) -> MetricCompileError:
        """A MetricCompileError naming ``st`` (its text and position) and the metric."""
        return MetricCompileError(
            msg, expr=self.expr, token=st.text, position=st.pos, metric=self.name
        )
