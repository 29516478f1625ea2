"""Windows of a source: one at a time (WindowBuffer) or all at once (WindowBatch)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from numpy.lib.stride_tricks import as_strided, sliding_window_view

from ..core.ids import tag_entity_id
from ..errors import KurationError
from .schema import SchemaSpec
from .tick import TickTable

__all__ = [
    "WindowBatch",
    "WindowBuffer",
    "build_window",
    "entity_column",
    "entity_columns",
    "entity_table",
    "stacked_tracks",
]


@dataclass(frozen=True)
class WindowBuffer:
    """Every field of one window over the window's entity roster.

    Attributes
    ----------
    values : mapping of str to ndarray, shape (T, E, D), float64
        NaN-padded per-entity field values in their declared units.
    present : ndarray, shape (T, E), bool
        Entity has a record at the tick.
    entity_ids : tuple
        The roster: entities present at least once in the window.
    schema : SchemaSpec
    globals : mapping of str to ndarray, shape (T, D), float64
    events : mapping of str to ndarray, shape (T,), bool
    source_id : str
    start_idx : int
    ints : mapping of str to ndarray, shape (T, E, D) or (T, D), integer dtype
        Exact values of integer-dtype fields and globals (see
        :attr:`TickTable.ints <kuration.contracts.tick.TickTable>`); valid where
        ``values`` is not NaN.
    """

    values: Mapping[str, np.ndarray]
    present: np.ndarray
    entity_ids: tuple[Hashable, ...]
    schema: SchemaSpec
    globals: Mapping[str, np.ndarray] = field(default_factory=dict)
    events: Mapping[str, np.ndarray] = field(default_factory=dict)
    source_id: str = ""
    start_idx: int = 0
    ints: Mapping[str, np.ndarray] = field(default_factory=dict)

    @property
    def sample_hz(self) -> float:
        return float(self.schema.sample_hz)

    @property
    def n_steps(self) -> int:
        return int(self.present.shape[0])

    def valid(self, name: str) -> np.ndarray:
        """Mask (T, E) of ticks where the entity is present and ``name`` has no NaN component."""
        return self.present & ~np.isnan(self.values[name]).any(axis=-1)

    @property
    def vocabs(self) -> dict[str, tuple[str, ...]]:
        return {f.name: f.vocab for f in self.schema.fields if f.kind == "categorical"}


def entity_columns(table: TickTable) -> dict[str, int]:
    """Each entity's tagged id (:func:`~kuration.core.ids.tag_entity_id`) -> its column of
    ``table``."""
    return {tag_entity_id(eid): e for e, eid in enumerate(table.entity_ids)}


def entity_column(table: TickTable, entity: str) -> int:
    """The column of ``table`` whose entity's tagged id (:func:`~kuration.core.ids.tag_entity_id`)
    is ``entity``.

    Raises
    ------
    KurationError
        No entity of the table has that id.
    """
    for e, eid in enumerate(table.entity_ids):
        if tag_entity_id(eid) == entity:
            return e
    raise _no_entity(table, entity)


def _no_entity(table: TickTable, entity: str) -> KurationError:
    return KurationError(f"{table.source_id}: no entity {entity!r} in the source's roster")


def entity_table(
    table: TickTable,
    entity: str,
    start: int = 0,
    stop: int | None = None,
    columns: Mapping[str, int] | None = None,
) -> TickTable:
    """Ticks ``[start, stop)`` of ``table`` for one entity (tagged id ``entity``), as a table
    of one entity column (views, not copies: :meth:`TickTable.view
    <kuration.contracts.tick.TickTable.view>`; globals and events kept, media left out).

    Tick ``t`` of the result is tick ``start + t`` of ``table`` (its ``k0`` is shifted so);
    a track-scoped window ``[a, b)`` of ``table`` is window ``[a - start, b - start)`` of it.
    ``columns`` (:func:`entity_columns` of ``table``) spares the roster scan when many
    entities of one table are cut.

    Raises
    ------
    KurationError
        No entity of the table has that id.
    """
    if columns is None:
        e = entity_column(table, entity)
    elif (found := columns.get(entity)) is None:
        raise _no_entity(table, entity)
    else:
        e = found
    return table.view(start, table.n_steps if stop is None else stop, e)


def stacked_tracks(
    table: TickTable, spans: Sequence[tuple[int, int, int]], align: int = 1
) -> tuple[TickTable, np.ndarray]:
    """Entity tracks of ``table`` laid end to end as one table of one entity column.

    Span ``(column, start, stop)`` becomes a block holding ticks ``[start, stop)`` of that
    column (globals and events of the same ticks alongside; media left out); each block is
    followed by absent ticks (present False, values NaN, exact integers 0) up to a multiple
    of ``align`` ticks, so window starts on a common stride stay on one grid.  Nothing of
    one block is read by a window of another as long as every map looks back only (the
    look-back ticks a window drops fall in its own block).  The stacked table's roster is
    one placeholder entity; entity references (``id:``, ``dist_to:``) cannot be resolved
    on it.

    Returns
    -------
    table : TickTable
        The stacked table (copies, not views).
    offsets : ndarray, shape (S,), int64
        Tick of the stacked table where each span's ``start`` landed.
    """
    align = max(int(align), 1)
    cols, lo, hi = (np.array(c, dtype=np.int64).reshape(-1) for c in zip(*spans, strict=True))
    sizes = hi - lo
    padded = -(-sizes // align) * align
    offsets = np.concatenate([[0], np.cumsum(padded)[:-1]]).astype(np.int64)
    block = np.repeat(np.arange(len(spans)), padded)
    pos = np.arange(int(padded.sum()), dtype=np.int64) - offsets[block]
    pad = pos >= sizes[block]
    ticks = np.where(pad, 0, lo[block] + pos)  # a pad reads tick 0, then is blanked
    n_ent = table.n_entities
    cells = ticks * n_ent + cols[block]
    glob_names = {g.name for g in table.schema.globals}

    def gather(arr: np.ndarray, per_entity: bool, fill: object) -> np.ndarray:
        if per_entity:
            flat = arr.reshape(arr.shape[0] * n_ent, *arr.shape[2:])
            out = np.take(flat, cells, axis=0)
        else:
            out = np.take(arr, ticks, axis=0)
        out[pad] = fill
        return out[:, None] if per_entity else out

    out = object.__new__(TickTable)
    parts = {
        "source_id": table.source_id,
        "schema": table.schema,
        "k0": table.k0,
        "entity_ids": ("<stacked tracks>",),
        "values": {k: gather(v, True, np.nan) for k, v in table.values.items()},
        "present": gather(table.present, True, False),
        "globals": {k: gather(v, False, np.nan) for k, v in table.globals.items()},
        "events": {k: gather(v, False, False) for k, v in table.events.items()},
        "counts": table.counts,
        "ints": {k: gather(v, k not in glob_names, 0) for k, v in table.ints.items()},
        "media": {},
    }
    for name, value in parts.items():
        object.__setattr__(out, name, value)
    return out, offsets


def build_window(
    table: TickTable,
    start: int,
    stop: int,
    schema: SchemaSpec | None = None,
    entity: str | None = None,
) -> WindowBuffer:
    """Extract ticks ``[start, stop)`` of ``table`` over the entities present in that range,
    or only over ``entity`` (a tagged id, :attr:`Segment.entity
    <kuration.contracts.segment.Segment>`) for a track-scoped window.

    Raises
    ------
    KurationError
        ``entity`` is not in the table's roster.
    """
    present = table.present[start:stop]
    if entity is None:
        roster = np.flatnonzero(present.any(axis=0))
    else:
        e = entity_column(table, entity)
        roster = np.array([e] if present[:, e].any() else [], np.int64)
    glob_names = {g.name for g in table.schema.globals}
    ints = {
        k: v[start:stop] if k in glob_names else v[start:stop][:, roster]
        for k, v in table.ints.items()
    }
    return WindowBuffer(
        values={k: v[start:stop][:, roster] for k, v in table.values.items()},
        present=present[:, roster],
        entity_ids=tuple(table.entity_ids[i] for i in roster),
        schema=schema or table.schema,
        globals={k: v[start:stop] for k, v in table.globals.items()},
        events={k: v[start:stop] for k, v in table.events.items()},
        source_id=table.source_id,
        start_idx=start,
        ints=ints,
    )


def _read_only_view(
    base: np.ndarray, shape: tuple[int, ...], strides: tuple[int, ...]
) -> np.ndarray:
    """A read-only strided view of ``base``: what ``as_strided(..., writeable=False)``
    returns, built with the ndarray constructor over a C-contiguous base (a few times
    cheaper a call; numpy checks there that the view stays inside the base's buffer)."""
    if base.flags.c_contiguous and base.size:
        out = np.ndarray(shape, dtype=base.dtype, buffer=base, strides=strides)
        out.flags.writeable = False
        return out
    return as_strided(base, shape=shape, strides=strides, writeable=False)


@dataclass(frozen=True, eq=False)
class WindowBatch:
    """Equal-length windows of one source, read as strided views of the source's arrays.

    The windows are evaluated on a regular *grid* of starts ``s0, s0 + step,
    ...`` that covers every requested start (``step`` is the gcd of the gaps),
    so that :meth:`view` is a strided view of the source array
    (:func:`numpy.lib.stride_tricks.sliding_window_view`), never a copy per
    window.  Starts that do not fit a dense grid fall back to one gathered copy.

    Attributes
    ----------
    values, present, entity_ids, schema, globals, events, source_id, ints
        The whole source, laid out as in :class:`~kuration.contracts.tick.TickTable`.
    starts : ndarray, shape (W,), int64
        The requested window starts, in request order.
    length : int
        Window length ``L`` in ticks.

    Raises
    ------
    ValueError
        If ``length`` is not positive or a window runs past the source.
    """

    values: Mapping[str, np.ndarray]
    present: np.ndarray
    entity_ids: tuple[Hashable, ...]
    schema: SchemaSpec
    starts: np.ndarray
    length: int
    globals: Mapping[str, np.ndarray] = field(default_factory=dict)
    events: Mapping[str, np.ndarray] = field(default_factory=dict)
    source_id: str = ""
    ints: Mapping[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        starts = np.asarray(self.starts, dtype=np.int64).reshape(-1)
        object.__setattr__(self, "starts", starts)
        n = int(self.present.shape[0])
        if int(self.length) < 1:
            raise ValueError(f"window length must be positive, got {self.length!r}")
        if starts.size and (starts.min() < 0 or starts.max() + int(self.length) > n):
            raise ValueError(
                f"windows of {self.length} ticks starting at {starts.min()}..{starts.max()} "
                f"do not fit a source of {n} ticks"
            )

    @classmethod
    def from_table(
        cls, table: TickTable, starts: Sequence[int] | np.ndarray, length: int
    ) -> WindowBatch:
        """Windows ``[s, s + length)`` of ``table`` for every ``s`` in ``starts``."""
        return cls(
            values=table.values,
            present=table.present,
            entity_ids=table.entity_ids,
            schema=table.schema,
            starts=np.asarray(starts, dtype=np.int64),
            length=int(length),
            globals=table.globals,
            events=table.events,
            source_id=table.source_id,
            ints=table.ints,
        )

    @classmethod
    def from_buffer(cls, buf: WindowBuffer) -> WindowBatch:
        """The single window held by ``buf`` (over its roster)."""
        return cls(
            values=buf.values,
            present=buf.present,
            entity_ids=buf.entity_ids,
            schema=buf.schema,
            starts=np.zeros(1, dtype=np.int64),
            length=buf.n_steps,
            globals=buf.globals,
            events=buf.events,
            source_id=buf.source_id,
            ints=buf.ints,
        )

    @property
    def sample_hz(self) -> float:
        return float(self.schema.sample_hz)

    @property
    def n_steps(self) -> int:
        """Ticks in the source."""
        return int(self.present.shape[0])

    @cached_property
    def _grid(self) -> tuple[np.ndarray, int, slice | None]:
        uniq = np.unique(self.starts)
        if uniq.size == 0:
            return uniq, 1, slice(0, 0)
        s0 = int(uniq[0])
        step = int(np.gcd.reduce(np.diff(uniq))) if uniq.size > 1 else 1
        count = (int(uniq[-1]) - s0) // step + 1
        if count > 4 * uniq.size + 16:  # too sparse for a grid: gather the windows instead
            return uniq, 1, None
        grid = np.arange(s0, s0 + count * step, step, dtype=np.int64)
        return grid, step, slice(s0, s0 + (count - 1) * step + 1, step)

    @property
    def grid(self) -> np.ndarray:
        """Starts of the windows actually evaluated, shape (G,), int64 (covers :attr:`starts`)."""
        return self._grid[0]

    @cached_property
    def index(self) -> np.ndarray:
        """Position of each requested start in :attr:`grid`, shape (W,), int64."""
        return np.searchsorted(self.grid, self.starts)

    def view(self, arr: np.ndarray, offset: int = 0) -> np.ndarray:
        """The grid windows of a source-level array, dropping the first ``offset`` ticks of each.

        Parameters
        ----------
        arr : ndarray, shape (N, ...)
            Time on the first axis, ``N`` the source's tick count.
        offset : int
            Leading ticks of every window to leave out.

        Returns
        -------
        ndarray, shape (G, L - offset, ...)
            A read-only strided view (a gathered copy only for irregular starts).
        """
        grid, step, sl = self._grid
        length = self.length
        fits = grid.size == 0 or int(grid[-1]) + length <= arr.shape[0]
        if sl is not None and fits and 0 <= offset <= length:
            # a regular grid: window g, tick t is arr[s0 + g * step + offset + t], one
            # strided view (what the sliding-window path below builds, in one call)
            st = arr.strides
            return _read_only_view(
                arr[int(grid[0]) + offset :] if grid.size else arr,
                (grid.size, length - offset, *arr.shape[1:]),
                (st[0] * step, st[0], *st[1:]),
            )
        win = sliding_window_view(arr, length, axis=0)
        win = np.moveaxis(win, -1, 1)
        win = win[grid] if sl is None else win[sl]
        return win[:, offset:]

    def window_sum(self, arr: np.ndarray) -> np.ndarray:
        """Sum of a source-level array over each grid window, shape (G, ...), via a cumulative sum."""
        c = np.concatenate([np.zeros((1, *arr.shape[1:]), dtype=np.int64), np.cumsum(arr, axis=0)])
        g = self.grid
        return c[g + self.length] - c[g]
