"""aeon/body-imu: Daphnet (64 Hz, milli-g) and BasicMotions (10 Hz) from the ``aeon==1.6.0`` wheel.

The files are read straight out of the pinned wheel; aeon is never imported
(it pulls heavy dependencies). The ``.ts`` files are parsed by the strict
reader in :mod:`.tsfile`.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pyarrow as pa

from timenet.build import Connector, PinnedFile, RawInputError
from timenet.specs import Label, SignalSpec
from timenet.writer import TimeFWriter
from timenet_connectors._common import csv_table, runs, times_ns

from .tsfile import read_ts

__all__ = ["CONNECTOR", "BodyImuConnector"]

PIN = PinnedFile(
    package="aeon",
    version="1.6.0",
    filename="aeon-1.6.0-py3-none-any.whl",
    sha256="d05227086706f80111ac5fee8de4d5d3115bb3bcfd1c786c8629393055816409",
)
DAPHNET = "aeon/datasets/data/Daphnet_S06R02E0/S06R02E0.csv"
BASIC = {
    "train": "aeon/datasets/data/BasicMotions/BasicMotions_TRAIN.ts",
    "test": "aeon/datasets/data/BasicMotions/BasicMotions_TEST.ts",
}
DAPHNET_HZ = 64.0
BASIC_HZ = 10.0
MG = "millistandard_gravity"
CHANNELS = [
    f"{place}_{axis}"
    for place in ("ankle", "leg", "trunk")
    for axis in ("horiz_fwd", "vert", "horiz_lateral")
]
BASIC_CHANNELS = ("acc_x", "acc_y", "acc_z", "gyro_x", "gyro_y", "gyro_z")


class BodyImuConnector(Connector):
    """Build ``aeon/body-imu`` from the pinned aeon wheel."""

    created: ClassVar[str] = "2025-01-01T00:00:00+00:00"
    expected_signals: ClassVar[dict[str, str]] = {
        **dict.fromkeys(CHANNELS, MG),
        **dict.fromkeys(BASIC_CHANNELS, ""),
    }

    def download(self) -> None:
        self.wheel = self.fetch(PIN, members=(DAPHNET, *BASIC.values()))

    def convert(self, writer: TimeFWriter) -> None:
        self._daphnet(writer)
        for split, member in BASIC.items():
            where = f"{self.wheel}!{member}"
            try:
                text = self.read(self.wheel, member).decode("utf-8")
            except UnicodeDecodeError as exc:
                raise RawInputError(where, f"not UTF-8 text: {exc}") from None
            problem = read_ts(text, where)
            if problem.values.shape[1] != len(BASIC_CHANNELS):
                raise RawInputError(
                    where, f"{problem.values.shape[1]} dimensions, expected {len(BASIC_CHANNELS)}"
                )
            for n in self.progress.track(range(len(problem.labels)), f"BasicMotions {split}"):
                rid = f"basicmotions-{split}-{n:03d}"
                writer.add_record(rid, {"source": "BasicMotions", "split": split, "case": n})
                for d, name in enumerate(BASIC_CHANNELS):
                    writer.add_signal(
                        rid,
                        name,
                        np.ascontiguousarray(problem.values[n, d]),
                        SignalSpec("float64", "", rate_hz=BASIC_HZ),
                    )
                writer.add_task(rid, "activity", Label(problem.labels[n]))
                self.count(f"cases_{split}")

    def _daphnet(self, writer: TimeFWriter) -> None:
        where = f"{self.wheel}!{DAPHNET}"
        types = {"timestamp": pa.timestamp("ms"), **dict.fromkeys(CHANNELS, pa.int16())}
        types["is_anomaly"] = pa.uint8()
        table = csv_table(self.read(self.wheel, DAPHNET), where, types)
        for name in types:
            col = table.column(name)
            if col.null_count:
                r = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
                raise RawInputError(where, f"missing value in column {name!r}", row=r)
        t_ms = times_ns(table.column("timestamp"), where, "timestamp") // 1_000_000
        steps = np.arange(len(t_ms))
        resid_ms = (t_ms - t_ms[0]) - steps * (1000.0 / DAPHNET_HZ)
        bad = np.flatnonzero(np.abs(resid_ms) > 1.0)
        if bad.size:
            r = int(bad[0])
            raise RawInputError(
                where, f"timestamp is {resid_ms[r]:.3f} ms off the 64 Hz grid", row=r
            )
        start_ns = int(t_ms[0]) * 1_000_000
        rid = "daphnet-S06R02E0"
        writer.add_record(rid, {"source": "Daphnet", "subject": "S06", "run": "R02"})
        for name in CHANNELS:
            writer.add_signal(
                rid,
                name,
                table.column(name).to_numpy(),
                SignalSpec("int16", MG, rate_hz=DAPHNET_HZ, start_ns=start_ns),
            )
        flag = table.column("is_anomaly").to_numpy()
        if not np.isin(flag, (0, 1)).all():
            r = int(np.flatnonzero(~np.isin(flag, (0, 1)))[0])
            raise RawInputError(where, f"is_anomaly must be 0 or 1, got {flag[r]}", row=r)
        writer.add_signal(
            rid, "is_anomaly", flag, SignalSpec("uint8", "", rate_hz=DAPHNET_HZ, start_ns=start_ns)
        )
        period_ns = 1e9 / DAPHNET_HZ
        for lo, hi in runs(flag):
            if flag[lo] == 1:
                writer.add_annotation(
                    rid,
                    Label("freezing of gait"),
                    start_ns=start_ns + round(lo * period_ns),
                    stop_ns=start_ns + round(hi * period_ns),
                )
                self.count("anomaly_intervals")
        self.count("daphnet_samples", len(flag))


CONNECTOR = BodyImuConnector
