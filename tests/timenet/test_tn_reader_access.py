"""Readers: integer and slice indexing, masked reads and pandas frames indexed by time."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from tn_helpers import make_card

import timenet as tn


def test_indexing_by_position_id_and_slice(demo: Path) -> None:
    for ds in (tn.TimeFReader.open(demo), tn.TimeFReader.open(demo).load()):
        assert ds[0].id == "rec-0" and ds[-1].id == "rec-2" and ds["rec-1"].index == 1
        assert [r.id for r in ds[1:]] == ["rec-1", "rec-2"]
        assert ds[np.int64(2)] == ds.record("rec-2")
        with pytest.raises(tn.RecordIndexError, match="record index 3 is out of range: 3"):
            ds[3]
        with pytest.raises(IndexError):
            ds[-4]
        with pytest.raises(tn.RecordNotFoundError):
            ds["nope"]
        with pytest.raises(tn.RecordNotFoundError, match="index with an int"):
            ds[1.0]  # type: ignore[index]


def test_masked_reads(demo: Path) -> None:
    temp = tn.TimeFReader.open(demo).signal("rec-0", "temp")
    m = temp.to_masked()
    np.testing.assert_array_equal(m.mask, [0, 0, 1, 0, 0, 0])
    np.testing.assert_allclose(m.compressed(), np.linspace(20, 25, 6)[[0, 1, 3, 4, 5]])
    f = temp.read_steps_masked(1, 4, unit="degF")
    np.testing.assert_allclose(f.compressed(), np.linspace(20, 25, 6)[[1, 3]] * 9 / 5 + 32)
    acc = tn.TimeFReader.open(demo).signal("rec-0", "acc").to_masked()
    assert acc.shape == (40, 3) and not acc.mask.any()


def test_to_pandas_indexed_by_time(tmp_path: Path, demo: Path) -> None:
    reader = tn.TimeFReader.open(demo)
    temp = reader.signal("rec-1", "temp").to_pandas()
    assert isinstance(temp.index, pd.TimedeltaIndex) and temp.name == "temp"
    assert temp.index[1] == pd.Timedelta(seconds=1) and np.isnan(temp.iloc[2])
    acc = reader.signal("rec-1", "acc").to_pandas(unit="cm/s^2")
    assert list(acc.columns) == ["acc[0]", "acc[1]", "acc[2]"]
    np.testing.assert_allclose(acc.to_numpy(), reader.signal("rec-1", "acc").to_numpy() * 100)
    frame = reader.to_pandas(1, signals=["temp", "events"])
    # outer join on time: six one-second steps and three event times, none shared
    times = sorted(set(np.arange(6) * 1_000_000_000) | {10, 2_000, 90_000})
    assert frame.index.asi8.tolist() == times  # sorted
    assert frame["events"].notna().sum() == 3 and frame["temp"].notna().sum() == 5
    with pytest.raises(tn.SignalNotFoundError):
        reader.to_pandas("rec-0", signals=["nope"])
    # an absolute time origin gives a DatetimeIndex in the spec's time zone
    spec = tn.SignalSpec(
        "float64", "m", rate_hz=1.0, time_origin="2021-10-07T14:00:00Z", timezone="Europe/Zurich"
    )
    with tn.TimeFWriter(tmp_path, make_card(name="abs")) as w:
        w.add_record("r")
        w.add_signal("r", "h", np.array([1.0, 2.0]), spec)
    s = tn.TimeNet([tmp_path], auto_build=False).open("acme/abs")[0]
    series = tn.TimeNet([tmp_path], auto_build=False).open("acme/abs").to_pandas(s)["h"]
    assert str(series.index.tz) == "Europe/Zurich"
    assert series.index[1] == pd.Timestamp("2021-10-07T14:00:01Z")
