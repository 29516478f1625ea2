"""Where a data row of a CSV file sits in the file, as an editor numbers it.

Arrow reads a CSV's rows as a table: row 0 is the first row under the header, and empty
lines are skipped.  An error about a row names the file line instead (1-based, header
counted), so ``grep -n`` and an editor land on it; the 0-based data row stays only in the
error's ``row`` attribute.  Lines are counted by records, as Arrow counts them: a quoted
field that spans lines starts its record's line, and the record after it starts below
it.  A compressed CSV (``.csv.gz``, ``.tsv.bz2``...) is numbered by its uncompressed
lines.  Only the error path calls this: it rereads the file once.
"""

from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Iterator

__all__ = ["csv_line", "csv_parse_error", "csv_parse_line", "row_place"]

_CSV = (".csv", ".tsv")
_PACKED = (".gz", ".bz2", ".xz", ".zst", ".zstd", ".lz4", ".br")


def _plain_name(source: str) -> str:
    """``source`` lower-cased, less a compression suffix."""
    low = source.lower()
    for end in _PACKED:
        if low.endswith(end):
            return low[: -len(end)]
    return low


def _is_csv(source: str) -> bool:
    return _plain_name(source).endswith(_CSV)


def _delimiter(source: str) -> str:
    return "\t" if _plain_name(source).endswith(".tsv") else ","


def _record_lines(source: str) -> Iterator[int]:
    """The 1-based file line each non-empty record of ``source`` starts on, header first."""
    import pyarrow as pa

    with pa.input_stream(source) as raw:  # decompressed by the file name's suffix
        text = io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="")
        reader = csv.reader(text, delimiter=_delimiter(source))
        start = 1
        for record in reader:
            if record:
                yield start
            start = reader.line_num + 1


def csv_line(source: str, row: int) -> int | None:
    """The 1-based file line of data row ``row`` (0-based, header not counted) of the
    local CSV file ``source`` (compressed or not), counting records as Arrow does (empty
    lines skipped, the first non-empty record the header); None for another source, a
    row past the end or a file Python's csv module cannot follow."""
    if row < 0 or not _is_csv(source) or not os.path.isfile(source):
        return None
    try:
        for seen, line in enumerate(_record_lines(source), start=-1):
            if seen == row:
                return line
    except (OSError, csv.Error, ValueError):
        return None
    return None


def row_place(source: str, row: int) -> str:
    """``"line 41"`` for data row 39 of a CSV file (the line an editor shows), else
    ``"row 39"`` (0-based, as Arrow and pandas index a table)."""
    line = csv_line(source, row)
    return f"row {row}" if line is None else f"line {line}"


def csv_parse_line(message: str, source: str | None = None) -> str:
    """Arrow's CSV parse error with its ``Row #N`` (the N-th non-empty record, header
    counted, which a single-threaded read reports) written as the file ``line`` of that
    record in ``source``; without ``source`` (or when the file cannot be followed) N
    itself, which is the line when no empty line or multi-line field comes before it."""

    def line(m: re.Match[str]) -> str:
        n = int(m.group(1))
        found = csv_line(source, n - 2) if source is not None else None
        return f"line {found if found is not None else n}: "

    return re.sub(r"Row #(\d+): ", line, message)


def csv_parse_error(source: str) -> str | None:
    """Arrow's parse error for the local CSV file ``source``, naming the file line; None
    when the file parses (a failure was a value's, not the file's layout) or is not
    there to reread.

    A threaded read names no row; a single-threaded streamed reread does.  It reads every
    column as text, so only the layout can fail (a wrong column count, an open quote), and
    holds one block at a time.
    """
    if not (_is_csv(source) and os.path.isfile(source)):
        return None
    import pyarrow as pa
    import pyarrow.csv as pacsv

    read = pacsv.ReadOptions(use_threads=False, block_size=1 << 20)
    parse = pacsv.ParseOptions(delimiter=_delimiter(source))
    try:
        with pacsv.open_csv(source, read_options=read, parse_options=parse) as head:
            text = {name: pa.string() for name in head.schema.names}
        convert = pacsv.ConvertOptions(column_types=text)
        with pacsv.open_csv(
            source, read_options=read, parse_options=parse, convert_options=convert
        ) as reader:
            for _batch in reader:
                pass
    except pa.ArrowInvalid as exc:
        return csv_parse_line(str(exc), source) if "Row #" in str(exc) else None
    return None
