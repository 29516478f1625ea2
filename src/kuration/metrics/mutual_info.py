"""k-nearest-neighbour mutual information (KSG) and the ``mutual_information`` scorer.

The estimator is Kraskov, Stögbauer & Grassberger (2004), "Estimating mutual
information", Phys. Rev. E 69, 066138, estimator 1 (their eq. 8)::

    I(X; Y) = psi(k) + psi(N) - < psi(n_x + 1) + psi(n_y + 1) >

where, for sample ``i``, ``eps_i`` is the max-norm distance to its ``k``-th
neighbour in the joint space ``(x, y)`` and ``n_x`` (``n_y``) counts the other
samples strictly closer than ``eps_i`` in the ``x`` (``y``) marginal.  The
neighbour searches are scikit-learn :class:`~sklearn.neighbors.KDTree`
queries under the Chebyshev metric; ``psi`` is :func:`scipy.special.digamma`.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..contracts.buffer import WindowBuffer
from ..contracts.schema import SchemaSpec
from ..contracts.segment import Segment
from ..errors import ScorerError
from .scorers import ScorerContext, SegmentScorer, register_scorer, sklearn_neighbors

__all__ = ["MutualInformationScorer", "ksg_mutual_information"]


def ksg_mutual_information(x: np.ndarray, y: np.ndarray, k: int = 3) -> float:
    """KSG estimator 1 of the mutual information between ``x`` and ``y``, in nats.

    Parameters
    ----------
    x : ndarray, shape (N,) or (N, Dx), float64
    y : ndarray, shape (N,) or (N, Dy), float64
        Paired samples, finite, without exact duplicates (add a tiny jitter
        to discrete or quantized data; the counts use strict inequality).
    k : int
        Neighbours in the joint space (``1 <= k < N``); 3 is the usual choice.

    Returns
    -------
    float
        The estimate, nats.  It is not clipped: independent samples give
        values scattered around 0, slightly negative ones included.

    Raises
    ------
    ValueError
        Mismatched lengths, non-finite samples or ``k`` out of range.

    Notes
    -----
    Kraskov, Stögbauer & Grassberger (2004), Phys. Rev. E 69, 066138, eq. 8.
    For correlated Gaussians with correlation ``rho`` the true value is
    ``-0.5 * log(1 - rho**2)``.
    """
    from scipy.special import digamma

    kdtree = sklearn_neighbors().KDTree

    xs = np.asarray(x, dtype=np.float64).reshape(len(x), -1)
    ys = np.asarray(y, dtype=np.float64).reshape(len(y), -1)
    n = xs.shape[0]
    if ys.shape[0] != n:
        raise ValueError(f"x and y hold {n} and {ys.shape[0]} samples")
    if not (np.isfinite(xs).all() and np.isfinite(ys).all()):
        raise ValueError("x and y must be finite")
    if not 1 <= k < n:
        raise ValueError(f"k must be in [1, N) = [1, {n}), got {k}")
    joint = np.hstack([xs, ys])
    dist, _ = kdtree(joint, metric="chebyshev").query(joint, k=k + 1)  # self is the 0th
    radius = np.nextafter(dist[:, -1], 0)  # strictly closer than eps_i
    nx = kdtree(xs, metric="chebyshev").query_radius(xs, radius, count_only=True) - 1
    ny = kdtree(ys, metric="chebyshev").query_radius(ys, radius, count_only=True) - 1
    return float(digamma(k) + digamma(n) - np.mean(digamma(nx + 1) + digamma(ny + 1)))


_ACTIONS = ("value", "next_velocity")


class MutualInformationScorer(SegmentScorer):
    """Observation -> action mutual information per segment (KSG estimator 1).

    Samples are every (tick, entity) of a segment where both the observation
    and the action are finite, pooled over the segment's entities (the
    ``reference`` entity excluded):

    * observation: field ``obs`` of the entity, minus the same field of the
      ``reference`` entity at that tick when one is given (for football: a
      player's position relative to the ball);
    * action: field ``action`` of the entity (``action_as="value"``), or its
      next-step velocity ``(a[t + 1] - a[t]) * sample_hz`` (``"next_velocity"``).

    Each variable is standardized per segment and a seeded jitter of 1e-10
    standard deviations (seeded by the segment id, so a value depends on the
    segment alone) breaks ties from stationary entities.  A segment with fewer
    than ``min_samples`` samples gets NaN.

    Parameters
    ----------
    obs, action : str
        Per-entity numeric fields.
    reference : str, optional
        Entity id the observation is taken relative to.
    action_as : {"value", "next_velocity"}
    k : int
        KSG neighbours (default 3).
    min_samples : int
        Fewest samples for a value (default 20).
    """

    needs_buffers = True

    def __init__(
        self,
        obs: str,
        action: str,
        reference: str | None = None,
        action_as: str = "value",
        k: int = 3,
        min_samples: int = 20,
    ) -> None:
        self.obs, self.action, self.reference = obs, action, reference
        self.action_as, self.k, self.min_samples = action_as, int(k), int(min_samples)

    @staticmethod
    def check(params: Mapping[str, Any], schema: SchemaSpec, features: Sequence[str]) -> None:
        name = "mutual_information"
        extra = sorted(
            set(params) - {"obs", "action", "reference", "action_as", "k", "min_samples"}
        )
        if extra:
            raise ScorerError(f"unknown params {extra}", scorer=name)
        numeric = {f.name for f in schema.fields if f.kind != "categorical"}
        for key in ("obs", "action"):
            if params.get(key) not in numeric:
                raise ScorerError(
                    f"params.{key} must name a numeric per-entity field "
                    f"({', '.join(sorted(numeric))}), got {params.get(key)!r}",
                    scorer=name,
                )
        if params.get("action_as", "value") not in _ACTIONS:
            raise ScorerError(f"params.action_as must be one of {_ACTIONS}", scorer=name)
        for key, low in (("k", 1), ("min_samples", 2)):
            v = params.get(key, low)
            if not isinstance(v, int) or isinstance(v, bool) or v < low:
                raise ScorerError(
                    f"params.{key} must be an integer >= {low}, got {v!r}", scorer=name
                )
        if params.get("min_samples", 20) <= params.get("k", 3):
            raise ScorerError("params.min_samples must exceed params.k", scorer=name)

    def samples(self, buf: WindowBuffer) -> tuple[np.ndarray, np.ndarray]:
        """The ``(obs, action)`` samples of one window: (N, Do) and (N, Da) float64."""
        obs = np.asarray(buf.values[self.obs], dtype=np.float64)  # (T, E, D)
        act = np.asarray(buf.values[self.action], dtype=np.float64)
        keep = np.ones(len(buf.entity_ids), dtype=bool)
        if self.reference is not None:
            ids = [str(e) for e in buf.entity_ids]
            if self.reference not in ids:
                return np.zeros((0, obs.shape[2])), np.zeros((0, act.shape[2]))
            r = ids.index(self.reference)
            obs = obs - obs[:, r : r + 1]
            keep[r] = False
        if self.action_as == "next_velocity":
            nxt = np.full_like(act, np.nan)
            nxt[:-1] = (act[1:] - act[:-1]) * buf.sample_hz
            act = nxt
        o, a = obs[:, keep].reshape(-1, obs.shape[2]), act[:, keep].reshape(-1, act.shape[2])
        ok = np.isfinite(o).all(axis=1) & np.isfinite(a).all(axis=1)
        return o[ok], a[ok]

    def value(self, buf: WindowBuffer, segment_id: str) -> float:
        """The estimate for one window (NaN below ``min_samples``)."""
        o, a = self.samples(buf)
        if o.shape[0] < self.min_samples:
            return float("nan")
        rng = np.random.default_rng(zlib.crc32(segment_id.encode()))
        parts = []
        for v in (o, a):
            sd = v.std(axis=0)
            sd[sd == 0] = 1.0
            z = (v - v.mean(axis=0)) / sd
            parts.append(z + 1e-10 * rng.standard_normal(z.shape))
        return ksg_mutual_information(parts[0], parts[1], self.k)

    def score(self, segments: Sequence[Segment], ctx: ScorerContext) -> np.ndarray:
        if ctx.buffers is None:
            raise ScorerError("needs the segments' buffers (needs_buffers=True)", scorer=ctx.name)
        return np.array(
            [self.value(b, sid) for b, sid in zip(ctx.buffers, ctx.segment_ids, strict=True)]
        )


register_scorer(
    "mutual_information",
    MutualInformationScorer,
    needs_buffers=True,
    check=MutualInformationScorer.check,
)
