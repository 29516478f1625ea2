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
        assert set(nums["errors"]) >= {"random"}
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


def _toy_ceiling(seed: int = 11):  # type: ignore[no-untyped-def]
    """A pool of 40 spans of 25 windows (a quarter "wild": larger inputs, as turns are) and
    a test set of 30 entities whose first windows are wild (the tail)."""
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
    xt, rt = make(rng.normal(size=(m, d)) * np.where(np.arange(m) < 90, 3.0, 1.0)[:, None])
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
