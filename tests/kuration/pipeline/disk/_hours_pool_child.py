"""Run an hours job on the disk pool and SIGKILL this process right after its K-th partition commit.

Usage: python _hours_pool_child.py ARGS.json

ARGS.json: ``{"job": job dict, "out": destination, "kill_after": K}``.  Every partition
commit is published with ``os.replace`` of a ``*.commit.json`` file; the hook counts
those and kills the process after the K-th, so the score stage is interrupted with K
partitions committed, no stage commit and nothing published.

With ``"kill_group_after_scored": K`` and ``"workers": N`` instead, N worker processes
score (they publish the commits) and the whole process group -- this process and its
workers -- is SIGKILLed once the lead has collected K outcomes (its K-th ``scoring``
advance event): K or more partitions committed (those in flight may have finished).
Run it as the leader of its own process group (``start_new_session=True``).
"""

from __future__ import annotations

import json
import os
import signal
import sys

from kuration import run_job

_real_replace = os.replace


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as fh:
        args = json.load(fh)
    count = [0]

    def replace(src, dst, *a, **k):  # type: ignore[no-untyped-def]
        _real_replace(src, dst, *a, **k)
        if str(dst).endswith(".commit.json") and not str(dst).endswith("_stage.commit.json"):
            count[0] += 1
            if count[0] == args["kill_after"]:
                os.kill(os.getpid(), signal.SIGKILL)

    if "kill_group_after_scored" in args:
        kill_group(args)
        return
    os.replace = replace  # type: ignore[assignment]
    run_job(args["job"], args["out"])


def kill_group(args: dict) -> None:
    scored = [0]

    def progress(ev: dict) -> None:
        if ev["phase"] == "scoring" and ev["event"] == "advance":
            scored[0] += 1
            if scored[0] == args["kill_group_after_scored"]:
                os.killpg(0, signal.SIGKILL)

    run_job(
        args["job"], args["out"], executor="process", workers=args["workers"], progress=progress
    )


if __name__ == "__main__":
    main()
