"""McapAdapter: an MCAP file (a ROS 2 bag, or JSON messages) as a source.

Fields are addressed by *message path*: ``/topic.field.sub[3]`` is component
3 of ``field.sub`` of the messages on ``/topic``.  Each topic's messages are
rows at their log time (or publish time); the rows of one topic go through
exactly the :class:`~kuration.sources.timeseries.TimeseriesAdapter` policy
(snap to the schema's one tick grid, disorder, duplicates, the declared
``collisions`` policy), topic by topic, and the topics are then laid side by
side on that grid: an entity is present at a tick when any topic has a row
for it there, and a field whose topic has no row there is missing (NaN).
Per topic, the adapter counts the messages read and the rows that collided
(``messages:<topic>``, ``snap_collisions:<topic>`` in ``TickTable.counts``,
recorded per source in ``config.json``).

Message encodings: ``json`` (decoded with :mod:`json`) and ``cdr`` (ROS 2,
decoded by ``mcap-ros2-support`` from the message definitions in the file; no
ROS install).

Image topics (``sensor_msgs/msg/Image``, ``CompressedImage``) are lazy media
columns (``media``: schema media column -> topic; the column's ``provider`` is
``"mcap"``, :mod:`kuration.sources.mcap_media`).  Reading the source lists each
image's log (or publish) time without decoding it, and places it on the tick it
snaps to (within ``snap_tolerance``; of several images on one tick the nearest is
kept, the others counted as ``media_collisions:<topic>``; images off the fields'
ticks are counted as ``frames_outside:<topic>``).  Pixels are decoded only when a
transform or the output asks.  Images do not make the entity present; a file with
media is one entity (no ``entity`` path).

Install with the ``[mcap]`` extra (``mcap``, ``mcap-ros2-support``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from ..contracts.media import FrameRef, MediaColumn
from ..contracts.schema import SchemaSpec
from ..contracts.tick import Tick, TickTable
from ..core.ids import entity_sort_key
from ..errors import AdapterError, MissingExtraError, SourceError
from ._snap import check_grid_offset, snap_ticks
from .base import SOURCE_READER_TRAITS, InputAdapter, register_adapter
from .identity import SourceDigest
from .mcap_media import NS, image_messages
from .timeseries import TimeseriesAdapter

__all__ = ["McapAdapter", "parse_path"]

_PATH = re.compile(r"^(?P<topic>/[^.\[\]]*)(?P<rest>(\.[A-Za-z_]\w*|\[\d+\])*)$")
_STEP = re.compile(r"\.([A-Za-z_]\w*)|\[(\d+)\]")
_TIME = "__time_ns"
_ENTITY = "__entity"


def parse_path(path: str) -> tuple[str, tuple[str | int, ...]]:
    """``(topic, steps)`` of a message path: ``/imu.linear_acceleration.x`` gives
    ``("/imu", ("linear_acceleration", "x"))``, ``/joints.position[3]`` ``("/joints",
    ("position", 3))``.

    Raises
    ------
    AdapterError
        Not a message path.
    """
    m = _PATH.match(str(path))
    if m is None or not m.group("rest"):
        raise AdapterError(
            f"{path!r} is not a message path ('/topic.field', '/topic.field[i]')", adapter="mcap"
        )
    steps = tuple(
        s.group(1) if s.group(1) is not None else int(s.group(2))
        for s in _STEP.finditer(m.group("rest"))
    )
    return m.group("topic"), steps


def _get(msg: Any, steps: Sequence[str | int]) -> Any:
    for s in steps:
        msg = msg[s] if isinstance(s, int) or isinstance(msg, Mapping) else getattr(msg, s)
    return msg


class McapAdapter(InputAdapter):
    """Read an MCAP file (see the module docstring).

    Parameters
    ----------
    schema : SchemaSpec
    fields : mapping of str to str or list of str
        Schema field -> message path, or one path per component; every path of a
        field is on one topic.
    entity : str, optional
        Message path of the entity id (a topic of several entities); its topic's
        fields are per entity.  Without it every topic is the one entity ``entity_id``.
    entity_id : str
    time : {"log", "publish"}
        Which MCAP timestamp places a message (nanoseconds).
    snap_tolerance, disorder, duplicates, collisions, grid_offset_s
        As :class:`~kuration.sources.timeseries.TimeseriesAdapter`, applied per topic
        (``grid_offset_s`` to images too).
    media : mapping of str to str, optional
        Schema media column (with ``"provider": "mcap"``) -> image topic.

    Raises
    ------
    AdapterError
        A malformed path, a field spread over topics, an unmapped field; a media
        column the schema lacks or whose provider is not ``mcap``; media with an
        ``entity`` path.
    """

    name: ClassVar[str] = "mcap"

    def __init__(
        self,
        schema: SchemaSpec,
        *,
        fields: Mapping[str, str | Sequence[str]],
        entity: str | None = None,
        entity_id: str = "robot",
        time: str = "log",
        snap_tolerance: float = 0.5,
        disorder: str = "sort",
        duplicates: str = "raise",
        collisions: str = "nearest",
        media: Mapping[str, str] | None = None,
        grid_offset_s: float = 0.0,
    ) -> None:
        super().__init__(schema)
        self.media = dict(media or {})
        self._check_media(schema, entity)
        if time not in ("log", "publish"):
            raise AdapterError(f"time must be 'log' or 'publish', got {time!r}", adapter="mcap")
        self.fields = {k: [v] if isinstance(v, str) else list(v) for k, v in fields.items()}
        self.entity, self.entity_id, self.time = entity, str(entity_id), time
        self.policy: dict[str, Any] = {
            "snap_tolerance": snap_tolerance,
            "disorder": disorder,
            "duplicates": duplicates,
            "collisions": collisions,
        }
        if grid_offset_s:  # absent at 0, as before the option
            self.policy["grid_offset_s"] = check_grid_offset(
                grid_offset_s, schema.sample_hz, "mcap"
            )
        self.topics: dict[str, list[str]] = {}
        for name, paths in self.fields.items():
            topics = {parse_path(p)[0] for p in paths}
            if len(topics) != 1:
                raise AdapterError(
                    f"field {name!r} spans topics {sorted(topics)}: one topic per field",
                    adapter="mcap",
                )
            self.topics.setdefault(topics.pop(), []).append(name)
        if entity is not None:
            parse_path(entity)
        # each topic is read by a TimeseriesAdapter over its own fields (checks the mapping)
        self._readers = {
            t: _TopicReader(
                self._sub_schema(names),
                {n: self.fields[n] for n in names},
                entity is not None,
                self.policy,
            )
            for t, names in self.topics.items()
        }

    def options(self) -> dict[str, Any]:
        return {
            "fields": {k: list(v) for k, v in self.fields.items()},
            "entity": self.entity,
            "entity_id": self.entity_id,
            "time": self.time,
            **self.policy,
            **({"media": dict(self.media)} if self.media else {}),
        }

    def _check_media(self, schema: SchemaSpec, entity: str | None) -> None:
        names = {m.name for m in schema.media}
        for col, topic in self.media.items():
            if col not in names:
                raise AdapterError(f"media: {col!r} is not a schema media column", adapter="mcap")
            if schema.media_column(col).provider != "mcap":
                raise AdapterError(
                    f'media column {col!r} must declare "provider": "mcap" to read '
                    f"images of {topic!r}",
                    adapter="mcap",
                )
            if not str(topic).startswith("/"):
                raise AdapterError(f"media: {topic!r} is not a topic", adapter="mcap")
        if self.media and entity is not None:
            raise AdapterError(
                "media needs a file of one entity (no 'entity' path)", adapter="mcap"
            )

    def _sub_schema(self, names: Sequence[str]) -> SchemaSpec:
        d = self.schema.to_dict()
        d["fields"] = [f for f in d["fields"] if f["name"] in names]
        d.pop("globals", None), d.pop("events", None), d.pop("media", None)
        return SchemaSpec.from_dict(d)

    def _rows(self, uri: str) -> dict[str, pa.Table]:
        """Each topic's messages as a table (time in ns, entity, one column per path)."""
        try:
            from mcap.reader import make_reader
            from mcap_ros2.decoder import DecoderFactory
        except ImportError as exc:  # pragma: no cover - the extra is a dev dependency
            raise MissingExtraError("reading MCAP needs the [mcap] extra") from exc
        paths = {t: [p for n in names for p in self.fields[n]] for t, names in self.topics.items()}
        ent = parse_path(self.entity) if self.entity else None
        cols: dict[str, dict[str, list[Any]]] = {
            t: {c: [] for c in (_TIME, _ENTITY, *ps)} for t, ps in paths.items()
        }
        ros2 = DecoderFactory()
        decoders: dict[int, Any] = {}
        try:
            with open(uri, "rb") as fh:
                reader = make_reader(fh)
                for schema, channel, message in reader.iter_messages(topics=list(paths)):
                    msg = _decode(schema, channel, message, ros2, decoders, uri)
                    c = cols[channel.topic]
                    t_ns = message.log_time if self.time == "log" else message.publish_time
                    c[_TIME].append(int(t_ns))
                    c[_ENTITY].append(
                        _get(msg, ent[1]) if ent and ent[0] == channel.topic else self.entity_id
                    )
                    for p in paths[channel.topic]:
                        c[p].append(_get(msg, parse_path(p)[1]))
        except (KeyError, IndexError, AttributeError) as exc:
            raise SourceError(f"a message lacks the path of {exc}", source=uri) from exc
        except OSError as exc:
            raise SourceError(f"cannot read MCAP: {exc}", source=uri) from exc
        out = {}
        for t, c in cols.items():
            if not c[_TIME]:
                raise SourceError(f"topic {t!r} has no message", source=uri)
            out[t] = pa.table({k: pa.array(v) for k, v in c.items()})
        return out

    def read_table(self, uri: str) -> TickTable:
        """Every topic on the schema's grid, side by side (see the module docstring).

        Raises
        ------
        SourceError
            An unreadable file, a topic without messages, a message without a mapped
            path; each topic's rows fail as TimeseriesAdapter's would (naming the row).
        """
        uri = str(uri)
        counts: dict[str, int] = {}
        parts = {}
        for topic, table in self._rows(uri).items():
            part = self._readers[topic].read(uri, table)
            parts[topic] = part
            counts[f"messages:{topic}"] = table.num_rows
            counts[f"snap_collisions:{topic}"] = int(part.counts.get("snap_collisions", 0))
        counts["snap_collisions"] = sum(v for k, v in counts.items() if k.startswith("snap_"))
        table = _side_by_side(self.source_id(uri), self.schema, list(parts.values()), counts)
        if not self.media:
            return table
        media = {
            col: self._images(uri, col, topic, table.k0, table.n_steps, counts)
            for col, topic in self.media.items()
        }
        return TickTable(
            table.source_id,
            self.schema,
            table.k0,
            table.entity_ids,
            table.values,
            table.present,
            counts=counts,
            ints=table.ints,
            media=media,
        )

    def _images(
        self, uri: str, col: str, topic: str, k0: int, n_t: int, counts: dict[str, int]
    ) -> MediaColumn:
        """The topic's images on ticks ``[k0, k0 + n_t)``, nearest image per tick."""
        chan, log, pub = image_messages(uri, topic)
        t_ns = log if self.time == "log" else pub
        k, off = snap_ticks(
            t_ns / 1e9, float(self.schema.sample_hz), self.policy.get("grid_offset_s", 0.0)
        )
        ok = off <= float(self.policy["snap_tolerance"])
        inside = ok & (k >= k0) & (k < k0 + n_t)
        order = np.lexsort((np.arange(k.size), off, k))  # per tick: nearest, then earlier
        index = np.full(n_t, -1, dtype=np.int64)
        kept = 0
        for i in order[inside[order]]:
            if index[k[i] - k0] < 0:
                index[k[i] - k0] = i
                kept += 1
        counts[f"messages:{topic}"] = int(log.size)
        counts[f"media_collisions:{topic}"] = int(inside.sum()) - kept
        counts[f"frames_outside:{topic}"] = int(log.size - inside.sum())
        refs = tuple(FrameRef(uri, chan, int(t), NS, i) for i, t in enumerate(log))
        return MediaColumn(self.schema.media_column(col), refs, index)

    def ticks(self, uri: str) -> Iterable[Tick]:
        return self.read_table(uri).iter_ticks()


def _decode(schema: Any, channel: Any, message: Any, ros2: Any, cache: dict, uri: str) -> Any:
    enc = channel.message_encoding
    if enc == "json":
        return json.loads(message.data)
    if enc == "cdr":
        if channel.id not in cache:
            cache[channel.id] = ros2.decoder_for(enc, schema)
        return cache[channel.id](message.data)
    raise SourceError(
        f"topic {channel.topic!r}: message encoding {enc!r} is not read (json, cdr)", source=uri
    )


class _TopicReader(TimeseriesAdapter):
    """A TimeseriesAdapter over one topic's rows, given in memory (the same checks and policy)."""

    def __init__(
        self,
        schema: SchemaSpec,
        fields: Mapping[str, Sequence[str]],
        by_entity: bool,
        policy: Mapping[str, Any],
    ) -> None:
        super().__init__(
            schema,
            time_column=_TIME,
            time_unit="ns",
            entity_column=_ENTITY,
            entity_dtype="string" if by_entity else "auto",
            fields=fields,
            **policy,
        )
        self._table: pa.Table | None = None

    def read(self, uri: str, table: pa.Table) -> TickTable:
        self._table = table
        try:
            return self.read_table(uri)
        finally:
            self._table = None

    def _read_arrow(
        self, uri: str, expect: SourceDigest | None = None
    ) -> tuple[pa.Table, SourceDigest]:
        # rows already decoded: the MCAP adapter proves its file around the whole read
        # (InputAdapter.read_checked fingerprints it before and after)
        assert self._table is not None
        return self._table.select(self._needed_columns()), SourceDigest("")


def _side_by_side(
    sid: str, schema: SchemaSpec, parts: list[TickTable], counts: dict[str, int]
) -> TickTable:
    """Topic tables on one grid: the union of ticks and entities."""
    k0 = min(p.k0 for p in parts)
    n_t = max(p.k0 + p.n_steps for p in parts) - k0
    roster = tuple(sorted({e for p in parts for e in p.entity_ids}, key=entity_sort_key))
    col = {e: j for j, e in enumerate(roster)}
    present = np.zeros((n_t, len(roster)), dtype=bool)
    values: dict[str, np.ndarray] = {}
    ints: dict[str, np.ndarray] = {}
    for p in parts:
        rows = slice(p.k0 - k0, p.k0 - k0 + p.n_steps)
        cols = [col[e] for e in p.entity_ids]
        present[rows, cols] |= p.present
        for name, v in p.values.items():
            arr = np.full((n_t, len(roster), v.shape[2]), np.nan)
            arr[rows, cols] = v
            values[name] = arr
            if name in p.ints:
                iv = np.zeros((n_t, len(roster), v.shape[2]), dtype=p.ints[name].dtype)
                iv[rows, cols] = p.ints[name]
                ints[name] = iv
    return TickTable(sid, schema, k0, roster, values, present, counts=counts, ints=ints)


register_adapter("mcap", McapAdapter, execution_traits=SOURCE_READER_TRAITS)
