"""opensky/flight-phases: flight-phase annotations derived from ``opensky/adsb-traffic@1.0``.

A child dataset: it imports every aircraft of its parent (records and
signals, values left in the parent's files) and adds interval annotations
``climb`` / ``cruise`` / ``descent`` / ``on ground`` computed from the
parent's values with the thresholds below (also stated in the card).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from timenet.build import Connector
from timenet.specs import Label
from timenet.writer import TimeFWriter
from timenet_connectors._common import runs

__all__ = ["CONNECTOR", "FlightPhasesConnector", "phases"]

PARENT = "opensky/adsb-traffic@1.0"
CLIMB_FPM = 300.0
GROUND_SPEED_KT = 50.0
MIN_RUN_NS = 30_000_000_000
LABELS = ("", "on ground", "climb", "cruise", "descent")


def phases(
    vertical_rate: np.ndarray,
    groundspeed: np.ndarray,
    onground: np.ndarray | None,
) -> np.ndarray:
    """Phase code per fix (index into :data:`LABELS`; 0 = unknown).

    Parameters
    ----------
    vertical_rate : ndarray, shape (T,), float64, ft/min, NaN where missing
    groundspeed : ndarray, shape (T,), float64, kt, NaN where missing
    onground : ndarray, shape (T,), float64 (1/0, NaN missing), or None
        None when the source has no on-ground flag: groundspeed decides.

    Returns
    -------
    ndarray, shape (T,), int8
    """
    out = np.zeros(len(vertical_rate), dtype=np.int8)
    vr = vertical_rate
    out[vr >= CLIMB_FPM] = 2
    out[vr <= -CLIMB_FPM] = 4
    out[np.abs(vr) < CLIMB_FPM] = 3
    ground = groundspeed < GROUND_SPEED_KT if onground is None else onground == 1
    out[ground] = 1
    return out


def _smooth(codes: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Give runs shorter than MIN_RUN_NS the phase of the run before them."""
    out = codes.copy()
    spans = runs(out)
    for i, (lo, hi) in enumerate(spans):
        if i == 0:
            continue
        end = times[hi] if hi < len(times) else times[hi - 1] + 1
        if end - times[lo] < MIN_RUN_NS:
            out[lo:hi] = out[lo - 1]
    return out


class FlightPhasesConnector(Connector):
    """Build ``opensky/flight-phases`` from its parent release."""

    created: ClassVar[str] = "2025-01-01T00:00:00+00:00"

    def download(self) -> None:
        """Nothing to fetch: the only input is the parent release."""

    def convert(self, writer: TimeFWriter) -> None:
        parent = self.parents[PARENT]
        reader = parent.reader
        ids = parent.import_records(writer, as_id=lambda rid: f"fp-{rid}")
        for child_id in self.progress.track(ids, "flight phases"):
            pid = child_id.removeprefix("fp-")
            sigs = reader.signals(pid)

            def values(name: str, sigs: dict[str, Any] = sigs) -> np.ndarray:
                arr = sigs[name].to_arrow()
                return np.asarray(
                    arr.cast("float64").fill_null(np.nan).to_numpy(zero_copy_only=False)
                )

            times = sigs["vertical_rate"].times()
            codes = phases(
                values("vertical_rate"),
                values("groundspeed"),
                values("onground") if "onground" in sigs else None,
            )
            codes = _smooth(codes, times)
            for lo, hi in runs(codes):
                if codes[lo] == 0:
                    self.count("reports_without_phase", hi - lo)
                    continue
                stop = int(times[hi]) if hi < len(times) else int(times[hi - 1]) + 1
                writer.add_annotation(
                    child_id, Label(LABELS[codes[lo]]), start_ns=int(times[lo]), stop_ns=stop
                )
                self.count(f"intervals_{LABELS[codes[lo]].replace(' ', '_')}")


CONNECTOR = FlightPhasesConnector
