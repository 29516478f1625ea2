"""The hours-as-budget fill: ranking, decoupled pools, -inf, group cap, tag reserve, spans."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kuration import Segment
from kuration.pipeline.run.scoring import TrackExtent
from kuration.selection.fill import Candidate, aggregate_segments, build_candidates, fill_budgets


def _c(sid: str, ent: int, n: int, prio: float, group: str | None = None, tags=()) -> Candidate:
    return Candidate(sid, ent, ent, 0, n - 1, prio, {}, None, group, frozenset(tags))


def test_ranks_by_priority_and_stops_within_one_track() -> None:
    cands = [_c("s1", i, 100 + i, float(i)) for i in range(10)]
    fill = fill_budgets(cands, {"s1": "train"}, {"train": 250.0}, 1.0)
    got = fill.admitted["train"]
    assert [c.entity_id for c in got] == [9, 8, 7]  # descending priority
    b = fill.budget["train"]
    assert b["admitted_s"] == 109 + 108 + 107 and b["admitted_s"] - 250 < 109
    assert b["underfill_s"] == 0 and b["candidate_tracks"] == 10


def test_minus_inf_is_never_admitted_even_with_room() -> None:
    cands = [_c("s1", 0, 50, 1.0), _c("s1", 1, 50, -math.inf), _c("s1", 2, 50, math.nan)]
    fill = fill_budgets(cands, {"s1": "train"}, {"train": 1000.0}, 1.0)
    assert [c.entity_id for c in fill.admitted["train"]] == [0]
    b = fill.budget["train"]
    assert (
        b["underfill_s"] == 950
        and b["nonfinite_excluded"] == 2
        and b["nonfinite_excluded_s"] == 100
    )


def test_pools_are_decoupled_and_leakage_free() -> None:
    # train's pool is full of high priorities; the test budget must still be filled from its own pool
    cands = [_c("a", i, 60, 100.0 + i) for i in range(5)] + [
        _c("b", i, 60, -5.0 + i) for i in range(5)
    ]
    fill = fill_budgets(cands, {"a": "train", "b": "test"}, {"train": 120.0, "test": 120.0}, 1.0)
    assert {c.source_id for c in fill.admitted["train"]} == {"a"}
    assert {c.source_id for c in fill.admitted["test"]} == {"b"}
    assert fill.budget["test"]["admitted_s"] == 120


def test_group_cap_in_hours() -> None:
    # group g1 holds every top candidate; with a cap each group gets at most 1.0 x budget/2
    cands = [_c("s", i, 100, 10.0 - i, "g1") for i in range(6)] + [
        _c("s", 10 + i, 100, 1.0 - i, "g2") for i in range(6)
    ]
    free = fill_budgets(cands, {"s": "train"}, {"train": 400.0}, 1.0)
    assert {c.group for c in free.admitted["train"]} == {"g1"}
    capped = fill_budgets(cands, {"s": "train"}, {"train": 400.0}, 1.0, max_group_overshoot=1.0)
    by_group: dict[str, float] = {}
    for c in capped.admitted["train"]:
        by_group[c.group] = by_group.get(c.group, 0) + c.n_steps
    b = capped.budget["train"]
    assert b["group_cap_s"] == 200 and by_group == {"g1": 200, "g2": 200}
    assert b["group_cap_excluded"] == 4 and b["group_cap_excluded_s"] == 400


def test_tag_reserve_keeps_a_rare_label_within_min_tag_frac() -> None:
    cands = [_c("s", i, 100, 10.0 - i, tags={"kind=common"}) for i in range(8)]
    cands.append(_c("s", 50, 100, -3.0, tags={"kind=rare"}))
    cands.append(_c("s", 51, 300, -4.0, tags={"kind=huge-rare"}))
    plain = fill_budgets(cands, {"s": "train"}, {"train": 300.0}, 1.0)
    assert "kind=rare" in plain.budget["train"]["tags_uncovered"]
    fill = fill_budgets(
        cands, {"s": "train"}, {"train": 300.0}, 1.0, tag_coverage=True, min_tag_frac=0.5
    )
    got = fill.admitted["train"]
    assert got[0].entity_id == 50  # reserved first, though it ranks last but one
    b = fill.budget["train"]
    assert b["tag_reserved"] == 1 and b["tag_reserved_s"] == 100 <= 0.5 * 300
    assert b["tags_uncovered"] == ["kind=huge-rare"]  # 300 s would break the 150 s reserve
    assert b["admitted_s"] == 300
    only = fill_budgets(
        cands, {"s": "train"}, {"train": 300.0}, 1.0, tag_coverage=True, tag_names={"other"}
    )
    assert only.budget["train"]["tag_reserved"] == 0


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(1, 500),
            st.one_of(st.floats(-10, 10), st.just(-math.inf)),
            st.sampled_from(["g1", "g2", "g3"]),
        ),
        min_size=1,
        max_size=40,
    ),
    st.floats(1, 5000),
    st.one_of(st.none(), st.floats(0.5, 3)),
)
def test_budget_invariants(rows, budget: float, overshoot) -> None:
    cands = [_c("s", i, n, p, g) for i, (n, p, g) in enumerate(rows)]
    fill = fill_budgets(
        cands, {"s": "train"}, {"train": budget}, 1.0, max_group_overshoot=overshoot
    )
    got = fill.admitted["train"]
    b = fill.budget["train"]
    assert all(math.isfinite(c.priority) for c in got)
    longest = max(n for n, _, _ in rows)
    assert b["admitted_s"] < budget + longest
    assert b["admitted_s"] == sum(c.n_steps for c in got)
    if overshoot is not None:
        for g in {c.group for c in got}:
            assert sum(c.n_steps for c in got if c.group == g) <= b["group_cap_s"] + 1e-6
    elif b["underfill_s"] > 0:  # without a cap, underfill means the finite pool ran dry
        assert len(got) == sum(1 for _, p, _ in rows if math.isfinite(p))


@pytest.mark.parametrize("how", ["max", "mean", "min"])
def test_aggregate_segments_matches_numpy(how: str) -> None:
    segs = [
        Segment("s", 0, 10, {"f": 1.0}, priority=0.5),
        Segment("s", 5, 15, {"f": np.nan}, priority=2.0),
        Segment("s", 10, 20, {"f": 4.0}, priority=-math.inf),
        Segment("s", 30, 40, {"f": 100.0}, priority=9.0),  # does not overlap [0, 19]
    ]
    prio, feats = aggregate_segments(segs, 0, 19, how, ["f"])
    fn = getattr(np, how)
    assert prio == fn([0.5, 2.0]) and feats["f"] == fn([1.0, 4.0])
    assert aggregate_segments(segs, 50, 60, how, ["f"])[0] == -math.inf


def test_spans_are_budgeted_independently() -> None:
    segs = [Segment("s", a, a + 10, {"f": float(a)}, priority=float(a)) for a in range(0, 100, 10)]
    ext = {"s": [TrackExtent("e", 0, 99, 100)]}
    whole, _ = build_candidates(ext, {"s": segs}, how="max", features=["f"])
    assert len(whole) == 1 and whole[0].span_index is None and whole[0].priority == 90
    spans, _ = build_candidates(ext, {"s": segs}, how="mean", features=["f"], span_steps=30)
    assert [(c.span_index, c.first, c.last) for c in spans] == [
        (0, 0, 29),
        (1, 30, 59),
        (2, 60, 89),
        (3, 90, 99),
    ]
    assert [c.features["f"] for c in spans] == [10.0, 40.0, 70.0, 90.0]
    fill = fill_budgets(spans, {"s": "train"}, {"train": 35.0}, 1.0)
    assert [c.span_index for c in fill.admitted["train"]] == [3, 2]  # the best parts
    short, too_short = build_candidates(ext, {"s": segs}, how="max", features=[], min_steps=101)
    assert short == [] and too_short == 1


def test_a_cap_that_starves_every_group_is_refused_naming_the_ways_out() -> None:
    from kuration.errors import GroupCapError
    from kuration.selection.fill import check_group_cap

    cands = [_c("s", i, 100 + i, 1.0, f"g{i}") for i in range(3)]
    fill = fill_budgets(cands, {"s": "train"}, {"train": 100.0}, 1.0, max_group_overshoot=1.5)
    b = fill.budget["train"]
    assert b["group_cap_s"] == 50 and b["group_cap_starved"] == 3 and b["shortest_track_s"] == 100
    with pytest.raises(GroupCapError) as info:
        check_group_cap(fill, overshoot=1.5)
    e = info.value
    assert (e.split, e.cap_s, e.shortest_s, e.n_groups) == ("train", 50.0, 100.0, 3)
    msg = str(e)
    assert "50.0 s" in msg and "(100 s)" in msg
    assert "max_group_overshoot to at least 3" in msg  # 100 s x 3 groups / 100 s
    assert "spans of at most 50 s (span_seconds)" in msg
    with pytest.raises(GroupCapError, match="cannot help"):  # 128 s shards, short_policy drop
        check_group_cap(fill, overshoot=1.5, shard_seconds=128.0)
    # the same pool with a request of zero asks for nothing: no error
    zero = fill_budgets(cands, {"s": "train"}, {"train": 0.0}, 1.0, max_group_overshoot=1.5)
    check_group_cap(zero, overshoot=1.5)


def test_the_suggested_overshoot_admits_a_first_track_in_every_split() -> None:
    from kuration.errors import GroupCapError
    from kuration.selection.fill import check_group_cap

    # train needs 100 s x 3 groups / 100 s = 3.0; test needs 70 s x 2 groups / 40 s = 3.5
    cands = [_c(f"a{i}", i, 100, 1.0, f"g{i}") for i in range(3)]
    cands += [_c(f"b{i}", i, 70, 1.0, f"h{i}") for i in range(2)]
    split_of = {**{f"a{i}": "train" for i in range(3)}, **{f"b{i}": "test" for i in range(2)}}
    fill = fill_budgets(
        cands, split_of, {"train": 100.0, "test": 40.0}, 1.0, max_group_overshoot=1.5
    )
    with pytest.raises(GroupCapError, match=r"at least 3\.5 \(that admits a first track in every"):
        check_group_cap(fill, overshoot=1.5)
    ok = fill_budgets(cands, split_of, {"train": 100.0, "test": 40.0}, 1.0, max_group_overshoot=3.5)
    check_group_cap(ok, overshoot=3.5)  # the suggestion is enough for both splits
    assert ok.budget["train"]["admitted_s"] > 0 and ok.budget["test"]["admitted_s"] > 0


def test_a_cap_that_starves_some_groups_is_recorded_and_binds() -> None:
    from kuration.selection.fill import check_group_cap, explain_underfill

    # g0 holds a 40 s track under the 50 s cap; g1 and g2 only tracks of 100 s
    cands = [_c("s", 0, 40, 1.0, "g0"), _c("s", 1, 100, 2.0, "g1"), _c("s", 2, 100, 3.0, "g2")]
    fill = fill_budgets(cands, {"s": "train"}, {"train": 100.0}, 1.0, max_group_overshoot=1.5)
    check_group_cap(fill, overshoot=1.5)  # not every group starves: no error
    b = fill.budget["train"]
    assert b["group_cap_starved"] == 2 and b["admitted_s"] == 40
    binding, detail = explain_underfill(b, emitted_s=40.0)
    assert binding == "group cap"
    assert "40 s of 100 s emitted" in detail and "2 groups have no track short enough" in detail


def test_explain_underfill_names_pool_size_and_track_length() -> None:
    from kuration.selection.fill import explain_underfill

    cands = [_c("s", 0, 60, 1.0), _c("s", 1, 50, -math.inf)]
    b = fill_budgets(cands, {"s": "train"}, {"train": 100.0}, 1.0).budget["train"]
    binding, detail = explain_underfill(b, emitted_s=60.0, too_short=3)
    assert binding == "pool size"
    assert "1 tracks (50 s) have no finite priority" in detail and "3 tracks were shorter" in detail
    # admitted in full, but the shards hold less (a tail shorter than a shard was dropped)
    b = fill_budgets(cands, {"s": "train"}, {"train": 50.0}, 1.0).budget["train"]
    assert explain_underfill(b, emitted_s=32.0)[0] == "track length"
    assert explain_underfill(b, emitted_s=60.0) == (None, "")
    empty = fill_budgets([], {}, {"test": 10.0}, 1.0).budget["test"]
    assert explain_underfill(empty, emitted_s=0.0)[1].endswith(
        "no source was assigned to the split; add sources or lower the request"
    )


def test_the_tag_reserve_is_named_when_it_used_a_capped_groups_room() -> None:
    from kuration.selection.fill import explain_underfill

    # the reserve takes g1's rare 70 s track first; g1's 60 s best track no longer fits its cap
    cands = [
        _c("s", 0, 60, 9.0, "g1"),
        _c("s", 1, 70, 1.0, "g1", tags={"kind=rare"}),
        _c("s", 2, 30, 5.0, "g2"),
    ]
    fill = fill_budgets(
        cands,
        {"s": "train"},
        {"train": 200.0},
        1.0,
        max_group_overshoot=1.0,
        tag_coverage=True,
        min_tag_frac=0.5,
    )
    b = fill.budget["train"]
    assert b["tag_reserved_s"] == 70 and b["tag_reserve_capped_s"] == 60
    binding, detail = explain_underfill(b, emitted_s=b["admitted_s"])
    assert binding == "group cap" and "the tag reserve used the cap" in detail


# -- the vectorised build_candidates against the per-span aggregate -----------------------

_vals = st.one_of(
    st.floats(-1e6, 1e6, allow_nan=False), st.just(math.nan), st.just(math.inf), st.just(-math.inf)
)


@st.composite
def _source(draw: st.DrawFn) -> tuple[list[Segment], list[Any]]:
    window = draw(st.integers(1, 40))
    fixed = draw(st.booleans())  # one window length, or any (ends out of order)
    starts = sorted(draw(st.lists(st.integers(0, 300), max_size=30)))
    segs = [
        Segment(
            "s",
            a,
            a + (window if fixed else draw(st.integers(1, 80))),
            features={"f": draw(_vals), "g": draw(_vals)},
            priority=draw(_vals),
            tags={"k": str(draw(st.integers(0, 2)))} if draw(st.booleans()) else {},
            group=draw(st.sampled_from([None, "g1", "g2"])),
        )
        for a in starts
    ]
    exts = []
    for e in range(draw(st.integers(0, 6))):
        first = draw(st.integers(0, 350))
        last = first + draw(st.integers(0, 120))
        exts.append(TrackExtent(f"e{e}", first, last, last - first + 1))
    return segs, exts


@settings(max_examples=200, deadline=None)
@given(
    src=_source(),
    how=st.sampled_from(["max", "mean", "min"]),
    span=st.one_of(st.none(), st.integers(1, 50)),
    min_steps=st.integers(1, 30),
)
def test_build_candidates_matches_per_span_aggregate(src, how, span, min_steps) -> None:
    segs, exts = src
    got, short = build_candidates(
        {"s": exts},
        {"s": segs},
        how=how,
        features=["f", "g"],
        min_steps=min_steps,
        span_steps=span,
    )
    i = 0
    for e_idx, ext in enumerate(exts):
        if ext.last - ext.first + 1 < min_steps:
            continue
        step = span or (ext.last - ext.first + 1)
        for k, a in enumerate(range(ext.first, ext.last + 1, step)):
            b = min(a + step - 1, ext.last)
            over = [s for s in segs if s.start_idx <= b and s.end_idx > a]
            prio, feats = aggregate_segments(over, a, b, how, ["f", "g"])
            c = got[i]
            assert (c.entity_index, c.first, c.last, c.span_index) == (
                e_idx,
                a,
                b,
                None if span is None else k,
            )
            assert repr(c.priority) == repr(prio)  # bit for bit, NaN and infinities included
            assert repr(dict(c.features)) == repr(feats)
            assert c.tags == frozenset(f"{t}={v}" for s in over for t, v in s.tags.items())
            assert c.group == next((s.group for s in over if s.group is not None), None)
            i += 1
    assert i == len(got)
    assert short == sum(ext.last - ext.first + 1 < min_steps for ext in exts)


def test_a_long_last_track_warns_and_names_span_seconds() -> None:
    from kuration.errors import BudgetGranularityWarning
    from kuration.selection.fill import warn_coarse_units

    # a 0.1 h request met by one 45-minute track (a football player's half): +650%
    fill = fill_budgets([_c("s1", 0, 2700, 1.0)], {"s1": "test"}, {"test": 360.0}, 1.0)
    with pytest.warns(BudgetGranularityWarning, match=r"at most 36 s") as rec:
        warn_coarse_units(fill, 1.0)
    w = rec[0].message
    assert (w.split, w.requested_s, w.admitted_s, w.unit_s) == ("test", 360.0, 2700.0, 2700.0)
    assert "span_seconds" in str(w) and "'test'" in str(w)
    # within 10% of the request (or under it): no warning
    fill = fill_budgets([_c("s1", 0, 390, 1.0)], {"s1": "test"}, {"test": 360.0}, 1.0)
    warn_coarse_units(fill, 1.0)
    fill = fill_budgets([_c("s1", 0, 100, 1.0)], {"s1": "test"}, {"test": 360.0}, 1.0)
    warn_coarse_units(fill, 1.0)


def test_the_advice_never_names_a_span_shorter_than_a_window() -> None:
    from kuration.errors import BudgetGranularityWarning
    from kuration.selection.fill import warn_coarse_units

    # robovet's demo: a 1.51 s test request, 4.57 s episodes, 2 s windows; 0.151 s spans
    # cannot exist, so the advice is a request of at least 20 s
    fill = fill_budgets([_c("s1", 0, 137, 1.0)], {"s1": "test"}, {"test": 1.51}, 30.0)
    with pytest.warns(BudgetGranularityWarning) as rec:
        warn_coarse_units(fill, 30.0, min_unit_s=2.0)
    msg = str(rec[0].message)
    assert "no span is shorter than one window (2 s)" in msg and "at least 20 s" in msg, msg
    assert "span_seconds" not in msg
    # a window short enough: the span advice as before
    with pytest.warns(BudgetGranularityWarning, match=r"span_seconds \(job key\) to at most"):
        warn_coarse_units(fill, 30.0, min_unit_s=0.1)


def test_a_lone_negative_zero_priority_means_like_numpy() -> None:
    # np.mean([-0.0]) is 0.0 (short sums start from +0.0); the vectorised runs must agree
    segs = [Segment("s", 0, 1, {"f": -0.0}, priority=-0.0)]
    ext = {"s": [TrackExtent("e", 0, 0, 1)]}
    (cand,), _ = build_candidates(ext, {"s": segs}, how="mean", features=["f"])
    prio, feats = aggregate_segments(segs, 0, 0, "mean", ["f"])
    assert repr(cand.priority) == repr(prio) == "0.0"
    assert repr(cand.features["f"]) == repr(feats["f"]) == "0.0"


def test_mean_agrees_where_numpy_sums_in_another_order() -> None:
    # hypothesis found these: np.mean and np.add.reduceat differ in the last bit here
    g = [-34946.0, math.nan, -489342.5750244712, 1.0, 0.0]
    segs = [Segment("s", 0, 1, {"g": x}, priority=0.0) for x in g]
    got, _ = build_candidates(
        {"s": [TrackExtent("e", 0, 0, 1)]}, {"s": segs}, how="mean", features=["g"], min_steps=1
    )
    assert repr(got[0].features["g"]) == repr(aggregate_segments(segs, 0, 0, "mean", ["g"])[1]["g"])
