"""A two-node Ray cluster on this machine vs one local worker: the quickstart job over a
replicated corpus.

Run on demand, as root (it enters a network namespace holding only ``lo``, so the Ray
nodes it starts are reachable from nowhere else)::

    .venv/bin/python bench/bench_ray_nodes.py                 # 96 sources, 2 rounds
    .venv/bin/python bench/bench_ray_nodes.py --sources 384 --repeat 3

Corpus: ``corpus.build_corpus`` (the 12 ADS-B quickstart sources replicated with
distinct entity ids) and the job of ``bench_e2e.job_for``.  Contenders, taking turns in
each round (the best time of each counts):

* ``local x1`` -- ``executor="local"`` in this process;
* ``ray 2 nodes`` -- ``executor="ray"`` joined to two Ray nodes started here with
  ``ray start --block`` (one CPU each, tests/ray_nodes.py), started once before the
  rounds (their start is printed separately) and stopped by their pids at the end.

Printed: wall seconds, CPU seconds (``local x1``: this process; ``ray 2 nodes``: this
process plus the tasks' worker CPU as config.json records it per node), the tasks each
node ran, the ratios ``local x1 / ray 2 nodes`` of wall and CPU time, and the load
average right after each figure's run.  Both artifacts are compared by SHA-256 (shards
and manifest): a difference fails the run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/ray_nodes.py

from bench_e2e import job_for
from bench_exec import digest
from corpus import build_corpus


def _cpu_self() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    return me.ru_utime + me.ru_stime


def _run(raw: dict[str, Any], out: Path, address: str | None) -> dict[str, Any]:
    """One run into ``out``; config.json's execution record."""
    from kuration import Pipeline

    if address is None:
        p = Pipeline.from_job(raw).options(executor="local", workers=1)
    else:
        opts = {"address": address}
        p = Pipeline.from_job(raw).options(executor="ray", workers=2, executor_options=opts)
    p.write(out, force=True)
    return json.loads((out / "config.json").read_text())["provenance"]["execution"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sources", type=int, default=96)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()

    from tests.ray_netns import enter_loopback_namespace
    from tests.ray_nodes import start_two_nodes, stop_nodes

    enter_loopback_namespace()
    with tempfile.TemporaryDirectory(prefix="kur-bench-2n-") as tmp:
        tmpd = Path(tmp)
        t0 = time.perf_counter()
        address, env, procs = start_two_nodes(tmpd / "cluster")
        print(f"two Ray nodes (1 CPU each) started in {time.perf_counter() - t0:.1f} s")
        # the driver joins with the nodes' token (set before Ray is imported here)
        os.environ.update({k: env[k] for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN")})
        try:
            _rounds(args, tmpd, address)
        finally:
            stop_nodes(env, procs)


def _rounds(args: argparse.Namespace, tmpd: Path, address: str) -> None:
    files = build_corpus(tmpd / "corpus", args.sources)
    raw = job_for(files)
    names = {"local x1": None, "ray 2 nodes": address}
    best = dict.fromkeys(names, float("inf"))
    cpu = dict.fromkeys(names, 0.0)
    load: dict[str, tuple[float, float, float]] = {}
    nodes: dict[str, dict[str, Any]] = {}
    digests: dict[str, str] = {}
    for _ in range(args.repeat):
        for name, where in names.items():
            out = tmpd / "out"
            shutil.rmtree(out, ignore_errors=True)
            c0, t0 = _cpu_self(), time.perf_counter()
            execution = _run(raw, out, where)
            dt, c = time.perf_counter() - t0, _cpu_self() - c0
            digests.setdefault(name, digest(out))
            if digests[name] != digests["local x1"]:
                raise SystemExit(f"{name}: the artifact differs from local x1's")
            if dt < best[name]:
                per_node = execution.get("nodes", {})
                workers = sum(n["cpu_s"] for n in per_node.values())
                best[name], cpu[name], load[name] = dt, c + workers, os.getloadavg()
                nodes[name] = per_node
    print(
        f"{len(files)} sources; best of {args.repeat} interleaved rounds on "
        f"{os.cpu_count()} cores; artifacts byte-identical ({digests['local x1'][:16]})"
    )
    for name in names:
        la = "/".join(f"{x:.2f}" for x in load[name])
        print(f"  {name:<12s} {best[name]:8.2f} s  {cpu[name]:8.2f} CPU s  load {la}")
    for node, stats in sorted(nodes["ray 2 nodes"].items()):
        print(
            f"    node {node[:12]}: {stats['tasks']} tasks, {stats['cpu_s']:.2f} CPU s, "
            f"{stats['wall_s']:.2f} s"
        )
    print(f"local x1 / ray 2 nodes wall = {best['local x1'] / best['ray 2 nodes']:.2f}x")
    print(f"local x1 / ray 2 nodes CPU  = {cpu['local x1'] / cpu['ray 2 nodes']:.2f}x")


if __name__ == "__main__":
    main()
