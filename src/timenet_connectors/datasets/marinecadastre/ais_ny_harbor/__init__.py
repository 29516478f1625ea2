"""marinecadastre/ais-ny-harbor: one hour of AIS reports from ``tracktable-data==1.7.3.1``.

The CSV is read out of the pinned wheel (``tracktable_data`` is never
imported). The cleaning rules for heading and course are stated in the card
and counted in :attr:`Connector.stats`.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from timenet.build import Connector, PinnedFile, RawInputError
from timenet.specs import SignalSpec
from timenet.writer import TimeFWriter
from timenet_connectors._common import csv_table, times_ns

__all__ = ["CONNECTOR", "AisNyHarborConnector", "clean_cog", "clean_heading"]

PIN = PinnedFile(
    package="tracktable-data",
    version="1.7.3.1",
    filename="tracktable_data-1.7.3.1-py3-none-any.whl",
    sha256="949cd19954baaf98fd2610c282c1c1265514bc4675cb0ea2ff59250136a3c0a1",
)
MEMBER = "tracktable_data/python_example_data/NYHarbor_2020_06_30_first_hour.csv"
EPOCH = "1970-01-01T00:00:00+00:00"
HEADING_NOT_AVAILABLE = 511.0
COG_WRAP = 409.6  # 2**12 tenths of a degree
COG_NOT_AVAILABLE = 360.0
COLUMNS: dict[str, pa.DataType] = {
    "BaseDateTime": pa.timestamp("s"),
    "LON": pa.float64(),
    "LAT": pa.float64(),
    "MMSI": pa.int64(),
    "SOG": pa.float64(),
    "COG": pa.float64(),
    "Heading": pa.float64(),
    "VesselName": pa.string(),
    "IMO": pa.string(),
    "CallSign": pa.string(),
    "VesselType": pa.float64(),
    "Length": pa.float64(),
    "Width": pa.float64(),
}
STATIC = {
    "VesselName": "name",
    "IMO": "imo",
    "CallSign": "callsign",
    "VesselType": "vessel_type",
    "Length": "length_m",
    "Width": "width_m",
}


def clean_heading(heading: np.ndarray) -> tuple[np.ndarray, dict[str, int]]:
    """Heading with 511 ("not available") and values outside [0, 360) as NaN.

    Returns
    -------
    heading : ndarray, shape (N,), float64, deg
    counts : dict
        ``heading_not_available`` and ``heading_out_of_range`` counts.
    """
    out = heading.astype(np.float64).copy()
    na = out == HEADING_NOT_AVAILABLE
    bad = ~na & ~np.isnan(out) & ((out < 0) | (out >= 360))
    out[na | bad] = np.nan
    return out, {"heading_not_available": int(na.sum()), "heading_out_of_range": int(bad.sum())}


def clean_cog(cog: np.ndarray) -> tuple[np.ndarray, dict[str, int]]:
    """Course over ground restored from the wrapped 12-bit field (see the card).

    Negative values get 409.6 added; 360 (AIS "not available") and anything
    else outside [0, 360) become NaN.

    Returns
    -------
    cog : ndarray, shape (N,), float64, deg
    counts : dict
        ``cog_unwrapped``, ``cog_not_available``, ``cog_out_of_range``.
    """
    out = cog.astype(np.float64).copy()
    neg = out < 0
    out[neg] += COG_WRAP
    na = np.isclose(out, COG_NOT_AVAILABLE)
    bad = ~na & ~np.isnan(out) & ((out < 0) | (out >= 360))
    out[na | bad] = np.nan
    return out, {
        "cog_unwrapped": int((neg & ~na & ~bad).sum()),
        "cog_not_available": int(na.sum()),
        "cog_out_of_range": int(bad.sum()),
    }


def _masked(values: np.ndarray) -> np.ma.MaskedArray:
    return np.ma.masked_array(values, mask=np.isnan(values))


class AisNyHarborConnector(Connector):
    """Build ``marinecadastre/ais-ny-harbor`` from the pinned tracktable-data wheel."""

    created: ClassVar[str] = "2025-01-01T00:00:00+00:00"
    expected_signals: ClassVar[dict[str, str]] = {
        "latitude": "deg",
        "longitude": "deg",
        "sog": "kt",
        "cog": "deg",
        "heading": "deg",
    }

    def download(self) -> None:
        self.wheel = self.fetch(PIN, members=(MEMBER,))

    def convert(self, writer: TimeFWriter) -> None:
        where = f"{self.wheel}!{MEMBER}"
        table = csv_table(self.read(self.wheel, MEMBER), where, COLUMNS)
        for name in ("BaseDateTime", "MMSI", "LAT", "LON"):
            col = table.column(name)
            if col.null_count:
                r = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
                raise RawInputError(where, f"null {name}", row=r)
        ts = times_ns(table.column("BaseDateTime"), where, "BaseDateTime")
        mmsi = table.column("MMSI").to_numpy()
        lat = table.column("LAT").to_numpy()
        lon = table.column("LON").to_numpy()
        bad = np.flatnonzero((np.abs(lat) > 90) | (np.abs(lon) > 180))
        if bad.size:
            raise RawInputError(where, "latitude/longitude out of range", row=int(bad[0]))

        def floats(name: str) -> np.ndarray:
            col = table.column(name).combine_chunks()
            return np.asarray(col.fill_null(np.nan).to_numpy(zero_copy_only=False), np.float64)

        sog = floats("SOG")
        cog, c1 = clean_cog(floats("COG"))
        heading, c2 = clean_heading(floats("Heading"))
        for k, v in {**c1, **c2}.items():
            self.count(k, v)
        order = np.lexsort((np.arange(len(ts)), ts, mmsi))
        m_s, t_s = mmsi[order], ts[order]
        dup = np.r_[False, (m_s[1:] == m_s[:-1]) & (t_s[1:] == t_s[:-1])]
        self.count("duplicate_timestamps_dropped", int(dup.sum()))
        order, m_s, t_s = order[~dup], m_s[~dup], t_s[~dup]
        starts = np.flatnonzero(np.r_[True, m_s[1:] != m_s[:-1]])
        stops = np.r_[starts[1:], len(order)]
        static = {col: table.column(col).to_pylist() for col in STATIC}
        for lo, hi in self.progress.track(
            list(zip(starts.tolist(), stops.tolist(), strict=True)), "vessels"
        ):
            sel = order[lo:hi]
            rid = f"mmsi-{int(m_s[lo])}"
            meta: dict[str, Any] = {"mmsi": int(m_s[lo])}
            for col, key in STATIC.items():
                vals = [static[col][i] for i in sel if static[col][i] is not None]
                meta[key] = vals[0] if vals else None
            writer.add_record(rid, meta)
            times = t_s[lo:hi]
            for name, vals, unit in (
                ("latitude", lat[sel], "deg"),
                ("longitude", lon[sel], "deg"),
                ("sog", sog[sel], "kt"),
                ("cog", cog[sel], "deg"),
                ("heading", heading[sel], "deg"),
            ):
                writer.add_signal(
                    rid,
                    name,
                    _masked(np.ascontiguousarray(vals)),
                    SignalSpec("float64", unit, time_origin=EPOCH),
                    times=times,
                )
            self.count("records")
            self.count("position_reports", hi - lo)  # rows kept, not repairs


CONNECTOR = AisNyHarborConnector
