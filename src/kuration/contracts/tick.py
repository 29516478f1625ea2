"""The canonical stream: Tick, and TickTable, its columnar form for one source.

An adapter owes only an iterable of :class:`Tick`.  Everything numeric works on
a :class:`TickTable`: every field of every entity laid out on the source's
``sample_hz`` grid as a NaN-padded ``(T, E, D)`` array.  Adapters that can
produce the table directly (``TimeseriesAdapter``) skip the per-tick Python
objects; any other adapter gets :func:`table_from_ticks` for free.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.grid import grid_point
from ..core.ids import entity_sort_key
from ..core.units import conversion_factor
from ..errors import EntityIdError, SourceError, TimeRangeError
from .media import MediaColumn
from .schema import FieldSpec, SchemaSpec

__all__ = ["Tick", "TickTable", "table_from_ticks"]


@dataclass(frozen=True)
class Tick:
    """One timestep of a source.

    Attributes
    ----------
    time : float
        Seconds since the Unix epoch (or the source's own origin); adapters
        snap it to the schema's ``sample_hz`` grid.
    entities : mapping of entity id to mapping of field name to value
        The entities present at this tick.  An entity missing from the mapping
        is *absent*, which is not the same as a zero value.
    events : frozenset of str
        Event flags raised at this tick.
    globals : mapping of str to value
        Per-tick values shared by every entity.
    media : mapping of str to object
        Lazy media references (never decoded pixels).
    """

    time: float
    entities: Mapping[Hashable, Mapping[str, Any]]
    events: frozenset[str] = frozenset()
    globals: Mapping[str, Any] = field(default_factory=dict)
    media: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TickTable:
    """All ticks of one source as arrays on the ``sample_hz`` grid.

    Attributes
    ----------
    source_id : str
    schema : SchemaSpec
    k0 : int
        Grid index of the first tick: tick ``t`` is at ``(k0 + t) / sample_hz`` seconds.
    entity_ids : tuple
        The roster, in canonical order (:func:`kuration.core.ids.entity_sort_key`).
    values : mapping of str to ndarray, shape (T, E, D), float64
        Per-entity fields in their declared units; NaN where missing or absent.
        Categorical fields hold integer codes into the field's vocab.
    present : ndarray, shape (T, E), bool
        Whether the entity has a record at the tick.
    globals : mapping of str to ndarray, shape (T, D), float64
    events : mapping of str to ndarray, shape (T,), bool
    counts : mapping of str to int
        What the adapter's input policies did to this source, e.g.
        ``snap_collisions`` (rows that landed on a tick already taken by a
        row of the same entity).  Recorded per source in ``config.json``.
    ints : mapping of str to ndarray, shape (T, E, D) or (T, D), the field's integer dtype
        Exact values of the fields and globals declared with an integer dtype
        (a ``uint64`` above 2**53 is not exact in ``values``), 0 where the value
        is missing: the validity mask is ``~isnan(values[name])``.  Adapters
        fill it; a field without an entry falls back to ``values``.

    Notes
    -----
    Building a table applies the schema's sentinels and valid ranges
    (:attr:`FieldSpec.missing_value <kuration.contracts.schema.FieldSpec>`, ``valid_min``,
    ``valid_max``): such values become NaN (and 0 in ``ints``), and a record
    whose every field is then missing becomes absent.  Every adapter builds a
    TickTable, so no metric or output ever sees a sentinel.
    media : mapping of str to MediaColumn
        Lazy media columns (``media:<name>``): per-tick indices into the
        source's frame references, ``-1`` where a tick has no frame.  Never
        pixels, and never part of ``values``.
    """

    source_id: str
    schema: SchemaSpec
    k0: int
    entity_ids: tuple[Hashable, ...]
    values: Mapping[str, np.ndarray]
    present: np.ndarray
    globals: Mapping[str, np.ndarray] = field(default_factory=dict)
    events: Mapping[str, np.ndarray] = field(default_factory=dict)
    counts: Mapping[str, int] = field(default_factory=dict)
    ints: Mapping[str, np.ndarray] = field(default_factory=dict)
    media: Mapping[str, MediaColumn] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "ints", dict(self.ints))
        _mask_invalid(self)
        _check_geodetic(self)

    @property
    def n_steps(self) -> int:
        return int(self.present.shape[0])

    @property
    def n_entities(self) -> int:
        return int(self.present.shape[1])

    @property
    def sample_hz(self) -> float:
        return float(self.schema.sample_hz)

    def view(self, start: int, stop: int, column: int) -> TickTable:
        """Ticks ``[start, stop)`` of entity column ``column`` as a table of one entity (views
        of this table's arrays, no copy; globals and events kept, media left out).

        The schema's sentinels, valid ranges and geodetic bounds are not applied again:
        this table passed them, so every part of it does.  Tick ``t`` of the view is tick
        ``start + t`` of this table (``k0`` shifted so).
        """
        sl, ent = slice(start, stop), slice(column, column + 1)
        glob_names = {g.name for g in self.schema.globals}
        out = object.__new__(TickTable)
        parts = {
            "source_id": self.source_id,
            "schema": self.schema,
            "k0": self.k0 + start,
            "entity_ids": (self.entity_ids[column],),
            "values": {k: v[sl, ent] for k, v in self.values.items()},
            "present": self.present[sl, ent],
            "globals": {k: v[sl] for k, v in self.globals.items()},
            "events": {k: v[sl] for k, v in self.events.items()},
            "counts": self.counts,
            "ints": {k: v[sl] if k in glob_names else v[sl, ent] for k, v in self.ints.items()},
            "media": {},
        }
        for name, value in parts.items():
            object.__setattr__(out, name, value)
        return out

    def times(self) -> np.ndarray:
        """Tick times, shape (T,), float64 seconds."""
        return (self.k0 + np.arange(self.n_steps, dtype=np.float64)) / self.sample_hz

    def iter_ticks(self) -> Iterator[Tick]:
        """Yield the table back as :class:`Tick` objects (only ticks with an entity or event)."""
        times = self.times()
        for t in range(self.n_steps):
            ents: dict[Hashable, dict[str, Any]] = {}
            for e in np.flatnonzero(self.present[t]):
                rec: dict[str, Any] = {}
                for f in self.schema.fields:
                    exact = self.ints.get(f.name)
                    v = self.values[f.name][t, e]
                    rec[f.name] = _decode_value(f, v, None if exact is None else exact[t, e])
                ents[self.entity_ids[e]] = rec
            evs = frozenset(n for n, a in self.events.items() if a[t])
            if not ents and not evs:
                continue
            glb = {
                n: _decode_value(
                    self.schema.field(n), a[t], self.ints[n][t] if n in self.ints else None
                )
                for n, a in self.globals.items()
            }
            med = {n: c.refs[int(c.index[t])] for n, c in self.media.items() if c.index[t] >= 0}
            yield Tick(time=float(times[t]), entities=ents, events=evs, globals=glb, media=med)


def _mask_invalid(table: TickTable) -> None:
    """Apply the schema's sentinels and valid ranges to a table being built (in place of
    its mappings, never of the caller's arrays)."""
    schema = table.schema
    values, glob, ints = dict(table.values), dict(table.globals), dict(table.ints)
    emptied = np.zeros(table.present.shape, dtype=bool)
    for f in schema.fields:
        if f.has_validity and f.name in values:
            bad = f.invalid(values[f.name], ints.get(f.name))
            _blank(f.name, bad, values, ints)
            emptied |= bad
    for g in schema.globals:
        if g.has_validity and g.name in glob:
            _blank(g.name, g.invalid(glob[g.name], ints.get(g.name)), glob, ints)
    if emptied.any():
        missing = np.ones(table.present.shape, dtype=bool)
        for f in schema.fields:
            if f.name in values:
                missing &= np.isnan(values[f.name]).any(axis=-1)
        object.__setattr__(table, "present", table.present & ~(emptied & missing))
    object.__setattr__(table, "values", values)
    object.__setattr__(table, "globals", glob)
    object.__setattr__(table, "ints", ints)


#: the bounds of geodetic latitude and longitude in degrees (longitude in [0, 360) is common too)
_GEODETIC_DEG = ((-90.0, 90.0), (-180.0, 360.0))


def _check_geodetic(table: TickTable) -> None:
    """Refuse a geodetic latitude or longitude no place on Earth has (after the schema's
    sentinels and valid ranges are applied): such a value is a wrong unit or a corrupt
    record, and the ECEF conversion behind every position metric would use it as it is.

    Raises
    ------
    SourceError
        Naming the field, component, entity (for a per-entity field), tick time and value.
    """
    fields = [(f, table.values) for f in table.schema.fields]
    fields += [(g, table.globals) for g in table.schema.globals]
    for f, arrays in fields:
        if f.frame != "geodetic" or f.name not in arrays:
            continue
        x = arrays[f.name]
        for d, (name, (lo, hi)) in enumerate(
            zip(("latitude", "longitude"), _GEODETIC_DEG, strict=True)
        ):
            assert isinstance(
                f.unit, tuple
            )  # FieldSpec checks a geodetic one has one per component
            unit = str(f.unit[d])
            k = conversion_factor("deg", unit)
            with np.errstate(invalid="ignore"):
                bad = (x[..., d] < lo * k * (1 + 1e-12)) | (x[..., d] > hi * k * (1 + 1e-12))
            if bad.any():
                at = tuple(int(i[0]) for i in np.nonzero(bad))
                who = f"entity {table.entity_ids[at[1]]!r}" if len(at) > 1 else "the global"
                raise SourceError(
                    f"field {f.name!r}: {name} {float(x[at][d])!r} {unit} of {who} at "
                    f"{table.times()[at[0]]:.3f} s is outside [{lo * k:g}, {hi * k:g}] {unit}: "
                    "a wrong unit or a corrupt record (declare valid_min/valid_max on the "
                    "field to treat such values as missing)",
                    source=table.source_id,
                )


def _blank(
    name: str, bad: np.ndarray, arrays: dict[str, np.ndarray], ints: dict[str, np.ndarray]
) -> None:
    if not bad.any():
        return
    arrays[name] = np.where(bad[..., None], np.nan, arrays[name])
    if name in ints:
        ints[name] = np.where(bad[..., None], 0, ints[name]).astype(ints[name].dtype)


def is_int_field(f: FieldSpec) -> bool:
    """Whether ``f`` is a numeric field declared with an integer dtype (carried exactly)."""
    return f.kind != "categorical" and np.dtype(f.dtype).kind in "iu"


def field_ints(
    f: FieldSpec, x: np.ndarray, valid: np.ndarray, source: str, what: str
) -> np.ndarray:
    """Values of an integer-dtype field in that dtype, exactly; 0 where not ``valid``.

    Parameters
    ----------
    f : FieldSpec
        A field with an integer ``dtype``.
    x : ndarray, shape (N, ...), integer, bool or float
        Raw values; integers are compared exactly (never through float64).
    valid : ndarray, same shape as ``x``, bool
    source : str
    what : str
        Where the values come from (``"column 'flags'"``), for the error.

    Raises
    ------
    SourceError
        A valid value that is not integral or lies outside the dtype's range,
        naming ``what``, the field and the first offending row.
    """
    dt = np.dtype(f.dtype)
    lo, hi = int(np.iinfo(dt).min), int(np.iinfo(dt).max)
    x = np.asarray(x)
    if x.dtype.kind == "b":
        x = x.astype(np.uint8)
    if x.dtype.kind == "f":
        fin = np.where(valid, x, 0.0)
        frac = valid & ((fin != np.trunc(fin)) | ~np.isfinite(fin))
        bad = valid & ((fin < float(lo)) | (fin >= float(hi) + 1.0))  # hi + 1: a power of two
        x = fin
    else:
        frac = np.zeros(x.shape, dtype=bool)
        bad = valid & ((x < lo) | (x > hi))
    for mask, why in ((frac, "is not an integer"), (bad, f"is outside {f.dtype} [{lo}, {hi}]")):
        if mask.any():
            r = int(np.flatnonzero(mask.reshape(mask.shape[0], -1).any(axis=1))[0])
            v = x[r][mask[r]].reshape(-1)[0].item() if x.ndim > 1 else x[r].item()
            raise SourceError(f"{what} of field {f.name!r}: {v!r} {why}", source=source, row=r)
    return np.where(valid, x, 0).astype(dt)


def _decode_value(f: FieldSpec, v: np.ndarray, exact: np.ndarray | None = None) -> Any:
    if f.kind == "categorical":
        return None if np.isnan(v[0]) else f.vocab[int(v[0])]
    if exact is not None:  # integer fields: exact Python ints, None where missing
        if np.isnan(v).any():
            return None if f.kind == "scalar" else v.astype(np.float64).copy()
        return int(exact[0]) if f.kind == "scalar" else exact.copy()
    if f.kind == "scalar":
        return float(v[0])
    return v.astype(np.float64).copy()


def _encode_int(f: FieldSpec, v: Any, source: str, row: int) -> np.ndarray:
    """A tick value of an integer-dtype field in that dtype, exactly (0 where missing).

    Raises
    ------
    SourceError
        A non-integral value, or one outside the dtype's range.
    """
    dt = np.dtype(f.dtype)
    info = np.iinfo(dt)
    items = [v] if f.kind == "scalar" or np.ndim(v) == 0 else list(np.asarray(v).reshape(-1))
    out = np.zeros(len(items), dtype=dt)
    for j, x in enumerate(items):
        if x is None or (isinstance(x, float | np.floating) and np.isnan(x)):
            continue
        if isinstance(x, bool | np.bool_):
            x = int(x)
        if isinstance(x, float | np.floating):
            if not float(x).is_integer():
                raise SourceError(
                    f"field {f.name!r} ({f.dtype}) holds the non-integer {x!r}",
                    source=source,
                    row=row,
                )
            x = int(x)
        if not isinstance(x, int | np.integer) or not int(info.min) <= int(x) <= int(info.max):
            raise SourceError(
                f"field {f.name!r} holds {x!r}, outside {f.dtype} [{info.min}, {info.max}]",
                source=source,
                row=row,
            )
        out[j] = int(x)
    return out


def _encode_value(f: FieldSpec, v: Any, source: str, row: int) -> np.ndarray:
    if v is None:
        return np.full(f.dims, np.nan)
    if f.kind == "categorical":
        try:
            return np.array([float(f.vocab.index(str(v)))])
        except ValueError:
            raise SourceError(
                f"unknown label {v!r} for categorical field {f.name!r} (vocab {list(f.vocab)})",
                source=source,
                row=row,
            ) from None
    arr = np.asarray(v, dtype=np.float64).reshape(-1)
    if arr.shape[0] != f.dims:
        raise SourceError(
            f"field {f.name!r} expects {f.dims} components, got {arr.shape[0]}",
            source=source,
            row=row,
        )
    if np.isinf(arr).any():
        raise SourceError(f"field {f.name!r} holds an infinite value", source=source, row=row)
    return arr


def _roster(rows: list[Mapping[Hashable, Mapping[str, Any]]], source_id: str) -> list[Hashable]:
    """Every entity id of the stream in canonical order; a missing or uncanonical id is an error."""
    seen: dict[Hashable, int] = {}
    for i, r in enumerate(rows):
        for e in r:
            seen.setdefault(e, i)
    for e, i in seen.items():
        if e is None or (isinstance(e, str) and not e.strip()):
            raise EntityIdError(f"missing entity id ({e!r})", source=source_id, row=i)
        try:
            entity_sort_key(e)
        except EntityIdError as exc:
            raise EntityIdError(str(exc), source=source_id, row=i) from None
    return sorted(seen, key=entity_sort_key)


def _int_layout(schema: SchemaSpec, n_t: int, n_e: int) -> dict[str, np.ndarray]:
    """Zeroed exact-integer arrays for the integer fields (T, E, D) and globals (T, D)."""
    out = {f.name: np.zeros((n_t, n_e, f.dims), f.dtype) for f in schema.fields if is_int_field(f)}
    out.update(
        {g.name: np.zeros((n_t, g.dims), g.dtype) for g in schema.globals if is_int_field(g)}
    )
    return out


def table_from_ticks(
    schema: SchemaSpec, ticks: Iterable[Tick], source_id: str, *, snap_tolerance: float = 1e-6
) -> TickTable:
    """Lay a tick stream out on the ``sample_hz`` grid.

    Parameters
    ----------
    snap_tolerance : float
        Largest allowed distance of a tick time from its grid point, in steps.

    Raises
    ------
    SourceError
        If ticks go backwards or repeat, a time is off-grid or non-finite, an
        entity record misses a declared field, or a value is invalid.  The
        error names the source and the tick's position in the stream.
        :class:`EntityIdError` (a ``SourceError``) for a missing id (None,
        empty or blank text) or one without a canonical form (NaN, lists...);
        :class:`TimeRangeError` for a time outside int64 nanoseconds.  Two
        ticks on one grid point are refused (the stream must strictly
        increase), so this builder never drops a colliding tick.
    """
    hz = float(schema.sample_hz)
    ks: list[int] = []
    rows: list[Mapping[Hashable, Mapping[str, Any]]] = []
    tick_events: list[frozenset[str]] = []
    tick_globals: list[Mapping[str, Any]] = []
    for i, tick in enumerate(ticks):
        if not math.isfinite(tick.time):
            raise SourceError(f"non-finite tick time {tick.time!r}", source=source_id, row=i)
        if abs(tick.time) * 1e9 >= 2.0**63:
            raise TimeRangeError(
                f"tick time {tick.time!r} s is outside the int64-nanosecond range "
                "1677-09-21..2262-04-11 UTC",
                source=source_id,
                row=i,
            )
        x = tick.time * hz
        k = grid_point(x)  # a half step goes to the later tick, as adapters snap
        off = min(abs(x - k), 0.5)
        if off > snap_tolerance:
            raise SourceError(
                f"tick time {tick.time!r} is {off:.3g} steps off the {hz:g} Hz grid",
                source=source_id,
                row=i,
            )
        if ks and k <= ks[-1]:
            raise SourceError(
                "tick times must strictly increase (got a repeated or backward time)",
                source=source_id,
                row=i,
            )
        unknown = set(tick.events) - set(schema.events)
        if unknown:
            raise SourceError(f"undeclared events {sorted(unknown)}", source=source_id, row=i)
        ks.append(k)
        rows.append(tick.entities)
        tick_events.append(frozenset(tick.events))
        tick_globals.append(tick.globals)
    if not ks:
        raise SourceError("the source holds no ticks", source=source_id)
    roster = _roster(rows, source_id)
    col = {e: j for j, e in enumerate(roster)}
    k0 = ks[0]
    n_t = ks[-1] - k0 + 1
    values = {f.name: np.full((n_t, len(roster), f.dims), np.nan) for f in schema.fields}
    present = np.zeros((n_t, len(roster)), dtype=bool)
    glob = {f.name: np.full((n_t, f.dims), np.nan) for f in schema.globals}
    events = {n: np.zeros(n_t, dtype=bool) for n in schema.events}
    ints = _int_layout(schema, n_t, len(roster))
    for i, (k, ents) in enumerate(zip(ks, rows, strict=True)):
        t = k - k0
        for ent, rec in ents.items():
            j = col[ent]
            present[t, j] = True
            for f in schema.fields:
                if f.name not in rec:
                    raise SourceError(
                        f"entity {ent!r} record lacks field {f.name!r}", source=source_id, row=i
                    )
                values[f.name][t, j] = _encode_value(f, rec[f.name], source_id, i)
                if f.name in ints:
                    ints[f.name][t, j] = _encode_int(f, rec[f.name], source_id, i)
        for f in schema.globals:
            if f.name in tick_globals[i]:
                glob[f.name][t] = _encode_value(f, tick_globals[i][f.name], source_id, i)
                if f.name in ints:
                    ints[f.name][t] = _encode_int(f, tick_globals[i][f.name], source_id, i)
        for n in tick_events[i]:
            events[n][t] = True
    return TickTable(source_id, schema, k0, tuple(roster), values, present, glob, events, ints=ints)
