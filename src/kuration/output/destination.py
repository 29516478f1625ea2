"""Where a dataset is written: a local directory (the fast path) or a remote prefix.

A local destination is a :class:`~pathlib.Path` and everything in
:mod:`kuration.output.commit` applies unchanged.  A remote destination
(``s3://bucket/prefix``, ``gs://...``, ``az://...``) is a
:class:`RemoteDestination`: the same layout as objects under the prefix,
written through fsspec with the same protocol adapted to an object store:

* the lease ``.kuration-writer.lock`` is an object created exclusively, one
  conditional request (S3 and Azure Blob ``If-None-Match: *``, GCS
  ``ifGenerationMatch=0``).  It persists after a crashed writer: remove it by
  hand only after making sure no writer still owns the destination.  A backend
  without a conditional create is refused, unless the user accepts the risk
  (:data:`RACING_OPT_IN`); then it is check-then-create with a
  :class:`~kuration.errors.NonExclusiveLeaseWarning`;
* a shard is uploaded whole as an attempt object
  ``.kuration_staging/<fingerprint>/<attempt>/<split>/<name>``, with a small
  record object next to it (``<name>.entry.json``: size, SHA-256 and the plan
  fields), then moved into place by the backend (``fs.mv``: copy + delete on
  object stores; readers never see a partial shard);
* ``dataset.commit.json`` is replaced by ``state="writing"`` before the first
  shard is moved and by ``state="committed"`` last.

Object stores have no atomic rename: a crash between the copy and the delete
of a move leaves both objects, which resume cleans up.  The checksummed commit
record keeps readers fail-closed throughout.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import uuid
import warnings
from collections.abc import Iterable
from typing import Any

from ..core.remote import object_identity, open_url
from ..errors import DatasetExistsError, DestinationError, NonExclusiveLeaseWarning
from .commit import LOCK_NAME, STAGING_NAME

__all__ = [
    "ATOMIC_CREATE",
    "RACING_OPT_IN",
    "RemoteDestination",
    "RemoteLease",
    "sha256_hex",
    "staging_prefix",
]

#: fsspec protocols whose ``pipe_file(mode="create")`` is one conditional request: S3
#: (s3fs, ``If-None-Match: *``), GCS (gcsfs, ``ifGenerationMatch=0``) and Azure Blob
#: (adlfs, ``If-None-Match: *``); an existing object fails it with FileExistsError.
ATOMIC_CREATE = frozenset({"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss"})
#: ``(variable, value)`` with which the user accepts a check-then-create lease on a
#: backend without a conditional create (two writers starting together may both write).
RACING_OPT_IN = ("KURATION_NON_EXCLUSIVE_LEASE", "accept-racing-writers")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class RemoteDestination:
    """A dataset prefix on an fsspec object store; paths are relative to the prefix.

    Parameters
    ----------
    url : str
        ``s3://bucket/prefix`` (or ``gs://``, ``az://``, ...).
    write : bool
        Whether it will be written (only object-store schemes are).
    filesystem : fsspec.AbstractFileSystem, optional
        Use this filesystem instead of opening the URL's (no scheme check).

    Raises
    ------
    UnsupportedURLError
        A scheme kuration does not write (FTP, SFTP, HTTP, ...).
    MissingExtraError
        The backend's package is not installed.
    """

    def __init__(self, url: str, *, write: bool = True, filesystem: Any = None) -> None:
        self.url = str(url).rstrip("/")
        if filesystem is None:
            self.fs, self.base = open_url(self.url, write=write)
        else:  # an fsspec filesystem given directly; the URL's path is the prefix
            self.fs, self.base = filesystem, filesystem._strip_protocol(self.url).rstrip("/")

    def key(self, rel: str) -> str:
        return f"{self.base}/{rel}" if rel else self.base

    def where(self, rel: str) -> str:
        """The URL of ``rel`` (for messages)."""
        return f"{self.url}/{rel}" if rel else self.url

    def _fail(self, what: str, rel: str, exc: BaseException) -> DestinationError:
        return DestinationError(f"cannot {what}: {exc}", path=self.where(rel))

    def read(self, rel: str) -> bytes | None:
        """The bytes of ``rel``, None when it does not exist."""
        try:
            data: bytes = self.fs.cat_file(self.key(rel))
        except FileNotFoundError:
            return None
        except Exception as exc:  # any backend error (OSError, botocore...)
            raise self._fail("read", rel, exc) from exc
        return data

    def info(self, rel: str) -> dict[str, Any] | None:
        """The backend's ``info`` of ``rel`` (size, ETag, version...), None when missing."""
        self.fs.invalidate_cache(self.key(rel))
        try:
            out: dict[str, Any] = self.fs.info(self.key(rel))
        except FileNotFoundError:
            return None
        except Exception as exc:  # any backend error (OSError, botocore...)
            raise self._fail("stat", rel, exc) from exc
        return out if out.get("type", "file") != "directory" else None

    def identity(self, rel: str) -> str:
        """The immutable version/ETag of ``rel`` (``""`` when missing or unknown)."""
        info = self.info(rel)
        return object_identity(info) if info is not None else ""

    def write(self, rel: str, data: bytes) -> None:
        """Upload ``data`` as one whole object ``rel`` (a single PUT for small objects)."""
        try:
            self.fs.pipe_file(self.key(rel), data)
        except Exception as exc:  # any backend error (OSError, botocore...)
            raise self._fail("write", rel, exc) from exc

    def write_many(self, items: dict[str, bytes]) -> None:
        """Upload several whole objects (concurrently on async backends)."""
        if not items:
            return
        try:
            self.fs.pipe({self.key(r): d for r, d in items.items()})
        except Exception as exc:  # any backend error (OSError, botocore...)
            raise self._fail("write", next(iter(items)), exc) from exc

    def create_exclusive(self, rel: str, data: bytes, *, racing_ok: bool = False) -> bool:
        """Create ``rel`` only if it does not exist; returns whether the backend did it
        atomically.

        On :data:`ATOMIC_CREATE` backends this is one conditional request
        (``pipe_file(mode="create")``: S3 and Azure ``If-None-Match: *``, GCS
        ``ifGenerationMatch=0``).  Another backend is refused unless ``racing_ok``; then
        it is check-then-create with a :class:`~kuration.errors.NonExclusiveLeaseWarning`:
        two writers starting at the same instant are not kept apart there.

        Raises
        ------
        FileExistsError
            ``rel`` exists.
        DestinationError
            A backend without a conditional create and not ``racing_ok``, or any other
            failure (names the URL).
        """
        key = self.key(rel)
        protocols = self.fs.protocol if isinstance(self.fs.protocol, tuple) else (self.fs.protocol,)
        if ATOMIC_CREATE & set(protocols):
            try:
                self.fs.pipe_file(key, data, mode="create")
            except FileExistsError:
                raise
            except Exception as exc:  # any backend error (OSError, botocore...)
                raise self._fail("create", rel, exc) from exc
            return True
        if not racing_ok:
            var, value = RACING_OPT_IN
            raise DestinationError(
                f"the {protocols[0]} backend cannot create an object only if it is absent, "
                "so two writers starting together could both take the writer lease and "
                f"interleave their objects; set {var}={value} to accept that risk",
                path=self.where(rel),
            )
        warnings.warn(
            f"{self.where(rel)}: the {protocols[0]} backend cannot create objects "
            "exclusively; two writers starting at once are not kept apart",
            NonExclusiveLeaseWarning,
            stacklevel=3,
        )
        if self.info(rel) is not None:
            raise FileExistsError(self.where(rel))
        self.write(rel, data)
        return False

    def move_many(self, pairs: list[tuple[str, str]]) -> None:
        """Move objects ``src -> dst``: every copy first (concurrent on async backends),
        then the sources are deleted, so a crash leaves each shard in place, staged, or both.
        """
        if not pairs:
            return
        try:
            self.fs.copy([self.key(a) for a, _ in pairs], [self.key(b) for _, b in pairs])
        except Exception as exc:  # any backend error (OSError, botocore...)
            raise self._fail("move into place", pairs[0][1], exc) from exc
        self.remove([a for a, _ in pairs])

    def listing(self, rel: str = "") -> list[str]:
        """Every object under ``rel`` (recursively), relative to the prefix."""
        self.fs.invalidate_cache()
        try:
            found = self.fs.find(self.key(rel))
        except FileNotFoundError:
            return []
        except Exception as exc:  # any backend error (OSError, botocore...)
            raise self._fail("list", rel, exc) from exc
        start = len(self.base) + 1
        return sorted(p[start:] for p in found if p.startswith(self.base + "/"))

    def remove(self, rels: Iterable[str]) -> None:
        """Delete objects (missing ones are ignored)."""
        keys = [self.key(r) for r in rels]
        if not keys:
            return
        try:
            self.fs.rm(keys)
        except FileNotFoundError:
            pass
        except Exception as exc:  # any backend error (OSError, botocore...)
            raise self._fail("delete", keys[0][len(self.base) + 1 :], exc) from exc
        self.fs.invalidate_cache()

    def in_use(self) -> bool:
        """Whether the prefix holds anything but the lease (a dataset, a staging area)."""
        return any(r != LOCK_NAME for r in self.listing())

    def read_many(self, rels: Iterable[str]) -> dict[str, bytes]:
        """The bytes of each of ``rels`` that exists, fetched concurrently on async backends."""
        keys = {self.key(r): r for r in rels}
        if not keys:
            return {}
        try:
            got = self.fs.cat(list(keys), on_error="omit")
        except Exception as exc:  # any backend error (OSError, botocore...)
            raise self._fail("read", next(iter(keys.values())), exc) from exc
        out = {}
        for key, data in got.items():
            rel = keys.get(key) or keys.get(self.fs._strip_protocol(key))
            if rel is not None and isinstance(data, bytes):
                out[rel] = data
        return out

    def sha256_many(self, rels: Iterable[str], batch: int = 128) -> dict[str, tuple[int, str]]:
        """Size and SHA-256 of the stored bytes of each of ``rels`` that exists, fetched
        ``batch`` objects at a time; only the digests are kept."""
        todo = sorted(set(rels))
        out: dict[str, tuple[int, str]] = {}
        for i in range(0, len(todo), batch):
            for rel, data in self.read_many(todo[i : i + batch]).items():
                out[rel] = (len(data), sha256_hex(data))
        return out


class RemoteLease:
    """The writer lease of a remote destination: ``.kuration-writer.lock``, created
    exclusively, naming its owner (host, pid, a random token), deleted on release only
    while it still holds this lease's token.

    Parameters
    ----------
    dest : RemoteDestination
        The prefix to hold.
    racing_ok : bool, optional
        Accept a check-then-create lease on a backend without a conditional create;
        None reads the user's choice from the environment (:data:`RACING_OPT_IN`).

    Raises
    ------
    DatasetExistsError
        The lease object exists: another writer holds the destination (or a crashed
        one left it; the message says when it is safe to remove it).
    DestinationError
        A backend without a conditional create, the risk not accepted; a
        :data:`RACING_OPT_IN` variable holding another value.
    """

    def __init__(self, dest: RemoteDestination, *, racing_ok: bool | None = None) -> None:
        self.dest = dest
        self.racing_ok = _racing_opt_in(dest.url) if racing_ok is None else racing_ok
        self.token = uuid.uuid4().hex
        self.held = False
        self.exclusive = True

    def acquire(self) -> RemoteLease:
        body = json.dumps(
            {"host": socket.gethostname(), "pid": os.getpid(), "token": self.token},
            sort_keys=True,
        ).encode()
        try:
            self.exclusive = self.dest.create_exclusive(LOCK_NAME, body, racing_ok=self.racing_ok)
        except FileExistsError:
            raise DatasetExistsError(
                f"{self.dest.url}: another writer holds {LOCK_NAME}; wait for it to finish. "
                f"A remote lease outlives a crashed writer: remove {self.dest.where(LOCK_NAME)} "
                "by hand only after confirming that no writer still owns the destination"
            ) from None
        self.held = True
        return self

    def release(self) -> None:
        if not self.held:
            return
        self.held = False
        with contextlib.suppress(OSError, ValueError):
            data = self.dest.read(LOCK_NAME)
            if data is not None and json.loads(data).get("token") == self.token:
                self.dest.remove([LOCK_NAME])


def _racing_opt_in(url: str) -> bool:
    var, value = RACING_OPT_IN
    got = os.environ.get(var, "")
    if got and got != value:
        raise DestinationError(f"{var} is {got!r}; the only value it takes is {value!r}", path=url)
    return bool(got)


def staging_prefix(fingerprint: str) -> str:
    """The run-fingerprint namespace of remote attempt objects."""
    return f"{STAGING_NAME}/{fingerprint[:32]}"
