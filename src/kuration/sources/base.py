"""InputAdapter: the input seam, and the adapter registry."""

from __future__ import annotations

import hashlib
import os
import posixpath
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, ClassVar

from ..contracts.schema import SchemaSpec
from ..contracts.tick import Tick, TickTable, table_from_ticks
from ..core.jsonio import sha256_file
from ..core.registry import Registry
from ..core.remote import is_url, remote_identity
from ..core.traits import ExecutionTraits, register_with_traits
from ..errors import JobError, SourceChangedError, SourceError
from .identity import SHARED_FILES, SourceDigest, check_digest, parts_fingerprint

__all__ = [
    "SOURCE_READER_TRAITS",
    "InputAdapter",
    "adapter_from_dict",
    "file_source_id",
    "folder_source_ids",
    "get_adapter",
    "register_adapter",
    "registered_adapters",
]

_ADAPTERS: Registry[Callable[..., InputAdapter]] = Registry("adapter", builtin="adapter")


class InputAdapter(ABC):
    """Turns one raw source (a URI) into the canonical tick stream.

    Subclasses implement :meth:`ticks`.  :meth:`read_table` has a generic
    implementation over ``ticks``; adapters that can lay out columns directly
    override it for speed.  ``to_dict``/``adapter_from_dict`` rebuild an
    adapter by registered name in worker processes.

    Capabilities, declared on the class (the planner and the job loader read them, never
    an adapter's name):

    * ``streams``: sources are read lazily, batch by batch (``kuration.sources.stream.TickStream``),
      so ``streaming=True`` and the entity count of the memory estimate can use them;
    * ``sources_are_files``: each source is a local path or URL that must exist before the
      run; False for an adapter whose sources are its own identifiers (checked by it).

    An adapter class may also define ``complete_schema(schema, options, sources) -> dict``,
    a static method a job file's schema passes through before the adapter is built
    (TimeNet fills units from its catalog).
    """

    name: ClassVar[str] = ""
    streams: ClassVar[bool] = False
    sources_are_files: ClassVar[bool] = True

    def __init__(self, schema: SchemaSpec) -> None:
        self.schema = schema

    @abstractmethod
    def ticks(self, uri: str) -> Iterable[Tick]:
        """Yield the source's ticks in time order.

        Raises
        ------
        SourceError
            On malformed input, naming the source and row.
        """

    def read_table(self, uri: str) -> TickTable:
        """The source as a :class:`TickTable` (generic: built from :meth:`ticks`)."""
        return table_from_ticks(self.schema, self.ticks(uri), source_id=self.source_id(uri))

    def read_entities(self, uri: str, entity_ids: Iterable[Any]) -> TickTable:
        """The source as a :class:`TickTable` holding at least ``entity_ids``.

        For writers that need a few entities of a source: an adapter may lay
        out only those (with the whole source's ``k0``, ticks, globals and
        events, and the same checks as :meth:`read_table`); by default it is
        :meth:`read_table`.  Callers look entities up by id, never by position.
        """
        return self.read_table(uri)

    def read_checked(
        self,
        uri: str,
        *,
        entities: Iterable[Any] | None = None,
        expect: SourceDigest | None = None,
    ) -> tuple[TickTable, SourceDigest]:
        """Decode the source (all of it, or as :meth:`read_entities` with ``entities``) and
        prove which bytes were decoded: every read a run makes goes through here.

        This generic version fingerprints the source before and after the decode (an
        adapter that can hash the buffer it parses overrides it, as the built-in
        ``timeseries`` adapter does, and reads the bytes once).

        Parameters
        ----------
        expect : SourceDigest, optional
            The run's record of the source (from its first read); the read must find it.

        Returns
        -------
        (TickTable, SourceDigest)

        Raises
        ------
        SourceChangedError
            The source is not what ``expect`` names, or it changed during the decode.
        SourceError
            As :meth:`read_table`.
        """
        sid = self.source_id(uri)
        try:
            before = SourceDigest(self.fingerprint(uri))
        except (SourceError, FileNotFoundError) as exc:
            if expect is None or not expect.fingerprint or is_url(uri) or os.path.exists(uri):
                raise
            raise SourceChangedError(  # gone since the run read it
                source=str(uri), source_id=sid, expected=expect.fingerprint, actual=""
            ) from exc
        check_digest(uri, sid, expect, before)
        table = self.read_table(uri) if entities is None else self.read_entities(uri, entities)
        after = SourceDigest(self.fingerprint(uri))
        check_digest(uri, sid, before, after)
        local = before.fingerprint if not is_url(uri) else ""
        return table, SourceDigest(before.fingerprint, local)

    def file_parts(self, uri: str) -> Sequence[tuple[str, int, int]] | None:
        """For sources that are row ranges of files shared with other sources: the
        ``(file path, first row, stop row)`` parts ``uri`` is decoded from; None (the
        default) for a source that owns its file.

        With parts, :meth:`fingerprint` hashes each shared file once per run and process
        (:data:`~kuration.sources.identity.SHARED_FILES`, keyed by the file's stat so a
        file rewritten in place is hashed again) and covers the row ranges, instead of
        hashing a large file for every source cut from it.
        """
        return None

    #: ids assigned to the sources of the current run (see :meth:`assign_source_ids`)
    _source_ids: Mapping[str, str] | None = None
    #: ids the job named itself (``sources: {"named": {id: path}}``)
    _named_ids: Mapping[str, str] | None = None

    def expand(self, uri: str) -> list[str]:
        """The sources a listed ``uri`` stands for (default: itself).

        An adapter over a container of many sources (a LeRobot dataset folder:
        one source per episode) lists them here; the job's source list is
        expanded before anything is read.
        """
        return [uri]

    def source_id(self, uri: str) -> str:
        """A stable id for the source: the one :meth:`assign_source_ids` gave it, else
        :func:`file_source_id` (the file's name without its format suffix)."""
        ids = self._source_ids
        if ids is not None and uri in ids:
            return ids[uri]
        return file_source_id(uri)

    def _own_ids(self) -> bool:
        """Whether a subclass derives ids itself (overrides :meth:`source_id`)."""
        return type(self).source_id is not InputAdapter.source_id

    def name_sources(self, named: Mapping[str, str]) -> None:
        """Use the ids a job names (``uri -> id``) for those sources.

        Raises
        ------
        JobError
            The adapter derives ids itself (TimeNet records, curated datasets).
        """
        if self._own_ids():
            raise JobError(
                f"sources: the {self.name or type(self).__name__} adapter names its sources "
                "itself; list them instead of naming them",
                path="sources",
            )
        self._named_ids = dict(named)

    def assign_source_ids(self, uris: Sequence[str]) -> dict[str, str]:
        """Give every source of a run its id, and check that no two share one, before any
        source is read.

        Ids are the ones the job named (:meth:`name_sources`) when it named every one of
        ``uris``; else, for file sources, :func:`folder_source_ids` (the path relative to
        the sources' common folder, format suffix removed); an adapter that overrides
        :meth:`source_id` keeps its own ids.

        Returns
        -------
        dict
            ``uri -> source id``, in the order of ``uris``.

        Raises
        ------
        SourceError
            Two sources would share an id (naming both).
        """
        named = self._named_ids or {}
        if uris and all(u in named for u in uris):
            ids = {u: named[u] for u in uris}
        elif self._own_ids():
            ids = {u: self.source_id(u) for u in uris}
        else:
            ids = folder_source_ids(uris)
        seen: dict[str, str] = {}
        for uri, sid in ids.items():
            if sid in seen:
                raise SourceError(
                    f"two sources would share the id {sid!r} ({seen[sid]}, {uri}); rename one, "
                    'or name them in the job (sources: {"named": {id: path}})',
                    source=uri,
                )
            seen[sid] = uri
        if not self._own_ids():
            self._source_ids = ids
        return ids

    def source_id_map(self) -> dict[str, str] | None:
        """The ids assigned to this run's sources (for worker processes), if any."""
        return None if self._source_ids is None else dict(self._source_ids)

    def use_source_ids(self, ids: Mapping[str, str] | None) -> None:
        """Take ids assigned in another process (:meth:`source_id_map`) as they are."""
        if ids is not None:
            self._source_ids = dict(ids)

    def fingerprint(self, uri: str) -> str:
        """Content identity of the source: SHA-256 of the file bytes for local files; the
        object version or ETag (``version:...``/``etag:...``) for a remote URL, ``""`` when
        the backend reports neither (a name alone never authorizes reuse).

        A local directory (a partitioned dataset) is identified by its files: see
        :func:`tree_sha256`.

        Raises
        ------
        SourceError
            A local source that cannot be read, or a directory holding a symbolic link.
        """
        if is_url(uri):
            return remote_identity(str(uri))
        try:
            parts = self.file_parts(uri)
            if parts is not None:
                return parts_fingerprint(parts, SHARED_FILES)
            return tree_sha256(str(uri)) if os.path.isdir(uri) else sha256_file(uri)
        except OSError as exc:
            raise SourceError(f"cannot read: {exc.strerror or exc}", source=str(uri)) from exc

    def options(self) -> dict[str, Any]:
        """Constructor options other than the schema, JSON-ready."""
        return {}

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.name, **self.options()}


def tree_sha256(root: str) -> str:
    """Hex SHA-256 identifying a directory source by its files: each file's path relative to
    ``root`` and the SHA-256 of its bytes, in sorted path order (renaming, adding or editing
    a file changes it).

    Raises
    ------
    SourceError
        A symbolic link inside ``root`` (links are not read, as at the top level).
    OSError
        A file cannot be read.
    """
    paths: list[str] = []
    for here, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            full = os.path.join(here, name)
            if os.path.islink(full):
                raise SourceError(f"refusing to read the symbolic link {full}", source=root)
            if name in files:
                paths.append(os.path.relpath(full, root))
    h = hashlib.sha256()
    for rel in sorted(paths):
        h.update(f"{rel}\0{sha256_file(os.path.join(root, rel))}\n".encode())
    return h.hexdigest()


#: Execution traits of every built-in adapter: a source-scoped reader that yields one
#: source's ticks at a time (one source resident; media stay lazy references), fusible
#: with segmentation and window metrics -- what the planner assumes for the read stage.
SOURCE_READER_TRAITS: Mapping[str, Any] = MappingProxyType(
    {"scope": "source", "shape": "source", "fusion": "fusible", "state": "bounded"}
)


def register_adapter(
    name: str,
    factory: Callable[..., InputAdapter],
    *,
    clobber: bool = False,
    execution_traits: ExecutionTraits | Mapping[str, Any] | None = None,
) -> None:
    """Register an adapter factory ``factory(schema, **options)`` under ``name``.

    ``execution_traits`` (see :mod:`kuration.core.traits`) tell
    :meth:`kuration.Pipeline.explain` how the adapter reads a source; without them
    it is planned as a bounded, fusible source reader and the plan warns.

    Raises
    ------
    RegistrationError
        ``name`` is taken and ``clobber`` is false.
    ExecutionTraitsError
        Invalid ``execution_traits`` (nothing is registered).
    """
    register_with_traits(
        _ADAPTERS, "adapter", name, factory, clobber=clobber, execution_traits=execution_traits
    )


def get_adapter(name: str) -> Callable[..., InputAdapter]:
    """The adapter factory registered as ``name`` (raises ``UnknownNameError``)."""
    return _ADAPTERS.get(name)


def registered_adapters() -> tuple[str, ...]:
    return _ADAPTERS.names()


#: Compression suffixes removed from a source's name along with the format suffix before
#: them (``x.csv.gz`` -> ``x``).
COMPRESSION_SUFFIXES = (".gz", ".bz2", ".xz", ".zst", ".zstd", ".lz4", ".br", ".snappy")


def _strip_suffix(name: str) -> str:
    """``name`` without its last suffix -- and a compression suffix before that one."""
    stem = name
    for c in COMPRESSION_SUFFIXES:
        if stem.lower().endswith(c) and len(stem) > len(c):
            stem = stem[: -len(c)]
            break
    root, _ext = posixpath.splitext(stem)
    return root or name


def _path_part(uri: str) -> str:
    """The path of a local file (absolute) or of a URL (after ``scheme://``)."""
    if is_url(uri):
        return str(uri).split("://", 1)[1].rstrip("/")
    return os.path.abspath(str(uri)).replace(os.sep, "/").rstrip("/")


def file_source_id(uri: str) -> str:
    """The id of a file source on its own: its base name without the format suffix
    (``run.2024.01.csv`` -> ``run.2024.01``, ``x.csv.gz`` -> ``x``, ``trips/`` -> ``trips``)."""
    base = posixpath.basename(_path_part(uri))
    return _strip_suffix(base) if base else str(uri)


def folder_source_ids(uris: Sequence[str]) -> dict[str, str]:
    """Ids of file sources read together: each one's path relative to the sources'
    common folder, its format suffix removed (``2024-01-01/flights.csv`` ->
    ``2024-01-01/flights``).  Sources of one folder get :func:`file_source_id`;
    URLs of different schemes or hosts fall back to it too.

    Returns
    -------
    dict
        ``uri -> id``, in the order of ``uris``.
    """
    uris = list(uris)
    if len(uris) <= 1:
        return {u: file_source_id(u) for u in uris}
    schemes = {str(u).split("://", 1)[0] if is_url(u) else "" for u in uris}
    paths = {u: _path_part(u) for u in uris}
    try:
        common = posixpath.commonpath([posixpath.dirname(p) or "/" for p in paths.values()])
    except ValueError:  # relative and absolute parts mixed
        common = None
    if len(schemes) != 1 or common is None:
        return {u: file_source_id(u) for u in uris}
    out = {}
    for u, p in paths.items():
        rel = posixpath.relpath(p, common) if common not in ("", "/") else p.lstrip("/")
        head, base = posixpath.split(rel)
        sid = _strip_suffix(base) if base else rel
        out[u] = posixpath.join(head, sid) if head else sid
    return out


def adapter_from_dict(
    d: Mapping[str, Any], schema: SchemaSpec, source_ids: Mapping[str, str] | None = None
) -> InputAdapter:
    """Build an adapter from ``{"type": name, **options}`` (with the ids assigned to a
    run's sources in another process, ``source_ids``).

    Raises
    ------
    JobError
        Without a ``type`` string.
    UnknownNameError
        No adapter is registered under ``type`` (names the close matches).
    """
    opts = dict(d)
    name = opts.pop("type", None)
    if not isinstance(name, str) or not name:
        raise JobError(
            f"adapter: 'type' must name a registered adapter, got {name!r}", path="adapter.type"
        )
    adapter = get_adapter(str(name))(schema, **opts)
    adapter.use_source_ids(source_ids)
    return adapter
