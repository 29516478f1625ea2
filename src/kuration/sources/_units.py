"""Units a source declares for its own columns (Parquet/Arrow field metadata key ``unit``).

A file that says what its numbers mean is believed: a column declared in another unit than
its schema field is converted to the field's unit with pint, and a declaration that cannot be
(an unknown unit, another dimension, an integer field that would stop being exact) refuses
the source.  Without a declaration (CSV, undeclared columns) the schema's unit is assumed.
"""

from __future__ import annotations

import numpy as np
import pint
import pyarrow as pa

from ..contracts.schema import FieldSpec
from ..contracts.tick import is_int_field
from ..core.units import is_angle, linear_conversion, parse_unit
from ..errors import SchemaError, SourceError

__all__ = ["declared_unit", "to_field_unit"]


def declared_unit(schema: pa.Schema, column: str) -> str | None:
    """The unit a column declares in its field metadata (key ``unit``), or None."""
    meta = schema.field(column).metadata or {}
    raw = meta.get(b"unit")
    return None if raw is None else raw.decode("utf-8", "replace").strip() or None


def field_unit(f: FieldSpec, component: int) -> str | None:
    """The schema unit of one component of ``f`` (None: the field has no unit)."""
    if f.unit is None:
        return None
    return str(f.unit[component]) if isinstance(f.unit, (list, tuple)) else str(f.unit)


def to_field_unit(
    vals: np.ndarray, declared: str | None, f: FieldSpec, component: int, column: str, src: str
) -> np.ndarray:
    """``vals`` (float64, shape (N,)) of ``column`` in the unit of component ``component`` of
    field ``f``: unchanged when the column declares nothing or the same unit, else
    ``a * vals + b`` with pint's :func:`~kuration.core.units.linear_conversion`.

    Raises
    ------
    SourceError
        The declared unit is unknown to pint, of another dimension than the field's, or
        differs from an integer-dtype field's unit (converted values would not be exact).
    """
    want = field_unit(f, component)
    if declared is None or want is None or declared == want:
        return vals
    where = f"column {column!r} declares unit {declared!r} (field metadata 'unit')"
    try:
        if parse_unit(declared) == parse_unit(want):
            return vals
        if is_angle(declared) != is_angle(want):  # pint calls both '%' and 'deg' dimensionless
            raise pint.errors.DimensionalityError(declared, want)
        a, b = linear_conversion(declared, want)
    except SchemaError as exc:
        raise SourceError(f"{where}, which pint does not know", source=src) from exc
    except pint.errors.DimensionalityError as exc:
        raise SourceError(
            f"{where}, which cannot be converted to the unit {want!r} of field {f.name!r}",
            source=src,
        ) from exc
    if is_int_field(f):
        raise SourceError(
            f"{where}, but field {f.name!r} is an integer field in {want!r}: convert the "
            "column or declare the field in the column's unit",
            source=src,
        )
    return vals * a + b
