"""The harness of tests/ray_netns.py: a Ray cluster that dies, or a driver that Ray ends,
in the middle of the Ray tests still leaves pytest a result per test and its summary."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

_TESTS = """
import os, signal
import pytest

pytestmark = pytest.mark.ray


def test_1_cluster_dies():
    import ray
    from kuration.core.ray_cluster import start_private

    start_private(1)
    raylet = ray._private.worker._global_node.all_processes["raylet"][0].process
    os.kill(raylet.pid, signal.SIGKILL)  # the raylet this test started
    ray.get(ray.remote(lambda: 1).remote(), timeout=60)


def test_2_passes():
    with open("/proc/net/dev") as f:
        assert [ln.split(":")[0].strip() for ln in f.readlines()[2:]] == ["lo"]


def test_3_driver_ended():
    os._exit(1)  # what Ray does to a driver whose cluster is gone


def test_4_never_runs():
    pass
"""


@pytest.mark.ray
@pytest.mark.slow
def test_a_dead_cluster_mid_suite_still_ends_with_a_summary(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT)!r})\n"
        "from tests.ray_netns import pytest_collection_modifyitems, pytest_runtest_logreport\n"
    )
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    ray: starts Ray\n")
    (tmp_path / "test_dies.py").write_text(_TESTS)
    env = {k: v for k, v in os.environ.items() if k != "KURATION_NETNS_REPORTS"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    # the cluster that dies is never stopped: its temp dir goes where it is removed below
    # (a short path: Ray's sockets live there)
    env["TMPDIR"] = temp = tempfile.mkdtemp(prefix="kur-netns-", dir="/tmp")
    try:
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfEs"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    out = run.stdout
    assert run.returncode == 1, out + run.stderr
    assert "3 failed, 1 passed" in out.splitlines()[-1], out
    assert "FAILED test_dies.py::test_1_cluster_dies - [in the network namespace, call]" in out
    assert "FAILED test_dies.py::test_3_driver_ended - the pytest run in the network" in out
    assert "ended (status 1) before this test did" in out
    assert "FAILED test_dies.py::test_4_never_runs" in out
