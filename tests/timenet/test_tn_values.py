"""The values plane: a time axis stored once per version, name and unit on every value file."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import numpy as np
import pyarrow.parquet as pq
import pytest
import zarr
from tn_helpers import make_card, write_demo

import timenet as tn


def test_identical_time_axes_are_stored_once(tmp_path: Path) -> None:
    axis = np.array([0, 5, 70, 900], dtype=np.int64)
    other = axis + 1
    spec = tn.SignalSpec("float64", "m")
    with tn.TimeFWriter(tmp_path, make_card()) as w:
        for rid in ("a", "b"):
            w.add_record(rid)
            w.add_signal(rid, "x", np.arange(4.0), spec, times=axis)
            w.add_signal(rid, "y", np.arange(4.0) * 2, spec, times=axis)
        w.add_signal("b", "z", np.arange(4.0), spec, times=other)
    version = tmp_path / "acme" / "demo" / "1.0.0"
    times = pq.read_table(version / "values" / "times.parquet").column("time_ns").to_numpy()
    np.testing.assert_array_equal(times, np.concatenate([axis, other]))  # each axis once
    manifest = json.loads((version / "manifest.json").read_text())
    assert [f["path"] for f in manifest["files"] if "times" in f["path"]] == [
        "values/times.parquet"
    ]
    with duckdb.connect(str(version / "control.duckdb"), read_only=True) as con:
        rows = con.execute(
            "SELECT name, times_file, times_offset FROM signals ORDER BY record_idx, ordinal"
        ).fetchall()
    assert {r[1] for r in rows} == {"values/times.parquet"}
    assert [r[2] for r in rows] == [0, 0, 0, 0, 4]
    reader = tn.TimeFReader.open(version)  # unchanged for users, and verified
    np.testing.assert_array_equal(reader.signal("b", "y").times(), axis)
    np.testing.assert_array_equal(reader.signal("b", "z").read_times(1, 3), other[1:3])
    (version / "values" / "times.parquet").write_bytes(b"x" * len(times.tobytes()))
    with pytest.raises(tn.IntegrityError, match="times.parquet"):
        tn.TimeFReader.open(version)


def test_value_files_carry_name_and_unit(tmp_path: Path) -> None:
    version = write_demo(tmp_path)
    acc = zarr.open_array(str(version / "values" / "0002-acc.zarr"), mode="r")
    assert dict(acc.attrs) == {"name": "acc", "unit": "m/s^2"}
    field = pq.read_schema(version / "values" / "0000-ecg.parquet").field("values")
    assert field.metadata == {b"name": b"ecg", b"unit": b"mV"}
