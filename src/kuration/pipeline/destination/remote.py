"""An hours run into a remote destination (``s3://bucket/prefix``, ``gs://...``, ``az://...``).

The planning steps of :data:`~kuration.pipeline.run.steps.STEPS` run as for a
local run; the steps that touch the artifact are replaced by their object-store
versions (:data:`REMOTE_STEPS`), which follow the same commit protocol through a
:class:`~kuration.output.destination.RemoteDestination`:

* ``resume-lookup`` copies the remote commit record, fingerprint marker and
  manifest into a local scratch directory and lets
  :func:`~kuration.output.commit.reusable_entries` judge them exactly as it judges a
  local dataset (their bytes must hash to the checksums the commit pins), and reads
  the attempt records of the run-fingerprint staging namespace;
* ``stage`` encodes a track's shards into the scratch directory, uploads each whole as
  an attempt object ``.kuration_staging/<fp>/<attempt>/<split>/<name>`` plus its record
  (``<name>.entry.json``; one concurrent batch per track), and drops the local copies;
* ``manifest`` and ``config`` build and encode every document, as for a local run;
* ``publish`` replaces ``dataset.commit.json`` by ``state="writing"``, moves the
  attempt objects into place and deletes stale shards;
* ``commit`` uploads marker, manifest and config (the same canonical bytes a local
  run writes) and publishes ``state="committed"`` last, then clears the staging
  namespace.

A shard is reused only when the SHA-256 of the remote object's bytes matches a record
(the committed manifest's, or an attempt record of the same run fingerprint): never
by name, size or listing alone.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, partial
from typing import Any

from ...core.jsonio import canonical_json, loads_strict
from ...core.progress import emit
from ...errors import DatasetIntegrityError
from ...output.commit import (
    COMMIT_NAME,
    CONFIG_NAME,
    LOCK_NAME,
    MANIFEST_NAME,
    MARKER_NAME,
    SPLITS,
    STAGING_NAME,
    read_commit,
    reusable_entries,
)
from ...output.destination import (
    RemoteDestination,
    RemoteLease,
    staging_prefix,
)
from ...output.job_match import occupant, refuse_other_job, refuse_other_job_here
from ...output.writer import ShardWriter
from ..disk.hours import disk_session, disk_steps
from ..run.hours_config import step_config
from ..run.stage_local import stage_source
from ..run.state import Planned
from ..run.steps import (
    STEPS,
    HoursRun,
    Step,
    adopt_all,
    first_reusable,
    job_description,
    run_steps,
)
from ..run.steps import step_manifest as _step_manifest
from .occupied import holds_run, refuse_occupied

__all__ = ["REMOTE_STEPS", "RemoteRun", "run_remote"]

RECORD_SUFFIX = ".entry.json"
#: Attempt objects moved into place per batch (one concurrent copy, then one delete).
MOVE_BATCH = 64


@dataclass
class RemoteRun:
    """The remote side of one run: destination, attempt id, staged records, moves."""

    dest: RemoteDestination
    attempt: str = field(default_factory=lambda: uuid.uuid4().hex[:16])
    staged: dict[str, list[tuple[dict[str, Any], str]]] = field(default_factory=dict)
    moves: list[tuple[str, str]] = field(default_factory=list)
    digests: dict[str, tuple[int, str]] = field(default_factory=dict)  # of candidate objects
    wrote: bool = False


def _mirror_metadata(r: HoursRun, s: RemoteRun) -> None:
    """Copy the remote commit record, marker and manifest into the scratch root."""
    r.root.mkdir(parents=True, exist_ok=True)
    for name in (COMMIT_NAME, MARKER_NAME, MANIFEST_NAME):
        data = s.dest.read(name)
        if data is not None:
            (r.root / name).write_bytes(data)


def _staged_records(s: RemoteRun, fingerprint: str) -> dict[str, list[tuple[dict[str, Any], str]]]:
    """Attempt records of the staging namespace of ``fingerprint``, by shard path."""
    prefix = staging_prefix(fingerprint)
    out: dict[str, list[tuple[dict[str, Any], str]]] = {}
    records = [rel for rel in s.dest.listing(prefix) if rel.endswith(RECORD_SUFFIX)]
    for rel, data in sorted(s.dest.read_many(records).items()):
        try:
            rec = loads_strict(data, what=rel)
        except ValueError:
            continue  # a torn or foreign record proposes nothing
        if not isinstance(rec, dict):
            continue
        entry, key = rec.get("entry"), rec.get("key")
        if (
            isinstance(entry, dict)
            and isinstance(entry.get("path"), str)
            and key == rel[: -len(RECORD_SUFFIX)]
            and rec.get("run_fingerprint") == fingerprint
        ):
            out.setdefault(entry["path"], []).append((entry, key))
    return out


def step_remote_resume(r: HoursRun, s: RemoteRun) -> dict[str, Any]:
    """Which remote shards may be reused (``resume``), and the previous commit record."""
    _mirror_metadata(r, s)
    if r.resume and not s.dest.listing(staging_prefix(r.fingerprint)):
        # no work of this run staged (by a failed force run): another job's dataset stays
        refuse_other_job_here(r.root, r.run, where=s.dest.url)
    if r.resume:
        strong = all(
            isinstance(src["fingerprint"], str) and src["fingerprint"] for src in r.run["sources"]
        )
        if r.unidentified:
            r.resume_notes = [f"no source code found for {r.unidentified}: nothing is reused"]
        elif strong:
            r.trusted, _, r.resume_notes = reusable_entries(r.root, r.fingerprint, r.run)
            s.staged = _staged_records(s, r.fingerprint)
            # the bytes of every object that could be reused, hashed (never trusted by name)
            cands = set(r.trusted) | set(s.staged)
            cands |= {key for recs in s.staged.values() for _, key in recs}
            s.digests = s.dest.sha256_many(cands)
        else:
            r.resume_notes = ["a source has no strong fingerprint: nothing is reused"]
    try:
        r.prev, _ = read_commit(r.root)
    except DatasetIntegrityError:
        r.prev = None
    return {"rows_out": len(r.trusted) + sum(len(v) for v in s.staged.values())}


def _locate(
    r: HoursRun, s: RemoteRun, planned: Mapping[str, Any]
) -> tuple[dict[str, Any], tuple[str, str]] | None:
    """A reusable remote copy of a planned shard: its completed entry, the object holding
    it and whether that is ``"in place"`` or ``"staged"``; None when it must be rebuilt."""
    path = planned["path"]
    copies: list[tuple[Mapping[str, Any] | None, tuple[str, str]]] = []
    if path in r.trusted:
        copies.append((r.trusted[path], (path, "in place")))
    for rec, key in s.staged.get(path, []):
        copies += [(rec, (key, "staged")), (rec, (path, "in place"))]
    return first_reusable(
        planned,
        copies,
        lambda rec, at: s.digests.get(at[0]) == (rec.get("size"), rec.get("sha256")),
    )


def _reuse(r: HoursRun, s: RemoteRun, planned: list[dict[str, Any]]) -> bool:
    def staged(entry: dict[str, Any], at: tuple[str, str]) -> None:
        if at[1] == "staged":
            s.moves.append((at[0], entry["path"]))

    return adopt_all(r, planned, partial(_locate, r, s), staged)


def step_remote_stage(r: HoursRun, s: RemoteRun) -> dict[str, Any]:
    """Encode every shard not already in place and upload it whole as an attempt object
    of the run-fingerprint namespace (the published dataset is untouched)."""
    prefix = staging_prefix(r.fingerprint)
    if not r.resume:
        s.dest.remove(s.dest.listing(prefix))
    attempt = f"{prefix}/{s.attempt}"
    local = r.root / "stage"

    def upload(written: list[dict[str, Any]]) -> None:
        """One track's shards and their records, uploaded together; a record without its
        shard (a kill mid-batch) proposes nothing, since reuse needs the shard's bytes."""
        batch = {}
        for entry in written:
            path = local / entry["path"]
            key = f"{attempt}/{entry['path']}"
            record = {"run_fingerprint": r.fingerprint, "key": key, "entry": entry}
            batch[key] = path.read_bytes()
            batch[key + RECORD_SUFFIX] = canonical_json(record)
            path.unlink()
            s.moves.append((key, entry["path"]))
        s.wrote = True
        s.dest.write_many(batch)

    writer = ShardWriter(local, r.spec, r.schema, r.encoder)
    work: dict[str, list[Planned]] = {}
    for item in r.admitted:
        work.setdefault(item[1].source_id, []).append(item)
    r.partitions = len(work)
    emit(r.progress, "writing", "start", total=len(work))
    for i, sid in enumerate(sorted(work), 1):
        uri = r.pool().sources[sid].uri
        stage_source(r, writer, work[sid], partial(_reuse, r, s), uri, upload)
        emit(r.progress, "writing", "advance", current=i, total=len(work), source=sid)
    return {
        "rows_in": len(r.admitted),
        "rows_out": len(r.entries),
        "partitions": len(work),
        "bytes": sum(int(e.get("size", 0)) for e in r.entries),
        "checkpoint_hits": r.reused,
        "checkpoint_misses": r.rebuilt,
        "queue_depth": 1,
    }


def step_remote_publish(r: HoursRun, s: RemoteRun) -> dict[str, Any]:
    """``state="writing"``, attempt objects moved into place, stale shards deleted (the
    record's bytes were made by the ``config`` step)."""
    s.dest.write(COMMIT_NAME, r.records["writing"])
    r.published = True
    for i in range(0, len(s.moves), MOVE_BATCH):
        s.dest.move_many(s.moves[i : i + MOVE_BATCH])
    keep = {e["path"] for e in r.entries}
    stale = [p for split in SPLITS for p in s.dest.listing(split) if p not in keep]
    s.dest.remove(stale)
    return {"rows_in": len(s.moves), "rows_out": len(r.entries)}


def step_remote_commit(r: HoursRun, s: RemoteRun) -> dict[str, Any]:
    """Marker, manifest and config uploaded (the bytes a local run writes), then
    ``state="committed"`` published last."""
    for name, data in r.payload.items():
        s.dest.write(name, data)
    s.dest.write(COMMIT_NAME, r.records["committed"])
    s.dest.remove(s.dest.listing(STAGING_NAME))
    return {"rows_in": len(r.entries), "rows_out": 3}


def remote_steps(
    s: RemoteRun, steps: Sequence[tuple[str, Step]] = STEPS
) -> tuple[tuple[str, Step], ...]:
    """The planning steps of ``steps`` (:data:`STEPS`, or the disk runtime's version of
    them) followed by the remote artifact steps."""
    names = [n for n, _ in steps]
    planning = tuple(steps[: names.index("resume-lookup")])
    return (
        *planning,
        ("resume-lookup", partial(step_remote_resume, s=s)),
        ("stage", partial(step_remote_stage, s=s)),
        ("manifest", _step_manifest),
        ("config", step_config),
        ("publish", partial(step_remote_publish, s=s)),
        ("commit", partial(step_remote_commit, s=s)),
    )


#: The names of the steps of a remote run, in order.
REMOTE_STEPS: tuple[str, ...] = (
    *(n for n, _ in STEPS[: [n for n, _ in STEPS].index("resume-lookup")]),
    "resume-lookup",
    "stage",
    "manifest",
    "config",
    "publish",
    "commit",
)


def _refuse_occupied(
    s: RemoteRun,
    url: str,
    *,
    resume: bool,
    force: bool,
    job: Callable[[], Mapping[str, Any]] | None = None,
) -> bool:
    """Whether the prefix holds more than the lease; raises as :func:`refuse_occupied`,
    and as :func:`~kuration.output.job_match.refuse_other_job` when ``resume`` meets the
    committed dataset of another job than ``job()`` (asked for only when a refusal needs
    it)."""
    names = [n for n in s.dest.listing() if n != LOCK_NAME]
    if not names:
        return False
    has_run = holds_run(names)
    if job is None or force:
        refuse_occupied(url, has_run=has_run, resume=resume, force=force)
        return True
    commit, marker, config = (s.dest.read(n) for n in (COMMIT_NAME, MARKER_NAME, CONFIG_NAME))
    occ = None if resume else occupant(commit, marker, config, job())
    refuse_occupied(url, has_run=has_run, resume=resume, force=force, occupant=occ)
    staged = any(n.startswith(f"{STAGING_NAME}/") for n in names)
    if resume and not staged:  # staged: the fingerprint decides, at the resume lookup
        refuse_other_job(url, commit, marker, job(), config)
    return True


def run_remote(r: HoursRun, url: str, *, resume: bool, force: bool) -> None:
    """Run ``r`` (prepared with a local scratch ``root``) into the remote ``url``.

    Raises
    ------
    DatasetExistsError
        The prefix holds a dataset and neither ``resume`` nor ``force`` was given,
        ``resume`` meets the committed dataset of another job, or another writer holds
        the remote lease.
    DestinationError
        An object cannot be read, written, moved or deleted (names its URL).
    UnsupportedURLError
        A scheme kuration does not write.
    """
    s = RemoteRun(RemoteDestination(url, write=True))
    # whose dataset a refusal finds (resume: only the same job's), made when one needs it
    job = cache(partial(job_description, r))
    was_empty = not _refuse_occupied(s, url, resume=resume, force=force, job=job)
    lease = RemoteLease(s.dest).acquire()
    try:
        _refuse_occupied(s, url, resume=resume, force=force, job=job)  # another writer since
        with disk_session(r):
            run_steps(r, remote_steps(s, disk_steps(r, STEPS)))
    except BaseException as exc:
        try:
            if not r.published and was_empty and s.wrote:
                # a destination this run found empty holds nothing else
                s.dest.remove([p for p in s.dest.listing() if p != LOCK_NAME])
            if r.published:
                print(
                    f"kuration: the run stopped while publishing; {url} is left in state "
                    "'writing' (readers refuse it): rerun the same job with resume=True "
                    f"(kur run <job> --out {url} --resume) to complete it",
                    file=sys.stderr,
                )
        except Exception as cleanup:  # the first error is the one raised
            exc.add_note(f"cleaning up {url} failed too: {cleanup}")
        finally:
            lease.release()
        raise
    lease.release()
