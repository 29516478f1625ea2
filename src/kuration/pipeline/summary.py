"""Feature distributions of the scored pool against what was admitted (for reports and diffs)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..contracts.segment import Segment
from ..selection.fill import FillResult

__all__ = ["feature_distributions"]


def feature_distributions(
    segments: Sequence[Segment], fill: FillResult, features: Sequence[str], bins: int = 24
) -> dict[str, Any]:
    """Histograms per feature: every pooled segment vs the segments overlapping an admitted span.

    Returns
    -------
    dict
        ``{feature: {"edges": [...], "pool": [...], "selected": [...]}}``; edges are equal-width
        over the pool's finite values (``numpy.histogram_bin_edges``), features without finite
        values are left out.
    """
    spans: dict[str, list[tuple[int, int]]] = {}
    for taken in fill.admitted.values():
        for c in taken:
            spans.setdefault(c.source_id, []).append((c.first, c.last))
    selected = np.zeros(len(segments), dtype=bool)
    by_source: dict[str, list[int]] = {}
    for i, s in enumerate(segments):
        by_source.setdefault(s.source_id, []).append(i)
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
        edges = np.histogram_bin_edges(vals[ok], bins=bins)
        pool, _ = np.histogram(vals[ok], bins=edges)
        sel, _ = np.histogram(vals[ok & selected], bins=edges)
        out[name] = {
            "edges": [float(e) for e in edges],
            "pool": pool.tolist(),
            "selected": sel.tolist(),
        }
    return out
