"""Deduplication filters: ``dedup`` (exact, on window values) and ``near_dedup`` (approximate).

Both are registered filters, usable in any strategy's ``filters`` list::

    {"filter": "dedup"}                                   # exact duplicates of raw values
    {"filter": "near_dedup", "threshold": 0.01}           # cosine distance < 0.01
    {"filter": "near_dedup", "threshold": 0.01, "features": ["speed_p90", "turn_p90"]}

Each keeps the *first* window of a group of duplicates in the canonical
``(source_id, start_idx)`` order and drops the others.  Like every
filter they see only the segments the entries before them kept, so a
duplicate whose first copy was filtered out earlier is kept.

Exact (``dedup``)
    Two windows are duplicates when their canonical bytes
    (:func:`window_payload`) are equal.  Each window is hashed with SHA-256;
    windows that share a digest are compared byte for byte, so a hash
    collision never drops a distinct window.  The window values are read again
    through the :class:`WindowReader` the runtime installs with
    :func:`use_window_reader` (a Pipeline, ``curate`` and ``write_dataset``
    do); without one the filter raises :class:`~kuration.errors.StrategyError`.

Near (``near_dedup``)
    Each feature (by default every feature of the pool, sorted by name) is
    standardized over the pool being filtered (mean 0, population standard
    deviation 1; a constant feature becomes 0).  A window is dropped when the
    cosine distance ``1 - u.v / (|u| |v|)`` between its standardized vector and
    the vector of an earlier *kept* window is below ``threshold`` (greedy, in
    canonical order, so ties resolve to the earlier window).  A window with a
    non-finite feature, or whose standardized vector is zero, has no direction:
    it is always kept and never drops another.  This is an approximate filter:
    two windows with equal features but different values are near duplicates.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar, Protocol

import numpy as np

from ..contracts.buffer import WindowBuffer, build_window
from ..contracts.segment import Segment
from ..contracts.tick import TickTable
from ..errors import StrategyError
from .filters import register_filter

__all__ = [
    "ExactDedup",
    "NearDedup",
    "TableWindowReader",
    "WindowReader",
    "current_window_reader",
    "digest_groups",
    "near_duplicate_mask",
    "resolve_collisions",
    "shared_digests",
    "use_window_reader",
    "window_digest",
    "window_payload",
]

_MAGIC = b"kuration-window-v1\x00"
_NAN = np.float64(np.nan)


class WindowReader(Protocol):
    """Reads the values of scored windows again (for filters that compare raw values)."""

    def windows(self, segments: Sequence[Segment]) -> Iterator[tuple[int, WindowBuffer]]:
        """Yield ``(i, buffer)`` for every ``segments[i]``, in any order.

        Raises
        ------
        KurationError
            A source cannot be read.
        """
        ...


@dataclass(frozen=True)
class TableWindowReader:
    """A :class:`WindowReader` over an adapter's ``read_table``: each source is read once
    per call, in sorted source order, and only one source table is held at a time.

    Parameters
    ----------
    read_table : callable
        ``read_table(uri) -> TickTable``, e.g. ``adapter.read_table``.
    uris : mapping of str to str
        Source id to the URI to read it from.
    """

    read_table: Callable[[str], TickTable]
    uris: Mapping[str, str]

    def windows(self, segments: Sequence[Segment]) -> Iterator[tuple[int, WindowBuffer]]:
        by_source: dict[str, list[int]] = {}
        for i, s in enumerate(segments):
            by_source.setdefault(s.source_id, []).append(i)
        for sid in sorted(by_source):
            if sid not in self.uris:
                raise StrategyError(f"dedup: no URI is known for source {sid!r}")
            table = self.read_table(self.uris[sid])
            for i in by_source[sid]:
                s = segments[i]
                yield i, build_window(table, s.start_idx, s.end_idx, entity=s.entity)


_READER: ContextVar[WindowReader | None] = ContextVar("kuration_window_reader", default=None)


@contextmanager
def use_window_reader(reader: WindowReader | None) -> Iterator[None]:
    """Install ``reader`` for the filters run inside the ``with`` block."""
    token = _READER.set(reader)
    try:
        yield
    finally:
        _READER.reset(token)


def current_window_reader() -> WindowReader | None:
    """The reader installed by :func:`use_window_reader`, or None."""
    return _READER.get()


def _parts(buf: WindowBuffer) -> Iterator[bytes]:
    """The canonical byte parts of one window (see :func:`window_payload`)."""
    yield _MAGIC
    yield np.asarray(buf.present.shape, dtype="<i8").tobytes()
    yield np.ascontiguousarray(buf.present, dtype=np.uint8).tobytes()
    for kind, arrays in (("v", buf.values), ("g", buf.globals)):
        for name in sorted(arrays):
            a = np.asarray(arrays[name], dtype="<f8")
            a = np.where(np.isnan(a), _NAN, a) + 0.0  # one NaN pattern; -0.0 becomes 0.0
            yield f"{kind}:{name}\x00".encode()
            yield np.asarray(a.shape, dtype="<i8").tobytes()
            yield np.ascontiguousarray(a).tobytes()
    for kind, arrays in (("e", buf.events), ("i", buf.ints)):
        for name in sorted(arrays):
            a = np.asarray(arrays[name])
            a = a.astype(np.uint8 if kind == "e" else "<i8")
            yield f"{kind}:{name}\x00".encode()
            yield np.asarray(a.shape, dtype="<i8").tobytes()
            yield np.ascontiguousarray(a).tobytes()


def window_payload(buf: WindowBuffer) -> bytes:
    """The canonical bytes of one window's values: what exact dedup compares.

    In order: a version tag; the window's shape ``(T, E)`` as int64; the
    presence mask ``(T, E)`` as uint8; then each per-entity field (name sorted)
    and each global (name sorted) as its name, shape and float64 little-endian
    values, every NaN written as one quiet NaN and ``-0.0`` as ``0.0``; then
    each event track (uint8) and each exact integer field (int64 little-endian),
    names sorted.  Entity ids, the source id and the window's position are
    left out: the same values recorded for other entities, in another source
    or at another time are duplicates.

    Parameters
    ----------
    buf : WindowBuffer

    Returns
    -------
    bytes
    """
    return b"".join(_parts(buf))


def window_digest(buf: WindowBuffer, size: int = 32) -> bytes:
    """SHA-256 of :func:`window_payload` (its first ``size`` bytes), computed part by part."""
    h = hashlib.sha256()
    for p in _parts(buf):
        h.update(p)
    return h.digest()[:size]


def _reader() -> WindowReader:
    reader = _READER.get()
    if reader is None:
        raise StrategyError(
            "filter 'dedup' compares window values and needs a window reader: run it through "
            "a Pipeline, curate() or write_dataset(), or install one with use_window_reader()"
        )
    return reader


def shared_digests(digests: np.ndarray) -> np.ndarray:
    """Shape (N,) bool: the rows of ``digests`` (N,), dtype ``S<k>``, whose digest occurs
    more than once."""
    _, inv, counts = np.unique(digests, return_inverse=True, return_counts=True)
    return np.asarray(counts[inv.reshape(-1)] > 1, dtype=bool)


def digest_groups(digests: np.ndarray, rows: np.ndarray) -> list[list[int]]:
    """``rows`` (ascending) grouped by equal digest, each group in ascending order."""
    order = np.argsort(digests[rows], kind="stable")
    d = digests[rows][order]
    breaks = np.flatnonzero(d[1:] != d[:-1]) + 1
    return [g.tolist() for g in np.split(rows[order], breaks)]


def resolve_collisions(groups: Sequence[Sequence[int]], payloads: Mapping[int, bytes]) -> set[int]:
    """Rows (of digest groups, each in canonical order) that repeat an earlier payload of
    their group byte for byte: the ones exact dedup drops."""
    drop: set[int] = set()
    for members in groups:
        seen: set[bytes] = set()
        for i in members:
            p = payloads[i]
            if p in seen:
                drop.add(i)
            else:
                seen.add(p)
    return drop


@dataclass(frozen=True)
class ExactDedup:
    """``{"filter": "dedup"}``: drop windows whose values repeat an earlier window's.

    Parameters
    ----------
    digest_size : int
        Bytes of the SHA-256 digest kept (32).  A smaller size only makes
        collisions (resolved by full comparison) common; it exists to test them.
    """

    digest_size: int = 32

    #: sees only the segments earlier filter entries kept
    kept_only: ClassVar[bool] = True
    #: the parameters this filter takes
    parameters: ClassVar[Mapping[str, str]] = MappingProxyType({})

    def validate(self, params: Mapping[str, Any], features: Sequence[str]) -> None:
        if params:
            raise StrategyError(f"filter 'dedup' takes no parameters, got {sorted(params)}")

    def digests(self, segments: Sequence[Segment]) -> np.ndarray:
        """Digests of every window, shape (N,), dtype ``S<digest_size>``."""
        out = np.zeros(len(segments), dtype=f"S{self.digest_size}")
        for i, buf in _reader().windows(segments):
            out[i] = window_digest(buf, self.digest_size)
        return out

    def mask(self, segments: Sequence[Segment], params: Mapping[str, Any]) -> np.ndarray:
        n = len(segments)
        if n == 0:
            return np.ones(0, dtype=bool)
        digests = self.digests(segments)
        keep = np.ones(n, dtype=bool)
        rows = np.flatnonzero(shared_digests(digests))
        if rows.size:
            sub = [segments[i] for i in rows.tolist()]
            payloads = {int(rows[j]): window_payload(b) for j, b in _reader().windows(sub)}
            drop = resolve_collisions(digest_groups(digests, rows), payloads)
            keep[sorted(drop)] = False
        return keep

    def describe(self, params: Mapping[str, Any]) -> str:
        return "repeats the values of an earlier window (SHA-256, compared in full)"


def _standardized(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of ``x`` (N, F) standardized per column and scaled to unit length, with the
    mask (N,) of rows that have a direction (finite and non-zero)."""
    ok = np.isfinite(x).all(axis=1)
    z = np.zeros_like(x)
    if ok.any():
        good = x[ok]
        mu, sd = good.mean(axis=0), good.std(axis=0)
        sd = np.where(sd > 0, sd, 1.0)
        z[ok] = np.where(sd > 0, (good - mu) / sd, 0.0)
    norm = np.linalg.norm(z, axis=1)
    ok &= norm > 0
    z[ok] /= norm[ok, None]
    return z, ok


def near_duplicate_mask(x: np.ndarray, threshold: float, block: int = 2048) -> np.ndarray:
    """Greedy near-duplicate removal over the rows of ``x`` in order.

    Parameters
    ----------
    x : ndarray, shape (N, F), float64
        Feature vectors (not yet standardized).
    threshold : float
        Cosine distance below which a row duplicates an earlier kept row.
    block : int
        Rows compared at once (bounds the (block, kept) similarity matrix).

    Returns
    -------
    keep : ndarray, shape (N,), bool
    """
    z, ok = _standardized(np.asarray(x, dtype=np.float64))
    n = z.shape[0]
    keep = np.ones(n, dtype=bool)
    cut = 1.0 - float(threshold)
    kept = np.zeros((0, z.shape[1]))
    for b0 in range(0, n, block):
        rows = b0 + np.flatnonzero(ok[b0 : b0 + block])
        v = z[rows]
        if kept.shape[0] and rows.size:
            hit = (v @ kept.T > cut).any(axis=1)
            keep[rows[hit]] = False
            rows, v = rows[~hit], v[~hit]
        close = np.triu(v @ v.T > cut, 1)  # close[i, j]: j (later) is close to i
        alive = np.ones(rows.size, dtype=bool)
        for j in np.flatnonzero(close.any(axis=0)):
            if (close[:j, j] & alive[:j]).any():
                alive[j] = False
        keep[rows[~alive]] = False
        kept = np.vstack([kept, v[alive]])
    return keep


@dataclass(frozen=True)
class NearDedup:
    """Drop windows whose standardized features lie within cosine distance ``threshold``
    of an earlier kept window (approximate; see the module docs)."""

    #: sees only the segments earlier filter entries kept
    kept_only: ClassVar[bool] = True
    #: the parameters this filter takes
    parameters: ClassVar[Mapping[str, str]] = MappingProxyType(
        {
            "threshold": "cosine distance in (0, 2) below which windows are duplicates (required)",
            "features": "features compared (default: every feature, sorted by name)",
        }
    )

    def validate(self, params: Mapping[str, Any], features: Sequence[str]) -> None:
        extra = set(params) - {"threshold", "features"}
        if extra:
            raise StrategyError(
                f"filter 'near_dedup' takes threshold and features, not {sorted(extra)}"
            )
        t = params.get("threshold")
        if isinstance(t, bool) or not isinstance(t, int | float) or not 0.0 < t < 2.0:
            raise StrategyError(f"filter 'near_dedup' needs a threshold in (0, 2), got {t!r}")
        names = params.get("features")
        if names is not None and (
            not isinstance(names, list) or not names or not all(n in features for n in names)
        ):
            raise StrategyError(
                f"filter 'near_dedup' features must list defined features ({', '.join(features)})"
            )

    def mask(self, segments: Sequence[Segment], params: Mapping[str, Any]) -> np.ndarray:
        if not segments:
            return np.ones(0, dtype=bool)
        names = params.get("features") or sorted(segments[0].features)
        x = np.array(
            [[s.features.get(f, np.nan) for f in names] for s in segments], dtype=np.float64
        )
        return near_duplicate_mask(x.reshape(len(segments), len(names)), float(params["threshold"]))

    def describe(self, params: Mapping[str, Any]) -> str:
        return f"within cosine distance {params['threshold']} of an earlier window"


register_filter(
    "dedup",
    ExactDedup(),
    execution_traits={
        "scope": "pool",
        "shape": "filter",
        "fusion": "barrier",
        "passes": 2,
        "state": "pool",
    },
)
register_filter(
    "near_dedup",
    NearDedup(),
    execution_traits={"scope": "pool", "shape": "filter", "fusion": "barrier", "state": "pool"},
)
