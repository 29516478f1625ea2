"""The evaluation frame: what a compiled metric reads, and the value stream it transforms.

Metrics are evaluated on a :class:`~kuration.contracts.buffer.WindowBatch`: every window
of a source at once (or the single window of a WindowBuffer, as a batch of
one).  A stage that only looks at one tick and its few predecessors is
computed once on the whole source ("source level", arrays ``(N, E, D)``); the
first stage that depends on the window itself (a ``present`` filter, a
``feature:`` source, the reduce) switches the stream to the window level,
arrays ``(G, T, E, D)`` that are strided views of the source-level ones.  A
stream that has looked ``lag`` ticks back drops the first ``lag`` ticks of
every window when it is windowed, which is exactly what a per-window
evaluation leaves undefined (NaN) -- so both evaluations agree.

Intermediate streams are cached in the frame under the stage prefix that made
them, so metrics of one strategy that share a prefix (``field:position |
speed``) compute it once.  Source-level results live in a cache that frames
over different windows of the same source can share, which lets a long
source be evaluated in chunks of windows without recomputing them.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...contracts.buffer import WindowBatch
from . import kernels, reduces

__all__ = ["Frame", "Stream"]


@dataclass(frozen=True)
class Stream:
    """Values flowing between stages.

    Attributes
    ----------
    x : ndarray, shape (..., T, E, D), float64
        NaN marks a missing sample (all components together).  Source level:
        ``(N, E, D)``; window level: ``(G, T, E, D)``.  Booleans are 0.0/1.0,
        categoricals their integer codes.
    keep : ndarray, shape (..., T, E), bool, or None
        The samples that were valid before the latest filters (the
        denominator of ``frac``); None when no filter has run since the last
        map, i.e. the valid samples of ``x``.
    windowed : bool
    lag : int
        Source level: ticks of look-back used so far.  Window level: the ticks
        dropped from the front of every window.
    base : tuple or None
        Window level only: the cache key of the source-level stream whose
        windows this stream equals wherever it is valid (only filters ran
        since windowing), so elementwise conversions can be taken from the
        source level instead of recomputed per window.
    """

    x: np.ndarray
    keep: np.ndarray | None = None
    windowed: bool = False
    lag: int = 0
    base: tuple[Any, ...] | None = None

    @property
    def valid(self) -> np.ndarray:
        """Mask ``(..., T, E)`` of the samples present in ``x``."""
        return ~np.isnan(self.x[..., 0])

    @property
    def support(self) -> np.ndarray:
        """Mask ``(..., T, E)`` of the samples the filters chose from."""
        return self.valid if self.keep is None else self.keep


class Frame:
    """One batch of windows and the caches shared by every metric evaluated on it.

    Parameters
    ----------
    batch : WindowBatch
    shared : dict, optional
        Cache of source-level results, to share between frames over different
        windows of the same source (chunks of one long source).

    Attributes
    ----------
    shared : dict
        Source-level results (streams, conversions, masks).
    cache : dict
        Window-level results of this batch (streams, moments, sorted samples, metric results).
    features : dict of str to ndarray, shape (G,)
        Metric results by feature name, for ``feature:`` sources.
    """

    def __init__(self, batch: WindowBatch, shared: dict[Any, Any] | None = None) -> None:
        self.batch = batch
        self.schema = batch.schema
        self.hz = float(batch.schema.sample_hz)
        self.shared: dict[Any, Any] = {} if shared is None else shared
        self.cache: dict[Any, Any] = {}
        self.features: dict[str, np.ndarray] = {}

    def memo(self, key: Any, windowed: bool, make: Callable[[], Any]) -> Any:
        """``make()`` once per key: in :attr:`cache` when ``windowed``, else in :attr:`shared`."""
        store = self.cache if windowed else self.shared
        if key not in store:
            store[key] = make()
        return store[key]

    def lookup(self, key: Any) -> Any:
        """A cached result of either level (None when absent)."""
        hit = self.cache.get(key)
        return self.shared.get(key) if hit is None else hit

    @property
    def n_grid(self) -> int:
        return int(self.batch.grid.shape[0])

    # -- sources ---------------------------------------------------------------------
    def field(self, name: str) -> Stream:
        """A per-entity field, masked by presence and with partial vectors made missing."""

        def make() -> Stream:
            x = np.asarray(self.batch.values[name], dtype=np.float64)
            present = self.batch.present
            if x.shape[-1] == 1:  # one check: every sample is present or missing
                nan = np.isnan(x[..., 0])
                if np.logical_or(nan, present).all():
                    return Stream(x)
                return Stream(np.where((present & ~nan)[..., None], x, np.nan))
            # component by component into contiguous masks: numpy reduces a short last axis
            # slowly, and logic on strided masks (or a ufunc's reduce over a list) is slower
            # than a NaN test of each strided component
            comps = [np.isnan(x[..., j]) for j in range(x.shape[-1])]
            missing, partly = comps[0] & comps[1], comps[0] | comps[1]
            for c in comps[2:]:
                missing &= c
                partly |= c
            ok = present & ~partly
            stray = ~ok & ~missing  # absent but valued, or a partly missing vector
            # a TickTable is already NaN wherever absent: mask only when something is not
            return Stream(np.where(ok[..., None], x, np.nan) if stray.any() else x)

        st: Stream = self.memo(("field", name), False, make)
        return st

    def global_(self, name: str) -> Stream:
        """A global field as one pseudo-entity, ``(N, 1, D)``."""

        def make() -> Stream:
            g = np.asarray(self.batch.globals[name], dtype=np.float64)
            g = g.reshape(g.shape[0], -1)
            ok = ~np.isnan(g).any(axis=-1, keepdims=True)
            return Stream(np.where(ok, g, np.nan)[:, None, :])

        st: Stream = self.memo(("global", name), False, make)
        return st

    def bits(self, name: str, index: int, is_global: bool) -> np.ndarray:
        """Bit ``index`` of an integer field at the source level, read exactly.

        Returns
        -------
        ndarray, shape (N, E, 1), or (N, 1, 1) for a global, float64
            0.0/1.0, NaN where the field is missing.  Taken from the batch's
            exact integers (:attr:`WindowBatch.ints`) when it has them, else
            from the float values (exact up to 2**53).
        """

        def make() -> np.ndarray:
            src = self.global_(name) if is_global else self.field(name)
            exact = self.batch.ints.get(name)
            if exact is None:
                return kernels.bit_map(src.x, index)
            ints = exact.reshape(exact.shape[0], -1, exact.shape[-1]) if is_global else exact
            return kernels.bit_map_exact(ints, index, ~np.isnan(src.x))

        out: np.ndarray = self.memo(("bits", name, index), False, make)
        return out

    def event(self, name: str) -> Stream:
        """An event flag as a per-tick boolean, ``(N, 1, 1)``; never missing."""

        def make() -> Stream:
            ev = np.asarray(self.batch.events[name], dtype=bool)
            return Stream(ev.astype(np.float64)[:, None, None])

        st: Stream = self.memo(("event", name), False, make)
        return st

    def tick_valid(self, st: Stream, key: Any) -> reduces.TickValid:
        """:func:`~kuration.metrics.dsl.reduces.tick_valid` of the source-level stream ``st``
        cached under ``key``, computed once for every reduce and aggregation that reads it."""
        out: reduces.TickValid = self.memo((key, "@valid"), False, lambda: reduces.tick_valid(st.x))
        return out

    # -- windows ---------------------------------------------------------------------
    def to_windows(self, st: Stream, key: tuple[Any, ...] | None = None) -> Stream:
        """Window a source-level stream (dropping its look-back ticks); window level as is.

        ``key`` is the stream's cache key, remembered as its ``base``.
        """
        if st.windowed:
            return st
        keep = None if st.keep is None else self.batch.view(st.keep, st.lag)
        return Stream(self.batch.view(st.x, st.lag), keep, windowed=True, lag=st.lag, base=key)

    def windows_of(self, st: Stream, derived: np.ndarray) -> np.ndarray:
        """Window ``derived``, an elementwise function of ``st``'s base stream computed at the
        source level, as ``st``: same ticks dropped, NaN where ``st`` is missing."""
        w = self.batch.view(derived, st.lag)
        return np.where(st.valid[..., None], w, np.nan)

    def window_mask(self, mask: np.ndarray, st: Stream) -> np.ndarray:
        """A source-level mask ``(N, ...)`` aligned with ``st`` (windowed the same way)."""
        return self.batch.view(mask, st.lag) if st.windowed else mask

    def presence_counts(self) -> np.ndarray:
        """Ticks each entity is present in each grid window, shape (G, E), int64."""
        out: np.ndarray = self.memo(
            ("presence_counts",), True, lambda: self.batch.window_sum(self.batch.present)
        )
        return out

    def entity_index(self, ref: str) -> int | None:
        """Column of the entity whose id reads ``ref`` (None when absent from the source)."""
        ids: tuple[Hashable, ...] = self.batch.entity_ids
        for j, e in enumerate(ids):
            if str(e) == ref:
                return j
        return None
