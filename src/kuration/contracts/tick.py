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

from ..core.ids import entity_sort_key
from ..errors import SourceError
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
    media: Mapping[str, MediaColumn] = field(default_factory=dict)

    @property
    def n_steps(self) -> int:
        return int(self.present.shape[0])

    @property
    def n_entities(self) -> int:
        return int(self.present.shape[1])

    @property
    def sample_hz(self) -> float:
        return float(self.schema.sample_hz)

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
                    v = self.values[f.name][t, e]
                    rec[f.name] = _decode_value(f, v)
                ents[self.entity_ids[e]] = rec
            evs = frozenset(n for n, a in self.events.items() if a[t])
            if not ents and not evs:
                continue
            glb = {n: _decode_value(self.schema.field(n), a[t]) for n, a in self.globals.items()}
            med = {n: c.refs[int(c.index[t])] for n, c in self.media.items() if c.index[t] >= 0}
            yield Tick(time=float(times[t]), entities=ents, events=evs, globals=glb, media=med)


def _decode_value(f: FieldSpec, v: np.ndarray) -> Any:
    if f.kind == "categorical":
        return None if np.isnan(v[0]) else f.vocab[int(v[0])]
    if f.kind == "scalar":
        return float(v[0])
    return v.astype(np.float64).copy()


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
    """
    hz = float(schema.sample_hz)
    ks: list[int] = []
    rows: list[Mapping[Hashable, Mapping[str, Any]]] = []
    tick_events: list[frozenset[str]] = []
    tick_globals: list[Mapping[str, Any]] = []
    for i, tick in enumerate(ticks):
        if not math.isfinite(tick.time):
            raise SourceError(f"non-finite tick time {tick.time!r}", source=source_id, row=i)
        x = tick.time * hz
        k = round(x)
        if abs(x - k) > snap_tolerance:
            raise SourceError(
                f"tick time {tick.time!r} is {abs(x - k):.3g} steps off the {hz:g} Hz grid",
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
    roster = sorted({e for r in rows for e in r}, key=entity_sort_key)
    col = {e: j for j, e in enumerate(roster)}
    k0 = ks[0]
    n_t = ks[-1] - k0 + 1
    values = {f.name: np.full((n_t, len(roster), f.dims), np.nan) for f in schema.fields}
    present = np.zeros((n_t, len(roster)), dtype=bool)
    glob = {f.name: np.full((n_t, f.dims), np.nan) for f in schema.globals}
    events = {n: np.zeros(n_t, dtype=bool) for n in schema.events}
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
        for f in schema.globals:
            if f.name in tick_globals[i]:
                glob[f.name][t] = _encode_value(f, tick_globals[i][f.name], source_id, i)
        for n in tick_events[i]:
            events[n][t] = True
    return TickTable(source_id, schema, k0, tuple(roster), values, present, glob, events)
