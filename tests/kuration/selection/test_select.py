"""The selection engine: filters, ranking, count selection properties, and splits.

The property tests draw pools, methods and constraints and check that every
method never selects more than asked, never a filtered-out segment, honours
group caps always and tag floors whenever a brute-force search says they can
be met (and reports when not), and is deterministic for a seed whatever the
order of the pool.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pytest
from _selection_pools import make_pool, strategy
from hypothesis import given, settings
from hypothesis import strategies as st

from kuration import Segment, select_segments
from kuration.errors import StrategyError
from kuration.extend import register_filter, registered_filters
from kuration.selection.filters import apply_filters, get_filter, normalize_filters
from kuration.selection.select import apply_strategy, assign_splits, rank_pool, select_top

METHODS = {
    "uniform-bins": {"bin": {"axes": ["a", "b"], "n_bins": 2}},
    "target-distribution": {
        "bin": {"axes": ["a", "b"], "n_bins": 2},
        "params": {"target": "uniform"},
    },
    "top-k": {"params": {"by": "a"}},
    "weighted": {"params": {"weights": {"a": 1.0, "b": -1.0}}},
    "filter": {
        "params": {
            "where": [{"feature": "b", "op": "<", "value": 0.5}],
            "then": {"method": "top-k", "params": {"by": "c"}},
        }
    },
    "k-center": {},
    "facility-location": {},
    "importance": {"params": {"target": {"values": [{"a": 1.0, "b": 1.0, "c": 0.0}]}}},
}


def _keys(segs: list[Segment]) -> list[tuple[str, int]]:
    return [s.key for s in segs]


def test_filters_builtin_and_registered() -> None:
    assert {"predicate", "finite", "source"} <= set(registered_filters())
    segs = make_pool(12, nan_frac=0.3, seed=1)
    entries = normalize_filters(
        [
            {"feature": "b", "op": "between", "quantile": [0.1, 0.9]},
            {"filter": "source", "regex": "src[12]", "exclude": True},
        ],
        ["a", "b", "c"],
    )
    keep, why = apply_filters(segs, entries)
    b = np.array([s.features["b"] for s in segs])
    lo, hi = np.quantile(b, [0.1, 0.9])
    expect = (b >= lo) & (b <= hi) & np.array([s.source_id not in ("src1", "src2") for s in segs])
    assert keep.tolist() == expect.tolist()
    assert all((w is None) == k for w, k in zip(why, keep, strict=True))
    assert any(w and "source !~" in w for w in why)
    # NaN fails every predicate, even !=
    nan_keep, _ = apply_filters(
        segs, [{"filter": "predicate", "feature": "a", "op": "!=", "value": 99}]
    )
    a = np.array([s.features["a"] for s in segs])
    assert nan_keep.tolist() == np.isfinite(a).tolist()
    fin, _ = apply_filters(segs, [{"filter": "finite"}])
    assert fin.tolist() == np.isfinite(a).tolist()


class _Even:
    def validate(self, params, features):
        if params:
            raise StrategyError("even takes nothing")

    def mask(self, segments, params):
        return np.array([s.start_idx % 60 == 0 for s in segments])

    def describe(self, params):
        return "start on a whole minute"


def test_register_filter_and_use_it_in_a_strategy() -> None:
    register_filter("test-even-start", _Even(), clobber=True)
    assert get_filter("test-even-start") is not None
    with pytest.raises(TypeError):
        register_filter("broken", object())  # type: ignore[arg-type]
    s = strategy(method="top-k", params={"by": "a"}, filters=[{"filter": "test-even-start"}])
    res = select_segments(make_pool(40), s, 40)
    assert res.n_selected == sum(1 for x in res.pool if x.start_idx % 60 == 0)
    assert all(x.start_idx % 60 == 0 for x in res.selected)
    assert any("start on a whole minute" in r for r in res.reasons)


def test_filtered_segments_are_never_selected_even_with_room() -> None:
    s = strategy(
        method="top-k", params={"by": "a"}, filters=[{"feature": "a", "op": ">", "value": 0.0}]
    )
    pool = make_pool(30, seed=2)
    res = select_segments(pool, s, 1000)
    n_pass = sum(1 for x in pool if x.features["a"] > 0)
    assert res.n_selected == n_pass and res.shortfall == 1000 - n_pass
    assert "eligible" in (res.shortfall_reason or "")
    assert all(x.features["a"] > 0 for x in res.selected)
    assert all(np.isneginf(x.priority) for x in res.pool if x.features["a"] <= 0)


def test_apply_strategy_sets_priorities_bins_tags_groups_and_returns_edges() -> None:
    s = strategy(
        method="uniform-bins",
        bin={"axes": ["a"], "n_bins": 3},
        tags={"lvl": {"feature": "b", "bins": 2}},
        group={"regex": r"src(\d)"},
        filters=[{"feature": "c", "op": "<", "value": 1.0}],
    )
    pool = make_pool(24, seed=3)
    edges = apply_strategy(pool, s, seed=0)
    assert set(edges) == {"a"} and len(edges["a"]) == 2
    for x in pool:
        assert x.bin is not None and x.group == x.source_id[-1]
        assert x.tags["lvl"] in ("q0", "q1")
        assert np.isneginf(x.priority) == (x.features["c"] >= 1.0)


def test_rank_pool_is_order_independent_and_rejects_duplicate_keys() -> None:
    s = strategy(method="k-center")
    a = make_pool(20, seed=4)
    b = [x.copy() for x in reversed(a)]
    ra, rb = rank_pool(a, s, 1), rank_pool(b, s, 1)
    assert [x.key for x in ra.segments] == [x.key for x in rb.segments]
    assert ra.priorities.tolist() == rb.priorities.tolist()
    with pytest.raises(StrategyError, match="share the key"):
        rank_pool([a[0], a[0].copy()], s, 0)


def test_audit_reasons_cover_every_segment() -> None:
    s = strategy(
        method="top-k",
        params={"by": "a"},
        filters=[{"feature": "b", "op": "<", "value": 1.0}],
        nan_policy="exclude",
    )
    res = select_segments(make_pool(40, seed=5, nan_frac=0.2), s, 5)
    rows = res.segment_reasons()
    assert len(rows) == len(res.pool)
    for row in rows:
        assert row["reason"].startswith("selected" if row["selected"] else "rejected")
    texts = " | ".join(r["reason"] for r in rows)
    assert "filtered out: b < 1.0" in texts
    assert "non-finite feature a" in texts
    assert "below the cut" in texts


def test_fractional_floors_round_up() -> None:
    s = strategy(
        method="top-k",
        params={"by": "a"},
        tags={"side": {"feature": "b", "thresholds": [0.0], "labels": ["neg", "pos"]}},
        tag_coverage={"side": 0.01},
    )
    res = select_segments(make_pool(40, seed=6), s, 10)
    assert res.tags["side"]["neg"]["floor"] == 1  # ceil(0.01 * 10), never 0
    assert res.tags["side"]["neg"]["met"] and res.tags["side"]["pos"]["met"]


def test_unmet_floor_is_reported_with_its_cause() -> None:
    s = strategy(
        method="top-k",
        params={"by": "a"},
        tags={"side": {"feature": "b", "thresholds": [5.0], "labels": ["low", "high"]}},
        tag_coverage={"side": {"high": 3}},
    )
    res = select_segments(make_pool(20, seed=7), s, 5)
    high = res.tags["side"]["high"]
    assert high["met"] is False and "only 0 eligible" in high["why"]


# ---------------------------------------------------------------- properties


def _brute_feasible(eligible, labels, floors, groups, cap, n) -> bool:
    """Is there S within the eligible rows, |S| <= n, every group <= cap, every label >= floor?"""
    need = sum(floors.values())
    if need == 0:
        return True
    if need > n:
        return False
    rows = [i for i in eligible if labels[i] in floors]
    for size in range(need, min(len(rows), need) + 1):
        for combo in itertools.combinations(rows, size):
            lab = Counter(labels[i] for i in combo)
            if any(lab[k] < v for k, v in floors.items()):
                continue
            if cap is not None and any(v > cap for v in Counter(groups[i] for i in combo).values()):
                continue
            return True
    return False


@settings(max_examples=150, deadline=None)
@given(
    method=st.sampled_from(sorted(METHODS)),
    size=st.integers(0, 14),
    pool_seed=st.integers(0, 1000),
    n=st.integers(0, 16),
    seed=st.integers(0, 5),
    nan_frac=st.sampled_from([0.0, 0.25]),
    nan_policy=st.sampled_from(["exclude", "lowest"]),
    threshold=st.sampled_from([None, -0.5, 0.3]),
    floor=st.sampled_from([None, 1, 2, 4, 0.2, 0.5]),
    tag_kind=st.sampled_from(["feature", "source"]),
    cap=st.sampled_from([None, 1.0, 1.5]),
)
def test_selection_properties(
    method, size, pool_seed, n, seed, nan_frac, nan_policy, threshold, floor, tag_kind, cap
) -> None:
    spec = {**METHODS[method], "method": method}
    spec["nan_policy"] = nan_policy
    if threshold is not None:
        spec["filters"] = [{"feature": "c", "op": ">", "value": threshold}]
    if floor is not None:
        spec["tags"] = {
            "t": {"feature": "b", "thresholds": [0.0]}
            if tag_kind == "feature"
            else {"source": {"regex": r"src([0-2])"}}
        }
        spec["tag_coverage"] = {"t": floor}
    if cap is not None:
        spec["group"] = {"map": {"src0": "g0", "src1": "g0"}}
        spec["group_cap"] = {"max_overshoot": cap}
    s = strategy(**spec)
    pool = make_pool(size, seed=pool_seed, nan_frac=nan_frac)
    res = select_segments([x.copy() for x in pool], s, n, seed=seed)

    # never more than asked, never more than eligible
    assert res.n_selected <= n and res.n_selected <= res.n_eligible
    assert res.n_selected + res.shortfall == n
    chosen = {x.key for x in res.selected}
    assert len(chosen) == res.n_selected
    by_key = {x.key: x for x in pool}
    # filters and the filter method's predicate are hard
    for k in chosen:
        f = by_key[k].features
        if threshold is not None:
            assert f["c"] > threshold
        if method == "filter":
            assert f["b"] < 0.5
        assert np.isfinite(res.pool[[x.key for x in res.pool].index(k)].priority)
    # deterministic for a seed, whatever the pool order
    again = select_segments([x.copy() for x in reversed(pool)], s, n, seed=seed)
    assert _keys(list(again.selected)) == _keys(list(res.selected))
    eligible = [i for i, x in enumerate(res.pool) if math.isfinite(x.priority)]
    groups = [x.group for x in res.pool]
    cap_n = None
    if cap is not None:
        n_groups = len({groups[i] for i in eligible})
        cap_n = math.ceil(cap * n / n_groups) if n_groups else 0
        counts = Counter(x.group for x in res.selected)
        assert all(v <= cap_n for v in counts.values())  # caps are hard
        assert res.groups["cap"] == cap_n
    if floor is None and cap is None:
        assert _keys(list(res.selected)) == _keys(select_top(list(res.pool), n))
        assert res.shortfall == max(0, n - len(eligible))
    if floor is not None:
        rep = res.tags["t"]
        labels = [x.tags.get("t") for x in res.pool]
        floors = {lab: e["floor"] for lab, e in rep.items() if "floor" in e}
        got = Counter(x.tags.get("t") for x in res.selected)
        for lab, f in floors.items():
            assert rep[lab]["met"] == (got[lab] >= f)  # the report tells the truth
            assert rep[lab]["met"] or rep[lab]["why"]
        if len(eligible) <= 12 and _brute_feasible(eligible, labels, floors, groups, cap_n, n):
            assert all(rep[lab]["met"] for lab in floors)


# ---------------------------------------------------------------- splits


def test_splits_are_whole_source_seeded_and_sized() -> None:
    ids = [f"s{i:02d}" for i in range(20)]
    a = assign_splits(ids, 0.25, seed=3)
    assert a == assign_splits(list(reversed(ids)), 0.25, seed=3)
    assert set(a) == set(ids) and Counter(a.values())["test"] == 5
    assert a != assign_splits(ids, 0.25, seed=4)
    assert Counter(assign_splits(ids, 0.0, 0).values())["test"] == 0
    assert Counter(assign_splits(ids, 1.0, 0).values())["train"] == 0
    assert Counter(assign_splits(ids[:2], 0.01, 0).values())["test"] == 1
    assert Counter(assign_splits(ids[:2], 0.99, 0).values())["train"] == 1


def test_splits_are_stratified_by_group() -> None:
    ids = [f"s{i:02d}" for i in range(24)]
    groups = {sid: ("big" if i < 16 else "small") for i, sid in enumerate(ids)}
    out = assign_splits(ids, 0.25, seed=0, groups=groups)
    test_by_group = Counter(groups[s] for s, v in out.items() if v == "test")
    assert test_by_group == {"big": 4, "small": 2}


def test_singleton_groups_do_not_starve_the_test_split() -> None:
    ids = [f"s{i:02d}" for i in range(12)]
    out = assign_splits(ids, 0.2, seed=1, groups={s: s for s in ids})
    assert Counter(out.values())["test"] == 2  # floor(0.2 * 12 + 0.5)


def test_split_errors() -> None:
    with pytest.raises(ValueError):
        assign_splits(["a"], 1.5, 0)
    with pytest.raises(ValueError, match="unique"):
        assign_splits(["a", "a"], 0.5, 0)
