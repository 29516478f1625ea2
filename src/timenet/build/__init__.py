"""Building TimeF versions from raw sources: connectors, the engine, discovery.

::

    timenet-build build org/name [--registry DIR] [--fetch-from PATH]
      builder  discovery.resolve("org/name") -> Connector class
      engine   run_pipeline(connector, registry):
               metadata -> download -> convert -> derive_schema -> store

See ``docs/connectors.md``.
"""

from __future__ import annotations

from timenet.build.connector import Connector
from timenet.build.discovery import ENTRY_POINT_GROUP, ConnectorWarning, available, resolve
from timenet.build.engine import BuildResult, auto_build, build, run_pipeline
from timenet.build.errors import (
    BuildError,
    ConnectorNotFoundError,
    FetchError,
    ParentError,
    RawInputError,
)
from timenet.build.fetch import PinnedFile, default_cache_dir, fetch_pinned, read_member
from timenet.build.inherit import ParentRelease, prepare_parent, verify_version
from timenet.build.progress import BuildProgress
from timenet.build.workers import run_parallel

__all__ = [
    "ENTRY_POINT_GROUP",
    "BuildError",
    "BuildProgress",
    "BuildResult",
    "Connector",
    "ConnectorNotFoundError",
    "ConnectorWarning",
    "FetchError",
    "ParentError",
    "ParentRelease",
    "PinnedFile",
    "RawInputError",
    "auto_build",
    "available",
    "build",
    "default_cache_dir",
    "fetch_pinned",
    "prepare_parent",
    "read_member",
    "resolve",
    "run_parallel",
    "run_pipeline",
    "verify_version",
]
