"""One pint registry for kuration, and the few conversions the engine needs."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np
import pint

from timenet.units import define_sensor_units

from ..errors import SchemaError

__all__ = [
    "conversion_factor",
    "get_registry",
    "is_angle",
    "is_length",
    "linear_conversion",
    "parse_unit",
]


@lru_cache(maxsize=1)
def get_registry() -> pint.UnitRegistry[Any]:
    """The shared registry, built on first use (building it costs about a second).

    It knows the prefixed temperature units of sensor logs (``mdegC``,
    ``delta_mdegC``, ...) from :data:`timenet.units.SENSOR_UNIT_DEFINITIONS`, the
    same definitions TimeNet loads.
    """
    reg: pint.UnitRegistry[Any] = define_sensor_units(pint.UnitRegistry())
    return reg


@lru_cache(maxsize=256)
def parse_unit(unit: str) -> pint.Unit:
    """Parse ``unit`` with the shared registry.

    Raises
    ------
    SchemaError
        If pint does not know the unit.
    """
    try:
        return get_registry().Unit(unit)
    except (
        pint.errors.UndefinedUnitError,
        pint.errors.DefinitionSyntaxError,
        AttributeError,
        TypeError,
        ValueError,
        AssertionError,
    ) as exc:
        raise SchemaError(f"unknown unit {unit!r}") from exc


def is_length(unit: str) -> bool:
    """Whether ``unit`` has the dimension of a length."""
    return parse_unit(unit).dimensionality == get_registry().metre.dimensionality


def is_angle(unit: str) -> bool:
    """Whether ``unit`` is a plane angle (pint treats angles as dimensionless radians)."""
    u = parse_unit(unit)
    return u.dimensionality == get_registry().radian.dimensionality and str(u) in {
        "degree",
        "radian",
        "arcminute",
        "arcsecond",
        "turn",
        "gradian",
    }


@lru_cache(maxsize=256)
def _factor(src: str, dst: str) -> float:
    return float(get_registry().Quantity(1.0, parse_unit(src)).to(parse_unit(dst)).magnitude)


def conversion_factor(src: str, dst: str) -> float:
    """Multiplicative factor from ``src`` to ``dst`` (non-offset units only).

    Raises
    ------
    SchemaError
        If the units are unknown or of different dimensions.
    """
    try:
        return _factor(src, dst)
    except pint.errors.DimensionalityError as exc:
        raise SchemaError(f"cannot convert {src!r} to {dst!r}: {exc}") from exc


def to_unit(values: np.ndarray, src: str, dst: str) -> np.ndarray:
    """Convert an array from ``src`` to ``dst`` with pint (offset units handled by pint)."""
    q = get_registry().Quantity(np.asarray(values, dtype=np.float64), parse_unit(src))
    return np.asarray(q.to(parse_unit(dst)).magnitude)


def _has_offset(unit: str) -> bool:
    """Whether ``unit`` is an offset scale (degC, degF, mdegC...): its zero is not the root's."""
    reg = get_registry()
    q = reg.Quantity(0.0, parse_unit(unit))
    return bool(q.to_root_units().magnitude != 0.0)


def linear_conversion(src: str, dst: str) -> tuple[float, float]:
    """``(a, b)`` with ``dst_value = a * src_value + b``, from pint.

    For offset scales the slope is the ratio of the units' root factors (pint's
    ``get_root_units``), not the difference of two converted points, which loses
    about ten digits next to a 273.15 K offset (20000 mdegC would read 19.9999999995 degC).

    Raises
    ------
    pint.errors.DimensionalityError
        If the units are of different dimensions.
    """
    b, a1 = (float(v) for v in to_unit(np.array([0.0, 1.0]), src, dst))
    if not (_has_offset(src) or _has_offset(dst)):
        return a1 - b, b
    reg = get_registry()
    # pint types the factor as any Number, complex included; a unit's root factor is real
    fs = float(reg.get_root_units(parse_unit(src))[0])  # type: ignore[arg-type]
    fd = float(reg.get_root_units(parse_unit(dst))[0])  # type: ignore[arg-type]
    return fs / fd, b
