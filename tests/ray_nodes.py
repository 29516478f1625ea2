"""Two Ray nodes on this machine for a multi-node run: a head and a second node joined to
it, each a ``ray start --block`` process (one CPU, 127.0.0.1, one token for both) that the
caller stops by its pid (:func:`stop_node`).  Run it inside a network namespace with only
``lo`` (tests/ray_netns.py): Ray also binds the machine's external interface."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Ray's default worker ports (10002-19999): the head's port must lie outside them
_WORKER_PORTS = range(10002, 20000)


def free_port(avoid: range = _WORKER_PORTS) -> int:
    """A free loopback port outside ``avoid``."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port not in avoid:
            return port


def _node_env(home: Path, token: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env["HOME"] = str(home)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    return {**env, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token}


def stop_node(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)  # ray start --block stops its node's processes
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the session started here
        proc.wait()


def _wait_for(check, proc: subprocess.Popen[bytes], log: Path, what: str) -> None:
    deadline = time.monotonic() + 180
    while not check():
        assert proc.poll() is None, f"{what} exited:\n{log.read_text()}"
        assert time.monotonic() < deadline, f"{what} did not start:\n{log.read_text()}"
        time.sleep(0.5)


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def _alive_nodes(address: str, env: dict[str, str]) -> int:
    code = "import ray; ray.init(address=%r); print(sum(n['Alive'] for n in ray.nodes()))"
    run = subprocess.run(
        [sys.executable, "-c", code % address],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    lines = run.stdout.strip().splitlines()
    return int(lines[-1]) if run.returncode == 0 and lines else 0


def start_two_nodes(work: Path) -> tuple[str, dict[str, str], list[subprocess.Popen[bytes]]]:
    """A head and a second node (``ray start --block``, one CPU each, 127.0.0.1, a shared
    temp dir and token): ``(address, env, processes)``; the caller stops the processes."""
    home = work / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = _node_env(home, secrets.token_hex(32))
    temp = tempfile.mkdtemp(prefix="kur-2n-", dir="/tmp")  # sockets need a short path
    port = free_port()
    address = f"127.0.0.1:{port}"
    ray_bin = str(Path(sys.executable).with_name("ray"))
    common = ["--block", "--node-ip-address=127.0.0.1", "--num-cpus=1", f"--temp-dir={temp}"]
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for i, extra in enumerate(
            (["--head", f"--port={port}", "--include-dashboard=false"], [f"--address={address}"])
        ):
            agent = [f"--dashboard-agent-listen-port={free_port()}"]
            log = work / f"node{i}.log"
            with open(log, "wb") as out:
                procs.append(
                    subprocess.Popen(
                        [ray_bin, "start", *extra, *common, *agent],
                        env=env,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                )
            if i == 0:
                _wait_for(lambda: _listening(port), procs[0], log, "the head")
        _wait_for(lambda: _alive_nodes(address, env) == 2, procs[1], log, "the second node")
    except BaseException:
        for proc in reversed(procs):
            stop_node(proc)
        shutil.rmtree(temp, ignore_errors=True)
        raise
    env["KUR_TEST_RAY_TEMP"] = temp
    return address, env, procs


def stop_nodes(env: dict[str, str], procs: list[subprocess.Popen[bytes]]) -> None:
    """Stop the nodes :func:`start_two_nodes` started (second first) and remove their temp dir."""
    for proc in reversed(procs):
        stop_node(proc)
    shutil.rmtree(env["KUR_TEST_RAY_TEMP"], ignore_errors=True)
