"""The commit record and the writer lease.

``dataset.commit.json`` moves to ``state="writing"`` before any shard is
touched and is replaced last by ``state="committed"`` with the SHA-256 of the
manifest and config; readers accept only a committed dataset whose metadata
matches those checksums.  ``.kuration-writer.lock`` holds an exclusive
``flock`` for the whole run, released by the OS if the process dies.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import Any

from ..errors import DatasetExistsError
from ..jsonio import dump_json_atomic

__all__ = [
    "COMMIT_NAME",
    "CONFIG_NAME",
    "LOCK_NAME",
    "MANIFEST_NAME",
    "WriterLease",
    "write_commit",
]

COMMIT_NAME = "dataset.commit.json"
MANIFEST_NAME = "dataset_manifest.json"
CONFIG_NAME = "config.json"
LOCK_NAME = ".kuration-writer.lock"
FORMAT = "kuration-dataset/1"


class WriterLease:
    """Exclusive lease on a destination directory (``fcntl.flock`` on the lock file).

    Raises
    ------
    DatasetExistsError
        If another writer holds the lease.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._fd: int | None = None

    def __enter__(self) -> WriterLease:
        self.root.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.root / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise DatasetExistsError(f"{self.root}: another writer holds {LOCK_NAME}") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def write_commit(root: Path, state: str, **fields: Any) -> str:
    """Atomically write the commit record; returns its SHA-256."""
    return dump_json_atomic(root / COMMIT_NAME, {"format": FORMAT, "state": state, **fields})
