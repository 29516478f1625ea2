"""Staging in this process: each admitted source read again (only its admitted entities
laid out, :meth:`~kuration.sources.base.InputAdapter.read_entities`) and its tracks'
shards encoded into the staging namespace, source after source.

Reading the next source ahead on a thread (while this one's shards are encoded) was
measured and left out: on the shared 2-core machine it made the stage step slower
(1.0-2.5 s against 0.8-1.4 s at 384 sources, load average 10) and held more memory.

The process and Ray executors stage in workers instead
(:mod:`kuration.pipeline.run.stage_parallel`); both write the same bytes in the same order.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...contracts.track import track_from_table
from ...core.ids import tag_entity_id
from ...core.progress import emit
from ...errors import KurationWarning, OutputSpecError
from ...output.writer import ShardWriter
from .reread import reread

if TYPE_CHECKING:
    from .state import HoursRun, Planned

__all__ = ["stage_here", "stage_source"]


@contextmanager
def reread_quietly() -> Iterator[None]:
    """Silence the adapter's own warnings (disorder, dropped rows) while a source is read
    again to write its tracks: the scoring pass read it and warned already."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", KurationWarning)
        yield


def stage_here(
    r: HoursRun,
    stage: Path,
    work: Mapping[str, list[Planned]],
    reuse: Callable[[list[dict[str, Any]]], bool],
) -> float:
    """The stage step in this process, one source at a time; returns the seconds spent
    reading sources again for their admitted tracks.

    ``reuse(planned)`` takes a track's shards from an earlier run when it can (resume);
    a source is read only if one of its tracks cannot be reused.
    """
    assert r.journal is not None
    read_s = 0.0
    writer = ShardWriter(stage, r.spec, r.schema, r.encoder, on_shard=r.journal.record)
    uri_of = {sid: r.pool().sources[sid].uri for sid in work}  # the admitted sources only

    def to_move(written: list[dict[str, Any]]) -> None:
        r.to_move.extend(e["path"] for e in written)

    for i, sid in enumerate(sorted(work), 1):
        read_s += stage_source(r, writer, work[sid], reuse, uri_of[sid], to_move)
        emit(r.progress, "writing", "advance", current=i, total=len(work), source=sid)
    return read_s


def stage_source(
    r: HoursRun,
    writer: ShardWriter,
    items: list[Planned],
    reuse: Callable[[list[dict[str, Any]]], bool],
    uri: str,
    written_hook: Callable[[list[dict[str, Any]]], None],
) -> float:
    """Write (or reuse) one source's shards; returns the seconds spent reading it.

    The source is read once, and only if one of its tracks cannot be reused; only its
    admitted entities are laid out (every row is still checked).  ``written_hook`` gets
    each track's new shard entries before they join ``r.entries``.
    """
    sid = items[0][1].source_id
    args = (uri, [w[1].entity_id for w in items])
    table, roster, read_s = None, {}, 0.0
    for split, c, planned in items:
        if reuse(planned):
            continue
        if table is None:
            t0 = time.perf_counter()
            with reread_quietly():
                table = reread(r.adapter, r.pool().sources[sid], args[1])
            read_s += time.perf_counter() - t0
            roster = {tag_entity_id(e): j for j, e in enumerate(table.entity_ids)}
        meta = {**c.features, "priority": c.priority}
        row = roster[tag_entity_id(c.entity_id)]
        track = track_from_table(table, row, c.first, c.last, c.span_index, meta)
        written = writer.write(track, split)
        if [e["path"] for e in written] != [e["path"] for e in planned]:
            raise OutputSpecError(f"internal: shard plan mismatch for {sid!r}")
        written_hook(written)
        r.entries.extend(written)
        r.rebuilt += len(written)
    return read_s
