"""Every ``kur*`` console script answers a user error with one line and exit 1, no traceback,
and leaves the folder it ran in as it was.

Each case runs the installed script as a subprocess in a folder of its own holding
``job.json`` (the example job on two real sources) and variants of it, ``bad.json`` (malformed
JSON), ``folder/`` (an empty folder), ``notes/`` (a folder with a file in it) and ``file.txt``;
the folder's listing and bytes must be the same afterwards.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent

# (script and arguments, exit status, text the error line must contain)
CASES = [
    (["kur", "run", "folder"], 1, "folder: cannot read it: Is a directory"),
    (["kur-run", "folder"], 1, "Is a directory"),
    (["kur", "run", "missing.json"], 1, "missing.json not found"),
    (["kur", "run", "bad.json"], 1, "bad.json: malformed JSON"),
    (["kur", "run", "schema-missing.json"], 1, "schema: file"),
    (["kur", "run", "unknown-key.json"], 1, "unknown key 'trian_hours'"),
    (["kur", "run", "job.json", "--bogus"], 1, "unrecognized arguments: --bogus"),
    (["kur", "run", "job.json", "--workers", "two"], 1, "--workers: invalid int value"),
    (["kur", "run", "job.json", "--resume", "--force"], 1, "mutually exclusive"),
    (["kur", "run", "job.json", "--out", "file.txt"], 1, "file.txt exists and is not a directory"),
    (["kur", "run", "job.json", "--out", "notes"], 1, "notes is not empty and holds no kuration"),
    (
        ["kur", "run", "job.json", "--out", "notes", "--resume"],
        1,
        "holds no kuration run to resume",
    ),
    (["kur", "bogus"], 1, "invalid choice: 'bogus'"),
    (["kur", "inspect", "missing"], 1, "missing: does not exist"),
    (["kur-inspect", "folder"], 1, "not a kuration dataset"),
    (["kur-diff", "folder", "missing"], 1, "not a kuration dataset"),
    (["kur", "check", "folder", "--policy", "bad.json"], 1, "bad.json: malformed JSON"),
    (["kur-check", "folder"], 1, "required: --policy"),
    (["kur", "curate", "missing.json", "--n", "3"], 1, "missing.json not found"),
    (["kur-curate", "job.json", "--n", "three"], 1, "--n: expected an integer, got 'three'"),
    (["kur", "curate", "job.json", "--n", "-3"], 1, "--n: must be an integer >= 0, got -3"),
    (["kur-experiment", "job.json", "--n", "-1", "--strategy", "s.json"], 1, "--n: must be"),
    (["kur-sample", "build-sources", "--slice-minutes", "0"], 1, "must be a finite number > 0"),
    (["kur-sample", "build-sources", "--slice-minutes", "-5"], 1, "must be a finite number > 0"),
    (["kur-experiment", "job.json", "--n", "3"], 1, "required: --strategy"),
    (["kur-plugin-check", "no_such_plugin_module"], 1, "no_such_plugin_module"),
    (["kur-sample", "nope"], 1, "invalid choice: 'nope'"),
]


@pytest.fixture
def workdir(tmp_path: Path, adsb_job_dict: dict, adsb_sources: list[Path]) -> Path:
    job = json.loads(json.dumps(adsb_job_dict))
    job["sources"] = [str(p) for p in adsb_sources[:2]]
    (tmp_path / "job.json").write_text(json.dumps(job))
    (tmp_path / "bad.json").write_text('{"name": ')
    (tmp_path / "schema-missing.json").write_text(json.dumps({**job, "schema": "nope.json"}))
    (tmp_path / "unknown-key.json").write_text(json.dumps({**job, "trian_hours": 1}))
    (tmp_path / "folder").mkdir()
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "note.txt").write_text("not a dataset")
    (tmp_path / "file.txt").write_text("just a file")
    return tmp_path


def snapshot(root: Path) -> dict[str, str]:
    """Every path under ``root`` with the SHA-256 of its bytes (``dir`` for folders)."""
    return {
        str(p.relative_to(root)): "dir"
        if p.is_dir()
        else hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
    }


@pytest.mark.slow  # two dozen interpreter starts
def test_every_bad_input_is_one_line_and_leaves_nothing(workdir: Path, run_cli_table) -> None:
    before = snapshot(workdir)
    assert run_cli_table(CASES, workdir) == []
    assert snapshot(workdir) == before  # no lock, no folder, no file left behind


def test_a_failed_gate_keeps_exit_2(workdir: Path) -> None:
    (workdir / "policy.json").write_text('{"min_sources": 1}')
    run = subprocess.run(
        [str(BIN / "kur"), "check", "folder", "--policy", "policy.json"],
        cwd=workdir,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert "kur check: gate readable failed" in run.stderr


def test_out_inside_a_read_only_folder(
    workdir: Path, read_only_dir: Path, run_cli_table, unprivileged
) -> None:
    run = ["kur", "run", "job.json", "--force", "--out"]
    cases = [
        # a new folder inside it: mkdir is refused
        ([*run, str(read_only_dir / "ds")], 1, f"{read_only_dir / 'ds'}: cannot create"),
        # the folder itself: the writer lock cannot be created
        ([*run, str(read_only_dir)], 1, ".kuration-writer.lock: cannot create the writer lock"),
    ]
    assert run_cli_table(cases, workdir, prefix=unprivileged([])) == []
    assert list(read_only_dir.iterdir()) == []


def test_our_warnings_print_as_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    import argparse
    import warnings

    from kuration.cli.main import _dispatch
    from kuration.errors import DataOrderWarning

    def command(_: argparse.Namespace) -> int:
        warnings.warn(DataOrderWarning("a.csv: 3 rows out of time order were sorted"), stacklevel=1)
        return 0

    with warnings.catch_warnings():
        warnings.simplefilter("default")
        assert _dispatch("kur", argparse.Namespace(fn=command)) == 0
    err = capsys.readouterr().err
    assert err == "kur: warning: a.csv: 3 rows out of time order were sorted\n"


def test_a_warning_made_an_error_by_the_users_filters_is_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``PYTHONWARNINGS=error`` (or ``-W error``) turns our warnings into exceptions: the run
    stops with one ``kur: error:`` line and status 1, not a traceback."""
    import argparse
    import warnings

    from kuration.cli.main import _dispatch
    from kuration.errors import BudgetGranularityWarning

    def command(_: argparse.Namespace) -> int:
        warnings.warn(BudgetGranularityWarning("split 'test': 0.3 h for 0.25 h"), stacklevel=1)
        return 0

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _dispatch("kur", argparse.Namespace(fn=command)) == 1
    assert capsys.readouterr().err == "kur: error: split 'test': 0.3 h for 0.25 h\n"
