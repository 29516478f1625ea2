"""URLs of remote data: which schemes kuration reads and writes, through fsspec.

Object stores (``s3://``, ``gs://``, Azure's ``az://``/``abfs://``) are read and
written; plain ``http(s)://`` is read only; mutating hierarchical backends
(FTP, SFTP, SMB, WebDAV, ...) are refused because symlink-safe replacement and
deletion cannot be guaranteed there.  Local paths (and ``file://`` URLs) never
come here: they keep the local fast path.

Storage options (endpoint, credentials, ...) come from the backend's own
environment (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``,
``GOOGLE_APPLICATION_CREDENTIALS``, ...) and, for anything else, from
``KURATION_STORAGE_OPTIONS``: a JSON object mapping a protocol to the keyword
arguments of its fsspec filesystem, e.g.
``{"s3": {"client_kwargs": {"endpoint_url": "http://127.0.0.1:9000"}}}``.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from ..errors import MissingExtraError, SourceChangedError, UnsupportedURLError

__all__ = [
    "READ_SCHEMES",
    "WRITE_SCHEMES",
    "is_url",
    "local_path",
    "object_identity",
    "open_url",
    "read_remote",
    "remote_exists",
    "remote_identity",
    "storage_options",
    "url_scheme",
]

#: Schemes written (and read): object stores whose fsspec backends upload whole objects.
WRITE_SCHEMES: dict[str, str] = {
    "s3": "s3",
    "s3a": "s3",
    "gs": "gcs",
    "gcs": "gcs",
    "az": "azure",
    "abfs": "azure",
    "abfss": "azure",
    "adl": "azure",
}
#: Schemes read only.
READ_SCHEMES: dict[str, str] = {**WRITE_SCHEMES, "http": "", "https": ""}

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_MODULES = {"s3": "s3fs", "gcs": "gcsfs", "azure": "adlfs"}


def url_scheme(target: Any) -> str | None:
    """The lower-case scheme of ``target`` when it is a non-``file`` URL, else None."""
    m = _SCHEME.match(os.fspath(target)) if isinstance(target, str | os.PathLike) else None
    if m is None:
        return None
    scheme = m.group(1).lower()
    return None if scheme == "file" else scheme


def is_url(target: Any) -> bool:
    """Whether ``target`` is a remote URL (``file://`` and plain paths are local)."""
    return url_scheme(target) is not None


def local_path(target: str | os.PathLike[str]) -> str:
    """``target`` as a local path: a ``file://`` URL loses its scheme, anything else is
    returned as is."""
    text = os.fspath(target)
    m = _SCHEME.match(text)
    if m is not None and m.group(1).lower() == "file":
        from urllib.parse import unquote, urlparse

        return unquote(urlparse(text).path)
    return text


def storage_options(protocol: str) -> dict[str, Any]:
    """The fsspec keyword arguments for ``protocol`` from ``KURATION_STORAGE_OPTIONS``.

    Raises
    ------
    UnsupportedURLError
        The variable is not a JSON object of objects.
    """
    raw = os.environ.get("KURATION_STORAGE_OPTIONS", "").strip()
    if not raw:
        return {}
    try:
        doc = json.loads(raw)
    except ValueError as exc:
        raise UnsupportedURLError(
            f"KURATION_STORAGE_OPTIONS is not JSON ({exc})", url=protocol, scheme=protocol
        ) from None
    opts = doc.get(protocol, {}) if isinstance(doc, dict) else None
    if not isinstance(opts, dict):
        raise UnsupportedURLError(
            "KURATION_STORAGE_OPTIONS must map a protocol to an object of options",
            url=protocol,
            scheme=protocol,
        )
    return dict(opts)


def open_url(url: str, *, write: bool) -> tuple[Any, str]:
    """The fsspec filesystem of ``url`` and the path inside it (no trailing slash).

    Parameters
    ----------
    url : str
        A remote URL (see :func:`is_url`).
    write : bool
        Whether kuration will write there: only :data:`WRITE_SCHEMES` are accepted.

    Raises
    ------
    UnsupportedURLError
        A scheme kuration does not read (or, with ``write``, does not write).
    MissingExtraError
        The scheme's fsspec backend is not installed (names the extra).
    """
    scheme = url_scheme(url)
    if scheme is None:
        raise UnsupportedURLError("not a remote URL", url=str(url), scheme="")
    allowed = WRITE_SCHEMES if write else READ_SCHEMES
    if scheme not in allowed:
        verb = "write to" if write else "read from"
        why = (
            " (no safe atomic replacement or deletion there; use s3://, gs:// or az://)"
            if scheme not in READ_SCHEMES or write
            else ""
        )
        raise UnsupportedURLError(f"cannot {verb} {scheme}:// URLs{why}", url=url, scheme=scheme)
    import fsspec
    from fsspec.core import url_to_fs

    protocol = fsspec.core.split_protocol(url)[0] or scheme
    try:
        fs, path = url_to_fs(url, **storage_options(protocol))
    except ImportError:
        extra = allowed[scheme]
        module = _MODULES.get(extra, "fsspec")
        raise MissingExtraError(
            f"{url}: {scheme}:// needs {module}: pip install 'kuration-sdk[{extra or 'cloud'}]'"
        ) from None
    return fs, str(path).rstrip("/")


def object_identity(info: dict[str, Any]) -> str:
    """An immutable identity of a remote object from its fsspec ``info``: its version id
    (``version:...``), else its ETag or generation (``etag:...``); ``""`` when the backend
    reports neither (a name alone never identifies content)."""
    for key in ("VersionId", "version_id", "generation"):
        v = info.get(key)
        if v not in (None, "", "null"):
            return f"version:{v}"
    for key in ("ETag", "etag", "md5Hash", "content_md5"):
        v = info.get(key)
        if v:
            return f"etag:{str(v).strip(chr(34))}"
    return ""


def remote_identity(url: str) -> str:
    """The immutable identity (``version:...`` or ``etag:...``) of the object at ``url``;
    ``""`` when the backend reports none.

    Raises
    ------
    FileNotFoundError
        No object there.
    UnsupportedURLError, MissingExtraError
        See :func:`open_url`.
    """
    fs, path = open_url(url, write=False)
    fs.invalidate_cache(path)
    return object_identity(fs.info(path))


def read_remote(url: str, *, pin: str = "", source_id: str = "") -> tuple[bytes, str]:
    """The bytes of the object at ``url`` and its identity, read pinned to one version.

    The read is pinned to ``pin`` (an identity from :func:`object_identity`) when given,
    else to the identity the object has when the read starts: on S3 a ``version:...``
    is read by its ``VersionId`` (an overwritten object still yields the pinned bytes)
    and an ``etag:...`` with ``If-Match`` on every request; on GCS a ``version:...`` is
    read by its generation; over HTTP a strong ETag is sent as ``If-Match``; the other
    reads also compare the identity before and after the read.

    Raises
    ------
    FileNotFoundError
        No object there.
    SourceChangedError
        The object is no longer the pinned one, or it was replaced while it was read
        (names the URL and both identities).
    UnsupportedURLError
        A scheme kuration does not read.
    MissingExtraError
        See :func:`open_url`.
    """
    fs, path = open_url(url, write=False)
    fs.invalidate_cache(path)
    before = object_identity(fs.info(path))
    want = pin or before

    def changed(found: str) -> SourceChangedError:
        return SourceChangedError(
            source=url, source_id=source_id or url, expected=want, actual=found
        )

    if _has_protocol(fs, "s3"):
        return _read_s3(fs, path, want, changed)
    if _has_protocol(fs, "gs") and want.startswith("version:"):
        return _read_generation(fs, path, want, changed)
    if pin and before != pin:
        raise changed(before)
    data: bytes = _read_if_match(fs, path, want, changed)
    after = remote_identity(url)
    if after != before:
        raise changed(after)
    return data, after


def _has_protocol(fs: Any, name: str) -> bool:
    proto = getattr(fs, "protocol", ())
    return name in (proto if isinstance(proto, tuple | list) else (proto,))


def _read_generation(fs: Any, path: str, want: str, changed: Any) -> tuple[bytes, str]:
    """Read a GCS object at generation ``want`` (``version:<generation>``): a bucket that
    keeps noncurrent generations still yields the pinned bytes; otherwise the pinned
    generation is gone and the read fails naming the object's current identity."""
    try:
        data: bytes = fs.cat_file(path, generation=want.removeprefix("version:"))
    except FileNotFoundError:
        fs.invalidate_cache(path)
        try:
            now = object_identity(fs.info(path))
        except FileNotFoundError:
            now = ""
        raise changed(now) from None
    return data, want


def _read_if_match(fs: Any, path: str, want: str, changed: Any) -> bytes:
    """The bytes at ``path``; over HTTP with ``If-Match`` on a strong ETag ``want``, so a
    server that honours it refuses (412) an object replaced since it was fingerprinted."""
    tag = want.removeprefix("etag:") if want.startswith("etag:") else ""
    if not (tag and _has_protocol(fs, "http")) or tag.startswith("W/"):
        return bytes(fs.cat_file(path))  # a weak ETag never matches If-Match
    try:
        return bytes(fs.cat_file(path, headers={"If-Match": f'"{tag}"'}))
    except Exception as exc:
        if getattr(exc, "status", None) != 412:
            raise
        fs.invalidate_cache(path)
        raise changed(object_identity(fs.info(path))) from None


def _read_s3(fs: Any, path: str, want: str, changed: Any) -> tuple[bytes, str]:
    """Read an S3 object at version ``want`` (``version:...``, by its ``VersionId``) or with
    ``If-Match`` on its ETag (s3fs sends the ETag it opened with on every ranged GET)."""
    version = want.removeprefix("version:") if want.startswith("version:") else None
    try:
        if version is not None:
            data: bytes = fs.cat_file(path, version_id=version)
            return data, want
        with fs.open(path, "rb") as fh:
            found = object_identity(dict(fh.details))
            if want and found != want:
                raise changed(found)
            data = fh.read()
        return data, found
    except (OSError, ValueError) as exc:
        if isinstance(exc, FileNotFoundError) and version is None:
            raise
        fs.invalidate_cache(path)
        try:
            now = object_identity(fs.info(path))
        except FileNotFoundError:
            now = ""
        if version is not None or now != want:  # a pinned version gone, or a failed If-Match
            raise changed(now) from exc
        raise


def remote_exists(url: str) -> bool:
    """Whether an object exists at ``url``.

    Raises
    ------
    UnsupportedURLError, MissingExtraError
        See :func:`open_url`.
    """
    fs, path = open_url(url, write=False)
    fs.invalidate_cache(path)
    return bool(fs.isfile(path))
