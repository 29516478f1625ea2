"""Run an hours job on the disk pool and SIGKILL this process right after its K-th partition commit.

Usage: python _hours_pool_child.py ARGS.json

ARGS.json: ``{"job": job dict, "out": destination, "kill_after": K}``.  Every partition
commit is published with ``os.replace`` of a ``*.commit.json`` file; the hook counts
those and kills the process after the K-th, so the score stage is interrupted with K
partitions committed, no stage commit and nothing published.
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

    os.replace = replace  # type: ignore[assignment]
    run_job(args["job"], args["out"])


if __name__ == "__main__":
    main()
