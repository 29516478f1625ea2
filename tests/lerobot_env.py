"""A cached Python 3.12 environment holding lerobot 0.6.1, for the LeRobot round-trip test.

lerobot 0.6.1 needs Python >= 3.12, torch < 2.12 and datasets < 5, so it cannot share
the project's environment (Python 3.11, torch 2.13, datasets 5).  The environment is
built once per machine (from the package registry: about 7.5 minutes and 5.4 GB) into
``$KURATION_CACHE/envs/lerobot-0.6.1`` and reused; a build that fails raises, so the
test fails instead of skipping.  ``python tests/lerobot_env.py`` builds it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

PINS = ("lerobot[dataset]==0.6.1", "torch<2.12", "datasets<5")


def env_dir() -> Path:
    base = Path(os.environ.get("KURATION_CACHE") or Path.home() / ".cache" / "kuration")
    return base / "envs" / "lerobot-0.6.1"


def _python312() -> str:
    for cand in (  # pyenv's own copy first: its shim fails unless 3.12 is selected
        str(Path.home() / ".pyenv" / "versions" / "3.12.1" / "bin" / "python3.12"),
        shutil.which("python3.12"),
    ):
        if cand and os.path.isfile(cand):
            return cand
    raise RuntimeError("no Python 3.12 found (python3.12 on PATH or pyenv 3.12.1)")


def lerobot_python() -> str:
    """The environment's interpreter, built first when missing.

    Raises
    ------
    RuntimeError, subprocess.CalledProcessError
        No Python 3.12, or the venv or pip install failed.
    """
    root = env_dir()
    py = root / "bin" / "python"
    done = root / ".complete"
    if done.is_file():
        return str(py)
    tmp = root.with_name(root.name + f".building-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    subprocess.run([_python312(), "-m", "venv", str(tmp)], check=True)
    pip = [str(tmp / "bin" / "python"), "-m", "pip", "install", "-q", *PINS]
    subprocess.run(pip, check=True, timeout=3600)
    check = "from lerobot.datasets.lerobot_dataset import LeRobotDataset"
    subprocess.run([str(tmp / "bin" / "python"), "-c", check], check=True)
    shutil.rmtree(root, ignore_errors=True)
    os.replace(tmp, root)
    # venv scripts name the build folder: the interpreter itself is what we call
    (root / ".complete").write_text(" ".join(PINS) + "\n")
    return str(py)


if __name__ == "__main__":
    print(lerobot_python())
    sys.exit(0)
