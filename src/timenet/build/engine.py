"""The build engine: metadata -> download -> convert -> derive_schema -> store.

:func:`run_pipeline` runs one connector into a local registry (any local
directory is one). The version is written through :class:`TimeFWriter`, so
it appears atomically or not at all: any error in any stage removes the
staging directory and publishes nothing.

Reproducibility: the manifest's ``created`` is the connector's fixed
``created`` instant (``$SOURCE_DATE_EPOCH`` overrides it), raw inputs are
pinned by SHA-256, connectors write records in a fixed order and the catalog
starts from a shipped empty database (see :func:`timenet.catalog.write_catalog`),
so two builds produce byte-identical files and manifests.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from timenet.build.connector import Connector
from timenet.build.errors import BuildError, ParentError
from timenet.build.progress import BuildProgress
from timenet.errors import IntegrityError, ManifestError, TimeNetError
from timenet.models import DatasetCard, EffectiveAccess, Manifest
from timenet.registry import LocalRegistry, Registry
from timenet.versions import Ref, parse_ref
from timenet.writer import TimeFWriter, check_writable

__all__ = ["BuildResult", "auto_build", "build", "run_pipeline"]


@dataclass(frozen=True)
class BuildResult:
    """Outcome of one build.

    Attributes
    ----------
    ref : str
        ``org/name@version`` built.
    path : Path
        The committed version directory.
    manifest : Manifest
    built : bool
        False when a complete copy was already there and was reused.
    seconds : float
        Wall time of the build.
    stats : dict of str to int
        The connector's counters (rows dropped, values nulled, ...).
    """

    ref: str
    path: Path
    manifest: Manifest
    built: bool
    seconds: float
    stats: dict[str, int] = field(default_factory=dict)


def _created(connector: Connector) -> str:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch:
        try:
            return datetime.fromtimestamp(int(epoch), UTC).isoformat(timespec="seconds")
        except ValueError as exc:
            raise BuildError(f"SOURCE_DATE_EPOCH={epoch!r} is not an integer") from exc
    return connector.created


def _as_registry(registry: LocalRegistry | str | os.PathLike[str]) -> LocalRegistry:
    if isinstance(registry, LocalRegistry):
        return registry
    text = os.fspath(registry)
    if "://" in text:
        raise BuildError(
            f"builds write to a local registry directory, not {text} "
            "(a URL, file:// included, names a read-only registry: pass the plain path)"
        )
    return LocalRegistry(text)


def run_pipeline(
    connector: Connector | type[Connector],
    registry: LocalRegistry | str | os.PathLike[str],
    *,
    fetch_from: str | os.PathLike[str] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    progress: BuildProgress | None = None,
    parent_sources: Sequence[Registry] = (),
    _building: tuple[str, ...] = (),
) -> BuildResult:
    """Build one dataset version into ``registry``.

    Parameters
    ----------
    connector : Connector or Connector subclass
    registry : LocalRegistry or path
        Local registry (directory) receiving ``<org>/<name>/<version>/``.
    fetch_from : path, optional
        The user's own copies: raw input files, and parent releases (as a
        registry directory).
    cache_dir : path, optional
        Download cache for pinned files.
    progress : BuildProgress, optional
        Default: bars on a terminal, quiet otherwise.
    parent_sources : sequence of Registry
        Further registries (local or remote) to copy a missing parent release
        from, after ``fetch_from`` and before building it (the client's
        ``fetch_from``).

    Returns
    -------
    BuildResult

    Raises
    ------
    BuildError
        From any stage (FetchError, RawInputError, ParentError, ...); nothing
        is published.
    RegistryError
        If ``registry`` cannot be written; checked before any stage runs or prints.
    TimeNetError
        From the writer (SchemaError, UnitError) on content it refuses.
    """
    t0 = time.perf_counter()
    reg = _as_registry(registry)
    conn, prog, own_progress = _configure(connector, fetch_from, cache_dir, progress)
    card = conn.metadata()
    ref = str(card.ref)
    if ref in _building:
        raise BuildError(f"parents form a cycle: {' -> '.join((*_building, ref))}", ref=ref)
    target = reg.version_dir(card.ref)
    if os.path.lexists(target):
        return BuildResult(
            ref, target, _verify_existing(target, ref), False, time.perf_counter() - t0
        )
    check_writable(reg.root, card)  # before a long download and before progress lines
    with prog if own_progress else nullcontext():
        try:
            _prepare_parents(
                conn, card.parents, reg, ref, (fetch_from, parent_sources), cache_dir, _building
            )
            path = _write_version(conn, card, reg)
        except TimeNetError:
            raise
        except Exception as exc:
            raise BuildError(f"{type(exc).__name__}: {exc}", ref=ref) from exc
    manifest = Manifest.from_json((path / "manifest.json").read_bytes())
    return BuildResult(ref, path, manifest, True, time.perf_counter() - t0, dict(conn.stats))


def _configure(
    connector: Connector | type[Connector],
    fetch_from: str | os.PathLike[str] | None,
    cache_dir: str | os.PathLike[str] | None,
    progress: BuildProgress | None,
) -> tuple[Connector, BuildProgress, bool]:
    """The connector instance with the caller's inputs, its progress, and whether this
    build owns (opens and closes) that progress display."""
    conn = connector() if isinstance(connector, type) else connector
    if fetch_from is not None:
        conn.fetch_from = fetch_from
    if cache_dir is not None:
        conn.cache_dir = cache_dir
    own_progress = progress is None and conn.progress.enabled is False
    prog = progress or (BuildProgress() if own_progress else conn.progress)
    conn.progress = prog
    return conn, prog, own_progress


def _verify_existing(target: Path, ref: str) -> Manifest:
    """The manifest of an already committed version, which must verify (versions are immutable)."""
    from timenet.build.inherit import verify_version

    try:
        return verify_version(target)
    except (IntegrityError, ManifestError) as exc:
        raise BuildError(
            f"{target} exists but does not verify ({exc}); versions are immutable: "
            "remove it to rebuild",
            ref=ref,
        ) from exc


def _prepare_parents(
    conn: Connector,
    parents: Sequence[str],
    reg: LocalRegistry,
    ref: str,
    fetch_from: tuple[Any, Sequence[Registry]],
    cache_dir: Any,
    building: tuple[str, ...],
) -> None:
    """Find, copy or build every parent release the card names, into ``conn.parents``."""
    if not parents:
        return
    from timenet.build.inherit import prepare_parent

    own, more = fetch_from
    sources = [*([own] if own is not None else []), *more]
    for parent in parents:
        with conn.progress.stage(f"{ref}: parent {parent}"):
            conn.parents[parent] = prepare_parent(
                parent,
                reg,
                child=ref,
                fetch_from=sources,
                build=lambda p: _build_parent(
                    p, reg, ref, fetch_from, cache_dir, conn.progress, (*building, ref)
                ),
            )


def _write_version(conn: Connector, card: DatasetCard, reg: LocalRegistry) -> Path:
    """Download, convert, derive the schema and commit; the staging is removed on any error."""
    ref = str(card.ref)
    prog = conn.progress
    access = EffectiveAccess.combine(
        ref,
        card.access,
        tuple(p.manifest.effective_access for p in conn.parents.values()),
    )
    with prog.stage(f"{ref}: download"):
        conn.download()
    writer = TimeFWriter(
        reg.root, card, created=_created(conn), raw_inputs=tuple(conn.raw_inputs), access=access
    )
    try:
        with prog.stage(f"{ref}: convert"):
            conn.convert(writer)
        with prog.stage(f"{ref}: derive schema"):
            conn.derive_schema(writer.derived_schema())
        with prog.stage(f"{ref}: store"):
            return writer.commit()
    except BaseException:
        writer.abort()
        raise


def _build_parent(
    parent: str,
    reg: LocalRegistry,
    child: str,
    fetch_from: tuple[Any, Sequence[Registry]],
    cache_dir: Any,
    progress: BuildProgress,
    building: tuple[str, ...],
) -> Path:
    from timenet.build.discovery import resolve

    p = parse_ref(parent)
    try:
        cls = resolve(f"{p.org}/{p.name}")
    except TimeNetError as exc:
        raise ParentError(child, parent, f"not available locally and {exc}") from exc
    conn = cls(progress=progress)
    have = conn.metadata().version
    if have != p.version:
        raise ParentError(
            child, parent, f"the installed connector builds version {have}, not {p.version}"
        )
    return run_pipeline(
        conn,
        reg,
        fetch_from=fetch_from[0],
        cache_dir=cache_dir,
        progress=progress,
        parent_sources=fetch_from[1],
        _building=building,
    ).path


def build(
    ref: str,
    registry: LocalRegistry | str | os.PathLike[str],
    *,
    fetch_from: str | os.PathLike[str] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    progress: BuildProgress | None = None,
) -> BuildResult:
    """Find the connector of ``org/name[@version]`` and run it into ``registry``.

    Raises
    ------
    ConnectorNotFoundError
        If no connector is installed for it.
    BuildError
        If ``ref`` pins a version the connector does not build, or a stage fails.
    """
    from timenet.build.discovery import resolve

    r = parse_ref(ref)
    conn = resolve(ref)(progress=progress)
    have = conn.metadata().version
    if r.version is not None and r.version != have:
        raise BuildError(f"the installed connector builds version {have}", ref=str(r))
    return run_pipeline(
        conn, registry, fetch_from=fetch_from, cache_dir=cache_dir, progress=progress
    )


def auto_build(ref: Ref, registry: LocalRegistry, *, fetch_from: Sequence[Registry] = ()) -> bool:
    """The client's default ``auto_build`` builder.

    Builds ``ref`` into ``registry`` when an installed connector provides it
    (and, if ``ref`` pins a version, builds exactly that version). Returns
    False, doing nothing, otherwise. A missing parent release is copied from
    the first of ``fetch_from`` (the client's registries to fetch from) that
    holds it before it would be built.
    """
    from timenet.build.discovery import resolve
    from timenet.build.errors import ConnectorNotFoundError

    try:
        cls = resolve(f"{ref.org}/{ref.name}")
    except ConnectorNotFoundError:
        return False
    conn = cls()
    if ref.version is not None and conn.metadata().version != ref.version:
        return False
    run_pipeline(conn, registry, parent_sources=fetch_from)
    return True
