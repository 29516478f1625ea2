"""Helpers shared by the timenet tests (importable as a plain module)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

import timenet as tn


def make_card(version: str = "1.0.0", name: str = "demo", **extra: Any) -> dict[str, Any]:
    return {"org": "acme", "name": name, "version": version, "license": "CC-BY-4.0", **extra}


def write_demo(
    root: Path, version: str = "1.0.0", *, records: int = 3, name: str = "demo", **kw: Any
) -> Path:
    """A small version with scalar, nullable, multidimensional and irregular signals."""
    rng = np.random.default_rng(0)
    with tn.TimeFWriter(root, make_card(version, name), **kw) as w:
        for i in range(records):
            r = w.add_record(f"rec-{i}", {"subject": i})
            w.add_signal(
                r,
                "ecg",
                rng.standard_normal(500).astype(np.float32),
                tn.SignalSpec("float32", "mV", rate_hz=250.0),
            )
            temp = np.ma.masked_array(np.linspace(20, 25, 6), mask=[0, 0, 1, 0, 0, 0])
            w.add_signal(r, "temp", temp, tn.SignalSpec("float64", "degC", rate_hz=1.0))
            w.add_signal(
                r,
                "acc",
                rng.integers(-100, 100, size=(40, 3)).astype(np.int16),
                tn.SignalSpec("int16", "m/s^2", shape=(3,), rate_hz=50.0),
            )
            w.add_signal(
                r,
                "events",
                np.array([1, 3, 2], dtype=np.uint8),
                tn.SignalSpec("uint8", ""),
                times=np.array([10, 2_000, 90_000], dtype=np.int64),
            )
            w.add_annotation(r, tn.Label("sinus"), start_ns=0, stop_ns=1_000_000_000)
            w.add_annotation(r, tn.Text("artifact"), start_ns=4_000_000, signal="ecg")
            w.add_task(r, "rhythm", tn.Label("sinus" if i % 2 else "af"))
    return root / "acme" / name / version


def write_many_records(root: Path, records: int = 300) -> Path:
    """A version of many records with varied metadata and a fixed ``created``.

    Enough distinct strings that DuckDB would pick FSST for ``records.metadata`` if the
    catalog write allowed it, whose bytes then depend on the process's heap (see
    ``timenet.catalog._WRITE_SETTINGS``).
    """
    sites = ("north", "south", "east")
    card = make_card(name="many")
    with tn.TimeFWriter(root, card, created="2025-01-01T00:00:00+00:00") as w:
        for i in range(records):
            meta = {"subject": f"s{i % 37}", "session": i, "site": sites[i % 3]}
            r = w.add_record(f"rec-{i:05d}", meta)
            if i % 100 == 0:
                w.add_signal(
                    r,
                    "hr",
                    np.arange(4, dtype=np.int16),
                    tn.SignalSpec("int16", "1/min", rate_hz=1.0),
                )
    return root / "acme" / "many" / "1.0.0"
