"""A unit written at the end of a column header: ``Gyroscope X (deg/s)``, ``alt [ft]``.

Loggers and spreadsheet exports often carry a column's unit in its name, in round or
square brackets at the end.  ``kur init`` takes the bracket's text as the field's unit when
pint reads it as one, and names the field from the rest (``gyroscope_x``); the run then
reads the values in that unit and converts where a metric needs another.  Metadata (a
``--units`` hint, Parquet field metadata) wins over the header.  A few header spellings
mean another unit than pint's reading of them (``(C)`` is Celsius in a weather file,
coulomb to pint; ``dps`` is degrees a second, ``bpm`` beats a minute; ``g`` or ``G`` in an
accelerometer column is standard gravity, not gram or gauss), and are read as a header
means them.  A column is an accelerometer's when a word of its name (split at separators
and camelCase) starts with ``acc`` (not ``accu``/``acco``: accuracy, account) or ends with
it (``linacc``), starts with ``imu`` or ``gravit`` (or is ``grav``), when the name holds
``gforce``/``g-force``, or when it is an acceleration axis (``ax``, ``a_y``, ``aZ``), unless
a word names a mass (``mass``, ``weight``, ``wt``): ``mass (g)`` stays gram.  An exponent written without ``^``
(``m/s2``, ``ug/m3``, ``m s-2``) is read as a power when pint does not know the text as
written.  init prints pint's reading of every header unit, so a wrong one shows.

Bracketed text that is not a unit (``(raw)``, ``(a.u.)``, ``(left)``, ``(2)``) does not
stop ``kur init``: such a bracket is as often a label as a unit, the file is usually not
the user's to rename, and a column without a unit is what init already proposes, and lists,
for every column that carries none.  The column keeps its full name and no unit, and init
prints the bracket and why it was not read, next to the ``--units`` hint that gives one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..core.units import parse_unit
from ..errors import SchemaError

__all__ = ["HeaderUnit", "header_unit"]

_BRACKET = re.compile(r"^(?P<stem>.*?\S)\s*(?:\((?P<round>[^()]*)\)|\[(?P<square>[^\[\]]*)\])\s*$")
#: labels that mean "no physical unit" but that pint would read as one (``a.u.`` is an
#: atomic mass unit times a year to pint, ``au`` an astronomical unit)
_ARBITRARY = frozenset(
    {"a.u.", "a.u", "au", "arb", "arb.", "arb.u.", "arb. u.", "arb. units", "arbitrary units"}
)
#: what a header means where pint alone reads another unit: ``Dry-bulb (C)`` in a weather
#: file is Celsius, not coulomb; ``AOD (unitless)`` is a pure number
_HEADER_MEANS = {
    "C": "degC",
    "F": "degF",
    "deg C": "degC",
    "deg F": "degF",
    "° C": "degC",
    "° F": "degF",
    "unitless": "dimensionless",
    "no unit": "dimensionless",
    "dps": "deg/s",
    "DPS": "deg/s",
    "bpm": "1/min",
    "BPM": "1/min",
}
#: an accelerometer's ``g`` is standard gravity (pint: gram; ``G`` is gauss to pint)
_GRAVITY = frozenset({"g", "G"})
#: the words of a header: separators and camelCase split them (``IMUAccX``: IMU, Acc, X)
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
#: an acceleration axis: ``ax``, ``a_y``, ``aZ``, ``ax1``
_AXIS = re.compile(r"^a[xyz][0-9]*$")
#: words that make a ``g`` a gram whatever else the name says
_MASS = frozenset({"mass", "weight", "wt"})
#: a unit symbol with its exponent written without ``^`` (``s2`` in ``m/s2``, ``m3``, ``s-1``)
_BARE_POWER = re.compile(r"(?<![\w^.])([^\W\d_]+)(-?[0-9]+)(?![\w.])")
#: a unit names something: a letter, or a symbol such as % or the degree sign
_SYMBOL = re.compile(r"[^\W\d_]|[%°‰Ω]")


@dataclass(frozen=True)
class HeaderUnit:
    """The bracket at the end of a column header.

    Attributes
    ----------
    stem : str
        The header without the bracket (``"Gyroscope X"``).
    text : str
        The bracket's text, stripped (``"deg/s"``).
    unit : str or None
        The pint unit: ``text``, or what a header means by it where pint alone would read
        another unit (``C`` is ``degC``, ``unitless`` is ``dimensionless``); None when
        ``text`` is not a unit.
    reading : str
        pint's name for the unit (``"degree / second"``), or why ``text`` is not a unit.
    """

    stem: str
    text: str
    unit: str | None
    reading: str


def header_unit(name: str) -> HeaderUnit | None:
    """The unit bracket ending the header ``name``, or None when it ends in none.

    Examples: ``"alt [ft]"`` gives unit ``"ft"`` (pint: foot), ``"Value (raw)"`` gives no
    unit (pint does not know ``raw``), ``"speed"`` gives None.
    """
    m = _BRACKET.match(name)
    if m is None:
        return None
    text = (m.group("round") if m.group("round") is not None else m.group("square")).strip()
    if not text:
        return None
    stem = m.group("stem")
    if text.lower() in _ARBITRARY:
        return HeaderUnit(stem, text, None, "arbitrary units, no physical unit")
    if not _SYMBOL.search(text):
        return HeaderUnit(stem, text, None, "a number, not a unit")
    unit, why = _meant(stem, text)
    try:
        reading = str(parse_unit(unit))
    except SchemaError:
        powered = _BARE_POWER.sub(r"\1^\2", unit)
        try:
            reading = str(parse_unit(powered))
        except SchemaError:
            return HeaderUnit(stem, text, None, "pint does not know it")
        unit, why = powered, " (its exponent written without ^)"
    if unit != text:
        reading = f"{reading}, which a header means by {text!r}{why}"
    return HeaderUnit(stem, text, unit, reading)


def _meant(stem: str, text: str) -> tuple[str, str]:
    """(the unit a header means by ``text``, why, to follow the reading), before pint reads it."""
    rule = _accelerometer(stem) if text in _GRAVITY else None
    if rule is not None:
        return "standard_gravity", f" in an accelerometer column ({rule}): 9.80665 m/s^2"
    return _HEADER_MEANS.get(text, text), ""


def _accelerometer(stem: str) -> str | None:
    """Why the header ``stem`` names an accelerometer column (the rule that applied), or
    None: see the module docstring."""
    words = [w.lower() for w in _WORDS.findall(stem)]
    if _MASS.intersection(words):
        return None
    for w in words:
        if (w.startswith("acc") and not w.startswith(("accu", "acco"))) or w.endswith("acc"):
            return f"{w!r} in its name reads as acceleration"
        if w.startswith("imu"):
            return f"{w!r} in its name: an inertial measurement unit"
        if w.startswith("gravit") or w == "grav":
            return f"{w!r} in its name: a gravity vector"
    compact = "".join(words)
    if "gforce" in compact:
        return "g-force in its name"
    if _AXIS.match(compact):
        return f"{stem!r} names an acceleration axis"
    return None
