"""Registries: where committed versions live, and handles to read them.

A registry maps ``org/name@version`` to a version directory
``<root>/<org>/<name>/<version>/``. A version exists only once its
``manifest.json`` is present; dot-named entries (e.g. a crashed writer's
``.staging-*`` directory) are never listed.

* :class:`LocalRegistry` - a directory on the local filesystem (writable).
* :class:`RemoteRegistry` - any fsspec URL (``s3://bucket/prefix``,
  ``memory://...``), read-only; files are fetched on first use into a local
  cache and checked against the manifest while downloading.

Opening a version yields a :class:`VersionHandle`: the parsed manifest plus
``path(rel)``, which returns a local path whose size and SHA-256 have been
checked (once per handle) unless verification is off.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import time
import uuid
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from timenet._integrity import (
    check_size,
    read_local_manifest,
    verify_digest,
    verify_file,
)
from timenet.errors import (
    DatasetNotFoundError,
    IntegrityError,
    InvalidRefError,
    ManifestError,
    RegistryError,
)
from timenet.models import FileEntry, Manifest
from timenet.versions import Ref, version_key

__all__ = [
    "LocalRegistry",
    "Registry",
    "RemoteRegistry",
    "VersionHandle",
    "as_registry",
    "default_registries",
]

_NAME_OK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


class VersionHandle(ABC):
    """A committed version: its manifest and verified access to its files.

    Attributes
    ----------
    manifest : Manifest
        Parsed ``manifest.json``.
    location : str
        Where the version lives (directory or URL), for messages.
    verify : bool
        Whether files are checked against the manifest before use.
    """

    def __init__(self, manifest: Manifest, location: str, verify: bool) -> None:
        self.manifest = manifest
        self.location = location
        self.verify = verify
        self._verified: set[str] = set()

    @property
    def ref(self) -> Ref:
        """Exact reference of the version."""
        return self.manifest.ref

    def entry(self, rel: str) -> FileEntry:
        """Manifest entry of ``rel``; IntegrityError if the manifest does not list it."""
        try:
            return self.manifest.file(rel)
        except KeyError:
            raise IntegrityError(
                f"{self.location}/{rel}", "presence", "listed in manifest.json", "not listed"
            ) from None

    @abstractmethod
    def path(self, rel: str) -> Path:
        """Local path of file ``rel``, verified against the manifest when ``verify``.

        Raises
        ------
        IntegrityError
            If the file is missing, unlisted, or its size/SHA-256 differ.
        """

    def dir_path(self, prefix: str) -> Path:
        """Local path of directory ``prefix`` (a Zarr array) with every listed file verified."""
        inside = [f.path for f in self.manifest.files if f.path.startswith(prefix + "/")]
        if not inside:
            self.entry(prefix)
        for rel in inside:
            self.path(rel)
        return self._local_root() / prefix

    @abstractmethod
    def _local_root(self) -> Path: ...

    def unverified_path(self, rel: str) -> Path | None:
        """Local path still awaiting a hash check, or None if verified/not needed/remote."""
        return None

    def mark_verified(self, rel: str, digest: str, size: int) -> None:
        """Record a digest computed by the caller; raises IntegrityError on mismatch."""
        verify_digest(f"{self.location}/{rel}", self.entry(rel), digest, size)
        self._verified.add(rel)


class LocalVersionHandle(VersionHandle):
    """A version directory on the local filesystem."""

    def __init__(self, root: Path, manifest: Manifest, verify: bool) -> None:
        super().__init__(manifest, str(root), verify)
        self.root = root

    @classmethod
    def open(
        cls, version_dir: str | os.PathLike[str], *, verify: bool = True
    ) -> LocalVersionHandle:
        """Read the manifest of ``version_dir``; with ``verify`` also check every file's size.

        Raises
        ------
        ManifestError
            If ``manifest.json`` is missing, a symlink or invalid.
        IntegrityError
            If a listed file is missing or has the wrong size.
        """
        root = Path(version_dir)
        manifest = read_local_manifest(root)
        if verify:
            for f in manifest.files:
                check_size(root / f.path, f)
        return cls(root, manifest, verify)

    def _local_root(self) -> Path:
        return self.root

    def path(self, rel: str) -> Path:
        p = self.root / rel
        if self.verify and rel not in self._verified:
            verify_file(p, self.entry(rel))
            self._verified.add(rel)
        return p

    def dir_path(self, prefix: str) -> Path:
        out = super().dir_path(prefix)
        if self.verify:
            listed = {f.path for f in self.manifest.files if f.path.startswith(prefix + "/")}
            for p in out.rglob("*"):
                rel = p.relative_to(self.root).as_posix()
                if not p.is_dir() and rel not in listed:
                    raise IntegrityError(
                        str(p), "presence", "only files listed in manifest.json", "unlisted file"
                    )
        return out

    def unverified_path(self, rel: str) -> Path | None:
        if self.verify and rel not in self._verified:
            self.entry(rel)
            return self.root / rel
        return None


class RemoteVersionHandle(VersionHandle):
    """A version behind an fsspec URL, fetched file by file into a local cache."""

    def __init__(
        self, fs: Any, remote_root: str, url: str, manifest: Manifest, cache: Path, verify: bool
    ) -> None:
        super().__init__(manifest, url, verify)
        self.fs = fs
        self.remote_root = remote_root
        self.cache = cache

    def _local_root(self) -> Path:
        return self.cache

    def path(self, rel: str) -> Path:
        entry = self.entry(rel)
        dst = self.cache / rel
        if rel in self._verified:
            return dst
        if dst.exists():
            if not self.verify:
                return dst
            try:
                verify_file(dst, entry)
            except IntegrityError:
                dst.unlink()  # a corrupt cache entry is refetched below
            else:
                self._verified.add(rel)
                return dst
        dst.parent.mkdir(parents=True, exist_ok=True)
        tmp = dst.with_name(f".{dst.name}.{uuid.uuid4().hex[:8]}.part")
        h = hashlib.sha256()
        size = 0
        try:
            with self.fs.open(f"{self.remote_root}/{rel}", "rb") as src, open(tmp, "wb") as out:
                while chunk := src.read(1 << 20):
                    h.update(chunk)
                    size += len(chunk)
                    out.write(chunk)
            if self.verify:
                verify_digest(f"{self.location}/{rel}", entry, h.hexdigest(), size)
            os.replace(tmp, dst)
        except FileNotFoundError as exc:
            raise IntegrityError(
                f"{self.location}/{rel}", "presence", "file listed in manifest", "missing"
            ) from exc
        finally:
            if tmp.exists():
                tmp.unlink()
        if self.verify:
            self._verified.add(rel)
        return dst


class Registry(ABC):
    """A place holding committed versions under ``<org>/<name>/<version>/``."""

    url: str

    @abstractmethod
    def datasets(self) -> list[tuple[str, str]]:
        """``(org, name)`` pairs with at least one committed version, sorted."""

    @abstractmethod
    def versions(self, org: str, name: str) -> list[str]:
        """Committed versions of ``org/name``, oldest first (see :func:`version_key`)."""

    @abstractmethod
    def open_version(self, ref: Ref, *, verify: bool = True) -> VersionHandle:
        """Open an exact version.

        Raises
        ------
        DatasetNotFoundError
            If this registry does not hold it.
        """

    def latest(self, org: str, name: str) -> str | None:
        """Newest committed version of ``org/name`` or ``None``."""
        vs = self.versions(org, name)
        return vs[-1] if vs else None

    def has(self, ref: Ref) -> bool:
        """Whether the exact version is committed here."""
        return ref.version is not None and ref.version in self.versions(ref.org, ref.name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"


def _sorted_versions(names: list[str]) -> list[str]:
    return sorted((n for n in names if _NAME_OK.match(n)), key=version_key)


class LocalRegistry(Registry):
    """A local directory used as a registry (created on first write).

    Parameters
    ----------
    root : path
        Registry root directory.
    read_only : bool
        Searched but never written: a client neither builds nor copies a
        missing version into it (what a ``file://`` URL gives, see
        :func:`as_registry`).
    """

    def __init__(self, root: str | os.PathLike[str], *, read_only: bool = False) -> None:
        self.root = Path(root).expanduser()
        self.url = str(self.root)
        self.read_only = read_only

    def _subdirs(self, path: Path) -> list[str]:
        try:
            return sorted(
                e.name
                for e in os.scandir(path)
                if not e.name.startswith(".") and e.is_dir(follow_symlinks=False)
            )
        except (FileNotFoundError, NotADirectoryError):
            return []

    def datasets(self) -> list[tuple[str, str]]:
        return [
            (org, name)
            for org in self._subdirs(self.root)
            for name in self._subdirs(self.root / org)
            if self.versions(org, name)
        ]

    def versions(self, org: str, name: str) -> list[str]:
        base = self.root / org / name
        return _sorted_versions(
            [v for v in self._subdirs(base) if os.path.lexists(base / v / "manifest.json")]
        )

    def version_dir(self, ref: Ref) -> Path:
        """Directory of an exact version (whether or not it exists)."""
        if ref.version is None:
            raise InvalidRefError(str(ref), "version_dir needs an exact version")
        return self.root / ref.org / ref.name / ref.version

    def open_version(self, ref: Ref, *, verify: bool = True) -> VersionHandle:
        d = self.version_dir(ref)
        if not os.path.lexists(d / "manifest.json"):
            raise DatasetNotFoundError(str(ref), [self.url])
        return LocalVersionHandle.open(d, verify=verify)

    def clean_staging(self, min_age_s: float = 0.0) -> list[Path]:
        """Remove leftover ``.staging-*`` directories of crashed writers.

        Parameters
        ----------
        min_age_s : float
            Only remove directories last modified at least this many seconds
            ago (keeps the staging area of a writer that is still running).

        Returns
        -------
        list of Path
            Removed directories.
        """
        removed = []
        now = time.time()
        for staging in self.root.glob("*/*/.staging-*"):
            if staging.is_dir() and now - staging.stat().st_mtime >= min_age_s:
                shutil.rmtree(staging)
                removed.append(staging)
        return removed


def _default_cache_dir() -> Path:
    env = os.environ.get("TIMENET_CACHE_DIR")
    return Path(env) if env else Path("~/.cache/timenet/remote").expanduser()


class RemoteRegistry(Registry):
    """A read-only registry behind an fsspec URL.

    Parameters
    ----------
    url : str
        Root URL such as ``"s3://bucket/prefix"``.
    storage_options : dict, optional
        Passed to the fsspec filesystem (e.g. ``{"client_kwargs": {"endpoint_url": ...}}``).
    cache_dir : path, optional
        Local download cache; defaults to ``$TIMENET_CACHE_DIR`` or
        ``~/.cache/timenet/remote``. Each registry URL gets its own subdirectory.
    """

    def __init__(
        self,
        url: str,
        *,
        storage_options: dict[str, Any] | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        import fsspec

        self.url = url.rstrip("/")
        self.storage_options = dict(storage_options or {})
        self.fs, self._root = fsspec.core.url_to_fs(self.url, **self.storage_options)
        self._root = self._root.rstrip("/")
        key = hashlib.sha256(self.url.encode()).hexdigest()[:16]
        self.cache_dir = Path(cache_dir) if cache_dir is not None else _default_cache_dir()
        self._cache = self.cache_dir / key

    def _ls(self, path: str) -> list[str]:
        self.fs.invalidate_cache(path)
        try:
            entries = self.fs.ls(path, detail=True)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise RegistryError(self.url, f"cannot list {path}: {exc}") from exc
        return sorted(
            e["name"].rstrip("/").rsplit("/", 1)[-1]
            for e in entries
            if e.get("type") == "directory"
            and not e["name"].rstrip("/").rsplit("/", 1)[-1].startswith(".")
        )

    def datasets(self) -> list[tuple[str, str]]:
        return [
            (org, name)
            for org in self._ls(self._root)
            for name in self._ls(f"{self._root}/{org}")
            if self.versions(org, name)
        ]

    def versions(self, org: str, name: str) -> list[str]:
        base = f"{self._root}/{org}/{name}"
        return _sorted_versions(
            [v for v in self._ls(base) if self.fs.exists(f"{base}/{v}/manifest.json")]
        )

    def open_version(self, ref: Ref, *, verify: bool = True) -> VersionHandle:
        if ref.version is None:
            raise InvalidRefError(str(ref), "open_version needs an exact version")
        base = f"{self._root}/{ref.org}/{ref.name}/{ref.version}"
        url = f"{self.url}/{ref.org}/{ref.name}/{ref.version}"
        try:
            data = self.fs.cat_file(f"{base}/manifest.json")
        except FileNotFoundError:
            raise DatasetNotFoundError(str(ref), [self.url]) from None
        manifest = Manifest.from_json(data, path=f"{url}/manifest.json")
        if manifest.ref != ref:
            raise ManifestError(f"{url}/manifest.json", f"describes {manifest.ref}, not {ref}")
        cache = self._cache / ref.org / ref.name / ref.version
        return RemoteVersionHandle(self.fs, base, url, manifest, cache, verify)


def as_registry(
    spec: Registry | str | os.PathLike[str],
    *,
    storage_options: dict[str, Any] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> Registry:
    """Turn a path or URL into a registry.

    A plain path is a writable :class:`LocalRegistry`; a ``file://`` URL is the
    same directory read-only, like every other URL (``s3://...``).
    """
    if isinstance(spec, Registry):
        return spec
    text = os.fspath(spec)
    if text.startswith("file://"):
        return LocalRegistry(text[len("file://") :], read_only=True)
    if "://" in text:
        return RemoteRegistry(text, storage_options=storage_options, cache_dir=cache_dir)
    return LocalRegistry(text)


def default_registries() -> list[str]:
    """Registries from ``$TIMENET_REGISTRY`` or ``~/.cache/timenet/registry``.

    ``TIMENET_REGISTRY`` is colon-separated; a colon directly followed by
    ``//`` belongs to a URL scheme (``s3://...``) and does not split.
    """
    env = os.environ.get("TIMENET_REGISTRY", "")
    parts = [p for p in re.split(r":(?!//)", env) if p]
    return parts or [str(Path("~/.cache/timenet/registry").expanduser())]
