"""kur init's rate on stamps a fresh user hands it: hourly and 30 s periods written exactly,
milliseconds-rounded 60 Hz and 30 Hz, and files of different rates in one job."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kuration import init_job
from kuration.cli.main import main as kur_main
from kuration.onboard.init_rate import choose_rate, collisions_at
from kuration.onboard.rate_fit import DRIFT_STEPS, fit_steps, rate_candidates


def _zeros(n: int) -> np.ndarray:
    return np.zeros(n, dtype=np.int64)


def _hourly(path: Path, n: int = 8760, skip: int = 1634) -> Path:
    """A year of hourly temperatures stamped on the hour, one hour missing (a clock change)."""
    t0 = datetime(2010, 1, 1, tzinfo=UTC)
    rows = [
        f"{(t0 + timedelta(hours=i)).strftime('%Y-%m-%d %H:%M')},{40 + 10 * math.sin(i / 24):.1f}"
        for i in range(n)
        if i != skip
    ]
    path.write_text("date,temp\n" + "\n".join(rows) + "\n")
    return path


def _shard_rows(out: Path, field: str) -> tuple[np.ndarray, np.ndarray]:
    """(``_time_s``, ``field``) of every present row of every shard under ``out``."""
    ts, vs = [], []
    for shard in sorted(out.rglob("*.npz")):
        with np.load(shard) as z:
            ok = z["_present"].astype(bool)
            ts.append(z["_time_s"][ok])
            vs.append(z[field][ok])
    return np.concatenate(ts), np.concatenate(vs)


def test_an_hourly_file_gets_one_over_3600_and_reads_back_on_the_hour(tmp_path: Path) -> None:
    """0.0002778 Hz put the hours up to 1,800 s off in the shards (8,759 rows on 8,761
    ticks); 1 / 3600.0 keeps every stamp on the hour."""
    src = _hourly(tmp_path / "temps.csv")
    res = init_job([src], tmp_path / "job")
    assert res.job["schema"]["sample_hz"] == 1 / 3600
    text = "\n".join(res.lines)
    assert "sample rate: 0.000277778 Hz (one row every 3600 s)" in text
    assert "windows: 120 steps (432000 s)" in text
    assert (
        kur_main(["run", str(tmp_path / "job" / "job.json"), "--out", str(tmp_path / "out")]) == 0
    )
    t, temp = _shard_rows(tmp_path / "out", "temp")
    assert t.size > 1000
    assert np.all(t % 3600 == 0), float(np.max(np.abs(t - np.round(t / 3600) * 3600)))
    # and each hour holds its own row's value
    hours = ((t - datetime(2010, 1, 1, tzinfo=UTC).timestamp()) // 3600).astype(np.int64)
    assert np.allclose(temp, np.round(40 + 10 * np.sin(hours / 24), 1), atol=1e-4)


def test_30_s_epochs_get_one_over_30_and_whole_windows(tmp_path: Path) -> None:
    """0.033333 Hz put epochs seconds off their stamps and the window at 3600.04 s."""
    src = tmp_path / "sleep.csv"
    src.write_text(
        "time,value\n" + "".join(f"{i * 30},{math.sin(i / 9):.4f}\n" for i in range(3000))
    )
    res = init_job([src], tmp_path / "job")
    assert res.job["schema"]["sample_hz"] == 1 / 30
    assert "windows: 120 steps (3600 s)" in "\n".join(res.lines)


@settings(max_examples=40, deadline=None)
@given(
    period=st.sampled_from([3600.0, 900.0, 60.0, 30.0, 7.5, 1.0, 0.04, 0.02, 0.001]),
    n=st.integers(min_value=50, max_value=20_000),
    t0_steps=st.integers(min_value=0, max_value=10**6),
)
def test_a_whole_or_decimal_period_gives_its_exact_inverse(
    period: float, n: int, t0_steps: int
) -> None:
    t = (t0_steps + np.arange(n)) * period
    rc = choose_rate(t, _zeros(n), coarse=False)
    assert rc.hz == 1.0 / period and rc.collisions == 0


@settings(max_examples=60, deadline=None)
@given(
    hz=st.floats(min_value=0.001, max_value=2000.0),
    n=st.integers(min_value=20, max_value=20_000),
)
def test_the_rate_drifts_under_a_twentieth_of_a_step_over_the_longest_run(
    hz: float, n: int
) -> None:
    t = np.arange(n) / hz
    fit = fit_steps(t, _zeros(n))
    for c in rate_candidates(fit.step_s, fit.longest):
        assert abs(c / hz - 1) * (n - 1) <= DRIFT_STEPS * (1 + 1e-6)


@pytest.mark.parametrize("hz", [24.0, 30.0, 60.0, 120.0, 128.0, 29.97])
@pytest.mark.parametrize("rounding", [np.floor, np.round])
def test_stamps_in_whole_milliseconds_keep_the_rate(hz: float, rounding, tmp_path: Path) -> None:
    """60 Hz in whole ms steps 16, 17, 17 ms: the median gave 58.82 Hz (118 of 6,000 rows
    averaged) and the printed alternative 62.5 Hz; the mean step gives 60 Hz."""
    n = 6000
    t = rounding(np.arange(n) * 1000 / hz) / 1000
    rc = choose_rate(t, _zeros(n), coarse=False)
    assert rc.hz == hz and rc.collisions == 0 and rc.regular, rc.lines


def test_a_60_hz_millisecond_file_proposes_60_hz(tmp_path: Path) -> None:
    src = tmp_path / "imu.csv"
    src.write_text(
        "time_ms,value\n"
        + "".join(f"{i * 1000 // 60},{math.sin(i / 9):.4f}\n" for i in range(6000))
    )
    res = init_job([src], tmp_path / "job")
    assert res.job["schema"]["sample_hz"] == 60.0
    assert "collisions" not in res.job["adapter"]
    text = "\n".join(res.lines)
    assert "sample rate: 60 Hz" in text and "--rate" not in text and "irregular" not in text


def _rate_file(path: Path, hz: float, seconds: float) -> Path:
    n = int(seconds * hz)
    path.write_text(
        "time,value\n" + "".join(f"{i / hz:.4f},{math.sin(i / 9):.4f}\n" for i in range(n))
    )
    return path


def test_files_of_different_rates_are_named_and_the_highest_proposed(tmp_path: Path) -> None:
    """One 100 Hz and one 10 Hz file gave 18.182 Hz, 40.9% of rows averaged, no word of
    the files differing."""
    fast = _rate_file(tmp_path / "h100.csv", 100.0, 60.0)
    slow = _rate_file(tmp_path / "h10.csv", 10.0, 300.0)
    res = init_job([fast, slow], tmp_path / "job")
    text = "\n".join(res.lines)
    assert res.job["schema"]["sample_hz"] == 100.0
    assert "the files' sample rates differ: h100.csv 100 Hz, h10.csv 10 Hz" in text
    assert "it keeps every row" in text and "run kur init on the files of one rate" in text
    assert "collisions" not in res.job["adapter"]
    # the slow file's rows, ten ticks apart, stay one run (not one run a row)
    assert "2 runs (split at gaps" in text


def test_files_of_one_rate_are_not_said_to_differ(tmp_path: Path) -> None:
    a = _rate_file(tmp_path / "a.csv", 50.0, 60.0)
    b = _rate_file(tmp_path / "b.csv", 50.0, 90.0)
    res = init_job([a, b], tmp_path / "job")
    assert res.job["schema"]["sample_hz"] == 50.0
    assert "differ" not in "\n".join(res.lines)


def test_collisions_at_the_proposed_rate_are_what_choose_rate_reports() -> None:
    t = np.concatenate([np.arange(600) / 100.0, 10 + np.arange(300) / 10.0])
    ent = np.repeat([0, 1], [600, 300])
    rc = choose_rate(t, ent, coarse=False, files=("fast.csv", "slow.csv"), file_of=ent)
    assert rc.hz == 100.0 and rc.collisions == collisions_at(t, ent, 100.0) == 0
    assert any("fast.csv 100 Hz, slow.csv 10 Hz" in line for line in rc.lines)


def test_close_rates_that_no_one_rate_fits_are_named_too() -> None:
    """100 Hz and 100.5 Hz differ by under 1%, but at any one rate between them rows of the
    faster file collide: both are named and the faster proposed."""
    t = np.concatenate([np.arange(6000) / 100.0, np.arange(6030) / 100.5])
    ent = np.repeat([0, 1], [6000, 6030])
    rc = choose_rate(t, ent, coarse=False, files=("a.csv", "b.csv"), file_of=ent)
    assert rc.hz == 100.5 and rc.collisions == 0
    assert any("a.csv 100 Hz, b.csv 100.5 Hz" in line for line in rc.lines), rc.lines


def test_a_file_of_one_row_per_entity_has_no_rate_of_its_own(tmp_path: Path) -> None:
    t = np.concatenate([np.arange(600) / 50.0, [3.0, 4.0, 5.0]])
    ent = np.r_[np.zeros(600, dtype=np.int64), [1, 2, 3]]
    file_of = np.r_[np.zeros(600, dtype=np.int64), [1, 1, 1]]
    rc = choose_rate(t, ent, coarse=False, files=("long.csv", "points.csv"), file_of=file_of)
    assert rc.hz == 50.0 and rc.collisions == 0
    assert not any("differ" in line for line in rc.lines)


def test_files_of_one_name_in_two_folders_are_named_by_path(tmp_path: Path) -> None:
    (tmp_path / "run1").mkdir()
    (tmp_path / "run2").mkdir()
    fast = _rate_file(tmp_path / "run1" / "log.csv", 100.0, 30.0)
    slow = _rate_file(tmp_path / "run2" / "log.csv", 10.0, 120.0)
    res = init_job([fast, slow], tmp_path / "job")
    text = "\n".join(res.lines)
    assert f"{fast} 100 Hz, {slow} 10 Hz" in text, text
