"""File checksums and manifest loading with the safety checks readers rely on."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from timenet.errors import IntegrityError, ManifestError
from timenet.models import FileEntry, Manifest

_CHUNK = 1 << 20


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Hex SHA-256 of a file, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb", buffering=0) as fh:
        buf = bytearray(_CHUNK)
        view = memoryview(buf)
        while n := fh.readinto(buf):
            h.update(view[:n])
    return h.hexdigest()


def check_size(path: Path, entry: FileEntry) -> None:
    """Raise IntegrityError unless ``path`` is a regular file of ``entry.size`` bytes."""
    try:
        st = os.lstat(path)
    except FileNotFoundError as exc:
        raise IntegrityError(str(path), "presence", "file listed in manifest", "missing") from exc
    if not stat.S_ISREG(st.st_mode):
        raise IntegrityError(str(path), "file type", "regular file", "symlink or special file")
    if st.st_size != entry.size:
        raise IntegrityError(str(path), "size", entry.size, st.st_size)


def verify_file(path: Path, entry: FileEntry) -> None:
    """Check size then SHA-256 of ``path`` against ``entry``.

    Raises
    ------
    IntegrityError
        On any mismatch; the path and both values are named.
    """
    check_size(path, entry)
    digest = sha256_file(path)
    if digest != entry.sha256:
        raise IntegrityError(str(path), "sha256", entry.sha256, digest)


def verify_digest(path: str, entry: FileEntry, digest: str, size: int) -> None:
    """Compare an already computed size and digest with ``entry``."""
    if size != entry.size:
        raise IntegrityError(path, "size", entry.size, size)
    if digest != entry.sha256:
        raise IntegrityError(path, "sha256", entry.sha256, digest)


def read_local_manifest(version_dir: Path) -> Manifest:
    """Read ``<version_dir>/manifest.json``, refusing symlinks and invalid content.

    Raises
    ------
    ManifestError
        If the manifest is missing, a symlink, not a regular file, or invalid.
    """
    path = version_dir / "manifest.json"
    try:
        st = os.lstat(path)
    except FileNotFoundError as exc:
        raise ManifestError(str(path), "missing: the version is not committed") from exc
    if stat.S_ISLNK(st.st_mode):
        raise ManifestError(str(path), "is a symlink; refusing to follow it")
    if not stat.S_ISREG(st.st_mode):
        raise ManifestError(str(path), "is not a regular file")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as fh:
        data = fh.read()
    return Manifest.from_json(data, path=str(path))
