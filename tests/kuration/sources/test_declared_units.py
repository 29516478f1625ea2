"""A column's own unit (Parquet field metadata ``unit``) is converted to its schema field's
unit, or refuses the source when it cannot be; on the real ADS-B sample, whose files declare
their units (traffic==2.13 sample, OpenSky Network data, MIT)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kuration import SchemaSpec, TimeseriesAdapter
from kuration.errors import SourceError
from kuration.sources.stream import TickStream


def _relabel(src: Path, dst: Path, column: str, unit: str) -> Path:
    t = pq.read_table(src)
    i = t.schema.get_field_index(column)
    t = t.set_column(i, t.schema.field(i).with_metadata({"unit": unit}), t.column(i))
    pq.write_table(t, dst)
    return dst


def test_declared_metres_are_converted_to_the_fields_feet(
    adsb_sources: list[Path], adsb_adapter: TimeseriesAdapter, tmp_path: Path
) -> None:
    src = adsb_sources[0]
    assert pq.read_schema(src).field("altitude").metadata == {b"unit": b"ft"}  # as shipped
    base = adsb_adapter.read_table(str(src))
    metres = adsb_adapter.read_table(str(_relabel(src, tmp_path / "m.parquet", "altitude", "m")))
    np.testing.assert_allclose(
        metres.values["altitude"], base.values["altitude"] / 0.3048, rtol=1e-12
    )
    # spelled another way, the same unit leaves every value as it is
    foot = adsb_adapter.read_table(str(_relabel(src, tmp_path / "f.parquet", "altitude", "foot")))
    np.testing.assert_array_equal(foot.values["altitude"], base.values["altitude"])


def test_streamed_blocks_convert_too(
    adsb_time_ordered: list[Path], adsb_adapter: TimeseriesAdapter, tmp_path: Path
) -> None:
    path = _relabel(adsb_time_ordered[0], tmp_path / "m.parquet", "altitude", "m")
    whole = adsb_adapter.read_table(str(path)).values["altitude"]
    blocks = list(TickStream(adsb_adapter, str(path), batch_rows=4096).blocks())
    streamed = np.concatenate([b.values["altitude"] for b in blocks])
    assert len(blocks) > 1
    np.testing.assert_array_equal(streamed, whole)


@pytest.mark.parametrize(
    ("unit", "message"),
    [
        ("furlong_per_banana", "declares unit 'furlong_per_banana' .* which pint does not know"),
        ("m/s", "declares unit 'm/s' .* cannot be converted to the unit 'ft' of field 'altitude'"),
    ],
)
def test_an_impossible_declaration_refuses_the_source(
    adsb_sources: list[Path],
    adsb_adapter: TimeseriesAdapter,
    tmp_path: Path,
    unit: str,
    message: str,
) -> None:
    path = _relabel(adsb_sources[0], tmp_path / "bad.parquet", "altitude", unit)
    with pytest.raises(SourceError, match=message) as err:
        adsb_adapter.read_table(str(path))
    assert "column 'altitude'" in str(err.value) and str(path) in str(err.value)


def _one_field(tmp_path: Path, unit: str) -> Path:
    p = tmp_path / "s.parquet"
    schema = pa.schema(
        [pa.field("t", pa.int64()), pa.field("v", pa.int64(), metadata={"unit": unit})]
    )
    table = pa.Table.from_arrays([pa.array([0, 1, 2]), pa.array([20, 21, 22])], schema=schema)
    pq.write_table(table, p)
    assert pq.read_schema(p).field("v").metadata == {b"unit": unit.encode()}
    return p


def test_offset_units_and_integer_fields(tmp_path: Path) -> None:
    kelvin = SchemaSpec.from_dict({"sample_hz": 1.0, "fields": [{"name": "v", "unit": "K"}]})
    ad = TimeseriesAdapter(kelvin, time_column="t", fields={"v": "v"})
    got = ad.read_table(str(_one_field(tmp_path, "degC"))).values["v"][:, 0, 0]
    np.testing.assert_allclose(got, [293.15, 294.15, 295.15], rtol=1e-15)
    exact = SchemaSpec.from_dict(
        {"sample_hz": 1.0, "fields": [{"name": "v", "unit": "K", "dtype": "int64"}]}
    )
    ad = TimeseriesAdapter(exact, time_column="t", fields={"v": "v"})
    with pytest.raises(SourceError, match="integer field in 'K'"):
        ad.read_table(str(_one_field(tmp_path, "degC")))


def test_a_dimensionless_unit_is_no_angle(
    adsb_sources: list[Path], adsb_adapter: TimeseriesAdapter, tmp_path: Path
) -> None:
    """pint calls '%' and 'deg' both dimensionless; a percentage is still no track angle."""
    path = _relabel(adsb_sources[0], tmp_path / "pct.parquet", "track", "%")
    with pytest.raises(
        SourceError, match="declares unit '%' .* cannot be converted to the unit 'deg'"
    ):
        adsb_adapter.read_table(str(path))
    turns = _relabel(adsb_sources[0], tmp_path / "turn.parquet", "track", "turn")
    base = adsb_adapter.read_table(str(adsb_sources[0])).values["track"]
    np.testing.assert_allclose(adsb_adapter.read_table(str(turns)).values["track"], base * 360)
