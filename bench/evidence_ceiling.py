"""The ORACLE's ceiling out of sample: repeated cross-fits, the bar in numbers, a reweighted pool.

The constrained ORACLE (:func:`evidence_oracle.constrained`) chooses spans with the test
windows it is scored on, so its in-sample figure includes the search's optimism (it fits
the noise of a tail of a few hundred windows).  Here it chooses on one part of the test
set and is scored on another:

* by entity, repeated: ``k`` seeded random halvings of the test entities, each used both
  ways (choose on A, score on B; choose on B, score on A), so ``2 k`` choices per size;
  the *optimism* of a choice is its tail gain on the half it was chosen on minus the same
  set's gain on the other half;
* by time: choose on the test windows before the test set's middle tick, score on those
  after it (windows straddling the middle belong to neither).

Every figure is ridge (closed form from span sums, as :mod:`evidence_oracle` fits it) and
is a difference from the random arm's mean on the same windows (the random arm's sets
refitted the same way).  One reference beside the ORACLE: the *whole pool reweighted*
toward the tail, window weights ``1 + beta * h`` (``h``: the pool window is past the
choosing part's tail thresholds, ``beta`` on a grid up to infinity, i.e. the tail-like
windows alone; weights scaled to mean 1), ``beta``
chosen on the choosing part by the same all-windows cap; it says what shifting the
training distribution with all the data gives on the unseen part.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import evidence_arms as ea
import evidence_data as ed
import evidence_oracle as eo
import numpy as np

# the constrained ORACLE's penalties in the repeated cross-fit (fewer than the in-sample
# ORACLE's grid: 2 k + 1 choices per size)
LAMBDAS = (0.0, 0.5, 2.0)

# the reweighted whole pool's weights on tail-like pool windows (0: the plain whole pool;
# inf: the tail-like windows alone)
BETAS = (0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, float("inf"))


@dataclass(frozen=True)
class Part:
    """One choice of the cross-fit: the test windows chosen on and those scored on."""

    name: str  # "entity k=<split> A>B" or "time"
    choose: np.ndarray  # (M,) bool over the test windows
    score: np.ndarray  # (M,) bool


def entity_halvings(test: ed.Windows, k: int, seed: int = 2929) -> list[np.ndarray]:
    """``k`` seeded halvings of the test entities: per halving, (M,) bool, half A.

    Halving ``i`` draws a permutation of the sorted entity ids from
    ``numpy.random.default_rng([seed, i])``; its first ``floor(n / 2)`` entities are half A.
    """
    ids = sorted({str(e) for e in test.entity.tolist()})
    ent = [str(e) for e in test.entity.tolist()]
    out = []
    for i in range(k):
        perm = np.random.default_rng([seed, i]).permutation(len(ids))
        a_ids = {ids[j] for j in perm[: len(ids) // 2].tolist()}
        out.append(np.array([e in a_ids for e in ent], bool))
    return out


def entity_parts(test: ed.Windows, k: int, seed: int = 2929) -> list[Part]:
    """``k`` seeded halvings of the test entities (:func:`entity_halvings`), each both ways
    (``2 k`` parts)."""
    out = []
    for i, a in enumerate(entity_halvings(test, k, seed)):
        out += [Part(f"entity {i} A>B", a, ~a), Part(f"entity {i} B>A", ~a, a)]
    return out


def time_part(test: ed.Windows) -> Part:
    """Choose on the test windows wholly before the middle tick, score on those after it.

    Test sources are consecutive slices of time, so ``(source, tick)`` orders the windows in
    time; the middle is the median window end in that order.
    """
    key = test.source.astype(np.int64) * (1 << 40) + test.last.astype(np.int64)
    start = test.source.astype(np.int64) * (1 << 40) + test.first.astype(np.int64)
    mid = int(np.sort(key)[len(key) // 2])
    return Part("time", key < mid, start > mid)


def joint_parts(test: ed.Windows, k: int, seed: int = 2929, control: bool = True) -> list[Part]:
    """Cross-fits by entity AND time, on the halvings of :func:`entity_parts` and the middle
    of :func:`time_part`: per halving, ``joint i A>B`` chooses on half A's earlier windows
    and is scored on half B's later ones, ``joint i B>A`` the reverse direction.

    With ``control``, two more pairs choose on the same quarter-sized parts:
    ``same i A`` / ``same i B`` are scored on the same half's later windows (the same
    entities later), ``minutes i A>B`` / ``minutes i B>A`` on the other half's earlier
    windows (other entities, the same minutes: the by-entity cross-fit with a choosing
    part as small as the joint one's).

    A joint part's choosing and scored windows share neither an entity nor a tick, so a set
    chosen on it cannot carry over by fitting what happens in the scored minutes.
    """
    t = time_part(test)
    out = []
    for i, a in enumerate(entity_halvings(test, k, seed)):
        out += [
            Part(f"joint {i} A>B", a & t.choose, ~a & t.score),
            Part(f"joint {i} B>A", ~a & t.choose, a & t.score),
        ]
        if control:
            out += [
                Part(f"same {i} A", a & t.choose, a & t.score),
                Part(f"same {i} B", ~a & t.choose, ~a & t.score),
                Part(f"minutes {i} A>B", a & t.choose, ~a & t.choose),
                Part(f"minutes {i} B>A", ~a & t.choose, a & t.choose),
            ]
    return out


def errors_of(coef: np.ndarray, icpt: np.ndarray, x: np.ndarray, r: np.ndarray) -> np.ndarray:
    """(M,) horizontal error of one fit (``coef`` (D, K), ``icpt`` (K,)) on windows ``x``, ``r``."""
    return np.asarray(np.linalg.norm(x @ coef + icpt - r, axis=1))


def set_error_vector(
    st: eo.SpanStats, spans: np.ndarray, x: np.ndarray, r: np.ndarray
) -> np.ndarray:
    """(M,) ridge error of the fit on ``spans``' windows (closed form), per target window."""
    parts = [p[spans].sum(axis=0)[None] for p in (st.n, st.sx, st.sxx, st.sr, st.sxr)]
    coef, icpt = eo.ridge_from_stats(*parts)
    return errors_of(coef[0], icpt[0], x, r)


def weighted_ridge(x: np.ndarray, r: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ridge on windows ``x`` (N, D), residuals ``r`` (N, K) with sample weights ``w`` (N,).

    What ``StandardScaler`` + ``Ridge(alpha=1)`` fit with the same ``sample_weight`` on both
    steps (weighted mean and population variance, weighted squared loss), solved from the
    weighted sums as :func:`evidence_oracle.ridge_from_stats` does.
    """
    xw = x * w[:, None]
    parts = (np.sum(w), w @ x, xw.T @ x, w @ r, xw.T @ r)
    coef, icpt = eo.ridge_from_stats(*(np.asarray(p, float)[None] for p in parts))
    return coef[0], icpt[0]


def past_thresholds(
    pool: ed.Windows, test: ed.Windows, mask: np.ndarray, tail: Sequence[str]
) -> np.ndarray:
    """(N,) bool: pool windows past the top-decile threshold of any tail metric over the
    test windows of ``mask`` (the choosing part only)."""
    hit = np.zeros(len(pool), bool)
    for k in tail:
        thr = np.nanquantile(test.metrics[k][mask], 0.9)
        hit |= np.nan_to_num(pool.metrics[k], nan=-np.inf) >= thr
    return hit


@dataclass
class CeilingInputs:
    """What every part's choice needs: the pool, its span sums and the test targets."""

    pool: ea.Pool
    st: eo.SpanStats
    test: ed.Windows
    r: np.ndarray  # (M, K) test residual targets
    ticks: list[int]
    rand: list[np.ndarray]  # per size, (seeds, M) the random arm's per-window errors
    tail_metrics: tuple[str, ...]


def random_errors(
    pool: ea.Pool, st: eo.SpanStats, test: ed.Windows, budgets: Sequence[float], seeds: int
) -> list[np.ndarray]:
    """Per size, (seeds, M): the random arm's sets (the benchmark's seeds) refitted in closed
    form, each one's error on every test window."""
    r = test.y - test.cv
    return [
        np.stack(
            [
                set_error_vector(st, ea.select(pool, ea.Arm("random", None), s, b), test.x, r)
                for s in range(seeds)
            ]
        )
        for b in budgets
    ]


def choose_and_score(
    inp: CeilingInputs, part: Part, lambdas: tuple[float, ...]
) -> tuple[list[dict[str, float]], list[np.ndarray]]:
    """One part's choice at every size: the constrained ORACLE and the reweighted pool.

    Returns, per size, differences from the random arm's mean on the same windows:
    ``tail``, ``all`` (the ORACLE's set on the scored part), ``in_tail``, ``in_all`` (on the
    choosing part: the in-sample figures), ``optimism`` (``tail - in_tail``), ``plain_tail``
    (the unconstrained ORACLE on the scored part), ``lam`` and ``feasible`` (the cap met on
    the choosing part), ``rw_tail``, ``rw_all``, ``beta``, ``rw_feasible`` for the
    reweighted whole pool, and ``n_tail_choose``, ``n_tail_score``, the tail windows of
    each part; and, per size, the constrained ORACLE's span rows.
    """
    t, c, s = inp.test, part.choose, part.score
    tail = t.tail if t.tail is not None else np.zeros(len(t), bool)
    xc, rc = t.x[c], inp.r[c]
    masks = {"ct": c & tail, "ca": c, "st": s & tail, "sa": s}
    rand = [{k: float(e[:, m].mean(axis=1).mean()) for k, m in masks.items()} for e in inp.rand]
    caps = [x["ca"] for x in rand]
    plain = eo.greedy_tail(inp.pool, inp.st, t.x[c & tail], inp.r[c & tail], max(inp.ticks))
    got = eo.constrained(inp.pool, inp.st, xc, rc, tail[c], inp.ticks, caps, lambdas, plain)
    # the reweighted whole pool: one fit per beta, chosen per size on the choosing part
    w = inp.pool.windows
    hit = past_thresholds(w, t, c, inp.tail_metrics)
    fits = []
    for beta in BETAS:
        wt = hit.astype(float) if np.isinf(beta) else 1.0 + beta * hit
        err = errors_of(*weighted_ridge(w.x, w.y - w.cv, wt / wt.mean()), t.x, inp.r)
        fits.append((beta, {k: float(err[m].mean()) for k, m in masks.items()}))
    out = []
    for n, (spans, lam, ok), ref in zip(inp.ticks, got, rand, strict=True):
        err = set_error_vector(inp.st, spans, t.x, inp.r)
        pe = set_error_vector(inp.st, eo.ea.truncate(inp.pool, plain, n), t.x, inp.r)
        d = {k: float(err[m].mean()) / ref[k] - 1 for k, m in masks.items()}
        feas = [f for f in fits if f[1]["ca"] <= ref["ca"] * (1 - 1e-9)]
        beta, e = (
            min(feas, key=lambda f: f[1]["ct"]) if feas else min(fits, key=lambda f: f[1]["ca"])
        )
        out.append(
            {
                "tail": d["st"],
                "all": d["sa"],
                "in_tail": d["ct"],
                "in_all": d["ca"],
                "optimism": d["st"] - d["ct"],
                "plain_tail": float(pe[s & tail].mean()) / ref["st"] - 1,
                "lam": lam,
                "feasible": float(ok),
                "rw_tail": e["st"] / ref["st"] - 1,
                "rw_all": e["sa"] / ref["sa"] - 1,
                "beta": beta,
                "rw_feasible": float(bool(feas)),
                "n_tail_choose": float(np.count_nonzero(c & tail)),
                "n_tail_score": float(np.count_nonzero(s & tail)),
            }
        )
    return out, [g[0] for g in got]


def ceiling(
    inp: CeilingInputs,
    parts: Sequence[Part],
    lambdas: tuple[float, ...],
    sets: dict[str, list[np.ndarray]] | None = None,
) -> dict[str, list[dict[str, float]]]:
    """Every part's per-size records (see :func:`choose_and_score`), keyed by part name;
    each part's chosen span rows per size go into ``sets`` when it is given."""
    out = {}
    for p in parts:
        out[p.name], spans = choose_and_score(inp, p, lambdas)
        if sets is not None:
            sets[p.name] = spans
    return out


def meets(rec: dict[str, float], prefix: str = "") -> bool:
    """The issue's bar on the scored part: tail 10% or more below random, all not above."""
    return rec[f"{prefix}tail"] <= -0.10 and rec[f"{prefix}all"] <= 0.0


def sdk_random_check(
    pool: ea.Pool, arm: ea.Arm, test: ed.Windows, budgets: Sequence[float], seeds: int
) -> tuple[dict[float, dict[str, dict[str, float]]], dict[str, float]]:
    """kuration's ``random`` method (``arm``, through the hours path) against the random
    arm with ``seeds`` seeds each: ridge (closed form) on all windows and on the tail.

    Returns, per size and test set, both means, Welch's two-sided p, the seed count and
    ``cv``, the random arm's standard deviation over seeds over its mean; and the spans:
    ``pool`` (candidate spans), ``left_out`` (spans the hours path never admits at any
    budget) and ``left_out_usable`` (their share of the pool's usable time).  Both
    draw spans uniformly from (almost) the same candidates, so a difference that vanishes
    as seeds grow was seed noise.
    """
    from scipy import stats

    st = eo.span_stats(pool, eo.span_of_windows(pool))
    r = test.y - test.cv
    hz = pool.loaded.pipeline.schema.sample_hz
    tail = test.tail if test.tail is not None else np.zeros(len(test), bool)
    out: dict[float, dict[str, dict[str, float]]] = {}
    for b in budgets:
        errs = {}
        for name, a in (("random", ea.Arm("random", None)), ("sdk", arm)):
            e = np.stack(
                [set_error_vector(st, ea.select(pool, a, s, b), test.x, r) for s in range(seeds)]
            )
            errs[name] = {"all": e.mean(axis=1), "tail": e[:, tail].mean(axis=1)}
        out[b] = {
            t: {
                "random": float(errs["random"][t].mean()),
                "sdk": float(errs["sdk"][t].mean()),
                "p": float(
                    stats.ttest_ind(errs["sdk"][t], errs["random"][t], equal_var=False).pvalue
                ),
                "seeds": float(seeds),
                "cv": float(errs["random"][t].std(ddof=1) / errs["random"][t].mean()),
            }
            for t in ("all", "tail")
        }
    # the spans the hours path admits when asked for everything
    every = ea.select(pool, arm, 0, float(pool.usable.sum()) / hz / 3600 + 1.0)
    out_ = np.ones(len(pool.table), bool)
    out_[every] = False
    spans = {
        "pool": float(len(pool.table)),
        "left_out": float(out_.sum()),
        "left_out_usable": float(pool.usable[out_].sum() / pool.usable.sum()),
    }
    return out, spans
