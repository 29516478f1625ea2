"""``timenet`` and ``timenet-build`` answer a user error with one line and exit 1, no traceback,
and a write refused by the file system (a read-only registry, tested as uid 65534) is a
:class:`RegistryError` naming the path, with nothing left behind."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tn_helpers import make_card, write_demo

import timenet as tn

CASES = [
    (["timenet", "bogus"], 1, "invalid choice: 'bogus'"),
    (["timenet", "info"], 1, "the following arguments are required: ref"),
    (["timenet", "info", "not-a-ref"], 1, "invalid dataset reference 'not-a-ref'"),
    (["timenet", "info", "no/such", "--registry", "folder"], 1, "dataset 'no/such' not found"),
    (["timenet", "list", "--registry", "missing"], 1, "registry missing: does not exist"),
    (["timenet", "list", "--registry", "file.txt"], 1, "registry file.txt: is not a directory"),
    (["timenet", "info", "acme/demo", "--registry", "broken"], 1, "manifest"),
    (["timenet", "download", "no/such", "dest", "--registry", "folder"], 1, "not found"),
    (
        ["timenet", "download", "acme/demo", "file.txt/dest", "--registry", "reg"],
        1,
        "cannot write",
    ),
    (["timenet-build"], 1, "the following arguments are required: command"),
    (["timenet-build", "build", "not-a-ref"], 1, "invalid dataset reference"),
    (["timenet-build", "build", "no/such", "--registry", "folder"], 1, "no connector found"),
    (
        ["timenet-build", "build", "opensky/adsb-traffic@9.9", "--registry", "folder"],
        1,
        "the installed connector builds version",
    ),
]


def _snapshot(root: Path) -> dict[str, float | str]:
    return {
        str(p.relative_to(root)): "dir" if p.is_dir() else p.read_bytes().hex()[:64]
        for p in sorted(root.rglob("*"))
    }


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    write_demo(tmp_path / "reg", records=1)
    write_demo(tmp_path / "broken", records=1)
    (next((tmp_path / "broken").rglob("manifest.json"))).write_text('{"card": ')
    (tmp_path / "folder").mkdir()
    (tmp_path / "file.txt").write_text("just a file")
    return tmp_path


@pytest.mark.slow  # a dozen interpreter starts
def test_every_bad_input_is_one_line_and_leaves_nothing(workdir: Path, run_cli_table) -> None:
    before = _snapshot(workdir)
    assert run_cli_table(CASES, workdir) == []
    assert _snapshot(workdir) == before


def test_read_only_registry_cli(
    workdir: Path, read_only_dir: Path, run_cli_table, unprivileged, adsb_sources
) -> None:
    # adsb_sources: the connector's pinned wheel is in the download cache (no network here)
    ro = str(read_only_dir)
    cases = [
        (["timenet-build", "build", "opensky/adsb-traffic", "--registry", ro], 1, f"{ro}/opensky"),
        (["timenet", "download", "acme/demo", ro, "--registry", "reg"], 1, f"{ro}/acme"),
    ]
    assert run_cli_table(cases, workdir, prefix=unprivileged([])) == []
    assert list(read_only_dir.iterdir()) == []


def test_timef_writer_on_a_read_only_registry(read_only_dir: Path, unprivileged) -> None:
    code = f"""
import sys, timenet as tn
try:
    tn.TimeFWriter({str(read_only_dir)!r}, {make_card()!r})
except tn.RegistryError as exc:
    print(type(exc).__name__, isinstance(exc, OSError), exc.url, exc.path, sep="|")
    print(exc)
"""
    run = subprocess.run(
        unprivileged([sys.executable, "-c", code]), capture_output=True, text=True, check=False
    )
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
    head, message = run.stdout.splitlines()
    assert head == f"RegistryError|True|{read_only_dir}|{read_only_dir / 'acme'}"
    assert message == (
        f"registry {read_only_dir}: cannot write {read_only_dir / 'acme'}: Permission denied"
    )
    assert list(read_only_dir.iterdir()) == []


def test_a_refused_writer_names_the_path_and_leaves_nothing(tmp_path: Path) -> None:
    # a file is in the way of the version's staging folder
    reg = tmp_path / "reg"
    (reg / "acme").mkdir(parents=True)
    (reg / "acme" / "demo").write_text("in the way")
    with pytest.raises(tn.RegistryError, match="cannot write") as info:
        tn.TimeFWriter(tmp_path / "reg", make_card())
    assert info.value.path is not None and info.value.path.startswith(str(reg / "acme" / "demo"))
    assert sorted(p.name for p in (reg / "acme").iterdir()) == ["demo"]
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "x").write_text("the registry root is a file")
    with pytest.raises(tn.RegistryError):
        tn.TimeFWriter(fresh / "x" / "reg", make_card())
    assert sorted(p.name for p in fresh.iterdir()) == ["x"]


def test_a_reader_that_goes_away_gives_141_and_one_line() -> None:
    # `kur-explain ... | head`: the pipe closes while the command still writes; 141 as a
    # shell reports a command SIGPIPE stopped, one line, no traceback
    script = (
        "import sys\n"
        "from timenet._cli import run_guarded\n"
        "def cmd():\n"
        "    for _ in range(10**6):\n"
        "        print('x' * 100)\n"
        "    return 0\n"
        "sys.exit(run_guarded('prog', cmd, ()))\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as p:
        assert p.stdout is not None and p.stderr is not None
        p.stdout.readline()
        p.stdout.close()
        err = p.stderr.read().decode()
        assert p.wait(timeout=60) == 141
    assert (
        err
        == "prog: stdout was closed by its reader (broken pipe); the rest of the output is lost\n"
    )
