"""Keep Ctrl-C working while pyarrow converts arrays and DuckDB runs queries.

pyarrow imports pandas lazily the first time an array becomes a NumPy array
(``Array.to_numpy(zero_copy_only=False)``, ``ChunkedArray.to_numpy``), from a Cython
function declared to return a C ``bint`` (``_PandasAPIShim._have_pandas_internal`` in
pyarrow's ``pandas-shim.pxi``).  Such a function cannot pass an exception on: a
``KeyboardInterrupt`` that arrives during that import (about half a second of importing
pandas) is printed as "Exception ignored" and dropped, and the run carries on to the end.
Importing pandas ourselves first, as plain Python, lets a Ctrl-C in that window stop the
run; pyarrow's own import then finds the modules loaded.

DuckDB turns a Ctrl-C into an exception of its own: ``RuntimeError("Query interrupted")``
when the signal arrives during a query, ``duckdb.InterruptException`` when the query is
interrupted through the connection, and an ``InvalidInputException`` whose detail holds the
``KeyboardInterrupt`` when it arrives in Python code DuckDB is reading from (a registered
Arrow stream).  :func:`is_interrupt` recognises all of them (and a ``KeyboardInterrupt``
anywhere in an exception's chain), so that such a run keeps its staged work for
``--resume`` and ``kur`` reports it as an interrupt.
"""

from __future__ import annotations

import importlib.util
import sys

__all__ = ["import_pandas_first", "is_interrupt"]


def import_pandas_first() -> None:
    """Import pandas and ``pyarrow.pandas_compat`` (when pandas is installed) before pyarrow
    imports them lazily where a ``KeyboardInterrupt`` would be swallowed (see the module)."""
    if "pyarrow.pandas_compat" in sys.modules or importlib.util.find_spec("pandas") is None:
        return
    import pandas  # noqa: F401
    import pyarrow.pandas_compat  # noqa: F401


def _duckdb_interrupt(exc: BaseException) -> bool:
    duckdb = sys.modules.get("duckdb")
    if duckdb is None:
        return False
    if isinstance(exc, getattr(duckdb, "InterruptException", ())):
        return True
    if type(exc) is RuntimeError and exc.args == ("Query interrupted",):
        return True
    return isinstance(exc, duckdb.Error) and "\nKeyboardInterrupt" in str(exc)


def is_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is a Ctrl-C: a ``KeyboardInterrupt`` (itself, or what caused it or
    was being handled), or DuckDB's report of one (see the module docstring)."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, KeyboardInterrupt) or _duckdb_interrupt(cur):
            return True
        cur = cur.__cause__ or cur.__context__
    return False
