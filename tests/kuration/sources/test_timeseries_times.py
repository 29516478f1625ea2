"""TimeseriesAdapter times: the int64-nanosecond range and naive times (taken as UTC)."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kuration import SchemaSpec, TimeseriesAdapter
from kuration.errors import DataOrderWarning, SourceError, TimeRangeError

SCHEMA = SchemaSpec.from_dict({"sample_hz": 1.0, "fields": [{"name": "v", "kind": "scalar"}]})


def _adapter(**kw) -> TimeseriesAdapter:
    return TimeseriesAdapter(SCHEMA, time_column="t", entity_column="id", fields={"v": "v"}, **kw)


def _parquet(tmp_path: Path, t: pa.Array, name: str = "t.parquet") -> str:
    p = tmp_path / name
    n = len(t)
    pq.write_table(pa.table({"t": t, "id": ["a"] * n, "v": [1.0] * n}), p)
    return str(p)


def test_csv_years_0001_and_9999_name_column_and_row(tmp_path: Path) -> None:
    p = tmp_path / "far.csv"
    p.write_text(
        "t,id,v\n2024-01-01T00:00:00,a,1\n0001-01-01T00:00:00,a,2\n9999-12-31T23:59:59,a,3\n"
    )
    with pytest.raises(TimeRangeError, match=r"far\.csv, line 3: column 't': time .*0001") as e:
        _adapter().read_table(str(p))
    assert (e.value.source, e.value.column, e.value.row) == (str(p), "t", 1)
    assert isinstance(e.value, SourceError)


@pytest.mark.parametrize("unit", ["s", "ms", "us"])
def test_timestamp_columns_of_every_unit(tmp_path: Path, unit: str) -> None:
    far = [dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 1, 0, 0, 1), dt.datetime(9999, 1, 1)]
    uri = _parquet(tmp_path, pa.array(far, pa.timestamp(unit)))
    with pytest.raises(TimeRangeError, match=r"row 2: column 't'.*int64-nanosecond range"):
        _adapter().read_table(uri)
    # times near the edges of the range are accepted
    for i, edge in enumerate((dt.datetime(1677, 9, 22), dt.datetime(2262, 4, 11))):
        ts = pa.array([edge, edge + dt.timedelta(seconds=1)], pa.timestamp(unit))
        table = _adapter().read_table(_parquet(tmp_path, ts, f"e{i}.parquet"))
        assert table.k0 == pa.scalar(edge, pa.timestamp("s")).value


def test_nanosecond_column_refuses_the_nat_value(tmp_path: Path) -> None:
    raw = pa.array([0, -(2**63)], pa.int64()).cast(pa.timestamp("ns"))
    with pytest.raises(TimeRangeError, match="row 1"):
        _adapter().read_table(_parquet(tmp_path, raw))


@pytest.mark.parametrize(
    ("unit", "values", "row"),
    [
        ("s", [0, 10**11], 1),  # year ~5138 in seconds
        ("s", [0.0, -1e10], 1),
        ("ms", [0, 2**62], 1),
        ("us", [0.0, 1.0, 9.3e15], 2),
        ("ns", pa.array([0, 2**63], pa.uint64()), 1),
        ("ns", [0.0, 9.3e18], 1),
    ],
)
def test_numeric_times_that_overflow_nanoseconds(tmp_path: Path, unit, values, row) -> None:
    uri = _parquet(tmp_path, pa.array(values))
    with pytest.raises(TimeRangeError, match=rf"row {row}: column 't'"):
        _adapter(time_unit=unit).read_table(uri)


def test_largest_int64_nanosecond_time_is_in_range(tmp_path: Path) -> None:
    uri = _parquet(tmp_path, pa.array([2**63 - 10**9 - 1, 2**63 - 1], pa.int64()))
    table = _adapter(time_unit="ns").read_table(uri)
    assert table.n_steps == 2


_CHILD = """
import sys, hashlib
from kuration import SchemaSpec, TimeseriesAdapter
schema = SchemaSpec.from_dict({"sample_hz": 1.0, "fields": [{"name": "v", "kind": "scalar"}]})
ad = TimeseriesAdapter(schema, time_column="t", entity_column="id", fields={"v": "v"})
for uri in sys.argv[1:]:
    tab = ad.read_table(uri)
    print(tab.k0, tab.n_steps, hashlib.sha256(tab.values["v"].tobytes()).hexdigest())
"""


def test_naive_times_are_utc_whatever_the_machine_zone(tmp_path: Path) -> None:
    csv = tmp_path / "naive.csv"
    csv.write_text("t,id,v\n2024-03-31 01:00:00,a,1\n2024-03-31 01:00:02,a,2\n")
    aware = tmp_path / "aware.csv"
    aware.write_text("t,id,v\n2024-03-31T10:00:00+09:00,a,1\n2024-03-31T10:00:02+09:00,a,2\n")
    naive_pq = _parquet(
        tmp_path, pa.array([dt.datetime(2024, 3, 31, 1), dt.datetime(2024, 3, 31, 1, 0, 2)])
    )
    outs = []
    for tz in ("UTC", "Asia/Tokyo"):
        env = {**os.environ, "TZ": tz}
        res = subprocess.run(
            [sys.executable, "-c", _CHILD, str(csv), str(aware), naive_pq],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        outs.append(res.stdout)
    assert outs[0] == outs[1]
    k0s = [int(line.split()[0]) for line in outs[0].splitlines()]
    utc = int(dt.datetime(2024, 3, 31, 1, tzinfo=dt.UTC).timestamp())
    assert k0s == [utc, utc, utc]
    assert np.isfinite(float(k0s[0]))


def test_dropped_timeless_rows_do_not_shift_the_named_line(tmp_path: Path) -> None:
    # two timeless rows (file lines 3 and 5) above a bad value and a backward time: the
    # errors name the file's lines, not the lines of the table left after the drop
    p = tmp_path / "gaps.csv"
    p.write_text("t,id,v\n0,a,1\n,a,2\n1,a,3\n,a,4\n2,a,inf\n3,a,6\n")
    with pytest.raises(SourceError, match=r"gaps\.csv, line 6: infinite") as e:
        _adapter(missing_time="drop").read_table(str(p))
    assert e.value.row == 4 and e.value.detail == "infinite value in column 'v'"
    p.write_text("t,id,v\n0,a,1\n,a,2\n2,a,3\n,a,4\n1,a,5\n3,a,6\n")
    with pytest.raises(SourceError, match=r"line 6: time goes backwards") as e:
        _adapter(missing_time="drop", disorder="raise").read_table(str(p))
    assert e.value.row == 4
    with pytest.warns(DataOrderWarning, match=r"gaps\.csv, line 6: time goes"):
        table = _adapter(missing_time="drop").read_table(str(p))
    assert table.counts["timeless_dropped"] == 2


def test_time_format_with_fractional_seconds_and_zone_text(tmp_path: Path) -> None:
    """Arrow's strptime has no ``%f``: Python's reads such stamps, strictly, as UTC."""
    p = tmp_path / "acti.csv"
    p.write_text(
        "t,id,v\n"
        "2014-05-07 13:29:50.439000+0100 [Europe/London],a,1\n"
        "2014-05-07 13:29:51.439000+0100 [Europe/London],a,2\n"
        "2014-05-07 13:29:52.439000+0100 [Europe/London],a,3\n"
    )
    fmt = "%Y-%m-%d %H:%M:%S.%f%z [Europe/London]"
    table = _adapter(time_format=fmt).read_table(str(p))
    assert int(table.present.sum()) == 3
    first = dt.datetime(2014, 5, 7, 12, 29, 50, 439000, tzinfo=dt.UTC).timestamp()
    assert table.k0 == round(first)  # 1 Hz grid: tick k is k seconds since the epoch
    p.write_text(p.read_text().replace("51.439000+0100", "51.439000+01:00:00x"))
    with pytest.raises(SourceError, match=r"line 3: .*does not read as time_format"):
        _adapter(time_format=fmt).read_table(str(p))


def test_a_typo_in_a_numeric_time_column_says_fix_the_cell_not_give_a_format(
    tmp_path: Path,
) -> None:
    """One ``7.9x`` among float seconds makes the column text: a time format cannot read a
    mistyped number, so the error names the cell and says to fix or blank it."""
    times = [f"{i * 0.1:.1f}" for i in range(1000)]
    times[799] = "7.9x"
    p = tmp_path / "typo.csv"
    p.write_text("t,id,v\n" + "".join(f"{t},a,{i}\n" for i, t in enumerate(times)))
    with pytest.raises(SourceError, match=r"typo\.csv, line 801: time column 't'") as e:
        _adapter().read_table(str(p))
    msg = str(e.value)
    assert "'7.9x' is not a number" in msg and "fix or blank that cell" in msg, msg
    assert "time_format" not in msg and "ISO 8601" not in msg, msg
    assert e.value.row == 799
