"""Types are a check: mypy, configured in pyproject.toml ([tool.mypy]: strict for the
pipeline and the small packages around it), reports no error in src/."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _mypy(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow
def test_mypy_finds_no_error_in_src() -> None:
    # the files come from the config (src); the cache stays in .mypy_cache (gitignored)
    res = _mypy()
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Success: no issues found" in res.stdout


def test_mypy_with_the_project_config_reports_a_wrong_return_type(tmp_path: Path) -> None:
    bad = tmp_path / "wrong_return.py"
    bad.write_text("def f() -> int:\n    return 'x'\n", encoding="utf-8")
    res = _mypy("--no-incremental", str(bad), cwd=tmp_path)
    assert res.returncode == 1
    assert "wrong_return.py:2: error" in res.stdout and "[return-value]" in res.stdout
