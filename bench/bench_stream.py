"""Benchmark ``streaming=True``: peak RSS over a source 10x longer, against the 1x source.

Run on demand (not part of the test suite)::

    .venv/bin/python bench/bench_stream.py                 # 1x and 10x, streamed and in memory
    .venv/bin/python bench/bench_stream.py --copies 3      # a quicker check
    .venv/bin/python bench/bench_stream.py --no-in-memory  # streamed runs only
    .venv/bin/python bench/bench_stream.py --record        # the ratios into bench/results.json

Inputs, all real data (the quickstart recording: the ADS-B sample of the pinned
``traffic==2.13`` wheel, 3 h of aircraft around Paris, fetched and checked by
``kur sample build-sources``):

* ``1x``: the whole recording as one time-ordered Parquet file -- the twelve
  15-minute quickstart sources concatenated and stably sorted by timestamp
  (each aircraft keeps its row order);
* ``Nx`` (``--copies``, default 10): the same recording concatenated in time N
  times: copy ``i`` has every timestamp shifted by ``i * D``, where ``D`` is the
  recording's duration plus one second, so times strictly increase from copy to
  copy and the entity ids (``icao24``) are the same in every copy.

Both files are written with ``row_group_size=65536``.  Each run is the
quickstart job (container ``parquet``: npz refuses streaming; 2 h of train, no
test split: one source is one split) in a fresh subprocess, so that its peak
resident set (``getrusage`` ``ru_maxrss``) is its own.  Printed per run: wall
seconds, measured peak RSS, the :func:`kuration.pipeline.spec.budget.estimate_peak` estimate made
before reading, the peak when the first (streamed) pass ended, the number of
fill candidates (spans of every track: the pool the fill ranks between the
passes), and the ratios Nx / 1x (target for streaming: <= 1.2x).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JOB = ROOT / "examples" / "adsb_quickstart" / "job.json"


def build_inputs(work: Path, copies: int) -> tuple[Path, Path]:
    """The 1x recording and its ``copies``-fold concatenation in time (see the docstring).

    Run in a subprocess of its own: Linux carries a process's peak RSS across
    ``exec``, so the parent that spawns the measured runs must stay small.
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from kuration.sources.samples import build_adsb_sources

    slices = build_adsb_sources(work / "slices", slice_minutes=15)
    rec = pa.concat_tables([pq.read_table(p) for p in slices])
    rec = rec.take(pc.sort_indices(rec, [("timestamp", "ascending")]))
    ts = rec.column("timestamp")
    duration = pc.max(ts).as_py() - pc.min(ts).as_py() + 1000  # ms
    one = work / "recording_1x.parquet"
    pq.write_table(rec, one, row_group_size=65536)
    many = work / f"recording_{copies}x.parquet"
    i = rec.schema.get_field_index("timestamp")
    with pq.ParquetWriter(many, rec.schema) as w:
        for c in range(copies):
            shifted = pc.add(ts, pa.scalar(c * duration, ts.type))
            w.write_table(rec.set_column(i, rec.schema.field(i), shifted), row_group_size=65536)
    return one, many


def child(source: str, out: str, streaming: bool) -> None:
    """One run, in this (fresh) process: prints a JSON line with its measurements."""
    import warnings

    from kuration import Pipeline
    from kuration.pipeline.spec.budget import estimate_peak, peak_rss_bytes
    from kuration.pipeline.spec.job import load_job

    job, _ = load_job(JOB)
    job["sources"] = [source]
    job["output"]["container"] = "parquet"
    job["budget"] = {"train_hours": 2.0, "test_hours": 0.0}
    p = Pipeline.from_job(job).options(streaming=streaming)
    est = estimate_peak(p, [source])
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # budget granularity of a one-source run
        res = p.write(out, force=True)
    wall = time.perf_counter() - t0
    shards = len(res.manifest["shards"])
    tel = {t.stage: t for t in res.telemetry}
    print(
        json.dumps(
            {
                "peak_rss": peak_rss_bytes(),
                "first_pass_peak": tel["read+segment+features"].peak_rss_bytes,
                "candidates": tel["candidates"].rows_out,
                "wall_s": wall,
                "estimate": est.streaming if streaming else est.in_memory,
                "shards": shards,
            }
        )
    )


def run(source: Path, out: Path, streaming: bool) -> dict:
    cmd = [sys.executable, __file__, "--child", str(source), str(out)]
    if streaming:
        cmd.append("--streaming")
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"run failed ({' '.join(cmd)}):\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--copies", type=int, default=10)
    ap.add_argument("--no-in-memory", action="store_true")
    ap.add_argument("--child", nargs=2, metavar=("SOURCE", "OUT"))
    ap.add_argument("--build", metavar="DIR")
    ap.add_argument("--streaming", action="store_true")
    ap.add_argument("--record", action="store_true", help="store the ratios (row 'stream')")
    args = ap.parse_args()
    if args.child:
        child(args.child[0], args.child[1], args.streaming)
        return
    if args.build:
        import pyarrow.parquet as pq

        for p in build_inputs(Path(args.build), args.copies):
            md = pq.ParquetFile(p).metadata
            print(
                f"{p.name}: {md.num_rows:,} rows, {md.num_row_groups} row groups, "
                f"{p.stat().st_size / 1e6:.1f} MB on disk"
            )
        return
    with tempfile.TemporaryDirectory(prefix="bench-stream-") as tmp:
        work = Path(tmp)
        cmd = [sys.executable, __file__, "--build", str(work), "--copies", str(args.copies)]
        print(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout, end="")
        one = work / "recording_1x.parquet"
        many = work / f"recording_{args.copies}x.parquet"
        modes = [True] if args.no_in_memory else [True, False]
        ratios: dict[str, float] = {}
        for streaming in modes:
            name = "streaming" if streaming else "in memory"
            r1 = run(one, work / "o1", streaming)
            rn = run(many, work / "on", streaming)
            for label, r in (("1x", r1), (f"{args.copies}x", rn)):
                first = r["first_pass_peak"]
                print(
                    f"{name:10s} {label:4s} wall {r['wall_s']:7.1f} s  peak RSS "
                    f"{r['peak_rss'] / 1e6:8.1f} MB  (estimated {r['estimate'] / 1e6:8.1f} MB; "
                    f"after the first pass {first / 1e6 if first else float('nan'):8.1f} MB)  "
                    f"{r['candidates']:,} fill candidates, {r['shards']} shards"
                )
            ratio = rn["peak_rss"] / r1["peak_rss"]
            ratios[name] = ratio
            print(f"{name:10s} peak RSS {args.copies}x / 1x = {ratio:.2f}")
            if streaming:
                first = rn["first_pass_peak"] / r1["first_pass_peak"]
                ratios["first pass"] = first
                print(f"{name:10s} first-pass peak RSS {args.copies}x / 1x = {first:.2f}")
        if args.record:
            record(ratios, args.copies, int(rn["candidates"]), int(r1["candidates"]))


def record(ratios: dict[str, float], copies: int, cands: int, cands_1x: int) -> None:
    """Row ``stream`` of bench/results.json: the streamed, first-pass and in-memory ratios."""
    import numpy  # noqa: F401  (imported so that the machine line names its version)
    import perf_table
    import pyarrow  # noqa: F401

    measured = f"{ratios['streaming']:.2f}x ({ratios['first pass']:.2f}x)"
    if "in memory" in ratios:
        measured += f"; {ratios['in memory']:.2f}x"
    perf_table.record(
        [
            {
                "id": "stream",
                "benchmark": (
                    f"`bench_stream.py` (3 h recording vs {copies} copies in time; "
                    f"{cands_1x:,} vs {cands:,} fill candidates): peak RSS {copies}x / 1x, "
                    "streamed (first pass); in memory"
                ),
                "measured": measured,
                "goal": "<= 1.2x (issue 13)",
            }
        ]
    )


if __name__ == "__main__":
    main()
