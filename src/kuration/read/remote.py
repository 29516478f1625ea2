"""Reading a dataset straight from an object store (``s3://``, ``gs://``, ``az://``, ``https://``).

A remote dataset is read object by object through fsspec, with the checks of a
local one (commit state, pinned checksums, shard size and SHA-256).  A reader
stays on one generation: the commit record's bytes (their SHA-256) and its
immutable identity (object version, else ETag) are pinned when the dataset is
opened, and after each shard is fetched the record is looked at again -- a
changed identity whose bytes differ means a writer replaced the dataset, and
the read fails instead of mixing two generations.  (A writer moves the record
to ``state="writing"`` before it replaces any shard, so a shard fetched before
an unchanged record belongs to the pinned generation.)
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from ..core.jsonio import loads_strict
from ..core.remote import is_url
from ..errors import DatasetIntegrityError
from ..output.commit import COMMIT_NAME, FORMAT
from ..output.destination import RemoteDestination

__all__ = ["RemoteDataset", "is_url", "remote_dataset", "remote_shard_bytes"]


class RemoteDataset:
    """The objects of one remote dataset, read through fsspec.

    Parameters
    ----------
    url : str
        The dataset prefix (``s3://bucket/run1``).

    Raises
    ------
    UnsupportedURLError
        A scheme kuration does not read (FTP, SFTP, ...).
    MissingExtraError
        The backend's package is not installed.
    """

    def __init__(self, url: str) -> None:
        self.dest = RemoteDestination(url, write=False)
        self.url = self.dest.url

    def read(self, rel: str) -> bytes:
        """The bytes of object ``rel``.

        Raises
        ------
        DatasetIntegrityError
            It does not exist.
        """
        data = self.dest.read(rel)
        if data is None:
            raise DatasetIntegrityError("missing object", path=self.dest.where(rel))
        return data

    def read_commit(self) -> tuple[dict[str, Any] | None, bytes, str]:
        """The commit record, its exact bytes and its identity (version/ETag); ``(None,
        b"", "")`` when there is none.

        Raises
        ------
        DatasetIntegrityError
            Not strict JSON, or not a ``kuration-dataset/1`` object.
        """
        identity = self.dest.identity(COMMIT_NAME)
        data = self.dest.read(COMMIT_NAME)
        if data is None:
            return None, b"", ""
        where = self.dest.where(COMMIT_NAME)
        try:
            rec = loads_strict(data, what=where)
        except ValueError as exc:
            raise DatasetIntegrityError(str(exc), path=where) from None
        if not isinstance(rec, dict) or rec.get("format") != FORMAT:
            raise DatasetIntegrityError(f"not a {FORMAT} commit record", path=where)
        return rec, data, identity

    def check_generation(self, pinned_sha256: str, pinned_identity: str = "") -> None:
        """Raise unless the commit record is still the one pinned when the dataset was opened.

        Raises
        ------
        DatasetIntegrityError
            The record changed (a writer replaced the dataset) or disappeared.
        """
        if pinned_identity and self.dest.identity(COMMIT_NAME) == pinned_identity:
            return
        now = self.dest.read(COMMIT_NAME)
        if now is None or hashlib.sha256(now).hexdigest() != pinned_sha256:
            raise DatasetIntegrityError(
                "the dataset changed while it was being read (a writer replaced it)",
                path=self.url,
            )


def remote_dataset(url: str) -> RemoteDataset:
    """A (cached) :class:`RemoteDataset` of ``url`` under the current storage options."""
    return _cached(url, os.environ.get("KURATION_STORAGE_OPTIONS", ""))


@functools.lru_cache(maxsize=32)
def _cached(url: str, options: str) -> RemoteDataset:
    return RemoteDataset(url)


def remote_shard_rel(entry: Mapping[str, Any], url: str) -> str:
    """The checked relative key of a shard entry (legacy absolute paths rebased).

    Raises
    ------
    DatasetIntegrityError
        A path that is empty or escapes the dataset prefix.
    """
    rel = entry.get("path")
    if not isinstance(rel, str) or not rel:
        raise DatasetIntegrityError(f"bad shard path {rel!r}")
    if rel.startswith("/") or is_url(rel):
        rel = f"{entry.get('split')}/{PurePosixPath(rel).name}"
    parts = rel.split("/")
    if any(p in ("..", ".", "") for p in parts) or "\\" in rel:
        raise DatasetIntegrityError(f"shard path {rel!r} escapes the dataset root", path=url)
    return rel


def remote_shard_bytes(entry: Mapping[str, Any], url: str) -> tuple[bytes, str]:
    """A shard's bytes and its URL (no checksum check here: the caller verifies).

    Raises
    ------
    DatasetIntegrityError
        A bad path or a missing object.
    """
    ds = remote_dataset(url.rstrip("/"))
    rel = remote_shard_rel(entry, ds.url)
    return ds.read(rel), ds.dest.where(rel)
