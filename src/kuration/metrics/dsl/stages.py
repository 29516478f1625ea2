"""Compile the stages after the source: maps, filters, entity aggregations and the reduce.

Each ``compile_*`` function checks a token against the :class:`ValueType`
flowing into it (raising :class:`~kuration.errors.MetricCompileError` through
``cx.fail``) and returns the compiled operations and the type flowing out.
The operations are closures over numpy kernels (:mod:`kuration.metrics.dsl.kernels`,
:mod:`kuration.metrics.dsl.reduces`) that run on a :class:`~kuration.metrics.dsl.frame.Stream`.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from ...contracts.schema import FieldSpec, bit_indexes
from ...core.units import conversion_factor, is_angle, linear_conversion, parse_unit
from . import kernels, order_reduce, reduces
from .frame import Frame, Stream
from .grammar import Stage, suggestion
from .values import Ctx, Key, Op, Reduce, ReduceFn, ValueType

__all__ = ["compile_agg", "compile_filter", "compile_map", "compile_reduce"]

_NAN = np.nan


# -- maps -------------------------------------------------------------------------------


def _next(st: Stream, x: np.ndarray, look_back: int = 0) -> Stream:
    """The stream after a map: new values, no filter memory, look-back extended."""
    return Stream(x, None, st.windowed, st.lag if st.windowed else st.lag + look_back)


def _position_spec(vt: ValueType) -> FieldSpec:
    if vt.spec is None:  # pragma: no cover - positions always carry their field
        raise RuntimeError("a position value lost its field")
    return vt.spec


def _cartesian_factors(f: FieldSpec) -> np.ndarray:
    """Per-component unit-to-metre factors of a cartesian position."""
    units = f.units * f.dims if len(f.units) == 1 else f.units
    return np.array([conversion_factor(u, "m") for u in units])


def _to_metres(vt: ValueType) -> Callable[[np.ndarray], np.ndarray]:
    f = _position_spec(vt)
    if f.frame == "geodetic":
        alt = conversion_factor(f.units[2], "m") if f.dims == 3 else None
        return lambda x: kernels.geodetic_to_ecef(x, alt)
    factors = _cartesian_factors(f)
    return lambda x: x * factors


def _metres(st: Stream, fr: Frame, key: Key, vt: ValueType) -> np.ndarray:
    """Positions of ``st`` in metres (ECEF for geodetic), cached per stream."""

    def make() -> np.ndarray:
        base_key = st.base if st.windowed else None
        base = fr.lookup(base_key) if base_key is not None else None
        if base_key is not None and base is not None:  # convert at the source level, then window
            return fr.windows_of(st, _metres(base, fr, base_key, vt))
        return _to_metres(vt)(st.x)

    out: np.ndarray = fr.memo((key, "@m", st.windowed), st.windowed, make)
    return out


def _step_velocity(st: Stream, fr: Frame, key: Key, vt: ValueType) -> tuple[np.ndarray, np.ndarray]:
    out: tuple[np.ndarray, np.ndarray] = fr.memo(
        (key, "@dv", st.windowed),
        st.windowed,
        lambda: kernels.step_velocity(_metres(st, fr, key, vt), fr.hz),
    )
    return out


def _velocity(st: Stream, fr: Frame, key: Key, vt: ValueType) -> np.ndarray:
    """Clamped velocity (:func:`kernels.velocity`), cached per stream."""
    out: np.ndarray = fr.memo(
        (key, "@vel", st.windowed),
        st.windowed,
        lambda: kernels.clamp_velocity(*_step_velocity(st, fr, key, vt), vt.max_rate),
    )
    return out


def _speed(st: Stream, fr: Frame, key: Key, vt: ValueType) -> np.ndarray:
    """Clamped speed (:func:`kernels.velocity`), cached per stream; a speed alone never
    builds the clamped velocity vectors, and a source-level geodetic speed whose velocity
    is not wanted (yet) is taken on the valid pairs only (:func:`kernels.geodetic_speed`,
    the same bits)."""

    def make() -> np.ndarray:
        pairs = None if fr.lookup((key, "@dv", False)) is not None else _pairs(st, fr, key, vt)
        if pairs is not None:
            return kernels.geodetic_speed(st.x, None, fr.hz, vt.max_rate, pairs)
        return kernels.clamp_speed(_step_velocity(st, fr, key, vt)[1], vt.max_rate)

    out: np.ndarray = fr.memo((key, "@speed", st.windowed), st.windowed, make)
    return out


def _pairs(st: Stream, fr: Frame, key: Key, vt: ValueType) -> kernels.GeoPairs | None:
    """The valid samples of a source-level geodetic stream in ECEF, paired tick to tick
    (:func:`kernels.geodetic_pairs`), cached per stream so ``speed`` and ``heading`` of the
    same positions convert them once; None for another frame or level."""
    f = _position_spec(vt)
    if f.frame != "geodetic" or st.windowed:
        return None
    alt = conversion_factor(f.units[2], "m") if f.dims == 3 else None
    out: kernels.GeoPairs | None = fr.memo(
        (key, "@pairs"), False, lambda: kernels.geodetic_pairs(st.x, alt)
    )
    return out


def _planar(st: Stream, fr: Frame, key: Key, vt: ValueType, axis: Any) -> np.ndarray:
    """Horizontal positions in metres for hull areas (see :func:`kernels.planar`)."""
    f = _position_spec(vt)
    if f.frame == "geodetic":
        return kernels.planar(st.x, _metres(st, fr, key, vt), None, axis)
    return kernels.planar(st.x, None, _cartesian_factors(f), axis)


def _need_position(st: Stage, vt: ValueType, cx: Ctx, per_entity: bool = False) -> None:
    if vt.semantics != "position" or vt.spec is None:
        raise cx.fail(f"{st.text} needs a position field; got {_article(vt.describe())}", st)
    if per_entity and not vt.per_entity:
        raise cx.fail(f"{st.text} compares entities, so it needs per-entity positions", st)


def _turn(unit: str | None) -> float:
    return 360.0 * conversion_factor("degree", str(unit))


def compile_map(st: Stage, vt: ValueType, cx: Ctx) -> tuple[list[Op], ValueType]:
    """Type-check a map token and build its operation(s).

    Returns
    -------
    ops : list of Op
    out : ValueType
        The type of the mapped value.

    Raises
    ------
    MetricCompileError
        When the map does not accept ``vt`` (see ``docs/metrics.md``).
    """
    op, text = st.op, st.text
    scalar = replace(vt, kind="scalar", dims=1, semantics=None, spec=None, max_rate=None)
    if op in ("speed", "accel", "jerk", "heading", "angle_delta", "angular_rate"):
        return _compile_motion(st, vt, cx, scalar)
    if op == "norm":
        if vt.kind != "vector":
            raise cx.fail(f"norm needs a vector; got {_article(vt.describe())}", st)
        if vt.semantics == "position" and vt.spec is not None and vt.spec.frame == "geodetic":
            raise cx.fail("norm of geodetic coordinates is meaningless (use speed or nn_dist)", st)
        if vt.unit is None and vt.spec is not None and vt.spec.units:
            raise cx.fail("norm needs components in one unit", st)
        return [Op(text, lambda s, fr, k: _next(s, kernels.norm_map(s.x)))], scalar
    if op == "diff":
        if vt.kind not in ("scalar", "vector") or vt.per_window:
            raise cx.fail(f"diff needs a numeric time series; got {_article(vt.describe())}", st)
        if vt.semantics == "angular":
            raise cx.fail("diff of an angle does not wrap; use angle_delta", st)
        if vt.semantics == "bitmask":
            raise cx.fail("diff of a bitmask is meaningless; use bit:<name>", st)
        out = replace(vt, semantics=None, spec=None, max_rate=None)
        return [Op(text, lambda s, fr, k: _next(s, kernels.diff_map(s.x), 1))], out
    if op == "abs":
        if vt.kind != "scalar" or vt.semantics in ("angular", "bitmask"):
            hint = " (use norm for vectors)" if vt.kind == "vector" else ""
            if vt.semantics == "angular":
                hint = " (use angle_delta | abs for turning)"
            raise cx.fail(f"abs needs a plain scalar; got {_article(vt.describe())}{hint}", st)
        out = replace(vt, semantics=None, spec=None)
        return [Op(text, lambda s, fr, k: _next(s, kernels.abs_map(s.x)))], out
    if op == "bit":
        return _compile_bit(st, vt, cx)
    if op == "is":
        return _compile_is(st, vt, cx, scalar)
    if op == "to":
        return _compile_to(st, vt, cx)
    if op in ("nn_dist", "dist_to", "formation_speed", "formation_spread", "formation_area"):
        return _compile_spatial(st, vt, cx, scalar)
    raise cx.fail("unknown map", st)  # pragma: no cover - guarded by the grammar


def _compile_motion(
    st: Stage, vt: ValueType, cx: Ctx, scalar: ValueType
) -> tuple[list[Op], ValueType]:
    """speed/accel/jerk and heading of a position; angle_delta/angular_rate of an angle."""
    op, hz, text = st.op, cx.hz, st.text
    if op in ("speed", "accel", "jerk"):
        _need_position(st, vt, cx)
        depth = {"speed": 1, "accel": 2, "jerk": 3}[op]

        def motion(s: Stream, fr: Frame, key: Key, op: str = op, depth: int = depth) -> Stream:
            if op == "speed":
                return _next(s, _speed(s, fr, key, vt), 1)
            acc = kernels.step_diff(_velocity(s, fr, key, vt)) * hz
            if op == "jerk":
                acc = kernels.step_diff(acc) * hz
            return _next(s, kernels.norm_map(acc), depth)

        unit = {"speed": "m/s", "accel": "m/s**2", "jerk": "m/s**3"}[op]
        return [Op(text, motion)], replace(scalar, unit=unit)
    if op == "heading":
        _need_position(st, vt, cx)
        geo = vt.spec is not None and vt.spec.frame == "geodetic"

        def head(s: Stream, fr: Frame, key: Key) -> Stream:
            pairs = _pairs(s, fr, key, vt) if geo else None
            if pairs is not None:
                return _next(s, kernels.geodetic_heading(pairs), 1)
            return _next(s, kernels.heading(_metres(s, fr, key, vt), s.x if geo else None), 1)

        return [Op(text, head)], replace(scalar, semantics="angular", unit="deg")
    if vt.semantics != "angular":
        raise cx.fail(
            f"{op} needs an angular value (an angular field or heading); got {_article(vt.describe())}",
            st,
        )
    turn, max_rate = _turn(vt.unit), vt.max_rate
    rate = op == "angular_rate"

    def ang(s: Stream, fr: Frame, key: Key) -> Stream:
        d = kernels.angle_delta(s.x, turn, max_rate, hz)
        return _next(s, d * hz if rate else d, 1)

    ang_unit = f"{vt.unit}/s" if rate else vt.unit
    return [Op(text, ang)], replace(scalar, unit=ang_unit)


def _compile_is(st: Stage, vt: ValueType, cx: Ctx, scalar: ValueType) -> tuple[list[Op], ValueType]:
    """is:<label> of a categorical value: 1.0 where it holds the label, NaN where missing."""
    text = st.text
    if vt.kind != "categorical" or vt.spec is None:
        raise cx.fail(f"is:<label> needs a categorical value; got {_article(vt.describe())}", st)
    vocab = vt.spec.vocab
    label = str(st.arg)
    if label not in vocab:
        raise cx.fail(
            f"{label!r} is not a label of {vt.spec.name!r}"
            + suggestion(label, list(vocab))
            + f" (vocab: {', '.join(vocab)})",
            st,
        )
    code = float(vocab.index(label))

    def is_label(s: Stream, fr: Frame, key: Key) -> Stream:
        v = s.x
        return _next(s, np.where(np.isnan(v), _NAN, (v == code).astype(np.float64)))

    return [Op(text, is_label)], replace(scalar, kind="bool", unit=None)


def _compile_spatial(
    st: Stage, vt: ValueType, cx: Ctx, scalar: ValueType
) -> tuple[list[Op], ValueType]:
    """Distances between entities and whole-formation measures of a per-entity position."""
    op, text = st.op, st.text
    if op in ("nn_dist", "dist_to"):
        _need_position(st, vt, cx, per_entity=True)
        ref = str(st.arg)

        def dist(s: Stream, fr: Frame, key: Key) -> Stream:
            pm = _metres(s, fr, key, vt)
            if op == "nn_dist":
                return _next(s, kernels.nn_dist(pm))
            return _next(s, kernels.dist_to(pm, fr.entity_index(ref)))

        return [Op(text, dist)], replace(scalar, unit="m")
    _need_position(st, vt, cx, per_entity=True)

    def formation(s: Stream, fr: Frame, key: Key) -> Stream:
        if op == "formation_speed":
            return _next(s, kernels.formation_speed(_velocity(s, fr, key, vt)), 1)
        if op == "formation_spread":
            return _next(s, kernels.formation_spread(_metres(s, fr, key, vt)))
        return _next(s, kernels.formation_area(_planar(s, fr, key, vt, -1)))

    unit = {"formation_speed": "m/s", "formation_spread": "m", "formation_area": "m**2"}[op]
    return [Op(text, formation)], replace(scalar, unit=unit, per_entity=False)


def _compile_bit(st: Stage, vt: ValueType, cx: Ctx) -> tuple[list[Op], ValueType]:
    f = vt.spec
    if vt.semantics != "bitmask" or f is None:
        raise cx.fail(f"bit:<name> needs a bitmask field; got {_article(vt.describe())}", st)
    idx = _bit_index(st, f, str(st.arg), cx)
    is_global = not vt.per_entity

    def bit(s: Stream, fr: Frame, key: Key) -> Stream:
        # the stream is the field itself, perhaps filtered: read the bit exactly from the
        # source's integers and keep only the samples the stream still holds
        derived = fr.bits(f.name, idx, is_global)
        if s.windowed:
            return _next(s, fr.windows_of(s, derived))
        return _next(s, np.where(s.valid[..., None], derived, _NAN))

    return [Op(st.text, bit)], ValueType("bool", 1, None, None, vt.per_entity, vt.per_window)


def _bit_index(st: Stage, f: FieldSpec, name: str, cx: Ctx) -> int:
    if name not in f.bits:
        raise cx.fail(
            f"bit {name!r} is not declared on {f.name!r}"
            + suggestion(name, list(f.bits))
            + f" (bits: {', '.join(sorted(f.bits))})",
            st,
        )
    idx = int(f.bits[name])
    valid = bit_indexes(f.dtype)
    if idx not in valid:
        raise cx.fail(
            f"bit {name!r} (index {idx}) is outside the {len(valid)}-bit dtype {f.dtype} "
            f"of {f.name!r} (bits 0..{len(valid) - 1})",
            st,
        )
    return idx


def _compile_to(st: Stage, vt: ValueType, cx: Ctx) -> tuple[list[Op], ValueType]:
    target = str(st.arg)
    if vt.kind != "scalar" or vt.unit is None:
        what = vt.describe() + (" without a unit" if vt.kind == "scalar" else "")
        raise cx.fail(f"to:<unit> converts a scalar with a unit; got a {what}", st)
    try:
        parse_unit(target)
    except Exception:  # pint raises several types on malformed text
        raise cx.fail(f"unknown unit {target!r}" + _unit_suggestion(target), st) from None
    try:
        a, b = linear_conversion(vt.unit, target)
    except Exception as exc:
        raise cx.fail(
            f"cannot convert {vt.unit!r} to {target!r} (different dimensions)", st
        ) from exc
    if vt.semantics == "angular" and not is_angle(target):
        raise cx.fail(f"an angle converts to an angle unit (deg, rad, ...), not {target!r}", st)
    max_rate = None if vt.max_rate is None else vt.max_rate * a

    def conv(s: Stream, fr: Frame, key: Key) -> Stream:
        return _next(s, s.x * a + b if b else s.x * a)

    return [Op(st.text, conv)], replace(vt, unit=target, max_rate=max_rate)


def _unit_suggestion(text: str) -> str:
    try:
        from ...core.units import get_registry

        return suggestion(text, [str(u) for u in get_registry()])
    except Exception:  # the suggestion is a courtesy; never mask the real error
        return ""


# -- filters --------------------------------------------------------------------------

_CMPS: dict[str, Callable[[Any, Any], Any]] = {
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
}


def _filtered(s: Stream, keep: np.ndarray) -> Stream:
    """Drop the samples where ``keep`` (broadcast to (..., T, E)) is false."""
    keep = np.broadcast_to(keep, s.x.shape[:-1])
    return Stream(np.where(keep[..., None], s.x, _NAN), s.support, s.windowed, s.lag, s.base)


def compile_filter(st: Stage, vt: ValueType, cx: Ctx) -> tuple[Op, ValueType]:
    """Type-check a filter token and build its operation; the type passes through.

    Raises
    ------
    MetricCompileError
        When the filter does not accept ``vt`` or names an unknown field, label or bit.
    """
    op = st.op
    if op in ("present", "id") and not vt.per_entity:
        raise cx.fail(f"{st.text} selects entities, but the value is a {vt.describe()}", st)
    if op == "present":
        pct = 100 if st.arg is None else int(st.arg)

        def present(s: Stream, fr: Frame, key: Key) -> Stream:
            need = fr.presence_counts() * 100 >= pct * fr.batch.length  # (G, E)
            return _filtered(s, need[:, None, :])

        return Op(st.text, present, window=True), vt
    if op == "id":
        ref = str(st.arg)

        def by_id(s: Stream, fr: Frame, key: Key) -> Stream:
            j = fr.entity_index(ref)
            mask = np.zeros(s.x.shape[-2], dtype=bool)
            if j is not None:
                mask[j] = True
            return _filtered(s, mask)

        return Op(st.text, by_id), vt
    if op == "where_cmp":
        if not vt.numeric:
            raise cx.fail(
                f"where:<cmp><number> compares a scalar; got {_article(vt.describe())}"
                + (
                    " (use where:<field>=<label> or is:<label>)" if vt.kind == "categorical" else ""
                ),
                st,
            )
        cmp_op, value = st.params
        fn = _CMPS[str(cmp_op)]
        c = float(value)

        def where_cmp(s: Stream, fr: Frame, key: Key) -> Stream:
            v = s.x[..., 0]
            return _filtered(s, ~np.isnan(v) & fn(v, c))

        return Op(st.text, where_cmp), vt
    # where:<field>=<label> / where:<field>.<bit>: a mask from another field at the same tick
    fname, arg = str(st.params[0]), str(st.params[1])
    fields = {f.name: f for f in cx.schema.fields}
    globs = {f.name: f for f in cx.schema.globals}
    f = fields.get(fname) or globs.get(fname)
    if f is None:
        raise cx.fail(
            f"schema {cx.schema.name!r} has no field {fname!r}"
            + suggestion(fname, [*fields, *globs]),
            st,
        )
    is_global = fname in globs
    code, idx = 0.0, 0
    if not is_global and not vt.per_entity:
        raise cx.fail(
            f"{st.text} selects per-entity samples, but the value is a {vt.describe()}", st
        )
    if op == "where_label":
        if f.kind != "categorical":
            raise cx.fail(
                f"where:<field>=<label> needs a categorical field; {fname!r} is {f.kind}", st
            )
        if arg not in f.vocab:
            raise cx.fail(
                f"{arg!r} is not a label of {fname!r}"
                + suggestion(arg, list(f.vocab))
                + f" (vocab: {', '.join(f.vocab)})",
                st,
            )
        code = float(f.vocab.index(arg))

        def make(v: np.ndarray) -> np.ndarray:
            return v == code

    else:
        if f.semantics != "bitmask":
            raise cx.fail(f"where:<field>.<bit> needs a bitmask field; {fname!r} is not one", st)
        idx = _bit_index(st, f, arg, cx)

    def where_field(s: Stream, fr: Frame, key: Key) -> Stream:
        def mask() -> np.ndarray:  # (N, E), or (N, 1) for a global
            if op != "where_label":
                return fr.bits(fname, idx, is_global)[..., 0] == 1.0
            src = fr.global_(fname) if is_global else fr.field(fname)
            return src.x[..., 0] == code

        return _filtered(s, fr.window_mask(fr.memo(("mask", st.text), False, mask), s))

    if vt.per_window:
        raise cx.fail(f"{st.text} filters ticks, but the value is a {vt.describe()}", st)
    return Op(st.text, where_field), vt


# -- entity aggregation ---------------------------------------------------------------


def compile_agg(st: Stage, vt: ValueType, cx: Ctx) -> tuple[Op, ValueType]:
    """Type-check an ``entities:<how>`` token and build its operation.

    Raises
    ------
    MetricCompileError
        When the value is not a per-entity scalar or boolean (or ``any``/``all`` of a non-boolean).
    """
    how = st.op
    if not vt.per_entity:
        raise cx.fail(f"{st.text} aggregates entities, but the value is a {vt.describe()}", st)
    if not vt.numeric:
        raise cx.fail(
            f"{st.text} aggregates scalars or booleans; got {_article(vt.describe())}"
            + (" (use is:<label> first)" if vt.kind == "categorical" else "")
            + (" (add a map such as norm or speed)" if vt.kind == "vector" else ""),
            st,
        )
    if vt.semantics == "angular" and how in ("mean", "sum", "median", "std"):
        raise cx.fail(f"{st.text} of wrapping angles is meaningless (use angle_delta first)", st)
    if vt.semantics == "bitmask" and how not in ("count",):
        raise cx.fail(f"{st.text} of a raw bitmask is meaningless (use bit:<name> first)", st)
    if how in ("any", "all") and vt.kind != "bool":
        raise cx.fail(
            f"{st.text} needs booleans (bit:, is: or an event); got {_article(vt.describe())}", st
        )
    boolean = vt.kind == "bool"

    def agg(s: Stream, fr: Frame, key: Key) -> Stream:
        if s.windowed or s.keep is not None:
            return _next(s, kernels.agg_entities(s.x, how, s.support, boolean))
        # the support is the valid samples: their mask and counts are shared with the reduces
        ok, _, first = fr.tick_valid(s, key)
        return _next(s, kernels.agg_entities(s.x, how, ok, boolean, np.diff(first)))

    if how in ("any", "all") or (boolean and how in ("min", "max")):
        out = ValueType("bool", 1, None, None, per_entity=False)
    elif how == "count" or boolean:
        out = ValueType("scalar", 1, None, None, per_entity=False)
    else:
        out = ValueType("scalar", 1, None, vt.unit, per_entity=False)
    return Op(st.text, agg), out


# -- reduces --------------------------------------------------------------------------

_SERIES = (
    "n_changes",
    "zero_crossings",
    "path_length",
    "rms_jerk",
    "hull_area",
    "duration_present",
)


def _moments(s: Stream, fr: Frame, key: Key) -> reduces.Moments:
    """Moments of a window-level stream, shared by mean/sum/std/var/rms of the same prefix."""
    out: reduces.Moments = fr.memo((key, "@moments"), True, lambda: reduces.moments(s.x))
    return out


def _win(s: Stream, fr: Frame) -> reduces.Win:
    """Windows of a per-tick partial of source-level stream ``s`` (its look-back dropped)."""
    return lambda a, extra: fr.batch.view(a, s.lag + extra)


def _ticks(name: str, make: Callable[[Stream], Any]) -> Callable[[Stream, Frame, Key], Any]:
    """Per-tick partials of a source-level stream, cached with the source-level results."""
    return lambda s, fr, key: fr.memo((key, name), False, lambda: make(s))


def _moment_reduce(op: str, scale: float = 1.0) -> Reduce:
    """mean/sum/std/var/rms, both forms (results multiplied by ``scale``)."""
    simple = {
        "mean": reduces.mean,
        "sum": reduces.total,
        "std": reduces.std,
        "var": reduces.var,
        "rms": reduces.rms,
    }[op]

    def sums(s: Stream, fr: Frame, k: Key) -> reduces.TickSums:
        out: reduces.TickSums = fr.memo(
            (k, "@tick_sums"), False, lambda: reduces.tick_sums(s.x, fr.tick_valid(s, k))
        )
        return out

    def ticks(s: Stream, fr: Frame, k: Key) -> np.ndarray:
        if op in ("mean", "sum"):  # counts and sums only
            _, _, n, total = sums(s, fr, k)
            return reduces.window_total(op, n, total, _win(s, fr))
        sq = op == "rms"  # only rms reads the sums of squares
        parts = fr.memo(
            (k, "@tick_moments", sq), False, lambda: reduces.tick_moments(s.x, sums(s, fr, k), sq)
        )
        return reduces.window_moment(op, parts, _win(s, fr))

    return Reduce(
        lambda s, fr, k: simple(s.x, _moments(s, fr, k)) * scale,
        lambda s, fr, k: ticks(s, fr, k) * scale,
    )


def compile_reduce(
    st: Stage, vt: ValueType, cx: Ctx
) -> tuple[list[Op], Reduce, str | None, ValueType]:
    """Type-check the reduce token and build it.

    Returns
    -------
    ops : list of Op
        Maps the reduce implies (``path_length`` takes ``speed`` or ``diff``,
        ``rms_jerk`` takes ``jerk``), run before it.
    reduce : Reduce
        The window-level form and, when the reduce decomposes over ticks, the
        per-tick form; each maps ``(stream, frame, key)`` to an ndarray (G,).
    unit : str or None
        Unit of the result.
    in_type : ValueType
        Type of the value the reduce consumes.

    Raises
    ------
    MetricCompileError
        When the reduce does not accept ``vt`` (a vector into a scalar reduce, ...).
    """
    op, text = st.op, st.text
    if vt.per_window and op in _SERIES:
        raise cx.fail(f"{text} needs a time series, but a feature is one value per window", st)
    if op in ("rms_jerk", "hull_area", "path_length"):
        return _compile_path(st, vt, cx)
    if op in ("count", "frac", "duration_present"):
        return _compile_count(op, vt, cx.hz)
    if op == "n_changes":
        if vt.kind == "vector":
            raise cx.fail(
                "n_changes counts changes of a scalar, boolean or categorical; got a vector", st
            )
        return [], _pair_reduce(op), None, vt
    if op == "entropy":
        return _compile_entropy(st, vt, cx)
    return _compile_numeric(st, vt, cx)


def _compile_path(
    st: Stage, vt: ValueType, cx: Ctx
) -> tuple[list[Op], Reduce, str | None, ValueType]:
    """:func:`compile_reduce` of the reduces over a path: ``rms_jerk``, ``hull_area`` and
    ``path_length`` (of a position, or of any numeric series' steps)."""
    op, hz = st.op, cx.hz
    if op in ("rms_jerk", "hull_area"):
        _need_position(st, vt, cx)
        if op == "rms_jerk":
            ops, jt = compile_map(replace(st, op="jerk", text="jerk"), vt, cx)
            return ops, _moment_reduce("rms"), "m/s**3", jt

        def hull(s: Stream, fr: Frame, key: Key) -> np.ndarray:
            return reduces.hull_area(_planar(s, fr, key, vt, (1, 2)))

        return [], Reduce(hull), "m**2", vt
    # path_length
    if vt.semantics == "position":  # the sum of clamped step lengths = sum(speed) / hz
        ops, sv = compile_map(replace(st, op="speed", text="speed"), vt, cx)
        return ops, _moment_reduce("sum", 1.0 / hz), "m", sv
    if vt.kind not in ("scalar", "vector") or vt.semantics in ("angular", "bitmask"):
        raise cx.fail(
            f"path_length needs a position or a numeric series; got {_article(vt.describe())}"
            + (" (use angle_delta | abs | sum for turning)" if vt.semantics == "angular" else ""),
            st,
        )
    ops, dv = compile_map(replace(st, op="diff", text="diff"), vt, cx)
    step = "norm" if vt.kind == "vector" else "abs"
    more, dv = compile_map(replace(st, op=step, text=step), dv, cx)
    return [*ops, *more], _moment_reduce("sum"), vt.unit, dv


def _compile_count(
    op: str, vt: ValueType, hz: float
) -> tuple[list[Op], Reduce, str | None, ValueType]:
    """:func:`compile_reduce` of ``count``, ``frac`` and ``duration_present`` (no map)."""
    boolean = vt.kind == "bool"
    if op == "count":
        fn: ReduceFn = lambda s, fr, k: reduces.count(s.x, s.support, boolean)  # noqa: E731
    elif op == "frac":
        fn = lambda s, fr, k: reduces.frac(s.x, s.support, boolean)  # noqa: E731
    else:
        fn = lambda s, fr, k: reduces.duration_present(s.x, s.support, boolean, hz)  # noqa: E731
    hits = _ticks("@tick_hits", lambda s: reduces.tick_hits(s.x, s.support, boolean))
    ticks: ReduceFn = lambda s, fr, k: reduces.window_hits(  # noqa: E731
        op, hits(s, fr, k), _win(s, fr), hz
    )
    unit = "s" if op == "duration_present" else None
    return [], Reduce(fn, ticks), unit, vt


def _compile_numeric(
    st: Stage, vt: ValueType, cx: Ctx
) -> tuple[list[Op], Reduce, str | None, ValueType]:
    """:func:`compile_reduce` of the numeric reduces: mean, sum, std, var, rms, min, max,
    median, pNN, iqr and zero_crossings, after refusing a value they cannot reduce."""
    op, text = st.op, st.text
    if vt.kind == "vector":
        raise cx.fail(
            f"{text} reduces scalars, but the value is a {vt.dims}-component vector "
            "(add a map such as norm or speed)",
            st,
        )
    if vt.kind == "categorical":
        raise cx.fail(
            f"{text} is numeric; a categorical value supports entropy, n_changes, count, frac "
            "and duration_present (or is:<label> maps)",
            st,
        )
    if vt.semantics == "bitmask":
        raise cx.fail(f"{text} of a raw bitmask is meaningless (use bit:<name> first)", st)
    if vt.semantics == "angular" and op not in ("min", "max"):
        raise cx.fail(
            f"{text} of a wrapping angle is meaningless (use angle_delta or angular_rate first)", st
        )
    unit = None if vt.kind == "bool" else vt.unit
    if op == "zero_crossings":
        return [], _pair_reduce(op), None, vt
    if op in ("min", "max"):
        ext = _ticks(f"@tick_{op}", lambda s: reduces.tick_extreme(s.x, op))
        return (
            [],
            Reduce(
                lambda s, fr, k: reduces.extreme(s.x, op),
                lambda s, fr, k: reduces.window_extreme(ext(s, fr, k), op, _win(s, fr)),
            ),
            unit,
            vt,
        )
    if op in ("median", "percentile", "iqr"):
        q = float(st.arg or 0)

        def order_stat(take: reduces.Take, n: np.ndarray) -> np.ndarray:
            if op == "median":
                return reduces.median_of(take, n)
            if op == "percentile":
                return reduces.percentile_of(take, n, q)
            return reduces.percentile_of(take, n, 75.0) - reduces.percentile_of(take, n, 25.0)

        return (
            [],
            Reduce(
                lambda s, fr, k: order_stat(*order_reduce.sorted_windows(s, fr, k)),
                order_reduce.sliding_median(order_stat)
                if op == "median"
                else lambda s, fr, k: order_stat(*order_reduce.order_ticks(s, fr, k)),
            ),
            unit,
            vt,
        )
    if op == "var":
        unit = f"({unit})**2" if unit else None
    return [], _moment_reduce(op), unit, vt


def _pair_reduce(op: str) -> Reduce:
    window = reduces.n_changes if op == "n_changes" else reduces.zero_crossings
    parts = _ticks(f"@tick_{op}", lambda s: reduces.tick_pairs(s.x, op))
    return Reduce(
        lambda s, fr, k: window(s.x),
        lambda s, fr, k: reduces.window_pairs(parts(s, fr, k), _win(s, fr)),
    )


def _compile_entropy(
    st: Stage, vt: ValueType, cx: Ctx
) -> tuple[list[Op], Reduce, str | None, ValueType]:
    if st.arg is None:
        if vt.kind == "bool":
            n_values = 2
        elif vt.kind == "categorical" and vt.spec is not None:
            n_values = len(vt.spec.vocab)
        else:
            raise cx.fail(
                "entropy of a continuous value needs a binning, e.g. entropy:16 "
                f"(plain entropy is for categorical or boolean values; got {_article(vt.describe())})",
                st,
            )
        counts = _ticks("@tick_codes", lambda s: reduces.tick_codes(s.x, n_values))
        return (
            [],
            Reduce(
                lambda s, fr, k: reduces.entropy_discrete(s.x, n_values),
                lambda s, fr, k: reduces.window_entropy(counts(s, fr, k), _win(s, fr)),
            ),
            "bit",
            vt,
        )
    if vt.kind != "scalar" or vt.semantics == "bitmask":
        raise cx.fail(
            f"entropy:<bins> bins a numeric scalar; got {_article(vt.describe())}"
            + (" (use plain entropy)" if vt.kind in ("bool", "categorical") else ""),
            st,
        )
    bins = int(st.arg)
    return [], Reduce(lambda s, fr, k: reduces.entropy_hist(s.x, bins)), "bit", vt


def _article(noun: str) -> str:
    return f"{'an' if noun[:1] in 'aeiou' else 'a'} {noun}"
