"""Run ``kur run ... --out s3://...`` and SIGKILL it at a chosen point of its remote write.

Usage: python _remote_fault_child.py POINT ARGV...

``POINT`` is ``upload:N`` (right after the N-th shard attempt object is uploaded)
or ``move:N`` (right after the N-th batch of two attempt objects is moved into place,
i.e. with ``dataset.commit.json`` in ``state="writing"``).  Every remote object goes through
:class:`kuration.output.destination.RemoteDestination`, so hooking its ``write_many`` and
``move_many`` finds the points without knowing the steps.
"""

from __future__ import annotations

import os
import signal
import sys

from kuration.cli.main import main
from kuration.output.destination import RemoteDestination
from kuration.pipeline.destination import remote as remote_run


def _arm(point: str) -> None:
    kind, _, n = point.partition(":")
    seen = {"upload": 0, "move": 0}
    write_many, move_many = RemoteDestination.write_many, RemoteDestination.move_many
    remote_run.MOVE_BATCH = 2  # several batches even for a small run

    def count(what: str) -> None:
        seen[what] += 1
        if kind == what and seen[what] == int(n):
            os.kill(os.getpid(), signal.SIGKILL)

    def hooked_write_many(self: RemoteDestination, items: dict[str, bytes]) -> None:
        for rel, data in items.items():  # one at a time, so a kill can fall between two
            write_many(self, {rel: data})
            if rel.startswith(".kuration_staging/") and not rel.endswith(".entry.json"):
                count("upload")

    def hooked_move(self: RemoteDestination, pairs: list[tuple[str, str]]) -> None:
        move_many(self, pairs)
        count("move")

    RemoteDestination.write_many = hooked_write_many  # type: ignore[method-assign]
    RemoteDestination.move_many = hooked_move  # type: ignore[method-assign]


if __name__ == "__main__":
    _arm(sys.argv[1])
    sys.exit(main(sys.argv[2:]))
