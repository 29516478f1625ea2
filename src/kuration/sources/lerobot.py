"""LeRobotAdapter: a LeRobot v3 dataset folder, one source per episode.

A job lists the dataset folder as its source; :meth:`LeRobotAdapter.expand`
checks the dataset once (totals, global statistics: see
:mod:`._lerobot_meta`) and turns it into one URI per episode,
``<root>#episode=<N>``, so that splits never cut an episode.  Reading an
episode:

* its rows are the data file's rows with its ``episode_index``; their
  ``index`` column must be exactly ``[dataset_from_index, dataset_to_index)``
  and their count its ``length`` (the v2.1 -> v3.0 converter wrote episodes
  into the wrong file: huggingface/lerobot#2401);
* each row lands on tick ``round(timestamp * fps)``; a timestamp more than
  LeRobot's ``tolerance_s`` (1e-4 s) off that grid is an error; a gap in the
  grid is a dropped frame (the ticks are absent, counted as ``dropped_frames``);
  time that does not increase is always an error;
* its stored per-episode statistics must match its data;
* each camera is a lazy ``media:`` column over the camera's shared MP4:
  the frames in ``[from_timestamp, to_timestamp)``, placed on the episode's
  ticks from ``from_timestamp`` (which must lie on the 1/fps grid), and as
  many as the episode has frames.

Every mismatch is a :class:`~kuration.errors.SourceError` naming the episode,
unless the user opted into that repair (``repair``: ``index_ranges``: take
the rows by ``episode_index``, searching every data file; ``timestamps``:
snap off-grid rows to the nearest tick; ``stats``: ignore the stored
statistics; ``video_windows``: snap the window start, and leave ticks without
a frame absent; ``totals``: ignore info.json's totals).  A repair warns
(:class:`~kuration.errors.DataRepairWarning`) and is counted in the episode's
``TickTable.counts`` (recorded per source in ``config.json``).
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..contracts.media import FrameRef, MediaColumn, get_media_provider
from ..contracts.schema import SchemaSpec
from ..contracts.tick import Tick, TickTable
from ..errors import AdapterError, SourceError
from ._lerobot_meta import (
    REPAIRS,
    TOLERANCE_S,
    Episode,
    LeRobotMeta,
    check_dataset,
    feature_matrix,
    file_digest,
    is_dataset,
    load_meta,
    refuse_or_repair,
    stats_mismatch,
)
from .base import SOURCE_READER_TRAITS, InputAdapter, register_adapter

__all__ = ["LeRobotAdapter", "episode_uri", "parse_episode_uri"]

_URI = re.compile(r"^(?P<root>.+)#episode=(?P<ep>\d+)$")
_COMPONENT = re.compile(r"^(?P<key>.+?)\[(?P<part>[^\]]+)\]$")
_BOOK = ("index", "episode_index", "timestamp", "frame_index", "task_index")


def episode_uri(root: str, episode: int) -> str:
    """The source URI of episode ``episode`` of the dataset at ``root``."""
    return f"{os.path.abspath(root)}#episode={int(episode)}"


def parse_episode_uri(uri: str) -> tuple[str, int]:
    """``(root, episode)`` of an episode URI.

    Raises
    ------
    SourceError
        ``uri`` does not name an episode (``<root>#episode=<N>``).
    """
    m = _URI.match(str(uri))
    if m is None:
        raise SourceError("not a LeRobot episode URI (<dataset>#episode=<N>)", source=str(uri))
    return m.group("root"), int(m.group("ep"))


class LeRobotAdapter(InputAdapter):
    """Read the episodes of a LeRobot v3 dataset (see the module docstring).

    Parameters
    ----------
    schema : SchemaSpec
        Its ``sample_hz`` must be the dataset's ``fps``.
    fields : mapping of str to str or list of str
        Schema field -> feature (``"observation.state"``: every component in
        order), one component (``"observation.state[gripper]"`` by its name in
        ``features[...]["names"]``, or ``"action[5]"`` by position), or a list
        of components.  Every schema field must be mapped and its ``dims``
        must equal the components mapped.
    media : mapping of str to str, optional
        Schema media column -> camera key (``"observation.images.top"``).
    entity : str
        Id of the one entity of every episode.
    repair : list of str
        Repairs the user opts into (see the module docstring); default none:
        every mismatch is an error.

    Raises
    ------
    AdapterError
        An unknown repair, an unmapped field, or a schema with globals or events.
    """

    name: ClassVar[str] = "lerobot"

    def __init__(
        self,
        schema: SchemaSpec,
        *,
        fields: Mapping[str, str | Sequence[str]],
        media: Mapping[str, str] | None = None,
        entity: str = "robot",
        repair: Sequence[str] = (),
    ) -> None:
        super().__init__(schema)
        bad = sorted(set(repair) - set(REPAIRS))
        if bad:
            raise AdapterError(f"unknown repair {bad} (known: {list(REPAIRS)})", adapter="lerobot")
        if schema.globals or schema.events:
            raise AdapterError("a LeRobot episode has no globals or events", adapter="lerobot")
        self.fields = {k: [v] if isinstance(v, str) else list(v) for k, v in fields.items()}
        missing = sorted(set(schema.field_names) - set(self.fields))
        extra = sorted(set(self.fields) - set(schema.field_names))
        if missing or extra:
            raise AdapterError(
                f"fields: unmapped schema fields {missing}, unknown fields {extra}",
                adapter="lerobot",
            )
        self.media = dict(media or {})
        unknown = sorted(set(self.media) - {m.name for m in schema.media})
        if unknown:
            raise AdapterError(f"media: {unknown} are not schema media columns", adapter="lerobot")
        self.entity = str(entity)
        self.repair = tuple(sorted(set(repair)))

    def options(self) -> dict[str, Any]:
        return {
            "fields": {k: list(v) for k, v in self.fields.items()},
            "media": dict(self.media),
            "entity": self.entity,
            "repair": list(self.repair),
        }

    # -- sources -------------------------------------------------------------------------
    def expand(self, uri: str) -> list[str]:
        """One URI per episode of the dataset at ``uri`` (an episode URI is returned as is).

        Runs the dataset-level checks first (:func:`._lerobot_meta.check_dataset`).

        Raises
        ------
        SourceError
            Not a v3 dataset, or a dataset-level mismatch not opted into repairing.
        """
        if _URI.match(str(uri)):
            return [str(uri)]
        if not is_dataset(uri):
            raise SourceError("not a LeRobot dataset folder (no meta/info.json)", source=str(uri))
        meta = load_meta(uri)
        self._check_rate(meta)
        check_dataset(meta, self.repair)
        return [episode_uri(meta.root, ep) for ep in meta.episodes]

    def source_id(self, uri: str) -> str:
        """``ep<N:06d>_task<T:03d>``: the task index makes the task a usable tag and group
        (``{"regex": "_task(\\\\d+)$"}``)."""
        root, ep = parse_episode_uri(uri)
        meta = load_meta(root)
        task = _task_index(meta, _episode(meta, ep, uri))
        return f"ep{ep:06d}" + ("" if task is None else f"_task{task:03d}")

    def fingerprint(self, uri: str) -> str:
        """SHA-256 over the digests of every file the episode's read depends on (the
        metadata, its data file, or every data file under the ``index_ranges`` repair,
        and its cameras' videos: each shared file hashed once per process) and the
        episode's index range."""
        root, ep = parse_episode_uri(uri)
        meta = load_meta(root)
        e = _episode(meta, ep, uri)
        files = [os.path.relpath(p, root) for p in _meta_paths(root)]
        files += meta.data_files() if "index_ranges" in self.repair else [e.data_file]
        files += [e.videos[k][0] for k in self.media.values() if k in e.videos]
        h = hashlib.sha256(f"lerobot-episode\0{ep}\0{e.from_index}\0{e.to_index}\n".encode())
        for rel in sorted(set(files)):
            h.update(f"{rel}\0{file_digest(os.path.join(root, rel))}\n".encode())
        return h.hexdigest()

    # -- reading -------------------------------------------------------------------------
    def read_table(self, uri: str) -> TickTable:
        """The episode on the ``fps`` grid: fields from its features, cameras as lazy media.

        Raises
        ------
        SourceError
            Naming the episode: rows that disagree with its index range or length,
            timestamps off the grid or not increasing, stale per-episode statistics,
            a video window off the grid or holding another number of frames (each
            unless its repair was opted into); a missing file or feature.
        """
        root, ep = parse_episode_uri(uri)
        meta = load_meta(root)
        self._check_rate(meta)
        e = _episode(meta, ep, uri)
        src = f"{meta.root} episode {ep}"
        counts: dict[str, int] = {}
        table = self._rows(meta, e, src, counts)
        ticks = self._ticks(meta, table, src, counts)
        k0, n_t = int(ticks[0]), int(ticks[-1] - ticks[0] + 1)
        counts["dropped_frames"] = n_t - ticks.size
        self._check_stats(meta, e, table, src, counts)
        present = np.zeros((n_t, 1), dtype=bool)
        present[ticks - k0, 0] = True
        values = {}
        for name, parts in self.fields.items():
            cols = np.concatenate([self._components(meta, table, p, src) for p in parts], axis=1)
            if cols.shape[1] != self.schema.field(name).dims:
                raise SourceError(
                    f"field {name!r} has {self.schema.field(name).dims} components, "
                    f"{parts} give {cols.shape[1]}",
                    source=src,
                )
            arr = np.full((n_t, 1, cols.shape[1]), np.nan)
            arr[ticks - k0, 0, :] = cols
            values[name] = arr
        media = {
            col: self._camera(meta, e, col, key, k0, n_t, src, counts)
            for col, key in self.media.items()
        }
        return TickTable(
            self.source_id(uri),
            self.schema,
            k0,
            (self.entity,),
            values,
            present,
            counts=counts,
            media=media,
        )

    def ticks(self, uri: str) -> Iterable[Tick]:
        return self.read_table(uri).iter_ticks()

    def _check_rate(self, meta: LeRobotMeta) -> None:
        if float(self.schema.sample_hz) != float(meta.fps):
            raise SourceError(
                f"the schema's sample_hz {self.schema.sample_hz} is not the dataset's fps {meta.fps}",
                source=meta.root,
            )

    def _columns(self, meta: LeRobotMeta) -> list[str]:
        keys = {_COMPONENT.sub(r"\g<key>", p) for ps in self.fields.values() for p in ps}
        return list(dict.fromkeys([*_BOOK, *sorted(keys)]))

    def _rows(self, meta: LeRobotMeta, e: Episode, src: str, counts: dict[str, int]) -> pa.Table:
        """The episode's rows, checked against its index range (repair: by episode_index)."""
        table = _read_episode(meta, e.data_file, e.index, self._columns(meta), src)
        problem = _range_problem(table, e)
        if problem is None:
            return table
        refuse_or_repair(problem, "index_ranges", self.repair, src, counts)
        found = [
            t
            for rel in meta.data_files()
            if (t := _read_episode(meta, rel, e.index, self._columns(meta), src)).num_rows
        ]
        if not found:
            raise SourceError("no data file holds a row of this episode", source=src)
        table = pa.concat_tables(found)
        return table.take(np.argsort(table.column("index").to_numpy(), kind="stable"))

    def _ticks(
        self, meta: LeRobotMeta, table: pa.Table, src: str, counts: dict[str, int]
    ) -> np.ndarray:
        ts = table.column("timestamp").to_numpy().astype(np.float64)
        ticks = np.rint(ts * meta.fps).astype(np.int64)
        off = np.abs(ts - ticks / meta.fps) > TOLERANCE_S
        if off.any():
            r = int(np.flatnonzero(off)[0])
            refuse_or_repair(
                f"{int(off.sum())} timestamps are more than {TOLERANCE_S} s off the 1/{meta.fps} s "
                f"grid (frame {r}: {ts[r]!r} s)",
                "timestamps",
                self.repair,
                src,
                counts,
            )
            counts["snapped_timestamps"] = int(off.sum())
        back = np.flatnonzero(np.diff(ticks) <= 0)
        if back.size:
            r = int(back[0]) + 1
            raise SourceError(
                f"time does not increase at frame {r} ({ts[r - 1]!r} s then {ts[r]!r} s)",
                source=src,
                row=r,
            )
        return ticks

    def _check_stats(
        self, meta: LeRobotMeta, e: Episode, table: pa.Table, src: str, counts: dict[str, int]
    ) -> None:
        for key, stored in sorted(e.stats.items()):
            if key not in table.column_names:
                continue
            x = feature_matrix(table, key, _dims(meta, key), src)
            problem = stats_mismatch(stored, x)
            if problem is not None:
                refuse_or_repair(
                    f"stored episode stats of {key!r}: {problem}", "stats", self.repair, src, counts
                )

    def _components(self, meta: LeRobotMeta, table: pa.Table, part: str, src: str) -> np.ndarray:
        """A whole feature (N, D), or one named or numbered component of it (N, 1)."""
        m = _COMPONENT.match(part)
        key = m.group("key") if m else part
        if key not in meta.features or key not in table.column_names:
            raise SourceError(f"no feature {key!r} in the dataset", source=src)
        x = feature_matrix(table, key, _dims(meta, key), src)
        if m is None:
            return x
        j = _component_index(meta, key, m.group("part"), x.shape[1], src)
        return x[:, j : j + 1]

    def _camera(
        self,
        meta: LeRobotMeta,
        e: Episode,
        column: str,
        key: str,
        k0: int,
        n_t: int,
        src: str,
        counts: dict[str, int],
    ) -> MediaColumn:
        """The episode's frames of camera ``key`` in its shared file, on the episode's ticks."""
        spec = self.schema.media_column(column)
        if key not in e.videos:
            raise SourceError(f"no video window for camera {key!r}", source=src)
        rel, t_from, t_to = e.videos[key]
        path = os.path.join(meta.root, rel)
        if not os.path.isfile(path):
            raise SourceError(f"video {rel!r} of camera {key!r} not found", source=src)
        fps = meta.fps
        start = round(t_from * fps)
        if abs(t_from * fps - start) > TOLERANCE_S * fps:
            refuse_or_repair(
                f"camera {key!r} window starts at {t_from!r} s, off the 1/{fps} s grid",
                "video_windows",
                self.repair,
                src,
                counts,
            )
        stop = round(t_to * fps)
        refs = [
            r
            for r in _frame_refs(path, spec.stream, spec.provider)
            if start <= _tick(r, fps) < stop
        ]
        if len(refs) != e.length:
            refuse_or_repair(
                f"camera {key!r} window [{t_from!r}, {t_to!r}) s holds {len(refs)} frames "
                f"for {e.length} frames of data",
                "video_windows",
                self.repair,
                src,
                counts,
            )
            counts[f"missing_frames:{column}"] = max(e.length - len(refs), 0)
        index = np.full(n_t, -1, dtype=np.int64)
        for i, r in enumerate(refs):
            t = _tick(r, fps) - start - k0
            if 0 <= t < n_t:
                index[t] = i
        return MediaColumn(spec, tuple(refs), index)


def _tick(ref: FrameRef, fps: int) -> int:
    """The grid tick nearest the frame's presentation time (half a tick goes later), exactly."""
    return int((ref.time * fps + Fraction(1, 2)) // 1)


@functools.lru_cache(maxsize=16)
def _refs_cached(
    path: str, size: int, mtime_ns: int, stream: int, provider: str
) -> tuple[FrameRef, ...]:
    return tuple(get_media_provider(provider).iter_refs(path, stream))


def _frame_refs(path: str, stream: int, provider: str) -> tuple[FrameRef, ...]:
    """Every frame of a shared video, listed once per process per (path, size, mtime)."""
    st = os.stat(path)
    return _refs_cached(path, st.st_size, st.st_mtime_ns, stream, provider)


def _meta_paths(root: str) -> list[str]:
    meta = os.path.join(root, "meta")
    return sorted(os.path.join(h, f) for h, _, fs in os.walk(meta) for f in fs)


def _episode(meta: LeRobotMeta, ep: int, uri: str) -> Episode:
    if ep not in meta.episodes:
        raise SourceError(f"the dataset has no episode {ep}", source=str(uri))
    return meta.episodes[ep]


def _task_index(meta: LeRobotMeta, e: Episode) -> int | None:
    by_text = {v: k for k, v in meta.tasks.items()}
    return by_text.get(e.tasks[0]) if e.tasks else None


def _dims(meta: LeRobotMeta, key: str) -> int:
    return int(np.prod(meta.features[key].get("shape") or [1]))


def _component_index(meta: LeRobotMeta, key: str, part: str, dims: int, src: str) -> int:
    names = meta.features[key].get("names")
    if isinstance(names, Mapping):  # older datasets: {"motors": [...]}
        names = next(iter(names.values()), None)
    if isinstance(names, list) and part in names:
        return names.index(part)
    if part.isdigit() and int(part) < dims:
        return int(part)
    raise SourceError(f"feature {key!r} has no component {part!r} (names {names})", source=src)


def _read_episode(meta: LeRobotMeta, rel: str, ep: int, cols: list[str], src: str) -> pa.Table:
    path = os.path.join(meta.root, rel)
    if not os.path.isfile(path):
        raise SourceError(f"data file {rel!r} not found", source=src)
    have = pq.ParquetFile(path).schema_arrow.names
    missing = [c for c in cols if c not in have and c != "task_index"]
    if missing:
        raise SourceError(f"data file {rel!r} lacks columns {missing}", source=src)
    return pq.read_table(
        path, columns=[c for c in cols if c in have], filters=[("episode_index", "=", ep)]
    )


def _range_problem(table: pa.Table, e: Episode) -> str | None:
    """Why the rows disagree with the episode's metadata, or None."""
    n = table.num_rows
    idx = table.column("index").to_numpy()
    span = e.to_index - e.from_index
    if n != e.length or n != span:
        return (
            f"{e.data_file} holds {n} rows of this episode, the metadata says length "
            f"{e.length} and index range [{e.from_index}, {e.to_index})"
        )
    if not np.array_equal(idx, np.arange(e.from_index, e.to_index)):
        return (
            f"the rows' index column runs {int(idx.min())}..{int(idx.max())}, "
            f"not [{e.from_index}, {e.to_index})"
        )
    return None


register_adapter("lerobot", LeRobotAdapter, execution_traits=SOURCE_READER_TRAITS)
