"""Importance resampling toward a target sample of segments (``importance``).

The DSIR idea (Xie, Santurkar, Ma & Liang 2023, "Data Selection for Language
Models via Importance Resampling", NeurIPS 2023) applied to feature vectors
instead of hashed n-grams:

1. Featurise: each chosen feature is cut into ``bins`` equal-frequency bins
   fitted on the raw pool (the analogue of DSIR's hashed n-gram buckets).
2. Fit two bag-of-buckets models, one on the raw pool and one on the target
   sample, each a product of per-feature categorical distributions with
   add-``smoothing`` (Laplace) counts.
3. Importance weight ``w_i = p_target(x_i) / p_raw(x_i)``, so
   ``log w_i = sum_f log p_target(b_if) - log p_raw(b_if)``.
4. Resample without replacement proportionally to ``w`` with the Gumbel-top-k
   trick (Kool, van Hoof & Welling 2019, "Stochastic Beams and Where to Find
   Them", ICML): priority ``log w_i + g_i`` with ``g_i`` seeded standard
   Gumbel noise, so the top ``n`` is a weighted sample of ``n``.
   ``"gumbel": false`` ranks by ``log w`` alone (deterministic top-k).

The target sample is declared in ``params.target`` as one of::

    {"where": [filter entries]}          # pool segments passing these entries
    {"sources": "regex"}                 # pool segments whose source id matches
    {"values": [{"turn_p90": 0.9, "climb_std": 1800}, ...]}   # explicit feature rows

Each per-feature marginal of the target is fitted on the target's finite
values of that feature; a target with no finite value of some feature (or
no row at all) raises :class:`~kuration.errors.StrategyError` at selection
time rather than silently falling back to uniform weights.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np

from ...contracts.segment import Segment
from ...errors import StrategyError
from ..binning import feature_matrix, quantile_bins
from ..filters import apply_filters, normalize_filters
from .base import check_keys, feature_list, nan_rows, rank_nan_lowest

__all__ = ["ImportanceResampling", "importance_log_weights"]


def importance_log_weights(
    pool: np.ndarray,
    target: np.ndarray,
    n_bins: int = 8,
    smoothing: float = 1.0,
    names: Sequence[str] | None = None,
) -> np.ndarray:
    """``log p_target(x) - log p_raw(x)`` for every row of ``pool`` (see the module docs).

    Parameters
    ----------
    pool : ndarray, shape (N, F), float64, finite
    target : ndarray, shape (M, F), float64
        Non-finite entries are skipped feature by feature (each marginal is
        fitted on the target's finite values of that feature).
    n_bins : int
        Equal-frequency bins per feature, fitted on ``pool``.
    smoothing : float
        Add-``smoothing`` pseudo-count per bin.
    names : sequence of str, optional
        Feature names, for error messages.

    Returns
    -------
    ndarray, shape (N,), float64

    Raises
    ------
    StrategyError
        If the target has no finite value of some feature.
    """
    n, f = pool.shape
    logw = np.zeros(n)
    for j in range(f):
        tj = target[:, j][np.isfinite(target[:, j])]
        if tj.size == 0:
            name = names[j] if names is not None else f"column {j}"
            raise StrategyError(f"importance target sample has no finite {name!r} value")
        cp, edges = quantile_bins(pool[:, j], n_bins)
        b = len(edges) + 1
        ct = np.searchsorted(edges, tj, side="left")
        p_raw = (np.bincount(cp, minlength=b) + smoothing) / (n + smoothing * b)
        p_tgt = (np.bincount(ct, minlength=b) + smoothing) / (tj.size + smoothing * b)
        logw += np.log(p_tgt[cp]) - np.log(p_raw[cp])
    return logw


@dataclass(frozen=True)
class ImportanceResampling:
    """DSIR-style importance resampling toward a target sample (see the module docs).

    ``params``: ``target`` (required), ``features`` (default the bin axes, else
    every feature), ``bins`` (8), ``smoothing`` (1.0), ``gumbel`` (true).
    """

    #: the parameters this method takes (validate() accepts exactly these keys)
    parameters: ClassVar[Mapping[str, str]] = MappingProxyType(
        {
            "target": "the target sample to resample toward (required)",
            "features": "feature names (default: the bin axes, else every feature)",
            "bins": "histogram bins per feature (8)",
            "smoothing": "additive smoothing of the histograms (1.0)",
            "gumbel": "true (default): Gumbel-top-k sampling, false: deterministic ranking",
        }
    )

    def validate(
        self, params: Mapping[str, Any], features: Sequence[str], axes: Sequence[str]
    ) -> None:
        check_keys(params, set(self.parameters), "importance")
        feature_list(params, features, axes, "importance")
        names = params.get("features") or (list(axes) if axes else list(features))
        t = params.get("target")
        if not isinstance(t, Mapping) or len(t) != 1:
            raise StrategyError(
                "importance needs 'target': {'where': [...]}, {'sources': regex} or "
                "{'values': [{feature: value}, ...]}"
            )
        if "where" in t:
            if not t["where"]:
                raise StrategyError("importance target 'where' must not be empty")
            normalize_filters(t["where"], features, where="params.target.where")
        elif "sources" in t:
            try:
                re.compile(str(t["sources"]))
            except re.error as exc:
                raise StrategyError(f"importance target regex: {exc}") from None
        elif "values" in t:
            rows = t["values"]
            if not isinstance(rows, list) or not rows:
                raise StrategyError("importance target 'values' must be a non-empty list")
            for r in rows:
                if not isinstance(r, Mapping) or set(r) != set(names):
                    raise StrategyError(
                        f"each importance target row must give exactly {sorted(names)}"
                    )
                if not all(
                    isinstance(v, int | float) and not isinstance(v, bool) for v in r.values()
                ):
                    raise StrategyError("importance target values must be numbers")
        else:
            raise StrategyError("importance target is one of 'where', 'sources' or 'values'")
        b = params.get("bins", 8)
        if not isinstance(b, int) or isinstance(b, bool) or not 1 <= b <= 1024:
            raise StrategyError("importance 'bins' must be an integer in 1..1024")
        s = params.get("smoothing", 1.0)
        if (
            not isinstance(s, int | float)
            or isinstance(s, bool)
            or not (math.isfinite(s) and s > 0)
        ):
            raise StrategyError("importance 'smoothing' must be a positive number")
        if not isinstance(params.get("gumbel", True), bool):
            raise StrategyError("importance 'gumbel' must be true or false")

    def resolve(
        self, params: Mapping[str, Any], features: Sequence[str], axes: Sequence[str]
    ) -> dict[str, Any]:
        """``params`` with the default ``features`` written out."""
        return {**params, "features": feature_list(params, features, axes, "importance")}

    def target_rows(
        self, segments: Sequence[Segment], params: Mapping[str, Any], names: Sequence[str]
    ) -> np.ndarray:
        """The target sample as an array (M, F) (may hold NaN)."""
        t = params["target"]
        if "values" in t:
            tgt = np.array([[float(r[n]) for n in names] for r in t["values"]], dtype=np.float64)
        else:
            if "where" in t:
                entries = [e if "filter" in e else {"filter": "predicate", **e} for e in t["where"]]
                keep, _ = apply_filters(segments, entries)
            else:
                rx = re.compile(str(t["sources"]))
                keep = np.array([rx.search(s.source_id) is not None for s in segments], dtype=bool)
            tgt = feature_matrix([s for s, k in zip(segments, keep, strict=True) if k], names)
        if tgt.shape[0] == 0:
            raise StrategyError("importance target sample is empty (no segment matched)")
        return tgt

    def priorities(
        self, segments: Sequence[Segment], params: Mapping[str, Any], seed: int, nan_policy: str
    ) -> np.ndarray:
        n = len(segments)
        names = params.get("features") or (list(segments[0].features) if segments else [])
        raw = feature_matrix(segments, names)
        bad = nan_rows(raw)
        prio = np.zeros(n)
        rows = np.flatnonzero(~bad)
        if rows.size:
            tgt = self.target_rows(segments, params, names)
            logw = importance_log_weights(
                raw[rows],
                tgt,
                int(params.get("bins", 8)),
                float(params.get("smoothing", 1.0)),
                names,
            )
            if params.get("gumbel", True):
                logw = logw + np.random.default_rng(seed).gumbel(size=rows.size)
            prio[rows] = logw
        return rank_nan_lowest(prio, bad, nan_policy)
