"""kur init on inputs a fresh user hands it: a folder, a headerless CSV, date columns."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from kuration import InitError, init_job


def _csv(path: Path, n: int = 1200, t0: int = 1_700_000_000, header: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [f"{t0 + i},{math.sin(i / 10):.4f}" for i in range(n)]
    path.write_text(("time,value\n" if header else "") + "\n".join(rows) + "\n")
    return path


def test_a_folder_is_its_data_files_sorted(tmp_path: Path) -> None:
    data = tmp_path / "data"
    for k in (2, 0, 1):
        _csv(data / f"run{k}.csv", t0=1_700_000_000 + k * 10_000)
    (data / "README.txt").write_text("not data\n")
    _csv(data / ".hidden" / "old.csv")
    init_job([data], tmp_path / "job")
    job = json.loads((tmp_path / "job" / "job.json").read_text())
    assert [Path(s).name for s in job["sources"]] == ["run0.csv", "run1.csv", "run2.csv"]


def test_a_folder_without_data_files_says_so(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(InitError, match="a folder with no CSV"):
        init_job([tmp_path / "empty"], tmp_path / "job")


def test_a_headerless_csv_says_it_looks_headerless(tmp_path: Path) -> None:
    path = _csv(tmp_path / "raw.csv", header=False)
    with pytest.raises(InitError, match="looks headerless") as info:
        init_job([path], tmp_path / "job")
    assert "no time column" not in str(info.value)
    assert "add a first line naming the columns" in str(info.value)
