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
from kuration.onboard.header_units import header_unit

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


@pytest.mark.parametrize(
    ("header", "unit", "rule"),
    [
        ("ax (g)", "standard_gravity", "'ax' names an acceleration axis"),
        ("a_y (g)", "standard_gravity", "'a_y' names an acceleration axis"),
        ("aZ (G)", "standard_gravity", "'aZ' names an acceleration axis"),
        ("imu_x (g)", "standard_gravity", "'imu' in its name"),
        ("IMUAccX (g)", "standard_gravity", "'imu' in its name"),
        ("ACCEL_Y (g)", "standard_gravity", "'accel' in its name"),
        ("linacc (g)", "standard_gravity", "'linacc' in its name"),
        ("G-Force X (g)", "standard_gravity", "g-force in its name"),
        ("gravity_z (g)", "standard_gravity", "'gravity' in its name"),
        ("mass (g)", "g", None),
        ("weight (g)", "g", None),
        ("imu mass (g)", "g", None),  # a mass word wins
        ("tobacco (g)", "g", None),  # 'acc' inside a word is no accelerometer
        ("accuracy (g)", "g", None),
        ("gravel (g)", "g", None),
        ("max (g)", "g", None),
    ],
)
def test_g_is_standard_gravity_in_imu_columns_and_gram_elsewhere(
    header: str, unit: str, rule: str | None
) -> None:
    got = header_unit(header)
    assert got is not None and got.unit == unit, got
    assert (rule is None) == ("accelerometer column" not in got.reading), got.reading
    assert rule is None or rule in got.reading, got.reading


def test_init_names_the_rule_that_read_g_as_gravity(tmp_path: Path) -> None:
    src = tmp_path / "imu.csv"
    rows = ["time,ax (g),ay (g),imu_z (g),mass (g)"]
    rows += [
        f"{i * 0.02:.2f},{i % 7 / 10},{i % 5 / 10},{i % 3 / 10},{100 + (i % 11) / 4}"
        for i in range(300)
    ]
    src.write_text("\n".join(rows) + "\n")
    res = init_job([src], tmp_path / "job")
    units = {f["name"]: f.get("unit") for f in res.job["schema"]["fields"]}
    assert units == {
        "ax": "standard_gravity",
        "ay": "standard_gravity",
        "imu_z": "standard_gravity",
        "mass": "g",
    }, units
    text = "\n".join(res.lines)
    assert "accelerometer column ('ax' names an acceleration axis)" in text, text
    assert "accelerometer column ('imu' in its name" in text, text


def test_an_out_folder_inside_a_committed_dataset_is_refused_without_force(
    tmp_path: Path, capsys
) -> None:
    src = tmp_path / "walk.csv"
    rows = [f"{i * 0.01:.2f},{(i * 7) % 13 / 10}" for i in range(2000)]
    src.write_text("time,value\n" + "\n".join(rows) + "\n")
    init_job([src], tmp_path / "job", name="walk", fraction=1.0)
    data = tmp_path / "data"
    assert main(["run", str(tmp_path / "job" / "job.json"), "--out", str(data)]) == 0
    assert (data / "train").is_dir()
    before = sorted(str(p.relative_to(data)) for p in data.rglob("*"))
    for out in (data / "train", data / "train" / "new"):
        with pytest.raises(
            InitError,
            match=r"is inside .*data, which holds the kuration "
            r"dataset of job 'walk' \(.*dataset\.commit\.json",
        ):
            init_job([src], out)
    capsys.readouterr()
    assert main(["init", str(src), "--out", str(data / "train")]) == 1
    assert "pass --force" in capsys.readouterr().err
    assert sorted(str(p.relative_to(data)) for p in data.rglob("*")) == before
    init_job([src], data / "train", force=True)
    assert (data / "train" / "job.json").exists()
