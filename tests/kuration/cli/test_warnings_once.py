"""``kur`` prints each warning line once a command, however often a source is read.

A LeRobot v3 dataset written by ``robovet demo --v3`` (robovet 0.2.2, MIT) has defects the
job repairs; the score pass and the filters' reread both read episode 1, and each read
warned, so its two repair warnings were printed twice.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from collections import Counter
from pathlib import Path

import pytest

from kuration.cli.main import main as kur_main

pytest.importorskip("av", reason="media extra")


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2])
def test_lerobot_repair_warnings_are_printed_once(workers: int, tmp_path: Path, capsys) -> None:
    data = tmp_path / "demo"
    robovet = str(Path(sys.executable).parent / "robovet")
    subprocess.run([robovet, "demo", str(data), "--v3"], check=True, capture_output=True)
    assert kur_main(["init", str(data), "--out", str(tmp_path / "job")]) == 0
    capsys.readouterr()
    argv = ["run", str(tmp_path / "job" / "job.json"), "--out", str(tmp_path / "o")]
    with warnings.catch_warnings():  # pytest's "error" filter off: kur prints the warning
        warnings.simplefilter("default")
        assert kur_main([*argv, "--workers", str(workers)]) == 0
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("kur: warning:")]
    repairs = [ln for ln in lines if "; repaired (" in ln]
    # the dataset's stats, episode 1's stats and camera window, episode 3's camera window
    assert len(repairs) == 4, lines
    twice = {ln: n for ln, n in Counter(lines).items() if n > 1}
    assert not twice, twice
