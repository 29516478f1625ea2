"""Source identity: a decode reads the bytes the run's fingerprint names, or fails.

A run reads an admitted source more than once (the score pass, a features barrier,
the window reader, the stage step).  Each read takes the source's bytes once into
memory, hashes that buffer and parses the same buffer, so the digest describes
exactly what was decoded.  The first read records a :class:`SourceDigest`; a later
read is handed it as ``expect`` and raises :class:`~kuration.errors.SourceChangedError`
(naming both digests) when the bytes differ -- a rewrite, a truncation, a replaced
object.  Remote reads are also pinned to the object version they fingerprinted
(see :func:`kuration.core.remote.read_remote`).

Sources that share large files (an adapter whose sources are row ranges of common
files) can name their parts through :meth:`InputAdapter.file_parts
<kuration.sources.base.InputAdapter.file_parts>`; each file is then hashed once per
run and process (:class:`FileDigests`) and the source's fingerprint covers the files'
digests and its row ranges.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import pyarrow as pa

from ..core.remote import is_url, read_remote
from ..errors import SourceChangedError, SourceError

T = TypeVar("T")

__all__ = [
    "SHARED_FILES",
    "FileDigests",
    "SourceDigest",
    "check_digest",
    "decode_between",
    "parts_fingerprint",
    "read_source_bytes",
]


@dataclass(frozen=True, slots=True)
class SourceDigest:
    """What a read of one source proved about the bytes it decoded.

    Attributes
    ----------
    fingerprint : str
        The identity recorded in the run's provenance and used to authorize reuse:
        the hex SHA-256 of a local file's bytes (of a directory's files, see
        :func:`~kuration.sources.base.tree_sha256`), a remote object's
        ``version:...``/``etag:...``, or ``""`` when there is none (no reuse).
    sha256 : str
        Hex SHA-256 of the bytes decoded (for a local file, equal to ``fingerprint``);
        ``""`` when the adapter decodes bytes it cannot hash in the same pass.
    """

    fingerprint: str
    sha256: str = ""


def check_digest(uri: str, source_id: str, expect: SourceDigest | None, got: SourceDigest) -> None:
    """Raise unless ``got`` (what a read found) is what ``expect`` (the run's record) names.

    Each of the two digests is compared where both sides have one.

    Raises
    ------
    SourceChangedError
        The content digest or the identity differs (names both values).
    """
    if expect is None:
        return
    for want, have in ((expect.sha256, got.sha256), (expect.fingerprint, got.fingerprint)):
        if want and have and want != have:
            raise SourceChangedError(
                source=str(uri), source_id=source_id, expected=want, actual=have
            )


def decode_between(
    uri: str,
    source_id: str,
    fingerprint: Callable[[str], str],
    expect: SourceDigest | None,
    decode: Callable[[], T],
) -> tuple[T, SourceDigest]:
    """``decode()`` between two fingerprints of the source, for a read that cannot hash
    what it parses (a folder of files, a format its library opens by path): the first is
    checked against ``expect``, the second against the first.

    Raises
    ------
    SourceChangedError
        The source is not what ``expect`` names, or it changed during the decode.
    """
    before = SourceDigest(fingerprint(uri))
    check_digest(uri, source_id, expect, before)
    out = decode()
    check_digest(uri, source_id, before, SourceDigest(fingerprint(uri)))
    return out, before


def read_source_bytes(
    uri: str, source_id: str, expect: SourceDigest | None = None
) -> tuple[pa.Buffer, SourceDigest]:
    """The bytes of the file or object ``uri``, read once, and their digest.

    The returned buffer is what the caller parses (zero-copy: ``pa.BufferReader``);
    its digest is computed over that same buffer.  A remote object is read pinned
    to ``expect.fingerprint`` when one is given.

    Parameters
    ----------
    uri : str
        A local file path or a remote URL.
    source_id : str
        For errors.
    expect : SourceDigest, optional
        The run's record of this source; the read must match it.

    Raises
    ------
    SourceChangedError
        The bytes (or the remote object's version) differ from ``expect``, or the file
        that ``expect`` names is gone (``actual`` is ``""``).
    FileNotFoundError
        No file there (nor object), on a first read (no ``expect``).
    SourceError
        The file cannot be read.
    """
    try:
        if is_url(uri):
            pin = expect.fingerprint if expect is not None else ""
            data, identity = read_remote(str(uri), pin=pin, source_id=source_id)
            got = SourceDigest(identity, hashlib.sha256(data).hexdigest())
            buf = pa.py_buffer(data)
        else:
            buf = _read_local(str(uri))
            digest = hashlib.sha256(memoryview(buf)).hexdigest()
            got = SourceDigest(digest, digest)
    except FileNotFoundError as exc:
        if expect is None or not (expect.sha256 or expect.fingerprint):
            raise
        # gone since the run read it: a change like any other
        want = expect.sha256 or expect.fingerprint
        raise SourceChangedError(
            source=str(uri), source_id=source_id, expected=want, actual=""
        ) from exc
    check_digest(uri, source_id, expect, got)
    return buf, got


def _read_local(path: str) -> pa.Buffer:
    """A local file's bytes, read to its end in one call (one allocation, no copy into
    Arrow: a file that grows or shrinks while it is read yields what was there, and the
    digest says so)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise SourceError(f"cannot read: {exc.strerror or exc}", source=path) from exc
    return pa.py_buffer(data)


class FileDigests:
    """SHA-256 of shared files, each hashed once per run and process.

    Keyed by the file's path and its ``(size, mtime_ns, inode)``: a file replaced or
    rewritten in place since it was hashed is hashed again (so the source's fingerprint
    changes), while the many sources that share one unchanged file pay for one hash.
    """

    def __init__(self) -> None:
        self._known: dict[tuple[str, int, int, int], str] = {}
        self._lock = threading.Lock()

    def sha256(self, path: str) -> str:
        """Hex SHA-256 of the file at ``path`` (from the cache when it is unchanged).

        Raises
        ------
        OSError
            The file cannot be read.
        """
        st = os.stat(path)
        key = (os.path.abspath(path), st.st_size, st.st_mtime_ns, st.st_ino)
        with self._lock:
            known = self._known.get(key)
        if known is not None:
            return known
        from ..core.jsonio import sha256_file

        digest = sha256_file(path)
        with self._lock:
            self._known[key] = digest
        return digest

    def clear(self) -> None:
        with self._lock:
            self._known.clear()


#: The process's shared-file digests (a file changed in place gets a new stat key).
SHARED_FILES = FileDigests()


def parts_fingerprint(parts: Sequence[tuple[str, int, int]], files: FileDigests) -> str:
    """The fingerprint of a source made of row ranges of files: SHA-256 over each part's
    file digest and ``[start, stop)`` rows, in the order given (the file names take no
    part, so a moved tree keeps its fingerprint).

    Raises
    ------
    OSError
        A file cannot be read.
    """
    h = hashlib.sha256()
    for path, start, stop in parts:
        h.update(f"{files.sha256(path)}:{int(start)}:{int(stop)}\n".encode())
    return h.hexdigest()
