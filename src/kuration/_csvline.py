"""Where a data row of a CSV file sits in the file, as an editor numbers it.

Arrow reads a CSV's rows as a table: row 0 is the first row under the header, and empty
lines are skipped.  An error about a row names the file line instead (1-based, header
counted), so ``grep -n`` and an editor land on it; the 0-based data row stays only in the
error's ``row`` attribute.  Only the error path calls this: it rereads the file once.
"""

from __future__ import annotations

import os
import re

__all__ = ["csv_line", "csv_parse_line", "row_place"]

_CSV = (".csv", ".tsv")


def csv_line(source: str, row: int) -> int | None:
    """The 1-based file line of data row ``row`` (0-based, header not counted) of the
    uncompressed local CSV file ``source``, counting lines as Arrow does (empty lines
    skipped, the first non-empty line the header); None for another source or a row
    past the end."""
    if row < 0 or not source.lower().endswith(_CSV) or not os.path.isfile(source):
        return None
    seen = -1  # the header is row -1
    with open(source, "rb") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.rstrip(b"\r\n"):
                continue
            if seen == row:
                return number
            seen += 1
    return None


def row_place(source: str, row: int) -> str:
    """``"line 41"`` for data row 39 of a CSV file (the line an editor shows), else
    ``"row 39"`` (0-based, as Arrow and pandas index a table)."""
    line = csv_line(source, row)
    return f"row {row}" if line is None else f"line {line}"


def csv_parse_line(message: str) -> str:
    """Arrow's CSV parse error with its ``Row #N`` (the 1-based file line a single-threaded
    read reports) written as ``line N``."""
    return re.sub(r"Row #(\d+): ", r"line \1: ", message)
