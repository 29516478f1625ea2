"""A build whose stderr is not a terminal says what it does, on stderr, in plain lines."""

from __future__ import annotations

from timenet.build.progress import BuildProgress


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
