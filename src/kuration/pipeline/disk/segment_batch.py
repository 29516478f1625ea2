"""SegmentBatch: scored segments as a bounded Arrow record batch (the ``[scale]`` pool tier).

A batch holds stable segment identities and the projected features, never
the windows' values:

=========== ======================== ==================================================
column      Arrow type               meaning
=========== ======================== ==================================================
source_id   string                   the source
entity      string (null)            the tagged id of the entity a track-scoped window
                                     covers; null for a window over every entity of
                                     the source (a scene window)
start_idx   int64                    first tick, ``[start_idx, end_idx)``
end_idx     int64
digest      fixed_size_binary(32)    SHA-256 of the window's canonical bytes
            (null)                   (:func:`~kuration.selection.dedup.window_payload`),
                                     when exact dedup asked for it
f:<name>    float64                  one column per projected feature (NaN: no value)
=========== ======================== ==================================================

``(source_id, entity, start_idx)`` is the segment's stable id: the same for
any worker count, executor or batch size.  Rows are in canonical
(:attr:`~kuration.contracts.segment.Segment.key`) order within a batch.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ...contracts.segment import Segment
from ...errors import PipelineError

__all__ = ["SegmentBatch"]

_ID_FIELDS = [
    pa.field("source_id", pa.string(), nullable=False),
    pa.field("entity", pa.string()),
    pa.field("start_idx", pa.int64(), nullable=False),
    pa.field("end_idx", pa.int64(), nullable=False),
    pa.field("digest", pa.binary(32)),
]


@dataclass(frozen=True)
class SegmentBatch:
    """Scored segments in one Arrow :class:`pyarrow.RecordBatch` (see the module table).

    Attributes
    ----------
    batch : pyarrow.RecordBatch
        Rows in canonical order, laid out as :meth:`arrow_schema` says.
    """

    batch: pa.RecordBatch

    @staticmethod
    def arrow_schema(features: Sequence[str]) -> pa.Schema:
        """The Arrow schema of a batch projecting ``features`` (in that order)."""
        return pa.schema([*_ID_FIELDS, *(pa.field(f"f:{n}", pa.float64()) for n in features)])

    @classmethod
    def from_segments(
        cls,
        segments: Sequence[Segment],
        features: Sequence[str],
        *,
        digests: Sequence[bytes] | None = None,
    ) -> SegmentBatch:
        """One batch of ``segments`` (sorted into canonical order) projecting ``features``.

        Parameters
        ----------
        segments : sequence of Segment
        features : sequence of str
            The features kept (a missing one is NaN).
        digests : sequence of bytes (32 each), optional
            Aligned with ``segments``: each window's SHA-256.

        Raises
        ------
        PipelineError
            ``digests`` of the wrong length or size.
        """
        order = sorted(range(len(segments)), key=lambda i: segments[i].key)
        segs = [segments[i] for i in order]
        if digests is not None:
            if len(digests) != len(segments) or any(len(d) != 32 for d in digests):
                raise PipelineError("SegmentBatch digests must be 32 bytes, one per segment")
            dig = pa.array([digests[i] for i in order], pa.binary(32))
        else:
            dig = pa.nulls(len(segs), pa.binary(32))
        cols = [
            pa.array([s.source_id for s in segs], pa.string()),
            pa.array([s.entity for s in segs], pa.string()),
            pa.array(np.array([s.start_idx for s in segs], dtype=np.int64)),
            pa.array(np.array([s.end_idx for s in segs], dtype=np.int64)),
            dig,
        ]
        for name in features:
            v = np.array([s.features.get(name, np.nan) for s in segs], dtype=np.float64)
            cols.append(pa.array(v, pa.float64()))
        return cls(pa.RecordBatch.from_arrays(cols, schema=cls.arrow_schema(features)))

    @classmethod
    def split(
        cls,
        segments: Sequence[Segment],
        features: Sequence[str],
        batch_rows: int,
        *,
        digests: Sequence[bytes] | None = None,
    ) -> Iterator[SegmentBatch]:
        """``segments`` (canonical order) as batches of at most ``batch_rows`` rows.

        Raises
        ------
        PipelineError
            ``batch_rows`` below 1.
        """
        if batch_rows < 1:
            raise PipelineError(f"batch_rows must be >= 1, got {batch_rows!r}")
        whole = cls.from_segments(segments, features, digests=digests).batch
        for off in range(0, max(whole.num_rows, 1), batch_rows):
            yield cls(whole.slice(off, batch_rows))

    @property
    def features(self) -> tuple[str, ...]:
        """The projected feature names, in column order."""
        return tuple(n[2:] for n in self.batch.schema.names if n.startswith("f:"))

    @property
    def num_rows(self) -> int:
        return int(self.batch.num_rows)

    @property
    def nbytes(self) -> int:
        """Bytes of the batch's Arrow buffers."""
        return int(self.batch.nbytes)

    def ids(self) -> list[tuple[str, str | None, int]]:
        """The stable ids ``(source_id, entity, start_idx)``, in row order."""
        b = self.batch
        return list(
            zip(
                b.column("source_id").to_pylist(),
                b.column("entity").to_pylist(),
                b.column("start_idx").to_pylist(),
                strict=True,
            )
        )

    def to_segments(self) -> list[Segment]:
        """The rows as :class:`~kuration.contracts.segment.Segment` objects (features only)."""
        b = self.batch
        feats = {n: b.column(f"f:{n}").to_numpy(zero_copy_only=False) for n in self.features}
        out = []
        for i, (sid, ent, start, end) in enumerate(
            zip(
                b.column("source_id").to_pylist(),
                b.column("entity").to_pylist(),
                b.column("start_idx").to_pylist(),
                b.column("end_idx").to_pylist(),
                strict=True,
            )
        ):
            f = {n: float(v[i]) for n, v in feats.items()}
            out.append(Segment(sid, start, end, f, entity=ent))
        return out
