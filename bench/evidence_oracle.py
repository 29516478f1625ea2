"""A test-aware ORACLE selection: how low any choice of spans could push the tail error.

This is not a strategy.  It looks at the test set, which no selection may do, to measure
a ceiling: greedy forward selection of the pool's candidate spans, each step adding the
span whose windows most lower the ridge model's mean absolute error on the test *tail*,
until the span set holds the budget's usable time.  Every size's set is a prefix of the
one greedy path.  If even this set is not 10% below random spans on the tail, no
selection of spans of that size is likely to be (greedy is a heuristic, so this is a
measured ceiling of a strong search, not a proof).

The ridge fit of each candidate set is solved in closed form from per-span sufficient
statistics (counts, sums, cross-products), which gives exactly what
``StandardScaler`` + ``Ridge(alpha)`` of :mod:`evidence_stats` fits (population standard
deviation, a zero-variance input scaled by 1, the intercept unpenalised): with
``mu``, ``s`` the inputs' mean and standard deviation, ``Z = (X - mu) / s``, the
coefficients solve ``(Z'Z + alpha I) w = Z'(R - mean R)`` (Hoerl & Kennard 1970).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import evidence_arms as ea
import evidence_data as ed
import numpy as np

# numpy's float64 resolution, as StandardScaler's test for a zero scale uses
_EPS = 10 * np.finfo(np.float64).eps


@dataclass
class SpanStats:
    """Sufficient statistics of each span's pool windows for a ridge fit.

    Attributes
    ----------
    n : ndarray, shape (S,), float64
        Windows wholly inside each span.
    sx : ndarray, shape (S, D)
    sxx : ndarray, shape (S, D, D)
    sr : ndarray, shape (S, K)
    sxr : ndarray, shape (S, D, K)
        Sums of inputs, input outer products, residual targets and input-target products.
    """

    n: np.ndarray
    sx: np.ndarray
    sxx: np.ndarray
    sr: np.ndarray
    sxr: np.ndarray


def span_of_windows(pool: ea.Pool) -> np.ndarray:
    """(N,) int64: the candidate span row each pool window lies wholly inside, -1 if none."""
    t, w = pool.table, pool.windows
    src_of = {sid: i for i, sid in enumerate(w.source_ids)}
    rows: dict[tuple[int, str], list[int]] = {}
    for i in range(len(t)):
        sid = t.source_ids[t.source[i]]
        ent = str(t.entity_ids[t.source[i]][t.entity[i]])
        rows.setdefault((src_of[sid], ent), []).append(i)
    out = np.full(len(w), -1, np.int64)
    groups: dict[tuple[int, str], list[int]] = {}
    for j, k in enumerate(zip(w.source.tolist(), w.entity.tolist(), strict=True)):
        groups.setdefault(k, []).append(j)
    for k, idx in groups.items():
        if k not in rows:
            continue
        r = np.asarray(sorted(rows[k], key=lambda i: int(t.first[i])))
        firsts = t.first[r].astype(np.int64)
        ix = np.asarray(idx)
        pos = np.searchsorted(firsts, w.first[ix], side="right") - 1
        ok = pos >= 0
        cand = r[np.where(ok, pos, 0)]
        ok &= w.last[ix] <= t.last[cand]
        out[ix[ok]] = cand[ok]
    return out


def span_stats(pool: ea.Pool, span_of: np.ndarray) -> SpanStats:
    """Per-span sums of the pool windows (inputs ``x``, residual targets ``y - cv``)."""
    w = pool.windows
    s = len(pool.table)
    x, r = w.x, w.y - w.cv
    d, k = x.shape[1], r.shape[1]
    inside = span_of >= 0
    idx, xs, rs = span_of[inside], x[inside], r[inside]
    n = np.bincount(idx, minlength=s).astype(np.float64)
    sx = np.zeros((s, d))
    np.add.at(sx, idx, xs)
    sr = np.zeros((s, k))
    np.add.at(sr, idx, rs)
    sxx = np.zeros((s, d, d))
    np.add.at(sxx, idx, xs[:, :, None] * xs[:, None, :])
    sxr = np.zeros((s, d, k))
    np.add.at(sxr, idx, xs[:, :, None] * rs[:, None, :])
    return SpanStats(n, sx, sxx, sr, sxr)


def ridge_from_stats(
    n: np.ndarray,
    sx: np.ndarray,
    sxx: np.ndarray,
    sr: np.ndarray,
    sxr: np.ndarray,
    alpha: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Batched standardized ridge from sums: raw-input weights and intercepts.

    Parameters
    ----------
    n : (C,); sx : (C, D); sxx : (C, D, D); sr : (C, K); sxr : (C, D, K)

    Returns
    -------
    coef : ndarray, shape (C, D, K)
        Weights on the raw inputs (the standardization folded in).
    intercept : ndarray, shape (C, K)
        So that a prediction is ``x @ coef + intercept``.
    """
    mu = sx / n[:, None]
    rbar = sr / n[:, None]
    var = np.maximum(np.einsum("cii->ci", sxx) / n[:, None] - mu**2, 0.0)
    # StandardScaler's rule: a feature whose variance is within rounding of zero is constant
    eps = np.finfo(np.float64).eps
    nn = n[:, None]
    const = var <= nn * eps * var + (nn * mu * eps) ** 2
    sd = np.sqrt(var)
    sd = np.where(const | (sd < _EPS), 1.0, sd)
    cov = sxx - n[:, None, None] * mu[:, :, None] * mu[:, None, :]
    a = cov / (sd[:, :, None] * sd[:, None, :])
    a = a + alpha * np.eye(a.shape[-1])[None]
    b = (sxr - n[:, None, None] * mu[:, :, None] * rbar[:, None, :]) / sd[:, :, None]
    w = np.linalg.solve(a, b)
    coef = w / sd[:, :, None]
    intercept = rbar - np.einsum("cd,cdk->ck", mu, coef)
    return coef, intercept


def _errors(
    st: SpanStats,
    cur: list,  # type: ignore[type-arg]
    cand: np.ndarray,
    xt: np.ndarray,
    rt: np.ndarray,
    wt: np.ndarray,
    alpha: float,
    chunk: int,
) -> np.ndarray:
    """(C,) weighted MAE on ``xt``, ``rt`` of the set so far plus each candidate span alone."""
    d, k = st.sx.shape[1], st.sr.shape[1]
    errs = np.empty(cand.size)
    for a in range(0, cand.size, chunk):
        c = cand[a : a + chunk]
        coef, icpt = ridge_from_stats(
            cur[0] + st.n[c],
            cur[1] + st.sx[c],
            cur[2] + st.sxx[c],
            cur[3] + st.sr[c],
            cur[4] + st.sxr[c],
            alpha,
        )
        # one matrix product for the chunk's predictions, (M, C, K), minus the targets; in
        # float32 (a ranking: the chosen sets are scored again in float64)
        w32 = coef.transpose(1, 0, 2).reshape(d, -1).astype(np.float32)
        res = (xt @ w32).reshape(len(xt), c.size, k)
        res += (icpt[None] - rt[:, None, :]).astype(np.float32)
        errs[a : a + chunk] = wt @ np.sqrt(np.einsum("mck,mck->mc", res, res))
    return errs


def screening_set(wt: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Target windows (indices) and weights of the greedy's screening pass.

    Windows of zero weight never count.  If more than ``size`` remain, every window of more
    than the lowest weight (the tail, under a tail-plus-all objective) stays, and the
    lowest-weight ones are thinned to every ``s``-th, their weight times ``s``; if even the
    heavier ones are too many, every ``s``-th of all of them, weights times ``s``.
    """
    idx = np.flatnonzero(wt > 0)
    if idx.size <= size:
        return idx, wt[idx]
    light = wt[idx] == wt[idx].min()
    heavy = idx[~light]
    room = size - heavy.size
    if room < size // 4:  # thin them all alike
        step = -(-idx.size // size)
        return idx[::step], wt[idx[::step]] * step
    step = -(-int(light.sum()) // room)
    thin = idx[light][::step]
    keep = np.sort(np.concatenate([heavy, thin]))
    w = wt[keep].copy()
    w[np.isin(keep, thin)] *= light.sum() / thin.size
    return keep, w


def greedy_tail(
    pool: ea.Pool,
    st: SpanStats,
    xt: np.ndarray,
    rt: np.ndarray,
    budget_ticks: int,
    *,
    weight: np.ndarray | None = None,
    alpha: float = 1.0,
    chunk: int = 256,
    screen: int = 2048,
    shortlist: int = 16,
) -> np.ndarray:
    """Span rows in greedy order, to ``budget_ticks`` usable ticks, lowering ridge's MAE on
    the target windows ``xt`` (inputs, (M, D)) and ``rt`` (residual targets, (M, K)),
    each window's error weighted by ``weight`` ((M,), default ``1 / M``: the plain MAE).

    Each step scores every remaining span added alone to the set so far and adds the best
    one; once the set holds ``8 * m`` spans, a step adds the ``m`` best (so the path takes
    about 8 steps per doubling of its size: the error of a large set moves little per span).
    Over more than ``screen`` target windows a step first scores every span on a thinned
    set (:func:`screening_set`), then the ``m + shortlist`` best again on every window, and
    adds the best of those.  Ties (equal error) go to the lowest span row, so the path is
    deterministic.
    """
    d, k = st.sx.shape[1], st.sr.shape[1]
    cur = [0.0, np.zeros(d), np.zeros((d, d)), np.zeros(k), np.zeros((d, k))]
    left = np.flatnonzero(st.n > 0)
    order: list[int] = []
    got = 0
    wt = np.full(len(xt), 1.0 / len(xt)) if weight is None else weight
    sub, wsub = screening_set(wt, screen)
    x32 = xt.astype(np.float32)
    # every window that counts, at its own weight: the screening pass is the exact score
    exact = sub.size == int(np.count_nonzero(wt > 0)) and np.array_equal(wsub, wt[sub])
    while got < budget_ticks and left.size:
        m = max(1, len(order) // 8)
        errs = _errors(st, cur, left, x32[sub], rt[sub], wsub, alpha, chunk)
        rank = np.argsort(errs, kind="stable")
        if not exact:  # the screening's best, scored again on every window
            short = np.sort(rank[: m + shortlist])
            full = _errors(st, cur, left[short], x32, rt, wt, alpha, chunk)
            rank = short[np.argsort(full, kind="stable")]
        for j in rank[:m].tolist():
            best = int(left[j])
            order.append(best)
            for i, part in enumerate((st.n, st.sx, st.sxx, st.sr, st.sxr)):
                cur[i] = cur[i] + part[best]
            got += int(pool.usable[best])
            if got >= budget_ticks:
                break
        left = np.setdiff1d(left, np.asarray(order, np.int64), assume_unique=True)
    return np.asarray(order, np.int64)


def entity_halves(test: ed.Windows) -> np.ndarray:
    """(N,) bool: test windows of the entities in one half (by a hash of the entity id).

    The cross-fitted ORACLE chooses spans on one half's tail and is scored on the other's,
    so its figure is not the in-sample error of a search that saw the windows it is scored on.
    """
    ids = sorted(set(test.entity.tolist()))
    half = {e: hashlib.blake2b(str(e).encode(), digest_size=8).digest()[0] % 2 == 0 for e in ids}
    return np.array([half[e] for e in test.entity.tolist()], bool)


# the penalties on all windows' error the constrained ORACLE tries (0: the plain ORACLE)
LAMBDAS = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0)


def set_errors(
    st: SpanStats, spans: np.ndarray, xt: np.ndarray, rt: np.ndarray, masks: list[np.ndarray]
) -> list[float]:
    """Ridge's MAE on each of ``masks`` (bool, (M,)) of the target windows when fitted on
    the windows of ``spans`` (closed form from the span sums, as the benchmark's ridge)."""
    parts = [p[spans].sum(axis=0)[None] for p in (st.n, st.sx, st.sxx, st.sr, st.sxr)]
    coef, icpt = ridge_from_stats(*parts)
    err = np.linalg.norm(xt @ coef[0] + icpt[0] - rt, axis=1)
    return [float(err[m].mean()) for m in masks]


def constrained(
    pool: ea.Pool,
    st: SpanStats,
    xt: np.ndarray,
    rt: np.ndarray,
    tail: np.ndarray,
    ticks: list[int],
    caps: list[float],
    lambdas: tuple[float, ...] = LAMBDAS,
    plain: np.ndarray | None = None,
) -> list[tuple[np.ndarray, float, bool]]:
    """The constrained ORACLE: per size, the lowest-tail span set whose all-windows error
    stays at or below that size's cap.

    Formulation (a Lagrangian relaxation searched on a grid): for each penalty ``lam`` in
    ``lambdas`` one greedy path minimises ``MAE(tail) + lam * MAE(all)`` over the target
    windows ``xt``, ``rt`` ((M, D), (M, K); ``tail`` (M,) bool marks the tail).  At size
    ``ticks[i]`` each path's prefix is a candidate; among those with ``MAE(all) <=
    caps[i]`` the one with the lowest ``MAE(tail)`` is chosen (the smallest ``lam`` on a
    tie).  If none meets the cap, the candidate with the lowest ``MAE(all)`` is returned,
    flagged infeasible.  ``plain``, if given, is the path for ``lam = 0`` (the plain
    ORACLE's, computed on the tail alone).

    Returns
    -------
    list of (spans, lam, feasible), one per size.
    """
    every = np.ones(len(xt), bool)
    base = tail / tail.sum()
    paths = [
        plain
        if lam == 0 and plain is not None
        else greedy_tail(pool, st, xt, rt, max(ticks), weight=base + lam / len(xt))
        for lam in lambdas
    ]
    out = []
    for n, cap in zip(ticks, caps, strict=True):
        cands = []
        for lam, order in zip(lambdas, paths, strict=True):
            spans = ea.truncate(pool, order, n)
            e_all, e_tail = set_errors(st, spans, xt, rt, [every, tail])
            # a margin far above the closed form's rounding, so the benchmark's ridge agrees
            cands.append((e_all <= cap * (1 - 1e-9), e_tail, e_all, lam, spans))
        ok = [c for c in cands if c[0]]
        best = min(ok, key=lambda c: c[1]) if ok else min(cands, key=lambda c: c[2])
        out.append((best[4], best[3], bool(ok)))
    return out
