"""Does a strategy's best N hours train better models than N random hours?  Measured.

Run ``python bench/evidence.py`` (full: every size, seed and model; at most 20 minutes on
2 cores) or ``python bench/evidence.py --quick`` (one size per domain, a few seeds; what
``tests/test_bench_evidence.py`` runs twice and compares).  ``--write docs/evidence.md``
writes the measured table (that file is never edited by hand).

Per domain (:mod:`evidence_data`): a pool of whole sources early in the recording, a test
set of whole sources after a gap; each arm (:mod:`evidence_arms`) chooses training sets of
equal usable hours out of the one scored pool; ridge and a small MLP
(:mod:`evidence_stats`) are fitted to each set and scored on every test window, on the
tail (top decile of a kuration metric of manoeuvring, fixed on the test windows before
any selection) and on entities the pool never saw.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import evidence_arms as ea
import evidence_ceiling as ec
import evidence_ceiling_sets as ecs
import evidence_data as ed
import evidence_faults as ef
import evidence_guided as eg
import evidence_oracle as eo
import evidence_report as er
import evidence_stats as es
import numpy as np
from threadpoolctl import threadpool_limits

ROOT = ed.ROOT
QS = ROOT / "examples" / "adsb_quickstart"
TESTS = ("all", "tail", "unseen")
# each example's default strategy before issue 29 (the candidates' common starting point)
BEFORE = {
    "adsb": QS / "strategies" / "turns-and-climbs.json",
    "football": Path(__file__).resolve().parent / "evidence_strategies" / "football-before.json",
}


def _json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def _strip(st: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A strategy without group and group cap (the track arms rank spans, not sources)."""
    out = {k: v for k, v in st.items() if k not in ("group", "group_cap")}
    out.update(extra)
    return out


def _job_arm(name: str, strategy: dict[str, Any], job: dict[str, Any]) -> ea.Arm:
    """An arm that runs ``strategy`` as ``job`` would: its window scope, filter scope and
    candidate options (so the shipped default is measured as the example job runs it)."""
    scope = "sdk-track" if job.get("segmenter", {}).get("scope") == "track" else "scene"
    return ea.Arm(
        name,
        strategy,
        scope,
        clip_aggregate=job.get("clip_aggregate", "mean"),
        min_track_seconds=float(job.get("min_track_seconds", 0)),
        veto=job.get("filter_scope") == "span",
    )


def arms_for(domain: ed.Domain) -> list[ea.Arm]:
    """The arms compared on ``domain``: random, the shipped default (as its job runs it),
    other shipped methods (scene-scoped as kuration scores by default), their track-scoped
    counterparts and the candidates the defaults were chosen from."""
    job = _json(domain.job)
    shipped = _json(domain.job.parent / job["strategy"])
    opts = {
        "clip_aggregate": job.get("clip_aggregate", "mean"),
        "min_track_seconds": float(job.get("min_track_seconds", 0)),
    }
    # the candidates below start from the domain's coverage strategy before this issue
    # (uniform bins over the example's two axes), without its quality filters
    base = _json(BEFORE[domain.name])
    sdk_random = {"name": "sdk-random", "define": base["define"], "method": "random"}
    base_bins = _strip(base)
    arms = [
        ea.Arm("random", None),
        _job_arm(f"shipped:{shipped['name']}", shipped, job),
        ea.Arm(f"before:{base['name']}", base, "scene", **opts),
        # kuration's own random method through the hours path (the job's options)
        ea.Arm("sdk:random", sdk_random, "scene", **opts),
    ]
    if domain.name == "adsb":
        kc, tk = _json(QS / "strategies" / "k-center.json"), _json(QS / "strategies" / "top-k.json")
        arms += [
            ea.Arm("scene:k-center", kc, "scene", **opts),
            ea.Arm("scene:top-k-turn", tk, "scene", **opts),
            ea.Arm("track:uniform-bins", _strip(base, name="track-uniform-bins"), "track"),
            ea.Arm("track:k-center", _strip(kc, name="track-k-center"), "track"),
            ea.Arm("track:top-k-turn", _strip(tk, name="track-top-k"), "track"),
        ]
    else:
        arms += [
            ea.Arm("track:uniform-bins", _strip(base, name="track-uniform-bins"), "track"),
        ]
    arms.append(ea.Arm("track:spread-random", {"name": "spread"}, "spread-random"))
    q = ef.quality_strategy(domain)
    arms.append(ea.Arm("track:quality-random", q, "track-random"))
    qb = _strip(base, name="quality-uniform-bins")
    qb["define"] = {**qb["define"], **q["define"]}
    qb["filters"] = q["filters"]
    arms.append(ea.Arm("track:quality+uniform-bins", qb, "track"))
    # the same through kuration's hours path with track-scoped windows (segmenter scope)
    arms.append(ea.Arm("sdk-track:uniform-bins", base_bins, "sdk-track", **opts))
    arms.append(ea.Arm("sdk-track:quality+uniform-bins", qb, "sdk-track", **opts))
    # filters vetoing whole spans (the job's filter_scope "span")
    arms.append(ea.Arm("sdk-track:quality+uniform-bins+veto", qb, "sdk-track", **opts, veto=True))
    qr = {**sdk_random, "name": "quality-random", "define": qb["define"], "filters": q["filters"]}
    arms.append(ea.Arm("sdk-track:quality-random", qr, "sdk-track", **opts))
    arms.append(ea.Arm("sdk-track:quality-random+veto", qr, "sdk-track", **opts, veto=True))
    if domain.name == "adsb":  # tail-seeking: importance resampling toward turning spans
        imp = _json(QS / "strategies" / "importance.json")
        imp = {**imp, "name": "quality-importance", "define": {**imp["define"], **q["define"]}}
        imp["filters"] = q["filters"]
        arms.append(
            ea.Arm("sdk-track:quality+importance+veto", imp, "sdk-track", **opts, veto=True)
        )
    arms += _tail_mix_arms(domain, q)
    arms += _dedup_arms(domain, q)
    arms += eg.arms()  # chosen on held-out pool windows (a harness arm, not a strategy)
    ship = arms[1]
    return [a for a in arms if a is ship or _same_key(a) != _same_key(ship)]


# tail-seeking with a floor on the average: these shares of the budget to the quality-passing
# spans ranked by their own track's manoeuvre metric, the rest quality-random
TAIL_SHARES = (0.2, 0.4)
RANK_BY = {"adsb": "turn_p90", "football": "accel_p90"}


def _tail_mix_arms(domain: ed.Domain, quality: dict[str, Any]) -> list[ea.Arm]:
    """The tail-mix arms: quality filters, top-k by the domain's first tail metric."""
    by = RANK_BY[domain.name]
    st = {
        "name": f"quality-top-{by}",
        "define": {**quality["define"], by: domain.tail[by]},
        "filters": quality["filters"],
        "method": "top-k",
        "params": {"by": by, "descending": True},
        "nan_policy": "exclude",
    }
    return [ea.Arm(f"track:quality+tail-mix-{x:g}", st, "tail-mix", share=x) for x in TAIL_SHARES]


# near-duplicate removal of track-level features before a random fill (kuration's
# near_dedup filter: cosine distance of standardized features below the threshold)
DEDUP_THRESHOLDS = (0.001, 0.005)
DEDUP_FEATURES = {
    "adsb": {"speed_p90": "field:position | speed | p90", **ed.ADSB.tail},
    "football": {"speed_p90": "field:position | speed | p90", **ed.FOOTBALL.tail},
}


def _dedup_arms(domain: ed.Domain, quality: dict[str, Any]) -> list[ea.Arm]:
    """Quality filters, then near_dedup over each span's own track features, random fill
    (the near duplicates last, in random order, where the rest do not reach the budget)."""
    feats = DEDUP_FEATURES[domain.name]
    out = []
    for thr in DEDUP_THRESHOLDS:
        st = {
            "name": f"quality-near-dedup-{thr:g}",
            "define": {**quality["define"], **feats},
            "filters": [
                *quality["filters"],
                {"filter": "near_dedup", "threshold": thr, "features": sorted(feats)},
            ],
            "method": "top-k",
            "params": {"by": "speed_p90"},
            "nan_policy": "exclude",
        }
        out.append(ea.Arm(f"track:quality+near-dedup-{thr:g}", st, "dedup-first"))
    return out


def _same_key(a: ea.Arm) -> str:
    """What makes two arms select alike (everything but the names)."""
    st = {k: v for k, v in (a.strategy or {}).items() if k != "name"}
    return json.dumps(
        [st, a.scope, a.clip_aggregate, a.min_track_seconds, a.veto, a.share], sort_keys=True
    )


def validation(domain: ed.Domain) -> ed.Domain:
    """The domain with its test set carved from the training pool by time (strategy choice).

    ADS-B: the first 90 minutes as pool, 15 minutes left out, the pool's last 15 minutes as
    test.  Football has one pool source (the first half): its first 60% is the pool, 10%
    is left out and its last 30% is the test (only arms that need no SDK scoring run).
    """
    if domain.name == "adsb":
        return dataclasses.replace(
            domain, pool=lambda i, n: i < 6, test=lambda i, n: i == 7, budgets_h=(0.5, 1, 2, 4)
        )
    # the first half's first 60% as pool, 10% left out, its last 30% as test
    return dataclasses.replace(
        domain,
        test=lambda i, n: i == 0,
        pool_slice=(0.0, 0.6),
        test_slice=(0.7, 1.0),
        budgets_h=(0.05, 0.1, 0.2, 0.3),
    )


@dataclass
class DomainResult:
    domain: str
    budgets: list[float]
    n_test: dict[str, int]
    split: str = "test"
    baselines: dict[str, dict[str, float]] = field(default_factory=dict)
    # arm -> budget -> seed -> "model/test" -> mae
    errors: dict[str, dict[float, dict[int, dict[str, float]]]] = field(default_factory=dict)
    deterministic: dict[str, bool] = field(default_factory=dict)
    usable_h: dict[str, dict[float, list[float]]] = field(default_factory=dict)
    tail_share: dict[str, dict[float, list[float]]] = field(default_factory=dict)
    # fault arm: "faulty random" / "filtered random" -> budget -> seed -> "model/test" -> mae
    faults: dict[str, dict[float, dict[int, dict[str, float]]]] = field(default_factory=dict)
    filter_pass: dict[str, float] = field(default_factory=dict)
    # bound: setting ("window random", "share 0.2", ...) -> budget -> "model/test" -> mae
    bound: dict[str, dict[float, dict[str, float]]] = field(default_factory=dict)
    # the test-aware ORACLE (greedy spans on the test tail): path -> budget -> "model/test"
    oracle: dict[str, dict[float, dict[str, float]]] = field(default_factory=dict)
    oracle_usable_h: dict[str, dict[float, float]] = field(default_factory=dict)
    # the constrained ORACLE's penalty and whether it met the all-windows cap: path -> budget
    oracle_lambda: dict[str, dict[float, tuple[float, bool]]] = field(default_factory=dict)
    # the constrained ORACLE cross-fitted over repeated entity halvings and by time, with the
    # reweighted whole pool: part -> per budget, differences from random (evidence_ceiling)
    ceiling: dict[str, list[dict[str, float]]] = field(default_factory=dict)
    # what the by-entity choices' span sets share, per budget (evidence_ceiling_sets)
    ceiling_sets: list[dict[str, float]] = field(default_factory=list)
    # kuration's random method against the random arm over many seeds (ridge, closed form):
    # budget -> "all"/"tail" -> {"random", "sdk", "p", "seeds"}
    sdk_random: dict[float, dict[str, dict[str, float]]] = field(default_factory=dict)
    sdk_random_spans: dict[str, float] = field(default_factory=dict)
    pool_usable_h: float = 0.0
    seconds: float = 0.0


def _evaluate(
    train: ed.Windows, test: ed.Windows, sets: dict[str, np.ndarray], quick: bool
) -> dict[str, float]:
    out: dict[str, float] = {}
    xs = [test.x[m] for m in sets.values()]
    for model in es.MODELS:
        preds = es.fit_predict(model, train.x, train.y - train.cv, xs, quick=quick)
        for (name, m), p in zip(sets.items(), preds, strict=True):
            out[f"{model}/{name}"] = es.mae(test.cv[m] + p, test.y[m])
    return out


def run_domain(
    domain: ed.Domain, *, quick: bool, split: str = "test", log: Any = print
) -> DomainResult:
    t0 = time.perf_counter()
    loaded = ed.load(domain)
    test, _ = ed.windows(loaded, loaded.test_uris, domain.test_stride, tail_metrics=True)
    ed.mark_tail(test, domain)
    arms = arms_for(domain)
    if domain.pool_slice is not None:  # no SDK scoring of a source carved by time
        keep = ("track", "track-random", "spread-random", "guided", "tail-mix", "dedup-first")
        arms = [a for a in arms if a.scope in keep or a.strategy is None]
    if quick:
        arms = [
            a
            for a in arms
            if a.name == "random"
            or a.name.startswith(("shipped", "sdk:random", "track:quality-random"))
            or a.name == "guided:constrained"
        ]
    strategies = [
        ea.load_strategy(dict(a.strategy), loaded.pipeline.schema)
        for a in arms
        if a.strategy and a.scope == "scene"
    ]
    track_strategies = [
        ea.load_strategy(dict(a.strategy), loaded.pipeline.schema)
        for a in arms
        if a.strategy and a.scope == "sdk-track"
    ]
    pool = ea.build_pool(loaded, strategies, track_strategies)
    define: dict[str, str] = {}
    for a in arms:
        if a.scope in ("track", "track-random", "tail-mix", "dedup-first") and a.strategy:
            define.update(a.strategy["define"])
    pool.span_features = ea.track_features(pool, define) if define else None
    seen = set(pool.windows.entity.tolist())
    sets = {
        "all": np.ones(len(test), bool),
        "tail": test.tail,
        "unseen": np.array([e not in seen for e in test.entity.tolist()]),
    }
    half = eo.entity_halves(test)  # the cross-fitted ORACLE's two halves of the tail
    sets["tailA"], sets["tailB"] = test.tail & half, test.tail & ~half
    sets["allA"], sets["allB"] = half, ~half
    hz = loaded.pipeline.schema.sample_hz
    budgets = list(domain.quick_budgets_h if quick else domain.budgets_h)
    res = DomainResult(domain.name, budgets, {k: int(v.sum()) for k, v in sets.items()}, split)
    res.pool_usable_h = float(pool.usable.sum() / hz / 3600)
    res.baselines["constant velocity"] = {
        f"{m}/{k}": es.mae(test.cv[v], test.y[v]) for m in es.MODELS for k, v in sets.items()
    }
    res.baselines["whole pool"] = _evaluate(pool.windows, test, sets, quick)
    n_rand, n_strat = (3, 2) if quick else (10, 5)
    pool.guided = eg.select_all(pool, [a for a in arms if a.scope == "guided"], budgets)
    for arm in arms:
        res.errors[arm.name] = {}
        res.usable_h[arm.name], res.tail_share[arm.name] = {}, {}
        # kuration's random method is the random arm's counterpart: as many seeds
        seeds = list(range(n_rand if arm.strategy is None or arm.name == "sdk:random" else n_strat))
        for b in budgets:
            picks: list[np.ndarray] = []
            for s in seeds:
                spans = ea.select(pool, arm, s, b)
                if (
                    arm.strategy is not None
                    and picks
                    and all(np.array_equal(spans, p) for p in picks)
                ) and len(picks) >= 2:  # the same set for every seed tried: one value
                    break
                picks.append(spans)
            # a guided set does not depend on the seed by construction (in quick mode's two
            # seeds the test above cannot tell, and two equal values break Welch's test)
            det = arm.scope == "guided" or (arm.strategy is not None and len(picks) < len(seeds))
            res.deterministic[arm.name] = det and res.deterministic.get(arm.name, True)
            cell: dict[int, dict[str, float]] = {}
            for s, spans in enumerate(picks[:1] if det else picks):
                keep = ea.window_mask(pool, spans)
                train = pool.windows.take(np.flatnonzero(keep))
                cell[s] = _evaluate(train, test, sets, quick)
                res.usable_h[arm.name].setdefault(b, []).append(
                    float(pool.usable[spans].sum() / hz / 3600)
                )
                res.tail_share[arm.name].setdefault(b, []).append(_tail_share(domain, train, test))
            res.errors[arm.name][b] = cell
            log(
                f"  {domain.name} {arm.name} {b:g} h: {len(cell)} set(s), "
                f"ridge/tail {np.mean([c['ridge/tail'] for c in cell.values()]):.3f}"
            )
    _fault_arm(res, pool, test, sets, budgets, n_rand, quick, log)
    _bound(res, pool, test, sets, budgets, quick)
    _oracle(res, pool, test, sets, budgets, quick)
    if split == "test":
        _ceiling(res, pool, test, budgets, n_rand, quick)
        sdk = next((a for a in arms if a.name == "sdk:random"), None)
        if sdk is not None:
            res.sdk_random, res.sdk_random_spans = ec.sdk_random_check(
                pool, sdk, test, budgets, 20 if quick else 1000
            )
    res.seconds = time.perf_counter() - t0
    return res


SHARES = (0.1, 0.2, 0.35, 0.5, 0.7)


def _bound(
    res: DomainResult,
    pool: ea.Pool,
    test: ed.Windows,
    sets: dict[str, np.ndarray],
    budgets: list[float],
    quick: bool,
) -> None:
    """What any selection of these sizes could reach, measured with the test set's help.

    Training windows drawn one by one (no span constraint) at the budget's window count:
    uniformly, and with a fixed share of windows past the test tail's thresholds (an
    oracle mix: it knows what the tail looks like).  A selection of spans chooses among
    fewer sets than this, so the best of these bounds what manoeuvre content can buy.
    """
    w = pool.windows
    hit = np.zeros(len(w), bool)
    for k in res_domain(res).tail:
        hit |= np.nan_to_num(w.metrics[k], nan=-np.inf) >= np.nanquantile(test.metrics[k], 0.9)
    hz = pool.loaded.pipeline.schema.sample_hz
    stride = res_domain(res).train_stride
    shares = (0.2, 0.5) if quick else SHARES
    for setting in ("window random", *(f"share {x:g}" for x in shares)):
        res.bound[setting] = {}
        for b in budgets:
            n = min(len(w), round(b * 3600 * hz / stride))
            runs = []
            for s in range(1 if quick else 3):
                rng = np.random.default_rng([2929, s])
                if setting == "window random":
                    idx = rng.permutation(len(w))[:n]
                else:
                    k = round(float(setting.split()[1]) * n)
                    idx = np.concatenate(
                        [
                            rng.permutation(np.flatnonzero(hit))[:k],
                            rng.permutation(np.flatnonzero(~hit))[: n - k],
                        ]
                    )
                runs.append(_evaluate(w.take(np.sort(idx)), test, sets, quick))
            res.bound[setting][b] = {k: float(np.mean([r[k] for r in runs])) for k in runs[0]}


def _oracle(
    res: DomainResult,
    pool: ea.Pool,
    test: ed.Windows,
    sets: dict[str, np.ndarray],
    budgets: list[float],
    quick: bool,
) -> None:
    """The ORACLE's spans per size (it looks at the test tail: a ceiling, not a strategy).

    ``in-sample``: greedy on the whole test tail, scored on it.  ``cross A`` / ``cross B``:
    greedy on the tail of one half of the test entities (``tailA`` / ``tailB``), to be
    scored on the other half's tail (the cross-fitted ceiling, see the report).
    ``constrained ...``: the same three, each set's ridge error on all of its target
    windows (all, or one half's) held at or below the random arm's mean there
    (:func:`evidence_oracle.constrained`).
    """
    hz = pool.loaded.pipeline.schema.sample_hz
    ticks = [round(b * 3600 * hz) for b in budgets]
    st = eo.span_stats(pool, eo.span_of_windows(pool))
    r = test.y - test.cv
    found: dict[str, list[np.ndarray]] = {}
    plain: dict[str, np.ndarray] = {}
    targets = {"in-sample": sets["tail"], "cross A": sets["tailA"], "cross B": sets["tailB"]}
    for name, m in targets.items():
        plain[name] = eo.greedy_tail(pool, st, test.x[m], r[m], max(ticks))
        found[name] = [ea.truncate(pool, plain[name], n) for n in ticks]
    # constrained: all windows' ridge error at most the random arm's mean on the same windows
    lambdas = (0.0, 1.0, 4.0) if quick else eo.LAMBDAS
    scope = {"in-sample": "all", "cross A": "allA", "cross B": "allB"}
    for name, key in scope.items():
        m = sets[key]
        caps = [
            float(np.mean([v[f"ridge/{key}"] for v in res.errors["random"][b].values()]))
            for b in budgets
        ]
        got = eo.constrained(
            pool, st, test.x[m], r[m], test.tail[m], ticks, caps, lambdas, plain[name]
        )
        found[f"constrained {name}"] = [g[0] for g in got]
        res.oracle_lambda[f"constrained {name}"] = {
            b: (g[1], g[2]) for b, g in zip(budgets, got, strict=True)
        }
    for name, per in found.items():
        res.oracle[name] = {}
        for b, spans in zip(budgets, per, strict=True):
            train = pool.windows.take(np.flatnonzero(ea.window_mask(pool, spans)))
            res.oracle[name][b] = _evaluate(train, test, sets, quick)
            res.oracle_usable_h.setdefault(name, {})[b] = float(
                pool.usable[spans].sum() / hz / 3600
            )


# seeded halvings of the test entities the repeated cross-fit uses (each both ways)
SPLITS = 10


def _ceiling(
    res: DomainResult,
    pool: ea.Pool,
    test: ed.Windows,
    budgets: list[float],
    n_rand: int,
    quick: bool,
) -> None:
    """The constrained ORACLE chosen on one part of the test set and scored on another
    (:mod:`evidence_ceiling`): ``SPLITS`` entity halvings both ways, by time, and jointly
    by entity and time (with the same-entity control); then what the by-entity choices'
    span sets share (:mod:`evidence_ceiling_sets`)."""
    hz = pool.loaded.pipeline.schema.sample_hz
    st = eo.span_stats(pool, eo.span_of_windows(pool))
    tail = tuple(res_domain(res).tail)
    inp = ec.CeilingInputs(
        pool,
        st,
        test,
        test.y - test.cv,
        [round(b * 3600 * hz) for b in budgets],
        ec.random_errors(pool, st, test, budgets, n_rand),
        tail,
    )
    k = 2 if quick else SPLITS
    # quick: one halving for the joint parts (both ways, and the control both halves)
    joint = ec.joint_parts(test, 1 if quick else SPLITS)
    parts = [*ec.entity_parts(test, k), ec.time_part(test), *joint]
    sets: dict[str, list[np.ndarray]] = {}
    res.ceiling = ec.ceiling(inp, parts, (0.0, 1.0) if quick else ec.LAMBDAS, sets)
    res.ceiling_sets = ecs.overlap(
        pool, test, ec.entity_halvings(test, k), sets, budgets, n_rand, tail
    )


def res_domain(res: DomainResult) -> ed.Domain:
    return ed.DOMAINS[res.domain]


def _fault_arm(
    res: DomainResult,
    pool: ea.Pool,
    test: ed.Windows,
    sets: dict[str, np.ndarray],
    budgets: list[float],
    n_rand: int,
    quick: bool,
    log: Any,
) -> None:
    """Random spans of the faulty pool, with and without the quality filters."""
    bad = ef.faulty_pool(pool)
    ok_bad, ok_clean = ef.passing(bad), ef.passing(pool)
    res.filter_pass = {
        "faulty pool": float(ok_bad.mean()),
        "clean pool": float(ok_clean.mean()),
    }
    hz = pool.loaded.pipeline.schema.sample_hz
    for name in ("faulty random", "filtered random"):
        res.faults[name] = {}
        for b in budgets:
            cell: dict[int, dict[str, float]] = {}
            for s in range(n_rand):
                if name == "faulty random":
                    ticks = round(b * 3600 * hz)
                    spans = ea.truncate(bad, ea.random_order(bad, s), ticks)
                else:
                    spans = ef.filtered_random(bad, ok_bad, s, b)
                train = bad.windows.take(np.flatnonzero(ea.window_mask(bad, spans)))
                cell[s] = _evaluate(train, test, sets, quick)
            res.faults[name][b] = cell
            log(
                f"  {res.domain} {name} {b:g} h: ridge/all "
                f"{np.mean([c['ridge/all'] for c in cell.values()]):.3f}"
            )


def _tail_share(domain: ed.Domain, train: ed.Windows, test: ed.Windows) -> float:
    """Share of training windows past any of the test tail's thresholds (its manoeuvres)."""
    if not len(train):
        return float("nan")
    hit = np.zeros(len(train), bool)
    for k in domain.tail:
        thr = np.nanquantile(test.metrics[k], 0.9)
        hit |= np.nan_to_num(train.metrics[k], nan=-np.inf) >= thr
    return float(hit.mean())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one size per domain, few seeds (seconds)")
    ap.add_argument("--domains", default="adsb,football")
    ap.add_argument(
        "--validate",
        action="store_true",
        help="only the validation split carved from each pool by time (how strategies are chosen)",
    )
    ap.add_argument("--write", type=Path, help="write the markdown report here (docs/evidence.md)")
    ap.add_argument("--json", type=Path, help="write every number as JSON here")
    args = ap.parse_args(argv)
    names = args.domains.split(",")
    results, checks = [], []
    with threadpool_limits(limits=1):
        if args.validate or not args.quick:  # strategies are chosen on these
            checks = [
                run_domain(validation(ed.DOMAINS[n]), quick=args.quick, split="validation")
                for n in names
            ]
        if not args.validate:
            results = [run_domain(ed.DOMAINS[n], quick=args.quick) for n in names]
    doc = er.to_json(results + checks)
    text = er.render(results, checks, quick=args.quick)
    print(text)
    digest = hashlib.sha256(json.dumps(doc["numbers"], sort_keys=True).encode()).hexdigest()
    print(f"numbers sha256: {digest}")
    if args.json:
        args.json.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    if args.write:
        args.write.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
