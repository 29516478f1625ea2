"""Publish a committed local version to an fsspec URL (e.g. ``s3://bucket/prefix``)."""

from __future__ import annotations

import os
from typing import Any

from timenet.errors import VersionExistsError
from timenet.registry import LocalVersionHandle

__all__ = ["publish"]


def publish(
    version_dir: str | os.PathLike[str],
    url: str,
    *,
    storage_options: dict[str, Any] | None = None,
) -> str:
    """Upload a committed version so that ``url`` serves it as a registry.

    Every file is verified against the local manifest, uploaded to
    ``<url>/<org>/<name>/<version>/``, and ``manifest.json`` is uploaded last,
    so remote readers never see a version before all its files are in place.

    Parameters
    ----------
    version_dir : path
        A committed version directory.
    url : str
        Registry root URL.
    storage_options : dict, optional
        fsspec filesystem options.

    Returns
    -------
    str
        URL of the published version.

    Raises
    ------
    VersionExistsError
        If the target already has a ``manifest.json``.
    ManifestError, IntegrityError
        If the local version is not committed or fails verification.
    """
    import fsspec

    handle = LocalVersionHandle.open(version_dir, verify=True)
    ref = handle.ref
    fs, root = fsspec.core.url_to_fs(url.rstrip("/"), **(storage_options or {}))
    tail = f"{ref.org}/{ref.name}/{ref.version}"
    base = f"{root.rstrip('/')}/{tail}"
    target_url = f"{url.rstrip('/')}/{tail}"
    fs.invalidate_cache()
    if fs.exists(f"{base}/manifest.json"):
        raise VersionExistsError(target_url, str(ref))
    for entry in handle.manifest.files:
        remote = f"{base}/{entry.path}"
        fs.makedirs(remote.rsplit("/", 1)[0], exist_ok=True)
        fs.put_file(str(handle.path(entry.path)), remote)
    fs.put_file(str(handle.root / "manifest.json"), f"{base}/manifest.json")
    fs.invalidate_cache()
    return target_url
