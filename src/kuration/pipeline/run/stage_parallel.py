"""The hours run's ``stage`` step on a ``process`` or ``ray`` executor: workers encode and write
each source's shards into the staging namespace; the lead journals and orders the entries.

One task per batch of sources (in sorted source order,
:func:`~kuration.core.executors.batch_size_for` of them) carries each source's URI
and its admitted tracks that an earlier run cannot supply (``resume``).  The worker
rebuilds the adapter, output spec and encoder once per process (after the
job's plugins, as the scoring workers do), rereads the source (checked against the
digest of the bytes the score pass read: a changed source fails with
:class:`~kuration.errors.SourceChangedError` before anything is published), cuts each track
and writes its shards with a :class:`~kuration.output.writer.ShardWriter`
rooted at the staging directory, so a shard's bytes and path are those the
lead would write.  The lead folds the results in submission order: each entry
is journaled, appended and queued for publication, so the manifest (sorted in
``publish``) and every shard are byte-identical to a ``local`` run's.

A worker's failure (bad data, an unwritable staging directory) comes back as
the same exception and stops the run before anything is published, as it would
locally.
"""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...contracts.schema import SchemaSpec
from ...contracts.track import track_from_table
from ...core.executors import (
    Executor,
    batch_size_for,
    enter_worker_environment,
    worker_environment,
)
from ...core.ids import tag_entity_id
from ...core.progress import emit
from ...errors import OutputSpecError
from ...output.spec import OutputSpec
from ...output.writer import ShardWriter
from ...sources.base import InputAdapter, adapter_from_dict
from .stage_local import reread_quietly

if TYPE_CHECKING:
    from .state import HoursRun, Planned

__all__ = ["encoder_pickles", "parallel_stage_possible", "stage_in_workers"]


def encoder_pickles(encoder: Any) -> bool:
    """Whether ``encoder`` can travel to a worker (a custom one that does not is run here)."""
    try:
        pickle.dumps(encoder)
    except Exception:
        return False
    return True


def parallel_stage_possible(executor: Executor | None, encoder: Any) -> bool:
    """Whether the stage step can run in ``executor``'s workers: they run outside this
    process and the output encoder pickles."""
    return executor is not None and executor.parallel and encoder_pickles(encoder)


def stage_in_workers(
    r: HoursRun,
    stage: Path,
    work: Mapping[str, list[Planned]],
    reuse: Callable[[list[dict[str, Any]]], bool],
) -> tuple[int, int]:
    """Stage every source of ``work`` whose shards are not all reusable in ``r.executor``'s
    workers, filling ``r.entries``, ``r.to_move`` and ``r.rebuilt``; returns the largest
    number of tasks in flight and the sources per task.

    ``reuse(planned)`` takes one track's shards from an earlier run (and records
    them) when it can; it runs in this process, in source order.

    Raises
    ------
    OutputSpecError
        A missing value for a present entity, or a shard plan mismatch.
    DestinationError
        The staging directory cannot be written.
    ExecutorError
        A worker died.
    """
    ex = r.executor
    assert ex is not None and r.journal is not None
    uri_of = {sid: r.pool().sources[sid].uri for sid in work}  # the admitted sources only
    base = {
        "schema": r.schema.to_dict(),
        "adapter": r.adapter.to_dict(),
        "source_ids": r.adapter.source_id_map(),
        "output": r.spec,
        "encoder": r.encoder,
        "stage": str(stage),
        "env": worker_environment(r.plugins, r.include_entry_points),
    }
    key = hashlib.sha256(pickle.dumps(base)).hexdigest()
    done = 0
    ex.peak_in_flight = 0  # this stage's own queue depth

    size = batch_size_for(len(work), ex.workers)

    def tasks() -> Iterator[dict[str, Any]]:
        nonlocal done
        batch: list[dict[str, Any]] = []
        for sid in sorted(work):
            todo = [(split, c, [e["path"] for e in planned]) for split, c, planned in work[sid]]
            todo = [t for t, item in zip(todo, work[sid], strict=True) if not reuse(item[2])]
            if todo:
                expect = r.pool().sources[sid].expected  # the bytes the score pass read
                batch.append(
                    {"uri": uri_of[sid], "source_id": sid, "items": todo, "expect": expect}
                )
            else:  # every shard reused: nothing to send
                done += 1
                emit(r.progress, "writing", "advance", current=done, total=len(work), source=sid)
            if len(batch) == size:
                yield {"key": key, "base": base, "sources": batch}
                batch = []
        if batch:
            yield {"key": key, "base": base, "sources": batch}

    for task, outs in ex.iter_batches(write_sources, tasks(), label=_label):
        if isinstance(outs, BaseException):
            raise outs
        for src, out in zip(task["sources"], outs, strict=True):
            for entry in out:
                r.journal.record(entry)
                r.entries.append(entry)
                r.to_move.append(entry["path"])
            r.rebuilt += len(out)
            done += 1
            sid = src["source_id"]
            emit(r.progress, "writing", "advance", current=done, total=len(work), source=sid)
    return ex.peak_in_flight, size


def _label(task: Mapping[str, Any]) -> str:
    first = task["sources"][0]["uri"]
    n = len(task["sources"])
    return first if n == 1 else f"{first} (and {n - 1} more sources)"


# ---- in the worker --------------------------------------------------------------------------

_WRITERS: dict[str, tuple[InputAdapter, ShardWriter]] = {}


def _components(key: str, base: Mapping[str, Any]) -> tuple[InputAdapter, ShardWriter]:
    if key not in _WRITERS:
        enter_worker_environment(base["env"])
        schema = SchemaSpec.from_dict(base["schema"])
        adapter = adapter_from_dict(base["adapter"], schema, base.get("source_ids"))
        spec: OutputSpec = base["output"]
        _WRITERS.clear()  # one run at a time per worker
        _WRITERS[key] = (adapter, ShardWriter(Path(base["stage"]), spec, schema, base["encoder"]))
    return _WRITERS[key]


def write_sources(task: Mapping[str, Any]) -> list[list[dict[str, Any]]]:
    """In a worker: reread each source of a batch and write its admitted tracks' shards into
    the staging directory; returns their manifest entries (size and SHA-256 filled), per
    source, in order.

    Raises
    ------
    OutputSpecError
        A missing value, or shards whose paths differ from the lead's plan.
    DestinationError
        A shard cannot be written.
    """
    adapter, writer = _components(task["key"], task["base"])
    return [_write_one(adapter, writer, src) for src in task["sources"]]


def _write_one(
    adapter: InputAdapter, writer: ShardWriter, src: Mapping[str, Any]
) -> list[dict[str, Any]]:
    with reread_quietly():
        table, _ = adapter.read_checked(
            src["uri"], entities=[item[1].entity_id for item in src["items"]], expect=src["expect"]
        )
    roster = {tag_entity_id(e): j for j, e in enumerate(table.entity_ids)}
    out: list[dict[str, Any]] = []
    for split, c, paths in src["items"]:
        meta = {**c.features, "priority": c.priority}
        track = track_from_table(table, roster[tag_entity_id(c.entity_id)], *_span(c), meta)
        written = writer.write(track, split)
        if [e["path"] for e in written] != paths:
            raise OutputSpecError(f"internal: shard plan mismatch for {src['source_id']!r}")
        out.extend(written)
    return out


def _span(c: Any) -> tuple[int, int, int | None]:
    return c.first, c.last, c.span_index
