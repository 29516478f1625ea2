"""What the constrained ORACLE's span sets chosen on two halves of the test entities share.

A diagnostic of the by-entity cross-fit (:mod:`evidence_ceiling`): for each halving, the
set chosen on half A and the set chosen on half B at one size are compared with each other
and with the random arm's sets of that size:

* *overlap*: Jaccard index of the two sets' spans, and of their usable seconds
  (``|A & B| / |A | B|`` with each span weighted by its usable ticks), beside the same
  between two random sets (seeds ``s`` and ``s + 1``);
* *late*: the share of a set's usable ticks in spans whose middle lies in the pool's last
  quarter of time (sources in time order, each its own tick count);
* *own half*: the share of a set's usable ticks in spans of the choosing half's entities
  (for random sets, of either half's entities, averaged);
* *tail content*: the share of the set's pool windows past the whole test tail's top-decile
  thresholds, and the mean of each tail metric over those windows.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import evidence_arms as ea
import evidence_data as ed
import numpy as np


def span_times(pool: ea.Pool) -> np.ndarray:
    """(S,) float in [0, 1): each span's middle tick as a position in the pool's time.

    The pool's sources are consecutive slices of the recording, in ``loaded.pool_uris``
    order; each counts for its own number of ticks.
    """
    tabs = [pool.loaded.tables[u] for u in pool.loaded.pool_uris]
    lengths = np.array([tab.present.shape[0] for tab in tabs], float)
    offsets = np.concatenate([[0.0], np.cumsum(lengths)[:-1]])
    start = dict(zip([tab.source_id for tab in tabs], offsets.tolist(), strict=True))
    t = pool.table
    offs = np.array([start[t.source_ids[s]] for s in t.source.tolist()])
    mid = 0.5 * (t.first.astype(float) + t.last.astype(float))
    return np.asarray((offs + mid) / lengths.sum())


def span_entities(pool: ea.Pool) -> np.ndarray:
    """(S,) object: each span's entity id, as a string."""
    t = pool.table
    return np.array(
        [
            str(t.entity_ids[s][e])
            for s, e in zip(t.source.tolist(), t.entity.tolist(), strict=True)
        ],
        dtype=object,
    )


def jaccard(a: np.ndarray, b: np.ndarray, weight: np.ndarray | None = None) -> float:
    """Jaccard index of two sets of span rows, each span weighted by ``weight`` (default 1)."""
    w = np.ones(int(max(a.max(initial=0), b.max(initial=0))) + 1) if weight is None else weight
    sa, sb = set(a.tolist()), set(b.tolist())
    union = float(w[sorted(sa | sb)].sum())
    return float(w[sorted(sa & sb)].sum()) / union if union else 0.0


def _share(usable: np.ndarray, spans: np.ndarray, hit: np.ndarray) -> float:
    """Share of ``spans``' usable ticks in spans where ``hit`` ((S,) bool) holds."""
    tot = float(usable[spans].sum())
    return float(usable[spans][hit[spans]].sum()) / tot if tot else 0.0


def _content(pool: ea.Pool, spans: np.ndarray, thresholds: dict[str, float]) -> dict[str, float]:
    """Tail content of a set's pool windows: share past any threshold, each metric's mean."""
    w = pool.windows
    keep = ea.window_mask(pool, spans)
    hit = np.zeros(int(keep.sum()), bool)
    out = {}
    for k, thr in thresholds.items():
        v = np.nan_to_num(w.metrics[k][keep], nan=-np.inf)
        hit |= v >= thr
        out[f"mean {k}"] = float(np.nanmean(w.metrics[k][keep]))
    out["past"] = float(hit.mean()) if hit.size else float("nan")
    return out


def overlap(
    pool: ea.Pool,
    test: ed.Windows,
    halvings: Sequence[np.ndarray],
    sets: dict[str, list[np.ndarray]],
    budgets: Sequence[float],
    seeds: int,
    tail_metrics: Sequence[str],
) -> list[dict[str, float]]:
    """Per size, the by-entity choices' overlap, timing, entities and tail content.

    ``halvings`` are :func:`evidence_ceiling.entity_halvings`' masks (half A over the test
    windows) and ``sets`` holds ``entity i A>B`` / ``entity i B>A`` span rows per size (the
    :func:`evidence_ceiling.ceiling` keys).  Keys of each record: ``jac``, ``jac_usable``
    (mean over halvings of the A and B choices' Jaccard), ``rand_jac``,
    ``rand_jac_usable`` (random seeds ``s``, ``s + 1``), ``late``, ``rand_late``,
    ``pool_late`` (the pool's own share), ``own``, ``rand_own``, ``past``, ``rand_past``
    and ``mean <metric>`` / ``rand_mean <metric>`` per tail metric, ``choices``.
    """
    late = span_times(pool) >= 0.75
    ents = span_entities(pool)
    u = pool.usable
    thresholds = {k: float(np.nanquantile(test.metrics[k], 0.9)) for k in tail_metrics}
    a_ids = [set(test.entity[a].astype(str).tolist()) for a in halvings]
    b_ids = [set(test.entity[~a].astype(str).tolist()) for a in halvings]
    in_a = [np.isin(ents, sorted(x)) for x in a_ids]
    in_b = [np.isin(ents, sorted(x)) for x in b_ids]
    out = []
    for j, b in enumerate(budgets):
        rand = [ea.select(pool, ea.Arm("random", None), s, b) for s in range(seeds)]
        chosen: list[tuple[np.ndarray, np.ndarray]] = []  # (spans, the choosing half's rows)
        jac, jac_u = [], []
        for i in range(len(halvings)):
            sa, sb = sets[f"entity {i} A>B"][j], sets[f"entity {i} B>A"][j]
            jac.append(jaccard(sa, sb))
            jac_u.append(jaccard(sa, sb, u))
            chosen += [(sa, in_a[i]), (sb, in_b[i])]
        pairs = list(itertools.pairwise(rand))
        rec = {
            "choices": float(len(chosen)),
            "jac": float(np.mean(jac)),
            "jac_usable": float(np.mean(jac_u)),
            "rand_jac": float(np.mean([jaccard(x, y) for x, y in pairs])),
            "rand_jac_usable": float(np.mean([jaccard(x, y, u) for x, y in pairs])),
            "late": float(np.mean([_share(u, s, late) for s, _ in chosen])),
            "rand_late": float(np.mean([_share(u, s, late) for s in rand])),
            "pool_late": _share(u, np.arange(len(u)), late),
            "own": float(np.mean([_share(u, s, own) for s, own in chosen])),
            "rand_own": float(np.mean([_share(u, s, h) for s in rand for h in (*in_a, *in_b)])),
        }
        got = [_content(pool, s, thresholds) for s, _ in chosen]
        ref = [_content(pool, s, thresholds) for s in rand]
        for k in got[0]:
            rec[k] = float(np.mean([g[k] for g in got]))
            rec[f"rand_{k}"] = float(np.mean([g[k] for g in ref]))
        out.append(rec)
    return out
