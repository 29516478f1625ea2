"""A geodetic latitude or longitude no place on Earth has is refused when the source's
TickTable is built (a wrong unit or a corrupt record), unless the schema declares it missing."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kuration import SchemaSpec, TickTable, TimeseriesAdapter
from kuration.errors import SourceError


def _schema(unit: str = "deg", **validity: object) -> SchemaSpec:
    pos = {
        "name": "pos",
        "kind": "vector",
        "dims": 2,
        "semantics": "position",
        "frame": "geodetic",
        "unit": [unit, unit],
        **validity,
    }
    return SchemaSpec.from_dict({"sample_hz": 1.0, "fields": [pos]})


def _read(tmp_path: Path, schema: SchemaSpec, lat: list[float], lon: list[float]) -> TickTable:
    p = tmp_path / "s.parquet"
    n = len(lat)
    pq.write_table(pa.table({"t": list(range(n)), "id": ["ab12"] * n, "lat": lat, "lon": lon}), p)
    ad = TimeseriesAdapter(
        schema, time_column="t", entity_column="id", fields={"pos": ["lat", "lon"]}
    )
    return ad.read_table(str(p))


def test_latitude_beyond_the_pole_names_field_entity_and_time(tmp_path: Path) -> None:
    with pytest.raises(SourceError) as err:
        _read(tmp_path, _schema(), [48.0, 48.1, 95.0, 48.2], [2.0] * 4)
    msg = str(err.value)
    assert "field 'pos': latitude 95.0 deg of entity 'ab12' at 2.000 s" in msg
    assert "[-90, 90] deg" in msg and "valid_min/valid_max" in msg


def test_longitude_is_checked_too_and_0_to_360_is_accepted(tmp_path: Path) -> None:
    ok = _read(tmp_path, _schema(), [48.0] * 3, [0.0, 359.9, -180.0])
    assert ok.present.all()
    with pytest.raises(SourceError, match="longitude 400.0 deg"):
        _read(tmp_path, _schema(), [48.0] * 3, [2.0, 400.0, 2.0])


def test_degrees_read_as_radians_are_caught(tmp_path: Path) -> None:
    """Degrees in a field declared in radians: 48 rad is no latitude."""
    assert _read(tmp_path, _schema("rad"), [0.8, 1.5], [0.03, 0.04]).present.all()
    with pytest.raises(SourceError, match=r"latitude 48.0 rad .* outside \[-1.5708, 1.5708\] rad"):
        _read(tmp_path, _schema("rad"), [48.0, 48.1], [2.0, 2.1])


def test_a_declared_valid_range_masks_instead(tmp_path: Path) -> None:
    schema = _schema(valid_min=[-90, -180], valid_max=[90, 360])
    table = _read(tmp_path, schema, [48.0, 95.0, 48.2], [2.0, 2.0, 2.0])
    assert table.present[:, 0].tolist() == [True, False, True]
    assert math.isnan(table.values["pos"][1, 0, 0])


@settings(max_examples=60, deadline=None)
@given(lat=st.floats(-200, 200), lon=st.floats(-400, 400))
def test_accepted_exactly_when_on_earth(lat: float, lon: float) -> None:
    slack = 1 + 1e-12  # a bound converted to another angle unit may be off by an ulp
    on_earth = abs(lat) <= 90 * slack and -180 * slack <= lon <= 360 * slack
    values = {"pos": np.array([[[lat, lon]]])}
    try:
        TickTable("s", _schema(), 0, ("ab12",), values, np.ones((1, 1), bool))
    except SourceError:
        assert not on_earth
    else:
        assert on_earth
