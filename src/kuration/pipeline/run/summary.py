"""Feature distributions of the scored pool against what was admitted (for reports and diffs)."""

from __future__ import annotations

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
    selected = np.zeros(len(segments), dtype=bool)
    by_source: dict[tuple[str, str | None], list[int]] = {}
    for i, s in enumerate(segments):
        by_source.setdefault((s.source_id, s.entity), []).append(i)
    for sid, idx in by_source.items():
        if sid not in spans:
            continue
        ix = np.asarray(idx)
        lo = np.array([segments[i].start_idx for i in idx])[:, None]
        hi = np.array([segments[i].end_idx for i in idx])[:, None]
        first, last = np.array(spans[sid]).T
        selected[ix] = ((lo <= last[None]) & (hi > first[None])).any(axis=1)
    out: dict[str, Any] = {}
    for name in features:
        vals = np.array([s.features.get(name, np.nan) for s in segments], dtype=np.float64)
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
    ranked = sorted(
        (s for s in segments if np.isfinite(s.priority)),
        key=lambda s: (-s.priority, s.key),
    )

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

    n = min(k, len(ranked) // 2)
    return {"top": [row(s) for s in ranked[:n]], "bottom": [row(s) for s in ranked[::-1][:n]]}
