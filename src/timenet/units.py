"""One shared pint unit registry for every TimeNet signal.

All unit strings are parsed by the same :class:`pint.UnitRegistry`, created on
first use so that importing :mod:`timenet` stays cheap. An empty unit string
means dimensionless. Offset units (``degC``, ``degF``) convert as absolute
temperatures.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from timenet.errors import UnitError

__all__ = ["convert", "get_unit_registry", "validate_unit"]


@functools.cache
def get_unit_registry() -> Any:
    """Return the process-wide :class:`pint.UnitRegistry` (created on first call)."""
    import pint

    return pint.UnitRegistry()


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
