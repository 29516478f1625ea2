"""Order statistics from ranks counted in blocks equal numpy's sort of each window, exactly."""

from __future__ import annotations

import numpy as np
import pytest
from dsl_support import SCHEMA, make_table, random_values
from hypothesis import given, settings
from hypothesis import strategies as st

from kuration.extend import FeatureEngine, build_window
from kuration.metrics.dsl import order_stats, reduces


@st.composite
def streams(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, int]:
    """A source-level stream (N, E, 1) with NaN holes (whole ticks, whole entities, ties),
    a regular grid of window starts and the window length."""
    n = draw(st.integers(1, 60))
    e = draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    x = rng.normal(size=(n, e, 1))
    if draw(st.booleans()):  # ties (0.0 only: -0.0 ties with it, and the engine sorts those)
        x = np.round(x) + 0.0
    x[rng.random((n, e)) < draw(st.sampled_from([0.0, 0.3, 0.8, 1.0]))] = np.nan
    x[rng.random(n) < 0.1] = np.nan  # ticks with no sample at all
    length = draw(st.integers(1, n))
    stride = draw(st.integers(1, 2 * n))  # stride > length and stride not dividing it too
    s0 = draw(st.integers(0, n - length))
    return x, np.arange(s0, n - length + 1, stride, dtype=np.int64), length


@given(streams(), st.data())
@settings(max_examples=150, deadline=None)
def test_kth_equals_sorted_window(case, data) -> None:
    x, starts, length = case
    idx = order_stats.rank_index(order_stats.tick_samples(x))
    step = int(starts[1] - starts[0]) if starts.size > 1 else data.draw(st.integers(1, 9))
    blocks = order_stats.rank_blocks(idx, step, int(starts[0]) % step)
    wins = [np.sort(x[s : s + length, :, 0][~np.isnan(x[s : s + length, :, 0])]) for s in starts]
    rows = [g for g, w in enumerate(wins) for _ in range(w.size)]
    ks = [k for w in wins for k in range(w.size)]
    got = order_stats.ranked_windows(
        idx, blocks, starts[np.array(rows, dtype=np.intp)], length, np.array(ks, dtype=np.intp)
    )
    want = np.concatenate([*wins, np.zeros(0)])
    assert got.tobytes() == want.tobytes()


@given(streams(), st.sampled_from([0.0, 10.0, 25.0, 50.0, 90.0, 99.5, 100.0]))
@settings(max_examples=100, deadline=None)
def test_percentile_and_median_equal_numpy(case, q) -> None:
    x, starts, length = case
    idx = order_stats.rank_index(order_stats.tick_samples(x))
    step = int(starts[1] - starts[0]) if starts.size > 1 else 1
    blocks = order_stats.rank_blocks(idx, step, int(starts[0]) % step)
    n = np.array([(~np.isnan(x[s : s + length, :, 0])).sum() for s in starts])

    def ranked(rows: np.ndarray, i0: np.ndarray, i1: np.ndarray):
        both = order_stats.ranked_windows(
            idx, blocks, np.tile(starts[rows], 2), length, np.concatenate([i0, i1])
        )
        return np.split(both, 2)

    samples = order_stats.tick_samples(x)

    def selected(rows: np.ndarray, i0: np.ndarray, i1: np.ndarray):
        return order_stats.selected_pairs(samples, starts[rows], length, i0, i1)

    for take in (ranked, selected):
        _check_against_numpy(take, x, starts, length, n, q)


def _check_against_numpy(take, x, starts, length, n, q) -> None:
    pct = reduces.percentile_of(take, n, q)
    med = reduces.median_of(take, n)
    for g, s in enumerate(starts):
        w = x[s : s + length, :, 0]
        w = w[~np.isnan(w)]
        if w.size == 0:
            assert np.isnan(pct[g]) and np.isnan(med[g])
        else:  # numpy's own linear percentile and median, bit for bit
            assert pct[g].tobytes() == np.percentile(w, q).tobytes()
            assert med[g].tobytes() == np.median(w).tobytes()


@pytest.mark.parametrize(
    ("length", "stride"), [(12, 1), (12, 2), (25, 2), (41, 3), (40, 4), (30, 4)]
)
def test_engine_ranked_windows_equal_single_windows(length, stride, monkeypatch) -> None:
    """Overlapping windows take the ranked path; each equals its window scored alone."""
    calls = _spy(monkeypatch)
    n, e = 90, 5
    assert order_stats.worth_ranking(n, (n - length) // stride + 1, length - 1)
    rng = np.random.default_rng(length * 100 + stride)
    present = rng.random((n, e)) < 0.6
    vals = random_values(rng, n, e)
    vals["hp"] = np.round(rng.normal(50, 10, (n, e, 1)))  # ties
    table = make_table(vals, present)
    eng = FeatureEngine(
        {
            "sp90": "field:pos | speed | p90",
            "sp_med": "field:pos | speed | median",
            "hp_iqr": "field:hp | iqr",
            "hp_p0": "field:hp | p0",
            "hp_p100": "field:hp | p100",
        },
        SCHEMA,
    )
    starts = np.arange(0, n - length + 1, stride)
    got = eng.score_table(table, starts, length)
    assert calls  # the ranked path ran
    for i, s in enumerate(starts):
        one = eng.score_window(build_window(table, int(s), int(s) + length))
        for name, v in got.items():
            assert np.array_equal(v[i], one[name], equal_nan=True), (name, s)


def _spy(monkeypatch) -> list[int]:
    """Record the calls of :func:`order_stats.ranked_windows` (which still runs)."""
    calls: list[int] = []
    real = order_stats.ranked_windows

    def spy(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(order_stats, "ranked_windows", spy)
    return calls


def test_mixed_zeros_keep_the_window_sort(monkeypatch) -> None:
    """0.0 and -0.0 tie; a stream holding both is sorted per window as before, not ranked."""
    calls = _spy(monkeypatch)
    n, e = 90, 3
    rng = np.random.default_rng(7)
    vals = random_values(rng, n, e)
    vals["hp"] = rng.choice([-0.0, 0.0, 1.0], (n, e, 1))
    table = make_table(vals, np.ones((n, e), bool))
    eng = FeatureEngine({"hp_med": "field:hp | median", "hp_p30": "field:hp | p30"}, SCHEMA)
    starts = np.arange(0, n - 20 + 1)
    got = eng.score_table(table, starts, 20)
    assert not calls
    w = np.lib.stride_tricks.sliding_window_view(vals["hp"][:, :, 0], 20, axis=0)
    w = w.reshape(w.shape[0], -1)
    assert np.array_equal(got["hp_med"], np.median(w, axis=1))
    assert np.array_equal(got["hp_p30"], np.percentile(w, 30, axis=1))


@settings(max_examples=200, deadline=None)
@given(
    vals=st.lists(st.sampled_from([0.0, -0.0, 1.0, -1.0, np.nan, np.inf]), max_size=8),
    strided=st.booleans(),
)
def test_mixed_zeros_is_both_signs_of_zero(vals: list[float], strided: bool) -> None:
    """The bit-pattern check says what the sign-bit definition says, on strided views too."""
    v = np.array(vals + vals, dtype=np.float64)[:: 2 if strided else 1]
    zero = v[v == 0]
    want = bool(np.signbit(zero).any() and not np.signbit(zero).all())
    assert reduces.mixed_zeros(v) is want
    assert reduces.mixed_zeros(v.astype(np.float32)) is want  # the general path


@given(streams())
@settings(max_examples=150, deadline=None)
def test_sliding_median_equals_numpy(case) -> None:
    """The sliding median of every tick range is numpy's median of its valid samples,
    bit for bit (NaN for a range without one)."""
    x, starts, length = case
    got = order_stats.sliding_median(x, starts, length)
    for g, s in enumerate(starts):
        w = x[s : s + length, :, 0]
        w = w[~np.isnan(w)]
        want = np.median(w) if w.size else np.nan
        assert got[g].tobytes() == np.float64(want).tobytes(), (s, w)


@pytest.mark.parametrize(("length", "stride"), [(25, 1), (49, 2), (121, 5)])
def test_engine_sliding_median_equals_single_windows(length, stride, monkeypatch) -> None:
    """Dense grids take the sliding median; each window equals its window scored alone,
    and the other order statistics of the same stream keep the ranked path."""
    calls: list[int] = []
    real = order_stats.sliding_median
    monkeypatch.setattr(order_stats, "sliding_median", lambda *a: calls.append(1) or real(*a))
    n, e = 160, 4
    rng = np.random.default_rng(length + stride)
    present = rng.random((n, e)) < 0.6
    vals = random_values(rng, n, e)
    vals["hp"] = np.round(rng.normal(50, 10, (n, e, 1)))  # ties
    table = make_table(vals, present)
    eng = FeatureEngine(
        {
            "sp_med": "field:pos | speed | median",
            "hp_med": "field:hp | median",
            "hp_p90": "field:hp | p90",
        },
        SCHEMA,
    )
    starts = np.arange(0, n - length + 1, stride)
    got = eng.score_table(table, starts, length)
    assert len(calls) == 2
    for i, s in enumerate(starts):
        one = eng.score_window(build_window(table, int(s), int(s) + length))
        for name, v in got.items():
            assert np.array_equal(v[i], one[name], equal_nan=True), (name, s)
