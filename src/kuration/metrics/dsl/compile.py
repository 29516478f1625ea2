"""Compile metric expressions against a schema into evaluators.

Compilation types every stage before any data is read: the value flowing
between stages has a :class:`ValueType` (kind, components, semantics, unit,
whether it is per entity), each token accepts only the types listed in
``docs/metrics.md``, and anything else raises :class:`MetricCompileError`
naming the token, its position, what was expected and a close match.

A :class:`CompiledMetric` evaluates on one :class:`~kuration.contracts.buffer.WindowBuffer`
(``metric(buf) -> float``) or on every window of a source at once
(:meth:`CompiledMetric.evaluate` on a :class:`~kuration.contracts.buffer.WindowBatch`);
both run the same kernels, see :mod:`kuration.metrics.dsl.frame`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from ...contracts.buffer import WindowBatch, WindowBuffer
from ...contracts.schema import FieldSpec, SchemaSpec
from .frame import Frame, Stream
from .grammar import Stage, parse_metric, suggestion
from .stages import compile_agg, compile_filter, compile_map, compile_reduce
from .values import Ctx, Key, Op, Reduce, SourceFn, ValueType

__all__ = ["CompiledMetric", "ValueType", "compile_metric"]


_NAN = np.nan
_INF = np.inf


def _const(stream: Stream) -> Callable[[], Stream]:
    """A maker that returns ``stream`` (bound now, not to the caller's loop variable)."""
    return lambda: stream


@dataclass(frozen=True, eq=False)
class CompiledMetric:
    """A validated metric.

    Call it on a :class:`~kuration.contracts.buffer.WindowBuffer` for one float (NaN
    when the window holds no valid sample), or use :meth:`evaluate` for every
    window of a source at once.

    Attributes
    ----------
    name, expr : str
    stages : tuple of Stage
    unit : str or None
        Unit of the result, when it has one.
    input_type : ValueType
        Type of the value entering the reduce.
    deps : mapping of str to CompiledMetric
        The features this metric reads (``feature:<name>``).
    """

    name: str
    expr: str
    stages: tuple[Stage, ...]
    unit: str | None
    input_type: ValueType
    deps: Mapping[str, CompiledMetric]
    _source: SourceFn = field(repr=False)
    _source_key: str = field(repr=False)
    _ops: tuple[Op, ...] = field(repr=False)
    _reduce: Reduce = field(repr=False)

    # -- evaluation -----------------------------------------------------------------
    def _stream(self, frame: Frame) -> tuple[Stream, Key]:
        key: Key = (self._source_key,)
        st = frame.lookup(key)
        if st is None:
            st = _finite(self._source(frame))
            frame.memo(key, st.windowed, lambda: st)
        for op in self._ops:
            nxt = (*key, op.key)
            hit = frame.lookup(nxt)
            if hit is None:
                inp = frame.to_windows(st, key) if op.window else st
                hit = _finite(op.fn(inp, frame, key))
                frame.memo(nxt, hit.windowed, _const(hit))
            st, key = hit, nxt
        return st, key

    def grid(self, frame: Frame) -> np.ndarray:
        """Results on the frame's grid of windows, shape (G,), float64 (cached in the frame)."""

        def make() -> np.ndarray:
            with np.errstate(all="ignore"):  # overflow is handled: the result is finite or NaN
                st, key = self._stream(frame)
                if not st.windowed and self._reduce.ticks is not None:
                    out = self._reduce.ticks(st, frame, key)
                else:
                    out = self._reduce.window(frame.to_windows(st, key), frame, key)
                out = np.asarray(out, dtype=np.float64)
                return np.where(np.isfinite(out), out, _NAN)

        out: np.ndarray = frame.memo(("result", self.expr), True, make)
        return out

    def evaluate(self, batch: WindowBatch) -> np.ndarray:
        """Every window of ``batch`` at once.

        Returns
        -------
        ndarray, shape (W,), float64
            One value per requested start, in request order (NaN: no valid sample).
        """
        if batch.starts.size == 0:
            return np.zeros(0)
        return self.grid(Frame(batch))[batch.index]

    def __call__(self, buf: WindowBuffer) -> float:
        return float(self.grid(Frame(WindowBatch.from_buffer(buf)))[0])

    def values(self, buf: WindowBuffer) -> np.ndarray:
        """The values entering the reduce for one window, shape (T, E', D), float64.

        Ticks a step map cannot define (the first tick for ``speed``) are NaN.
        """
        frame = Frame(WindowBatch.from_buffer(buf))
        with np.errstate(all="ignore"):
            st, _ = self._stream(frame)
        if not st.windowed:
            x = np.array(st.x, dtype=np.float64)
            x[: min(st.lag, x.shape[0])] = _NAN
            return x
        x = st.x[0]
        if st.lag:
            pad = np.full((min(st.lag, buf.n_steps), *x.shape[1:]), _NAN)
            x = np.concatenate([pad, x], axis=0)
        return np.array(x, dtype=np.float64)


def _finite(st: Stream) -> Stream:
    """``st`` with every sample holding a non-finite component made missing (all NaN).

    A map or aggregation of finite values can overflow (``diff`` of values near
    ``1.7e308``, ``to:`` a smaller unit, ``entities:sum``); an infinite sample is
    not a measurement, so it is dropped like a missing one and never reaches a
    reduce.  The source array is left untouched: a copy is made only when needed.
    """
    x = st.x
    if x.size == 0:
        return st
    # the largest and smallest non-NaN values tell whether any is infinite (both NaN when
    # every value is): two SIMD reductions cost half of an isinf mask and its any
    hi, lo = np.fmax.reduce(x, axis=None), np.fmin.reduce(x, axis=None)
    if not (hi == _INF or lo == -_INF):
        return st
    bad = np.isinf(x).any(axis=-1, keepdims=True)
    return replace(st, x=np.where(bad, _NAN, x))


# -- compilation ----------------------------------------------------------------------


def compile_metric(
    expr: str,
    schema: SchemaSpec,
    *,
    name: str | None = None,
    features: Mapping[str, CompiledMetric | None] | None = None,
) -> CompiledMetric:
    """Validate ``expr`` against ``schema`` and build its evaluator.

    Parameters
    ----------
    expr : str
        A metric in the grammar of :mod:`kuration.metrics.dsl.grammar`, e.g.
        ``"field:position | speed | p90"``.
    schema : SchemaSpec
    name : str, optional
        The metric's name, used in error messages.
    features : mapping of str to CompiledMetric or None, optional
        Metrics ``feature:<name>`` may read: those defined earlier in the same
        ``define`` block.  A name mapped to None is known but not readable
        (defined later, or the metric itself).

    Returns
    -------
    CompiledMetric

    Raises
    ------
    MetricCompileError
        For an unknown token, a name missing from the schema, a stage applied
        to a value of the wrong kind or semantics (a vector into a scalar
        reduce, ``speed`` of a non-position, ...), an unknown or incompatible
        unit, or a ``feature:`` that is unknown or not defined earlier.
    """
    stages = parse_metric(expr, metric=name)
    cx = Ctx(expr, schema, name)
    src = stages[0]
    source, vt, deps = _compile_source(src, cx, features or {})
    ops: list[Op] = []
    for st in stages[1:-1]:
        if st.role == "map":
            new_ops, vt = compile_map(st, vt, cx)
            ops.extend(new_ops)
        elif st.role == "filter":
            op, vt = compile_filter(st, vt, cx)
            ops.append(op)
        else:
            op, vt = compile_agg(st, vt, cx)
            ops.append(op)
    red = stages[-1]
    pre, reduce_fn, unit, in_vt = compile_reduce(red, vt, cx)
    ops.extend(pre)
    return CompiledMetric(
        name=name or expr,
        expr=expr,
        stages=tuple(stages),
        unit=unit,
        input_type=in_vt,
        deps=deps,
        _source=source,
        _source_key=src.text,
        _ops=tuple(ops),
        _reduce=reduce_fn,
    )


# -- sources --------------------------------------------------------------------------


def _field_type(f: FieldSpec, per_entity: bool) -> ValueType:
    kind = f.kind
    units = f.units
    unit = units[0] if units and len(set(units)) == 1 else None
    if f.semantics == "position":
        return ValueType(
            "vector", f.dims, "position", unit, per_entity, spec=f, max_rate=f.max_rate
        )
    if f.semantics == "bitmask":
        return ValueType("scalar", 1, "bitmask", None, per_entity, spec=f)
    if kind == "categorical":
        return ValueType("categorical", 1, None, None, per_entity, spec=f)
    return ValueType(kind, f.dims, f.semantics, unit, per_entity, spec=f, max_rate=f.max_rate)


def _compile_source(
    st: Stage, cx: Ctx, features: Mapping[str, CompiledMetric | None]
) -> tuple[SourceFn, ValueType, dict[str, CompiledMetric]]:
    schema = cx.schema
    arg = str(st.arg)
    fields = {f.name: f for f in schema.fields}
    globs = {f.name: f for f in schema.globals}
    if st.op == "field":
        if arg not in fields:
            if arg in globs:
                raise cx.fail(f"{arg!r} is a global; read it with global:{arg}", st)
            if arg in {m.name for m in schema.media}:
                raise cx.fail(
                    f"{arg!r} is a media column: media is never visible to the metric grammar "
                    "(derive a numeric field from it, or use a transform)",
                    st,
                )
            raise cx.fail(
                f"schema {schema.name!r} has no field {arg!r}"
                + suggestion(arg, [*fields, *globs])
                + f" (fields: {', '.join(fields)})",
                st,
            )
        return (lambda fr: fr.field(arg)), _field_type(fields[arg], True), {}
    if st.op == "global":
        if arg not in globs:
            if arg in fields:
                raise cx.fail(f"{arg!r} is a per-entity field; read it with field:{arg}", st)
            raise cx.fail(
                f"schema {schema.name!r} has no global {arg!r}"
                + suggestion(arg, list(globs))
                + f" (globals: {', '.join(globs) or 'none'})",
                st,
            )
        return (lambda fr: fr.global_(arg)), _field_type(globs[arg], False), {}
    if st.op == "event":
        if arg not in schema.events:
            raise cx.fail(
                f"schema {schema.name!r} declares no event {arg!r}"
                + suggestion(arg, list(schema.events))
                + f" (events: {', '.join(schema.events) or 'none'})",
                st,
            )
        return (lambda fr: fr.event(arg)), ValueType("bool", 1, None, None, per_entity=False), {}
    # feature:
    if arg not in features:
        known = [k for k, v in features.items() if v is not None]
        raise cx.fail(
            f"no feature {arg!r} is defined before this metric"
            + suggestion(arg, known)
            + (f" (readable: {', '.join(known)})" if known else ""),
            st,
        )
    dep = features[arg]
    if dep is None:
        what = "itself" if arg == cx.name else f"{arg!r}, which is defined later"
        raise cx.fail(
            f"a metric may only read features defined before it; this one reads {what}", st
        )

    def source(fr: Frame) -> Stream:
        if arg not in fr.features:
            fr.features[arg] = dep.grid(fr)
        vals = fr.features[arg]
        return Stream(vals.reshape(-1, 1, 1, 1), windowed=True)

    vt = ValueType("scalar", 1, None, dep.unit, per_entity=False, per_window=True)
    return source, vt, {arg: dep}
