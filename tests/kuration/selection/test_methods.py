"""Selection methods: shared registry-driven checks, golden values, and the coverage bounds.

k-center and facility location are checked against a brute-force optimum on
small pools: Gonzalez's farthest-point greedy has covering radius at most
twice the best k-subset's; greedy facility location reaches at least
(1 - 1/e) of the best k-subset's value (Nemhauser, Wolsey & Fisher 1978).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import zscore

from kuration import Segment
from kuration.errors import StrategyError
from kuration.extend import registered_methods
from kuration.selection.binning import bin_segments
from kuration.selection.methods import get_method, register_method
from kuration.selection.methods.base import normalize_columns, order_to_priorities
from kuration.selection.methods.bins import apportion_order
from kuration.selection.methods.coverage import (
    facility_location_value,
    greedy_facility_location,
    greedy_k_center,
    k_center_radius,
    similarity_scale,
)
from kuration.selection.methods.importance import importance_log_weights

FEATURES = ("a", "b", "c")
AXES = ("a", "b")

# one valid parameter set per built-in method (params, needs bins)
EXAMPLES: dict[str, dict] = {
    "uniform-bins": {},
    "target-distribution": {"target": {"bins": {"0,0": 1, "1,1": 2}}},
    "top-k": {"by": "a"},
    "weighted": {"weights": {"a": 1.0, "c": -0.5}},
    "filter": {"where": [{"feature": "a", "op": ">", "value": 0}]},
    "k-center": {"features": ["a", "b"]},
    "facility-location": {"features": ["a", "b", "c"], "kernel": "rbf"},
    "importance": {"target": {"where": [{"feature": "b", "op": ">=", "quantile": 0.5}]}},
}


def pool(n: int, seed: int = 0, nan_frac: float = 0.0) -> list[Segment]:
    rng = np.random.default_rng(seed)
    segs = []
    for i in range(n):
        f = {k: float(rng.normal()) for k in FEATURES}
        if rng.random() < nan_frac:
            f["a"] = math.nan
        segs.append(Segment(f"s{i % 3}", 10 * i, 10 * i + 5, f))
    bin_segments(segs, AXES, 2)
    return segs


def test_every_builtin_is_registered_and_has_an_example() -> None:
    assert set(EXAMPLES) <= set(registered_methods())


@pytest.mark.parametrize("name", sorted(EXAMPLES))
@pytest.mark.parametrize("nan_policy", ["exclude", "lowest"])
def test_shared_method_contract(name: str, nan_policy: str) -> None:
    method = get_method(name)
    params = EXAMPLES[name]
    method.validate(params, FEATURES, AXES)
    segs = pool(40, nan_frac=0.2)
    p1 = method.priorities(segs, params, 7, nan_policy)
    p2 = method.priorities(segs, params, 7, nan_policy)
    assert p1.shape == (40,) and p1.dtype == np.float64
    assert not np.isnan(p1).any() and not np.isposinf(p1).any()
    assert np.array_equal(p1, p2)  # deterministic for a seed
    # every example reads feature ``a``: a NaN there follows nan_policy (the filter
    # method's predicate fails on NaN, so it excludes under either policy)
    bad = np.array([not math.isfinite(s.features["a"]) for s in segs])
    assert bad.any() and np.isfinite(p1[~bad]).any()
    if nan_policy == "exclude" or name == "filter":
        assert np.isneginf(p1[bad]).all()
    else:
        assert np.isfinite(p1[bad]).all()
        assert p1[bad].max() < p1[~bad & np.isfinite(p1)].min()
    assert method.priorities([], params, 0, nan_policy).shape == (0,)


def test_validation_errors_are_strategy_errors() -> None:
    bad = {
        "uniform-bins": ({"nope": 1}, AXES),
        "top-k": ({"by": "zzz"}, AXES),
        "weighted": ({"weights": {"a": "x"}}, AXES),
        "filter": ({"where": []}, AXES),
        "k-center": ({"features": ["zzz"]}, AXES),
        "facility-location": ({"kernel": "cosine"}, AXES),
        "importance": ({"target": {"values": []}}, AXES),
        "target-distribution": ({"target": {"bins": {"0": 1}}}, AXES),
    }
    for name, (params, axes) in bad.items():
        with pytest.raises(StrategyError):
            get_method(name).validate(params, FEATURES, axes)
    with pytest.raises(StrategyError, match="needs bin axes"):
        get_method("uniform-bins").validate({}, FEATURES, ())


def test_register_method_checks_the_contract() -> None:
    with pytest.raises(TypeError):
        register_method("not-a-method", object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="already registered"):
        register_method("top-k", get_method("weighted"))


def test_weighted_is_a_weighted_sum_of_zscores() -> None:
    segs = pool(30, seed=3)
    params = {"weights": {"a": 2.0, "b": -1.0}}
    prio = get_method("weighted").priorities(segs, params, 0, "exclude")
    a = np.array([s.features["a"] for s in segs])
    b = np.array([s.features["b"] for s in segs])
    assert prio == pytest.approx(2.0 * zscore(a) - 1.0 * zscore(b))


def test_normalizers() -> None:
    x = np.array([[1.0], [2.0], [2.0], [np.nan], [5.0]])
    assert normalize_columns(x, "minmax")[:, 0].tolist()[:3] == [0.0, 0.25, 0.25]
    r = normalize_columns(x, "rank")[:, 0]
    # mid-ranks (scipy.stats.rankdata) minus 1/2, over the finite count
    assert r[[0, 1, 2, 4]] == pytest.approx((np.array([1, 2.5, 2.5, 4]) - 0.5) / 4)
    assert np.isnan(r[3])
    assert (normalize_columns(np.ones((4, 1)), "zscore") == 0).all()
    with pytest.raises(StrategyError):
        normalize_columns(x, "bogus")


def test_top_k_ranks_by_the_feature() -> None:
    segs = pool(20, seed=1)
    prio = get_method("top-k").priorities(segs, {"by": "b", "descending": False}, 0, "exclude")
    b = np.array([s.features["b"] for s in segs])
    assert np.argsort(-prio).tolist() == np.argsort(b).tolist()


def test_uniform_bins_round_robin() -> None:
    segs = pool(60, seed=2)
    prio = get_method("uniform-bins").priorities(segs, {}, 5, "exclude")
    occupied = {s.bin for s in segs}
    top = np.argsort(-prio)[: len(occupied)]
    assert {segs[i].bin for i in top} == occupied  # one from every bin before a second


def test_filter_method_sends_failures_to_minus_inf_and_explains() -> None:
    segs = pool(30, seed=4)
    params = {
        "where": [{"feature": "a", "op": ">", "value": 0}],
        "then": {"method": "top-k", "params": {"by": "c"}},
    }
    m = get_method("filter")
    m.validate(params, FEATURES, AXES)
    prio = m.priorities(segs, params, 0, "exclude")
    a = np.array([s.features["a"] for s in segs])
    c = np.array([s.features["c"] for s in segs])
    assert np.isneginf(prio[a <= 0]).all()
    assert prio[a > 0] == pytest.approx(c[a > 0])
    why = m.explain(segs, params)
    assert all((w is None) == (x > 0) for w, x in zip(why, a, strict=True))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(0.0, 5.0), min_size=1, max_size=6),
    st.lists(st.integers(0, 12), min_size=6, max_size=6),
)
def test_apportionment_prefixes_follow_the_weights(weights: list[float], sizes: list[int]) -> None:
    w = np.array(weights)
    sizes = sizes[: len(w)]
    members = []
    nxt = 0
    for k in sizes:
        members.append(np.arange(nxt, nxt + k))
        nxt += k
    order = apportion_order(w, members)
    live = (w > 0) & (np.array(sizes) > 0)
    assert order.size == sum(s for s, ok in zip(sizes, live, strict=True) if ok)
    assert len(set(order.tolist())) == order.size
    if not live.any():
        return
    wl = np.where(live, w, 0.0) / np.where(live, w, 0.0).sum()
    bin_of = np.concatenate([np.full(k, b) for b, k in enumerate(sizes)]) if nxt else np.zeros(0)
    counts = np.zeros(len(w))
    for k, row in enumerate(order, 1):
        counts[int(bin_of[row])] += 1
        for b in np.flatnonzero(live):
            if counts[b] < sizes[b]:  # bins that have not run out keep their share
                assert counts[b] >= math.floor(k * wl[b]) - 1


def test_target_distribution_over_a_feature_range() -> None:
    segs = pool(90, seed=5)
    params = {"target": {"feature": "c", "edges": [0.0], "weights": [1, 3]}}
    m = get_method("target-distribution")
    m.validate(params, FEATURES, AXES)
    prio = m.priorities(segs, params, 0, "exclude")
    top = np.argsort(-prio)[:20]
    hi = sum(segs[i].features["c"] >= 0 for i in top)
    assert hi == 15  # 3/4 of 20
    zero_w = {"target": {"feature": "c", "edges": [0.0], "weights": [0, 1]}, "others": "exclude"}
    prio = m.priorities(segs, zero_w, 0, "exclude")
    c = np.array([s.features["c"] for s in segs])
    assert np.isneginf(prio[c < 0]).all() and np.isfinite(prio[c >= 0]).all()


def test_order_to_priorities_top_n_is_the_order() -> None:
    order = np.array([4, 0, 2])
    prio = order_to_priorities(order, 6)
    for n in range(1, 4):
        assert set(np.argsort(-prio)[:n].tolist()) == set(order[:n].tolist())
    assert np.isneginf(prio[[1, 3, 5]]).all()


def _points(seed: int, n: int, d: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, d))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 9), st.integers(1, 3), st.integers(1, 4))
def test_k_center_is_within_twice_the_optimum(seed: int, n: int, d: int, k: int) -> None:
    x = _points(seed, n, d)
    k = min(k, n)
    order, radius = greedy_k_center(x, k)
    assert len(set(order.tolist())) == k
    assert np.all(np.diff(radius) <= 1e-12)
    assert radius[-1] == pytest.approx(k_center_radius(x, order))
    opt = min(k_center_radius(x, c) for c in itertools.combinations(range(n), k))
    assert radius[-1] <= 2.0 * opt + 1e-9


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 10_000),
    st.integers(2, 9),
    st.integers(1, 3),
    st.integers(1, 4),
    st.sampled_from(["distance", "rbf"]),
)
def test_facility_location_reaches_one_minus_one_over_e(
    seed: int, n: int, d: int, k: int, kernel: str
) -> None:
    x = _points(seed, n, d)
    k = min(k, n)
    order, gains = greedy_facility_location(x, k, kernel)
    scale = similarity_scale(x, kernel)
    value = facility_location_value(x, order, kernel, scale)
    assert gains.sum() == pytest.approx(value)
    assert np.all(np.diff(gains) <= 1e-9)  # diminishing returns
    opt = max(
        facility_location_value(x, c, kernel, scale) for c in itertools.combinations(range(n), k)
    )
    assert value >= (1.0 - 1.0 / math.e) * opt - 1e-9
    # lazy greedy == plain greedy over an independently computed similarity matrix
    dist = np.sqrt(((x[:, None, :] - x[None, :, :]) ** 2).sum(-1))
    sim = scale - dist if kernel == "distance" else np.exp(-(dist**2) / (2 * scale**2))
    cur = np.zeros(n)
    for step, pick in enumerate(order.tolist()):
        g = np.maximum(sim - cur[:, None], 0).sum(axis=0)
        g[order[:step]] = -1.0
        assert g[pick] >= g.max() - 1e-9 * max(1.0, g.max())  # every pick has maximum gain
        assert gains[step] == pytest.approx(g[pick])
        cur = np.maximum(cur, sim[:, pick])


def test_coverage_methods_top_n_equals_the_greedy_selection() -> None:
    segs = pool(50, seed=9)
    x = normalize_columns(np.array([[s.features["a"], s.features["b"]] for s in segs]), "zscore")
    for name, greedy in (
        ("k-center", greedy_k_center),
        ("facility-location", greedy_facility_location),
    ):
        params = {"features": ["a", "b"]}
        prio = get_method(name).priorities(segs, params, 0, "exclude")
        ranked = np.argsort(-prio, kind="stable")
        full, _ = greedy(x)
        for n in (1, 5, 17, 50):
            assert ranked[:n].tolist() == full[:n].tolist()
        lim = get_method(name).priorities(segs, {**params, "limit": 10}, 0, "exclude")
        assert np.argsort(-lim, kind="stable")[:10].tolist() == full[:10].tolist()
        assert np.isfinite(lim).all()


def test_importance_weights_golden_and_neutral_target() -> None:
    pool_x = np.array([[0.0], [0.0], [1.0], [1.0]])
    # two bins {0}, {1}; target all 1s; smoothing 1:
    # p_raw = (2+1)/(4+2) = 1/2 each; p_tgt(0) = 1/(2+2) = 1/4, p_tgt(1) = 3/4
    lw = importance_log_weights(pool_x, np.array([[1.0], [1.0]]), n_bins=2, smoothing=1.0)
    assert lw == pytest.approx(np.log([0.5, 0.5, 1.5, 1.5]))
    same = importance_log_weights(pool_x, pool_x, n_bins=2)
    assert same == pytest.approx(np.zeros(4))


def test_importance_resampling_draws_in_proportion_to_the_weights() -> None:
    segs = [
        Segment("s", i, i + 1, {"a": float(v), "b": 0.0, "c": 0.0})
        for i, v in enumerate([0, 0, 1, 1])
    ]
    params = {"target": {"values": [{"a": 1.0}, {"a": 1.0}]}, "features": ["a"], "bins": 2}
    m = get_method("importance")
    m.validate(params, FEATURES, ())
    wins = np.zeros(4)
    for seed in range(3000):
        wins[int(np.argmax(m.priorities(segs, params, seed, "exclude")))] += 1
    # weights 0.5, 0.5, 1.5, 1.5 -> top-1 probabilities 1/8, 1/8, 3/8, 3/8
    assert wins / wins.sum() == pytest.approx([1 / 8, 1 / 8, 3 / 8, 3 / 8], abs=0.03)
    det = m.priorities(segs, {**params, "gumbel": False}, 0, "exclude")
    assert det[2] > det[0]


def test_importance_empty_target_raises() -> None:
    segs = pool(10)
    params = {"target": {"where": [{"feature": "a", "op": ">", "value": 1e9}]}, "features": ["a"]}
    with pytest.raises(StrategyError, match="target sample is empty"):
        get_method("importance").priorities(segs, params, 0, "exclude")
    segs[0].features["a"] = math.nan
    only_nan = {"target": {"sources": "^s0$"}, "features": ["a"]}
    with pytest.raises(StrategyError, match="no finite 'a' value"):
        get_method("importance").priorities([segs[0], segs[1]], only_nan, 0, "lowest")
