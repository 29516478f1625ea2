"""Segmenter and Segment: overlapping fixed windows over a source."""

from __future__ import annotations

import dataclasses
import math
import operator
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ..core.ids import tag_entity_id
from ..errors import KurationError
from .tick import TickTable

__all__ = ["Segment", "Segmenter"]


@dataclass
class Segment:
    """One analysis window of a source.

    Attributes
    ----------
    source_id : str
    start_idx, end_idx : int
        Tick range ``[start_idx, end_idx)`` within the source's grid.
    features : dict of str to float
        Metric values, keyed by name (NaN when a metric had no valid sample).
    bin : tuple of int or None
        Quantile-bin coordinates, one per binning axis (-1 for a NaN feature).
    tags : dict of str to str
        Categorical labels for coverage constraints.
    group : str or None
        Group label for group caps and split stratification.
    priority : float
        Ranking value assigned by the selection method (-inf: never selected).
    entity : str or None
        The tagged id (:func:`~kuration.core.ids.tag_entity_id`) of the one entity a
        track-scoped window covers (:attr:`Segmenter.scope` ``"track"``); None for a
        window over every entity of the source (``"scene"``).
    """

    source_id: str
    start_idx: int
    end_idx: int
    features: dict[str, float] = field(default_factory=dict)
    bin: tuple[int, ...] | None = None
    tags: dict[str, str] = field(default_factory=dict)
    group: str | None = None
    priority: float = float("nan")
    entity: str | None = None

    @property
    def n_steps(self) -> int:
        return self.end_idx - self.start_idx

    @property
    def key(self) -> tuple[str, int] | tuple[str, str, int]:
        """Canonical sort key: ``(source_id, start_idx)`` for a scene window,
        ``(source_id, entity, start_idx)`` for a track window (one pool holds one kind)."""
        if self.entity is None:
            return (self.source_id, self.start_idx)
        return (self.source_id, self.entity, self.start_idx)

    def copy(self) -> Segment:
        """A copy whose features and tags can change without touching this one."""
        return Segment(
            self.source_id,
            self.start_idx,
            self.end_idx,
            dict(self.features),
            self.bin,
            dict(self.tags),
            self.group,
            self.priority,
            self.entity,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (non-finite numbers become None)."""
        return {
            "source_id": self.source_id,
            "start_idx": self.start_idx,
            "end_idx": self.end_idx,
            "features": {
                k: (None if not math.isfinite(v) else v) for k, v in self.features.items()
            },
            "bin": list(self.bin) if self.bin is not None else None,
            "tags": dict(self.tags),
            "group": self.group,
            "priority": self.priority if math.isfinite(self.priority) else None,
            **({} if self.entity is None else {"entity": self.entity}),
        }


@dataclass(frozen=True)
class Segmenter:
    """Overlapping fixed-width windows.

    Parameters
    ----------
    window, stride : float
        Window length and hop, in ``unit``.
    unit : {"steps", "seconds"}
        Seconds are converted with ``sample_hz`` (rounded to whole steps).
    sample_hz : float, optional
        Needed when ``unit="seconds"``.
    scope : {"scene", "track"}
        What one window covers.  ``"scene"`` (the default): every entity of the
        source over the window's ticks, so a metric such as ``entities:count``
        sees the whole scene and every track of the source shares its windows.
        ``"track"``: one entity, so each entity gets its own windows (those
        where it is present at least once) and a metric reduces over that
        entity alone; a track or span is then ranked by its own data.
    present_where : mapping, optional
        ``{"field": name, "op": op, "value": number}`` (``op`` one of ``==``, ``!=``,
        ``<``, ``<=``, ``>``, ``>=``): an entity counts as present only at ticks where
        its scalar field satisfies the comparison (``{"field": "onground", "op": "==",
        "value": 0}``: airborne).  Scoring, windows, track extents, spans and present-time
        budgets see only those ticks (:meth:`presence`); written shards keep every
        recorded tick of an admitted span.

    Raises
    ------
    KurationError
        On a non-positive window/stride, seconds without a rate, an unknown scope or a
        malformed ``present_where``.
    """

    window: float
    stride: float
    unit: Literal["steps", "seconds"] = "steps"
    sample_hz: float | None = None
    scope: Literal["scene", "track"] = "scene"
    present_where: Any = None

    def __post_init__(self) -> None:
        if self.present_where is not None:
            object.__setattr__(self, "present_where", _where(self.present_where))
        if self.unit not in ("steps", "seconds"):
            raise KurationError(f"segmenter unit must be 'steps' or 'seconds', got {self.unit!r}")
        if self.scope not in ("scene", "track"):
            raise KurationError(f"segmenter scope must be 'scene' or 'track', got {self.scope!r}")
        if self.unit == "seconds" and not self.sample_hz:
            raise KurationError("a segmenter in seconds needs sample_hz")
        if self.window_steps < 1 or self.stride_steps < 1:
            raise KurationError(
                f"window and stride must be at least one step "
                f"(got {self.window_steps} and {self.stride_steps})"
            )

    def _steps(self, v: float) -> int:
        if self.unit == "steps":
            if float(v) != int(v):
                raise KurationError(f"a window in steps must be whole, got {v!r}")
            return int(v)
        return round(float(v) * float(self.sample_hz or 0))

    @property
    def window_steps(self) -> int:
        return self._steps(self.window)

    @property
    def stride_steps(self) -> int:
        return self._steps(self.stride)

    def starts(self, n_steps: int) -> np.ndarray:
        """Window start indices for a source of ``n_steps`` ticks, shape (W,), int64 (empty if too short)."""
        w = self.window_steps
        if n_steps < w:
            return np.zeros(0, dtype=np.int64)
        return np.arange(0, n_steps - w + 1, self.stride_steps, dtype=np.int64)

    def segments(
        self, source_id: str, present: np.ndarray, entity_ids: Sequence[Any] = ()
    ) -> list[Segment]:
        """Windows over a source whose presence mask is ``present`` (T, E), in canonical
        (:attr:`Segment.key`) order.

        A scene window where no entity is present is left out.  With ``scope="track"``
        each entity (``entity_ids[e]`` names column ``e``) gets the windows where it is
        present at least once, each tagged with its :attr:`Segment.entity`.

        Raises
        ------
        KurationError
            A track scope without one entity id per column of ``present``.
        """
        starts = self.starts(present.shape[0])
        if starts.size == 0:
            return []
        w = self.window_steps
        if self.scope == "scene":
            any_t = present.any(axis=1).astype(np.int64)
            csum = np.concatenate([[0], np.cumsum(any_t)])
            occupied = (csum[starts + w] - csum[starts]) > 0
            return [Segment(source_id, int(s), int(s) + w) for s in starts[occupied]]
        if len(entity_ids) != present.shape[1]:
            raise KurationError(
                f"{source_id}: a track-scoped segmenter needs {present.shape[1]} entity ids, "
                f"got {len(entity_ids)}"
            )
        csum = np.concatenate([np.zeros((1, present.shape[1]), np.int64), np.cumsum(present, 0)])
        occupied = (csum[starts + w] - csum[starts]) > 0  # (W, E)
        # entities in tag order, each one's starts rising: canonical order without a sort
        occ = np.flatnonzero(occupied.any(axis=0)).tolist()
        tags = {e: tag_entity_id(entity_ids[e]) for e in occ}
        out: list[Segment] = []
        for e in sorted(tags, key=tags.__getitem__):
            tag = tags[e]
            out.extend(
                Segment(source_id, s, s + w, entity=tag) for s in starts[occupied[:, e]].tolist()
            )
        return out

    def stream(
        self, source_id: str, blocks: Iterable[TickTable]
    ) -> Iterator[tuple[Segment, TickTable]]:
        """The windows of a source given as consecutive blocks of ticks, lazily.

        A ``deque(maxlen=window)`` of ticks slides over the blocks, so at most one
        window of ticks (plus the block it is read from) is resident.  Windows
        start every ``stride`` ticks from the source's first tick, as
        :meth:`segments` cuts them; a window where no entity is present is left
        out.  Ticks between blocks (a gap in the source) are absent.

        Parameters
        ----------
        source_id : str
        blocks : iterable of TickTable
            Time-ordered, non-overlapping blocks over one roster (the source's
            whole roster, so that each window is laid out as the whole source is).

        Yields
        ------
        segment : Segment
            The window ``[start_idx, end_idx)`` on the source's grid (tick 0 is the
            first block's first tick), with no features yet; with ``scope="track"`` one
            per entity present in the window (roster order), each with its ``entity``.
        window : TickTable
            The window's ticks over the roster, C-contiguous; ``k0`` is the grid
            index of its first tick.  Scoring it
            (:meth:`~kuration.metrics.features.FeatureEngine.score_segments`) gives the
            same values, bit for bit, as scoring the whole source.

        Raises
        ------
        KurationError
            Blocks that overlap, go back or change roster.
        """
        w, stride = self.window_steps, self.stride_steps
        win: deque[tuple[TickTable | None, int, bool]] = deque(maxlen=w)
        first: TickTable | None = None
        busy = 0  # ticks of the deque where some entity is present
        nxt = 0  # grid index (relative to the first tick) of the next tick to append
        for blk in blocks:
            if first is None:
                first = blk
            elif blk.entity_ids != first.entity_ids:
                raise KurationError(f"{source_id}: a block changes the roster")
            at = blk.k0 - first.k0
            if at < nxt:
                raise KurationError(f"{source_id}: blocks overlap or go back at tick {blk.k0}")
            # the absent ticks of a gap follow the last block's ticks out of the deque;
            # once one window of them is in, every later window of the gap is empty
            gap = [(None, 0, False)] * min(at - nxt, w)
            occ: list[bool] = np.asarray(blk.present.any(axis=1)).tolist()
            for pos, item in [
                *((nxt + i, g) for i, g in enumerate(gap)),
                *((at + t, (blk, t, o)) for t, o in enumerate(occ)),
            ]:
                busy -= win[0][2] if len(win) == w else 0
                win.append(item)
                busy += item[2]
                start = pos - w + 1
                if start >= 0 and start % stride == 0 and busy and len(win) == w:
                    yield from self._emit(source_id, start, _window(first, win, start))
            nxt = at + blk.n_steps

    def presence(self, table: TickTable) -> TickTable:
        """``table`` with ``present`` false wherever ``present_where`` fails (``table`` itself
        without one): ``present & isfinite(v) & (v op value)`` for the field's values ``v``.

        Raises
        ------
        KurationError
            The field is not a scalar field of the table's schema.
        """
        if self.present_where is None:
            return table
        name, op, value = self.present_where
        v = table.values.get(name)
        if v is None or v.ndim != 3 or v.shape[2] != 1:
            raise KurationError(
                f"segmenter present_where names {name!r}, which is no scalar field of the schema"
            )
        x = v[:, :, 0]
        with np.errstate(invalid="ignore"):
            hold = np.isfinite(x) & _OPS[op](x, value)
        return dataclasses.replace(table, present=table.present & hold)

    def _emit(
        self, source_id: str, start: int, window: TickTable
    ) -> Iterator[tuple[Segment, TickTable]]:
        w = self.window_steps
        if self.scope == "scene":
            yield Segment(source_id, start, start + w), window
            return
        for e in np.flatnonzero(window.present.any(axis=0)):
            tag = tag_entity_id(window.entity_ids[e])
            yield Segment(source_id, start, start + w, entity=tag), window

    def to_dict(self) -> dict[str, Any]:
        """The keyword arguments that rebuild this segmenter (``scope`` only when not the
        default, so a scene job's recorded config and fingerprints keep their bytes)."""
        d: dict[str, Any] = {"window": self.window, "stride": self.stride, "unit": self.unit}
        if self.sample_hz is not None:
            d["sample_hz"] = self.sample_hz
        if self.scope != "scene":
            d["scope"] = self.scope
        if self.present_where is not None:
            name, op, value = self.present_where
            d["present_where"] = {"field": name, "op": op, "value": value}
        return d


_OPS: dict[str, Any] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def _where(spec: Any) -> tuple[str, str, float]:
    """``present_where`` as ``(field, op, value)``, checked."""
    if isinstance(spec, tuple) and len(spec) == 3:
        spec = {"field": spec[0], "op": spec[1], "value": spec[2]}
    ok = isinstance(spec, dict) and set(spec) == {"field", "op", "value"}
    if not ok or not isinstance(spec["field"], str) or spec["op"] not in _OPS:
        raise KurationError(
            'segmenter present_where is {"field": name, "op": one of '
            f'{", ".join(_OPS)}, "value": number}}, got {spec!r}'
        )
    value = spec["value"]
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise KurationError(f"segmenter present_where value must be a finite number, got {value!r}")
    return (spec["field"], spec["op"], float(value))


def _window(
    first: TickTable, ticks: Iterable[tuple[TickTable | None, int, bool]], start: int
) -> TickTable:
    """The ticks of the deque as one C-contiguous TickTable (absent where a tick is None)."""
    rows = list(ticks)

    def stack(get: Any, blank: np.ndarray) -> np.ndarray:
        return np.stack([blank if b is None else get(b)[t] for b, t, _ in rows])

    e = first.n_entities
    values = {
        k: stack(lambda b, k=k: b.values[k], np.full((e, *v.shape[2:]), np.nan))
        for k, v in first.values.items()
    }
    glob = {
        k: stack(lambda b, k=k: b.globals[k], np.full(v.shape[1:], np.nan))
        for k, v in first.globals.items()
    }
    ints = {
        k: stack(lambda b, k=k: b.ints[k], np.zeros(v.shape[1:], dtype=v.dtype))
        for k, v in first.ints.items()
    }
    events = {k: stack(lambda b, k=k: b.events[k], np.zeros((), dtype=bool)) for k in first.events}
    present = stack(lambda b: b.present, np.zeros(e, dtype=bool))
    return TickTable(
        first.source_id,
        first.schema,
        first.k0 + start,
        first.entity_ids,
        values,
        present,
        glob,
        events,
        ints=ints,
    )
