"""StageCheckpoint: partitioned, checksummed Arrow IPC checkpoints of one plan stage.

Layout, under a checkpoint root::

    <root>/<run fingerprint>/<stage>/
        <part>.<attempt>.arrow        one attempt's Arrow IPC file (never overwritten)
        <part>.commit.json            the partition commit: which attempt, its SHA-256
        _stage.commit.json            the stage commit, published last

* The *run fingerprint* (:func:`key_digest` of the run key: logical plan,
  physical plan, schema, components and parameters) names the namespace, so
  a run never overwrites another run's checkpoints.
* A partition is encoded in memory, read back and checked there (schema, row
  count), hashed (SHA-256 of those bytes) and written to an attempt-specific
  file (a fresh uuid); only then is its commit published, atomically, with
  :func:`os.replace` of a small JSON file.  A writer killed at any point leaves
  either no commit or the previous one; stray attempt files are never read.
* Durability is the stage commit's: partitions are not fsynced one by one (two
  ``fsync`` calls a source were a third of the disk pool's score step);
  :meth:`StageCheckpoint.commit_stage` makes every partition file and commit
  durable at once (:func:`~kuration.output.commit.make_durable`: one ``syncfs``
  where it covers them) before it publishes.  A partition commit that outlived
  a power loss without its bytes fails :meth:`StageCheckpoint.lookup`'s
  SHA-256 and is rebuilt, as a corrupt one is.
* A partition commit carries its *partition key* (the digest of the run
  fingerprint, the stage, the partition name and its inputs' identity, such
  as a source fingerprint).  :meth:`StageCheckpoint.lookup` reuses a
  partition only when the key matches and the file's SHA-256 equals the
  committed one; a corrupted or foreign file is a miss, counted in
  ``rejected``, and is rebuilt.  A rebuilt partition's replaced file is removed
  once the new commit is published; attempt files no commit names (killed
  writers') are swept when the stage commit is published.
* :meth:`StageCheckpoint.commit_stage` publishes the stage commit only after
  every expected partition verifies, else raises
  :class:`~kuration.errors.DatasetIntegrityError`.
* A :class:`StageCheckpoint` pickles as its namespace (root, run fingerprint,
  stage), with fresh counters: a worker process writes partitions into the
  lead's namespace, and the lead counts what it wrote
  (:meth:`StageCheckpoint.count_written`).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc

from ...errors import DatasetIntegrityError
from ...output.commit import make_durable

__all__ = ["PartitionCommit", "StageCheckpoint", "key_digest"]

_FORMAT = "kuration-checkpoint/1"
_CHUNK = 1 << 20


def key_digest(doc: Any) -> str:
    """SHA-256 (hex) of ``doc`` as canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _file_sha256(path: Path) -> tuple[str, int]:
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
            size += len(chunk)
    return h.hexdigest(), size


def _publish_json(path: Path, doc: Mapping[str, Any], *, fsync: bool = True) -> float:
    """Write ``doc`` next to ``path`` (fsynced when ``fsync``), then move it into place
    atomically; returns the seconds the fsync took.  Compact JSON: the C encoder (an
    ``indent`` falls back to Python's, 1.3 ms for a quickstart source's record)."""
    data = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    waited = _write_new(tmp, data, fsync=fsync)
    os.replace(tmp, path)
    return waited


def _write_new(path: Path, data: Any, *, fsync: bool = False) -> float:
    """Create ``path`` (it must not exist) holding the bytes of ``data`` (a buffer); returns
    the seconds an ``fsync`` took (0.0 without)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        view = memoryview(data).cast("B")
        while view:
            view = view[os.write(fd, view) :]
        if not fsync:
            return 0.0
        t0 = time.perf_counter()
        os.fsync(fd)
        return time.perf_counter() - t0
    finally:
        os.close(fd)


@dataclass(frozen=True, slots=True)  # one per source, tens of thousands in a large run
class PartitionCommit:
    """A published partition: ``name``, ``key``, its attempt ``file`` (name within the stage
    directory), ``sha256``, ``bytes``, ``rows`` and caller ``meta``."""

    name: str
    key: str
    file: str
    sha256: str
    bytes: int
    rows: int
    meta: Mapping[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": _FORMAT,
            "name": self.name,
            "key": self.key,
            "file": self.file,
            "sha256": self.sha256,
            "bytes": self.bytes,
            "rows": self.rows,
            "meta": dict(self.meta),
        }


class StageCheckpoint:
    """The checkpoints of one stage of one run (see the module docs).

    Parameters
    ----------
    root : path
        The checkpoint root (shared by runs; each gets its own namespace).
    run_key : mapping
        JSON-ready identity of the run: logical and physical plan, schema,
        components and parameters.  Its digest names the namespace.
    stage : str
        The stage's name (a directory name).

    Attributes
    ----------
    hits, misses, rejected : int
        Partitions reused, not found (or stale), and found but rejected (corrupt).
    bytes_read, bytes_written : int
        Checkpoint bytes read back for reuse and written.
    fsync_s : float
        Seconds this object waited for durability (the stage commit's sync and fsync).
    """

    def __init__(self, root: str | os.PathLike[str], run_key: Mapping[str, Any], stage: str):
        self._open(Path(root), key_digest(run_key), stage)

    def _open(self, root: Path, run_fingerprint: str, stage: str) -> None:
        self.root = root
        self.run_fingerprint = run_fingerprint
        self.stage = stage
        self.dir = root / run_fingerprint / stage
        self.dir.mkdir(parents=True, exist_ok=True)
        self.hits = self.misses = self.rejected = 0
        self.bytes_read = self.bytes_written = 0
        self.fsync_s = 0.0

    @classmethod
    def reopen(
        cls, root: str | os.PathLike[str], run_fingerprint: str, stage: str
    ) -> StageCheckpoint:
        """The checkpoints of ``stage`` in the namespace ``run_fingerprint`` (a
        :attr:`run_fingerprint` already computed), with fresh counters."""
        ck = cls.__new__(cls)
        ck._open(Path(root), run_fingerprint, stage)
        return ck

    def __reduce__(self) -> tuple[Any, tuple[str, str, str]]:
        """Pickled as its namespace: a copy in a worker writes where this one does and
        counts only its own work."""
        return (StageCheckpoint.reopen, (str(self.root), self.run_fingerprint, self.stage))

    def count_written(self, commit: PartitionCommit) -> None:
        """Count a partition that a copy of this checkpoint wrote in another process."""
        self.bytes_written += commit.bytes

    # ---- keys and paths --------------------------------------------------------------------

    def partition_key(self, name: str, inputs: Mapping[str, Any]) -> str:
        """The key a partition's commit must carry to be reused: run, stage, name, inputs."""
        return key_digest([self.run_fingerprint, self.stage, name, dict(inputs)])

    def _stem(self, name: str) -> str:
        return "p-" + hashlib.sha256(name.encode()).hexdigest()[:24]

    def _commit_path(self, name: str) -> Path:
        return self.dir / f"{self._stem(name)}.commit.json"

    # ---- partitions ------------------------------------------------------------------------

    def _load_commit(self, name: str) -> PartitionCommit | None:
        path = self._commit_path(name)
        try:
            d = json.loads(path.read_text(encoding="utf-8"))
            if d.get("format") != _FORMAT or d.get("name") != name:
                return None
            return PartitionCommit(
                d["name"], d["key"], d["file"], d["sha256"], d["bytes"], d["rows"], d["meta"]
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def committed(self, name: str) -> PartitionCommit | None:
        """The published commit of partition ``name`` as it is on disk now (its file not
        verified: :meth:`lookup` does that), or None."""
        return self._load_commit(name)

    def _verified(self, c: PartitionCommit) -> bool:
        path = self.dir / c.file
        try:
            digest, size = _file_sha256(path)
        except OSError:
            return False
        return digest == c.sha256 and size == c.bytes

    def lookup(self, name: str, key: str) -> PartitionCommit | None:
        """The committed partition ``name`` when its key is ``key`` and its file verifies;
        else None (counted as a miss, and as rejected when a file failed its checksum)."""
        c = self._load_commit(name)
        if c is None or c.key != key:
            self.misses += 1
            return None
        if not self._verified(c):
            self.misses += 1
            self.rejected += 1
            return None
        self.hits += 1
        self.bytes_read += c.bytes
        return c

    def write(
        self,
        name: str,
        key: str,
        schema: pa.Schema,
        batches: Iterable[pa.RecordBatch],
        meta: Mapping[str, Any] | None = None,
    ) -> PartitionCommit:
        """Encode ``batches``, check and hash the encoded bytes, write them to a fresh attempt
        file and publish its commit (not fsynced: :meth:`commit_stage` makes the stage
        durable).

        Raises
        ------
        DatasetIntegrityError
            The encoded file does not read back with ``schema`` and its row count.
        """
        attempt = f"{self._stem(name)}.{uuid.uuid4().hex}.arrow"
        sink = pa.BufferOutputStream()
        rows = 0
        with ipc.new_file(sink, schema) as writer:
            for b in batches:
                writer.write_batch(b)
                rows += b.num_rows
        data = sink.getvalue()
        back = ipc.open_file(data)
        if (
            not back.schema.equals(schema)
            or sum(back.get_batch(i).num_rows for i in range(back.num_record_batches)) != rows
        ):
            raise DatasetIntegrityError(
                f"checkpoint {self.stage}/{name}: " + "written file does not read back"
            )
        digest = hashlib.sha256(data).hexdigest()
        _write_new(self.dir / attempt, data)
        commit = PartitionCommit(name, key, attempt, digest, data.size, rows, dict(meta or {}))
        replaced = self._load_commit(name)
        _publish_json(self._commit_path(name), commit.to_dict(), fsync=False)
        self.bytes_written += data.size
        if replaced is not None and replaced.file != attempt:
            (self.dir / replaced.file).unlink(missing_ok=True)
        return commit

    def _sweep(self, kept: Mapping[str, str]) -> None:
        """Remove the attempt files of the partitions in ``kept`` (name -> committed file)
        that their commit does not name: killed writers' (replaced ones go at once).  One
        listing of the stage directory for the whole stage, not one per partition."""
        committed = {self._stem(name): file for name, file in kept.items()}
        with os.scandir(self.dir) as entries:
            for entry in entries:
                stem, _, rest = entry.name.partition(".")
                if rest.endswith(".arrow") and committed.get(stem, entry.name) != entry.name:
                    Path(entry.path).unlink(missing_ok=True)

    def read(self, commit: PartitionCommit) -> Iterator[pa.RecordBatch]:
        """The partition's batches, after checking the file against its commit.

        Raises
        ------
        DatasetIntegrityError
            The file is missing or fails its SHA-256.
        """
        if not self._verified(commit):
            raise DatasetIntegrityError(
                f"checkpoint {self.stage}/{commit.name}: " + "file fails its SHA-256"
            )
        with pa.memory_map(str(self.dir / commit.file)) as src:
            r = ipc.open_file(src)
            for i in range(r.num_record_batches):
                yield r.get_batch(i)

    # ---- the stage -------------------------------------------------------------------------

    def commit_stage(self, expected: Mapping[str, str], *, durable: bool = True) -> dict[str, Any]:
        """Publish the stage commit once every expected partition (name -> key) verifies and,
        when ``durable``, once every partition's file and commit is on disk (one
        :func:`~kuration.output.commit.make_durable` for the stage, its seconds added to
        :attr:`fsync_s`).

        Raises
        ------
        DatasetIntegrityError
            A partition is missing, has another key or fails its SHA-256.
        """
        parts, files = {}, {}
        for name, key in sorted(expected.items()):
            c = self._load_commit(name)
            if c is None or c.key != key:
                raise DatasetIntegrityError(
                    f"checkpoint {self.stage}/{name}: " + "no commit with the expected key"
                )
            if not self._verified(c):
                raise DatasetIntegrityError(
                    f"checkpoint {self.stage}/{name}: " + "file fails its SHA-256"
                )
            parts[name] = {"file": c.file, "sha256": c.sha256, "rows": c.rows}
            files[name] = c.file
        doc = {
            "format": _FORMAT,
            "stage": self.stage,
            "run": self.run_fingerprint,
            "partitions": parts,
        }
        if durable:
            t0 = time.perf_counter()
            synced = [self.dir / f for f in files.values()]
            make_durable([*synced, *map(self._commit_path, files), self.dir], self.dir)
            self.fsync_s += time.perf_counter() - t0
        self.fsync_s += _publish_json(self.dir / "_stage.commit.json", doc)
        self._sweep(files)
        return doc

    def stage_commit(self) -> dict[str, Any] | None:
        """The published stage commit, or None."""
        try:
            doc = json.loads((self.dir / "_stage.commit.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return doc if isinstance(doc, dict) else None
