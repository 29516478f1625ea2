"""A fresh user's second pass over ``kur init`` on foreign CSVs: ``--time-format`` on text
times Arrow parses by itself, the IMU ``g``, and ``--out`` inside a committed dataset."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kuration import SchemaSpec, TickStream, TimeseriesAdapter, init_job
from kuration.cli.main import main
from kuration.errors import InitError

T0 = dt.datetime(2014, 5, 7, 13, 29, 50, 439000)
ISO_FMT = "%Y-%m-%d %H:%M:%S.%f%z"


def _offset_times(path: Path, n: int = 300) -> Path:
    """Text stamps with fractional seconds and an offset, which Arrow parses by itself."""
    rows = [
        f"{(T0 + dt.timedelta(seconds=60 * i)).strftime('%Y-%m-%d %H:%M:%S.%f')}+0100,{i % 50}"
        for i in range(n)
    ]
    path.write_text("Date_Time,Activity\n" + "\n".join(rows) + "\n")
    return path


def test_a_given_time_format_reaches_the_job_where_arrow_reads_the_times_itself(
    tmp_path: Path, capsys
) -> None:
    src = _offset_times(tmp_path / "acti.csv", n=2000)
    job = tmp_path / "job"
    assert main(["init", str(src), "--out", str(job), "--time-format", ISO_FMT]) == 0
    out = capsys.readouterr().out
    assert f"time_format {ISO_FMT!r}, given" in out and "2000 rows, 2000 kept" in out, out
    assert json.loads((job / "job.json").read_text())["adapter"]["time_format"] == ISO_FMT
    assert main(["run", str(job / "job.json"), "--out", str(tmp_path / "data")]) == 0


def test_a_given_time_format_that_misses_the_column_is_refused_naming_the_line(
    tmp_path: Path,
) -> None:
    src = _offset_times(tmp_path / "acti.csv")
    with pytest.raises(InitError, match=r"--time-format '%d/%m/%Y' does not read time column "):
        init_job([src], tmp_path / "job", time_format="%d/%m/%Y")
    with pytest.raises(InitError, match=r"'Date_Time' \(line 2\): '2014-05-07 13:29:50"):
        init_job([src], tmp_path / "job", time_column="Date_Time", time_format="%d/%m/%Y")
    assert not (tmp_path / "job").exists()


def test_the_run_reads_text_times_with_the_format_not_arrows_guess(tmp_path: Path) -> None:
    """Day and month the other way round: the format given wins over Arrow's ISO reading."""
    src = str(_offset_times(tmp_path / "acti.csv"))
    schema = SchemaSpec.from_dict(
        {"sample_hz": 1 / 60, "fields": [{"name": "a", "kind": "scalar"}]}
    )

    def first_tick(fmt: str | None) -> int:
        ad = TimeseriesAdapter(
            schema, time_column="Date_Time", fields={"a": "Activity"}, time_format=fmt
        )
        whole, streamed = ad.read_table(src).k0, next(TickStream(ad, src).blocks()).k0
        assert whole == streamed
        return whole

    swapped = "%Y-%d-%m %H:%M:%S.%f%z"  # 2014-05-07 read as the 5th of July
    days = (dt.date(2014, 7, 5) - dt.date(2014, 5, 7)).days
    assert first_tick(swapped) - first_tick(None) == days * 24 * 60
    assert first_tick(ISO_FMT) == first_tick(None)


def test_a_time_format_on_a_parquet_timestamp_column_is_refused(tmp_path: Path) -> None:
    src = tmp_path / "stamps.parquet"
    times = [T0 + dt.timedelta(seconds=i) for i in range(100)]
    pq.write_table(pa.table({"time": pa.array(times, pa.timestamp("us")), "v": range(100)}), src)
    with pytest.raises(InitError, match=r"holds timestamp\[us\], which the run reads without"):
        init_job([src], tmp_path / "job", time_format=ISO_FMT)
