"""Video sources: VideoAdapter (video only) and JoinedMediaAdapter (a time series plus a video).

Both attach a lazy ``media:<column>`` (a :class:`~kuration.contracts.media.MediaColumn`
of frame references) to a :class:`~kuration.contracts.tick.TickTable` on the
schema's grid, by one rule (:func:`match_frames`):

* every time is exact: a frame is at ``start_offset + pts * time_base`` seconds
  and tick ``k`` at ``k / rate`` seconds, where ``rate`` is the schema's
  ``sample_hz`` as a rational (:func:`grid_rate`); all comparisons are made in
  integer units of a common denominator, so nothing drifts with length;
* each tick takes the frame whose presentation time is nearest (ties: the
  earlier frame), if it lies within ``tolerance`` seconds (inclusive);
* a frame serves at most one tick: when several ticks pick the same frame, the
  nearest keeps it (ties: the earlier tick) and the others have no frame;
* a tick with no frame has its media column absent (index ``-1``), never a
  repeated frame.  Variable frame rates need nothing special: only timestamps
  are used, never frame counts.
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ..contracts.media import (
    FrameRef,
    MediaColumn,
    MediaSpec,
    get_media_provider,
    motion_energy,
    parse_fraction,
)
from ..contracts.schema import SchemaSpec
from ..contracts.tick import Tick, TickTable
from ..errors import AdapterError, MediaError, SchemaError, SourceError
from .base import SOURCE_READER_TRAITS, InputAdapter, register_adapter
from .identity import SourceDigest, check_digest
from .timeseries import TimeseriesAdapter

__all__ = ["JoinedMediaAdapter", "VideoAdapter", "grid_rate", "match_frames", "motion_energy"]

_I64_SAFE = 1 << 62


def grid_rate(schema: SchemaSpec) -> Fraction:
    """The schema's tick rate as an exact rational (Hz).

    A media column's declared ``frame_rate`` is used when ``sample_hz`` is
    that rate as a float (``30000/1001`` for ``29.97002997...``); otherwise the
    closest rational with a denominator up to 10**6 (exact for every decimal
    rate such as ``25`` or ``12.5``).
    """
    hz = float(schema.sample_hz)
    for m in schema.media:
        if m.frame_rate is not None and math.isclose(float(m.frame_rate), hz, rel_tol=1e-12):
            return m.frame_rate
    return Fraction(hz).limit_denominator(1_000_000)


def match_frames(tick_units: np.ndarray, frame_units: np.ndarray, tolerance: int) -> np.ndarray:
    """The join rule: for each tick, the index of its frame, or ``-1``.

    Parameters
    ----------
    tick_units : ndarray, shape (T,), int64
        Tick times in integer units of a common clock, strictly increasing.
    frame_units : ndarray, shape (F,), int64
        Frame presentation times in the same units, strictly increasing.
    tolerance : int
        Largest allowed distance, same units (inclusive).

    Returns
    -------
    ndarray, shape (T,), int64
        Frame index per tick; each frame index appears at most once.
    """
    t = np.asarray(tick_units, dtype=np.int64)
    f = np.asarray(frame_units, dtype=np.int64)
    out = np.full(t.shape, -1, dtype=np.int64)
    if not f.size or not t.size:
        return out
    right = np.searchsorted(f, t, side="left")
    left = right - 1
    big = np.iinfo(np.int64).max
    dl = np.where(left >= 0, t - f[np.clip(left, 0, None)], big)
    dr = np.where(right < f.size, f[np.clip(right, None, f.size - 1)] - t, big)
    take_left = dl <= dr
    cand = np.where(take_left, left, right)
    dist = np.where(take_left, dl, dr)
    ok = dist <= tolerance
    rows = np.flatnonzero(ok)
    if rows.size:
        # a frame claimed by several ticks goes to the nearest (ties: the earlier tick)
        order = np.lexsort((rows, dist[rows], cand[rows]))
        rows, c = rows[order], cand[rows][order]
        first = np.ones(rows.size, dtype=bool)
        first[1:] = c[1:] != c[:-1]
        out[rows[first]] = c[first]
    return out


def _units(
    refs: Sequence[FrameRef], ks: np.ndarray, rate: Fraction, offset: Fraction, tol: Fraction
) -> tuple[np.ndarray, np.ndarray, int]:
    """Frame times, tick times and tolerance as int64 counts of one exact common unit."""
    dens = {rate.numerator, offset.denominator, tol.denominator}
    dens.update(r.time_base.denominator for r in refs[:1])
    d = math.lcm(*dens)
    frames = [int((offset + r.time) * d) for r in refs]
    step = rate.denominator * (d // rate.numerator)
    lo, hi = (int(ks[0]), int(ks[-1])) if ks.size else (0, 0)
    biggest = max([abs(lo * step), abs(hi * step), *(abs(x) for x in frames[:1] + frames[-1:])])
    if biggest >= _I64_SAFE:
        raise MediaError(
            f"timestamps too large for exact matching (common unit 1/{d} s)", uri=refs[0].uri
        )
    return np.asarray(frames, dtype=np.int64), ks.astype(np.int64) * step, int(tol * d)


def _media_spec(schema: SchemaSpec, column: str | None) -> MediaSpec:
    if not schema.media:
        raise SchemaError("a video adapter needs a schema with a media column")
    if column is None:
        if len(schema.media) != 1:
            raise SchemaError(f"name the media column: the schema has {len(schema.media)}")
        return schema.media[0]
    try:
        return schema.media_column(column)
    except KeyError:
        raise SchemaError(f"the schema has no media column {column!r}") from None


def _tolerance(value: Any, rate: Fraction) -> Fraction:
    if value is None:
        return Fraction(1, 2) / rate  # half a tick: one tick per frame on a matching grid
    tol = parse_fraction(value, "tolerance")
    if tol < 0:
        raise SchemaError(f"tolerance must be >= 0 seconds, got {tol}")
    return tol


class _MediaSource:
    """Shared by both adapters: probe, list frames and match them to ticks."""

    schema: SchemaSpec
    spec: MediaSpec
    tolerance: Fraction

    def _refs(self, uri: str) -> list[FrameRef]:
        provider = get_media_provider(self.spec.provider)
        info = provider.probe(uri, self.spec.stream)
        if self.spec.time_base is not None and info.time_base != self.spec.time_base:
            raise MediaError(
                f"time base is {info.time_base}, the schema declares {self.spec.time_base}",
                uri=uri,
                stream=self.spec.stream,
            )
        refs = list(provider.iter_refs(uri, self.spec.stream))
        if not refs:
            raise MediaError("the stream holds no frames", uri=uri, stream=self.spec.stream)
        return refs

    def _column(self, refs: list[FrameRef], k0: int, n_steps: int) -> MediaColumn:
        rate = grid_rate(self.schema)
        ks = np.arange(k0, k0 + n_steps, dtype=np.int64)
        frames, ticks, tol = _units(refs, ks, rate, self.spec.start_offset, self.tolerance)
        return MediaColumn(self.spec, tuple(refs), match_frames(ticks, frames, tol))


class VideoAdapter(_MediaSource, InputAdapter):
    """A video file as a source: one entity, one tick per frame on the schema's grid.

    Parameters
    ----------
    schema : SchemaSpec
        Its ``sample_hz`` must be the stream's frame rate (declared
        ``frame_rate``, else the probed average rate).
    column : str, optional
        The media column (default: the schema's only one).
    entity : str
        Id of the single entity (the camera).
    derived : mapping of field name to str
        Numeric fields computed from the frames; every schema field must be
        derived.  Known: ``"frame_time"`` (the frame's presentation time on the
        schema's clock, ``start_offset + pts * time_base``, seconds; nothing is
        decoded) and ``"motion_energy"`` (:func:`motion_energy` on frames
        decoded at ``motion_size`` in gray: the whole video is decoded while
        reading, so prefer the ``motion_energy`` BatchTransform, which decodes
        only the segments' frames in bounded batches).
    motion_size : (int, int)
        ``(H, W)`` the frames are scaled to for ``motion_energy``, pixels.
    chunk : int
        Frames decoded per batch while deriving fields (bounds memory).
    tolerance : int or str, optional
        Seconds a frame may lie from its tick (default half a tick).

    Raises
    ------
    SchemaError
        No media column, an underived field, an unknown derivation.
    """

    name: ClassVar[str] = "video"
    _DERIVED = ("motion_energy", "frame_time")

    def __init__(
        self,
        schema: SchemaSpec,
        *,
        column: str | None = None,
        entity: str = "camera",
        derived: Mapping[str, str] | None = None,
        motion_size: Sequence[int] = (36, 64),
        chunk: int = 64,
        tolerance: int | str | None = None,
    ) -> None:
        super().__init__(schema)
        self.spec = _media_spec(schema, column)
        self.entity = str(entity)
        self.derived = dict(derived or {})
        missing = [f.name for f in (*schema.fields, *schema.globals) if f.name not in self.derived]
        if missing:
            raise SchemaError(f"video adapter: fields {missing} have no 'derived' computation")
        for name, how in self.derived.items():
            if how not in self._DERIVED:
                raise SchemaError(
                    f"unknown derivation {how!r} (known: {self._DERIVED})", field=name
                )
            if name not in schema.field_names:
                raise SchemaError("derived fields must be per-entity schema fields", field=name)
        self.motion_size = (int(motion_size[0]), int(motion_size[1]))
        if chunk < 2:
            raise AdapterError(f"chunk must be >= 2 frames, got {chunk}", adapter="video")
        self.chunk = int(chunk)
        self._tol_opt = tolerance
        self.tolerance = _tolerance(tolerance, grid_rate(schema))

    def options(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "column": self.spec.name,
            "entity": self.entity,
            "derived": dict(self.derived),
            "motion_size": list(self.motion_size),
            "chunk": self.chunk,
        }
        if self._tol_opt is not None:
            d["tolerance"] = str(self._tol_opt)
        return d

    def _check_rate(self, uri: str) -> None:
        info = get_media_provider(self.spec.provider).probe(uri, self.spec.stream)
        nominal = self.spec.frame_rate or info.frame_rate
        if nominal is None or nominal != grid_rate(self.schema):
            raise MediaError(
                f"frame rate {nominal} is not the schema's grid rate {grid_rate(self.schema)} "
                "(declare frame_rate in the media column, or use JoinedMediaAdapter)",
                uri=uri,
                stream=self.spec.stream,
            )

    def _motion(self, refs: list[FrameRef]) -> np.ndarray:
        provider = get_media_provider(self.spec.provider)
        out = np.empty(len(refs))
        prev = None
        for a in range(0, len(refs), self.chunk):
            frames = provider.decode_batch(refs[a : a + self.chunk], self.motion_size, "gray")
            out[a : a + frames.shape[0]] = motion_energy(frames, prev)
            prev = frames[-1]
        return out

    def read_table(self, uri: str) -> TickTable:
        """The video as a table: derived fields per frame, the frame as a lazy media column.

        Raises
        ------
        MediaError
            Unreadable media, a frame rate off the grid, a declared time base
            that the stream does not have.
        """
        uri = str(uri)
        self._check_rate(uri)
        refs = self._refs(uri)
        rate = grid_rate(self.schema)
        off = self.spec.start_offset
        k_first = math.floor((off + refs[0].time) * rate + Fraction(1, 2))
        k_last = math.floor((off + refs[-1].time) * rate + Fraction(1, 2))
        col = self._column(refs, k_first, k_last - k_first + 1)
        present = col.present[:, None]
        feats: dict[str, np.ndarray] = {}
        if "motion_energy" in self.derived.values():
            feats["motion_energy"] = self._motion(refs)
        if "frame_time" in self.derived.values():
            feats["frame_time"] = np.array([float(off + r.time) for r in refs])
        values = {}
        for f in self.schema.fields:
            v = np.full((col.index.size, 1, 1), np.nan)
            v[present[:, 0], 0, 0] = feats[self.derived[f.name]][col.index[present[:, 0]]]
            values[f.name] = v
        return TickTable(
            self.source_id(uri),
            self.schema,
            int(k_first),
            (self.entity,),
            values,
            present.copy(),
            media={self.spec.name: col},
        )

    def ticks(self, uri: str) -> Iterator[Tick]:
        """The ticks that hold a frame, each with its :class:`FrameRef` in ``media``."""
        return self.read_table(uri).iter_ticks()


class JoinedMediaAdapter(_MediaSource, InputAdapter):
    """A time series (read by :class:`TimeseriesAdapter`) joined to a video on the same clock.

    The source URI is the series file; its video is ``video`` formatted with
    ``{dir}`` (the series file's directory) and ``{stem}`` (its base name
    without extension).  Each tick gets the nearest frame within
    ``tolerance`` (see the module docstring); the media column's
    ``start_offset`` places the video's ``pts = 0`` on the series clock.

    Parameters
    ----------
    schema : SchemaSpec
    series : mapping
        :class:`TimeseriesAdapter` options (``time_column``, ``fields``, ...).
    video : str
        Path template of the video.
    column : str, optional
        The media column (default: the schema's only one).
    tolerance : int or str, optional
        Seconds, exact (``"1/50"``); default half a tick.

    Raises
    ------
    SchemaError
        No media column or a bad tolerance; TimeseriesAdapter's own errors.
    """

    name: ClassVar[str] = "joined-media"

    def __init__(
        self,
        schema: SchemaSpec,
        *,
        series: Mapping[str, Any],
        video: str = "{dir}/{stem}.mp4",
        column: str | None = None,
        tolerance: int | str | None = None,
    ) -> None:
        super().__init__(schema)
        self.spec = _media_spec(schema, column)
        self.series_options = dict(series)
        self.series = TimeseriesAdapter(schema, **self.series_options)
        self.video = str(video)
        self._tol_opt = tolerance
        self.tolerance = _tolerance(tolerance, grid_rate(schema))

    def options(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "series": dict(self.series_options),
            "video": self.video,
            "column": self.spec.name,
        }
        if self._tol_opt is not None:
            d["tolerance"] = str(self._tol_opt)
        return d

    def video_uri(self, uri: str) -> str:
        """The video that goes with series file ``uri``."""
        p = Path(uri)
        return self.video.format(dir=str(p.parent), stem=p.name.split(".", 1)[0])

    def source_id(self, uri: str) -> str:
        return self.series.source_id(uri)

    def fingerprint(self, uri: str) -> str:
        """SHA-256 over the series' and the video's content identities."""
        return _joined(self.series.fingerprint(uri), self._video_identity(uri))

    def _video_identity(self, uri: str) -> str:
        return InputAdapter.fingerprint(self, self.video_uri(uri))

    def read_checked(
        self,
        uri: str,
        *,
        entities: Iterable[Any] | None = None,
        expect: SourceDigest | None = None,
    ) -> tuple[TickTable, SourceDigest]:
        """The joined table and its digest: the series read once and hashed as it is parsed,
        the video hashed once (its frames are decoded later, by reference).

        Raises
        ------
        SourceChangedError
            The series or the video is not what ``expect`` names.
        SourceError, MediaError
            As :meth:`read_table`.
        """
        series, digest = self.series.read_checked(uri, entities=entities)
        got = SourceDigest(_joined(digest.fingerprint, self._video_identity(uri)))
        check_digest(uri, self.source_id(uri), expect, got)
        return self._join(series, str(uri)), got

    def read_table(self, uri: str) -> TickTable:
        """The series' table with the video's frames joined as a lazy media column.

        Raises
        ------
        SourceError
            From the series.
        MediaError
            Unreadable video, or a declared time base it does not have.
        """
        return self._join(self.series.read_table(uri), str(uri))

    def _join(self, table: TickTable, uri: str) -> TickTable:
        """The series ``table`` of ``uri`` with its video's frames as a lazy media column."""
        video = self.video_uri(uri)
        if not os.path.isfile(video):
            raise SourceError(f"video {video!r} not found", source=str(uri))
        col = self._column(self._refs(video), table.k0, table.n_steps)
        return TickTable(
            table.source_id,
            table.schema,
            table.k0,
            table.entity_ids,
            table.values,
            table.present,
            table.globals,
            table.events,
            media={**table.media, self.spec.name: col},
        )

    def ticks(self, uri: str) -> Iterator[Tick]:
        return self.read_table(uri).iter_ticks()


def _joined(series: str, video: str) -> str:
    """A joined source's fingerprint: SHA-256 over its series' and its video's identities."""
    h = hashlib.sha256()
    h.update(series.encode())
    h.update(video.encode())
    return h.hexdigest()


register_adapter("video", VideoAdapter, execution_traits=SOURCE_READER_TRAITS)
register_adapter("joined-media", JoinedMediaAdapter, execution_traits=SOURCE_READER_TRAITS)
