"""Order statistics from partitioned rows, sorted rows and a wavelet matrix of ranks equal
numpy's sort of each window, exactly."""

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


def _windows(x: np.ndarray, starts: np.ndarray, length: int) -> list[np.ndarray]:
    return [np.sort(x[s : s + length, :, 0][~np.isnan(x[s : s + length, :, 0])]) for s in starts]


@given(st.integers(1, 300), st.integers(0, 2**32 - 1), st.data())
@settings(max_examples=150, deadline=None)
def test_wavelet_kth_equals_sort_of_the_range(m: int, seed: int, data) -> None:
    """The k-th smallest of any range of a permutation is the k-th entry of its sort."""
    perm = np.random.default_rng(seed).permutation(m)
    wm = order_stats.wavelet_matrix(perm)
    lo = np.array(data.draw(st.lists(st.integers(0, m - 1), min_size=1, max_size=20)))
    hi = np.array([data.draw(st.integers(a + 1, m)) for a in lo])
    k = np.array([data.draw(st.integers(0, b - a - 1)) for a, b in zip(lo, hi, strict=True)])
    got = order_stats.kth_smallest(wm, lo, hi, k)
    want = [np.sort(perm[a:b])[j] for a, b, j in zip(lo, hi, k, strict=True)]
    assert got.tolist() == want


@given(streams())
@settings(max_examples=150, deadline=None)
def test_kth_equals_sorted_window(case) -> None:
    """Both kernels give every order statistic of every window, bit for bit."""
    x, starts, length = case
    samples = order_stats.tick_samples(x)
    idx = order_stats.rank_index(samples[0])
    wm = order_stats.wavelet_matrix(idx.ranks)
    wins = _windows(x, starts, length)
    rows = [g for g, w in enumerate(wins) for _ in range(w.size)]
    ks = np.array([k for w in wins for k in range(w.size)], dtype=np.intp)
    at = starts[np.array(rows, dtype=np.intp)]
    first = samples[1]
    got = idx.values[order_stats.kth_smallest(wm, first[at], first[at + length], ks)]
    want = np.concatenate([*wins, np.zeros(0)])
    assert np.asarray(got, dtype=np.float64).tobytes() == want.tobytes()
    srt, n = order_stats.sorted_rows(samples, starts, length)
    assert n.tolist() == [w.size for w in wins]
    for g, w in enumerate(wins):
        assert srt[g, : w.size].tobytes() == w.tobytes()
        assert np.isposinf(srt[g, w.size :]).all()


@given(streams(), st.sampled_from([0.0, 10.0, 25.0, 50.0, 90.0, 99.5, 100.0]))
@settings(max_examples=100, deadline=None)
def test_percentile_and_median_equal_numpy(case, q) -> None:
    x, starts, length = case
    samples = order_stats.tick_samples(x)
    idx = order_stats.rank_index(samples[0])
    wm = order_stats.wavelet_matrix(idx.ranks)
    first = samples[1]
    lo = first[starts]
    n = first[starts + length] - lo

    def ranked(rows: np.ndarray, i0: np.ndarray, i1: np.ndarray):
        a = np.tile(lo[rows], 2)
        got = order_stats.kth_smallest(wm, a, a + np.tile(n[rows], 2), np.concatenate([i0, i1]))
        return np.split(idx.values[got], 2)

    def selected(rows: np.ndarray, i0: np.ndarray, i1: np.ndarray):
        return order_stats.selected_pairs(samples, starts[rows], length, i0, i1)

    srt, n_rows = order_stats.sorted_rows(samples, starts, length)
    assert np.array_equal(n, n_rows)
    for take in (ranked, reduces.take_sorted(srt), selected):
        _check_against_numpy(take, x, starts, length, n, q)


@given(streams(), st.data())
@settings(max_examples=150, deadline=None)
def test_selected_pairs_are_the_sorted_windows_entries(case, data) -> None:
    """Any i0-th and (i0 + 1)-th or i0-th smallest of each window, one i0 a window, are
    the entries of its sort, bit for bit."""
    x, starts, length = case
    samples = order_stats.tick_samples(x)
    wins = _windows(x, starts, length)
    keep = np.array([w.size > 0 for w in wins], dtype=bool)
    i0 = np.array([data.draw(st.integers(0, w.size - 1)) for w in wins if w.size], np.intp)
    step = np.array([data.draw(st.integers(0, 1)) for _ in i0], np.intp)
    i1 = np.minimum(i0 + step, [w.size - 1 for w in wins if w.size])
    a, b = order_stats.selected_pairs(samples, starts[keep], length, i0, i1)
    kept = [w for w in wins if w.size]
    assert a.tobytes() == np.array([w[i] for w, i in zip(kept, i0, strict=True)]).tobytes()
    assert b.tobytes() == np.array([w[i] for w, i in zip(kept, i1, strict=True)]).tobytes()


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


@pytest.mark.parametrize("chunked", [False, True])
@pytest.mark.parametrize("kernel", ["wavelet", "rows", "select"])
@pytest.mark.parametrize(
    ("length", "stride"), [(12, 1), (12, 2), (25, 2), (41, 3), (40, 4), (30, 4), (30, 45)]
)
def test_engine_order_stats_equal_single_windows(
    length, stride, kernel, chunked, monkeypatch
) -> None:
    """Each kernel (forced by the coverage and zeros thresholds) gives each window the value
    it has scored alone, also when the windows are scored in chunks (each chunk ranks the
    samples it spans)."""
    monkeypatch.setattr(order_stats, "WAVELET_COVERAGE", 0 if kernel == "wavelet" else 10**9)
    monkeypatch.setattr(order_stats, "SELECT_MAX_ZEROS", 1.0 if kernel == "select" else -1.0)
    spied = {"wavelet": "kth_smallest", "rows": "sorted_rows", "select": "selected_pairs"}
    calls = _spy(monkeypatch, spied[kernel])
    n, e = 90, 5
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
    if chunked:
        eng.chunk_samples = length * e * 3  # three windows a chunk
    starts = np.arange(0, n - length + 1, stride)
    got = eng.score_table(table, starts, length)
    assert calls  # the forced kernel ran
    for i, s in enumerate(starts):
        one = eng.score_window(build_window(table, int(s), int(s) + length))
        for name, v in got.items():
            assert np.array_equal(v[i], one[name], equal_nan=True), (name, s)


def _spy(monkeypatch, name: str) -> list[int]:
    """Record the calls of ``order_stats.<name>`` (which still runs)."""
    calls: list[int] = []
    real = getattr(order_stats, name)

    def spy(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(order_stats, name, spy)
    return calls


def test_mixed_zeros_keep_the_window_sort(monkeypatch) -> None:
    """0.0 and -0.0 tie; a stream holding both is sorted per window as before, not ranked."""
    monkeypatch.setattr(order_stats, "WAVELET_COVERAGE", 0)
    ranked, rows = _spy(monkeypatch, "kth_smallest"), _spy(monkeypatch, "sorted_rows")
    selected = _spy(monkeypatch, "selected_pairs")
    n, e = 90, 3
    rng = np.random.default_rng(7)
    vals = random_values(rng, n, e)
    vals["hp"] = rng.choice([-0.0, 0.0, 1.0], (n, e, 1))
    table = make_table(vals, np.ones((n, e), bool))
    eng = FeatureEngine({"hp_med": "field:hp | median", "hp_p30": "field:hp | p30"}, SCHEMA)
    starts = np.arange(0, n - 20 + 1)
    got = eng.score_table(table, starts, 20)
    assert not ranked and not rows and not selected
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
    and the other order statistics of the same stream keep their kernel."""
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
