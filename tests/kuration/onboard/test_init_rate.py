"""kur init's time guesses: units from names and magnitudes, rates that keep every row."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kuration.onboard.init_rate import choose_rate, collisions_at, time_unit
from kuration.onboard.rate_fit import DRIFT_STEPS
from kuration.sources._retime import resolve_duplicates, retime_runs


@pytest.mark.parametrize(
    ("name", "values", "unit"),
    [
        ("videoTimeMs", [154487.8, 154521.2], "ms"),
        ("t_us", [0.0, 10.0], "us"),
        ("time_ns", [0.0, 10.0], "ns"),
        ("timestamp", [1.6336e12, 1.6337e12], "ms"),  # epoch milliseconds by magnitude
        ("timestamp", [1.6336e9, 1.6337e9], "s"),
        ("timestamp", [1.6336e18, 1.6337e18], "ns"),
        ("time", [0.0, 128.0], "s"),  # relative: seconds, with the hint to say otherwise
    ],
)
def test_time_unit_from_the_name_then_the_magnitude(name, values, unit) -> None:
    got, why = time_unit(name, np.array(values))
    assert got == unit, why
    assert "values" in why


def test_a_given_time_unit_wins_and_says_so() -> None:
    got, why = time_unit("time", np.array([0.0, 8.5]), "ms")
    assert got == "ms" and "(given)" in why


def test_relative_times_say_how_to_read_them_as_milliseconds() -> None:
    _unit, why = time_unit("t", np.array([0.0, 5.0, 10.0]))
    assert _unit == "s" and "--time-unit ms" in why


def test_a_fractional_step_of_a_few_units_is_a_millisecond_timer() -> None:
    # heartpy's data2.csv: 'timer' 0 .. 128210 in steps of 8.548, a 117 Hz ECG in ms
    v = np.arange(15000) * 8.5479032
    unit, why = time_unit("timer", v)
    assert unit == "ms", why
    assert "117 Hz" in why and "0.117 Hz" in why and "--time-unit s" in why
    assert time_unit("x", v)[0] == "ms"  # the fractional step alone tips it
    assert time_unit("timer", v, "s")[0] == "s"  # --time-unit still overrides


@pytest.mark.parametrize(
    ("name", "step", "unit"),
    [("t", 5.0, "s"), ("t", 60.0, "s"), ("tick", 4.0, "ms"), ("t", 0.04, "s"), ("t", 250.0, "s")],
)
def test_whole_steps_stay_seconds_unless_named_a_timer(name: str, step: float, unit: str) -> None:
    assert time_unit(name, np.arange(2000) * step)[0] == unit


@settings(max_examples=60, deadline=None)
@given(
    hz=st.floats(min_value=0.0002, max_value=5000.0),
    n=st.integers(min_value=20, max_value=3000),
    t0=st.floats(min_value=0.0, max_value=1e5),  # float64 seconds: finer steps need small t
)
@example(hz=1.5, n=20, t0=1.0)  # every row half a step off the grid, a ulp either side
@example(hz=100.0, n=3000, t0=0.005)  # mid-interval stamps
def test_a_regular_rate_is_kept_exactly_and_collides_nothing(hz: float, n: int, t0: float) -> None:
    t = t0 + np.arange(n) / hz
    rc = choose_rate(t, np.zeros(n, dtype=np.int64), coarse=False)
    # a rounded rate is taken only when it drifts under DRIFT_STEPS of a step over the file
    # (a fixed relative 1e-4 let 8,760 hourly rows drift 0.7 steps)
    assert abs(rc.hz / hz - 1) * (n - 1) <= DRIFT_STEPS * (1 + 1e-9)
    assert rc.collisions == 0 and collisions_at(t, np.zeros(n, dtype=np.int64), rc.hz) == 0


def test_a_117_hz_recording_is_not_rounded_to_100_hz() -> None:
    t = np.arange(15000) * 0.0085479032  # heartpy's ECG timer step, in seconds
    rc = choose_rate(t, np.zeros(t.size, dtype=np.int64), coarse=False)
    assert abs(rc.hz - 116.99) < 0.01 and rc.collisions == 0
    assert collisions_at(t, np.zeros(t.size, dtype=np.int64), 100.0) > 2000  # what 100 Hz cost


def test_irregular_steps_print_the_rate_that_keeps_the_rows() -> None:
    rng = np.random.default_rng(0)
    t = np.cumsum(rng.choice([2.0, 9.0, 13.0, 40.0], size=400))
    rc = choose_rate(t, np.zeros(t.size, dtype=np.int64), coarse=False)
    text = "\n".join(rc.lines)
    assert not rc.regular and "steps are irregular" in text and "--rate" in text
    assert rc.collisions == collisions_at(t, np.zeros(t.size, dtype=np.int64), rc.hz)


@settings(max_examples=60, deadline=None)
@given(
    reps=st.lists(st.integers(min_value=1, max_value=3), min_size=2, max_size=200),
    quantum=st.floats(min_value=0.001, max_value=10.0),
)
def test_retime_keeps_order_ends_and_counts_the_repeats(reps: list[int], quantum: float) -> None:
    t = np.repeat(np.arange(len(reps)) * quantum, reps)
    ent = np.zeros(t.size, dtype=np.int64)
    new, n = retime_runs(t, ent)
    assert n == t.size - len(reps)
    assert new[0] == t[0] and new[-1] == pytest.approx(t[-1], rel=1e-12)
    if n:
        assert np.all(np.diff(new) > 0)
        assert collisions_at(new, ent, (t.size - 1) / (t[-1] - t[0])) == 0


def test_duplicates_raise_names_the_option() -> None:
    t = np.array([0.0, 1.0, 1.0, 2.0])
    ent = np.zeros(4, dtype=np.int64)

    def error(row: int, n: int) -> Exception:
        return ValueError(f"row {row}, {n}")

    with pytest.raises(ValueError, match="row 2, 1"):
        resolve_duplicates("raise", np.arange(4), t, ent, error)
    order, t_new, counts = resolve_duplicates("first", np.arange(4), t, ent, error)
    assert list(order) == [0, 1, 3] and t_new is None and counts == {"duplicates_dropped": 1}
    order, t_new, counts = resolve_duplicates("retime", np.arange(4), t, ent, error)
    assert t_new is not None and counts == {"retimed": 1} and len(set(t_new)) == 4


def test_one_repeated_time_in_regular_data_is_not_irregular() -> None:
    # a duplicate's zero step is the duplicates policy's business, not a step of the grid
    t = np.concatenate([np.arange(0.0, 50.0), [49.0], np.arange(50.0, 100.0)])
    rc = choose_rate(t, np.zeros(t.size, dtype=np.int64), coarse=False)
    assert rc.hz == 1.0 and rc.regular and rc.collisions == 0
    assert not any("irregular" in line for line in rc.lines), rc.lines
