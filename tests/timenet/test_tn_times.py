"""TimeNet's time base: int64 ns since the epoch, naive ISO times are UTC, overflow refused."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from tn_helpers import make_card

import timenet as tn
from timenet._timebase import NS_MAX, NS_MIN, datetime64_to_ns, first_out_of_range, iso_to_ns
from timenet.build.errors import RawInputError
from timenet_connectors._common import csv_table, times_ns


@pytest.fixture
def writer(tmp_path: Path) -> Iterator[tn.TimeFWriter]:
    w = tn.TimeFWriter(tmp_path / "reg", make_card())
    w.add_record("r")
    yield w
    w.abort()


def test_iso_to_ns_naive_is_utc_and_offsets_are_honoured() -> None:
    utc = int(datetime(2024, 1, 1, tzinfo=UTC).timestamp()) * 10**9
    assert iso_to_ns("2024-01-01T00:00:00") == utc
    assert iso_to_ns("2024-01-01T09:00:00+09:00") == utc
    assert iso_to_ns("2024-01-01T00:00:00Z") == utc
    assert iso_to_ns("1970-01-01T00:00:00.000001") == 1_000
    with pytest.raises(ValueError, match="outside the int64-nanosecond range"):
        iso_to_ns("0001-01-01T00:00:00")
    with pytest.raises(ValueError, match="not ISO 8601"):
        iso_to_ns("yesterday")


def test_signal_spec_origin_and_start_are_checked() -> None:
    spec = tn.SignalSpec("float64", time_origin="2024-01-01T00:00:00")
    assert spec.origin_ns == iso_to_ns("2024-01-01T00:00:00+00:00")
    assert tn.SignalSpec("float64").origin_ns is None
    with pytest.raises(tn.SchemaError, match="time_origin '9999-12-31T00:00:00'.*outside"):
        tn.SignalSpec("float64", time_origin="9999-12-31T00:00:00")
    with pytest.raises(tn.SchemaError, match="start_ns .* outside int64"):
        tn.SignalSpec("float64", rate_hz=1.0, start_ns=2**63)
    with pytest.raises(tn.SchemaError, match="start_ns 'x' is not an integer"):
        tn.SignalSpec("float64", rate_hz=1.0, start_ns="x")


@pytest.mark.parametrize("unit", ["s", "ms", "us"])
def test_datetime64_times_of_every_unit_refuse_years_1_and_9999(writer, unit: str) -> None:
    times = np.array(["2024-01-01", "0001-01-01", "9999-12-31"], dtype=f"datetime64[{unit}]")
    with pytest.raises(tn.SchemaError, match=r"record 'r', signal 'v': time .* at step 1 "):
        writer.add_signal("r", "v", np.ones(3), tn.SignalSpec("float64"), times=times)
    ok = np.array(["2024-01-01T00:00:00", "2024-01-01T00:00:01"], dtype=f"datetime64[{unit}]")
    writer.add_signal("r", "ok", np.ones(2), tn.SignalSpec("float64"), times=ok)


def test_nat_and_the_int64_minimum_are_refused(writer) -> None:
    nat = np.array(["2024-01-01", "NaT"], dtype="datetime64[ns]")
    with pytest.raises(tn.SchemaError, match="at step 1"):
        writer.add_signal("r", "a", np.ones(2), tn.SignalSpec("float64"), times=nat)
    low = np.array([-(2**63), 0], dtype=np.int64)
    with pytest.raises(tn.SchemaError, match="at step 0"):
        writer.add_signal("r", "b", np.ones(2), tn.SignalSpec("float64"), times=low)


def test_times_that_overflow_after_the_origin(writer) -> None:
    spec = tn.SignalSpec("float64", time_origin="2262-04-01T00:00:00+00:00")
    far = np.array([0, 30 * 86_400 * 10**9], dtype=np.int64)  # 2262-05-01: past the end
    with pytest.raises(tn.SchemaError, match=r"step 1 .*\(after time_origin\)"):
        writer.add_signal("r", "v", np.ones(2), spec, times=far)


def test_regular_signal_whose_last_step_overflows(writer) -> None:
    spec = tn.SignalSpec("float64", rate_hz=1e-9, start_ns=NS_MAX - 10**17)
    with pytest.raises(tn.SchemaError, match=r"step 1 at 1e-09 Hz .*outside"):
        writer.add_signal("r", "v", np.ones(2), spec)


def test_annotation_times_are_int64(writer) -> None:
    with pytest.raises(tn.SchemaError, match="stop_ns .* outside int64"):
        writer.add_annotation("r", tn.Label("x"), start_ns=0, stop_ns=2**63)


def test_helpers_agree_with_numpy_and_python() -> None:
    ns, bad = datetime64_to_ns(np.array(["1677-09-22", "2262-04-11"], dtype="datetime64[D]"))
    assert bad is None
    assert ns.tolist() == [
        iso_to_ns("1677-09-22T00:00:00+00:00"),
        iso_to_ns("2262-04-11T00:00:00+00:00"),
    ]
    assert datetime64_to_ns(np.array(["2263-01-01"], dtype="datetime64[D]"))[1] == 0
    assert first_out_of_range(np.array([NS_MAX, NS_MIN])) is None
    assert first_out_of_range(np.array([0, NS_MAX]), offset=1) == 1
    assert first_out_of_range(np.array([0, NS_MIN]), offset=-1) == 1


@pytest.mark.parametrize(
    ("column", "unit", "row"),
    [
        (pa.array([0, 10**10], pa.timestamp("s")), None, 1),
        (pa.array([0, -(10**13)], pa.timestamp("ms")), None, 1),
        (pa.array([1, 2, 10**16], pa.timestamp("us")), None, 2),
        (pa.array([0, 10**13], pa.int64()), "ms", 1),
    ],
)
def test_connector_times_name_column_and_row(column, unit, row: int) -> None:
    with pytest.raises(RawInputError, match=rf"f\.csv, row {row}: column 'ts': time") as exc:
        times_ns(column, "f.csv", "ts", unit)
    assert exc.value.row == row


def test_connector_csv_with_year_0001() -> None:
    data = b"BaseDateTime,MMSI\n2020-06-30T00:00:00,1\n0001-01-01T00:00:00,2\n"
    table = csv_table(data, "ais.csv", {"BaseDateTime": pa.timestamp("s"), "MMSI": pa.int64()})
    with pytest.raises(RawInputError, match=r"ais\.csv, row 1: column 'BaseDateTime'"):
        times_ns(table.column("BaseDateTime"), "ais.csv", "BaseDateTime")
    ok = csv_table(data.split(b"\n0001")[0] + b"\n", "ok.csv", {"BaseDateTime": pa.timestamp("s")})
    assert times_ns(ok.column("BaseDateTime"), "ok.csv", "BaseDateTime").tolist() == [
        iso_to_ns("2020-06-30T00:00:00")
    ]


_CHILD = """
import sys
import timenet as tn
r = tn.TimeNet([sys.argv[1]]).open("acme/demo@1.0.0")
s = r.signal("r", "v")
print(s.spec.origin_ns, s.times().tolist())
"""


def test_naive_origin_reads_the_same_in_every_zone(tmp_path: Path) -> None:
    with tn.TimeFWriter(tmp_path / "reg", make_card()) as w:
        w.add_record("r")
        spec = tn.SignalSpec("float64", rate_hz=1.0, time_origin="2024-03-31T01:30:00")
        w.add_signal("r", "v", np.ones(3), spec)
    outs = [
        subprocess.run(
            [sys.executable, "-c", _CHILD, str(tmp_path / "reg")],
            env={**os.environ, "TZ": tz},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for tz in ("UTC", "Asia/Tokyo")
    ]
    assert outs[0] == outs[1]
    assert outs[0].split()[0] == str(iso_to_ns("2024-03-31T01:30:00+00:00"))
