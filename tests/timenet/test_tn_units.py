from __future__ import annotations

import numpy as np
import pytest

import timenet as tn
from timenet.units import convert, validate_unit


def test_single_shared_registry() -> None:
    assert tn.get_unit_registry() is tn.get_unit_registry()


def test_offset_units_convert_correctly() -> None:
    c = np.array([-40.0, 0.0, 37.0, 100.0])
    np.testing.assert_allclose(convert(c, "degC", "degF"), c * 9 / 5 + 32)
    np.testing.assert_allclose(convert(c, "degC", "kelvin"), c + 273.15)
    f = np.array([32.0, 212.0])
    np.testing.assert_allclose(convert(f, "degF", "degC"), [0.0, 100.0], atol=1e-9)


def test_plain_conversion_and_identity() -> None:
    v = np.array([36.0], dtype=np.float32)
    np.testing.assert_allclose(convert(v, "km/h", "m/s"), [10.0])
    assert convert(v, "mV", "mV") is v


def test_incompatible_dimensions_raise() -> None:
    with pytest.raises(tn.UnitError, match="incompatible") as info:
        convert(np.ones(2), "mV", "s", signal="ecg")
    assert info.value.signal == "ecg"


def test_unknown_unit_names_signal_and_unit() -> None:
    with pytest.raises(tn.UnitError) as info:
        validate_unit("furlongz", signal="speed")
    assert info.value.unit == "furlongz"
    assert "speed" in str(info.value) and "furlongz" in str(info.value)


def test_signal_conversion_on_read(demo) -> None:
    reader = tn.TimeFReader.open(demo)
    acc = reader.signal("rec-0", "acc")
    raw = acc.to_numpy()
    np.testing.assert_allclose(acc.to_numpy(unit="cm/s^2"), raw * 100.0)
    temp = reader.signal("rec-0", "temp")
    c = temp.read_steps(0, 2)
    np.testing.assert_allclose(temp.read_steps(0, 2, unit="degF"), c * 1.8 + 32)
    with pytest.raises(tn.UnitError):
        temp.read_steps(0, 2, unit="m/s")


@pytest.mark.parametrize("unit", ["mdegC", "millidegC", "millidegree_Celsius", "millicelsius"])
def test_millidegree_celsius_reads_as_degC(unit: str) -> None:
    assert validate_unit(unit) == unit
    np.testing.assert_allclose(convert(np.array([20000.0]), unit, "degC"), [20.0])
    np.testing.assert_allclose(convert(np.array([20.0]), "degC", unit), [20000.0])


def test_millidegree_offsets_and_differences() -> None:
    np.testing.assert_allclose(convert(np.array([20000.0]), "mdegC", "degF"), [68.0])
    np.testing.assert_allclose(convert(np.array([32000.0]), "mdegF", "degC"), [0.0], atol=1e-9)
    np.testing.assert_allclose(convert(np.array([1000.0]), "delta_mdegC", "delta_degF"), [1.8])
    np.testing.assert_allclose(convert(np.array([1.0]), "delta_degC", "delta_mdegC"), [1000.0])


def test_kuration_and_timenet_share_the_definitions() -> None:
    from kuration.core.units import get_registry
    from timenet.units import SENSOR_UNIT_DEFINITIONS

    for line in SENSOR_UNIT_DEFINITIONS:
        name = line.split("=", 1)[0].strip()
        a = get_registry().Quantity(1.0, name).to("kelvin").magnitude
        b = tn.get_unit_registry().Quantity(1.0, name).to("kelvin").magnitude
        assert a == b
