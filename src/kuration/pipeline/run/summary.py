"""Feature distributions of the scored pool against what was admitted (for reports and diffs)."""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...contracts.segment import Segment
from ...core.ids import tag_entity_id
from ...selection.fill import FillResult

__all__ = ["bin_edges", "feature_distributions", "ranking_examples"]


def bin_edges(lo: float, hi: float, bins: int) -> np.ndarray:
    """``bins + 1`` equal-width edges from ``lo`` to ``hi`` (``numpy.histogram_bin_edges``).

    A range too narrow for ``bins`` distinct floats -- values that differ only by
    rounding, such as the standard deviation of equal ramps -- makes numpy raise
    ``Too many bins for data range``.  Such values are one value: they get bins of
    width ``max(1 / bins, 4 * bins * ulp)`` placed so that ``[lo, hi]`` sits in the
    middle of bin ``bins // 2``, the way numpy spreads one repeated value over a
    unit range.

    Returns
    -------
    numpy.ndarray
        float64, shape ``(bins + 1,)``, strictly increasing, ``edges[0] <= lo`` and
        ``hi <= edges[-1]``.
    """
    try:
        return np.histogram_bin_edges(np.array([lo, hi], dtype=np.float64), bins=bins)
    except ValueError:
        ulp = float(np.spacing(max(abs(lo), abs(hi))))
        width = max(1.0 / bins, 4.0 * bins * ulp)
        return float(lo) + (np.arange(bins + 1) - bins // 2 - 0.5) * width


def feature_distributions(
    segments: Sequence[Segment], fill: FillResult, features: Sequence[str], bins: int = 24
) -> dict[str, Any]:
    """Histograms per feature: every pooled segment vs the segments overlapping an admitted span.

    Returns
    -------
    dict
        ``{feature: {"edges": [...], "pool": [...], "selected": [...]}}``; edges are equal-width
        over the pool's finite values (:func:`bin_edges`), features without finite values are
        left out.
    """
    track = any(s.entity is not None for s in segments)  # a span owns its entity's windows
    spans: dict[tuple[str, str | None], list[tuple[int, int]]] = {}
    for taken in fill.admitted.values():
        for c in taken:
            ent = tag_entity_id(c.entity_id) if track else None
            spans.setdefault((c.source_id, ent), []).append((c.first, c.last))
    selected = _overlapping(segments, spans)
    feats = [s.features for s in segments]
    out: dict[str, Any] = {}
    for name in features:
        vals = np.fromiter((f.get(name, np.nan) for f in feats), np.float64, len(feats))
        ok = np.isfinite(vals)
        if not ok.any():
            continue
        edges = bin_edges(vals[ok].min(), vals[ok].max(), bins)
        pool, _ = np.histogram(vals[ok], bins=edges)
        sel, _ = np.histogram(vals[ok & selected], bins=edges)
        out[name] = {
            "edges": [float(e) for e in edges],
            "pool": pool.tolist(),
            "selected": sel.tolist(),
        }
    return out


def _overlapping(
    segments: Sequence[Segment], spans: dict[tuple[str, str | None], list[tuple[int, int]]]
) -> np.ndarray:
    """Per segment, whether it overlaps one of its (source, entity)'s admitted ``spans``
    (``[first, last]`` steps): shape (N,), bool."""
    n = len(segments)
    selected = np.zeros(n, dtype=bool)
    if not spans:
        return selected
    keys = list(spans)
    group = {key: g for g, key in enumerate(keys)}
    gid = np.fromiter((group.get((s.source_id, s.entity), -1) for s in segments), np.int64, n)
    rows = np.flatnonzero(gid >= 0)
    rows = rows[np.argsort(gid[rows], kind="stable")]
    lo = np.fromiter((segments[i].start_idx for i in rows.tolist()), np.int64, rows.size)
    hi = np.fromiter((segments[i].end_idx for i in rows.tolist()), np.int64, rows.size)
    cut = np.flatnonzero(np.diff(gid[rows])) + 1
    for ix, a, b in zip(np.split(rows, cut), np.split(lo, cut), np.split(hi, cut), strict=True):
        if ix.size == 0:
            continue
        first, last = np.array(spans[keys[int(gid[ix[0]])]]).T
        selected[ix] = ((a[:, None] <= last[None]) & (b[:, None] > first[None])).any(axis=1)
    return selected


def ranking_examples(
    segments: Sequence[Segment], features: Sequence[str], k: int = 3
) -> dict[str, list[dict[str, Any]]]:
    """The ``k`` highest- and ``k`` lowest-ranked windows (finite priority), for reports.

    Returns
    -------
    dict
        ``{"top": [...], "bottom": [...]}``, each window ``source_id``, ``start_idx``,
        ``end_idx`` (steps of the source's grid), ``priority`` and ``features`` (the named
        ones, finite values only); ``top`` in falling, ``bottom`` in rising priority,
        ties broken by the canonical key (source, entity for a track window, start); a
        track window also names its ``entity`` (tagged id).
    """
    # the k first and k last of the finite windows ranked by (-priority, key): keys are
    # unique, so nsmallest/nlargest give what a full sort's ends would, in O(N)
    finite = [s for s in segments if math.isfinite(s.priority)]
    n = min(k, len(finite) // 2)
    top = heapq.nsmallest(n, finite, key=_rank_key)
    bottom = heapq.nlargest(n, finite, key=_rank_key)

    def row(s: Segment) -> dict[str, Any]:
        feats = {
            n: float(s.features[n]) for n in features if np.isfinite(s.features.get(n, np.nan))
        }
        return {
            "source_id": s.source_id,
            "start_idx": int(s.start_idx),
            "end_idx": int(s.end_idx),
            "priority": float(s.priority),
            "features": feats,
            **({} if s.entity is None else {"entity": s.entity}),
        }

    return {"top": [row(s) for s in top], "bottom": [row(s) for s in bottom]}


def _rank_key(s: Segment) -> tuple[float, tuple[Any, ...]]:
    return (-s.priority, s.key)
