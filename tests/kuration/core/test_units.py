"""Units of sensor logs: prefixed offset temperatures (issue 11, kind 11)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kuration import FieldSpec, SchemaSpec, TickTable
from kuration.core.units import conversion_factor, parse_unit, to_unit
from kuration.errors import SchemaError
from kuration.extend import build_window, compile_metric


@pytest.mark.parametrize("unit", ["mdegC", "millidegC", "millidegree_Celsius", "millicelsius"])
def test_millidegree_celsius_spellings_read_as_absolute(unit: str) -> None:
    np.testing.assert_allclose(to_unit(np.array([20000.0, -5000.0]), unit, "degC"), [20.0, -5.0])
    np.testing.assert_allclose(to_unit(np.array([0.0]), unit, "K"), [273.15])


def test_fahrenheit_and_other_prefixes_both_ways() -> None:
    np.testing.assert_allclose(to_unit(np.array([20000.0]), "mdegC", "degF"), [68.0])
    np.testing.assert_allclose(to_unit(np.array([68.0]), "degF", "mdegC"), [20000.0])
    np.testing.assert_allclose(to_unit(np.array([32000.0]), "mdegF", "degC"), [0.0], atol=1e-9)
    np.testing.assert_allclose(to_unit(np.array([2000.0]), "cdegC", "degC"), [20.0])
    np.testing.assert_allclose(to_unit(np.array([200.0]), "ddegC", "mdegC"), [20000.0])


def test_differences_are_deltas_not_absolutes() -> None:
    assert conversion_factor("delta_mdegC", "delta_degC") == pytest.approx(1e-3)
    assert conversion_factor("delta_mdegC", "delta_degF") == pytest.approx(1.8e-3)
    assert conversion_factor("delta_degF", "delta_mdegC") == pytest.approx(1000 / 1.8)
    # a rate of an offset unit is a rate of its difference
    assert conversion_factor("mdegC/s", "delta_degC/min") == pytest.approx(0.06)


def test_plain_prefix_on_degC_is_still_refused() -> None:
    with pytest.raises(ValueError, match="unknown unit"):
        parse_unit("kdegC")


@settings(max_examples=40, deadline=None)
@given(st.floats(-1e6, 1e6))
def test_round_trip_mdegC_degF(x: float) -> None:
    back = to_unit(to_unit(np.array([x]), "mdegC", "degF"), "degF", "mdegC")
    np.testing.assert_allclose(back, [x], rtol=1e-12, atol=1e-6)


def test_schema_field_in_mdegC_converts_with_to() -> None:
    schema = SchemaSpec((FieldSpec("temp", unit="mdegC"),), sample_hz=1.0)
    vals = np.array([20000.0, 21000.0, 22000.0]).reshape(3, 1, 1)
    table = TickTable("s", schema, 0, (0,), {"temp": vals}, np.ones((3, 1), bool))
    buf = build_window(table, 0, 3)
    assert compile_metric("field:temp | to:degC | mean", schema)(buf) == pytest.approx(21.0)
    assert compile_metric("field:temp | to:degF | max", schema)(buf) == pytest.approx(71.6)
    # exactly, not 19.9999999995: the slope of an offset scale is the ratio of root factors
    assert compile_metric("field:temp | to:degC | min", schema)(buf) == 20.0
    assert compile_metric("field:temp | to:K | min", schema)(buf) == 20.0 + 273.15


@pytest.mark.parametrize(
    ("src", "dst", "a", "b"),
    [("mdegC", "degC", 0.001, 0.0), ("degC", "K", 1.0, 273.15), ("ft", "m", 0.3048, 0.0)],
)
def test_linear_conversion(src: str, dst: str, a: float, b: float) -> None:
    from kuration.core.units import linear_conversion

    got_a, got_b = linear_conversion(src, dst)
    assert got_a == pytest.approx(a, rel=1e-15) and got_b == pytest.approx(b, abs=1e-12)


def test_schema_still_rejects_unknown_units() -> None:
    with pytest.raises(SchemaError, match="unknown unit"):
        FieldSpec("temp", unit="mdegQ")


def test_timenet_signal_in_mdegC_reads_into_a_degC_field(tmp_path) -> None:
    import timenet as tn
    from kuration.sources import TimenetAdapter

    card = {"org": "acme", "name": "hwmon", "version": "1.0", "license": "CC0-1.0"}
    with tn.TimeFWriter(tmp_path / "reg", card) as w:
        w.add_record("cpu", {})
        temp = np.array([20000, 45500, 68000], dtype=np.int32)
        w.add_signal("cpu", "temp1_input", temp, tn.SignalSpec("int32", "mdegC", rate_hz=1.0))
    schema = SchemaSpec((FieldSpec("temp", unit="degC"),), sample_hz=1.0)
    ad = TimenetAdapter(
        schema, fields={"temp": {"signals": ["temp1_input"]}}, registries=[str(tmp_path / "reg")]
    )
    table = ad.read_table("timenet://acme/hwmon@1.0#cpu")
    np.testing.assert_allclose(table.values["temp"][:, 0, 0], [20.0, 45.5, 68.0])
