"""Keep Ctrl-C working while pyarrow converts arrays.

pyarrow imports pandas lazily the first time an array becomes a NumPy array
(``Array.to_numpy(zero_copy_only=False)``, ``ChunkedArray.to_numpy``), from a Cython
function declared to return a C ``bint`` (``_PandasAPIShim._have_pandas_internal`` in
pyarrow's ``pandas-shim.pxi``).  Such a function cannot pass an exception on: a
``KeyboardInterrupt`` that arrives during that import (about half a second of importing
pandas) is printed as "Exception ignored" and dropped, and the run carries on to the end.
Importing pandas ourselves first, as plain Python, lets a Ctrl-C in that window stop the
run; pyarrow's own import then finds the modules loaded.
"""

from __future__ import annotations

import importlib.util
import sys

__all__ = ["import_pandas_first"]


def import_pandas_first() -> None:
    """Import pandas and ``pyarrow.pandas_compat`` (when pandas is installed) before pyarrow
    imports them lazily where a ``KeyboardInterrupt`` would be swallowed (see the module)."""
    if "pyarrow.pandas_compat" in sys.modules or importlib.util.find_spec("pandas") is None:
        return
    import pandas  # noqa: F401
    import pyarrow.pandas_compat  # noqa: F401
