"""Run the disk pool's selection and SIGKILL this process right after its K-th partition commit.

Usage: python _pool_child.py ARGS.json

ARGS.json: ``{"job": job dict, "strategy": strategy dict, "n": int, "root": checkpoint dir,
"kill_after": K}``.  Every partition commit is published with ``os.replace`` of a
``*.commit.json`` file; the hook counts those and kills the process after the K-th, so
the stage is interrupted with K partitions committed and no stage commit.
"""

from __future__ import annotations

import json
import os
import signal
import sys

from kuration import Segmenter, load_strategy
from kuration.contracts.schema import SchemaSpec
from kuration.pipeline.disk.pool import select_on_disk
from kuration.sources import adapter_from_dict

_real_replace = os.replace


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as fh:
        args = json.load(fh)
    job = args["job"]
    schema = SchemaSpec.from_dict(job["schema"])
    adapter = adapter_from_dict(job["adapter"], schema)
    seg = Segmenter(**job["segmenter"], sample_hz=schema.sample_hz)
    st = load_strategy(args["strategy"], schema)
    count = [0]

    def replace(src, dst, *a, **k):  # type: ignore[no-untyped-def]
        _real_replace(src, dst, *a, **k)
        if str(dst).endswith(".commit.json") and not str(dst).endswith("_stage.commit.json"):
            count[0] += 1
            if count[0] == args["kill_after"]:
                os.kill(os.getpid(), signal.SIGKILL)

    os.replace = replace  # type: ignore[assignment]
    select_on_disk(schema, adapter, job["sources"], seg, st, args["n"], checkpoint_dir=args["root"])


if __name__ == "__main__":
    main()
