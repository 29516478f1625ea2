"""Column names of a source from its header or schema alone, checked before any read.

A job that names a column a file lacks fails on that file only once its turn
comes, after the files before it were read in full; with many files the same
mistake is reported once per file.  :func:`check_columns` reads only what
names the columns (a CSV's first block, a Parquet footer, a JSON-lines file's
first object, a WFDB header, an Arrow IPC schema) and reports the first
missing column once, with the file, how many sources lack it and the closest
name (``difflib``).
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Sequence

import pyarrow as pa

from ..core.remote import is_url
from ..errors import SourceError

__all__ = ["check_columns", "header_names"]

_GPX = ("time", "track", "segment", "latitude", "longitude", "elevation")


def _paths(obj: object, prefix: str = "") -> list[str]:
    if isinstance(obj, dict):
        out: list[str] = []
        for k, v in obj.items():
            out.extend(_paths(v, f"{prefix}{k}.") if isinstance(v, dict) else [f"{prefix}{k}"])
        return out
    return []


def header_names(uri: str, fmt: str) -> list[str] | None:
    """The source's column names, or None where they cannot be had cheaply (remote
    objects, partitioned directories, an unreadable header: the read reports those).

    A header-only CSV is reported here: :class:`SourceError` "no rows".
    """
    if is_url(uri) or os.path.isdir(uri) or not os.path.isfile(uri):
        return None
    try:
        if fmt == "csv":
            import pyarrow.csv as pacsv

            from ._columns import csv_parse_options

            with pacsv.open_csv(uri, parse_options=csv_parse_options(uri)) as reader:
                names = reader.schema.names
                try:
                    reader.read_next_batch()
                except StopIteration:
                    raise SourceError(
                        "the source has no rows (a header and nothing under it)", source=uri
                    ) from None
                return names
        if fmt == "parquet":
            import pyarrow.parquet as pq

            return pq.read_schema(uri).names
        if fmt == "gpx":
            return list(_GPX)
        if fmt == "jsonl":
            import gzip

            opener = gzip.open if uri.lower().endswith(".gz") else open
            with opener(uri, "rt", encoding="utf-8") as fh:
                line = fh.readline()
            return _paths(json.loads(line)) if line.strip() else None
        if fmt == "wfdb":
            from ._formats import import_wfdb, quiet_wfdb

            wfdb = import_wfdb()
            with quiet_wfdb():
                return ["time", *wfdb.rdheader(uri[: -len(".hea")]).sig_name]
        if fmt == "arrows":
            with pa.OSFile(uri, "rb") as fh:
                return pa.ipc.open_stream(fh).schema.names
    except SourceError:
        raise
    except (OSError, ValueError, ImportError, pa.ArrowException):
        return None
    return None


def check_columns(uris: Sequence[str], fmts: Sequence[str], needed: Sequence[str]) -> None:
    """Refuse, once, a column of ``needed`` that a source's header lacks.

    Raises
    ------
    SourceError
        Naming the first file that lacks a column, the column, how many of the
        sources lack it and the closest column the file has (when one is close).
    """
    lacking: dict[str, list[tuple[str, list[str]]]] = {}
    for uri, fmt in zip(uris, fmts, strict=True):
        names = header_names(str(uri), fmt)
        if names is None:
            continue
        for col in needed:
            if col not in names:
                lacking.setdefault(col, []).append((str(uri), names))
    if not lacking:
        return
    col, where = next(iter(lacking.items()))
    uri, names = where[0]
    close = difflib.get_close_matches(col, names, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else f" (it has {names[:20]})"
    more = f" (and {len(where) - 1} other source(s) of {len(uris)})" if len(where) > 1 else ""
    others = [c for c in lacking if c != col]
    also = f"; columns {others} are missing too" if others else ""
    raise SourceError(f"no column {col!r} in the file{more}{hint}{also}", source=uri)
