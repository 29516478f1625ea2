"""Packed output (``layout="packed"``) against ``pyarrow.parquet.write_table`` of the same rows.

Run on demand (not part of the test suite)::

    .venv/bin/python bench/bench_packed.py                   # 384 sources, 2 rounds
    .venv/bin/python bench/bench_packed.py --sources 1536 --repeat 1
    .venv/bin/python bench/bench_packed.py --sources 48 --files   # also the per-file layout

Corpus: the 12 ADS-B quickstart sources (``build_adsb_sources``, 15 min
slices) replicated to ``--sources`` files with distinct entity ids, exactly as
``bench/corpus.py`` builds it (replica ``r`` suffixes every ``icao24``
with ``-r<r>``; rows, times and values unchanged).  The job is the quickstart
job (strategy without ``group_cap``) with budgets large enough to admit every
track (``train_hours=4e5, test_hours=1e5``: the corpus is written, not a
5-hour sample), its output spec switched to ``layout="packed"`` (128 MiB
target files).

Contenders, in each of ``--repeat`` rounds (best of each counts):

* packed: :func:`kuration.run_job`; the write is the run's ``stage`` step
  (its StageTelemetry in ``config.json``) less the time spent re-reading and
  cutting sources inside it (a timing wrapper around the source reads), so it
  is the cost of building the columns, hashing every shard and file and
  writing the row groups;
* ``write_table``: the same rows (every packed file read back and
  concatenated, so the same columns and row count) written with
  ``pq.write_table(table, path)`` (snappy, default row groups) to one file;
* the packed row groups alone: the same row groups read back and written
  again with ``pq.ParquetWriter`` (the layout's encoding cost without the
  columns being built from tracks or the shards hashed).

Both rates are MB/s over the same Arrow byte count (``table.nbytes``).  The
file count of the packed output is printed against its shard count.  Target
(issue 13): packed >= 0.8x write_table, files growing with bytes, not shards.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_e2e import job_for
from corpus import build_corpus

from kuration.output.packed import DICT_PAGE_BYTES


class _ReadTimer:
    """Sums the time spent in the packed stager's source reads (``_Tracks.__call__``)."""

    def __init__(self) -> None:
        from kuration.pipeline import hours_packed

        self.mod = hours_packed
        self.orig = hours_packed._Tracks.__call__
        self.seconds = 0.0

    def __enter__(self) -> _ReadTimer:
        orig = self.orig

        def timed(this: Any, e: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return orig(this, e)
            finally:
                self.seconds += time.perf_counter() - t0

        self.mod._Tracks.__call__ = timed  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        self.mod._Tracks.__call__ = self.orig  # type: ignore[method-assign]


def packed_job(files: list[Path], layout: str) -> dict[str, Any]:
    job = job_for(files)
    job["budget"] = {"train_hours": 4e5, "test_hours": 1e5}
    job.pop("span_seconds", None)
    out = json.loads(json.dumps(job["output"])) if isinstance(job["output"], dict) else None
    if out is None:
        from kuration.pipeline.job import load_job

        raw, _ = load_job(Path(__file__).resolve().parents[1] / "examples/adsb_quickstart/job.json")
        out = raw["output"]
    out["container"] = "parquet" if layout == "packed" else "npz"
    if layout == "packed":
        out["layout"] = "packed"
    job["output"] = out
    return job


def run_kur(job: dict[str, Any], out: Path) -> tuple[float, float, dict[str, Any]]:
    """(stage seconds, source-read seconds inside it, manifest) of one run."""
    import warnings

    from kuration import run_job

    with warnings.catch_warnings(), _ReadTimer() as timer:
        warnings.simplefilter("ignore")
        res = run_job(job, out, force=True)
    tel = res.config["provenance"]["execution"]["telemetry"]
    stage = sum(t["wall_s"] for t in tel if t["stage"] == "stage")
    return stage, timer.seconds, res.manifest


def same_rows(root: Path, manifest: dict[str, Any]) -> pa.Table:
    return pa.concat_tables([pq.read_table(root / f["path"]) for f in manifest["files"]])


def reencode(root: Path, manifest: dict[str, Any], out: Path) -> float:
    """Seconds to write the packed row groups again (read back beforehand, not timed) with
    ``pq.ParquetWriter``, one row group per ``write_table`` call: the layout's own encoding
    cost, without building columns or hashing."""
    groups = []
    for f in manifest["files"]:
        pf = pq.ParquetFile(root / f["path"])
        groups.append([pf.read_row_group(i) for i in range(pf.metadata.num_row_groups)])
    t0 = time.perf_counter()
    for i, tables in enumerate(groups):
        with pq.ParquetWriter(
            out / f"re-{i}.parquet",
            tables[0].schema,
            compression="snappy",
            dictionary_pagesize_limit=DICT_PAGE_BYTES,  # as the packed writer
        ) as w:
            for t in tables:
                w.write_table(t, row_group_size=t.num_rows)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sources", type=int, default=384)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--files", action="store_true", help="also time the per-file npz layout")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-packed-"))
    try:
        files = build_corpus(tmp / "corpus", args.sources)
        job = packed_job(files, "packed")
        best_write, best_table, best_stage = float("inf"), float("inf"), float("inf")
        best_enc = float("inf")
        man: dict[str, Any] = {}
        nbytes = rows = 0
        for _ in range(args.repeat):
            stage, reads, man = run_kur(job, tmp / "packed")
            best_stage = min(best_stage, stage)
            best_write = min(best_write, stage - reads)
            table = same_rows(tmp / "packed", man)
            nbytes, rows = table.nbytes, table.num_rows
            t0 = time.perf_counter()
            pq.write_table(table, tmp / "one.parquet")
            best_table = min(best_table, time.perf_counter() - t0)
            del table
            best_enc = min(best_enc, reencode(tmp / "packed", man, tmp))
        mb = nbytes / 1e6
        disk = sum(f["size"] for f in man["files"]) / 1e6
        print(
            f"corpus: {args.sources} sources, {rows:,} rows, {mb:.1f} MB Arrow, {disk:.1f} MB packed"
        )
        print(
            f"packed write (stage less source reads): {best_write:.2f} s, {mb / best_write:.1f} MB/s"
        )
        print(
            f"packed stage (with source reads):       {best_stage:.2f} s, {mb / best_stage:.1f} MB/s"
        )
        print(
            f"pq.write_table of the same rows:        {best_table:.2f} s, {mb / best_table:.1f} MB/s"
        )
        print(f"packed row groups re-encoded alone:     {best_enc:.2f} s, {mb / best_enc:.1f} MB/s")
        print(f"ratio packed / write_table: {best_table / best_write:.2f}x (target >= 0.8x)")
        print(f"ratio packed encoding alone / write_table: {best_table / best_enc:.2f}x")
        print(
            f"files: {len(man['files'])} packed files for {len(man['shards']):,} shards "
            f"({mb / max(len(man['files']), 1):.1f} MB Arrow per file)"
        )
        if args.files:
            stage, _, fman = run_kur(packed_job(files, "files"), tmp / "files")
            print(
                f"per-file npz layout: {len(fman['shards']):,} files, stage {stage:.2f} s, "
                f"{mb / stage:.1f} MB/s (source reads included)"
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
