"""``kur run ... | head -1``: a reader that closes stdout early does not make a committed
run look failed with a silent status 1; kur exits 141 (128 + SIGPIPE, as a shell reports
a command a closed pipe stopped) with one line on stderr and no traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent

pytestmark = pytest.mark.filterwarnings("ignore::kuration.errors.BudgetGranularityWarning")


def test_a_reader_closing_early_gives_141_and_one_line(
    tmp_path: Path, adsb_job_dict: dict, adsb_sources: list[Path]
) -> None:
    job = json.loads(json.dumps(adsb_job_dict))
    job["sources"] = [str(p) for p in adsb_sources[:2]]
    job["budget"] = {"train_hours": 0.2, "test_hours": 0.05}
    (tmp_path / "adsb.json").write_text(json.dumps(job))
    proc = subprocess.Popen(
        [str(BIN / "kur"), "run", "adsb.json", "--out", "out"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before kur writes its first line
    with proc.stderr:
        err = proc.stderr.read()
    assert proc.wait(timeout=300) == 141, err
    assert "Traceback" not in err and "Exception ignored" not in err
    lines = [line for line in err.splitlines() if line.startswith("kur:") and "warning" not in line]
    assert lines == [lines[-1]] and "broken pipe" in lines[-1], err
    commit = json.loads((tmp_path / "out" / "dataset.commit.json").read_text())
    assert commit["state"] == "committed"
