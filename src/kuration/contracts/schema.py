"""SchemaSpec: the vocabulary of a dataset as data.

A schema lists the per-entity fields a source carries, what each one means
(``semantics``) and how it is measured (``unit``).  The metric grammar checks
every expression against it at compile time, so no field name is ever
hard-coded in the engine.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ..core.config import FieldModel, SchemaModel, validate_config
from ..core.units import is_angle, is_length, parse_unit
from ..errors import SchemaError
from .media import MediaSpec

__all__ = ["FieldSpec", "SchemaSpec", "bit_indexes"]

Kind = Literal["scalar", "vector", "categorical"]
Semantics = Literal["position", "angular", "bitmask"]
_KINDS = ("scalar", "vector", "categorical")
_SEMANTICS = ("position", "angular", "bitmask")
_FRAMES = ("cartesian", "geodetic")
_INT_DTYPES = ("uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64")


def bit_indexes(dtype: str) -> range:
    """The bit indexes a bitmask of ``dtype`` holds: ``range(8 * itemsize)`` for an integer
    dtype (0..7 for ``uint8``/``int8`` ... 0..63 for 64-bit), empty otherwise.  The schema
    and the ``bit:``/``where:<field>.<bit>`` compiler both ask this one function."""
    dt = np.dtype(dtype)
    return range(dt.itemsize * 8) if dt.kind in "iu" else range(0)


@dataclass(frozen=True)
class FieldSpec:
    """One per-entity (or global) field.

    Parameters
    ----------
    name : str
        Field name, referenced in metrics as ``field:<name>``.
    kind : {"scalar", "vector", "categorical"}
        Shape class: a scalar is ``D=1``, a vector has ``dims`` components, a
        categorical holds integer codes into ``vocab``.
    semantics : {"position", "angular", "bitmask"} or None
        What the values mean.  Maps are restricted by it (``speed`` needs a
        position, ``angle_delta`` an angular field, ``bit:`` a bitmask).
    unit : str or list of str, optional
        pint unit string; for a position, one unit for every component or one
        per component.  A geodetic position is ``[deg, deg]`` or
        ``[deg, deg, <length>]`` (latitude, longitude, optional altitude).
    dims : int
        Number of components ``D`` (1 for scalars and categoricals).
    frame : {"cartesian", "geodetic"}
        For positions only: cartesian components in a length unit, or WGS84
        latitude/longitude(/altitude) converted to Earth-centred metres before
        any speed is taken.
    max_rate : float, optional
        Outlier clamp on the field's rate of change per second: metres per
        second for a position, the field's unit per second otherwise.  Rates
        above it are clipped to it.
    bits : mapping of str to int, optional
        Bitmask fields: bit name to bit index (0 = least significant).
    dtype : str
        Storage dtype of the raw values; bitmasks need an integer dtype whose
        width bounds the declared bits.
    vocab : list of str, optional
        Categorical fields: the allowed labels, in code order.
    missing_value : number, list of numbers, or list of ``dims`` such entries, optional
        Sentinels that mean "no value" (the CF conventions' ``missing_value``):
        a number or list of numbers applies to every component; a list of
        ``dims`` entries holding ``null`` or a list is read per component
        (``[null, null, -10]``: only ``z == -10`` is a sentinel).  Integer
        dtypes need integral sentinels, compared exactly.
    valid_min, valid_max : number or list of ``dims`` numbers/nulls, optional
        Inclusive valid range (CF ``valid_min``/``valid_max``), one bound for
        every component or one per component (``null``: unbounded).
        A value equal to a sentinel or outside the range becomes missing (NaN)
        wherever a :class:`~kuration.contracts.tick.TickTable` is built, i.e. for every
        adapter, before any metric or output; a record whose every field is
        then missing becomes absent (``present`` false).
    """

    name: str
    kind: Kind = "scalar"
    semantics: Semantics | None = None
    unit: str | tuple[str, ...] | None = None
    dims: int = 1
    frame: Literal["cartesian", "geodetic"] = "cartesian"
    max_rate: float | None = None
    bits: Mapping[str, int] = field(default_factory=dict)
    dtype: str = "float64"
    vocab: tuple[str, ...] = ()
    missing_value: Any = None
    valid_min: Any = None
    valid_max: Any = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "bits", dict(self.bits))
        object.__setattr__(self, "vocab", tuple(self.vocab))
        for key in ("missing_value", "valid_min", "valid_max"):
            object.__setattr__(self, key, _freeze(getattr(self, key)))
        if isinstance(self.unit, list):
            object.__setattr__(self, "unit", tuple(self.unit))
        self._validate()

    # -- validation ------------------------------------------------------------------
    def _fail(self, msg: str) -> SchemaError:
        return SchemaError(msg, field=self.name)

    def _validate(self) -> None:
        if (
            not isinstance(self.name, str)
            or not self.name
            or not self.name.replace("_", "a").isalnum()
        ):
            raise SchemaError(f"field name must be a non-empty identifier, got {self.name!r}")
        if self.kind not in _KINDS:
            raise self._fail(f"kind must be one of {_KINDS}, got {self.kind!r}")
        if self.semantics is not None and self.semantics not in _SEMANTICS:
            raise self._fail(
                f"semantics must be one of {_SEMANTICS} or null, got {self.semantics!r}"
            )
        if self.frame not in _FRAMES:
            raise self._fail(f"frame must be one of {_FRAMES}, got {self.frame!r}")
        if not isinstance(self.dims, int) or self.dims < 1:
            raise self._fail(f"dims must be a positive integer, got {self.dims!r}")
        if self.kind != "vector" and self.dims != 1:
            raise self._fail(f"a {self.kind} field has dims=1, got {self.dims}")
        if self.max_rate is not None and not (np.isfinite(self.max_rate) and self.max_rate > 0):
            raise self._fail(f"max_rate must be a positive finite number, got {self.max_rate!r}")
        try:
            np.dtype(self.dtype)
        except TypeError as exc:
            raise self._fail(f"unknown dtype {self.dtype!r}") from exc
        for u in self.units:
            try:
                parse_unit(u)
            except ValueError as exc:
                raise self._fail(str(exc)) from exc
        if isinstance(self.unit, tuple) and len(self.unit) != self.dims:
            raise self._fail(f"{len(self.unit)} units given for {self.dims} components")
        sem = self.semantics
        if sem == "position":
            self._validate_position()
        elif self.frame != "cartesian":
            raise self._fail("frame applies to position fields only")
        if sem == "angular":
            if self.kind != "scalar":
                raise self._fail("angular semantics needs a scalar field")
            if self.unit is None or not is_angle(self.units[0]):
                raise self._fail(
                    f"angular field needs an angle unit (deg or rad), got {self.unit!r}"
                )
        if sem == "bitmask":
            self._validate_bitmask()
        elif self.bits:
            raise self._fail("bits are declared on bitmask fields only")
        if self.kind == "categorical":
            if not self.vocab or len(set(self.vocab)) != len(self.vocab):
                raise self._fail("a categorical field needs a non-empty vocab of distinct labels")
            if sem is not None:
                raise self._fail("a categorical field carries no semantics")
        elif self.vocab:
            raise self._fail("vocab is declared on categorical fields only")
        if self.has_validity:
            self._validate_validity()

    def _validate_position(self) -> None:
        if self.kind != "vector" or self.dims < 2:
            raise self._fail("position semantics needs a vector field with dims >= 2")
        units = self.units
        if not units:
            raise self._fail("a position field needs a unit")
        if self.frame == "geodetic":
            if self.dims not in (2, 3):
                raise self._fail("a geodetic position is [lat, lon] or [lat, lon, alt]")
            if len(units) != self.dims:
                raise self._fail("a geodetic position needs one unit per component")
            if not (is_angle(units[0]) and is_angle(units[1])):
                raise self._fail("geodetic latitude and longitude need angle units")
            if self.dims == 3 and not is_length(units[2]):
                raise self._fail("geodetic altitude needs a length unit")
        elif not all(is_length(u) for u in units):
            raise self._fail(f"a cartesian position needs length units, got {self.unit!r}")

    def _validate_bitmask(self) -> None:
        if self.kind != "scalar":
            raise self._fail("bitmask semantics needs a scalar field")
        if self.dtype not in _INT_DTYPES:
            raise self._fail(f"a bitmask needs an integer dtype, got {self.dtype!r}")
        if not self.bits:
            raise self._fail("a bitmask field declares its bits")
        valid = bit_indexes(self.dtype)
        for bname, idx in self.bits.items():
            if not isinstance(idx, int) or isinstance(idx, bool) or idx not in valid:
                raise self._fail(
                    f"bit {bname!r} index {idx!r} is outside 0..{valid.stop - 1} of {self.dtype}"
                )

    def _validate_validity(self) -> None:
        if self.kind == "categorical":
            raise self._fail("missing_value/valid_min/valid_max apply to numeric fields")
        integral = np.dtype(self.dtype).kind in "iu"
        for d, sentinels in enumerate(self.sentinels):
            for v in sentinels:
                if integral and not float(v).is_integer():
                    raise self._fail(
                        f"missing_value {v!r} (component {d}) is not an integer of {self.dtype}"
                    )
                if integral and not _fits(int(v), self.dtype):
                    raise self._fail(f"missing_value {v!r} is outside the range of {self.dtype}")
        lo, hi = self.valid_bounds
        for d in range(self.dims):
            if lo[d] is not None and hi[d] is not None and lo[d] > hi[d]:
                raise self._fail(f"valid_min {lo[d]!r} > valid_max {hi[d]!r} (component {d})")

    @property
    def has_validity(self) -> bool:
        """Whether the field declares sentinels or a valid range."""
        return any(v is not None for v in (self.missing_value, self.valid_min, self.valid_max))

    @property
    def sentinels(self) -> tuple[tuple[float | int, ...], ...]:
        """The ``missing_value`` sentinels of each component, ``dims`` tuples.

        Raises
        ------
        SchemaError
            On a malformed ``missing_value``.
        """
        mv = self.missing_value
        if mv is None:
            return ((),) * self.dims
        if not isinstance(mv, tuple):
            return ((_number(mv, "missing_value", self.name),),) * self.dims
        per_component = any(v is None or isinstance(v, tuple) for v in mv)
        if not per_component:
            nums = tuple(_number(v, "missing_value", self.name) for v in mv)
            return (nums,) * self.dims
        if len(mv) != self.dims:
            raise self._fail(
                f"a per-component missing_value has {self.dims} entries, got {len(mv)}"
            )
        out = []
        for v in mv:
            items = () if v is None else v if isinstance(v, tuple) else (v,)
            out.append(tuple(_number(x, "missing_value", self.name) for x in items))
        return tuple(out)

    @property
    def valid_bounds(self) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        """``(valid_min, valid_max)``, each a ``dims``-tuple of numbers or None.

        Raises
        ------
        SchemaError
            On a malformed bound.
        """
        out = []
        for key in ("valid_min", "valid_max"):
            v = getattr(self, key)
            if v is None or not isinstance(v, tuple):
                b = None if v is None else _number(v, key, self.name)
                out.append((b,) * self.dims)
                continue
            if len(v) != self.dims:
                raise self._fail(f"{key} has {len(v)} entries for {self.dims} components")
            out.append(tuple(None if x is None else _number(x, key, self.name) for x in v))
        return out[0], out[1]

    def invalid(self, values: np.ndarray, ints: np.ndarray | None = None) -> np.ndarray:
        """Where a value is a declared sentinel or outside the valid range.

        Parameters
        ----------
        values : ndarray, shape (..., D), float64
            The field's values; NaN (already missing) is never flagged.
        ints : ndarray, shape (..., D), integer, optional
            The exact integer values of an integer-dtype field, compared instead
            of ``values`` (so sentinels above 2**53 match exactly).

        Returns
        -------
        ndarray, shape (...), bool
            True where any component is invalid.
        """
        x = values if ints is None else ints
        lo, hi = self.valid_bounds
        bad = np.zeros(values.shape[:-1], dtype=bool)
        for d, sentinels in enumerate(self.sentinels):
            col = x[..., d]
            exact = [e for v in sentinels if (e := _exact(v, col.dtype)) is not None]
            if exact:
                bad |= np.isin(col, np.array(exact, dtype=col.dtype))
            if lo[d] is not None:
                bad |= col < lo[d]
            if hi[d] is not None:
                bad |= col > hi[d]
        return bad & ~np.isnan(values).any(axis=-1)

    # -- accessors -------------------------------------------------------------------
    @property
    def units(self) -> tuple[str, ...]:
        """The unit(s) as a tuple (empty when unitless)."""
        if self.unit is None:
            return ()
        if isinstance(self.unit, tuple):
            return self.unit
        return (self.unit,)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict; ``FieldSpec.from_dict(f.to_dict()) == f``."""
        d: dict[str, Any] = {"name": self.name, "kind": self.kind}
        if self.semantics is not None:
            d["semantics"] = self.semantics
        if self.unit is not None:
            d["unit"] = list(self.unit) if isinstance(self.unit, tuple) else self.unit
        if self.dims != 1:
            d["dims"] = self.dims
        if self.frame != "cartesian":
            d["frame"] = self.frame
        if self.max_rate is not None:
            d["max_rate"] = self.max_rate
        if self.bits:
            d["bits"] = dict(self.bits)
        if self.dtype != "float64":
            d["dtype"] = self.dtype
        if self.vocab:
            d["vocab"] = list(self.vocab)
        for key in ("missing_value", "valid_min", "valid_max"):
            if getattr(self, key) is not None:
                d[key] = _thaw(getattr(self, key))
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FieldSpec:
        """Build from a dict, checked by :class:`~kuration.core.config.FieldModel` (strict types,
        unknown keys rejected).

        Raises
        ------
        SchemaError
            On unknown keys or invalid values.
        """
        name = d.get("name") if isinstance(d, Mapping) else None
        try:
            m = validate_config(FieldModel, d, kind="schema", what="field")
        except SchemaError as exc:
            exc.field = name if isinstance(name, str) else None
            raise
        return cls.from_model(m)

    @classmethod
    def from_model(cls, m: Any) -> FieldSpec:
        """Build from a validated :class:`~kuration.core.config.FieldModel` (every key of the model
        is an attribute of the same name; JSON lists become tuples).

        Raises
        ------
        SchemaError
            On values that are invalid together (see the class docstring).
        """
        kw = dict(m)
        kw["bits"] = dict(m.bits)
        kw["vocab"] = tuple(m.vocab)
        if isinstance(m.unit, list):
            kw["unit"] = tuple(m.unit)
        return cls(**kw)


@dataclass(frozen=True)
class SchemaSpec:
    """The declared vocabulary of a dataset.

    Parameters
    ----------
    fields : sequence of FieldSpec
        Per-entity fields.
    sample_hz : float
        The tick rate of the canonical stream (Hz); adapters snap timestamps to
        this grid.
    globals : sequence of FieldSpec
        Per-tick fields shared by every entity (merged into output records).
    events : sequence of str
        Names of per-tick event flags a tick may carry.
    name : str
        A label for reports.
    media : sequence of MediaSpec
        The media namespace: lazy frame columns (``media:<name>``), kept apart
        from ``fields`` so that the metric grammar never sees them.

    Raises
    ------
    SchemaError
        On duplicate names, a non-positive ``sample_hz`` or an invalid field.
    """

    fields: tuple[FieldSpec, ...]
    sample_hz: float
    globals: tuple[FieldSpec, ...] = ()
    events: tuple[str, ...] = ()
    name: str = "schema"
    media: tuple[MediaSpec, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))
        object.__setattr__(self, "media", tuple(self.media))
        object.__setattr__(self, "globals", tuple(self.globals))
        object.__setattr__(self, "events", tuple(self.events))
        if (
            not isinstance(self.sample_hz, int | float)
            or not np.isfinite(self.sample_hz)
            or self.sample_hz <= 0
        ):
            raise SchemaError(f"sample_hz must be a positive finite number, got {self.sample_hz!r}")
        if not self.fields:
            raise SchemaError("a schema needs at least one field")
        names = [f.name for f in (*self.fields, *self.globals)] + [m.name for m in self.media]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise SchemaError(f"duplicate field names {dupes}")

    def field(self, name: str) -> FieldSpec:
        """The per-entity or global field ``name``.

        Raises
        ------
        KeyError
            If the schema has no such field.
        """
        for f in (*self.fields, *self.globals):
            if f.name == name:
                return f
        raise KeyError(name)

    def media_column(self, name: str) -> MediaSpec:
        """The media column ``name`` (``media:<name>``).

        Raises
        ------
        KeyError
            If the schema declares no such media column.
        """
        for m in self.media:
            if m.name == name:
                return m
        raise KeyError(name)

    @property
    def field_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict; round-trips through :meth:`from_dict`."""
        d: dict[str, Any] = {
            "name": self.name,
            "sample_hz": self.sample_hz,
            "fields": [f.to_dict() for f in self.fields],
        }
        if self.globals:
            d["globals"] = [f.to_dict() for f in self.globals]
        if self.events:
            d["events"] = list(self.events)
        if self.media:
            d["media"] = {m.name: m.to_dict() for m in self.media}
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, what: str = "schema") -> SchemaSpec:
        """Build from a dict, checked by :class:`~kuration.core.config.SchemaModel` (strict types,
        unknown keys rejected, each error naming its key path).

        Raises
        ------
        SchemaError
            On unknown keys, a missing ``fields``/``sample_hz`` or any invalid field.
        """
        try:
            m = validate_config(SchemaModel, d, kind="schema", what=what)
        except SchemaError as exc:
            exc.field = _field_at(d, exc.path)
            raise
        return cls.from_model(m)

    @classmethod
    def from_model(cls, m: Any) -> SchemaSpec:
        """Build from a validated :class:`~kuration.core.config.SchemaModel`.

        Raises
        ------
        SchemaError
            On duplicate names, no field, or an invalid field.
        """
        return cls(
            fields=tuple(FieldSpec.from_model(f) for f in m.fields),
            sample_hz=m.sample_hz,
            globals=tuple(FieldSpec.from_model(f) for f in m.globals),
            events=tuple(m.events),
            name=m.name,
            media=tuple(MediaSpec.from_dict(k, v) for k, v in m.media.items()),
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, indent=2)

    @classmethod
    def from_json(cls, text: str) -> SchemaSpec:
        """Parse JSON text (duplicate keys and non-finite numbers rejected)."""
        from ..core.jsonio import loads_strict

        try:
            data = loads_strict(text, what="schema")
        except ValueError as exc:
            raise SchemaError(str(exc)) from None
        return cls.from_dict(data)


def _field_at(d: Any, path: str | None) -> str | None:
    """The name of the field a key path such as ``fields[2].dims`` lies in."""
    m = re.match(r"^(fields|globals)\[(\d+)\]", path or "")
    if not m or not isinstance(d, Mapping):
        return None
    items = d.get(m.group(1))
    i = int(m.group(2))
    if isinstance(items, list) and i < len(items) and isinstance(items[i], Mapping):
        name = items[i].get("name")
        return name if isinstance(name, str) else None
    return None


def _freeze(v: Any) -> Any:
    """Lists (of lists) as tuples, so a FieldSpec stays hashable and frozen."""
    return tuple(_freeze(x) for x in v) if isinstance(v, list | tuple) else v


def _thaw(v: Any) -> Any:
    return [_thaw(x) for x in v] if isinstance(v, tuple) else v


def _number(v: Any, key: str, name: str) -> float | int:
    if isinstance(v, bool) or not isinstance(v, int | float | np.integer | np.floating):
        raise SchemaError(f"{key} entries must be numbers, got {v!r}", field=name)
    if not np.isfinite(v):
        raise SchemaError(f"{key} must be finite, got {v!r}", field=name)
    return v.item() if isinstance(v, np.generic) else v


def _fits(v: int, dtype: str) -> bool:
    info = np.iinfo(np.dtype(dtype))
    return int(info.min) <= v <= int(info.max)


def _exact(v: float | int, dtype: np.dtype[Any]) -> Any:
    """A sentinel in the compared array's dtype (integers exactly, never through float)."""
    if dtype.kind in "iu":
        return int(v) if _fits(int(v), str(dtype)) else None
    return float(v)


def _as_list(v: Any, what: str) -> Iterable[Any]:
    if not isinstance(v, list | tuple):
        raise SchemaError(f"{what} must be a list, got {type(v).__name__}")
    return v
