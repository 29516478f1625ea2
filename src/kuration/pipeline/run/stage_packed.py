"""The ``stage`` step of an hours run for ``layout="packed"`` (see :mod:`kuration.output.packed`).

The planned shards are put in manifest order and assigned to files and row
groups (:func:`~kuration.output.packed.pack_plan`) before any source is
read.  Resume works per file: a file is reused only when an earlier record
of it (the last committed manifest of the same run fingerprint, or this
run's staging journal) lists exactly the same shards at the same rows and
the file's bytes still hash to the recorded size and SHA-256; otherwise the
whole file is rebuilt.  Rebuilt files go to the staging namespace (temp
file, then ``os.replace``) and are journaled, as per-file shards are: the
journal records the file, the SHA-256 of its planned shards
(:func:`plan_digest`) and each shard's size and SHA-256, not every entry
(serialising every entry cost 15 % of the packed write at 79,000 shards).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...contracts.track import Track, track_from_table
from ...core.ids import tag_entity_id
from ...core.progress import emit
from ...output.commit import committed_manifest, reusable_entries
from ...output.packed import PackedFile, file_digest, pack_plan, write_packed_file
from ...output.packed_build import ShardCut
from ...output.writer import PLAN_KEYS, ShardWriter
from ...selection.fill import Candidate
from .reread import reread
from .stage_local import reread_quietly

if TYPE_CHECKING:
    from .state import HoursRun

__all__ = ["plan_digest", "stage_packed"]

#: what must agree, shard by shard, for an earlier file to be reused
_PACKED_KEYS = ("path", "shard", "row_group", "row_start", "n_rows", *PLAN_KEYS)


def _order_key(e: Mapping[str, Any]) -> tuple[Any, ...]:
    span = -1 if e["span_index"] is None else e["span_index"]
    return (e["split"], e["source_id"], e["entity_id"], span, e["shard_index"])


def plan_digest(entries: Sequence[Mapping[str, Any]]) -> str:
    """SHA-256 of a file's planned shards (their ``_PACKED_KEYS`` values, in row order, as
    compact JSON): what a staged file's journal record is checked against."""
    get = itemgetter(*_PACKED_KEYS)
    doc = json.dumps([get(e) for e in entries], separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(doc.encode()).hexdigest()


@dataclass(frozen=True)
class _Earlier:
    """An earlier record of a file: committed (``shards``: its manifest entries by shard
    name) or staged (``plan``: :func:`plan_digest` of its shards, ``digests``: each shard's
    size and SHA-256 in row order); ``where`` is ``"in place"`` or ``"staged"``."""

    rec: dict[str, Any]
    where: str
    shards: Mapping[str, Mapping[str, Any]] | None = None
    plan: str | None = None
    digests: Sequence[Any] = ()

    def match(self, plan: PackedFile, planned: str) -> list[tuple[Any, Any]] | None:
        """Each planned shard's (size, sha256) when every shard agrees, else None."""
        if self.rec.get("row_groups") != plan.row_groups:
            return None
        if self.shards is None:
            ok = self.plan == planned and len(self.digests) == len(plan.entries)
            ok = ok and all(isinstance(d, list) and len(d) == 2 for d in self.digests)
            return [(d[0], d[1]) for d in self.digests] if ok else None
        if len(self.shards) != len(plan.entries):
            return None
        out = []
        for e in plan.entries:
            old = self.shards.get(e["shard"])
            if old is None or any(old.get(k) != e[k] for k in _PACKED_KEYS):
                return None
            out.append((old.get("size"), old.get("sha256")))
        return out


def _previous(r: HoursRun) -> dict[str, list[_Earlier]]:
    """Earlier records of each file, by path: the last committed manifest's, then this
    run's staging journal's (a staged file may also have been moved in place before a
    publication ended)."""
    out: dict[str, list[_Earlier]] = {}
    manifest = committed_manifest(r.root, r.fingerprint)
    files = manifest.get("files") if manifest.get("layout") == "packed" else None
    shards = manifest.get("shards") if isinstance(files, list) else None
    by_file: dict[str, dict[str, Any]] = {}
    for e in shards if isinstance(shards, list) else []:
        if isinstance(e, dict) and isinstance(e.get("path"), str):
            by_file.setdefault(e["path"], {})[str(e.get("shard"))] = e
    for f in files if isinstance(files, list) else []:
        if isinstance(f, dict) and isinstance(f.get("path"), str):
            out.setdefault(f["path"], []).append(
                _Earlier(f, "in place", shards=by_file.get(f["path"], {}))
            )
    _, staged, _ = reusable_entries(r.root, r.fingerprint)
    for path, rec in staged.items():
        f, plan, digests = rec.get("file"), rec.get("plan"), rec.get("digests")
        if rec.get("packed") is True and isinstance(f, dict) and isinstance(digests, list):
            for where in ("staged", "in place"):
                out.setdefault(path, []).append(_Earlier(f, where, plan=plan, digests=digests))
    return out


def _reusable(
    plan: PackedFile, previous: list[_Earlier], bases: Mapping[str, Path]
) -> tuple[_Earlier, list[tuple[Any, Any]]] | None:
    """An earlier record of ``plan`` whose shards agree and whose bytes still match, with
    each shard's (size, sha256)."""
    planned = plan_digest(plan.entries) if previous else ""
    for earlier in previous:
        digests = earlier.match(plan, planned)
        if digests is None:
            continue
        path = bases[earlier.where] / plan.path
        if not path.is_file() or path.is_symlink():
            continue
        if file_digest(path) == (earlier.rec.get("size"), earlier.rec.get("sha256")):
            return earlier, digests
    return None


class _Tracks:
    """``track_of(entry)``: the Track of a planned shard, reading each source once (shards
    come in source order) and cutting each track once; :meth:`cut` says where a shard's
    rows are in its source (the batched build reads the grid without cutting tracks)."""

    def __init__(self, r: HoursRun, cand_of: Mapping[int, Candidate]) -> None:
        self.r = r
        self.cand_of = cand_of
        self.sid: str | None = None
        self.table: Any = None
        self.roster: dict[str, int] = {}
        self.key: tuple[Any, ...] | None = None
        self.track: Track | None = None
        self.metas: dict[int, dict[str, Any]] = {}

    def _read(self, source_id: str) -> Any:
        """The source's grid (the adapter's read; sources come in order, each read once)."""
        with reread_quietly():
            return reread(self.r.adapter, self.r.pool().sources[source_id])

    def _source(self, c: Candidate) -> None:
        if c.source_id != self.sid:
            self.table = self._read(c.source_id)
            self.roster = {tag_entity_id(x): j for j, x in enumerate(self.table.entity_ids)}
            self.sid = c.source_id
            self.metas = {}

    def _meta(self, c: Candidate) -> dict[str, Any]:
        meta = self.metas.get(id(c))
        if meta is None:
            meta = self.metas[id(c)] = {**c.features, "priority": c.priority}
        return meta

    def __call__(self, e: Mapping[str, Any]) -> Track:
        c = self.cand_of[id(e)]
        key = (c.source_id, e["entity_id"], c.span_index, c.first)
        if key == self.key and self.track is not None:
            return self.track
        self._source(c)
        row = self.roster[e["entity_id"]]
        self.track = track_from_table(self.table, row, c.first, c.last, c.span_index, self._meta(c))
        self.key = key
        return self.track

    def cut(self, e: Mapping[str, Any]) -> ShardCut:
        c = self.cand_of[id(e)]
        self._source(c)
        return ShardCut(e, self.table, self.roster[e["entity_id"]], self._meta(c))


def stage_packed(r: HoursRun, stage: Path, writer: ShardWriter) -> dict[str, Any]:
    """Plan the packed files, reuse the ones that still match, write the others into
    ``stage``; fills ``r.entries``, ``r.to_move``, ``r.packed_files`` and the counters."""
    assert r.journal is not None
    cand_of: dict[int, Candidate] = {}
    planned: list[dict[str, Any]] = []
    for _split, c, entries in r.admitted:
        for e in entries:
            copy = dict(e)
            cand_of[id(copy)] = c
            planned.append(copy)
    planned.sort(key=_order_key)
    files = pack_plan(planned, r.spec)
    previous = _previous(r) if r.resume else {}
    bases = {"in place": r.root, "staged": stage}
    track_of = _Tracks(r, cand_of)
    r.partitions = len(files)
    emit(r.progress, "writing", "start", total=len(files))
    for i, plan in enumerate(files, 1):
        found = _reusable(plan, previous.get(plan.path, []), bases)
        if found is not None:
            earlier, digests = found
            for e, (size, sha) in zip(plan.entries, digests, strict=True):
                e["size"], e["sha256"] = size, sha
            r.reused += len(plan.entries)
            if earlier.where == "staged":
                r.to_move.append(plan.path)
            r.packed_files.append(dict(earlier.rec))
        else:
            rec = write_packed_file(
                stage, plan, writer, track_of, fsync=r.opts.durable, cut_of=track_of.cut
            )
            # JSON lists: the journal line reads back as [size, sha256] pairs
            pairs = [[e["size"], e["sha256"]] for e in plan.entries]
            r.journal.record(
                {
                    "path": plan.path,
                    "packed": True,
                    "file": rec,
                    "plan": plan_digest(plan.entries),
                    "digests": pairs,
                }
            )
            r.to_move.append(plan.path)
            r.rebuilt += len(plan.entries)
            r.packed_files.append(rec)
        r.entries.extend(plan.entries)
        emit(r.progress, "writing", "advance", current=i, total=len(files), file=plan.path)
    return {
        "rows_in": len(r.admitted),
        "rows_out": len(r.entries),
        "partitions": len(files),
        "bytes": sum(int(f["size"]) for f in r.packed_files),
        "checkpoint_hits": r.reused,
        "checkpoint_misses": r.rebuilt,
        "queue_depth": 1,  # one file's row group in flight at a time
    }
