"""Errors about rows of a filtered table, told as rows of the file.

With ``missing_time="drop"`` the adapter checks a table without the timeless rows, so
row ``r`` of what it checks is row ``kept[r]`` of the file.  The checks raise with the
filtered row; :func:`file_rows` renames it on the way out, so the message names the
file's line (an editor's, see :mod:`kuration._csvline`) and ``SourceError.row`` the
file's data row.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from .._csvline import row_place
from ..errors import SourceError

__all__ = ["file_row", "file_rows"]


def file_row(kept: np.ndarray | None, row: int) -> int:
    """The file row of row ``row`` of the filtered table."""
    return row if kept is None or not 0 <= row < len(kept) else int(kept[row])


@contextmanager
def file_rows(src: str, kept: np.ndarray | None) -> Iterator[None]:
    """Re-raise a ``SourceError`` about ``src`` with its row mapped through ``kept``.

    The same exception object goes on (its type and other attributes kept); its
    ``row`` and message are rewritten.  A no-op when ``kept`` is None.
    """
    try:
        yield
    except SourceError as exc:
        detail = getattr(exc, "detail", None)
        if kept is None or exc.row is None or exc.source != src or detail is None:
            raise
        exc.row = file_row(kept, int(exc.row))
        exc.args = (f"{src}, {row_place(src, exc.row)}: {detail}", *exc.args[1:])
        raise
