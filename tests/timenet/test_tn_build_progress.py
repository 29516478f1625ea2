"""A build whose stderr is not a terminal says what it does, on stderr, in plain lines."""

from __future__ import annotations

from pathlib import Path

import pytest
from tn_helpers import make_card

import timenet as tn
from timenet import build as tb
from timenet.build.progress import BuildProgress
from timenet.writer import check_writable


def test_plain_lines_when_stderr_is_not_a_terminal(capsys) -> None:
    with BuildProgress() as prog:  # pytest's stderr is not a terminal
        assert prog.plain and not prog.enabled
        with prog.stage("convert"):
            pass
        assert list(prog.track(range(3), "frames")) == [0, 1, 2]
    out = capsys.readouterr()
    assert out.out == ""
    lines = out.err.splitlines()
    assert lines[0] == "timenet build: convert ..." and lines[1].startswith(
        "timenet build: convert: done in"
    )
    assert lines[2] == "timenet build: frames (3 items) ..." and "3 done in" in lines[3]


def test_disabled_progress_stays_silent(capsys) -> None:
    with BuildProgress(enabled=False) as prog, prog.stage("convert"):
        pass
    assert capsys.readouterr().err == ""


def test_a_registry_that_cannot_be_written_fails_before_any_stage(tmp_path: Path, capsys) -> None:
    """The check comes before the download and before the first progress line: the raw
    input is not there either, so a download would fail with FetchError after printing."""
    import timenet_connectors.datasets.aeon.body_imu as mod

    reg = tmp_path / "reg"
    reg.write_text("a file where the registry should be")
    with pytest.raises(tn.RegistryError, match="cannot write") as info:
        tb.run_pipeline(mod.CONNECTOR, reg, fetch_from=tmp_path / "nowhere")
    assert info.value.path == str(reg / "aeon")
    assert capsys.readouterr().err == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reg"] and reg.is_file()


def test_the_writable_check_leaves_nothing(tmp_path: Path) -> None:
    card = tn.DatasetCard.model_validate(make_card())
    check_writable(tmp_path / "fresh", card)
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "reg" / card.org / card.name / "0.9").mkdir(parents=True)
    check_writable(tmp_path / "reg", card)
    assert [p.name for p in (tmp_path / "reg" / card.org / card.name).iterdir()] == ["0.9"]
