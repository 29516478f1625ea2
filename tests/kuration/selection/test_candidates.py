"""Fill candidates as columns: the table reads back as the objects, and the columnar fill
gives the object fill's results (tests/kuration/selection/_fill_reference.py) exactly."""

from __future__ import annotations

import math
import tracemalloc
from typing import Any

import numpy as np
import pytest
from _fill_reference import fill_budgets as reference_fill
from hypothesis import given, settings
from hypothesis import strategies as st

from kuration import Segment
from kuration.errors import PipelineError
from kuration.pipeline.run.scoring import TrackExtent
from kuration.selection.candidates import CandidateRows, DecisionMap
from kuration.selection.fill import (
    Candidate,
    CandidateTable,
    FillResult,
    aggregate_segments,
    build_candidate_table,
    build_candidates,
    fill_budgets,
)

_prio = st.one_of(
    st.sampled_from([0.0, -0.0, 1.0, 2.0, -math.inf, math.nan, math.inf]),
    st.floats(-5, 5, allow_nan=False),
)


@st.composite
def _candidates(draw: st.DrawFn) -> list[Candidate]:
    """Candidates over three sources with colliding ids, ties, spans, groups and tags."""
    out = []
    for _ in range(draw(st.integers(0, 25))):
        first = draw(st.integers(0, 50))
        out.append(
            Candidate(
                draw(st.sampled_from(["a", "b", "c"])),
                draw(st.sampled_from([0, 1, 2, "x", "y", (1, "z")])),
                draw(st.integers(0, 3)),
                first,
                first + draw(st.integers(0, 200)),
                draw(_prio),
                {},
                draw(st.sampled_from([None, 0, 1, 2])),
                draw(st.sampled_from([None, "", "g1", "g2", "g3"])),
                frozenset(draw(st.sets(st.sampled_from(["k=1", "k=2", "m=1", "m=2"])))),
            )
        )
    return out


_options = st.fixed_dictionaries(
    {
        "max_group_overshoot": st.one_of(st.none(), st.floats(0.3, 3)),
        "tag_coverage": st.booleans(),
        "tag_names": st.sampled_from([None, {"k"}, {"m", "other"}]),
        "min_tag_frac": st.sampled_from([0.1, 0.3, 1.0]),
    }
)


def _assert_same(got: FillResult, want: FillResult) -> None:
    assert list(got.admitted) == list(want.admitted)
    for split, taken in want.admitted.items():
        assert repr(got.admitted[split]) == repr(taken)
        assert repr(got.budget[split]) == repr(want.budget[split])  # floats bit for bit
        assert list(got.decisions[split].items()) == list(want.decisions[split].items())
        assert got.decisions[split] == want.decisions[split]
        assert repr(list(got.pools[split])) == repr(want.pools[split])


@settings(max_examples=60, deadline=None)
@given(
    cands=_candidates(),
    assign=st.lists(st.sampled_from(["train", "test", None]), min_size=3, max_size=3),
    budgets=st.tuples(st.floats(0, 600), st.floats(0, 300)),
    opts=_options,
)
def test_the_columnar_fill_is_the_object_fill(cands, assign, budgets, opts) -> None:
    split_of = {s: sp for s, sp in zip("abc", assign, strict=True) if sp is not None}
    req = {"train": budgets[0], "test": budgets[1]}
    want = reference_fill(cands, split_of, req, 2.0, **opts)
    got = fill_budgets(cands, split_of, req, 2.0, **opts)
    _assert_same(got, want)
    for taken, objs in zip(got.admitted.values(), want.admitted.values(), strict=True):
        assert all(a is b for a, b in zip(taken, objs, strict=True))  # the objects passed in


_vals = st.one_of(st.floats(-1e3, 1e3), st.just(math.nan), st.just(-math.inf))


@st.composite
def _sources(draw: st.DrawFn) -> tuple[dict[str, list[TrackExtent]], dict[str, list[Segment]]]:
    extents, segments = {}, {}
    for sid in draw(st.lists(st.sampled_from(["s2", "s1", "s3"]), unique=True, max_size=3)):
        starts = sorted(draw(st.lists(st.integers(0, 300), max_size=20)))
        fixed = draw(st.booleans())  # one window length, or any (ends out of order)
        segments[sid] = [
            Segment(
                sid,
                a,
                a + (20 if fixed else draw(st.integers(1, 40))),
                features={"f": draw(_vals)},
                priority=draw(_vals),
                tags={"k": str(draw(st.integers(0, 2)))} if draw(st.booleans()) else {},
                group=draw(st.sampled_from([None, "g1", "g2"])),
            )
            for a in starts
        ]
        ids = draw(st.lists(st.sampled_from([3, 1, "e", "a", 2.5]), unique=True, max_size=4))
        exts = []
        for ent in ids:
            first = draw(st.integers(0, 300))
            last = first + draw(st.integers(0, 150))
            exts.append(TrackExtent(ent, first, last, last - first + 1))
        extents[sid] = exts
    return extents, segments


@settings(max_examples=60, deadline=None)
@given(
    src=_sources(),
    span=st.one_of(st.none(), st.integers(1, 40)),
    by_source=st.booleans(),
    budget=st.floats(0, 400),
    opts=_options,
)
def test_a_built_table_reads_back_and_fills_like_its_objects(
    src, span, by_source, budget, opts
) -> None:
    extents, segments = src
    kw: dict[str, Any] = {"how": "mean", "features": ["f"], "min_steps": 3, "span_steps": span}
    if by_source:
        kw["group_of"] = lambda sid: None if sid == "s3" else f"grp-{sid}"
    table, short = build_candidate_table(extents, segments, **kw)
    objs, short_objs = build_candidates(extents, segments, **kw)
    assert short == short_objs and len(table) == len(objs)
    assert repr(list(table)) == repr(objs)  # NaN features compare by their repr
    assert repr(table[-1:]) == repr(objs[-1:])
    # every row against the per-span aggregate over its own source's segments only
    for c in objs:
        prio, feats = aggregate_segments(segments[c.source_id], c.first, c.last, "mean", ["f"])
        assert repr((c.priority, dict(c.features))) == repr((prio, feats))
        over = [s for s in segments[c.source_id] if s.start_idx <= c.last and s.end_idx > c.first]
        assert c.tags == frozenset(f"{k}={v}" for s in over for k, v in s.tags.items())
        label = next((s.group for s in over if s.group is not None), None)
        assert c.group == (kw["group_of"](c.source_id) if by_source else label)
    split_of = {"s1": "train", "s2": "train", "s3": "test"}
    req = {"train": budget, "test": budget / 2}
    want = reference_fill(objs, split_of, req, 1.0, **opts)
    _assert_same(fill_budgets(table, split_of, req, 1.0, **opts), want)
    groups = {}
    for c in objs:
        if c.group is not None:
            groups.setdefault(c.source_id, c.group)
    assert table.source_groups() == groups
    assert table.pooled_sources() == sorted({c.source_id for c in objs})


def test_pools_and_decisions_are_views_over_the_table() -> None:
    segs = [Segment("s", a, a + 10, {"f": float(a)}, priority=float(a)) for a in range(0, 100, 10)]
    ext = {"s": [TrackExtent("e", 0, 99, 100)]}
    table, _ = build_candidate_table(ext, {"s": segs}, how="max", features=["f"], span_steps=10)
    fill = fill_budgets(table, {"s": "train"}, {"train": 25.0}, 1.0)
    pool, why = fill.pools["train"], fill.decisions["train"]
    assert isinstance(pool, CandidateRows) and isinstance(why, DecisionMap)
    assert [c.span_index for c in pool] == [9, 8, 7, 6, 5, 4, 3, 2, 1, 0]
    assert why[("s", "str:e", 9)] == "admitted" and why.get(("s", "str:e", 0)) == "budget-full"
    assert ("s", "str:e", 10) not in why and len(why) == 10
    assert why.counts() == {"admitted": 3, "budget-full": 7}
    assert [c.span_index for c in fill.admitted["train"]] == [9, 8, 7]


def test_inconsistent_columns_are_refused() -> None:
    cols: dict[str, Any] = {
        "source_ids": ["s"],
        "entity_ids": [["e"]],
        "source": np.zeros(2, int),
        "entity": np.zeros(2, int),
        "first": np.zeros(2, int),
        "last": np.ones(2, int),
        "span": np.full(2, -1),
        "priority": np.ones(2),
    }
    assert len(CandidateTable(**cols)) == 2
    with pytest.raises(PipelineError, match=r"\['last'\] do not have 2 rows"):
        CandidateTable(**{**cols, "last": np.ones(3, int)})
    with pytest.raises(PipelineError, match="'entity' indexes past a source's roster"):
        CandidateTable(**{**cols, "entity": np.array([0, 1])})
    with pytest.raises(PipelineError, match="'group' indexes past its 0 labels"):
        CandidateTable(**{**cols, "group": np.array([0, -1])})


def test_a_long_track_cut_into_spans_costs_columns_not_objects() -> None:
    # one entity over 30 h at 1 Hz in 5-minute spans, one segment per span: 360 spans per
    # 30 h; 50 such entities make 18,000 candidates (as Candidate objects, ~1 KB each)
    n_ent, span, hours = 50, 300, 30
    steps = hours * 3600
    segs = [
        Segment("s", a, a + span, {"f": 1.0, "g": 2.0}, priority=float(a % 7))
        for a in range(0, steps, span)
    ]
    ext = {"s": [TrackExtent(f"e{i}", 0, steps - 1, steps) for i in range(n_ent)]}
    tracemalloc.start()
    try:
        table, _ = build_candidate_table(
            ext, {"s": segs}, how="max", features=["f", "g"], span_steps=span
        )
        fill = fill_budgets(table, {"s": "train"}, {"train": 3600.0}, 1.0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    n = len(table)
    assert n == n_ent * steps // span == 18_000
    assert table.nbytes / n < 70  # 8 B per feature, ~54 B of indices, ticks and priority
    assert peak / n < 400, f"{peak / n:.0f} B per candidate at the peak"
    assert fill.budget["train"]["admitted_tracks"] == 12
