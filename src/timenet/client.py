"""TimeNet: the client that resolves references across registries and opens versions.

Resolution: a reference with a version (``org/name@1.2``) is looked up in each
registry in the order given, and the first registry holding it wins. A
reference without a version resolves to the newest version (see
:func:`timenet.version_key`) found in any registry; on a tie the earlier
registry wins.

``auto_build`` (on by default) builds a dataset that no registry holds from
an installed connector into the first *local* registry, then retries: a
miss calls ``builder(ref, local_registry)`` once. The default builder is a
hook, not an import: the one set with :func:`register_builder`, else the
first ``timenet.builders`` entry point (this distribution declares
:func:`timenet.build.auto_build`, which does nothing when no connector is
installed for the reference), else none and nothing is built. The client
never imports ``timenet.build`` itself. A client whose registries are all
remote never runs connector code. A child version's payload sources (its parents' files)
are resolved the same way before the first read.

``fetch_from`` (registries, local or remote) comes before a build: a version
missing from every registry, a missing payload source, and a missing parent
release of a dataset being built are copied (verified) from the first
``fetch_from`` registry holding them into the first local registry; only what
none holds is built.

Terms: a version whose effective access is not ``open`` is opened, loaded or
downloaded only once its terms are accepted (``accept_terms=`` or
:meth:`TimeNet.accept_terms`, see :mod:`timenet.terms`); otherwise
:class:`TermsNotAcceptedError` says what to accept and how.
"""

from __future__ import annotations

import inspect
import os
import shutil
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from timenet._fs import make_dirs, raise_registry_error, remove_empty
from timenet.errors import DatasetNotFoundError, TermsNotAcceptedError, VersionExistsError
from timenet.models import EffectiveAccess, Manifest
from timenet.reader import LoadedDataset, TimeFReader
from timenet.registry import (
    LocalRegistry,
    Registry,
    VersionHandle,
    as_registry,
    default_registries,
)
from timenet.terms import TermsStore
from timenet.versions import Ref, parse_ref, version_key
from timenet.writer import STAGING_PREFIX

if TYPE_CHECKING:
    from timenet.torch import TorchDataset

__all__ = [
    "BUILDER_ENTRY_POINT_GROUP",
    "DatasetListing",
    "TimeNet",
    "copy_version",
    "register_builder",
]

Builder = Callable[..., object]
FetchFrom = Registry | str | os.PathLike[str] | Sequence[Registry | str | os.PathLike[str]]

BUILDER_ENTRY_POINT_GROUP = "timenet.builders"
_registered_builder: Builder | None = None


def register_builder(builder: Builder | None) -> None:
    """Set the default ``auto_build`` builder of clients created without ``builder=``.

    ``builder(ref, local_registry)`` writes the missing version and returns
    False when it cannot build ``ref``. A builder that takes a ``fetch_from``
    keyword receives the client's ``fetch_from`` registries (where to copy
    missing parent releases from). ``None`` restores the default: the first
    ``timenet.builders`` entry point (by name).
    """
    global _registered_builder
    _registered_builder = builder


def _takes_fetch_from(builder: Builder) -> bool:
    try:
        params = inspect.signature(builder).parameters.values()
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        return False
    return any(p.name == "fetch_from" or p.kind is p.VAR_KEYWORD for p in params)


def _default_builder() -> Builder | None:
    """The registered builder, else the first ``timenet.builders`` entry point, else None."""
    if _registered_builder is not None:
        return _registered_builder
    for ep in sorted(entry_points(group=BUILDER_ENTRY_POINT_GROUP), key=lambda e: e.name):
        loaded: Builder = ep.load()
        return loaded
    return None


@dataclass(frozen=True)
class DatasetListing:
    """One dataset in one registry, with its committed versions (oldest first)."""

    registry: str
    org: str
    name: str
    versions: tuple[str, ...]


class TimeNet:
    """Client over an ordered list of registries.

    Parameters
    ----------
    registries : sequence of path, URL or Registry, optional
        Searched in order. Default: :func:`timenet.registry.default_registries`
        (``$TIMENET_REGISTRY``, colon-separated, else ``~/.cache/timenet/registry``).
    verify : bool
        Check file sizes and SHA-256 checksums against the manifest.
    cache_dir : path, optional
        Download cache for remote registries.
    storage_options : dict, optional
        fsspec options for remote registry URLs.
    auto_build : bool
        Build missing datasets (and missing payload sources) into the first
        writable local registry (a plain path, not a ``file://`` URL) with
        ``builder``. Never happens without one.
    builder : callable, optional
        ``builder(ref, local_registry)`` that writes the missing version;
        default: see :func:`register_builder` (:func:`timenet.build.auto_build`,
        the installed connectors, through the ``timenet.builders`` entry point).
    fetch_from : path, URL, Registry or a sequence of them, optional
        Registries (local or remote) to copy a missing version, payload source
        or parent release from, before any build; see the module docstring.
    accept_terms : iterable of str
        References (``org/name@version``, or ``org/name`` for every version)
        whose access terms the user accepts for this client only.
    terms_file : path, optional
        The user's persisted acceptances (default: see :mod:`timenet.terms`).
    """

    def __init__(
        self,
        registries: Sequence[Registry | str | os.PathLike[str]] | None = None,
        *,
        verify: bool = True,
        cache_dir: str | os.PathLike[str] | None = None,
        storage_options: Mapping[str, Any] | None = None,
        auto_build: bool = True,
        builder: Builder | None = None,
        fetch_from: FetchFrom | None = None,
        accept_terms: Iterable[str] = (),
        terms_file: str | os.PathLike[str] | None = None,
    ) -> None:
        specs = list(registries) if registries is not None else list(default_registries())
        opts = dict(storage_options or {})

        def reg(r: Registry | str | os.PathLike[str]) -> Registry:
            return as_registry(r, storage_options=opts, cache_dir=cache_dir)

        self.registries: tuple[Registry, ...] = tuple(reg(r) for r in specs)
        if fetch_from is None:
            fetch_from = ()
        elif isinstance(fetch_from, str | os.PathLike | Registry):
            fetch_from = (fetch_from,)
        self.fetch_from: tuple[Registry, ...] = tuple(reg(r) for r in fetch_from)
        self.verify = verify
        self.auto_build = auto_build
        self.builder = builder
        self.accepted_terms = frozenset(str(parse_ref(r)) for r in accept_terms)
        self.terms = TermsStore(terms_file)

    # -- resolution --------------------------------------------------------
    def _find(self, ref: Ref, verify: bool) -> VersionHandle | None:
        if ref.version is not None:
            for reg in self.registries:
                try:
                    return reg.open_version(ref, verify=verify)
                except DatasetNotFoundError:
                    continue
            return None
        best: tuple[tuple[object, ...], Registry, str] | None = None
        for reg in self.registries:
            latest = reg.latest(ref.org, ref.name)
            if latest is not None and (best is None or version_key(latest) > best[0]):
                best = (version_key(latest), reg, latest)
        if best is None:
            return None
        return best[1].open_version(ref.with_version(best[2]), verify=verify)

    def _local(self) -> LocalRegistry | None:
        """The first writable local registry (a ``file://`` URL is read-only)."""
        return next(
            (r for r in self.registries if isinstance(r, LocalRegistry) and not r.read_only), None
        )

    def _fetch_missing(self, ref: Ref, local: LocalRegistry) -> bool:
        """Copy ``ref`` from the first ``fetch_from`` registry holding it. True if copied."""
        for source in self.fetch_from:
            version = ref.version or source.latest(ref.org, ref.name)
            if version is None or not source.has(ref.with_version(version)):
                continue
            handle = source.open_version(ref.with_version(version), verify=True)
            if not os.path.lexists(local.version_dir(handle.ref)):
                copy_version(handle, local.root)
            return True
        return False

    def _build_missing(self, ref: Ref) -> bool:
        """Provide a missing ``ref`` in the first local registry: copy it from
        ``fetch_from``, else build it (auto_build). True if attempted."""
        local = self._local()
        if local is None:
            return False
        if self._fetch_missing(ref, local):
            return True
        if not self.auto_build:
            return False
        builder = self.builder if self.builder is not None else _default_builder()
        if builder is None:
            return False
        kwargs: dict[str, Any] = {}
        if self.fetch_from and _takes_fetch_from(builder):
            kwargs["fetch_from"] = self.fetch_from
        return builder(ref, local, **kwargs) is not False

    def resolve(self, ref: str | Ref, *, verify: bool | None = None) -> VersionHandle:
        """Find a version and return its handle.

        Raises
        ------
        InvalidRefError
            If ``ref`` is malformed.
        DatasetNotFoundError
            If no registry holds it; the ref and searched registries are named.
        """
        r = parse_ref(ref)
        v = self.verify if verify is None else verify
        handle = self._find(r, v)
        if handle is None and self._build_missing(r):
            handle = self._find(r, v)
        if handle is None:
            raise DatasetNotFoundError(str(r), [reg.url for reg in self.registries])
        if handle.manifest.payloads:
            from timenet.payloads import resolve_payloads

            handle = resolve_payloads(handle, self.registries, build=self._build_missing)
        return handle

    # -- terms ----------------------------------------------------------------
    def terms_accepted(self, handle: VersionHandle) -> bool:
        """True if the version needs no acceptance or its terms were accepted."""
        access = handle.manifest.effective_access
        r = handle.ref
        if not access.requires_acceptance:
            return True
        if {str(r), f"{r.org}/{r.name}"} & self.accepted_terms:
            return True
        return self.terms.accepted(str(r), access)

    def _accepted(self, handle: VersionHandle) -> VersionHandle:
        """``handle`` if its terms are accepted.

        Raises
        ------
        TermsNotAcceptedError
            Naming the version, level, terms and how to accept them.
        """
        if not self.terms_accepted(handle):
            a = handle.manifest.effective_access
            raise TermsNotAcceptedError(
                str(handle.ref), a.level, a.terms, a.url, [s.ref for s in a.sources]
            )
        return handle

    def accept_terms(self, ref: str | Ref) -> EffectiveAccess:
        """Accept the access terms of a version explicitly, persisted for this user.

        The acceptance is recorded in :attr:`terms` (see :mod:`timenet.terms`)
        against the exact version and its requirement, and holds for every
        later client of this user.

        Returns
        -------
        EffectiveAccess
            The requirement accepted (its ``terms`` are what was agreed to).

        Raises
        ------
        DatasetNotFoundError, InvalidRefError
            If the version cannot be found.
        """
        handle = self.resolve(ref)
        access = handle.manifest.effective_access
        if access.requires_acceptance:
            self.terms.accept(str(handle.ref), access)
        return access

    # -- access ---------------------------------------------------------------
    def open(self, ref: str | Ref, *, verify: bool | None = None) -> TimeFReader:
        """Open a version lazily (only the manifest is read now).

        Raises
        ------
        DatasetNotFoundError, InvalidRefError, ManifestError, IntegrityError
        TermsNotAcceptedError
            If the version's effective access requires accepting terms that
            were not accepted (see :meth:`accept_terms`).
        """
        return TimeFReader.open(self._accepted(self.resolve(ref, verify=verify)))

    def load(self, ref: str | Ref, *, verify: bool | None = None) -> LoadedDataset:
        """Open a version and read everything into memory.

        Raises
        ------
        DatasetNotFoundError, InvalidRefError, ManifestError, IntegrityError
        """
        with self.open(ref, verify=verify) as reader:
            return reader.load()

    def open_torch(
        self,
        ref: str | Ref,
        *,
        signals: Sequence[str] | None = None,
        units: Mapping[str, str] | None = None,
        transform: Callable[[dict[str, Any]], Any] | None = None,
        verify: bool | None = None,
        nulls: Literal["fill", "error"] = "fill",
        missing: Literal["fill", "error"] = "fill",
        window: int | None = None,
        stride: int | None = None,
    ) -> TorchDataset:
        """A map-style ``torch.utils.data.Dataset``: one item per record, or per window.

        Null and missing-signal policies, windows and the padding ``collate`` are
        described at :class:`timenet.torch.TorchDataset`; every check that could
        stop an epoch runs here, before any value is read. Requires torch
        (imported only here).
        """
        from timenet.torch import TorchDataset

        return TorchDataset(
            self.open(ref, verify=verify),
            signals=signals,
            units=units,
            transform=transform,
            nulls=nulls,
            missing=missing,
            window=window,
            stride=stride,
        )

    def info(self, ref: str | Ref) -> Manifest:
        """The manifest of a version (card, schema, counts, files)."""
        return self.resolve(ref).manifest

    def list(self) -> list[DatasetListing]:
        """Every dataset of every registry, in registry order."""
        out = []
        for reg in self.registries:
            for org, name in reg.datasets():
                out.append(DatasetListing(reg.url, org, name, tuple(reg.versions(org, name))))
        return out

    def download(self, ref: str | Ref, dest: str | os.PathLike[str]) -> Path:
        """Copy a verified version into the local registry ``dest``, atomically.

        The copy lands in ``<dest>/<org>/<name>/<version>/`` by the same
        staging-and-rename protocol as the writer. Files are always verified.
        A child version (one with payload sources) brings them along: each
        payload release is downloaded into ``dest`` first (unless ``dest`` holds
        it already), and every file the child pins is checked against the pin,
        so the copy opens with ``dest`` as its only registry.

        Returns
        -------
        Path
            The new version directory.

        Raises
        ------
        VersionExistsError
            If ``dest`` already holds the version.
        IntegrityError
            If a source file fails verification.
        RegistryError
            If ``dest`` cannot be written (nothing is left behind).
        TermsNotAcceptedError
            If the version's terms (or a payload release's) were not accepted.
        DatasetNotFoundError
            A payload release is in none of the registries (naming it and the child).
        IntegrityError
            A payload file already in ``dest`` differs from the child's pin.
        """
        handle = self._accepted(self.resolve(ref, verify=True))
        for src in handle.manifest.payloads:
            self._download_payload(src.ref, src.files, dest)
        return copy_version(handle, dest)

    def _download_payload(
        self, ref: str, pins: Sequence[Any], dest: str | os.PathLike[str]
    ) -> None:
        """The payload release ``ref`` in ``dest``, the files the child pins verified.

        ``resolve`` found the release already (it attaches payload sources), so only
        a file in ``dest`` that differs from the child's pin can fail here.

        Raises
        ------
        IntegrityError
            A file in ``dest`` does not match the child's pin.
        """
        from timenet._integrity import verify_file

        r = parse_ref(ref)
        root = Path(dest) / r.org / r.name / str(r.version)
        if not os.path.lexists(root / "manifest.json"):
            self.download(r, dest)  # its own payload sources too, if it has any
        for pin in pins:
            verify_file(root / pin.path, pin)

    def __repr__(self) -> str:
        return f"TimeNet(registries={[r.url for r in self.registries]!r})"


def copy_version(handle: VersionHandle, dest: str | os.PathLike[str]) -> Path:
    """Copy a version into the local registry ``dest`` by staging and one rename.

    Every file is read through ``handle`` (so verified when it verifies).

    Returns
    -------
    Path
        The new version directory ``<dest>/<org>/<name>/<version>``.

    Raises
    ------
    VersionExistsError
        If ``dest`` already holds the version.
    IntegrityError
        If a source file fails verification.
    RegistryError
        If ``dest`` cannot be written (nothing is left behind).
    """
    r = handle.ref
    parent = Path(dest) / r.org / r.name
    target = parent / str(r.version)
    if os.path.lexists(target):
        raise VersionExistsError(str(target), str(r))
    staging = parent / f"{STAGING_PREFIX}{r.version}-{uuid.uuid4().hex[:12]}"
    made = make_dirs(staging, Path(dest))  # RegistryError if refused
    try:
        for f in handle.manifest.files:
            dst = staging / f.path
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(handle.path(f.path), dst)
        (staging / "manifest.json").write_text(handle.manifest.to_json(), encoding="utf-8")
        if os.path.lexists(target):
            raise VersionExistsError(str(target), str(r))
        os.rename(staging, target)
    except BaseException as exc:
        shutil.rmtree(staging, ignore_errors=True)
        remove_empty(made)
        raise_registry_error(exc, Path(dest))
        raise
    return target
