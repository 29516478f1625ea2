"""A source's :class:`~kuration.pipeline.run.scoring.SourceInfo` recorded in its partition commit.

The disk-backed pool (:mod:`kuration.pipeline.disk.hours`) scores each source into a
checkpointed partition whose commit also records what scoring learned of the source,
so that a rerun reusing the partition does not read the source again.
:func:`source_info_doc` writes that record (JSON, field by field over the dataclasses'
fields) and :func:`source_info_from_doc` reads it back.

A source's tracks are most of its record (about 45 tracks and 5 KB a quickstart
source, for 0.3 KB of scalars), and the run needs them only where it cuts candidates
and where it writes the admitted tracks.  :func:`source_info_kept` therefore keeps the
scalars and replaces the tracks with :class:`CommittedTracks`, which reads them from the
commit file again each time they are loaded: a run over 15,000 sources holds their
scalars, not 75 MB of tracks.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from ...errors import PipelineError
from ..run.scoring import SourceInfo, TrackExtent
from .track_columns import TrackColumns

if TYPE_CHECKING:
    from .checkpoint import PartitionCommit, StageCheckpoint

__all__ = [
    "CommittedTracks",
    "loaded_tracks",
    "source_info_doc",
    "source_info_from_doc",
    "source_info_kept",
    "text_value",
    "value_text",
]

_CLASSES: dict[str, type[Any]] = {"SourceInfo": SourceInfo, "TrackExtent": TrackExtent}
#: the fields a :class:`TrackColumns` holds (a track with more is decoded as objects)
_TRACK_FIELDS = {"entity_id", "first", "last", "n_present", "gaps"}
#: types :func:`_enc` returns as they are (a float may be infinite or NaN: not one of them)
_PLAIN = (int, str, bool, type(None))


def _enc(v: Any) -> Any:
    """``v`` as JSON: scalars JSON keeps exactly as they are, anything else as a one-key
    object naming its type (dataclasses field by field, over :func:`dataclasses.fields`)."""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, TrackColumns | CommittedTracks):  # recorded as the tuple it reads as
        v = tuple(v)
    if isinstance(v, float) and not math.isfinite(v):
        return {"float": repr(v)}
    if v is None or isinstance(v, bool | int | float | str):
        return v
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        name = type(v).__name__
        if _CLASSES.get(name) is not type(v):
            raise PipelineError(f"cannot record a {name} in a checkpoint", step="score")
        return {name: {f.name: _enc(getattr(v, f.name)) for f in dataclasses.fields(v)}}
    if isinstance(v, np.ndarray):
        return {"ndarray": [v.dtype.str, list(v.shape), _enc(v.ravel().tolist())]}
    if isinstance(v, bytes):
        return {"bytes": v.hex()}
    if type(v) in (tuple, list) and all(type(x) in _PLAIN for x in v):
        return {type(v).__name__: list(v)}  # what the loop below gives, without a call an item
    if _rows_of_one_class(v):  # e.g. a source's tracks: one list per field, not per row
        names = [f.name for f in dataclasses.fields(v[0])]
        cols = {n: _enc([getattr(x, n) for x in v]) for n in names}
        return {"rows": [type(v[0]).__name__, cols]}
    if isinstance(v, tuple | list | frozenset):
        items = sorted(v, key=repr) if isinstance(v, frozenset) else v
        return {type(v).__name__: [_enc(x) for x in items]}
    if isinstance(v, Mapping):
        return {"map": [[_enc(k), _enc(x)] for k, x in v.items()]}
    raise PipelineError(f"cannot record a {type(v).__name__} in a checkpoint", step="score")


def _rows_of_one_class(v: Any) -> bool:
    """Whether ``v`` is a non-empty tuple of instances of one recorded dataclass."""
    if not isinstance(v, tuple) or not v:
        return False
    cls = type(v[0])
    return _CLASSES.get(cls.__name__) is cls and all(type(x) is cls for x in v)


def _dec(v: Any) -> Any:
    """The value :func:`_enc` encoded."""
    if not isinstance(v, dict):
        return v
    ((kind, x),) = v.items()
    if kind == "rows":  # a tuple of one dataclass, stored by column
        name, cols = x
        cls, got = _CLASSES[name], {n: _dec(c) for n, c in cols.items()}
        if cls is TrackExtent and set(got) == _TRACK_FIELDS:  # kept by column for the run
            return TrackColumns(
                got["entity_id"], got["first"], got["last"], got["n_present"], got["gaps"]
            )
        return tuple(
            cls(**dict(zip(got, row, strict=True))) for row in zip(*got.values(), strict=True)
        )
    if kind in _CLASSES:
        return _CLASSES[kind](**{k: _dec(y) for k, y in x.items()})
    if kind == "float":
        return float(x)
    if kind == "ndarray":
        dtype, shape, flat = x
        return np.array(_dec(flat), dtype=np.dtype(dtype)).reshape(shape)
    if kind == "bytes":
        return bytes.fromhex(x)
    if kind in ("tuple", "list", "frozenset"):
        make = {"tuple": tuple, "list": list, "frozenset": frozenset}[kind]
        if not any(type(y) is dict for y in x):  # plain items decode to themselves
            return make(x)
        return make(_dec(y) for y in x)
    if kind == "map":
        return {_dec(k): _dec(y) for k, y in x}
    raise PipelineError(f"a checkpoint records an unknown value kind {kind!r}", step="score")


def value_text(v: Any) -> str:
    """``v`` (an entity id, say) as the JSON text of its record: :func:`text_value` gives
    back an equal value of the same type."""
    return json.dumps(_enc(v), sort_keys=True, separators=(",", ":"))


def text_value(text: str) -> Any:
    """The value :func:`value_text` wrote.

    Raises
    ------
    PipelineError
        The text names a kind of value this version does not record.
    """
    return _dec(json.loads(text))


def source_info_doc(info: SourceInfo) -> dict[str, Any]:
    """``info`` as a JSON-ready document, field by field (:func:`source_info_from_doc`
    rebuilds an equal object)."""
    return dict(_enc(info))


def source_info_from_doc(doc: Mapping[str, Any]) -> SourceInfo:
    """The :class:`SourceInfo` of a :func:`source_info_doc` document.

    Raises
    ------
    PipelineError
        The document names a kind of value this version does not record.
    """
    info = _dec(dict(doc))
    if not isinstance(info, SourceInfo):
        raise PipelineError("a checkpoint's source record is not a SourceInfo", step="score")
    return info


def describe_source(uri: str, digest: Any, table: Any, segs: list[Any]) -> dict[str, Any]:
    """What a partition's meta records of its source: its :class:`SourceInfo` (``digest``:
    the :class:`~kuration.sources.identity.SourceDigest` of the bytes decoded)."""
    from ..run.scoring import source_info

    return {"info": source_info_doc(source_info(table, uri, digest, len(segs)))}


class CommittedTracks(Sequence[TrackExtent]):
    """One source's tracks, read from its partition commit whenever they are loaded.

    Parameters
    ----------
    ck : StageCheckpoint
        The stage whose partition ``name`` recorded the source.
    name : str
        The partition (the source's uri).
    sha256 : str
        The committed partition's SHA-256 when the record was first read: a commit
        replaced since then is refused rather than read.
    n : int
        Number of tracks.

    Notes
    -----
    Nothing is cached: every :meth:`load` (and every sequence access, which loads)
    parses the commit again, about 23 KB of JSON for a quickstart source.  Callers that
    read a source's tracks more than once load them once (:func:`loaded_tracks`).
    Equal to any sequence of equal :class:`TrackExtent`, as :class:`TrackColumns` is.
    """

    __slots__ = ("_ck", "_n", "_name", "_sha256")

    def __init__(self, ck: StageCheckpoint, name: str, sha256: str, n: int) -> None:
        self._ck, self._name, self._sha256, self._n = ck, name, sha256, int(n)

    def load(self) -> Sequence[TrackExtent]:
        """The tracks, read from the commit now.

        Raises
        ------
        PipelineError
            The partition's commit is gone (after the run, unless ``checkpoint_dir`` kept
            it) or is not the one first read.
        """
        c = self._ck.committed(self._name)
        if c is None:
            raise PipelineError(
                f"the tracks of {self._name!r} were read from its checkpoint in "
                f"{self._ck.dir}, which is gone (a run's own checkpoints go with its "
                "staging area; give checkpoint_dir to keep them)",
                step="fill",
            )
        if c.sha256 != self._sha256 or "info" not in c.meta:
            raise PipelineError(
                f"the checkpoint of {self._name!r} changed while the run read it ({self._ck.dir})",
                step="fill",
            )
        tracks = source_info_from_doc(c.meta["info"]).tracks
        if len(tracks) != self._n:
            raise PipelineError(f"the checkpoint of {self._name!r} changed", step="fill")
        return tracks

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> TrackExtent: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[TrackExtent]: ...
    def __getitem__(self, i: int | slice) -> TrackExtent | Sequence[TrackExtent]:
        return self.load()[i]

    def __iter__(self) -> Iterator[TrackExtent]:
        return iter(self.load())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(other) == self._n and tuple(self.load()) == tuple(other)

    def __hash__(self) -> int:
        return hash(tuple(self.load()))

    def __repr__(self) -> str:
        return f"CommittedTracks({self._n} tracks of {self._name!r})"


def loaded_tracks(tracks: Sequence[TrackExtent]) -> Sequence[TrackExtent]:
    """``tracks`` read into memory once (a :class:`CommittedTracks` loaded; others as they are)."""
    return tracks.load() if isinstance(tracks, CommittedTracks) else tracks


_NO_TIMINGS: Mapping[str, float] = MappingProxyType({})


def _encoded_len(v: Any, name: str) -> int:
    """How many items the :func:`_enc` encoding ``v`` of a sequence holds, not decoding them.

    Raises
    ------
    PipelineError
        ``v`` is not an encoded sequence.
    """
    kind, x = next(iter(v.items())) if isinstance(v, dict) and len(v) == 1 else ("", None)
    if kind == "rows" and isinstance(x, list) and len(x) == 2 and x[1]:
        return _encoded_len(next(iter(x[1].values())), name)
    if kind in ("tuple", "list") and isinstance(x, list):
        return len(x)
    raise PipelineError(f"the checkpoint of {name!r} records no tracks", step="score")


def source_info_kept(
    ck: StageCheckpoint, c: PartitionCommit, shared: dict[Any, Mapping[str, int]] | None = None
) -> SourceInfo:
    """The :class:`SourceInfo` a partition commit records, its tracks left in the commit
    (:class:`CommittedTracks`) and its timings dropped (a measurement of the scoring
    pass; they take no part in equality).  Equal ``counts`` of several sources are one
    read-only mapping, kept in ``shared`` (most sources count the same).

    Raises
    ------
    PipelineError
        The commit records no source, or a kind of value this version does not record.
    """
    doc = c.meta.get("info")
    if not isinstance(doc, Mapping) or not isinstance(doc.get("SourceInfo"), Mapping):
        raise PipelineError(f"the checkpoint of {c.name!r} records no source", step="score")
    fields = dict(doc["SourceInfo"])
    n_tracks = _encoded_len(fields.pop("tracks", None), c.name)  # decoded where they are used
    info = source_info_from_doc({"SourceInfo": {**fields, "tracks": {"tuple": []}}})
    if info.uri != c.name:
        raise PipelineError(f"the checkpoint of {c.name!r} records {info.uri!r}", step="score")
    lazy = CommittedTracks(ck, c.name, c.sha256, n_tracks)
    counts: Mapping[str, int] = info.counts
    if shared is not None:
        key = tuple(info.counts.items())
        counts = shared.setdefault(key, MappingProxyType(dict(info.counts)))
    # the commit's strings stand in for the record's equal ones (one copy of each kept)
    return dataclasses.replace(info, uri=c.name, tracks=lazy, counts=counts, wall_s=_NO_TIMINGS)
