"""The ``stage`` step of an hours run for ``layout="lerobot"`` (see :mod:`kuration.output.lerobot`).

Every admitted track (one source and entity, or one span of it) becomes one
LeRobot episode, train episodes first, then test (``info.json["splits"]``).  A
track's columns are built as the packed layout builds them
(:func:`~kuration.output.packed.track_columns`: the shards' rows, pad rows
included); the episode's frames are its real rows, and each shard's entry points
at its rows in a data file (``path``, ``row_start``, ``n_steps`` real rows read,
``n_rows`` with padding) with the ``size``/SHA-256 of the arrays a reader rebuilds
from them (:func:`~kuration.output.packed.shard_digest`), so reading the folder back
gives the ``files`` layout's arrays for the same job.

Each media modality ``<m>`` is a camera ``observation.images.<m>``: every episode's
frames go into a file of their own, copied from the source video when the cut falls
on keyframes and encoded again otherwise (:mod:`kuration.output.lerobot_cameras`);
the episode's frames are then those the written file decodes to, which is what a
reader returns and what the shard digests cover.  A remux whose decoded frames
differ from the source's is replaced by an encode.  The shard entry records its
frames (``videos``: file, first frame, ``[H, W]``, ``how``: ``remuxed`` or
``reencoded``) and ``config.json`` counts both (``results.lerobot_videos``).

The whole folder is written into the staging namespace every time (the episodes
table and ``stats.json`` depend on every episode).  An episode's task is its
source's LeRobot task when the source is a LeRobot episode, else :data:`TASK`;
``robot_type`` is the source datasets' when they agree.  On publication a file whose
size and SHA-256 equal the copy already in place is left there (counted as
reused), the others are moved in.  The manifest's ``files`` list records every
``data/``, ``meta/`` and ``videos/`` file's size and SHA-256.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ...core.progress import emit
from ...errors import KurationError, OutputSpecError
from ...output.commit import remove_tree
from ...output.lerobot import DATA_PATH, feature_keys, write_lerobot
from ...output.lerobot_cameras import (
    PROVIDER,
    camera_feature,
    encode_frames,
    read_frames,
    remux_span,
    video_rel,
)
from ...output.media import media_mask_name
from ...output.packed import file_digest, shard_digest, shard_view, track_columns
from ...output.writer import ShardWriter, shard_plan
from ...selection.fill import Candidate
from ...sources._lerobot_meta import load_meta
from .stage_packed import _Tracks

if TYPE_CHECKING:
    from .state import HoursRun

__all__ = ["LEROBOT_DIRS", "TASK", "stage_lerobot"]

#: the folders of a LeRobot dataset (what publication replaces and cleans)
LEROBOT_DIRS = ("data", "meta", "videos")
#: task text of an episode whose source is not a LeRobot episode
TASK = "curated by kuration"
_EP_URI = re.compile(r"^(?P<root>.+)#episode=(?P<ep>\d+)$")


def _order_key(e: Mapping[str, Any]) -> tuple[Any, ...]:
    span = -1 if e["span_index"] is None else e["span_index"]
    return (e["split"] != "train", e["source_id"], e["entity_id"], span, e["shard_index"])


def _lerobot_source(uri: str, metas: dict[str, Any]) -> tuple[Any, int] | None:
    """The LeRobot dataset meta and episode index of a source that is a LeRobot episode."""
    m = _EP_URI.match(uri)
    if m is None:
        return None
    root = m.group("root")
    try:
        meta = metas[root] if root in metas else metas.setdefault(root, load_meta(root))
    except (KurationError, OSError):  # not a LeRobot folder: another source with a '#'
        return None
    return meta, int(m.group("ep"))


def _task(uri: str, metas: dict[str, Any]) -> str:
    """The source's LeRobot task text when it is an episode of a LeRobot dataset."""
    found = _lerobot_source(uri, metas)
    ep = found[0].episodes.get(found[1]) if found is not None else None
    return ep.tasks[0] if ep is not None and ep.tasks else TASK


def _robot_type(metas: Mapping[str, Any]) -> str | None:
    """The source datasets' ``robot_type`` when they all name the same one."""
    kinds = {m.info.get("robot_type") for m in metas.values()}
    return kinds.pop() if len(kinds) == 1 else None


def _episode(
    r: HoursRun, writer: ShardWriter, track: Any, group: list[dict[str, Any]], cams: _Cameras
) -> tuple[dict[str, np.ndarray], list[tuple[int, int]]]:
    """A track's numeric frames (its real rows), its cameras written as episode
    ``len(cams.rows)``, and each shard's digest; raises when a step of the track is
    absent (a LeRobot episode holds a value at every frame)."""
    cols, offsets = track_columns(writer, track)
    real = np.concatenate(
        [
            np.arange(offsets[e["shard_index"]], offsets[e["shard_index"]] + e["n_steps"])
            for e in group
        ]
    )
    e = group[0]
    what = f"track {e['source_id']} {e['entity_id']} span {e['span_index']}"
    present = cols["_present"][real]
    if not present.all():
        raise OutputSpecError(
            f"{what} has {int((~present).sum())} absent steps: a LeRobot episode holds a value "
            "at every frame (layout 'lerobot'; filter such tracks, or use layout 'files')"
        )
    if cams.keys:
        slots = shard_plan(track.n_steps, writer.spec)
        steps = np.concatenate(
            [np.arange(slots[g["shard_index"]].start, slots[g["shard_index"]].stop) for g in group]
        )
        cams.write(r, writer, track, cols, real, steps, what)
    frames = {m: cols[m][real] for m in writer.spec.modalities if m not in cams.keys}
    first = track.k0 + track.start_idx
    done = 0
    for g in group:
        g["first_step"] = int(first + offsets[g["shard_index"]])
        view = shard_view(cols, offsets[g["shard_index"]], g["n_rows"], str(g["entity_id"]))
        g["size"], g["sha256"] = shard_digest(view)
        if cams.keys:
            g["videos"] = {m: {**v, "frame": done} for m, v in cams.rows[-1][1].items()}
        done += int(g["n_steps"])
    return frames, [(int(offsets[g["shard_index"]]), int(g["n_steps"])) for g in group]


class _Cameras:
    """The videos of the layout's episodes (:mod:`kuration.output.lerobot_cameras`): each
    episode's camera written into ``stage`` by a remux or an encode, its frames then
    replaced by the written file's decoded frames (what readers return)."""

    def __init__(self, r: HoursRun, stage: Path) -> None:
        self.stage = stage
        self.keys = {
            k: f"observation.images.{k}" for k, m in r.spec.modalities.items() if m.route == "media"
        }
        # per episode: (episode table columns, {modality: entry's video record})
        self.rows: list[tuple[dict[str, Any], dict[str, dict[str, Any]]]] = []
        self.codec: dict[str, str] = {}
        self.count = {k: {"remuxed": 0, "reencoded": 0} for k in self.keys}

    def write(
        self,
        r: HoursRun,
        writer: ShardWriter,
        track: Any,
        cols: dict[str, np.ndarray],
        real: np.ndarray,
        steps: np.ndarray,
        what: str,
    ) -> None:
        episode = len(self.rows)
        columns: dict[str, Any] = {}
        records: dict[str, dict[str, Any]] = {}
        for m, key in self.keys.items():
            if not cols[media_mask_name(m)][real].all():
                raise OutputSpecError(
                    f"{what} lacks frames of {m!r}: a LeRobot episode has a frame at every "
                    "step (layout 'lerobot'; filter such tracks)"
                )
            spec = writer.schema.media_column(writer.spec.modalities[m].arg)
            refs = track.media[spec.name].refs_at(steps)
            rel, chunk, file = video_rel(key, episode)
            out = self.stage / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            frames = cols[m][real]
            copy = spec.provider == PROVIDER and remux_span(refs, out, int(r.hz), spec.size)
            how = "remuxed" if copy else "reencoded"
            got = read_frames(out, 0, len(real), spec.size) if how == "remuxed" else None
            if got is None or not np.array_equal(got, frames):
                how = "reencoded"
                encode_frames(frames, out, int(r.hz))
                got = read_frames(out, 0, len(real), spec.size)
            self.count[m][how] += 1
            self.codec.setdefault(m, _codec(refs) if how == "remuxed" else "h264")
            cols[m][real] = got
            pre = f"videos/{key}/"
            columns.update(
                {
                    pre + "chunk_index": chunk,
                    pre + "file_index": file,
                    pre + "from_timestamp": 0.0,
                    pre + "to_timestamp": len(real) / r.hz,
                }
            )
            records[m] = {"path": rel, "shape": list(spec.size), "how": how}
        self.rows.append((columns, records))

    def features(self, r: HoursRun) -> dict[str, Any]:
        return {
            key: camera_feature(r.spec.modalities[m].shape, int(r.hz), self.codec.get(m, "h264"))
            for m, key in self.keys.items()
        }


def _codec(refs: Any) -> str:
    """The codec of the stream a remux copied."""
    import av

    with av.open(refs[0].uri) as c:
        return str(c.streams[refs[0].stream].codec_context.name)


def stage_lerobot(r: HoursRun, stage: Path, writer: ShardWriter) -> dict[str, Any]:
    """Write the LeRobot folder into ``stage``; fills ``r.entries``, ``r.to_move``,
    ``r.packed_files`` (the manifest's ``files``) and the counters.

    Raises
    ------
    OutputSpecError
        A rate that is not a whole number of frames per second, or a track with an
        absent step.
    """
    if r.hz != int(r.hz):
        raise OutputSpecError(f"layout 'lerobot' needs an integer fps; the run is at {r.hz:g} Hz")
    cand_of: dict[int, Candidate] = {}
    planned: list[dict[str, Any]] = []
    for _split, c, entries in r.admitted:
        for e in entries:
            copy = dict(e)
            copy["n_rows"] = r.spec.shard_length if copy["padded"] else copy["n_steps"]
            cand_of[id(copy)] = c
            planned.append(copy)
    planned.sort(key=_order_key)
    groups: list[list[dict[str, Any]]] = []
    for e in planned:
        if groups and cand_of[id(groups[-1][0])] is cand_of[id(e)]:
            groups[-1].append(e)
        else:
            groups.append([e])
    track_of = _Tracks(r, cand_of)
    metas: dict[str, Any] = {}
    episodes, places = [], []
    for d in LEROBOT_DIRS:
        remove_tree(stage / d)
    cams = _Cameras(r, stage)
    emit(r.progress, "writing", "start", total=len(groups))
    for i, group in enumerate(groups, 1):
        track = track_of(group[0])
        frames, place = _episode(r, writer, track, group, cams)
        uri = r.pool().sources[group[0]["source_id"]].uri
        episodes.append({"split": group[0]["split"], "task": _task(uri, metas), "frames": frames})
        places.append(place)
        emit(r.progress, "writing", "advance", current=i, total=len(groups))
    mods = {
        k: {"dtype": m.dtype, "shape": list(m.shape)}
        for k, m in r.spec.modalities.items()
        if k not in cams.keys
    }
    keys = feature_keys(list(mods))
    _, ep_rows = write_lerobot(
        stage,
        episodes,
        mods,
        keys,
        {},
        fps=int(r.hz),
        robot_type=_robot_type(metas),
        file_bytes=r.spec.target_file_bytes,
        float32=False,
        cameras=([c for c, _ in cams.rows], cams.features(r)) if cams.keys else None,
    )
    if cams.keys:
        r.lerobot_videos = {
            "per_camera": {cams.keys[m]: n for m, n in cams.count.items()},
            "remuxed": sum(n["remuxed"] for n in cams.count.values()),
            "reencoded": sum(n["reencoded"] for n in cams.count.values()),
        }
    _point_entries(groups, places, ep_rows)
    columns = {m: {"key": keys[m], **mods[m]} for m in mods}
    _record_files(r, stage, columns, groups)
    for group in groups:
        r.entries.extend(group)
    r.partitions = len(r.packed_files)
    return {
        "rows_in": len(r.admitted),
        "rows_out": len(r.entries),
        "partitions": len(r.packed_files),
        "bytes": sum(int(f["size"]) for f in r.packed_files),
        "checkpoint_hits": r.reused,
        "checkpoint_misses": r.rebuilt,
        "queue_depth": 1,
    }


def _point_entries(
    groups: list[list[dict[str, Any]]],
    places: list[list[tuple[int, int]]],
    ep_rows: list[dict[str, Any]],
) -> None:
    """Each shard entry's data file and first row there (``row_start``), its name as a
    file of its own kept as ``shard``, and its episode."""
    first_of_file: dict[int, int] = {}
    for row in ep_rows:
        first_of_file.setdefault(int(row["data/file_index"]), int(row["dataset_from_index"]))
    for group, place, row in zip(groups, places, ep_rows, strict=True):
        f = int(row["data/file_index"])
        at = int(row["dataset_from_index"]) - first_of_file[f]
        for e, (_, n_steps) in zip(group, place, strict=True):
            e["shard"] = e["path"].rsplit(".", 1)[0]
            e["path"] = DATA_PATH.format(chunk_index=0, file_index=f)
            e["row_start"] = at
            e["lerobot_episode"] = int(row["episode_index"])
            at += n_steps


def _record_files(
    r: HoursRun, stage: Path, columns: Mapping[str, Any], groups: list[list[dict[str, Any]]]
) -> None:
    """Every staged file's record (data files with their rows and columns); a file whose
    bytes equal the copy in place stays there (reused), the others are moved in."""
    import pyarrow.parquet as pq

    kept: set[str] = set()
    for d in LEROBOT_DIRS:
        base = stage / d
        for p in sorted(base.rglob("*")) if base.is_dir() else []:
            if not p.is_file():
                continue
            rel = p.relative_to(stage).as_posix()
            size, sha = file_digest(p)
            rec: dict[str, Any] = {"path": rel, "size": size, "sha256": sha}
            if d == "data":
                rec["rows"] = pq.ParquetFile(str(p)).metadata.num_rows
                rec["columns"] = dict(columns)
                rec["hz"] = float(r.hz)
            r.packed_files.append(rec)
            there = r.root / rel
            if (
                r.resume
                and there.is_file()
                and not there.is_symlink()
                and file_digest(there) == (size, sha)
            ):
                p.unlink()
                kept.add(rel)
            else:
                r.to_move.append(rel)
    # the counters count shards: those whose data file stayed in place were reused
    for group in groups:
        for e in group:
            if e["path"] in kept:
                r.reused += 1
            else:
                r.rebuilt += 1
