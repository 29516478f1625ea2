"""Every command and code block in README.md and docs/*.md runs as written, in order, on a fresh clone.

How it runs
-----------
The repository is cloned (``git clone`` of this checkout, so only committed files count) into a
temporary folder.  README.md comes first, then ``docs/*.md`` in name order; inside a file the
blocks run top to bottom.  Shell blocks (```` ```bash ````, ```` ```sh ````, or a fence without a
language) run with ``bash -e`` in the clone's root; ```` ```python ```` blocks run, one fresh
interpreter each, as a file in the clone's root.  Data blocks (``json``, ``text``, ``ebnf``,
``sql``) are not commands and are not run.

What is substituted, and why
----------------------------
The README's two set-up lines create a virtual environment and ``pip install`` the project into
it.  Doing that for real downloads and builds torch and the other dev extras (many minutes), so
the test stands in for exactly those steps (see ``SUBSTITUTED``):

* ``python3 -m venv .venv && .venv/bin/pip install -q -e .`` becomes
  ``python3 -m venv --without-pip .venv`` plus a ``.pth`` file that puts the *clone's* ``src/``
  (and ``tests/plugin_pkg/src``) first on ``sys.path`` and the dependencies already installed
  for this test run after it, and the console scripts of ``[project.scripts]`` written into
  ``.venv/bin``; the rest of the line (``.venv/bin/kur run ...``) runs as written.
* The second line (``... && .venv/bin/python -m pytest -q``) is not run: it is this test suite.

Blocks are skipped only where the markdown says so, with a reason, by a comment on the line
before the fence: ``<!-- docs-test: skip (reason) -->``.  Downloads go through the user's
caches (``~/.cache/timenet/downloads``, ``~/.cache/kuration``), as they would for a user.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SKIP = re.compile(r"<!--\s*docs-test:\s*skip\s*\((?P<reason>[^)]+)\)\s*-->")
FENCE = re.compile(r"^```(?P<lang>[A-Za-z0-9_-]*)\s*$")
SHELL = {"", "bash", "sh", "shell", "console"}
DATA = {"json", "text", "ebnf", "sql", "yaml", "toml"}

_VENV_LINE = "python3 -m venv .venv && .venv/bin/pip install -q -e . && "
_DEV_LINE = (
    'python3 -m venv .venv && .venv/bin/pip install -q -e ".[dev]" ./tests/plugin_pkg '
    "&& .venv/bin/python -m pytest -q"
)
# exact line prefix -> (replacement, reason); the test fails if one is no longer in the docs
SUBSTITUTED: dict[str, tuple[str, str]] = {
    _VENV_LINE: ("", "the venv and install are prepared by the test (see module docstring)"),
    _DEV_LINE: ("true", "runs this test suite itself (it would recurse)"),
}


@dataclass(frozen=True)
class Block:
    path: str
    line: int
    lang: str
    text: str
    skip: str | None


def blocks_of(path: Path) -> list[Block]:
    """The fenced blocks of one markdown file, with the skip reason written before each."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        skip = SKIP.search(lines[k]) if k >= 0 else None
        rel = str(path.relative_to(path.parents[1] if path.parent.name == "docs" else path.parent))
        body = "\n".join(lines[i + 1 : j]) + "\n"
        out.append(Block(rel, i + 1, m["lang"], body, skip["reason"] if skip else None))
        i = j + 1
    return out


def all_blocks(root: Path) -> list[Block]:
    files = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    return [b for f in files for b in blocks_of(f)]


def _substitute(text: str, used: set[str]) -> str:
    lines = []
    for line in text.splitlines():
        for prefix, (replacement, _reason) in SUBSTITUTED.items():
            if line.startswith(prefix):
                used.add(prefix)
                line = replacement + line[len(prefix) :]
                break
        lines.append(line)
    return "\n".join(lines) + "\n"


def _make_venv(clone: Path) -> Path:
    """Stand-in for ``python3 -m venv .venv && pip install -e .``: the clone's code, our deps."""
    venv = clone / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))
    here = sysconfig.get_path("purelib")
    paths = [clone / "src", clone / "tests" / "plugin_pkg" / "src", here]
    (site / "_docs_test.pth").write_text("".join(f"{p}\n" for p in paths))
    scripts = tomllib.loads((clone / "pyproject.toml").read_text())["project"]["scripts"]
    python = venv / "bin" / "python"
    for name, target in scripts.items():
        module, func = target.split(":")
        script = venv / "bin" / name
        # as pip writes it: the __main__ guard keeps spawned worker processes (kur run
        # --workers 2), which import the script as __mp_main__, from running the command again
        script.write_text(
            f"#!{python}\nimport sys\nfrom {module} import {func}\n"
            f"if __name__ == '__main__':\n    sys.exit({func}())\n"
        )
        script.chmod(0o755)
    return venv


def _run(block: Block, text: str, clone: Path, env: dict[str, str]) -> None:
    if block.lang == "python":
        cmd = [str(clone / ".venv" / "bin" / "python"), "-c", text]
    else:
        cmd = ["bash", "-e", "-o", "pipefail", "-c", text]
    t0 = time.monotonic()
    res = subprocess.run(cmd, cwd=clone, env=env, capture_output=True, text=True, timeout=900)
    took = time.monotonic() - t0
    print(f"{block.path}:{block.line} ({block.lang or 'shell'}) {took:.1f}s")
    if res.returncode != 0:
        pytest.fail(
            f"{block.path}:{block.line} failed (exit {res.returncode}):\n{text}\n"
            f"--- stdout ---\n{res.stdout[-4000:]}\n--- stderr ---\n{res.stderr[-4000:]}"
        )


def test_skip_marks_are_rare_and_give_reasons() -> None:
    blocks = all_blocks(ROOT)
    skipped = [b for b in blocks if b.skip]
    assert all(len(b.skip.strip()) > 10 for b in skipped if b.skip)
    assert len(skipped) <= len(blocks) // 3, [(b.path, b.line) for b in skipped]
    known = SHELL | DATA | {"python"}
    assert not [b for b in blocks if b.lang not in known], "a fence with an unknown language"


@pytest.mark.slow
def test_every_block_runs_as_written_on_a_fresh_clone(tmp_path: Path) -> None:
    if shutil.which("git") is None:  # pragma: no cover
        pytest.skip("git is needed to clone the checkout")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    venv = _make_venv(clone)
    env = dict(os.environ)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env.pop("TIMENET_REGISTRY", None)
    env.pop("PYTHONPATH", None)
    env["MPLBACKEND"] = "Agg"
    env["TIMENET_TERMS_FILE"] = str(tmp_path / "accepted-terms.json")  # not the user's own
    used: set[str] = set()
    ran = 0
    for block in all_blocks(clone):
        if block.skip or block.lang in DATA:
            continue
        _run(block, _substitute(block.text, used), clone, env)
        ran += 1
    assert used == set(SUBSTITUTED), (
        f"substitutions no longer in the docs: {set(SUBSTITUTED) - used}"
    )
    assert ran >= 10
    # every file the docs had the user create is ignored by git
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=clone,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert status == "", f"the docs create files .gitignore does not cover:\n{status}"
