"""CPU seconds of this tree's code against a git revision's, in alternating processes.

Run on demand (not part of the test suite)::

    .venv/bin/python bench/ab_cpu.py features --base HEAD~1 --stride 60
    .venv/bin/python bench/ab_cpu.py read --base main --sources 96
    .venv/bin/python bench/ab_cpu.py e2e --base main --sources 384 --rounds 2

The revision's ``src/`` is exported (``git archive``) to a temporary folder; each round
runs the measurement once in a fresh process on the revision's code and once on this
tree's (``PYTHONPATH``), taking turns, so a busy machine slows both alike.  A round
reports the best CPU time (``time.thread_time`` of the thread that does the work, or
``time.process_time`` for ``e2e``) of ``--repeat`` passes; the best over rounds counts.

* ``features``: ``FeatureEngine.score_segments`` of ``bench_metrics.py``'s 10 metrics over
  the 12 quickstart sources (windows of 120 ticks at ``--stride``);
* ``read``: ``TimeseriesAdapter.read_table`` of the first ``--sources`` files of the
  ``bench_e2e.py`` corpus;
* ``e2e``: ``kur run`` (``run_job``, workers=1) of ``bench_e2e.py``'s job over the corpus.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, shutil, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, {bench!r})
what, arg, repeat, corpus = {what!r}, {arg!r}, {repeat!r}, {corpus!r}
best = float("inf")
if what == "features":
    from bench_metrics import DEFINE, JOB
    from kuration import SchemaSpec, Segmenter
    from kuration.extend import FeatureEngine
    from kuration.metrics.alloc import retain_freed_memory
    from kuration.pipeline.spec.job import load_job
    from kuration.sources import adapter_from_dict
    from kuration.sources.samples import build_adsb_sources
    job, _ = load_job(JOB)
    schema = SchemaSpec.from_dict(job["schema"])
    adapter = adapter_from_dict(job["adapter"], schema)
    with tempfile.TemporaryDirectory() as tmp:
        tables = [adapter.read_table(str(p)) for p in build_adsb_sources(tmp, slice_minutes=15)]
    seg = Segmenter(120, arg)
    segs = [seg.segments(t.source_id, t.present) for t in tables]
    engine = FeatureEngine(DEFINE, schema)
    retain_freed_memory()
    for _ in range(repeat + 1):  # the first pass warms up
        c0 = time.thread_time()
        for t, s in zip(tables, segs):
            engine.score_segments(t, s)
        best = min(best, time.thread_time() - c0) if _ else best
    n = len(tables)
else:
    from corpus import build_corpus
    files = build_corpus(Path(corpus), arg)
    n = len(files)
    if what == "read":
        from bench_e2e import JOB
        from kuration import SchemaSpec
        from kuration.pipeline.spec.job import load_job
        from kuration.sources import adapter_from_dict
        job, _ = load_job(JOB)
        schema = SchemaSpec.from_dict(job["schema"])
        adapter = adapter_from_dict(job["adapter"], schema)
        for _ in range(repeat + 1):
            c0 = time.thread_time()
            for f in files:
                adapter.read_table(str(f))
            best = min(best, time.thread_time() - c0) if _ else best
    else:
        from bench_e2e import job_for
        from kuration import run_job
        raw = job_for(files)
        with tempfile.TemporaryDirectory() as tmp:
            for _ in range(repeat):
                out = Path(tmp) / "out"
                shutil.rmtree(out, ignore_errors=True)
                c0 = time.process_time()
                run_job(raw, out, workers=1)
                best = min(best, time.process_time() - c0)
print(json.dumps({{"cpu_s": best, "n": n}}))
"""


def export(rev: str, dest: Path) -> Path:
    """``rev``'s ``src/`` under ``dest``."""
    tar = dest / "src.tar"
    with tar.open("wb") as fh:
        subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src"], stdout=fh, check=True)
    with tarfile.open(tar) as tf:
        tf.extractall(dest, filter="data")
    return dest / "src"


def measure(src: Path, args: argparse.Namespace, corpus: Path) -> float:
    arg = args.stride if args.what == "features" else args.sources
    code = CHILD.format(
        bench=str(ROOT / "bench"), what=args.what, arg=arg, repeat=args.repeat, corpus=str(corpus)
    )
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    return float(got["cpu_s"]) / int(got["n"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=("features", "read", "e2e"))
    ap.add_argument("--base", default="HEAD", help="the git revision to compare against")
    ap.add_argument("--stride", type=int, default=60)
    ap.add_argument("--sources", type=int, default=96)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kuration-ab-") as tmp:
        base = export(args.base, Path(tmp))
        corpus = Path(tmp) / "corpus"
        best = {"base": float("inf"), "this": float("inf")}
        for _ in range(args.rounds):
            for name, src in (("base", base), ("this", ROOT / "src")):
                best[name] = min(best[name], measure(src, args, corpus))
    what = {"features": f"features, stride {args.stride}", "read": "read_table", "e2e": "kur run"}
    print(
        f"{what[args.what]}: CPU ms per source, best of {args.rounds} alternating rounds "
        f"x {args.repeat}; load average {os.getloadavg()[0]:.2f}"
    )
    print(f"  {args.base:<12s} {1e3 * best['base']:8.3f}")
    print(f"  {'this tree':<12s} {1e3 * best['this']:8.3f}   ({best['this'] / best['base']:.3f}x)")


if __name__ == "__main__":
    main()
