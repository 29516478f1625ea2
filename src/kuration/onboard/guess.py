"""Guesses ``kur init`` makes about a table of columns: time, entity, rate, field kinds.

Every guess comes with the evidence it rests on (a sentence), so ``kur init``
can print why.  Kinds come from dtypes and names; units come from metadata
(a hint file, Parquet field metadata, a TimeNet catalog) or a bracket ending
the header (``alt [ft]``, :mod:`.header_units`), never from a bare name: a
column without a unit keeps an empty unit and is listed.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..core.units import is_angle, is_length, parse_unit
from ..errors import InitError

__all__ = [
    "Column",
    "FieldGuess",
    "counter_step",
    "field_lines",
    "guess_fields",
    "nice_rate",
    "step_stats",
]

_LAT = re.compile(r"^(lat|latitude)$", re.I)
_LON = re.compile(r"^(lon|lng|long|longitude)$", re.I)
_ANGULAR = re.compile(r"(^|_)(heading|track|yaw|course|cog|bearing|azimuth|hdg)($|_)", re.I)
_FLAGS = re.compile(r"(flag|mask|status|bits)", re.I)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_COUNTER = re.compile(
    r"(^|_)(frame|index|idx|step|count|counter|seq|sequence|sample)(_?(no|nr|num|number|id|idx))?$",
    re.I,
)


@dataclass(frozen=True)
class Column:
    """One candidate field column (or TimeNet signal) as ``kur init`` sees it.

    Attributes
    ----------
    name : str
        Column or signal name.
    kind : {"float", "int", "bool", "text", "other"}
    dtype : str
        NumPy dtype name of the values (``"object"`` for text).
    unit : str or None
        pint unit from metadata or the header, None when there is none.
    unit_from : str or None
        Where the unit came from (``"Parquet field metadata"``, ``"TimeNet catalog"``,
        ``"hint file"``, ``"the column header; pint reads foot"``).
    distinct : tuple of int or None
        Sorted distinct values of an integer column with at most 16 of them.
    valid_frac : float
        Fraction of rows that hold a value.
    lo, hi : float or None
        Smallest and largest value of a numeric column.
    counter : int or None
        The step of an integer column named and shaped like a row counter (see
        :func:`counter_step`), None for any other column.
    stem : str
        The header without a unit bracket ending it (``"alt"`` of ``"alt [ft]"``); empty
        when the header ends in none that pint reads.
    not_unit : str or None
        A bracket ending the header that is not read as a unit, and why
        (``"'raw': pint does not know it"``).
    """

    name: str
    kind: str
    dtype: str
    unit: str | None = None
    unit_from: str | None = None
    distinct: tuple[int, ...] | None = None
    valid_frac: float = 1.0
    lo: float | None = None
    hi: float | None = None
    counter: int | None = None
    stem: str = ""
    not_unit: str | None = None

    @property
    def base(self) -> str:
        """The name kinds and field names are guessed from: the stem, else the name."""
        return self.stem or self.name


@dataclass(frozen=True)
class FieldGuess:
    """One schema field ``kur init`` proposes.

    Attributes
    ----------
    spec : dict
        The schema field (``name``, ``kind``, ``semantics``, ``unit``, ...).
    columns : tuple of str
        The columns (signals) it is read from, one per component.
    why : str
        The evidence, for the printed report.
    output : dict
        Its output modality (``dtype``, ``shape``, ``source``).
    """

    spec: dict[str, Any]
    columns: tuple[str, ...]
    why: str
    output: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The field's name."""
        return str(self.spec["name"])


def field_name(column: str, taken: set[str]) -> str:
    """A schema field name for a column: lower case, ``[a-z0-9_]``, unique."""
    name = re.sub(r"\W+", "_", column).strip("_").lower() or "field"
    if not _NAME.match(name):
        name = f"f_{name}"
    base, k = name, 2
    while name in taken:
        name, k = f"{base}_{k}", k + 1
    taken.add(name)
    return name


def counter_step(name: str, values: np.ndarray) -> int | None:
    """The step of a frame/index counter column, or None.

    A counter is named like one (``frame``, ``index``, ``idx``, ``step``, ``count``,
    ``seq``, ``sample``, alone or as the last word, optionally with ``_no``/``_num``...)
    and its integers ``values`` (shape (N,), in file order, no nulls) rise by one
    constant step or repeat (the rows of several entities share a frame number); at most
    one row in 20 may start it again (a new track or take).  It numbers rows and
    measures nothing, so it is not a metric.
    """
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    if not _COUNTER.search(snake) or values.size < 3:
        return None
    steps = np.diff(values.astype(np.int64))
    rising = steps[steps > 0]
    if rising.size == 0 or (rising != rising[0]).any():
        return None
    if int((steps < 0).sum()) > steps.size // 20:
        return None
    return int(rising[0])


def _unit_note(cols: Sequence[Column]) -> str:
    froms = sorted({c.unit_from for c in cols if c.unit_from})
    units = ", ".join(str(c.unit) for c in cols if c.unit)
    if froms:
        return f"{units}, from {', '.join(froms)}"
    brackets = [c.not_unit for c in cols if c.not_unit]
    return f"no unit: the header's {brackets[0]}" if brackets else "no unit metadata"


def _degrees_by_range(lat: Column, lon: Column) -> str | None:
    """Why a unitless latitude/longitude pair reads as degrees, or None: both without a
    unit, every latitude within [-90, 90] and longitude within [-180, 180]."""
    if lat.unit or lon.unit or None in (lat.lo, lat.hi, lon.lo, lon.hi):
        return None
    if -90 <= lat.lo <= lat.hi <= 90 and -180 <= lon.lo <= lon.hi <= 180:  # type: ignore[operator]
        return (
            "no metadata: named latitude/longitude with values within +-90/+-180, read as degrees"
        )
    return None


def _position(
    cols: dict[str, Column], taken: set[str], missing: list[str]
) -> tuple[list[FieldGuess], set[str]]:
    """A latitude/longitude pair (geodetic) or an x/y(/z) set (cartesian) as one position
    vector; ``cols`` is keyed by :attr:`Column.base` (``lat`` for ``lat (deg)``)."""
    lat = next((c for n, c in cols.items() if _LAT.match(n) and c.kind == "float"), None)
    lon = next((c for n, c in cols.items() if _LON.match(n) and c.kind == "float"), None)
    if lat is not None and lon is not None:
        pair = [lat, lon]
        assumed = _degrees_by_range(lat, lon)
        if assumed:
            pair = [
                replace(lat, unit="deg", unit_from=assumed),
                replace(lon, unit="deg", unit_from=assumed),
            ]
            lat, lon = pair
        if all(c.unit and is_angle(c.unit) for c in pair):
            name = field_name("position", taken)
            spec = {
                "name": name,
                "kind": "vector",
                "dims": 2,
                "semantics": "position",
                "frame": "geodetic",
                "unit": [lat.unit, lon.unit],
            }
            why = (
                f"columns {lat.name!r}, {lon.name!r} are a latitude/longitude pair: a geodetic "
                f"position ({_unit_note(pair)})"
            )
            out = {"dtype": "float64", "shape": [2], "source": f"field:{name}"}
            return [FieldGuess(spec, (lat.name, lon.name), why, out)], {lat.name, lon.name}
        missing.extend(c.name for c in pair if not c.unit)
    xyz = [cols.get(n) for n in ("x", "y", "z")]
    comp = [c for c in xyz[:2] if c is not None and c.kind == "float"]
    if len(comp) == 2:
        z = xyz[2]
        if z is not None and z.kind == "float":
            comp.append(z)
        if all(c.unit and is_length(c.unit) for c in comp):
            units = [str(c.unit) for c in comp]
            name = field_name("position", taken)
            spec = {
                "name": name,
                "kind": "vector",
                "dims": len(comp),
                "semantics": "position",
                "unit": units[0] if len(set(units)) == 1 else units,
            }
            why = (
                f"columns {[c.name for c in comp]} are cartesian coordinates: a position "
                f"({_unit_note(comp)})"
            )
            out = {"dtype": "float32", "shape": [len(comp)], "source": f"field:{name}"}
            return [FieldGuess(spec, tuple(c.name for c in comp), why, out)], {c.name for c in comp}
    return [], set()


def _one(c: Column, taken: set[str], missing: list[str]) -> FieldGuess | None:
    """The field of a single column, or None for a column that is not a field (text)."""
    if c.kind in ("text", "other") or c.counter is not None:
        return None
    name = field_name(c.base, taken)
    spec: dict[str, Any] = {"name": name, "kind": "scalar"}
    out: dict[str, Any] = {"dtype": "float32", "shape": [], "source": f"field:{name}"}
    if c.kind == "bool":
        out["dtype"] = "uint8"
        return FieldGuess(spec, (c.name,), f"column {c.name!r} is boolean: a 0/1 scalar", out)
    if c.kind == "int" and c.distinct is not None and min(c.distinct, default=0) >= 0:
        if _FLAGS.search(c.base):
            top = int(max(c.distinct, default=0)).bit_length()
            spec.update(
                semantics="bitmask",
                dtype=c.dtype,
                bits={f"bit{k}": k for k in range(max(top, 1))},
            )
            out["dtype"] = c.dtype
            why = (
                f"column {c.name!r} holds {len(c.distinct)} small non-negative integers and "
                "its name says flags: a bitmask"
            )
            return FieldGuess(spec, (c.name,), why, out)
        spec.update(kind="categorical", vocab=[str(v) for v in c.distinct])
        out["dtype"] = "int32"
        why = f"column {c.name!r} holds only {len(c.distinct)} distinct integers: categorical"
        return FieldGuess(spec, (c.name,), why, out)
    if c.unit:
        spec["unit"] = c.unit
    else:
        missing.append(c.name)
    if _ANGULAR.search(c.base) and c.kind == "float":
        if c.unit and is_angle(c.unit):
            spec["semantics"] = "angular"
            why = f"column {c.name!r} is named like a heading: angular ({_unit_note([c])})"
            return FieldGuess(spec, (c.name,), why, out)
        why = (
            f"column {c.name!r} is named like a heading, but an angular field needs an angle "
            "unit and it has none: kept a plain scalar"
        )
        return FieldGuess(spec, (c.name,), why, out)
    why = f"column {c.name!r} is {c.dtype}: a scalar ({_unit_note([c])})"
    return FieldGuess(spec, (c.name,), why, out)


def guess_fields(columns: Sequence[Column]) -> tuple[list[FieldGuess], list[str], list[str]]:
    """Schema fields for the candidate columns (time and entity columns already removed).

    Returns
    -------
    fields : list of FieldGuess
    missing_units : list of str
        Columns read as fields whose unit is unknown (no metadata).
    skipped : list of str
        Columns that are not fields, each with the reason.
    """
    cols: dict[str, Column] = {}
    for c in columns:
        cols.setdefault(c.base, c)
    taken: set[str] = set()
    missing: list[str] = []
    fields, used = _position(cols, taken, missing)
    skipped: list[str] = []
    for c in columns:
        if c.name in used:
            continue
        g = _one(c, taken, missing)
        if g is None and c.counter is not None:
            skipped.append(
                f"{c.name} (a counter: its integers rise by {c.counter} a row, so it numbers "
                "rows and measures nothing)"
            )
        elif g is None:
            skipped.append(f"{c.name} ({c.kind}: not a numeric field)")
        else:
            fields.append(g)
    return _cartesian_hint(fields, cols, used), list(dict.fromkeys(missing)), skipped


def field_lines(
    fields: Sequence[FieldGuess], missing: Sequence[str], skipped: Sequence[str]
) -> list[str]:
    """What ``kur init`` prints about the fields: each with its evidence (its unit and where
    the unit came from), the columns without a unit and the columns left out."""
    lines = ["fields:", *(f"  {f.name}: {f.why}" for f in fields)]
    if missing:
        lines.append(
            f"units unknown (no metadata and no unit in the header) for: "
            f"{', '.join(missing)}; give them in a hint file (--units FILE, or the text "
            "itself: a JSON object of column to pint unit)"
        )
    if skipped:
        lines.append(f"not fields: {', '.join(skipped)}")
    return lines


def _cartesian_hint(
    fields: list[FieldGuess], cols: dict[str, Column], used: set[str]
) -> list[FieldGuess]:
    """The fields, the first of a float x/y(/z) set left as scalars (no length unit) told
    how to pair them: a position needs a unit, and a name never gives one."""
    keys = [
        n
        for n in ("x", "y", "z")
        if n in cols and cols[n].kind == "float" and cols[n].name not in used
    ]
    if keys[:2] != ["x", "y"]:
        return fields
    comp = [cols[n].name for n in keys]
    hint = json.dumps(dict.fromkeys(comp, "m"), separators=(",", ":"))
    note = (
        f"; columns {comp} are named like cartesian coordinates but have no length unit, so "
        f"they stay scalars: give their unit (--units '{hint}' if they are metres) to read "
        "them as one position"
    )
    return [replace(g, why=g.why + note) if g.columns == (comp[0],) else g for g in fields]


def nice_rate(hz: float) -> float:
    """The 1-2-5 rate (or 25 Hz) nearest ``hz`` on a log scale."""
    grid = sorted({k * 10.0**e for e in range(-5, 5) for k in (1, 2, 5)} | {25.0, 250.0})
    return float(min(grid, key=lambda g: abs(math.log(g / hz))))


def step_stats(steps: np.ndarray, where: str) -> dict[str, float]:
    """Median, 10th and 90th percentile of positive time steps (seconds) and their count.

    Raises
    ------
    InitError
        When no positive step exists in ``where`` (every entity has a single time).
    """
    pos = steps[steps > 0]
    if not pos.size:
        raise InitError(
            f"{where}: no entity has two distinct times: the sample rate cannot be measured",
            source=where,
        )
    p10, med, p90 = np.percentile(pos, [10, 50, 90])
    regular = float(np.mean(np.abs(pos - med) <= 0.1 * med))
    return {
        "median": float(med),
        "p10": float(p10),
        "p90": float(p90),
        "n": float(pos.size),
        "regular": regular,
    }


def check_unit(unit: str, where: str) -> str:
    """``unit`` when pint parses it.

    Raises
    ------
    InitError
        Naming where the unit came from.
    """
    try:
        parse_unit(unit)
    except Exception as exc:
        raise InitError(f"{where}: unit {unit!r} is not a pint unit: {exc}") from None
    return unit
