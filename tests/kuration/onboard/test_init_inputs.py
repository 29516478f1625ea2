"""kur init on inputs a fresh user hands it: a folder, a headerless CSV, date columns."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from kuration import init_job
from kuration.errors import InitError


def _csv(path: Path, n: int = 1200, t0: int = 1_700_000_000, header: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [f"{t0 + i},{math.sin(i / 10):.4f}" for i in range(n)]
    path.write_text(("time,value\n" if header else "") + "\n".join(rows) + "\n")
    return path


def test_a_folder_is_its_data_files_sorted(tmp_path: Path) -> None:
    data = tmp_path / "data"
    for k in (2, 0, 1):
        _csv(data / f"run{k}.csv", t0=1_700_000_000 + k * 10_000)
    (data / "README.txt").write_text("not data\n")
    _csv(data / ".hidden" / "old.csv")
    init_job([data], tmp_path / "job")
    job = json.loads((tmp_path / "job" / "job.json").read_text())
    assert [Path(s).name for s in job["sources"]] == ["run0.csv", "run1.csv", "run2.csv"]


def test_a_folder_without_data_files_says_so(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(InitError, match="a folder with no CSV"):
        init_job([tmp_path / "empty"], tmp_path / "job")


def test_a_headerless_csv_says_it_looks_headerless(tmp_path: Path) -> None:
    path = _csv(tmp_path / "raw.csv", header=False)
    with pytest.raises(InitError, match="looks headerless") as info:
        init_job([path], tmp_path / "job")
    assert "no time column" not in str(info.value)
    assert "add a first line naming the columns" in str(info.value)
    # a first data row with a text id in it is no header either (it lost that row, named
    # fields after its values and suggested --time with a value)
    mixed = tmp_path / "mixed.csv"
    mixed.write_text(
        "".join(f"{i * 0.1:.1f},p,{i * 1.5:.4f},{-i * 0.5:.4f}\n" for i in range(1, 51))
    )
    with pytest.raises(InitError, match="looks headerless"):
        init_job([mixed], tmp_path / "job2")


def test_a_header_that_repeats_a_name_is_named_not_a_key_error(tmp_path: Path) -> None:
    # a headerless file whose first row repeats a value reads as a header with one name
    # twice; it was a KeyError from inside pyarrow
    repeated = tmp_path / "repeated.csv"
    repeated.write_text("".join(f"{1_700_000_000 + i},0.0,0.0,{i}\n" for i in range(50)))
    with pytest.raises(InitError, match="looks headerless"):
        init_job([repeated], tmp_path / "job")
    named = tmp_path / "named.csv"
    named.write_text("time,x,x\n" + "".join(f"{1_700_000_000 + i},1,2\n" for i in range(50)))
    with pytest.raises(InitError, match=r"names \['x'\] more than once") as info:
        init_job([named], tmp_path / "job2")
    assert info.value.source == str(named)


@pytest.mark.network
@pytest.mark.slow
def test_heartpy_data2_timer_is_milliseconds(tmp_path: Path, capsys) -> None:
    """heartpy 1.2.7's data2.csv (GPL-3.0, https://pypi.org/project/heartpy/1.2.7/): an
    ECG whose 'timer' column counts milliseconds at about 117 Hz."""
    from kuration.sources.foreign import FOREIGN
    from kuration.sources.samples import fetch_wheel, read_member

    path = tmp_path / "data2.csv"
    path.write_bytes(read_member(fetch_wheel(FOREIGN["ppg"].sample), "heartpy/data/data2.csv"))
    from kuration.cli.main import main as kur_main

    assert kur_main(["init", str(path), "--out", str(tmp_path / "job")]) == 0
    out = capsys.readouterr().out
    schema = json.loads((tmp_path / "job" / "schema.json").read_text())
    assert abs(schema["sample_hz"] / 117.0 - 1) < 0.01, schema["sample_hz"]
    assert "relative milliseconds" in out and "--time-unit s" in out


def _dated(path: Path, fmt: str, n: int = 1500, bad: str | None = None) -> Path:
    import datetime as dt

    step = dt.timedelta(minutes=1) if "%H" in fmt else dt.timedelta(days=1)
    rows = [
        f"{(dt.datetime(2012, 1, 1) + i * step).strftime(fmt)},{math.sin(i / 10):.4f}"
        for i in range(n)
    ]
    if bad is not None:
        rows[59] = f"{bad},0.5"
    path.write_text("date,value\n" + "\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize(
    ("fmt", "hz", "said"),
    [
        ("%Y-%m-%d", 1 / 86400, "date32[day]: dates, read as midnight UTC"),
        ("%Y/%m/%d", 1 / 86400, "time_format '%Y/%m/%d'"),
        ("%Y/%m/%d %H:%M", 1 / 60, "time_format '%Y/%m/%d %H:%M'"),
        ("%b %d %Y", 1 / 86400, "time_format '%b %d %Y'"),
    ],
)
def test_date_and_non_iso_text_times_are_a_time_column(
    fmt: str, hz: float, said: str, tmp_path: Path, capsys
) -> None:
    from kuration import Pipeline
    from kuration.cli.main import main as kur_main

    path = _dated(tmp_path / "d.csv", fmt)
    assert kur_main(["init", str(path), "--out", str(tmp_path / "job")]) == 0
    assert said in capsys.readouterr().out
    schema = json.loads((tmp_path / "job" / "schema.json").read_text())
    assert abs(schema["sample_hz"] / hz - 1) < 1e-3
    adapter = Pipeline.from_job(tmp_path / "job" / "job.json").adapter
    table = adapter.read_table(str(path))
    assert int(table.present.sum()) == 1500 == table.n_steps  # every row on its own tick
    first = 1325376000  # 2012-01-01 00:00 UTC
    assert table.k0 == round(first * adapter.schema.sample_hz)


def test_an_impossible_date_names_its_row(tmp_path: Path) -> None:
    path = _dated(tmp_path / "d.csv", "%Y-%m-%d", bad="2020-02-30")
    with pytest.raises(
        InitError,
        match=r"line 61: .* holds '2020-02-30' there, which names no instant",
    ):
        init_job([path], tmp_path / "job")


def test_an_impossible_date_under_time_format_names_its_row(tmp_path: Path) -> None:
    """Arrow's strptime would roll 2020/02/30 over to March 1st; the adapter refuses it."""
    import pyarrow as pa

    from kuration.errors import SourceError
    from kuration.sources._timeunit import parse_text_times

    col = pa.array(["2020/02/28", "2020/02/29", "2020/02/30"])
    with pytest.raises(
        SourceError, match="x.csv, row 2: time column 'date' holds '2020/02/30'"
    ) as info:
        parse_text_times(col, "%Y/%m/%d", "date", "x.csv")
    assert info.value.row == 2


def test_text_in_no_common_format_names_the_option(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("date,value\n" + "\n".join(f"day {i},{i}.5" for i in range(50)) + "\n")
    with pytest.raises(InitError, match="time_format") as info:
        init_job([path], tmp_path / "job")
    # the first value is named by its file line (the header is line 1), not as "row 0"
    assert "(line 2: 'day 0')" in str(info.value) and "row 0" not in str(info.value)


# vega_datasets 0.9.0 (MIT, https://pypi.org/project/vega-datasets/0.9.0/): CSVs whose date
# columns are text in three non-ISO formats
VEGA = (
    "vega_datasets",
    "0.9.0",
    "vega_datasets-0.9.0-py3-none-any.whl",
    "3d7c63917be6ca9b154b565f4779a31fedce57b01b5b9d99d8a34a7608062a1d",
    "MIT",
    "https://pypi.org/project/vega-datasets/0.9.0/",
)


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.parametrize(
    ("member", "fmt", "rows"),
    [
        ("seattle-temps.csv", "%Y/%m/%d %H:%M", 8759),
        ("seattle-weather.csv", "%Y/%m/%d", 1461),
        ("stocks.csv", "%b %d %Y", 560),
    ],
)
def test_vega_date_columns_are_time_columns(
    member: str, fmt: str, rows: int, tmp_path: Path, capsys
) -> None:
    from kuration.cli.main import main as kur_main
    from kuration.sources.samples import Sample, fetch_wheel, read_member

    path = tmp_path / member
    path.write_bytes(read_member(fetch_wheel(Sample(*VEGA)), f"vega_datasets/_data/{member}"))
    assert kur_main(["init", str(path), "--out", str(tmp_path / "job")]) == 0
    out = capsys.readouterr().out
    assert f"time_format {fmt!r}" in out
    assert f"as kur run reads them): {rows} rows, " in out and "none dropped" in out
    job = json.loads((tmp_path / "job" / "job.json").read_text())
    assert job["adapter"]["time_format"] == fmt
    if member == "seattle-temps.csv":  # hourly: 1/3600 exactly (0.0002778 put hours 1,800 s off)
        assert json.loads((tmp_path / "job" / "schema.json").read_text())["sample_hz"] == 1 / 3600
    if member == "stocks.csv":  # five tickers in one table: each one a track, none re-timed
        assert job["adapter"]["entity_column"] == "symbol"
        assert "duplicates" not in job["adapter"]


@pytest.mark.parametrize(("column", "values"), [("station", ["A", "B"]), ("unit", [3, 7])])
def test_a_column_that_tells_apart_repeated_stamps_is_the_entity(
    tmp_path: Path, column: str, values: list[object]
) -> None:
    """Two stations logged in one table repeat every stamp; named like no id, the station
    column was missed and the stations' rows interleaved as one re-timed track."""
    lines = [f"time,{column},temp"]
    for i in range(60):
        for j, v in enumerate(values):
            lines.append(f"{i * 60},{v},{20 + i * 0.1 + j:.2f}")
    src = tmp_path / "stations.csv"
    src.write_text("\n".join(lines) + "\n")
    res = init_job([src], tmp_path / "j")
    ad = res.job["adapter"]
    assert ad["entity_column"] == column
    assert "duplicates" not in ad and "collisions" not in ad  # nothing re-timed or merged
    assert res.job["schema"]["sample_hz"] == pytest.approx(1 / 60, rel=1e-4)  # 1/60 s, few digits


def test_a_signal_column_is_not_taken_for_the_entity(tmp_path: Path) -> None:
    """An integer signal with many values never separates stamps as an entity would."""
    lines = ["time,level"] + [f"{i // 2},{(i * 37) % 500}" for i in range(400)]
    src = tmp_path / "coarse.csv"
    src.write_text("\n".join(lines) + "\n")
    from kuration.onboard.inventory import inventory_files

    inv = inventory_files([src], hints={})
    assert inv.entity_column is None
