"""Step kernels that work on the defined samples only equal their whole-grid formula."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from kuration.metrics.dsl.kernels import _wrap_step, angle_delta, floor_mod, step_diff


@settings(max_examples=100, deadline=None)
@given(
    a=hnp.arrays(
        np.float64,
        st.tuples(st.integers(0, 3), st.integers(1, 30), st.integers(0, 5), st.just(1)),
        elements=st.one_of(st.floats(-720, 720), st.just(np.nan)),
    ),
    turn=st.sampled_from([360.0, 2 * np.pi]),
    max_rate=st.sampled_from([None, 30.0, 1e-3]),
    hz=st.sampled_from([1.0, 16.0]),
)
def test_angle_delta_equals_the_whole_grid_wrap(
    a: np.ndarray, turn: float, max_rate: float | None, hz: float
) -> None:
    """Wrapping only the defined steps gives the whole grid's values, NaN where undefined."""
    got = angle_delta(a, turn, max_rate, hz)
    want = _wrap_step(step_diff(a), turn / 2.0, turn, max_rate, hz)
    assert got.shape == a.shape
    np.testing.assert_array_equal(got, want)
    assert got[~np.isnan(got)].tobytes() == want[~np.isnan(want)].tobytes()


_any_float = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(-800, 800),
    st.sampled_from([0.0, -0.0, 5e-324, -5e-324, 1e-300, -1e-300, 360.0, -360.0, 720.0]),
    st.sampled_from([np.pi, -np.pi, 2 * np.pi, -2 * np.pi, 3 * np.pi]),
)


@settings(max_examples=300, deadline=None)
@given(
    y=hnp.arrays(np.float64, st.integers(0, 40), elements=_any_float),
    turn=st.sampled_from([360.0, 2 * np.pi, 1.0, 1e-300]),
)
def test_floor_mod_has_np_mods_bits(y: np.ndarray, turn: float) -> None:
    """The select form of the floor modulo equals ``np.mod`` bit for bit: signed zeros,
    tiny negatives rounding up to the turn, values a turn or more away, infinities, NaN."""
    with np.errstate(invalid="ignore"):  # the modulo of an infinity is NaN, with a warning
        want = np.mod(y, turn)
        got = floor_mod(y, turn)
    assert got.dtype == want.dtype and got.shape == want.shape
    same = (got.view(np.uint64) == want.view(np.uint64)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), (y[~same], got[~same], want[~same])
