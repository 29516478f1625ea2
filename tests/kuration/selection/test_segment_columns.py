"""Candidates built from segment columns equal those built from Segment objects, bit for bit."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kuration import Segment
from kuration.pipeline.run.scoring import TrackExtent
from kuration.selection.candidates import CandidateTable, build_candidate_table
from kuration.selection.segment_columns import SegmentColumns

_vals = st.one_of(st.floats(-1e6, 1e6, allow_nan=False), st.just(math.nan), st.just(-math.inf))


@st.composite
def _source(draw: st.DrawFn, sid: str) -> tuple[list[Segment], list[Any]]:
    n_ent = draw(st.integers(0, 4))
    track = n_ent > 0 and draw(st.booleans())  # track-scoped windows, one entity each
    fixed = draw(st.booleans())
    window = draw(st.integers(1, 30))
    segs = []
    for e in range(n_ent if track else 1):
        for a in sorted(draw(st.lists(st.integers(0, 200), max_size=12))):
            feats = {"f": draw(_vals)}
            if draw(st.booleans()):
                feats["g"] = draw(_vals)  # "g" missing: NaN
            segs.append(
                Segment(
                    sid,
                    a,
                    a + (window if fixed else draw(st.integers(1, 60))),
                    features=feats,
                    priority=draw(_vals),
                    tags={"k": str(draw(st.integers(0, 2)))} if draw(st.booleans()) else {},
                    group=draw(st.sampled_from([None, "g1", "g2"])),
                    entity=f"e{e}" if track else None,
                )
            )
    exts = []
    for e in range(n_ent):
        first = draw(st.integers(0, 250))
        last = first + draw(st.integers(0, 80))
        exts.append(TrackExtent(f"e{e}", first, last, last - first + 1))
    return segs, exts


def _same(x: CandidateTable, y: CandidateTable) -> None:
    for col in ("source", "entity", "first", "last", "span", "group", "tags", "present"):
        assert np.array_equal(getattr(x, col), getattr(y, col)), col
    assert x.priority.tobytes() == y.priority.tobytes()
    assert x.features.tobytes() == y.features.tobytes()
    assert (x.groups, x.tag_sets, x.empty_excluded) == (y.groups, y.tag_sets, y.empty_excluded)


@settings(max_examples=150, deadline=None)
@given(
    srcs=st.lists(st.integers(0, 1), min_size=1, max_size=3).flatmap(
        lambda ks: st.tuples(*(_source(f"s{i}") for i in range(len(ks))))
    ),
    how=st.sampled_from(["max", "mean", "min"]),
    span=st.one_of(st.none(), st.integers(1, 40)),
    cut=st.integers(0, 12),
    by_label=st.booleans(),
    veto=st.booleans(),
)
def test_columns_build_the_same_table_as_segments(srcs, how, span, cut, by_label, veto) -> None:
    exts = {f"s{i}": e for i, (_, e) in enumerate(srcs)}
    segs = {f"s{i}": s for i, (s, _) in enumerate(srcs)}
    names = ["f", "g"]
    # columns in two pieces with their own rosters (as the disk pool reads them, batch by batch)
    cols = {
        sid: SegmentColumns.concat(
            [
                SegmentColumns.of_segments(s[:cut], ["g", "f"]),
                SegmentColumns.of_segments(s[cut:], names),
            ],
            names,
        )
        for sid, s in segs.items()
    }
    kw: dict[str, Any] = dict(how=how, features=names, span_steps=span, veto=veto)
    kw["group_of"] = None if by_label else (lambda s: "G" + s)
    want, short = build_candidate_table(exts, segs, **kw)
    got, short2 = build_candidate_table(exts, cols, **kw)
    assert short == short2
    _same(want, got)


def test_by_entity_is_none_for_source_scoped_rows() -> None:
    segs = [Segment("s", 0, 5, {}, entity="a"), Segment("s", 1, 6, {}, entity=None)]
    assert SegmentColumns.of_segments(segs, []).by_entity() is None
    two = SegmentColumns.concat(
        [SegmentColumns.of_segments(segs[:1], []), SegmentColumns.of_segments(segs[:1], [])], []
    )
    assert {k: v.tolist() for k, v in (two.by_entity() or {}).items()} == {"a": [0, 1]}
