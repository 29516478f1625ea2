"""kur init reads a field's unit from a bracket ending its header (``alt [ft]``), as it
reads the time column's, and the run takes the values in that unit."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kuration import Pipeline, init_job, score_sources
from kuration.errors import InitError
from kuration.onboard.header_units import header_unit


@pytest.mark.parametrize(
    ("header", "stem", "unit"),
    [
        ("Gyroscope X (deg/s)", "Gyroscope X", "deg/s"),
        ("alt [ft]", "alt", "ft"),
        ("Temp (°C)", "Temp", "°C"),
        ("Dry-bulb (C)", "Dry-bulb", "degC"),  # pint alone reads coulomb
        ("AOD (unitless)", "AOD", "dimensionless"),
        ("B  ( µT )", "B", "µT"),
        ("Value (raw)", "Value", None),
        ("Signal (a.u.)", "Signal", None),  # pint: atomic mass unit times a year
        ("Sensor (2)", "Sensor", None),
    ],
)
def test_header_unit_reads_a_final_bracket(header: str, stem: str, unit: str | None) -> None:
    got = header_unit(header)
    assert got is not None and got.stem == stem and got.unit == unit, got


@pytest.mark.parametrize("header", ["speed", "(m)", "x ()", "f(x) of y", "a (m) b"])
def test_no_final_bracket_is_no_header_unit(header: str) -> None:
    assert header_unit(header) is None


_UNITS = ("m", "ft", "deg", "rad/s", "m/s^2", "hPa", "%", "km/h", "V", "mbar", "W/m^2")


@given(
    stem=st.text(alphabet="abcXYZ _-.0123", min_size=1, max_size=12).filter(
        lambda s: s.strip() == s and s != ""
    ),
    unit=st.sampled_from(_UNITS),
    square=st.booleans(),
    gap=st.sampled_from(["", " ", "  "]),
)
def test_stem_and_unit_round_trip(stem: str, unit: str, square: bool, gap: str) -> None:
    header = f"{stem}{gap}[{unit}]" if square else f"{stem}{gap}({unit})"
    got = header_unit(header)
    assert got is not None and (got.stem, got.unit, got.text) == (stem, unit, unit)


def _walk(path: Path) -> Path:
    """50 s at 10 Hz of a walker going 10 ft/s along x, with a gyro, a heading and a raw
    counter, each unit in its column header as a phone logger writes it."""
    rows = ["time,x [ft],y [ft],Gyroscope X (deg/s),heading (deg),Value (raw)"]
    for i in range(500):
        rows.append(
            f"{i * 0.1:.1f},{i * 1.0:.1f},0.0,{20 * math.sin(i / 15):.4f},"
            f"{(i * 0.3) % 360:.2f},{(i * 7919) % 1000}"
        )
    path.write_text("\n".join(rows) + "\n")
    return path


def test_header_units_become_field_units_and_the_run_converts(tmp_path: Path) -> None:
    src = _walk(tmp_path / "walk.csv")
    res = init_job([src], tmp_path / "job")
    schema = json.loads((tmp_path / "job" / "schema.json").read_text())
    fields = {f["name"]: f for f in schema["fields"]}
    # named from the stem; the unit bracket makes x/y a position (a bare name never does)
    assert fields["position"]["unit"] == "ft" and fields["position"]["dims"] == 2
    assert fields["gyroscope_x"]["unit"] == "deg/s"
    assert fields["heading"]["unit"] == "deg" and fields["heading"]["semantics"] == "angular"
    assert "unit" not in fields["value_raw"]
    assert res.job["adapter"]["fields"]["gyroscope_x"] == "Gyroscope X (deg/s)"
    text = "\n".join(res.lines)
    assert "a position (ft, ft, from the column header; pint reads foot)" in text, text
    assert "(deg/s, from the column header; pint reads degree / second)" in text, text
    assert "the header's 'raw' is not a unit (pint does not know it)" in text, text
    assert "no unit in the header) for: Value (raw);" in text, text
    assert res.missing_units == ("Value (raw)",)
    # the run reads feet and its speed metric converts them: 10 ft/s is 3.048 m/s
    p = Pipeline.from_job(tmp_path / "job" / "job.json")
    scored = score_sources(p.schema, p.adapter, [str(src)], p.segmenter, p.strategy_)
    speeds = {round(s.features["speed_p90"], 6) for s in scored.segments}
    assert speeds == {3.048}, speeds


def test_metadata_wins_over_the_header_and_says_so(tmp_path: Path) -> None:
    src = _walk(tmp_path / "walk.csv")
    res = init_job([src], tmp_path / "job", units={"Gyroscope X (deg/s)": "rad/s"})
    spec = next(f for f in res.job["schema"]["fields"] if f["name"] == "gyroscope_x")
    assert spec["unit"] == "rad/s"
    assert "(rad/s, from hint file, over the header's 'deg/s')" in "\n".join(res.lines)


# pvlib 0.16.1 (BSD-3-Clause, https://pypi.org/project/pvlib/0.16.1/) ships NREL's TMY3
# file for Greensboro, NC (pvlib/data/723170TYA.CSV): a line of site data, then a header
# whose columns carry their units in brackets, 8,760 hourly rows
@pytest.mark.network
@pytest.mark.slow
def test_tmy3_weather_file_units_come_from_its_header(tmp_path: Path, capsys) -> None:
    from kuration.cli.main import main as kur_main
    from kuration.sources.foreign import FOREIGN
    from kuration.sources.samples import fetch_wheel, read_member

    raw = read_member(fetch_wheel(FOREIGN["air"].sample), "pvlib/data/723170TYA.CSV")
    path = tmp_path / "tmy3.csv"
    path.write_bytes(raw.split(b"\n", 1)[1])  # the site line is no header: drop it
    assert kur_main(["init", str(path), "--out", str(tmp_path / "job")]) == 0
    out = capsys.readouterr().out
    schema = json.loads((tmp_path / "job" / "schema.json").read_text())
    units = {f["name"]: f.get("unit") for f in schema["fields"]}
    assert units["ghi"] == "W/m^2" and units["wspd"] == "m/s" and units["pressure"] == "mbar"
    assert units["dry_bulb"] == "degC" and units["dew_point"] == "degC"  # '(C)': not coulomb
    assert units["aod"] == "dimensionless" and units["pwat"] == "cm"
    assert "ghi: column 'GHI (W/m^2)' is int64: a scalar (W/m^2, from the column header; " in out
    assert "pint reads degree_Celsius, which a header means by 'C'" in out


def _timed(path: Path, header: str, step: float) -> Path:
    rows = [f"{header},Temp (°C)"] + [f"{i * step:g},{20 + i * 0.01:.2f}" for i in range(2000)]
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize(("header", "word"), [("Time (min)", "minute"), ("t [h]", "hour")])
def test_a_time_header_in_minutes_or_hours_is_refused_not_read_as_seconds(
    tmp_path: Path, header: str, word: str
) -> None:
    """Read as seconds, minutes gave a 1 Hz job for a 1/60 Hz log, silently."""
    src = _timed(tmp_path / "log.csv", header, 1.0)
    with pytest.raises(InitError, match=rf"time column '{re.escape(header)}' is in .*\({word}\)"):
        init_job([src], tmp_path / "job")
    assert not (tmp_path / "job").exists()


@pytest.mark.parametrize(("header", "hz"), [("Time [s]", 2.0), ("t (msec)", 2000.0)])
def test_a_time_header_in_s_or_ms_sets_the_time_unit(
    tmp_path: Path, header: str, hz: float
) -> None:
    res = init_job([_timed(tmp_path / "log.csv", header, 0.5)], tmp_path / "job")
    assert res.job["schema"]["sample_hz"] == hz
    temp = next(f for f in res.job["schema"]["fields"] if f["name"] == "temp")
    assert temp["unit"] == "°C"
