"""Errors raised while building a dataset from a connector.

::

    TimeNetError
    └── BuildError (RuntimeError)                 ref
        ├── FetchError (OSError)                  package, filename, path
        ├── RawInputError (ValueError)            path, row
        ├── ConnectorNotFoundError (LookupError)  ref
        └── ParentError                           ref, parent

A failed build publishes nothing: the writer's staging directory is removed.
"""

from __future__ import annotations

from timenet.errors import TimeNetError

__all__ = [
    "BuildError",
    "ConnectorNotFoundError",
    "FetchError",
    "ParentError",
    "RawInputError",
]


class BuildError(TimeNetError, RuntimeError):
    """A connector build failed; nothing was published.

    Attributes
    ----------
    ref : str
        The dataset being built (may be empty when unknown).
    """

    def __init__(self, message: str, *, ref: str = "") -> None:
        self.ref = ref
        super().__init__(f"building {ref}: {message}" if ref else message)


class FetchError(BuildError, OSError):
    """A pinned file could not be fetched, or its SHA-256 differs from the pin.

    Attributes
    ----------
    package, filename : str
        The pinned distribution and file.
    path : str
        The file that failed (download location or the user's copy), if any.
    """

    def __init__(self, message: str, *, package: str, filename: str, path: str = "") -> None:
        self.package = package
        self.filename = filename
        self.path = path
        BuildError.__init__(self, message)

    def __str__(self) -> str:
        return str(self.args[0])


class RawInputError(BuildError, ValueError):
    """A raw input file is malformed (truncated, duplicated column, bad value).

    Attributes
    ----------
    path : str
        The file (``archive!member`` for a member of a wheel or sdist).
    row : int or None
        0-based data row at fault, when known.
    """

    def __init__(self, path: str, message: str, *, row: int | None = None) -> None:
        self.path = path
        self.row = row
        where = f"{path}, row {row}" if row is not None else path
        BuildError.__init__(self, f"{where}: {message}")


class ConnectorNotFoundError(BuildError, LookupError):
    """No installed connector builds this dataset."""

    def __init__(self, ref: str, detail: str = "") -> None:
        extra = f" ({detail})" if detail else ""
        BuildError.__init__(self, f"no connector found for {ref!r}{extra}")
        self.ref = ref


class ParentError(BuildError):
    """A parent release of a child dataset cannot be prepared or does not verify.

    Attributes
    ----------
    parent : str
        The parent release ``org/name@version``.
    """

    def __init__(self, ref: str, parent: str, message: str) -> None:
        self.parent = parent
        BuildError.__init__(self, f"parent {parent}: {message}", ref=ref)
