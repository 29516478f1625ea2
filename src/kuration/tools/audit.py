"""Statistics for curation reports: distribution shift, duration bias and coverage.

* :func:`distribution_shift` -- how a selection's distribution of one feature
  differs from the pool's: the two-sample Kolmogorov-Smirnov statistic
  ``D = sup_x |F_sel(x) - F_pool(x)|`` (the statistic of
  ``scipy.stats.ks_2samp``) and the 1-Wasserstein distance
  (``scipy.stats.wasserstein_distance``), also divided by the pool's
  standard deviation so axes of different units compare.
* :func:`duration_correlations` -- Spearman's rank correlation
  (``scipy.stats.spearmanr``) of every feature with segment duration and
  with source duration: a feature strongly tied to duration biases a
  selection toward long windows or long sources.  A constant input has no
  rank correlation: the value is None with a note, not NaN.
* :func:`span_length_audit` -- the same rank correlation for an hours fill's
  candidate spans: priority and each aggregated feature against the span's
  length, and the admitted spans' lengths against the pool's (heuristic scores
  often measure length; a strong correlation says the ranking does).
* :func:`coverage_metrics` -- over z-scored axes, the covering radius
  (the k-center objective: farthest pool point from its nearest selected
  one), the mean nearest-selected distance (the k-median / facility
  location cost per point) and the share of occupied joint quantile cells
  the selection reaches.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..contracts.segment import Segment
from ..selection.binning import quantile_bins

__all__ = [
    "coverage_metrics",
    "distribution_shift",
    "duration_correlations",
    "ks_statistic",
    "span_length_audit",
]


def ks_statistic(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sample Kolmogorov-Smirnov statistic of finite samples ``a`` and ``b`` (NaN if one is empty)."""
    a = np.sort(np.asarray(a, dtype=np.float64))
    b = np.sort(np.asarray(b, dtype=np.float64))
    if a.size == 0 or b.size == 0:
        return math.nan
    z = np.concatenate([a, b])
    fa = np.searchsorted(a, z, side="right") / a.size
    fb = np.searchsorted(b, z, side="right") / b.size
    return float(np.abs(fa - fb).max())


def _num(v: float) -> float | None:
    return float(v) if math.isfinite(v) else None


def distribution_shift(pool: np.ndarray, selected: np.ndarray) -> dict[str, Any]:
    """Shift of ``selected`` against ``pool`` (1-D arrays; non-finite values are ignored).

    Returns
    -------
    dict
        ``pool_n``, ``selected_n``, ``pool_mean``, ``selected_mean``, ``ks``,
        ``wasserstein`` and ``wasserstein_std`` (None where undefined).
    """
    from scipy.stats import wasserstein_distance

    p = np.asarray(pool, dtype=np.float64)
    s = np.asarray(selected, dtype=np.float64)
    p, s = p[np.isfinite(p)], s[np.isfinite(s)]
    out: dict[str, Any] = {
        "pool_n": int(p.size),
        "selected_n": int(s.size),
        "pool_mean": _num(p.mean()) if p.size else None,
        "selected_mean": _num(s.mean()) if s.size else None,
        "ks": None,
        "wasserstein": None,
        "wasserstein_std": None,
    }
    if p.size and s.size:
        out["ks"] = ks_statistic(s, p)
        w = float(wasserstein_distance(s, p))
        out["wasserstein"] = w
        sd = float(p.std())
        out["wasserstein_std"] = w / sd if sd > 0 else (0.0 if w == 0 else None)
    return out


def _spearman(x: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    from scipy.stats import spearmanr

    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if x.size < 3:
        return {"rho": None, "p": None, "n": int(x.size), "note": "fewer than 3 finite pairs"}
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        which = "duration" if np.ptp(y) == 0 else "feature"
        return {"rho": None, "p": None, "n": int(x.size), "note": f"constant {which}"}
    res = spearmanr(x, y)
    return {"rho": _num(float(res.statistic)), "p": _num(float(res.pvalue)), "n": int(x.size)}


def duration_correlations(
    segments: Sequence[Segment],
    features: Sequence[str],
    source_steps: Mapping[str, int],
) -> dict[str, dict[str, Any]]:
    """Spearman correlation of each feature with segment and source duration (in ticks; a rank
    correlation does not depend on the unit).

    Returns
    -------
    dict
        ``{feature: {"segment_duration": {...}, "source_duration": {...}}}`` with
        ``rho``, ``p``, ``n`` and a ``note`` when undefined.
    """
    seg_d = np.array([s.n_steps for s in segments], dtype=np.float64)
    src_d = np.array([source_steps.get(s.source_id, math.nan) for s in segments], dtype=np.float64)
    out: dict[str, dict[str, Any]] = {}
    for f in features:
        x = np.array([s.features.get(f, math.nan) for s in segments], dtype=np.float64)
        out[f] = {
            "segment_duration": _spearman(x, seg_d),
            "source_duration": _spearman(x, src_d),
        }
    return out


def coverage_metrics(
    pool: np.ndarray, selected_rows: Sequence[int], n_bins: int = 4
) -> dict[str, Any]:
    """Coverage of the pool ``pool`` (N, A) by the rows ``selected_rows`` (see the module docs).

    Rows with a non-finite axis are left out of every figure.
    """
    x = np.asarray(pool, dtype=np.float64)
    ok = np.isfinite(x).all(axis=1)
    sel = np.zeros(x.shape[0], dtype=bool)
    sel[np.asarray(selected_rows, dtype=np.int64)] = True
    xs = x[ok]
    sel = sel[ok]
    out: dict[str, Any] = {"radius": None, "mean_nn": None, "cells_covered": None}
    if xs.shape[0] == 0:
        return out
    sd = xs.std(axis=0)
    z = (xs - xs.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    coords = np.column_stack([quantile_bins(z[:, j], n_bins)[0] for j in range(z.shape[1])])
    cells = {tuple(r) for r in coords.tolist()}
    hit = {tuple(r) for r in coords[sel].tolist()}
    out["cells_covered"] = len(hit) / len(cells)
    out["cells"] = len(cells)
    if sel.any():
        c = z[sel]
        d = np.full(z.shape[0], np.inf)
        for b0 in range(0, c.shape[0], 128):
            blk = c[b0 : b0 + 128]
            dd = np.sqrt(np.maximum(np.square(z[:, None, :] - blk[None, :, :]).sum(-1), 0.0))
            d = np.minimum(d, dd.min(axis=1))
        out["radius"] = float(d.max())
        out["mean_nn"] = float(d.mean())
    return out


def span_length_audit(
    lengths_s: np.ndarray,
    priority: np.ndarray,
    features: Mapping[str, np.ndarray],
    admitted: np.ndarray,
) -> dict[str, Any]:
    """Whether an hours ranking measures span length (one split's pool of candidates).

    Parameters
    ----------
    lengths_s : ndarray, shape (n,), float64
        Each candidate's length in seconds (what its budget counted).
    priority : ndarray, shape (n,), float64
        Its aggregated priority (``-inf`` where none: left out of the correlations).
    features : mapping of str to ndarray, shape (n,)
        Its aggregated features.
    admitted : ndarray, shape (n,), bool

    Returns
    -------
    dict
        ``priority`` and ``features[name]``: Spearman's rho of the value with the length
        (``rho``, ``p``, ``n``, a ``note`` when undefined); ``admitted`` and ``pool``: the
        count, mean and median length in seconds of the admitted candidates and of all.
    """
    lengths_s = np.asarray(lengths_s, dtype=np.float64)
    admitted = np.asarray(admitted, dtype=bool)

    def lengths(x: np.ndarray) -> dict[str, Any]:
        if x.size == 0:
            return {"n": 0, "mean_s": None, "median_s": None}
        return {"n": int(x.size), "mean_s": float(x.mean()), "median_s": float(np.median(x))}

    return {
        "priority": _spearman(np.asarray(priority, dtype=np.float64), lengths_s),
        "features": {
            f: _spearman(np.asarray(v, dtype=np.float64), lengths_s) for f, v in features.items()
        },
        "admitted": lengths(lengths_s[admitted]),
        "pool": lengths(lengths_s),
    }
