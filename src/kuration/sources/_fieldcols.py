"""Field columns that do not go through float64: integer fields exactly, categorical
labels as vocabulary codes (:class:`~kuration.sources.timeseries.TimeseriesAdapter`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..contracts.schema import FieldSpec
from ..contracts.tick import field_ints
from ..errors import SourceError

__all__ = ["categorical_codes", "int_values"]


def int_values(table: pa.Table, f: FieldSpec, cols: Sequence[str], src: str) -> np.ndarray:
    """The columns of an integer-dtype field in that dtype, exactly (never through float64).

    Returns
    -------
    ndarray, shape (rows, D), ``f.dtype``
        0 where the column is null (the float values say missing there).

    Raises
    ------
    SourceError
        A value outside the dtype's range, or a non-integral float, naming the
        column and row.
    """
    out = np.zeros((table.num_rows, len(cols)), dtype=np.dtype(f.dtype))
    for j, c in enumerate(cols):
        col = table.column(c).combine_chunks()
        if pa.types.is_null(col.type):
            continue
        valid = np.asarray(col.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        fill = False if pa.types.is_boolean(col.type) else 0
        x = np.asarray(pc.fill_null(col, fill).to_numpy(zero_copy_only=False))
        out[:, j] = field_ints(f, x, valid, src, f"column {c!r}")
    return out


def categorical_codes(col: pa.ChunkedArray, f: FieldSpec, name: str, src: str) -> np.ndarray:
    as_str = col.cast(pa.string())
    idx = pc.index_in(as_str, value_set=pa.array(list(f.vocab), pa.string()))
    unknown = pc.and_(pc.is_null(idx), pc.is_valid(as_str))
    bad = np.flatnonzero(np.asarray(unknown.to_numpy(zero_copy_only=False)))
    if bad.size:
        r = int(bad[0])
        raise SourceError(
            f"unknown label {as_str[r].as_py()!r} in column {name!r} (vocab {list(f.vocab)})",
            source=src,
            row=r,
        )
    return np.asarray(pc.fill_null(idx.cast(pa.float64()), np.nan).to_numpy(zero_copy_only=False))
