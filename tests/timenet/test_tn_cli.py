from __future__ import annotations

import json
from pathlib import Path

import pytest
from tn_helpers import write_demo

from timenet.cli import main


def test_list_info_download(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reg = tmp_path / "reg"
    write_demo(reg, "1.0")
    write_demo(reg, "1.1")
    assert main(["list", "--registry", str(reg)]) == 0
    out = capsys.readouterr().out
    assert "acme/demo\t1.0, 1.1" in out

    assert main(["info", "acme/demo", "--registry", str(reg)]) == 0
    out = capsys.readouterr().out
    assert "acme/demo@1.1" in out and "ecg: float32 scalar [mV]" in out
    assert "acc: int16 3 [m/s^2]" in out and "irregular" in out

    assert main(["info", "acme/demo@1.0", "--json", "--registry", str(reg)]) == 0
    assert json.loads(capsys.readouterr().out)["card"]["version"] == "1.0"

    assert main(["download", "acme/demo@1.0", str(tmp_path / "dst"), "--registry", str(reg)]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "dst/acme/demo/1.0")


def test_errors_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIMENET_REGISTRY", str(tmp_path))
    assert main(["info", "acme/missing"]) == 1
    err = capsys.readouterr().err
    assert "acme/missing" in err and str(tmp_path) in err
    assert main(["list"]) == 0
    assert "no datasets" in capsys.readouterr().out
