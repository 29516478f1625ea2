"""The scorer pass: every SegmentScorer of a strategy over the whole pool, after the feature pass.

:func:`run_scorers` is called by :func:`~kuration.pipeline.run.scoring.score_sources`
on the sorted pool; it can be called on any :class:`ScoringResult` whose
segments already hold the features the scorers read.

* Each scorer is built once (``factory(**params)``) in this process.
* ``needs_buffers=True``: every source is read again, once, and each of its
  segments' :class:`~kuration.contracts.buffer.WindowBuffer` is built; a
  source that fails to read is skipped and logged (``on_error="skip"``: its
  segments leave the pool, the message joins ``result.errors``) or re-raised.
* A :class:`~kuration.errors.ScorerError` that names a ``source`` is that
  source's failure: it is skipped the same way and the scorer runs again on
  the rest of the pool.  Any other failure is a whole-pool failure and raises
  :class:`~kuration.errors.ScorerError`.
* Values must be one float per segment, finite or NaN (no value).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...contracts.buffer import WindowBuffer, build_window
from ...contracts.schema import SchemaSpec
from ...contracts.segment import Segment
from ...core.progress import ProgressCallback, emit
from ...errors import EmptyPoolError, ScorerError, SourceChangedError
from ...metrics.scorers import ScorerContext, ScorerUse, get_scorer
from ...metrics.transform_exec import segment_id
from ...sources.base import InputAdapter

__all__ = ["run_scorers"]


def _skip(result: Any, source_id: str, msg: str, on_error: str, exc: BaseException) -> None:
    if on_error == "raise":
        raise exc
    info = result.sources.pop(source_id)
    print(f"kuration: skipped source {info.uri}: {msg}", file=sys.stderr)
    result.errors[info.uri] = msg
    result.segments[:] = [s for s in result.segments if s.source_id != source_id]


def _buffers(
    result: Any, adapter: InputAdapter, on_error: str
) -> dict[tuple[str, int] | tuple[str, str, int], WindowBuffer]:
    """Every segment's WindowBuffer, each source read once (failing sources are skipped)."""
    out: dict[tuple[str, int] | tuple[str, str, int], WindowBuffer] = {}
    by_source: dict[str, list[Segment]] = {}
    for s in result.segments:
        by_source.setdefault(s.source_id, []).append(s)
    for sid, segs in sorted(by_source.items()):
        try:
            info = result.sources[sid]  # read again: must be the bytes scored
            table, _ = adapter.read_checked(info.uri, expect=info.expected)
            bufs = {
                s.key: build_window(table, s.start_idx, s.end_idx, entity=s.entity) for s in segs
            }
        except Exception as exc:
            if isinstance(exc, SourceChangedError):
                raise
            _skip(result, sid, f"scorer buffers: {type(exc).__name__}: {exc}", on_error, exc)
            continue
        out.update(bufs)
    return out


def _values(use: ScorerUse, impl: Any, pool: Sequence[Segment], ctx: ScorerContext) -> np.ndarray:
    try:
        raw = impl.score(pool, ctx)
    except ScorerError:
        raise
    except Exception as exc:
        raise ScorerError(
            f"failed on the whole pool: {type(exc).__name__}: {exc}", scorer=use.name
        ) from exc
    v = np.asarray(raw, dtype=np.float64)
    if v.shape != (len(pool),):
        raise ScorerError(
            f"returned shape {v.shape}, expected ({len(pool)},): one value per segment",
            scorer=use.name,
        )
    bad = np.flatnonzero(np.isinf(v))
    if bad.size:
        seg = pool[int(bad[0])]
        raise ScorerError(
            f"infinite value {v[bad[0]]}",
            scorer=use.name,
            source=seg.source_id,
            segment=segment_id(seg),
        )
    return v


def run_scorers(
    result: Any,
    uses: Sequence[ScorerUse],
    schema: SchemaSpec,
    adapter: InputAdapter,
    *,
    on_error: str = "skip",
    progress: ProgressCallback | None = None,
) -> None:
    """Run ``uses`` in order over ``result.segments`` and write their outputs (in place).

    Parameters
    ----------
    result : ScoringResult
        Its ``segments``, ``sources`` and ``errors`` are updated when a source is skipped.
    uses : sequence of ScorerUse
    schema : SchemaSpec
    adapter : InputAdapter
        Reads sources again for scorers with ``needs_buffers=True``.
    on_error : {"skip", "raise"}

    Raises
    ------
    ScorerError
        A whole-pool failure, a wrong-length or infinite output.
    EmptyPoolError
        If skipping sources empties the pool.
    """
    emit(progress, "scorers", "start", total=len(uses))
    buffers: dict[tuple[str, int] | tuple[str, str, int], WindowBuffer] | None = None
    for i, use in enumerate(uses):
        impl = get_scorer(use.name).factory(**dict(use.params))
        while True:
            pool = list(result.segments)
            if not pool:
                raise EmptyPoolError(
                    "no segments left after the scorer pass skipped sources",
                    errors=dict(result.errors),
                )
            bufs = None
            if use.needs_buffers:
                if buffers is None:
                    buffers = _buffers(result, adapter, on_error)
                    continue  # sources may have been skipped: take the pool again
                bufs = tuple(buffers[s.key] for s in pool)
            ctx = ScorerContext(
                use.name,
                use.output,
                dict(use.params),
                tuple(segment_id(s) for s in pool),
                schema,
                bufs,
            )
            try:
                values = _values(use, impl, pool, ctx)
            except ScorerError as exc:
                if exc.source is None or exc.source not in result.sources:
                    raise
                _skip(result, exc.source, str(exc), on_error, exc)
                continue
            break
        for seg, v in zip(pool, values.tolist(), strict=True):
            seg.features[use.output] = v
        emit(progress, "scorers", "advance", current=i + 1, total=len(uses), scorer=use.name)
    emit(progress, "scorers", "complete", total=len(uses))
