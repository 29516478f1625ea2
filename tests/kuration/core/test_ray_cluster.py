"""The ``ray`` executor's cluster does not depend on the machine: without an address from
kuration it starts a private one (no stale cluster file, ``RAY_ADDRESS`` or ``~/.ray`` is
read), on loopback only, and it joins another cluster only when the user names it.

Each case runs its driver in a child process (the session's own cluster may already be
initialised in this one); the module runs in a network namespace (tests/ray_netns.py)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.ray_netns import is_loopback, listening_sockets

pytestmark = pytest.mark.ray

ROOT = Path(__file__).resolve().parents[3]

# a driver: the ray executor (private, or at argv[1]) runs three tasks and reports where
_DRIVER = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
import ray
from kuration.core.executors import RayExecutor
from tests.ray_netns import listening_sockets
address = sys.argv[2] or None
with RayExecutor(2, address=address) as ex:
    outs = [out for _, out in ex.iter_batches(abs, [-1, -2, 3])]
    seen = {
        "outs": outs,
        "gcs": ray.get_runtime_context().gcs_address,
        "temp": ex._private.temp_dir if ex._private else None,
        "listen": listening_sockets(),
        "devices": [ln.split(":")[0].strip() for ln in open("/proc/net/dev").readlines()[2:]],
    }
seen["after"] = {"initialized": ray.is_initialized(), "auth": os.environ.get("RAY_AUTH_MODE")}
seen["temp_left"] = bool(seen["temp"]) and os.path.exists(seen["temp"])
print(json.dumps(seen))
"""


def _driver(env: dict[str, str], address: str = "") -> dict:
    run = subprocess.run(
        [sys.executable, "-c", _DRIVER, str(ROOT), address],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, f"stdout:\n{run.stdout}\nstderr:\n{run.stderr}"
    return json.loads(run.stdout.strip().splitlines()[-1])


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """This environment with its own HOME (to see whether anything lands in ~/.ray)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    (tmp_path / "home").mkdir(exist_ok=True)
    env["HOME"] = str(tmp_path / "home")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    return {**env, **extra}


def _check_private(seen: dict, tmp_path: Path, not_at: str) -> None:
    assert seen["outs"] == [1, 2, 3]
    assert seen["gcs"] != not_at and seen["gcs"].startswith("127.0.0.1:")
    assert seen["devices"] == ["lo"]  # really inside the namespace
    assert seen["listen"] and all(is_loopback(a) for a in seen["listen"]), seen["listen"]
    assert seen["after"] == {"initialized": False, "auth": None}  # environment restored
    assert not seen["temp_left"]
    assert not (tmp_path / "home" / ".ray").exists()


@pytest.mark.slow
def test_a_stale_cluster_file_is_not_read(tmp_path: Path) -> None:
    """A ``ray_current_cluster`` naming a dead address (another user's leftover), in the
    temp root Ray looks in (``RAY_TMPDIR``, so the machine's /tmp/ray is left alone)."""
    dead = "127.0.0.1:9"
    stale = tmp_path / "raytmp" / "ray" / "ray_current_cluster"
    stale.parent.mkdir(parents=True)
    stale.write_text(dead)
    env = _env(tmp_path, RAY_TMPDIR=str(tmp_path / "raytmp"))
    bare = subprocess.run(
        [sys.executable, "-c", "import ray; ray.init(num_cpus=1)"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert bare.returncode != 0 and "num_cpus" in bare.stderr  # Ray itself reads the file
    _check_private(_driver(env), tmp_path, dead)
    assert stale.read_text() == dead


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def other_cluster(tmp_path: Path) -> Iterator[str]:
    """Another user's cluster: ``ray start --head --block`` on loopback (no token), stopped
    by the pid of the process started here."""
    port = _free_port()
    temp = tempfile.mkdtemp(prefix="kur-other-", dir="/tmp")  # sockets need a short path
    ray_bin = Path(sys.executable).with_name("ray")
    cmd = [str(ray_bin), "start", "--head", "--block", "--node-ip-address=127.0.0.1"]
    cmd += [f"--port={port}", "--num-cpus=1", "--include-dashboard=false", f"--temp-dir={temp}"]
    log = open(tmp_path / "other.log", "wb")  # noqa: SIM115 -- closed below
    proc = subprocess.Popen(
        cmd,
        env=_env(tmp_path, RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0"),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, (tmp_path / "other.log").read_text()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, (tmp_path / "other.log").read_text()
                time.sleep(0.5)
        yield f"127.0.0.1:{port}"
    finally:
        proc.send_signal(signal.SIGTERM)  # ray start --block stops its node's processes
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the session this fixture started
            proc.wait()
        log.close()
        shutil.rmtree(temp, ignore_errors=True)


@pytest.mark.slow
def test_ray_address_of_another_cluster_is_not_joined(tmp_path: Path, other_cluster: str) -> None:
    """With ``RAY_ADDRESS`` naming a running cluster, Ray's own ``ray.init()`` joins it; a
    run that names no address starts a private one; naming it through kuration joins it."""
    env = _env(tmp_path, RAY_ADDRESS=other_cluster)
    bare = subprocess.run(
        [
            sys.executable,
            "-c",
            "import ray; ray.init(); print(ray.get_runtime_context().gcs_address)",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert bare.stdout.strip().splitlines()[-1:] == [other_cluster], bare.stderr
    _check_private(_driver(env), tmp_path, other_cluster)
    joined = _driver(_env(tmp_path), address=other_cluster)
    assert joined["outs"] == [1, 2, 3] and joined["gcs"] == other_cluster
    assert joined["temp"] is None


def test_loopback_addresses_are_recognised() -> None:
    assert is_loopback("0100007F:1F90") and is_loopback("00000000000000000000000001000000:50")
    assert is_loopback("0000000000000000FFFF00000100007F:A751")
    assert not is_loopback("00000000:1F90") and not is_loopback(
        "0101A8C0:50"
    )  # 0.0.0.0, 192.168.1.1
    assert not is_loopback("00000000000000000000000000000000:50")  # ::
    assert all(is_loopback(a) for a in listening_sockets())  # nothing else here
