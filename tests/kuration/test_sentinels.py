"""Sentinels and valid ranges (CF missing_value/valid_min/valid_max) become absent before any
metric or output (issue 11, kind 6)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kuration import FieldSpec, SchemaSpec, Tick, TickTable, TimeseriesAdapter
from kuration.contracts.tick import table_from_ticks
from kuration.errors import SchemaError
from kuration.extend import build_window, compile_metric

N = 12
LOST = [4, 5, 6]  # "not tracked": z = -10


def _schema(**validity) -> SchemaSpec:
    pos = {"name": "pos", "kind": "vector", "dims": 3, "semantics": "position", "unit": "m"}
    return SchemaSpec.from_dict(
        {"sample_hz": 1.0, "fields": [{**pos, **validity}, {"name": "rssi", "unit": "dB"}]}
    )


def _rows(drop_lost: bool = False) -> dict:
    t = [i for i in range(N) if not (drop_lost and i in LOST)]
    return {
        "t": t,
        "x": [10.0 * i for i in t],
        "y": [0.0] * len(t),
        "z": [-10.0 if i in LOST else 1000.0 for i in t],
        "rssi": [-60.0] * len(t),
    }


def _read(tmp_path: Path, schema: SchemaSpec, rows: dict, name: str = "s.parquet") -> TickTable:
    p = tmp_path / name
    pq.write_table(pa.table(rows), p)
    ad = TimeseriesAdapter(schema, time_column="t", fields={"pos": ["x", "y", "z"], "rssi": "rssi"})
    return ad.read_table(str(p))


SPEED = "field:pos | speed | max"


def test_undeclared_sentinel_is_a_speed_spike(tmp_path: Path) -> None:
    table = _read(tmp_path, _schema(), _rows())
    assert compile_metric(SPEED, table.schema)(build_window(table, 0, N)) > 100.0


@pytest.mark.parametrize(
    "validity",
    [
        {"missing_value": [None, None, -10]},
        {"missing_value": [None, None, [-10, -9999]]},
        {"valid_min": [None, None, 0]},
        {"valid_min": [-1e9, -1e9, 0.0], "valid_max": 1e9},
    ],
)
def test_declared_sentinel_equals_those_ticks_absent(tmp_path: Path, validity) -> None:
    schema = _schema(**validity)
    masked = _read(tmp_path, schema, _rows())
    absent = _read(tmp_path, schema, _rows(drop_lost=True), "absent.parquet")
    for metric in (SPEED, "field:pos | speed | mean", "field:pos | speed | count"):
        m = compile_metric(metric, schema)
        assert m(build_window(masked, 0, N)) == m(build_window(absent, 0, N))
    assert compile_metric(SPEED, schema)(build_window(masked, 0, N)) == pytest.approx(10.0)
    assert np.isnan(masked.values["pos"][LOST]).all()
    # the entity still reports rssi at those ticks, so it stays present; its position is missing
    assert masked.present[LOST, 0].all()


def test_a_record_left_with_no_value_becomes_absent() -> None:
    schema = SchemaSpec.from_dict(
        {"sample_hz": 1.0, "fields": [{"name": "temp", "unit": "degC", "missing_value": -999}]}
    )
    ticks = [Tick(float(t), {"a": {"temp": v}}) for t, v in enumerate([20.0, -999.0, 21.0])]
    table = table_from_ticks(schema, ticks, "s")
    assert table.present[:, 0].tolist() == [True, False, True]
    assert np.isnan(table.values["temp"][1, 0, 0])
    assert [sorted(t.entities) for t in table.iter_ticks()] == [["a"], ["a"]]


def test_globals_and_scalar_lists_of_sentinels() -> None:
    schema = SchemaSpec.from_dict(
        {
            "sample_hz": 1.0,
            "fields": [{"name": "v", "missing_value": [-1, 65535], "valid_max": 100}],
            "globals": [{"name": "wind", "unit": "m/s", "valid_min": 0, "valid_max": 60}],
        }
    )
    vals = [5.0, -1.0, 65535.0, 101.0, 100.0]
    ticks = [
        Tick(float(t), {"a": {"v": v}}, globals={"wind": w})
        for t, (v, w) in enumerate(zip(vals, [1.0, -3.0, 61.0, 60.0, 0.0], strict=True))
    ]
    table = table_from_ticks(schema, ticks, "s")
    np.testing.assert_array_equal(np.isnan(table.values["v"][:, 0, 0]), [0, 1, 1, 1, 0])
    np.testing.assert_array_equal(np.isnan(table.globals["wind"][:, 0]), [0, 1, 1, 0, 0])


def test_integer_sentinels_compare_exactly() -> None:
    schema = SchemaSpec.from_dict(
        {
            "sample_hz": 1.0,
            "fields": [{"name": "n", "dtype": "uint64", "missing_value": 2**64 - 1}],
        }
    )
    ticks = [Tick(float(t), {0: {"n": v}}) for t, v in enumerate([2**64 - 1, 2**64 - 2, 7])]
    table = table_from_ticks(schema, ticks, "s")
    # 2**64 - 2 is the same float64 as the sentinel, but not the same integer
    assert table.present[:, 0].tolist() == [False, True, True]
    assert [int(v) for v in table.ints["n"][:, 0, 0]] == [0, 2**64 - 2, 7]


@pytest.mark.parametrize(
    ("decl", "msg"),
    [
        ({"missing_value": "n/a"}, r"fields\[0\]\.missing_value: input should be"),
        ({"missing_value": True}, r"fields\[0\]\.missing_value: input should be"),
        ({"valid_min": 5, "valid_max": 1}, "valid_min 5 > valid_max 1"),
        ({"valid_min": [0, 1]}, "valid_min has 2 entries for 3 components"),
        ({"missing_value": [None, -10]}, "per-component missing_value has 3 entries"),
        ({"missing_value": 1e400}, "finite number"),
    ],
)
def test_bad_declarations_name_the_field(decl, msg) -> None:
    with pytest.raises(SchemaError, match=msg) as info:
        _schema(**decl)
    assert info.value.field == "pos"


def test_integer_dtype_needs_integral_sentinels_in_range() -> None:
    with pytest.raises(SchemaError, match="not an integer of uint8"):
        FieldSpec("n", dtype="uint8", missing_value=2.5)
    with pytest.raises(SchemaError, match="outside the range of uint8"):
        FieldSpec("n", dtype="uint8", missing_value=300)
    with pytest.raises(SchemaError, match="numeric fields"):
        FieldSpec("c", kind="categorical", vocab=("a",), missing_value=0)


def test_round_trip_through_dict() -> None:
    schema = _schema(missing_value=[None, None, [-10, -9999]], valid_max=[1e6, 1e6, None])
    assert SchemaSpec.from_dict(schema.to_dict()) == schema
    assert schema.to_dict()["fields"][0]["missing_value"] == [None, None, [-10, -9999]]
    assert "missing_value" not in _schema().to_dict()["fields"][0]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-50, 50, allow_nan=False), min_size=2, max_size=20))
def test_masking_equals_dropping_the_values(vals) -> None:
    schema = SchemaSpec.from_dict(
        {"sample_hz": 1.0, "fields": [{"name": "v", "valid_min": -20, "valid_max": 20}]}
    )
    table = table_from_ticks(
        schema, [Tick(float(t), {0: {"v": v}}) for t, v in enumerate(vals)], "s"
    )
    kept = [v for v in vals if -20 <= v <= 20]
    got = compile_metric("field:v | mean", schema)(build_window(table, 0, len(vals)))
    if kept:
        assert got == pytest.approx(np.mean(kept))
    else:
        assert np.isnan(got)


def test_timenet_signal_sentinels_reach_kuration_as_missing(tmp_path: Path) -> None:
    import timenet as tn
    from kuration.sources import TimenetAdapter

    rows = _rows()
    card = {"org": "acme", "name": "track", "version": "1.0", "license": "CC0-1.0"}
    with tn.TimeFWriter(tmp_path / "reg", card) as w:
        w.add_record("r0", {})
        for c in ("x", "y", "z"):
            spec = tn.SignalSpec(
                "float64", "m", rate_hz=1.0, missing_value=-10.0 if c == "z" else None
            )
            w.add_signal("r0", c, np.array(rows[c]), spec)
        w.add_signal(
            "r0", "rssi", np.array(rows["rssi"]), tn.SignalSpec("float64", "dB", rate_hz=1.0)
        )
    schema = _schema()  # kuration declares nothing: TimeNet's spec alone removes the spike
    ad = TimenetAdapter(
        schema,
        fields={"pos": {"signals": ["x", "y", "z"]}, "rssi": {"signals": ["rssi"]}},
        registries=[str(tmp_path / "reg")],
    )
    table = ad.read_table("timenet://acme/track@1.0#r0")
    # z is null there, so the position vector is missing (metrics never use a partial vector)
    assert np.isnan(table.values["pos"][LOST, 0, 2]).all()
    assert compile_metric(SPEED, schema)(build_window(table, 0, N)) == pytest.approx(10.0)
