"""Running BatchTransforms over one source: batches, padding, bounded decode, output checks.

:class:`TransformRunner` holds the resolved uses of a strategy and builds each
transform once (``factory(**params)``) the first time it is needed; a runner
lives for a whole scoring call in one process, or for a worker process's
life (see :func:`runner_for`).  :meth:`TransformRunner.run` fills the
features of one source's segments:

* segments are taken in ``(start_idx)`` order, ``batch_size`` at a time;
* row ``i`` of a ``field:``/``media:`` input holds ticks
  ``[start_i - lb, end_i + la)`` clipped to the source, where ``lb``/``la``
  are the use's lookbehind/lookahead for that token; rows are left-aligned
  and padded to the widest row (``valid_steps`` says how many ticks are
  real, ``offsets`` where the segment itself begins);
* a ``field:`` input is ``(B, T, E, D)`` float64 over each row's own entity
  roster (entities present in the row's ticks), NaN-padded to the widest
  roster;
* a ``media:`` input decodes the union of the batch's frames in **one**
  ``decode_batch`` call at the checked size and format, so memory is bounded
  by ``batch_size x (window + lookbehind + lookahead)`` frames at that size;
* every output must be a finite float per row, aligned to the batch's
  stable segment ids; anything else raises :class:`~kuration.errors.TransformError`
  naming the transform, source and segment.

Any exception propagates to the scoring pass, which skips the source
(``on_error="skip"``) so none of its rows is kept, and the runner is
:meth:`~TransformRunner.reset` so the next source starts from freshly built
transforms.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..contracts.media import get_media_provider
from ..contracts.segment import Segment
from ..contracts.tick import TickTable
from ..errors import TransformError
from .transforms import TransformContext, TransformUse, get_transform

__all__ = ["TransformRunner", "runner_for", "segment_id"]


def segment_id(seg: Segment) -> str:
    """The stable id of a segment: ``"<source_id>:<start_idx>"``."""
    return f"{seg.source_id}:{seg.start_idx}"


def _rows(
    segs: Sequence[Segment], n_steps: int, lb: int, la: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row: first tick, valid tick count and offset of the segment in the row, (B,) int64."""
    starts = np.array([max(0, s.start_idx - lb) for s in segs], dtype=np.int64)
    stops = np.array([min(n_steps, s.end_idx + la) for s in segs], dtype=np.int64)
    offsets = np.array([s.start_idx for s in segs], dtype=np.int64) - starts
    return starts, stops - starts, offsets


def _field_batch(
    table: TickTable, name: str, starts: np.ndarray, valid: np.ndarray
) -> tuple[np.ndarray, np.ndarray, tuple[tuple[Any, ...], ...]]:
    """(B, T, E, D) float64 values, (B, T) presence and each row's roster."""
    vals = table.values[name]
    rosters = []
    for a, n in zip(starts, valid, strict=True):
        rosters.append(np.flatnonzero(table.present[a : a + n].any(axis=0)))
    width = max((r.size for r in rosters), default=0)
    t_max = int(valid.max()) if valid.size else 0
    out = np.full((len(starts), t_max, max(width, 1), vals.shape[2]), np.nan)
    present = np.zeros((len(starts), t_max), dtype=bool)
    for i, (a, n, r) in enumerate(zip(starts, valid, rosters, strict=True)):
        out[i, :n, : r.size] = vals[a : a + n][:, r]
        present[i, :n] = table.present[a : a + n][:, r].any(axis=1)
    ids = tuple(tuple(table.entity_ids[j] for j in r) for r in rosters)
    return out, present, ids


def _media_batch(
    table: TickTable,
    column: str,
    starts: np.ndarray,
    valid: np.ndarray,
    shape: tuple[int, int, int],
    fmt: str,
) -> tuple[np.ndarray, np.ndarray]:
    """(B, T, H, W, C) uint8 frames (zeros where none) and (B, T) presence: one decode call."""
    col = table.media[column]
    t_max = int(valid.max()) if valid.size else 0
    frames = np.zeros((len(starts), t_max, *shape), dtype=np.uint8)
    present = np.zeros((len(starts), t_max), dtype=bool)
    for i, (a, n) in enumerate(zip(starts, valid, strict=True)):
        present[i, :n] = col.index[a : a + n] >= 0
    wanted = sorted(
        {
            int(col.index[a + t])
            for i, (a, n) in enumerate(zip(starts, valid, strict=True))
            for t in range(n)
            if col.index[a + t] >= 0
        }
    )
    if not wanted:
        return frames, present
    provider = get_media_provider(col.spec.provider)
    decoded = provider.decode_batch([col.refs[k] for k in wanted], size=shape[:2], format=fmt)
    pos = {k: j for j, k in enumerate(wanted)}
    for i, (a, n) in enumerate(zip(starts, valid, strict=True)):
        for t in range(int(n)):
            k = int(col.index[a + t])
            if k >= 0:
                frames[i, t] = decoded[pos[k]]
    return frames, present


class TransformRunner:
    """The transforms of one strategy, each built once, run source by source.

    Parameters
    ----------
    uses : sequence of TransformUse
        In strategy order; a later use may read an earlier one's outputs.
    """

    def __init__(self, uses: Sequence[TransformUse]) -> None:
        self.uses = tuple(uses)
        self._built: dict[int, Any] = {}

    def reset(self) -> None:
        """Drop every built transform (after a source failed): the next source rebuilds them."""
        self._built.clear()

    def _instance(self, i: int) -> Any:
        if i not in self._built:
            use = self.uses[i]
            self._built[i] = get_transform(use.name).factory(**dict(use.params))
        return self._built[i]

    def run(self, table: TickTable, segments: Sequence[Segment]) -> None:
        """Write every use's outputs into ``seg.features`` for the segments of ``table``.

        Raises
        ------
        TransformError
            A non-finite or misaligned output (names transform, source, segment).
        """
        order = sorted(segments, key=lambda s: s.start_idx)
        for i, use in enumerate(self.uses):
            if not order:
                continue
            impl = self._instance(i)
            for a in range(0, len(order), use.batch_size):
                chunk = order[a : a + use.batch_size]
                batch, ctx = self._batch(use, table, chunk)
                out = impl.transform(batch, ctx)
                values = _check_output(use, table.source_id, ctx.segment_ids, out)
                for j, seg in enumerate(chunk):
                    for o, feat in use.outputs.items():
                        seg.features[feat] = values[o][j]

    def _batch(
        self, use: TransformUse, table: TickTable, segs: Sequence[Segment]
    ) -> tuple[dict[str, Any], TransformContext]:
        batch: dict[str, Any] = {}
        valid: dict[str, np.ndarray] = {}
        offsets: dict[str, np.ndarray] = {}
        present: dict[str, np.ndarray] = {}
        entities: dict[str, Any] = {}
        for token in use.inputs.values():
            kind, name = token.split(":", 1)
            if kind == "feature":
                batch[token] = np.array([s.features.get(name, math.nan) for s in segs], dtype=float)
                continue
            starts, n, off = _rows(segs, table.n_steps, use.lookbehind[token], use.lookahead[token])
            valid[token], offsets[token] = n, off
            if kind == "field":
                batch[token], present[token], entities[token] = _field_batch(table, name, starts, n)
            else:
                shape, fmt = use.media[token]
                batch[token], present[token] = _media_batch(table, name, starts, n, shape, fmt)
        batch["valid_steps"] = valid
        ctx = TransformContext(
            name=use.name,
            inputs=dict(use.inputs),
            params=dict(use.params),
            segment_ids=tuple(segment_id(s) for s in segs),
            lengths=np.array([s.n_steps for s in segs], dtype=np.int64),
            valid_steps=valid,
            offsets=offsets,
            present=present,
            sample_hz=table.sample_hz,
            entity_ids=entities,
        )
        return batch, ctx


def _check_output(
    use: TransformUse, source: str, ids: tuple[str, ...], out: Any
) -> dict[str, list[float]]:
    """Each declared output as B finite floats, aligned to ``ids``."""
    if not isinstance(out, Mapping):
        raise TransformError(
            f"returned {type(out).__name__}, not a mapping of outputs",
            transform=use.name,
            source=source,
            segment=ids[0],
        )
    if "segment_ids" in out:
        got = tuple(str(x) for x in out["segment_ids"])
        if got != ids:
            bad = next(
                (a for a, b in zip(ids, got, strict=False) if a != b),
                ids[min(len(got), len(ids) - 1)],
            )
            raise TransformError(
                "output rows are not aligned to the batch's segments",
                transform=use.name,
                source=source,
                segment=bad,
            )
    extra = sorted(set(out) - set(use.outputs) - {"segment_ids"})
    if extra:
        raise TransformError(
            f"returned undeclared outputs {extra}", transform=use.name, source=source
        )
    res: dict[str, list[float]] = {}
    for o in use.outputs:
        if o not in out:
            raise TransformError(
                "declared output missing", transform=use.name, source=source, token=o
            )
        v = np.asarray(out[o], dtype=np.float64)
        if v.shape != (len(ids),):
            seg = ids[v.shape[0]] if v.ndim == 1 and v.shape[0] < len(ids) else ids[-1]
            raise TransformError(
                f"output has shape {v.shape}, expected ({len(ids)},): one scalar per segment",
                transform=use.name,
                source=source,
                segment=seg,
                token=o,
            )
        nonfinite = np.flatnonzero(~np.isfinite(v))
        if nonfinite.size:
            raise TransformError(
                f"non-finite output {v[nonfinite[0]]!r}",
                transform=use.name,
                source=source,
                segment=ids[int(nonfinite[0])],
                token=o,
            )
        res[o] = v.tolist()
    return res


_RUNNERS: dict[str, TransformRunner] = {}


def runner_for(uses: Sequence[TransformUse]) -> TransformRunner:
    """This process's runner for ``uses`` (built on first use, then kept): a worker process
    loads each transform once, however many sources it scores."""
    key = json.dumps([u.to_dict() for u in uses], sort_keys=True)
    if key not in _RUNNERS:
        _RUNNERS[key] = TransformRunner(uses)
    return _RUNNERS[key]
