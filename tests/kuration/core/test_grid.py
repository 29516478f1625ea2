"""The grid-point rule shared by the adapters, ``kur init`` and the tick contract."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kuration.core.grid import grid_point, grid_points


@settings(max_examples=200, deadline=None)
@given(
    # rates whose half step is a terminating decimal (at 1.5 Hz the written times
    # themselves are rounded half steps, which no rule can place)
    hz=st.sampled_from([1.0, 2.0, 4.0, 10.0, 20.0, 25.0, 50.0, 100.0, 200.0, 1000.0]),
    first=st.integers(min_value=0, max_value=10**9),
    n=st.integers(min_value=2, max_value=400),
)
def test_half_step_stamps_land_one_a_tick(hz: float, first: int, n: int) -> None:
    # rows stamped at the half step, as a decimal time a recorder writes
    k = first + np.arange(n)
    t = np.array([float(f"{(j + 0.5) / hz:.9f}") for j in k.tolist()])
    got = grid_points(t * hz)
    assert np.array_equal(got, k + 1), "a half step goes to the later tick, every time"


@settings(max_examples=200, deadline=None)
@given(x=st.floats(min_value=-1e12, max_value=1e12, allow_nan=False))
def test_it_is_the_nearest_point_and_the_scalar_agrees(x: float) -> None:
    k = int(grid_points(np.array([x]))[0])
    assert abs(x - k) <= 0.5 + 17 * float(np.spacing(abs(x)))  # the half-step slack
    assert grid_point(x) == k


def test_mid_interval_100_hz_stamps_no_longer_collide() -> None:
    t = np.round(0.005 + np.arange(3000) / 100.0, 6)  # 0.005, 0.015, ... as a CSV holds them
    k = grid_points(t * 100.0)
    assert np.all(np.diff(k) == 1)
    assert not np.all(np.diff(np.floor(t * 100.0 + 0.5)) == 1)  # the plain rule collided
