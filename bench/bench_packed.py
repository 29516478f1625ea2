"""Packed output (``layout="packed"``) against ``pyarrow.parquet.write_table`` of the same rows.

Run on demand (not part of the test suite)::

    .venv/bin/python bench/bench_packed.py                   # 384 sources, 2 rounds
    .venv/bin/python bench/bench_packed.py --sources 1536 --repeat 1
    .venv/bin/python bench/bench_packed.py --sources 48 --files   # also the per-file layout
    .venv/bin/python bench/bench_packed.py --sources 1536 --repeat 1 --record  # README row

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
  (its StageTelemetry in ``config.json``) less the time spent re-reading
  sources inside it (a timing wrapper around the adapter's reads), so it is
  the cost of gathering the rows, building the columns, hashing every shard
  and file and writing the row groups;
* ``write_table``: the same rows (every packed file read back and
  concatenated, so the same columns and row count) written with
  ``pq.write_table(table, path)`` (snappy, default row groups) to one file;
* the packed row groups alone: the same row groups read back and written
  again with ``pq.ParquetWriter`` (the layout's encoding cost without the
  columns being built from tracks or the shards hashed).

Both rates are MB/s over the same Arrow byte count (``table.nbytes``).  CPU
seconds are printed beside the wall ratio (the machine is shared, so wall time
is noisy): the packed write's are its threads' ``thread_time`` (the stage's
main thread less its source reads, the digest thread, the Parquet writer
thread), ``write_table``'s the process CPU of its call.  The
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

from kuration.output.packed import parquet_options


class _ReadTimer:
    """Sums the time spent in the packed stager's source reads (``_Tracks._read``: the
    adapter's ``read_table``; cutting tracks or gathering rows counts as writing), and the
    CPU seconds of the write: the stage's main thread less its reads, plus the Parquet
    writer (``encode_row_group``: Arrow table and encoding) and digest threads (``thread_time`` in each; pyarrow's read threads are not
    counted)."""

    def __init__(self) -> None:
        from kuration.output import packed
        from kuration.pipeline.run import stage_packed as hours_packed
        from kuration.pipeline.run import steps as hours_steps

        self.mods = (hours_packed, hours_steps, packed)
        self.origs = (
            hours_packed._Tracks._read,
            hours_steps.stage_packed,
            packed.row_group_digests,
            packed.encode_row_group,
        )
        self.seconds = 0.0
        self.cpu = {"stage": 0.0, "read": 0.0, "digest": 0.0, "encode": 0.0}

    def _timed(self, fn: Any, key: str, wall: bool = False) -> Any:
        def run(*a: Any, **kw: Any) -> Any:
            t0, c0 = time.perf_counter(), time.thread_time()
            try:
                return fn(*a, **kw)
            finally:
                if wall:
                    self.seconds += time.perf_counter() - t0
                self.cpu[key] += time.thread_time() - c0

        return run

    def __enter__(self) -> _ReadTimer:
        hours_packed, hours_steps, packed = self.mods
        read, stage, digest, encode = self.origs
        hours_packed._Tracks._read = self._timed(read, "read", wall=True)
        hours_steps.stage_packed = self._timed(stage, "stage")
        packed.row_group_digests = self._timed(digest, "digest")
        packed.encode_row_group = self._timed(encode, "encode")
        return self

    def __exit__(self, *exc: object) -> None:
        hours_packed, hours_steps, packed = self.mods
        read, stage, digest, encode = self.origs
        hours_packed._Tracks._read = read
        hours_steps.stage_packed = stage
        packed.row_group_digests = digest
        packed.encode_row_group = encode

    @property
    def write_cpu(self) -> float:
        c = self.cpu
        return c["stage"] - c["read"] + c["digest"] + c["encode"]


def packed_job(files: list[Path], layout: str) -> dict[str, Any]:
    job = job_for(files)
    job["budget"] = {"train_hours": 4e5, "test_hours": 1e5}
    job.pop("span_seconds", None)
    out = json.loads(json.dumps(job["output"])) if isinstance(job["output"], dict) else None
    if out is None:
        from kuration.pipeline.spec.job import load_job

        raw, _ = load_job(Path(__file__).resolve().parents[1] / "examples/adsb_quickstart/job.json")
        out = raw["output"]
    out["container"] = "parquet" if layout == "packed" else "npz"
    if layout == "packed":
        out["layout"] = "packed"
    job["output"] = out
    return job


def run_kur(job: dict[str, Any], out: Path) -> tuple[float, float, float, dict[str, Any]]:
    """(stage seconds, source-read seconds inside it, CPU seconds of the write
    (:attr:`_ReadTimer.write_cpu`), manifest) of one run."""
    import warnings

    from kuration import run_job

    with warnings.catch_warnings(), _ReadTimer() as timer:
        warnings.simplefilter("ignore")
        res = run_job(job, out, force=True)
    tel = res.config["provenance"]["execution"]["telemetry"]
    stage = sum(t["wall_s"] for t in tel if t["stage"] == "stage")
    c = timer.cpu
    print(
        f"  write CPU s: main thread {c['stage'] - c['read']:.2f} (reads {c['read']:.2f} "
        f"excluded), digest thread {c['digest']:.2f}, Parquet writer thread {c['encode']:.2f}"
    )
    return stage, timer.seconds, timer.write_cpu, res.manifest


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
            **parquet_options(tables[0].schema),  # as the packed writer
        ) as w:
            for t in tables:
                w.write_table(t, row_group_size=t.num_rows)
    return time.perf_counter() - t0


def _row(
    sources: int, rows: int, mb: float, ratios: tuple[float, float, float], man: dict[str, Any]
) -> dict[str, str]:
    """The ``packed`` row of bench/results.json."""
    wall, cpu, enc = ratios
    return {
        "id": "packed",
        "benchmark": (
            f"`bench_packed.py` ({sources} sources, {rows / 1e6:.1f} M rows, {mb:.0f} MB Arrow): "
            "packed write / `pq.write_table` of the same rows, wall (CPU seconds); its row "
            f"groups re-encoded alone; files for {len(man['shards']):,} shards"
        ),
        "measured": f"{wall:.2f}x ({cpu:.2f}x); {enc:.2f}x; {len(man['files'])}",
        "goal": ">= 0.8x (issue 13); grows with bytes",
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sources", type=int, default=384)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--files", action="store_true", help="also time the per-file npz layout")
    ap.add_argument(
        "--record", action="store_true", help="store the figures in bench/results.json (row packed)"
    )
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-packed-"))
    try:
        files = build_corpus(tmp / "corpus", args.sources)
        job = packed_job(files, "packed")
        best_write, best_table, best_stage = float("inf"), float("inf"), float("inf")
        best_enc = cpu_write = cpu_table = float("inf")
        man: dict[str, Any] = {}
        nbytes = rows = 0
        for _ in range(args.repeat):
            stage, reads, cpu, man = run_kur(job, tmp / "packed")
            cpu_write = min(cpu_write, cpu)
            best_stage = min(best_stage, stage)
            best_write = min(best_write, stage - reads)
            table = same_rows(tmp / "packed", man)
            nbytes, rows = table.nbytes, table.num_rows
            t0, c0 = time.perf_counter(), time.process_time()
            pq.write_table(table, tmp / "one.parquet")
            best_table = min(best_table, time.perf_counter() - t0)
            cpu_table = min(cpu_table, time.process_time() - c0)
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
        print(
            f"CPU seconds: packed write {cpu_write:.2f} s (its threads, source reads excluded), "
            f"write_table {cpu_table:.2f} s, ratio {cpu_table / cpu_write:.2f}x"
        )
        print(f"ratio packed encoding alone / write_table: {best_table / best_enc:.2f}x")
        print(
            f"files: {len(man['files'])} packed files for {len(man['shards']):,} shards "
            f"({mb / max(len(man['files']), 1):.1f} MB Arrow per file)"
        )
        if args.record:
            from perf_table import record

            ratios = (best_table / best_write, cpu_table / cpu_write, best_table / best_enc)
            record([_row(args.sources, rows, mb, ratios, man)])
        if args.files:
            stage, _, _, fman = run_kur(packed_job(files, "files"), tmp / "files")
            print(
                f"per-file npz layout: {len(fman['shards']):,} files, stage {stage:.2f} s, "
                f"{mb / stage:.1f} MB/s (source reads included)"
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
