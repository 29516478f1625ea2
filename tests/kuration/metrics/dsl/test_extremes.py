"""Per-tick and per-window min/max equal numpy's NaN-skipping element-wise reduction, bit for
bit, whichever way the reduces run them."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kuration.metrics.dsl import reduces

VALUES = st.sampled_from([0.0, -0.0, 1.5, -2.0, 3.0, np.nan, 1e308, -1e308])


@st.composite
def grids(draw: st.DrawFn) -> np.ndarray:
    """A source-level stream (N, E, 1): ties, both zeros or one of them, NaN rows."""
    n = draw(st.integers(1, 30))
    e = draw(st.integers(1, 6))
    vals = draw(st.lists(VALUES, min_size=n * e, max_size=n * e))
    x = np.array(vals, dtype=np.float64).reshape(n, e, 1)
    if draw(st.booleans()):  # one sign of zero only: the fast path runs
        x = np.where(x == 0, 0.0, x)
    return x


@given(grids(), st.sampled_from(["min", "max"]), st.integers(1, 8), st.integers(1, 4))
@settings(max_examples=300, deadline=None)
def test_tick_and_window_extremes_equal_elementwise_reduce(x, op, length, step) -> None:
    red = np.fmin if op == "min" else np.fmax
    tick = reduces.tick_extreme(x, op)
    assert tick.tobytes() == red.reduce(x[..., 0], axis=-1).tobytes()
    n = tick.shape[0]
    length = min(length, n)
    starts = np.arange(0, n - length + 1, step)

    def win(a: np.ndarray, extra: int) -> np.ndarray:
        return np.stack([a[s + extra : s + length] for s in starts])

    got = reduces.window_extreme(tick, op, win)
    assert got.tobytes() == red.reduce(win(tick, 0), axis=1).tobytes()
