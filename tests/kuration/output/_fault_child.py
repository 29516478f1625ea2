"""Run ``kur run`` in forked processes, each SIGKILLed at a chosen point of its write.

Usage: python _fault_child.py PLAN.json

PLAN.json is a list of ``{"point": ..., "argv": [...]}``: for each item this
process (which imports kuration once) forks a child that runs
``kuration.cli.main.main(argv)`` -- the ``kur run`` command -- with a fault
armed, then prints ``{"<index>": wait status}`` as JSON once all have ended.

``point`` is one of

* ``stage:N``         right after the N-th shard is written to the staging area;
* ``torn:N``          while the N-th staged shard's temp file is half written;
* ``move:N``          right after the N-th staged shard is moved into place;
* ``before:NAME:K``   just before the K-th ``os.replace`` onto the file NAME;
* ``after:NAME:K``    just after it;
* ``pause:NAME:K``    just before it, write the pid to ``<out>.ready`` and sleep;
* ``none``            no fault.

Every file the writer publishes goes through ``os.replace``, so hooking it
finds every publication step without knowing the writer's internals.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

from kuration.cli.main import main  # imported once, before forking

_real_replace = os.replace


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _arm(point: str, ready: str) -> None:
    kind, _, rest = point.partition(":")
    counts: dict[str, int] = {}

    def hooked(src, dst, *args, **kwargs):  # type: ignore[no-untyped-def]
        dst_s = os.fspath(dst)
        name = os.path.basename(dst_s)
        is_shard = os.path.basename(os.path.dirname(dst_s)) in ("train", "test")
        staged = ".kuration_staging" in dst_s
        key = ("<staged>" if staged else "<moved>") if is_shard else name
        counts[key] = counts.get(key, 0) + 1
        n = counts[key]
        wants = {"stage": "<staged>", "torn": "<staged>", "move": "<moved>"}.get(kind)
        if wants == key and n == int(rest):
            if kind == "torn":
                os.truncate(src, os.path.getsize(src) // 2)
                _die()
            _real_replace(src, dst, *args, **kwargs)
            _die()
        if kind in ("before", "after", "pause"):
            target, _, k = rest.rpartition(":")
            if name == target and n == int(k):
                if kind == "before":
                    _die()
                if kind == "pause":
                    with open(ready, "w") as fh:
                        fh.write(str(os.getpid()))
                    time.sleep(120)
                    _die()
                _real_replace(src, dst, *args, **kwargs)
                _die()
        return _real_replace(src, dst, *args, **kwargs)

    os.replace = hooked  # type: ignore[assignment]


def _run(point: str, argv: list[str]) -> None:
    out = argv[argv.index("--out") + 1]
    with open(out + ".stderr", "wb") as err:
        os.dup2(err.fileno(), 2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    if point != "none":
        _arm(point, out + ".ready")
    try:
        code = main(argv)
    except BaseException as exc:  # report, never fall back into the parent's loop
        print(f"child crashed: {exc!r}", file=sys.stderr)
        code = 3
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _warm_up(argv: list[str]) -> None:
    """One unfaulted run in this process first, so that lazy imports and first-call
    costs are paid once rather than in every forked child."""
    out = argv[argv.index("--out") + 1] + ".warmup"
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    try:
        main([*argv[: argv.index("--out")], "--out", out, "--json"])
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(devnull)
        os.close(saved)
        shutil.rmtree(out, ignore_errors=True)


def _serve(plan: list[dict]) -> dict[str, int]:
    if plan:
        _warm_up(plan[0]["argv"])
    pids = {}
    for i, item in enumerate(plan):
        pid = os.fork()
        if pid == 0:
            _run(item["point"], item["argv"])
        pids[pid] = str(i)
    status = {}
    while pids:
        pid, st = os.wait()
        if pid in pids:
            status[pids.pop(pid)] = st
    return status


if __name__ == "__main__":
    with open(sys.argv[1]) as fh:
        print(json.dumps(_serve(json.load(fh))))
