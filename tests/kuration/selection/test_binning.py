"""Quantile binning: equal frequency, the tie/constant/NaN rules, per-axis counts, fit pools."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kuration import Segment
from kuration.errors import StrategyError
from kuration.selection.binning import bin_segments, feature_matrix, joint_bins, quantile_bins


def _segs(**cols: list[float]) -> list[Segment]:
    n = len(next(iter(cols.values())))
    return [Segment("s", i, i + 1, {k: float(v[i]) for k, v in cols.items()}) for i in range(n)]


def test_equal_frequency_on_distinct_values() -> None:
    coords, edges = quantile_bins(np.arange(100.0), 4)
    assert np.bincount(coords).tolist() == [25, 25, 25, 25]
    # golden edges from numpy's own quantile (linear interpolation)
    assert edges.tolist() == pytest.approx(np.quantile(np.arange(100.0), [0.25, 0.5, 0.75]))


def test_constant_feature_is_one_bin_zero() -> None:
    coords, edges = quantile_bins(np.full(10, 3.5), 4)
    assert coords.tolist() == [0] * 10
    assert edges.tolist() == [3.5]


def test_ties_collapse_and_go_to_the_lower_bin() -> None:
    v = np.array([0.0] * 6 + [1.0, 2.0, 3.0, 4.0])
    coords, edges = quantile_bins(v, 4)
    # quantiles 0.25 and 0.5 are both 0: they collapse into one edge
    assert edges.tolist() == pytest.approx(np.unique(np.quantile(v, [0.25, 0.5, 0.75])))
    assert len(edges) == 2
    assert coords[:6].tolist() == [0] * 6  # the tie stays in one (the lower) bin
    assert coords[6:].tolist() == [1, 2, 2, 2]  # 1.0 <= 1.75 < 2.0


def test_non_finite_values_get_minus_one() -> None:
    coords, _ = quantile_bins(np.array([1.0, np.nan, np.inf, -np.inf, 2.0]), 2)
    assert coords.tolist()[1:4] == [-1, -1, -1]
    assert quantile_bins(np.array([np.nan, np.nan]), 3)[0].tolist() == [-1, -1]


def test_fit_mask_sets_edges_but_every_value_gets_a_coordinate() -> None:
    v = np.array([0.0, 1.0, 2.0, 3.0, 100.0, 200.0])
    fit = np.array([True, True, True, True, False, False])
    coords, edges = quantile_bins(v, 2, fit=fit)
    assert edges.tolist() == [1.5]
    assert coords.tolist() == [0, 0, 1, 1, 1, 1]


def test_bin_segments_per_axis_counts_and_joint_cells() -> None:
    segs = _segs(a=list(range(12)), b=[0, 1] * 6)
    edges = bin_segments(segs, ["a", "b"], [3, 2])
    assert len(edges["a"]) == 2 and len(edges["b"]) == 1
    assert all(s.bin is not None and len(s.bin) == 2 for s in segs)
    cells, index = joint_bins(segs)
    assert cells.shape == (6, 2)
    assert np.bincount(index).tolist() == [2] * 6


def test_bin_segments_errors() -> None:
    segs = _segs(a=[1, 2, 3])
    with pytest.raises(StrategyError, match="not a feature"):
        bin_segments(segs, ["zzz"], 2)
    with pytest.raises(StrategyError, match="one per axis"):
        bin_segments(segs, ["a"], [2, 3])
    with pytest.raises(StrategyError):
        quantile_bins(np.arange(3.0), 0)
    with pytest.raises(StrategyError, match="not binned"):
        joint_bins(_segs(a=[1, 2]))
    with pytest.raises(StrategyError):
        feature_matrix(segs, ["nope"])


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.one_of(st.floats(-1e6, 1e6), st.just(float("nan")), st.sampled_from([0.0, 1.0])),
        min_size=1,
        max_size=60,
    ),
    st.integers(1, 8),
)
def test_binning_properties(values: list[float], n_bins: int) -> None:
    v = np.array(values)
    coords, edges = quantile_bins(v, n_bins)
    finite = np.isfinite(v)
    assert (coords[~finite] == -1).all()
    assert ((coords[finite] >= 0) & (coords[finite] <= len(edges))).all()
    assert len(edges) <= n_bins - 1
    assert np.all(np.diff(edges) > 0)
    # monotone: a larger value never gets a lower bin
    fv, fc = v[finite], coords[finite]
    order = np.argsort(fv, kind="stable")
    assert np.all(np.diff(fc[order]) >= 0)
    # equal values share a bin
    for x in np.unique(fv):
        assert len(set(fc[fv == x].tolist())) == 1
    # equal frequency within ties: no bin of distinct values holds more than ceil(N/n)+ties
    if finite.sum() >= n_bins and len(np.unique(fv)) == finite.sum():
        counts = np.bincount(fc, minlength=len(edges) + 1)
        assert counts.max() - counts.min() <= 2
