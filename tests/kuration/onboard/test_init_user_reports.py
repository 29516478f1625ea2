"""What a fresh user met running ``kur init`` on foreign recordings: epoch nanoseconds,
text times in an odd format, header units that pint misses, line numbers, a dataset
folder as ``--out``, and the shard promise."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from kuration.cli.main import main
from kuration.onboard.inventory import inventory_files

NS0 = 1_700_000_000_005_000_000  # 2023-11-14T22:13:20.005Z in epoch nanoseconds


def _ns_file(path: Path, header: str = "timestamp (ns),value", n: int = 400) -> Path:
    rows = [f"{NS0 + i * 10_000_000},{math.sin(i / 9):.4f}" for i in range(n)]
    path.write_text(header + "\n" + "\n".join(rows) + "\n")
    return path


def test_epoch_nanoseconds_profile_exactly(tmp_path: Path) -> None:
    """Above 2**53 a float64 is 256 ns coarse: the steps come from int64 differences."""
    inv = inventory_files([_ns_file(tmp_path / "ns_epoch.csv")], hints={})
    assert inv.time_unit == "ns"
    assert inv.times is not None
    assert np.abs(np.diff(inv.times) - 0.01).max() < 1e-9
    assert inv.time_origin % 86_400 == 0 and inv.time_origin == 1_699_920_000
    assert inv.times[0] == pytest.approx(80_000.005, abs=1e-9)


def test_kur_init_on_epoch_nanoseconds_writes_a_job(tmp_path: Path, capsys) -> None:
    src = _ns_file(tmp_path / "ns_epoch.csv")
    assert main(["init", str(src), "--out", str(tmp_path / "job")]) == 0
    out = capsys.readouterr().out
    assert "sample rate: 100 Hz" in out
    assert "400 rows, 400 kept on their own tick" in out


def test_time_unit_ns_on_a_plain_time_column(tmp_path: Path, capsys) -> None:
    src = _ns_file(tmp_path / "t.csv", header="time,value")
    assert main(["init", str(src), "--time-unit", "ns", "--out", str(tmp_path / "job")]) == 0
    out = capsys.readouterr().out
    assert "read as nanoseconds (given)" in out and "sample rate: 100 Hz" in out
