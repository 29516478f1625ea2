"""``bench/evidence.py``: the evidence benchmark runs end to end in its quick mode and a
rerun gives the same numbers (it asserts nothing about which arm wins)."""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load_evidence():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("evidence", ROOT / "bench" / "evidence.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("evidence", mod)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
def test_quick_mode_runs_and_reruns_identically(tmp_path: Path) -> None:
    evidence = _load_evidence()
    docs = []
    for i in range(2):
        out = tmp_path / f"run{i}.json"
        md = tmp_path / f"run{i}.md"
        assert evidence.main(["--quick", "--json", str(out), "--write", str(md)]) == 0
        docs.append(json.loads(out.read_text(encoding="utf-8")))
        text = md.read_text(encoding="utf-8")
        assert "## adsb, test" in text and "## football, test" in text
    assert docs[0]["numbers"] == docs[1]["numbers"]
    for domain in ("adsb", "football"):
        nums = docs[0]["numbers"][f"{domain}/test"]
        assert set(nums["errors"]) >= {"random", "guided:constrained"}
        assert len(nums["errors"]["random"]["1" if domain == "adsb" else "0.2"]) == 3
        # every arm trained on as many usable hours as it was asked for (one span's slack)
        for arm, per in nums["usable_h"].items():
            for budget, got in per.items():
                assert all(float(budget) <= h < float(budget) + 0.2 for h in got), (arm, got)
    rows = docs[0]["tests"][0]
    assert rows and all(0.0 <= r["p_holm"] <= 1.0 and r["p"] <= r["p_holm"] for r in rows)
    for domain, b in (("adsb", "1"), ("football", "0.2")):
        nums = docs[0]["numbers"][f"{domain}/test"]
        # the ORACLE chose its spans to lower ridge's test-tail error: below random's mean
        rand = np.mean([v["ridge/tail"] for v in nums["errors"]["random"][b].values()])
        assert nums["oracle"]["in-sample"][b]["ridge/tail"] < rand
        assert float(b) <= nums["oracle_usable_h"]["in-sample"][b] < float(b) + 0.2
        # the constrained ORACLE kept ridge's error on its windows (all, or its half) at or
        # below random's mean there, measured by the benchmark's own ridge fit
        for path, key in (("in-sample", "all"), ("cross A", "allA"), ("cross B", "allB")):
            lam, feasible = nums["oracle_lambda"][f"constrained {path}"][b]
            cap = np.mean([v[f"ridge/{key}"] for v in nums["errors"]["random"][b].values()])
            assert feasible, (domain, path, lam)
            assert nums["oracle"][f"constrained {path}"][b][f"ridge/{key}"] <= cap
        # the repeated cross-fit: every halving both ways and the timed split, each choice
        # within the cap on the part it was chosen on
        ceiling = nums["ceiling"]
        assert len([k for k in ceiling if k.startswith("entity")]) == 4 and "time" in ceiling
        for rec in (per[b] for per in ceiling.values()):
            assert rec["feasible"] == 1.0 and rec["in_all"] <= 0.0
        assert {"joint 0 A>B", "joint 0 B>A", "same 0 A", "minutes 0 B>A"} <= set(ceiling)
        assert all(ceiling[k][b]["n_tail_score"] > 0 for k in ceiling)
        sets = nums["ceiling_sets"][b]
        assert 0.0 <= sets["jac"] <= 1.0 and 0.0 <= sets["rand_jac_usable"] <= 1.0
        assert sets["choices"] == 4 and 0.0 < sets["pool_late"] < 1.0
        assert set(nums["sdk_random"][b]) == {"all", "tail"}


def _load_bench(name: str):  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(ROOT / "bench"))


def test_oracle_ridge_from_sums_is_the_benchmark_ridge() -> None:
    """The ORACLE's closed-form ridge (from per-span sums) predicts what the benchmark's
    StandardScaler + Ridge pipeline predicts, a constant input column included."""
    eo = _load_bench("evidence_oracle")
    es = _load_bench("evidence_stats")
    rng = np.random.default_rng(29)
    x = rng.normal(size=(300, 6)) * [1.0, 50.0, 0.01, 3.0, 1.0, 1.0] + [0, 10, 0, -5, 0, 0]
    x[:, 4] = 7.0  # constant: StandardScaler scales it by 1
    r = x[:, :2] @ rng.normal(size=(2, 2)) + rng.normal(size=(300, 2))
    parts = np.array_split(np.arange(300), 5)  # five "spans", summed as the oracle does
    sums = [
        sum(v)
        for v in zip(
            *[(len(p), x[p].sum(0), x[p].T @ x[p], r[p].sum(0), x[p].T @ r[p]) for p in parts],
            strict=True,
        )
    ]
    coef, icpt = eo.ridge_from_stats(*(np.asarray(v, float)[None] for v in sums))
    test = rng.normal(size=(40, 6))
    want = es.fit_predict("ridge", x, r, [test], quick=True)[0]
    np.testing.assert_allclose(test @ coef[0] + icpt[0], want, rtol=1e-7, atol=1e-7)


def test_constrained_oracle_meets_the_cap_or_says_it_cannot() -> None:
    """The constrained ORACLE returns, per size, a set whose all-windows ridge error is at
    most the cap, the lowest-tail one among its paths; a cap no set meets is flagged."""
    eo = _load_bench("evidence_oracle")
    rng = np.random.default_rng(7)
    n_spans, per = 40, 25
    # spans of two kinds: "calm" ones fit the bulk, "wild" ones (larger inputs) fit the tail
    wild = np.arange(n_spans) % 4 == 0
    x = rng.normal(size=(n_spans, per, 3)) * np.where(wild, 3.0, 1.0)[:, None, None]
    beta = np.array([[1.0, 0.5], [-0.5, 1.0], [0.2, 0.0]])
    r = x @ beta + 0.3 * np.abs(x) ** 2 @ beta + rng.normal(size=(n_spans, per, 2)) * 0.1
    parts = (
        np.full(n_spans, float(per)),
        x.sum(1),
        np.einsum("spd,spe->sde", x, x),
        r.sum(1),
        np.einsum("spd,spk->sdk", x, r),
    )
    st = eo.SpanStats(*parts)
    pool = type("P", (), {"usable": np.full(n_spans, 100, np.int64)})()
    xt = rng.normal(size=(400, 3)) * np.where(np.arange(400) < 60, 3.0, 1.0)[:, None]
    rt = xt @ beta + 0.3 * np.abs(xt) ** 2 @ beta
    tail = np.arange(400) < 60
    every = np.ones(400, bool)
    ticks = [300, 800]
    loose = [1e9, 1e9]
    plain = eo.constrained(pool, st, xt, rt, tail, ticks, loose, (0.0,))
    # with a cap nothing can break, the constrained ORACLE is the plain tail ORACLE
    got = eo.constrained(pool, st, xt, rt, tail, ticks, loose)
    for (s0, _, ok0), (s1, lam, ok1) in zip(plain, got, strict=True):
        assert ok0 and ok1 and lam == 0.0 and np.array_equal(s0, s1)
    # a cap between the plain ORACLE's all-windows error and the best path's
    e_plain = [eo.set_errors(st, s, xt, rt, [every])[0] for s, _, _ in plain]
    best_all = []
    for n in ticks:
        order = eo.greedy_tail(pool, st, xt, rt, n)  # uniform weights: all windows alone
        best_all.append(eo.set_errors(st, eo.ea.truncate(pool, order, n), xt, rt, [every])[0])
    assert all(b < p for b, p in zip(best_all, e_plain, strict=True))
    caps = [0.5 * (b + p) for b, p in zip(best_all, e_plain, strict=True)]
    got = eo.constrained(pool, st, xt, rt, tail, ticks, caps)
    for (spans, lam, ok), cap in zip(got, caps, strict=True):
        assert ok and lam > 0.0
        assert eo.set_errors(st, spans, xt, rt, [every])[0] <= cap
    # no set of these sizes has all-windows error 0: flagged, the lowest-all set returned
    for spans, _, ok in eo.constrained(pool, st, xt, rt, tail, ticks, [0.0, 0.0]):
        assert not ok and eo.set_errors(st, spans, xt, rt, [every])[0] > 0.0


def _toy_ceiling(seed: int = 11, wild_every: int = 0):  # type: ignore[no-untyped-def]
    """A pool of 40 spans of 25 windows (a quarter "wild": larger inputs, as turns are) and
    a test set of 30 entities whose first windows are wild (the tail), or with
    ``wild_every``, every such window in time."""
    from types import SimpleNamespace

    eo = _load_bench("evidence_oracle")
    ec = _load_bench("evidence_ceiling")
    ed = _load_bench("evidence_data")
    rng = np.random.default_rng(seed)
    n_spans, per, d = 40, 25, 3
    beta = np.array([[1.0, 0.5], [-0.5, 1.0], [0.2, 0.0]])

    def make(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        r = x @ beta + 0.3 * np.abs(x) ** 2 @ beta + rng.normal(size=(len(x), 2)) * 0.3
        return x, r

    wild = np.repeat(np.arange(n_spans) % 4 == 0, per)
    x, r = make(rng.normal(size=(n_spans * per, d)) * np.where(wild, 3.0, 1.0)[:, None])
    span_of = np.repeat(np.arange(n_spans), per)
    zeros = np.zeros((len(x), 2))
    windows = ed.Windows(x, r, zeros, span_of, span_of.astype(object), span_of, span_of, ["p"])
    windows.metrics = {"m": np.abs(x).max(axis=1)}
    pool = SimpleNamespace(usable=np.full(n_spans, 100, np.int64), windows=windows)
    parts = (
        np.full(n_spans, float(per)),
        np.stack([x[span_of == s].sum(0) for s in range(n_spans)]),
        np.stack([x[span_of == s].T @ x[span_of == s] for s in range(n_spans)]),
        np.stack([r[span_of == s].sum(0) for s in range(n_spans)]),
        np.stack([x[span_of == s].T @ r[span_of == s] for s in range(n_spans)]),
    )
    st = eo.SpanStats(*parts)
    m = 600
    ent = np.arange(m) % 30
    wild_t = np.arange(m) % wild_every == 0 if wild_every else np.arange(m) < 90
    xt, rt = make(rng.normal(size=(m, d)) * np.where(wild_t, 3.0, 1.0)[:, None])
    src = np.arange(m) // 200  # three "sources" in time order
    first = (np.arange(m) % 200) * 10
    test = ed.Windows(
        xt, rt, np.zeros((m, 2)), src, ent.astype(object), first, first + 20, ["a", "b", "c"]
    )
    test.metrics = {"m": np.abs(xt).max(axis=1)}
    test.tail = test.metrics["m"] >= np.quantile(test.metrics["m"], 0.85)
    ticks = [400, 1200]
    rand = [
        np.stack(
            [
                ec.set_error_vector(
                    st,
                    ec.ea.truncate(pool, np.random.default_rng(s).permutation(n_spans), n),
                    xt,
                    rt,
                )
                for s in range(6)
            ]
        )
        for n in ticks
    ]
    return ec, ec.CeilingInputs(pool, st, test, rt, ticks, rand, ("m",))  # type: ignore[arg-type]


def test_repeated_cross_fit_keeps_the_cap_on_its_choosing_half_and_reruns_identically() -> None:
    """Each entity halving is a partition used both ways; every choice the constrained
    ORACLE flags feasible keeps ridge's all-windows error on its choosing half at or below
    the random sets' mean there, and a rerun gives the same records."""
    ec, inp = _toy_ceiling()
    parts = ec.entity_parts(inp.test, 3)
    rerun = ec.entity_parts(inp.test, 3)
    assert len(parts) == 6 and [p.name for p in parts] == [p.name for p in rerun]
    assert all(np.array_equal(p.choose, q.choose) for p, q in zip(parts, rerun, strict=True))
    for a, b in zip(parts[::2], parts[1::2], strict=True):
        assert np.array_equal(a.choose, b.score) and np.array_equal(a.score, b.choose)
        assert np.array_equal(a.choose, ~a.score)
        ents_a = set(inp.test.entity[a.choose].tolist())
        assert ents_a.isdisjoint(inp.test.entity[a.score].tolist())
        assert len(ents_a) == 15
    assert not np.array_equal(parts[0].choose, parts[2].choose)  # the halvings differ
    t = ec.time_part(inp.test)
    key = inp.test.source * 10**6
    assert (key[t.choose] + inp.test.last[t.choose]).max() < (
        key[t.score] + inp.test.first[t.score]
    ).min()
    got = ec.ceiling(inp, [*parts, t], (0.0, 1.0, 4.0))
    again = ec.ceiling(inp, [*parts, t], (0.0, 1.0, 4.0))
    assert got == again
    n_feasible = 0
    for recs in got.values():
        for rec in recs:
            if rec["feasible"]:
                n_feasible += 1
                assert rec["in_all"] <= 0.0
            assert rec["optimism"] == pytest.approx(rec["tail"] - rec["in_tail"])
    assert n_feasible > 0


def test_joint_cross_fit_shares_neither_entities_nor_time_and_keeps_the_cap() -> None:
    """A joint part chooses on one half of the test entities' earlier windows and is scored
    on the other half's later ones: no entity and no tick in common; its halvings are the
    by-entity cross-fit's.  The controls share the entities and not the time, or the time
    (earlier minutes) and not the entities.  Every choice
    flagged feasible keeps ridge's all-windows error on its choosing part at or below the
    random sets' mean there, checked here from the chosen spans themselves."""
    ec, inp = _toy_ceiling(wild_every=6)
    t, test = ec.time_part(inp.test), inp.test
    halves = ec.entity_halvings(test, 3)
    ent = ec.entity_parts(test, 3)
    assert all(np.array_equal(h, p.choose) for h, p in zip(halves, ent[::2], strict=True))
    parts = ec.joint_parts(test, 3)
    assert len(parts) == 18
    key = test.source.astype(np.int64) * 10**6
    end, start = key + test.last, key + test.first
    for p in parts:
        assert p.choose.any() and p.score.any() and not (p.choose & p.score).any()
        assert (p.choose <= t.choose).all()
        chosen, scored = set(test.entity[p.choose].tolist()), set(test.entity[p.score].tolist())
        if p.name.startswith("minutes"):  # other entities, the same earlier minutes
            assert (p.score <= t.choose).all() and chosen.isdisjoint(scored)
            continue
        assert (p.score <= t.score).all()
        assert end[p.choose].max() < start[p.score].min()  # every chosen window ends first
        if p.name.startswith("joint"):
            assert chosen.isdisjoint(scored)
        else:  # the control: the same half's entities, later
            assert p.name.startswith("same") and chosen == scored
    sets: dict[str, list[np.ndarray]] = {}
    got = ec.ceiling(inp, parts, (0.0, 1.0, 4.0), sets)
    assert got == ec.ceiling(inp, parts, (0.0, 1.0, 4.0))
    assert set(sets) == {p.name for p in parts}
    n_feasible = 0
    for p in parts:
        for j, rec in enumerate(got[p.name]):
            assert rec["n_tail_score"] == np.count_nonzero(p.score & test.tail) > 0
            err = ec.set_error_vector(inp.st, sets[p.name][j], test.x, inp.r)[p.choose].mean()
            cap = inp.rand[j][:, p.choose].mean()
            assert rec["in_all"] == pytest.approx(err / cap - 1)
            if rec["feasible"]:
                n_feasible += 1
                assert err <= cap
    assert n_feasible > 0


def test_jaccard_of_span_sets() -> None:
    """The sets diagnostic's overlap: plain and weighted by each span's usable time."""
    ecs = _load_bench("evidence_ceiling_sets")
    a, b = np.array([0, 1, 2, 3]), np.array([2, 3, 4])
    assert ecs.jaccard(a, b) == pytest.approx(2 / 5)
    w = np.array([1.0, 1.0, 10.0, 10.0, 100.0])
    assert ecs.jaccard(a, b, w) == pytest.approx(20 / 122)
    assert ecs.jaccard(a, a, w) == 1.0 and ecs.jaccard(a, np.array([4]), w) == 0.0


def test_weighted_ridge_is_the_benchmarks_ridge_with_sample_weights() -> None:
    """The reweighted pool's closed form is StandardScaler + Ridge fitted with the weights."""
    es = _load_bench("evidence_stats")
    ec = _load_bench("evidence_ceiling")
    rng = np.random.default_rng(3)
    x = rng.normal(size=(200, 4)) * [1.0, 20.0, 0.1, 2.0] + [0, 5, 0, 1]
    r = x[:, :2] @ rng.normal(size=(2, 2)) + rng.normal(size=(200, 2))
    w = np.where(rng.random(200) < 0.2, 9.0, 1.0)
    w = w / w.mean()
    coef, icpt = ec.weighted_ridge(x, r, w)
    model = es.make_model("ridge")
    model.fit(x, r, standardscaler__sample_weight=w, ridge__sample_weight=w)
    test = rng.normal(size=(30, 4))
    np.testing.assert_allclose(test @ coef + icpt, model.predict(test), rtol=1e-7, atol=1e-7)


def test_guided_carve_keeps_guidance_out_of_the_candidates() -> None:
    """The guidance windows and the candidate spans never share a source (several sources)
    or a tick (one source): what guides the choice is never chosen."""
    eg = _load_bench("evidence_guided")
    from types import SimpleNamespace as NS

    # three sources of windows and spans: the last GUIDE_SOURCES guide
    w = NS(
        source=np.array([0, 0, 1, 2, 2]),
        source_ids=["a", "b", "c"],
        first=np.array([0, 50, 0, 0, 10]),
    )
    t = NS(source_ids=["c", "a", "b"], source=np.array([0, 1, 2, 1]), last=np.array([9] * 4))
    guide, cand = eg.carve(NS(windows=w, table=t, masks={"a": np.zeros((100, 2))}))
    gone = {w.source_ids[i] for i in sorted(set(w.source.tolist()))[-eg.GUIDE_SOURCES :]}
    assert guide.tolist() == [s in gone for s in np.asarray(w.source_ids)[w.source]]
    assert cand.tolist() == [t.source_ids[s] not in gone for s in t.source]
    assert guide.any() and cand.any()
    # one source: guidance is the pool's last share of ticks, candidates end before it
    n = 1000
    w1 = NS(source=np.zeros(6, int), source_ids=["a"], first=np.array([0, 300, 640, 650, 700, 990]))
    t1 = NS(source_ids=["a"], source=np.zeros(4, int), last=np.array([299, 649, 650, 999]))
    guide, cand = eg.carve(NS(windows=w1, table=t1, masks={"a": np.zeros((n, 3))}))
    g0 = int((1 - eg.GUIDE_FRACTION) * n)
    assert guide.tolist() == (w1.first >= g0).tolist() and guide.sum() == 3
    assert cand.tolist() == [True, True, False, False]
    assert t1.last[cand].max() < w1.first[guide].min()


@pytest.mark.slow
def test_guided_selection_on_real_data_lowers_the_guidance_error() -> None:
    """On football's validation pool (one source carved by time), each guided arm's spans
    are candidates only, hold the budget's usable time, and the constrained arm's ridge
    error on all guidance windows is at most random spans' mean (its cap)."""
    ev = _load_evidence()
    ed, ea, eg, eo = (
        _load_bench(m)
        for m in ("evidence_data", "evidence_arms", "evidence_guided", "evidence_oracle")
    )
    domain = ev.validation(ed.DOMAINS["football"])
    loaded = ed.load(domain)
    pool = ea.build_pool(loaded, [])
    hz = loaded.pipeline.schema.sample_hz
    budgets = [0.05, 0.1]
    got = eg.select_all(pool, eg.arms(), budgets)
    guide, cand = eg.carve(pool)
    assert set(got) == {a.name for a in eg.arms()}
    st = eo.span_stats(pool, eo.span_of_windows(pool))
    w = pool.windows
    xg, rg = w.x[guide], (w.y - w.cv)[guide]
    every = np.ones(len(xg), bool)
    for name, per in got.items():
        for b, spans in per.items():
            assert spans.size and cand[spans].all(), name
            h = pool.usable[spans].sum() / hz / 3600
            assert b <= h < b + 0.02, (name, b, h)
            if name == "guided:constrained":
                cap = eg._random_cap(pool, st, cand, xg, rg, round(b * 3600 * hz))
                assert eo.set_errors(st, spans, xg, rg, [every])[0] <= cap
    # the all-windows objective beats random spans of the same candidates on the guidance
    k = round(0.1 * 3600 * hz)
    best = eo.set_errors(st, got["guided:lam=all"][0.1], xg, rg, [every])[0]
    assert best < eg._random_cap(pool, st, cand, xg, rg, k)


def test_tail_mix_gives_the_top_its_share_and_fills_from_the_passes() -> None:
    """tail_mix admits the top-ranked spans up to its share of the budget, then random spans
    among the other ranked ones (never an unranked span: it failed the filters)."""
    ea = _load_bench("evidence_arms")
    from types import SimpleNamespace as NS

    n = 50
    pool = NS(usable=np.full(n, 10, np.int64), table=np.zeros(n))
    ranked = np.array([7, 3, 11, 0, 5, 9, 21, 30, 31, 40, 41, 42, 43, 44, 45])
    for share, seed in ((0.0, 0), (0.3, 1), (0.3, 2), (1.0, 0)):
        got = ea.tail_mix(pool, ranked, share, seed, 100)
        assert len(set(got.tolist())) == got.size and pool.usable[got].sum() >= 100
        assert set(got.tolist()) <= set(ranked.tolist())
        head = round(share * 100) // 10
        assert got[:head].tolist() == ranked[:head].tolist()
    # the fill's order follows the seed; the head does not
    a, b = ea.tail_mix(pool, ranked, 0.3, 1, 100), ea.tail_mix(pool, ranked, 0.3, 2, 100)
    assert a[:3].tolist() == b[:3].tolist() and a.tolist() != b.tolist()


@pytest.mark.slow
def test_dedup_first_takes_near_duplicates_only_when_the_rest_run_out() -> None:
    """On football's validation pool: the near_dedup arm admits only spans the filters keep
    while they suffice, then the quality-passing near duplicates, never a failing span."""
    ev = _load_evidence()
    ed, ea = _load_bench("evidence_data"), _load_bench("evidence_arms")
    domain = ev.validation(ed.DOMAINS["football"])
    loaded = ed.load(domain)
    pool = ea.build_pool(loaded, [])
    arm = next(a for a in ev.arms_for(domain) if a.name.startswith("track:quality+near-dedup"))
    quality = next(a for a in ev.arms_for(domain) if a.name == "track:quality-random")
    pool.span_features = ea.track_features(
        pool, {**arm.strategy["define"], **quality.strategy["define"]}
    )
    schema = loaded.pipeline.schema
    kept = set(ea._track_order(pool, ea.load_strategy(dict(arm.strategy), schema), 0).tolist())
    ok = set(ea._track_order(pool, ea.load_strategy(dict(quality.strategy), schema), 0).tolist())
    assert kept < ok  # near_dedup removed some of the quality passes
    hz = schema.sample_hz
    kept_h = pool.usable[sorted(kept)].sum() / hz / 3600
    small = ea.select(pool, arm, 0, 0.5 * kept_h)
    assert set(small.tolist()) <= kept
    big = ea.select(
        pool, arm, 0, min(1.2 * kept_h, 0.9 * pool.usable[sorted(ok)].sum() / hz / 3600)
    )
    assert kept <= set(big.tolist()) <= ok and not set(big.tolist()) <= kept


def test_json_of_a_split_without_cross_fit() -> None:
    """A validation split has no cross-fit and no span-set diagnostic; its JSON holds them
    empty (the full run writes validation splits beside the test ones)."""
    ev = _load_evidence()
    er = _load_bench("evidence_report")
    r = ev.DomainResult("adsb", [0.5, 1.0], {}, "validation")
    nums = er.to_json([r])["numbers"]["adsb/validation"]
    assert nums["ceiling"] == {} and nums["ceiling_sets"] == {}
