"""One shared pint unit registry for every TimeNet signal.

All unit strings are parsed by the same :class:`pint.UnitRegistry`, created on
first use so that importing :mod:`timenet` stays cheap. An empty unit string
means dimensionless. Offset units (``degC``, ``degF``) convert as absolute
temperatures.

pint refuses a prefix on an offset unit (``mdegC`` would be ambiguous between
an absolute temperature and a difference), yet sensor logs use such units
(Linux hwmon reports millidegrees Celsius).  :data:`SENSOR_UNIT_DEFINITIONS`
defines them explicitly, absolute with the Celsius/Fahrenheit offset, and
pint derives the matching differences (``delta_mdegC``, also what ``mdegC/s``
means).  kuration's registry loads the same definitions.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from timenet.errors import UnitError

__all__ = [
    "SENSOR_UNIT_DEFINITIONS",
    "convert",
    "define_sensor_units",
    "get_unit_registry",
    "validate_unit",
]

#: Prefixed temperature units of sensor logs, in pint's definition syntax: the
#: scale and offset are those of ``degC``/``degF`` in pint's own ``default_en.txt``
#: (``degree_Celsius = kelvin; offset: 273.15``), with the SI prefix applied to the
#: scale.  ``_`` declares no symbol, so every alias also gets its ``delta_`` form.
SENSOR_UNIT_DEFINITIONS: tuple[str, ...] = (
    "millidegree_Celsius = 1e-3 * kelvin; offset: 273.15"
    " = _ = mdegC = millidegC = millidegree_C = millicelsius",
    "centidegree_Celsius = 1e-2 * kelvin; offset: 273.15 = _ = cdegC = centidegC",
    "decidegree_Celsius = 1e-1 * kelvin; offset: 273.15 = _ = ddegC = decidegC",
    "millidegree_Fahrenheit = 5e-3 / 9 * kelvin; offset: 233.15 + 200 / 9"
    " = _ = mdegF = millidegF = millidegree_F",
)


def define_sensor_units(registry: Any) -> Any:
    """Add :data:`SENSOR_UNIT_DEFINITIONS` to a :class:`pint.UnitRegistry`; returns it.

    Examples
    --------
    >>> import pint
    >>> ureg = define_sensor_units(pint.UnitRegistry())
    >>> round(ureg.Quantity(20000, "mdegC").to("degC").magnitude, 9)
    20.0
    """
    for line in SENSOR_UNIT_DEFINITIONS:
        registry.define(line)
    return registry


@functools.cache
def get_unit_registry() -> Any:
    """Return the process-wide :class:`pint.UnitRegistry` (created on first call)."""
    import pint

    return define_sensor_units(pint.UnitRegistry())


def _parse(unit: str, signal: str | None) -> Any:
    import pint

    if not isinstance(unit, str):
        raise UnitError(repr(unit), "unit must be a string", signal=signal)
    try:
        return get_unit_registry().parse_units(unit)
    except (pint.errors.PintError, AttributeError, ValueError, TypeError, SyntaxError) as exc:
        raise UnitError(unit, f"not a unit known to pint ({exc})", signal=signal) from exc


def validate_unit(unit: str, *, signal: str | None = None) -> str:
    """Check that ``unit`` parses in the shared registry.

    Parameters
    ----------
    unit : str
        A pint unit expression such as ``"mV"``, ``"m/s"`` or ``"degC"``; ``""``
        is dimensionless.
    signal : str, optional
        Signal name, used in the error message.

    Returns
    -------
    str
        ``unit`` unchanged.

    Raises
    ------
    UnitError
        If pint does not know the unit.
    """
    _parse(unit, signal)
    return unit


def convert(
    values: np.ndarray, from_unit: str, to_unit: str, *, signal: str | None = None
) -> np.ndarray:
    """Convert ``values`` from ``from_unit`` to ``to_unit``.

    Parameters
    ----------
    values : ndarray, shape (T, ...), numeric
        Magnitudes in ``from_unit``.
    from_unit, to_unit : str
        Unit expressions; equal strings return ``values`` untouched.
    signal : str, optional
        Signal name, used in error messages.

    Returns
    -------
    ndarray, shape (T, ...), float64
        Magnitudes in ``to_unit`` (``values`` itself when the units are equal).

    Raises
    ------
    UnitError
        If either unit is unknown, the dimensions differ, or the values are not
        numeric.
    """
    if from_unit == to_unit:
        return values
    import pint

    src = _parse(from_unit, signal)
    dst = _parse(to_unit, signal)
    if values.dtype.kind not in "iuf":
        raise UnitError(
            to_unit, f"cannot convert values of dtype {values.dtype} between units", signal=signal
        )
    ureg = get_unit_registry()
    try:
        out = ureg.Quantity(values.astype(np.float64), src).to(dst).magnitude
    except pint.errors.DimensionalityError as exc:
        raise UnitError(
            to_unit, f"incompatible with the stored unit {from_unit!r} ({exc})", signal=signal
        ) from exc
    return np.asarray(out, dtype=np.float64)
