"""opensky/adsb-traffic: ADS-B state vectors from the sample data of ``traffic==2.13``.

The wheel is fetched with pip and checked against its SHA-256; the two gzip'd
pandas "records" JSON files are read straight out of it (``traffic`` is never
imported).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from timenet.build import Connector, PinnedFile, RawInputError
from timenet.specs import SignalSpec
from timenet.writer import TimeFWriter
from timenet_connectors._common import times_ns

__all__ = ["CONNECTOR", "AdsbTrafficConnector"]

PIN = PinnedFile(
    package="traffic",
    version="2.13",
    filename="traffic-2.13-py3-none-any.whl",
    sha256="5e0cd61d931d03103294361542188f08f959a55e862d5cba80ab61291021e66c",
)
COLLECTIONS = {
    "quickstart": "traffic/data/samples/collections/quickstart.json.gz",
    "switzerland": "traffic/data/samples/collections/switzerland.json.gz",
}
EPOCH = "1970-01-01T00:00:00+00:00"
#: signal name -> (source column, unit)
SIGNALS = {
    "altitude": ("altitude", "ft"),
    "groundspeed": ("groundspeed", "kt"),
    "track": ("track", "deg"),
    "vertical_rate": ("vertical_rate", "ft/min"),
}
REQUIRED = ("timestamp", "icao24", "latitude", "longitude", *(c for c, _ in SIGNALS.values()))


_SCHEMA = pa.schema(
    [
        ("timestamp", pa.int64()),
        ("icao24", pa.string()),
        ("callsign", pa.string()),
        ("latitude", pa.float64()),
        ("longitude", pa.float64()),
        *((col, pa.float64()) for col, _unit in SIGNALS.values()),
        ("onground", pa.bool_()),
    ]
)


def parse_collection(data: bytes, where: str) -> pa.Table:
    """One gzip'd pandas records-JSON collection as a validated Arrow table.

    The JSON list ``[{...},{...}]`` is turned into newline-delimited JSON and
    parsed by Arrow with an explicit schema (ten times faster than
    ``json.loads``); the object count is checked so no record is lost.

    Returns
    -------
    pyarrow.Table
        Columns of ``_SCHEMA``; ``onground`` is all null when the collection
        has no such column.

    Raises
    ------
    RawInputError
        On a truncated gzip, malformed JSON, missing columns, values of the
        wrong type, null timestamps, aircraft ids or positions (row named).
    """
    import gzip

    import pyarrow.json as pajson

    from timenet._jsonio import loads_strict
    from timenet.errors import DocumentError

    try:
        raw = gzip.decompress(data).strip()
    except (OSError, EOFError) as exc:
        raise RawInputError(where, f"not a complete gzip stream: {exc}") from None
    if raw[:2] != b"[{" or raw[-2:] != b"}]":
        raise RawInputError(where, "expected a JSON list of records")
    body = raw[1:-1].replace(b"},{", b"}\n{")
    try:
        first = loads_strict(body.split(b"\n", 1)[0], what=where, allow_nan=True)
    except DocumentError as exc:
        raise RawInputError(where, f"invalid JSON in the first record: {exc.reason}") from None
    missing = [c for c in REQUIRED if c not in first]
    if missing:
        raise RawInputError(where, f"records lack columns {missing}")
    try:
        table = pajson.read_json(
            pa.BufferReader(body),
            parse_options=pajson.ParseOptions(
                explicit_schema=_SCHEMA, unexpected_field_behavior="ignore"
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowException) as exc:
        raise RawInputError(where, f"invalid records JSON: {exc}") from None
    expected = body.count(b"}\n{") + 1
    if table.num_rows != expected:
        raise RawInputError(where, f"parsed {table.num_rows} records, expected {expected}")
    for name in ("timestamp", "icao24", "latitude", "longitude"):
        col = table.column(name)
        bad = col.is_null()
        if pa.types.is_floating(col.type):
            bad = pc.or_(bad, pc.invert(pc.is_finite(col)))
        if pc.any(bad).as_py():
            r = int(np.flatnonzero(bad.to_numpy(zero_copy_only=False))[0])
            raise RawInputError(where, f"missing or non-finite {name}", row=r)
    return table


class AdsbTrafficConnector(Connector):
    """Build ``opensky/adsb-traffic`` from the pinned ``traffic`` wheel."""

    created: ClassVar[str] = "2025-01-01T00:00:00+00:00"
    expected_signals: ClassVar[dict[str, str]] = {
        "latitude": "deg",
        "longitude": "deg",
        **{name: unit for name, (_col, unit) in SIGNALS.items()},
        "onground": "",
    }

    def download(self) -> None:
        self.wheel = self.fetch(PIN, members=tuple(COLLECTIONS.values()))

    def convert(self, writer: TimeFWriter) -> None:
        for coll, member in COLLECTIONS.items():
            where = f"{self.wheel}!{member}"
            cols = parse_collection(self.read(self.wheel, member), where)
            self._write_collection(writer, coll, cols, where)

    def _write_collection(
        self, writer: TimeFWriter, coll: str, table: pa.Table, where: str = ""
    ) -> None:
        ts = times_ns(table.column("timestamp"), where or coll, "timestamp", "ms")
        ids, codes = np.unique(
            np.asarray(table.column("icao24").to_pylist(), dtype=object).astype(str),
            return_inverse=True,
        )
        # one sort for the whole collection: by aircraft, time, then file order
        order = np.lexsort((np.arange(len(ts)), ts, codes))
        codes_s, ts_s = codes[order], ts[order]
        dup = np.r_[False, (codes_s[1:] == codes_s[:-1]) & (ts_s[1:] == ts_s[:-1])]
        if dup.any():
            self.count("duplicate_timestamps_dropped", int(dup.sum()))
            order, codes_s, ts_s = order[~dup], codes_s[~dup], ts_s[~dup]
        table = table.take(pa.array(order)).combine_chunks()
        starts = np.flatnonzero(np.r_[True, codes_s[1:] != codes_s[:-1]])
        stops = np.r_[starts[1:], len(order)]
        onground = table.column("onground")
        has_onground = onground.null_count < len(onground)
        callsign = table.column("callsign").to_pylist()
        columns = [
            ("latitude", "latitude", "deg", "float64"),
            ("longitude", "longitude", "deg", "float64"),
            *((n, c, u, "float64") for n, (c, u) in SIGNALS.items()),
            *((("onground", "onground", "", "bool"),) if has_onground else ()),
        ]
        arrays = {col: table.column(col).chunk(0) for _n, col, _u, _d in columns}
        for k in self.progress.track(range(len(starts)), f"{coll}: aircraft"):
            lo, hi = int(starts[k]), int(stops[k])
            icao = str(ids[codes_s[lo]])
            rid = f"{coll}-{icao}"
            calls = {c.strip() for c in callsign[lo:hi] if c and c.strip()}
            writer.add_record(rid, {"collection": coll, "icao24": icao, "callsigns": sorted(calls)})
            times = ts_s[lo:hi]
            for name, col, unit, dtype in columns:
                writer.add_signal(
                    rid,
                    name,
                    arrays[col].slice(lo, hi - lo),
                    SignalSpec(dtype, unit, time_origin=EPOCH),
                    times=times,
                )
            self.count("records")
            self.count("position_reports", hi - lo)  # rows kept, not repairs


CONNECTOR = AdsbTrafficConnector
