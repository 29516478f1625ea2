"""Directory creation for registry writers: OS errors become :class:`RegistryError`, and a
writer that fails or aborts removes the (empty) directories it created."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path

from timenet.errors import RegistryError, TimeNetError

__all__ = ["make_dirs", "raise_registry_error", "remove_empty"]


def raise_registry_error(exc: BaseException, root: Path) -> None:
    """Raise ``exc`` as a :class:`RegistryError` of ``root`` when it is a plain ``OSError``.

    Raises
    ------
    RegistryError
        Naming the registry, the path the system refused and its reason.
    """
    if isinstance(exc, OSError) and not isinstance(exc, TimeNetError):
        path = os.fsdecode(exc.filename) if exc.filename is not None else str(root)
        raise RegistryError(
            str(root), f"cannot write {path}: {exc.strerror or exc}", path=path
        ) from exc


def remove_empty(dirs: Sequence[Path]) -> None:
    """Remove the directories of ``dirs`` that are empty, deepest (last) first."""
    for d in reversed(dirs):
        with contextlib.suppress(OSError):
            d.rmdir()


def make_dirs(path: Path, root: Path) -> list[Path]:
    """``mkdir -p path`` inside the registry ``root``; returns the directories it created.

    On failure the directories it created are removed again.

    Raises
    ------
    RegistryError
        If a directory cannot be created (permissions, read-only file system, a file in
        the way).
    """
    missing: list[Path] = []
    p = path
    while not os.path.lexists(p) and p != p.parent:
        missing.append(p)
        p = p.parent
    made: list[Path] = []
    try:
        for d in reversed(missing):
            d.mkdir(exist_ok=d is not path)
            made.append(d)
    except OSError as exc:
        remove_empty(made)
        raise_registry_error(exc, root)
        raise
    return made
