"""Compile metric expressions against a schema into callables over a WindowBuffer."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..buffer import WindowBuffer
from ..errors import MetricCompileError
from ..schema import FieldSpec, SchemaSpec
from ..units import conversion_factor
from . import kernels
from .grammar import Stage, parse_metric

__all__ = ["CompiledMetric", "ValueType", "compile_metric"]


@dataclass(frozen=True)
class ValueType:
    """Static type of a value flowing through a metric: ``kind`` is scalar, vector,
    categorical or bool; ``dims`` the component count; ``unit`` a pint string or None."""

    kind: str
    dims: int
    semantics: str | None
    unit: str | None
    per_entity: bool = True


Step = Callable[[np.ndarray, WindowBuffer], np.ndarray]


@dataclass(frozen=True)
class CompiledMetric:
    """A validated metric: call it on a :class:`WindowBuffer` to get one float (NaN when the
    window holds no valid sample).  ``unit`` is the output unit, when it has one."""

    name: str
    expr: str
    field: str
    steps: tuple[Step, ...]
    reduce_op: str
    reduce_arg: str | None
    discrete: bool
    unit: str | None

    def values(self, buf: WindowBuffer) -> np.ndarray:
        """The mapped/aggregated values before the reduce, shape (T, E', 1) float64."""
        x = buf.values[self.field]
        x = np.where(buf.present[..., None], x, np.nan)
        if x.shape[-1] > 1:
            x = np.where(np.isnan(x).any(axis=-1, keepdims=True), np.nan, x)
        for step in self.steps:
            x = step(x, buf)
        return x

    def __call__(self, buf: WindowBuffer) -> float:
        x = self.values(buf)
        v = x[~np.isnan(x)]
        return kernels.reduce_values(v, self.reduce_op, self.reduce_arg, self.discrete)


def _position_to_metres(f: FieldSpec) -> Callable[[np.ndarray], np.ndarray]:
    units = f.units
    if f.frame == "geodetic":
        alt = conversion_factor(units[2], "m") if f.dims == 3 else None
        return lambda x: kernels.geodetic_to_ecef(x, alt)
    factors = np.array(
        [conversion_factor(u, "m") for u in (units * f.dims if len(units) == 1 else units)]
    )
    return lambda x: x * factors


def compile_metric(expr: str, schema: SchemaSpec, *, name: str | None = None) -> CompiledMetric:
    """Validate ``expr`` against ``schema`` and build its evaluator.

    Parameters
    ----------
    expr : str
        A metric in the grammar of :mod:`kuration.dsl.grammar`, e.g.
        ``"field:position | speed | p90"``.
    schema : SchemaSpec
    name : str, optional
        The metric's name, used in error messages.

    Returns
    -------
    CompiledMetric

    Raises
    ------
    MetricCompileError
        For an unknown token, a field missing from the schema, a map applied to
        a field of the wrong semantics or kind, or a vector fed to a scalar
        reduce; the error names the token and its position.
    """
    stages = parse_metric(expr, metric=name)
    src = stages[0]

    def fail(msg: str, st: Stage) -> MetricCompileError:
        return MetricCompileError(msg, expr=expr, token=st.text, position=st.pos, metric=name)

    try:
        f = schema.field(str(src.arg))
    except KeyError:
        import difflib

        hint = difflib.get_close_matches(str(src.arg), schema.field_names, n=2)
        extra = f"; did you mean {', '.join(map(repr, hint))}?" if hint else ""
        raise fail(
            f"schema {schema.name!r} has no field {src.arg!r}{extra} "
            f"(fields: {', '.join(schema.field_names)})",
            src,
        ) from None
    if f not in schema.fields:
        raise fail(f"{f.name!r} is a global; per-entity metrics read per-entity fields", src)
    unit = f.units[0] if f.kind == "scalar" and f.units else None
    vt = ValueType(f.kind, f.dims, f.semantics, unit)
    hz = float(schema.sample_hz)
    steps: list[Step] = []
    for st in stages[1:-1]:
        if st.role == "map":
            step, vt = _compile_map(st, vt, f, hz, fail)
        else:
            if vt.kind not in ("scalar", "bool"):
                raise fail(f"entities:{st.op} aggregates scalars, got a {vt.kind}", st)
            if not vt.per_entity:
                raise fail("values are already aggregated over entities", st)
            how = st.op
            steps.append(lambda x, _b, how=how: kernels.agg_entities(x, how))
            vt = ValueType("scalar", 1, None, None if how == "count" else vt.unit, per_entity=False)
            continue
        steps.append(step)
    red = stages[-1]
    if vt.kind == "vector":
        raise fail(
            f"{red.text} reduces scalars, but the value is a {vt.dims}-component vector "
            "(add a map such as norm or speed)",
            red,
        )
    discrete = vt.kind in ("categorical", "bool")
    if vt.kind == "categorical" and red.op not in ("entropy",):
        raise fail(
            f"{red.text} is numeric; a categorical field supports entropy (or is:<label> maps)", red
        )
    if red.op == "entropy" and not discrete and red.arg is None:
        raise fail("entropy of a continuous value needs a binning, e.g. entropy:16", red)
    out_unit = None if red.op == "entropy" else vt.unit
    return CompiledMetric(
        name=name or expr,
        expr=expr,
        field=f.name,
        steps=tuple(steps),
        reduce_op=red.op,
        reduce_arg=red.arg,
        discrete=discrete,
        unit=out_unit,
    )


def _compile_map(
    st: Stage,
    vt: ValueType,
    f: FieldSpec,
    hz: float,
    fail: Callable[[str, Stage], MetricCompileError],
) -> tuple[Step, ValueType]:
    op = st.op
    if op == "speed":
        if vt.semantics != "position":
            raise fail(
                f"speed needs a position field; {f.name!r} has semantics {vt.semantics!r}", st
            )
        to_m = _position_to_metres(f)
        max_rate = f.max_rate
        return (
            lambda x, _b: kernels.speed(to_m(x), hz, max_rate),
            ValueType("scalar", 1, None, "m/s"),
        )
    if op == "angle_delta":
        if vt.semantics != "angular":
            raise fail(
                f"angle_delta needs an angular field; {f.name!r} has semantics {vt.semantics!r}", st
            )
        turn = 360.0 * conversion_factor("degree", str(vt.unit))
        max_rate = f.max_rate
        return (
            lambda x, _b: kernels.angle_delta(x, turn, max_rate, hz),
            ValueType("scalar", 1, None, vt.unit),
        )
    if op == "diff":
        if vt.kind not in ("scalar", "vector"):
            raise fail(f"diff needs a numeric value, got a {vt.kind}", st)
        if vt.semantics == "angular":
            raise fail("diff of an angle does not wrap; use angle_delta", st)
        return (lambda x, _b: kernels.diff_map(x), ValueType(vt.kind, vt.dims, None, vt.unit))
    if op == "abs":
        if vt.kind != "scalar":
            raise fail(f"abs needs a scalar, got a {vt.kind} (use norm for vectors)", st)
        return (lambda x, _b: kernels.abs_map(x), ValueType("scalar", 1, None, vt.unit))
    if op == "norm":
        if vt.kind != "vector":
            raise fail(f"norm needs a vector, got a {vt.kind}", st)
        if vt.semantics == "position" and f.frame == "geodetic":
            raise fail("norm of geodetic coordinates is meaningless", st)
        return (lambda x, _b: kernels.norm_map(x), ValueType("scalar", 1, None, vt.unit))
    if op == "bit":
        if vt.semantics != "bitmask":
            raise fail(f"bit: needs a bitmask field; {f.name!r} has semantics {vt.semantics!r}", st)
        if st.arg not in f.bits:
            raise fail(
                f"bit {st.arg!r} is not declared on {f.name!r} (bits: {', '.join(sorted(f.bits))})",
                st,
            )
        idx = int(f.bits[str(st.arg)])
        return (lambda x, _b: kernels.bit_map(x, idx), ValueType("bool", 1, None, None))
    raise fail("unknown map", st)  # pragma: no cover - guarded by the grammar
