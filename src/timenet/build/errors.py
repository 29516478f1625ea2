"""Errors raised while building a dataset from a connector (defined in :mod:`timenet.errors`,
the one TimeNet error tree; re-exported here where the builder imports them).

::

    TimeNetError
    └── BuildError (RuntimeError)                 ref
        ├── FetchError (OSError)                  package, filename, path
        ├── RawInputError (ValueError)            path, row
        ├── ConnectorNotFoundError (LookupError)  ref
        ├── ConnectorDefinitionError (TypeError)  ref
        └── ParentError                           ref, parent

A failed build publishes nothing: the writer's staging directory is removed.
"""

from __future__ import annotations

from timenet.errors import (
    BuildError,
    ConnectorDefinitionError,
    ConnectorNotFoundError,
    FetchError,
    ParentError,
    RawInputError,
)

__all__ = [
    "BuildError",
    "ConnectorDefinitionError",
    "ConnectorNotFoundError",
    "FetchError",
    "ParentError",
    "RawInputError",
]
