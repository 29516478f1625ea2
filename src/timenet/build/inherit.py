"""Dataset inheritance on the build side: prepare parent releases, import from them.

Before a child's connector runs, :func:`prepare_parent` makes each parent
release (``org/name@version`` from the child's card) available in the target
registry, in this order of preference:

1. a complete local copy already there (every file is re-hashed against its
   manifest; a copy that no longer verifies stops the build);
2. a copy from ``fetch_from`` (registries: a directory, or a remote URL such
   as ``s3://bucket/prefix``, or the client's ``fetch_from`` registries),
   verified while copying;
3. a build from the installed connector of that dataset.

The child's connector then imports through :class:`ParentRelease`: records,
signals, annotations and tasks are copied into the child's catalog under the
child's ids, the parent-to-child id map is kept (``lineage`` table), and every
signal keeps reading its values from the parent's files, pinned in the child's
manifest by path, size and SHA-256.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from timenet._integrity import verify_file
from timenet.build.errors import ParentError
from timenet.errors import IntegrityError, ManifestError, TimeNetError
from timenet.models import FileEntry, Manifest
from timenet.payloads import payload_entries, split_payload_path
from timenet.reader import TimeFReader
from timenet.registry import LocalRegistry, Registry, as_registry
from timenet.versions import parse_ref
from timenet.writer import TimeFWriter

__all__ = ["ParentRelease", "prepare_parent", "verify_version"]


def verify_version(version_dir: Path) -> Manifest:
    """Hash every file of a committed version against its manifest.

    Raises
    ------
    ManifestError, IntegrityError
        On a missing/invalid manifest or any file mismatch.
    """
    from timenet._integrity import read_local_manifest

    manifest = read_local_manifest(version_dir)
    for f in manifest.files:
        verify_file(version_dir / f.path, f)
    return manifest


@dataclass
class _Copy:
    """What one writer already holds of one parent record (the ID map, per record)."""

    child: str
    signals: set[str] = field(default_factory=set)
    notes: set[int] = field(default_factory=set)
    tasks: set[int] = field(default_factory=set)


class ParentRelease:
    """A prepared parent release, read at build time (catalog included).

    Attributes
    ----------
    ref : str
        ``org/name@version``.
    reader : TimeFReader
        Verified reader of the release.
    """

    def __init__(self, ref: str, reader: TimeFReader) -> None:
        self.ref = ref
        self.reader = reader
        self.manifest: Manifest = reader.manifest
        self._pins = payload_entries(self.manifest)
        self._by_record: dict[str, tuple[list[Any], list[Any]]] | None = None
        self._copies: weakref.WeakKeyDictionary[TimeFWriter, dict[str, _Copy]] = (
            weakref.WeakKeyDictionary()
        )

    def _extras(self, record_id: str) -> tuple[list[Any], list[Any]]:
        """Annotations and tasks of one record (all read with two queries, then grouped)."""
        if self._by_record is None:
            grouped: dict[str, tuple[list[Any], list[Any]]] = {}
            for a in self.reader.annotations():
                grouped.setdefault(a.record_id, ([], []))[0].append(a)
            for t in self.reader.tasks():
                grouped.setdefault(t.record_id, ([], []))[1].append(t)
            self._by_record = grouped
        return self._by_record.get(record_id, ([], []))

    def _resolve(self, file: str) -> tuple[str, str, list[FileEntry]]:
        """(release, path inside it, pinned entries) of a catalog file of this parent."""
        split = split_payload_path(file)
        if split is not None:
            # the parent itself reads this from its own parent: link the origin directly
            ref, rel = split
            prefix = file
            pins = [
                FileEntry(path=split_payload_path(p)[1], size=e.size, sha256=e.sha256)  # type: ignore[index]
                for p, e in self._pins.items()
                if p == prefix or p.startswith(prefix + "/")
            ]
            return ref, rel, pins
        pins = [f for f in self.manifest.files if f.path == file or f.path.startswith(file + "/")]
        return self.ref, file, pins

    def import_record(
        self,
        writer: TimeFWriter,
        record_id: str,
        *,
        as_id: str | None = None,
        signals: Iterable[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        annotations: bool = True,
        tasks: bool = True,
    ) -> str:
        """Copy one record (and its signals, annotations, tasks) into the child.

        Importing a record that this writer already holds reuses the copy (the
        ID map): only signals, annotations and tasks it lacks are added, and
        its id is returned.

        Parameters
        ----------
        writer : TimeFWriter
            The child's writer.
        record_id : str
            Id in the parent.
        as_id : str, optional
            Id of the copy in the child (default: ``record_id``).
        signals : iterable of str, optional
            Signal names to import (default: all). Values are not copied.
        metadata : mapping, optional
            Metadata of the copy (default: the parent record's).
        annotations, tasks : bool
            Also import the record's annotations and tasks.

        Returns
        -------
        str
            The child's record id.

        Raises
        ------
        RecordNotFoundError, SignalNotFoundError
            If the parent lacks the record or a requested signal.
        ParentError
            If the record is already imported under another id than ``as_id``.
        """
        from timenet.errors import SignalNotFoundError

        reader = self.reader
        rec = reader.record(record_id)
        copies = self._copies.setdefault(writer, {})
        copy = copies.get(rec.id)
        if copy is None:
            child = as_id if as_id is not None else record_id
            writer.add_record(child, dict(rec.metadata) if metadata is None else metadata)
            writer.add_lineage("record", self.ref, rec.id, child)
            copy = copies[rec.id] = _Copy(child)
        elif as_id is not None and as_id != copy.child:
            raise ParentError(
                str(writer.card.ref),
                self.ref,
                f"record {rec.id!r} is already imported as {copy.child!r}, not {as_id!r}",
            )
        rows = reader._catalog.signal_rows(rec.index)
        names = list(rows) if signals is None else list(signals)
        for name in names:
            if name not in rows:
                raise SignalNotFoundError(record_id, name)
            if name not in copy.signals:
                self._link(writer, copy.child, rows[name])
                copy.signals.add(name)
        record_annotations, record_tasks = self._extras(rec.id)
        if annotations:
            for a in record_annotations:
                if (a.signal is not None and a.signal not in copy.signals) or a.id in copy.notes:
                    continue
                aid = writer.add_annotation(
                    copy.child, a.content, start_ns=a.start_ns, stop_ns=a.stop_ns, signal=a.signal
                )
                writer.add_lineage("annotation", self.ref, str(a.id), str(aid))
                copy.notes.add(a.id)
        if tasks:
            for t in record_tasks:
                if t.id in copy.tasks:
                    continue
                tid = writer.add_task(copy.child, t.name, t.content)
                writer.add_lineage("task", self.ref, str(t.id), str(tid))
                copy.tasks.add(t.id)
        return copy.child

    def _link(self, writer: TimeFWriter, child: str, row: Any) -> None:
        """Link one parent signal instance into record ``child`` (values stay in the parent)."""
        ref, rel, pins = self._resolve(row.file)
        times_rel = None
        if row.times_file is not None:
            tref, times_rel, tpins = self._resolve(row.times_file)
            if tref != ref:  # pragma: no cover - the writer keeps them together
                raise TimeNetError(f"values and times of {row.name!r} live in different releases")
            pins = pins + tpins
        writer.link_signal(
            child,
            row.name,
            row.spec,
            payload=ref,
            file=rel,
            storage="zarr" if row.storage == "zarr" else "parquet",
            row_offset=row.row_offset,
            length=row.length,
            pins=pins,
            null_count=row.null_count,
            times_file=times_rel,
            times_offset=row.times_offset,
        )

    def import_records(
        self,
        writer: TimeFWriter,
        record_ids: Sequence[str] | None = None,
        *,
        as_id: Callable[[str], str] | None = None,
        **options: Any,
    ) -> list[str]:
        """Import several records in the parent's storage order (the child's read order).

        Reading the child front to back then walks the parent's value files
        front to back.
        """
        reader = self.reader
        ids = [r.id for r in reader.records()] if record_ids is None else list(record_ids)
        ids.sort(key=lambda rid: reader.record(rid).index)
        return [
            self.import_record(writer, rid, as_id=None if as_id is None else as_id(rid), **options)
            for rid in ids
        ]


def _sources(fetch_from: Any) -> list[Registry]:
    """Registries named by ``fetch_from``: a directory, URL, Registry, or a sequence of them."""
    if fetch_from is None:
        return []
    if isinstance(fetch_from, str | os.PathLike | Registry):
        fetch_from = [fetch_from]
    out: list[Registry] = []
    for item in fetch_from:
        if isinstance(item, Registry):
            out.append(item)
            continue
        text = os.fspath(item)
        if "://" in text and not text.startswith("file://"):
            out.append(as_registry(text))
        elif os.path.isdir(text.removeprefix("file://")):  # else a raw-input file, not a registry
            out.append(LocalRegistry(text.removeprefix("file://")))
    return out


def prepare_parent(
    parent: str,
    registry: LocalRegistry,
    *,
    child: str,
    fetch_from: Any = None,
    build: Callable[[str], Path] | None = None,
) -> ParentRelease:
    """Make a parent release available in ``registry`` and open it.

    Parameters
    ----------
    parent : str
        ``org/name@version``.
    registry : LocalRegistry
        Where the child is built; the parent lands here too.
    child : str
        The child's reference (for messages).
    fetch_from : path, URL, Registry or a sequence of them, optional
        Registries (local directories or remote URLs) that may hold the
        release; the first that does is copied from, verified.
    build : callable, optional
        ``build(parent) -> version dir`` for a release found nowhere.

    Raises
    ------
    ParentError
        If a local copy does not verify, or the release can be neither copied
        nor built.
    """
    ref = parse_ref(parent)
    vdir = registry.version_dir(ref)
    source = None
    if not os.path.lexists(vdir):
        source = next((r for r in _sources(fetch_from) if r.has(ref)), None)
    if os.path.lexists(vdir):
        try:
            verify_version(vdir)
        except (IntegrityError, ManifestError) as exc:
            raise ParentError(
                child, parent, f"the local copy at {vdir} is not complete or changed: {exc}"
            ) from exc
    elif source is not None:
        from timenet.client import copy_version

        try:
            copy_version(source.open_version(ref, verify=True), registry.root)
        except TimeNetError as exc:
            raise ParentError(child, parent, f"cannot copy it from {source.url}: {exc}") from exc
    elif build is not None:
        build(parent)
    else:
        raise ParentError(child, parent, f"not in {registry.url} and no way to build it")
    reader = TimeFReader.open(vdir, registries=[registry])
    return ParentRelease(parent, reader)
