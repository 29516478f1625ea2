"""Payload sources: reading values that a child dataset keeps in its parents' files.

A child version (one whose card lists ``parents``) copies the records,
signals, annotations and tasks it uses into its own catalog, but not their
values. Its catalog points each imported signal at a *virtual* path::

    payload/<org>/<name>/<version>/<path inside that release>

and its manifest pins every such file under ``payloads`` by path, size and
SHA-256. :func:`resolve_payloads` finds each payload release in a list of
registries and wraps the child's handle so that ``path("payload/...")``
returns the parent's file after checking it against the child's pin. The
parent's catalog is never opened, and the parent's own manifest is not
trusted for verification: the pin in the child's manifest is.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from timenet._integrity import check_size, verify_file
from timenet.errors import DatasetNotFoundError, IntegrityError
from timenet.models import FileEntry, Manifest
from timenet.registry import LocalRegistry, Registry, VersionHandle
from timenet.versions import parse_ref

__all__ = [
    "PAYLOAD_PREFIX",
    "PayloadVersionHandle",
    "payload_path",
    "resolve_payloads",
    "split_payload_path",
    "value_paths",
]

PAYLOAD_PREFIX = "payload/"


def payload_path(ref: str, rel: str) -> str:
    """Virtual catalog path of file ``rel`` of release ``ref`` (``org/name@version``)."""
    r = parse_ref(ref)
    return f"{PAYLOAD_PREFIX}{r.org}/{r.name}/{r.version}/{rel}"


def split_payload_path(path: str) -> tuple[str, str] | None:
    """``(ref, rel)`` of a virtual payload path, or ``None`` for a file of the version itself."""
    if not path.startswith(PAYLOAD_PREFIX):
        return None
    parts = path[len(PAYLOAD_PREFIX) :].split("/", 3)
    if len(parts) != 4:
        return None
    org, name, version, rel = parts
    return f"{org}/{name}@{version}", rel


def payload_entries(manifest: Manifest) -> dict[str, FileEntry]:
    """Every pinned payload file of ``manifest`` keyed by its virtual path."""
    return {payload_path(src.ref, f.path): f for src in manifest.payloads for f in src.files}


def value_paths(manifest: Manifest) -> list[str]:
    """Paths of every file a full read touches: own files, then payload files (virtual paths)."""
    return [f.path for f in manifest.files] + list(payload_entries(manifest))


class _LocalRelease:
    """A payload release in a local directory."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def locate(self, rel: str) -> Path:
        return self.root / rel


class _HandleRelease:
    """A payload release behind any registry handle (fetched without its own checks)."""

    def __init__(self, handle: VersionHandle) -> None:
        self.handle = handle

    def locate(self, rel: str) -> Path:
        return self.handle.path(rel)


class PayloadVersionHandle(VersionHandle):
    """A child version's handle that also serves the pinned files of its payload releases.

    Own files are delegated to ``inner``; ``payload/...`` paths are located in
    the resolved release and checked against the pin in the child's manifest
    (size at open, SHA-256 on first use), so a parent file that changed since
    the child was built raises :class:`IntegrityError` naming it.
    """

    def __init__(self, inner: VersionHandle, releases: dict[str, Any]) -> None:
        super().__init__(inner.manifest, inner.location, inner.verify)
        self.inner = inner
        self.releases = releases
        self._pins = payload_entries(inner.manifest)
        if self.verify:
            for vpath, entry in self._pins.items():
                release = releases[split_payload_path(vpath)[0]]  # type: ignore[index]
                if isinstance(release, _LocalRelease):
                    check_size(release.locate(entry.path), entry)

    def entry(self, rel: str) -> FileEntry:
        pin = self._pins.get(rel)
        if pin is not None:
            return pin
        return self.inner.entry(rel)

    def _local_root(self) -> Path:
        return self.inner._local_root()

    def path(self, rel: str) -> Path:
        split = split_payload_path(rel)
        if split is None:
            return self.inner.path(rel)
        ref, inner_rel = split
        pin = self.entry(rel)
        p = self.releases[ref].locate(inner_rel)
        if self.verify and rel not in self._verified:
            try:
                verify_file(p, pin)
            except IntegrityError as exc:
                raise IntegrityError(
                    f"{p} (payload of {self.ref}, pinned from {ref})",
                    exc.what,
                    exc.expected,
                    exc.actual,
                ) from None
            self._verified.add(rel)
        return p

    def dir_path(self, prefix: str) -> Path:
        split = split_payload_path(prefix)
        if split is None:
            return self.inner.dir_path(prefix)
        inside = [p for p in self._pins if p.startswith(prefix + "/")]
        if not inside:
            self.entry(prefix)
        for vpath in inside:
            self.path(vpath)
        return self.releases[split[0]].locate(split[1])

    def unverified_path(self, rel: str) -> Path | None:
        split = split_payload_path(rel)
        if split is None:
            return self.inner.unverified_path(rel)
        if self.verify and rel not in self._verified:
            self.entry(rel)
            return self.releases[split[0]].locate(split[1])
        return None

    def mark_verified(self, rel: str, digest: str, size: int) -> None:
        if split_payload_path(rel) is None:
            self.inner.mark_verified(rel, digest, size)
        super().mark_verified(rel, digest, size)


def resolve_payloads(
    handle: VersionHandle,
    registries: Sequence[Registry],
    *,
    build: Any = None,
) -> VersionHandle:
    """Attach the payload releases of a child version to its handle.

    Parameters
    ----------
    handle : VersionHandle
        Handle of the version to read; returned unchanged when it has no payloads.
    registries : sequence of Registry
        Searched in order for each payload release.
    build : callable, optional
        ``build(ref) -> bool`` called once for a release no registry holds
        (the client's auto_build); True means "try again".

    Raises
    ------
    DatasetNotFoundError
        If a payload release is in none of the registries.
    IntegrityError
        If a pinned local payload file is missing or has another size.
    """
    manifest = handle.manifest
    if not manifest.payloads:
        return handle
    releases: dict[str, Any] = {}
    for src in manifest.payloads:
        ref = parse_ref(src.ref)
        found = _find_release(ref, registries)
        if found is None and build is not None and build(ref):
            found = _find_release(ref, registries)
        if found is None:
            raise DatasetNotFoundError(
                src.ref,
                [r.url for r in registries],
                f"payload source of {manifest.ref}: its values live there",
            )
        releases[src.ref] = found
    return PayloadVersionHandle(handle, releases)


def _find_release(ref: Any, registries: Sequence[Registry]) -> Any:
    for reg in registries:
        if isinstance(reg, LocalRegistry):
            root = reg.version_dir(ref)
            if os.path.lexists(root / "manifest.json"):
                return _LocalRelease(root)
        elif reg.has(ref):
            return _HandleRelease(reg.open_version(ref, verify=False))
    return None
