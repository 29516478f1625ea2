"""Gap runs of a presence mask and present ticks per interval, against brute-force counts
over the boolean mask; block by block (the streaming pass) equals the whole mask at once."""

from __future__ import annotations

import itertools
import json
from dataclasses import asdict

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from kuration import Segment
from kuration.pipeline.run.scoring import TrackExtent, _track_extents
from kuration.selection.candidates import build_candidate_table
from kuration.selection.presence import absent_runs, gap_tuples, present_ticks


@st.composite
def _masks(draw: st.DrawFn) -> np.ndarray:
    n_t, n_e = draw(st.integers(1, 60)), draw(st.integers(1, 5))
    density = draw(st.sampled_from([0.05, 0.5, 0.95]))
    mask = draw(arrays(np.float64, (n_t, n_e), elements=st.floats(0, 1)))
    return mask < density


def _blockwise(mask: np.ndarray, cuts: list[int]) -> list[tuple[int, ...]]:
    """The streaming pass's arithmetic: gap runs per block with the last present tick so far."""
    n_t, n_e = mask.shape
    last = np.full(n_e, -1, np.int64)
    runs = []
    bounds = sorted({0, n_t, *(c % n_t for c in cuts)})
    for a, b in itertools.pairwise(bounds):
        blk = mask[a:b]
        runs.append(absent_runs(blk, a, last))
        hi = b - 1 - np.argmax(blk[::-1], axis=0)
        last = np.where(blk.any(axis=0), hi, last)
    return gap_tuples(*(np.concatenate(c) for c in zip(*runs, strict=True)), n_e)


@settings(max_examples=200, deadline=None)
@given(mask=_masks(), cuts=st.lists(st.integers(0, 59), max_size=4), data=st.data())
def test_present_ticks_per_interval_count_the_mask(mask, cuts, data) -> None:
    tracks = _track_extents(mask, [f"e{i}" for i in range(mask.shape[1])])
    col = {t.entity_id: int(t.entity_id[1:]) for t in tracks}
    by_blocks = _blockwise(mask, cuts)
    for t in tracks:
        e = col[t.entity_id]
        present = np.flatnonzero(mask[:, e])
        assert (t.first, t.last, t.n_present) == (present[0], present[-1], present.size)
        # the gaps are exactly the absent runs inside [first, last]
        inside = ~mask[t.first : t.last + 1, e]
        assert sum(b - a for a, b in zip(t.gaps[0::2], t.gaps[1::2], strict=True)) == inside.sum()
        for a, b in zip(t.gaps[0::2], t.gaps[1::2], strict=True):
            assert t.first < a < b <= t.last and not mask[a:b, e].any()
            assert mask[a - 1, e] and mask[b, e]
        assert by_blocks[e] == t.gaps
    if not tracks:
        return
    n = data.draw(st.integers(1, 30))
    ent = np.array(data.draw(st.lists(st.integers(0, len(tracks) - 1), min_size=n, max_size=n)))
    lo, hi = [], []
    for k in ent.tolist():
        a = data.draw(st.integers(tracks[k].first, tracks[k].last))
        lo.append(a)
        hi.append(data.draw(st.integers(a, tracks[k].last)))
    got = present_ticks(tracks, ent, np.array(lo), np.array(hi))
    want = [
        int(mask[a : b + 1, col[tracks[k].entity_id]].sum())
        for k, a, b in zip(ent.tolist(), lo, hi, strict=True)
    ]
    assert got.tolist() == want


def test_a_track_made_without_gaps_is_present_throughout() -> None:
    t = TrackExtent("e", 10, 19, 10)
    assert t.gaps == ()
    assert present_ticks(
        [t], np.array([0, 0]), np.array([10, 12]), np.array([19, 13])
    ).tolist() == [
        10,
        2,
    ]


def test_gaps_survive_a_json_round_trip_of_the_fields() -> None:
    t = TrackExtent("e", 0, 99, 60, (10, 30, 50, 70))
    back = TrackExtent(**json.loads(json.dumps(asdict(t))))
    assert back == t and isinstance(back.gaps, tuple)
    assert present_ticks([back], np.array([0]), np.array([0]), np.array([99])).tolist() == [60]


def test_spans_without_a_present_tick_are_no_candidates() -> None:
    # present 0-29 and 95-119, span 10: spans 3-8 ([30, 89]) empty, span 9 ([90, 99]) holds 5
    ext = {"s": [TrackExtent("e", 0, 119, 55, (30, 95)), TrackExtent("f", 0, 19, 20)]}
    segs = [Segment("s", a, a + 10, {"f": 1.0}, priority=float(a)) for a in range(0, 120, 10)]
    kw = {"how": "max", "features": ["f"], "span_steps": 10}
    table, short = build_candidate_table(ext, {"s": segs}, **kw)
    assert short == 0 and table.empty_excluded == 6
    assert table.span.tolist() == [0, 1, 2, 9, 10, 11, 0, 1]  # span indices keep their place
    assert table.present.tolist() == [10, 10, 10, 5, 10, 10, 10, 10]
    assert table.first.tolist() == [0, 10, 20, 90, 100, 110, 0, 10]
    # the same rows as a table built without the gaps, less the empty ones
    full, _ = build_candidate_table(
        {"s": [TrackExtent("e", 0, 119, 120), ext["s"][1]]}, {"s": segs}, **kw
    )
    keep = np.r_[0:3, 9:14]
    assert full.empty_excluded == 0 and full.present.tolist() == full.n_steps.tolist()
    assert table.priority.tolist() == full.priority[keep].tolist()
    assert table.features.tolist() == full.features[keep].tolist()
    whole, _ = build_candidate_table(ext, {"s": segs}, how="max", features=["f"])
    assert whole.present.tolist() == [55, 20] and whole.empty_excluded == 0
