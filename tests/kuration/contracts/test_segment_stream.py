"""Segmenter.stream over blocks (with gaps between them) cuts the windows Segmenter.segments
cuts over the whole table, and each window holds the same ticks."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kuration import KurationError, SchemaSpec, Segmenter, TickTable

SCHEMA = SchemaSpec.from_dict(
    {"name": "t", "sample_hz": 1.0, "fields": [{"name": "x", "kind": "vector", "dims": 2}]}
)


def table(present: np.ndarray, k0: int = 5) -> TickTable:
    t, e = present.shape
    x = np.arange(t * e * 2, dtype=np.float64).reshape(t, e, 2)
    x[~present] = np.nan
    return TickTable("s", SCHEMA, k0, tuple(f"e{i}" for i in range(e)), {"x": x}, present)


def cut(tab: TickTable, bounds: list[int]) -> list[TickTable]:
    """Blocks between the cut points; a block with no present tick is left out (a gap)."""
    out = []
    for a, b in itertools.pairwise(bounds):
        if not tab.present[a:b].any():
            continue
        out.append(
            TickTable(
                "s",
                SCHEMA,
                tab.k0 + a,
                tab.entity_ids,
                {"x": tab.values["x"][a:b]},
                tab.present[a:b],
            )
        )
    return out


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    n=st.integers(1, 50),
    e=st.integers(1, 3),
    window=st.integers(1, 12),
    stride=st.integers(1, 6),
)
def test_stream_cuts_the_windows_of_segments(data, n, e, window, stride) -> None:
    present = np.array(
        data.draw(st.lists(st.booleans(), min_size=n * e, max_size=n * e)), dtype=bool
    ).reshape(n, e)
    present[0, 0] = present[-1, -1] = True  # a source starts and ends with a row
    tab = table(present)
    cuts = sorted(set(data.draw(st.lists(st.integers(1, n - 1), max_size=6)) if n > 1 else []))
    seg = Segmenter(window, stride)
    want = seg.segments("s", present)
    got = list(seg.stream("s", cut(tab, [0, *cuts, n])))
    assert [(s.start_idx, s.end_idx) for s, _ in got] == [(s.start_idx, s.end_idx) for s in want]
    for s, win in got:
        assert win.k0 == tab.k0 + s.start_idx and win.entity_ids == tab.entity_ids
        np.testing.assert_array_equal(win.present, present[s.start_idx : s.end_idx])
        np.testing.assert_array_equal(win.values["x"], tab.values["x"][s.start_idx : s.end_idx])
        assert win.values["x"].flags.c_contiguous


def test_blocks_that_go_back_are_refused() -> None:
    tab = table(np.ones((10, 1), dtype=bool))
    a, b = cut(tab, [0, 5, 10])
    with pytest.raises(KurationError, match="overlap or go back"):
        list(Segmenter(2, 1).stream("s", [b, a]))


@pytest.mark.parametrize("gap_cuts", [[1, 4], [1, 2, 4], [2, 3]])
def test_a_gap_longer_than_the_window_keeps_the_stride_grid(gap_cuts) -> None:
    # hypothesis found it: a gap of 3 absent ticks before a window of 2 once shifted a window
    present = np.array([[True], [False], [False], [False], [True]])
    seg = Segmenter(2, 3)
    got = [
        (s.start_idx, s.end_idx) for s, _ in seg.stream("s", cut(table(present), [0, *gap_cuts, 5]))
    ]
    assert got == [(s.start_idx, s.end_idx) for s in seg.segments("s", present)] == [(0, 2), (3, 5)]
