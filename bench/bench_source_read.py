"""Benchmark the one-pass source read: read once, hash the buffer, parse that buffer.

Run on demand (not part of the test suite)::

    .venv/bin/python bench/bench_source_read.py             # 9 rounds
    .venv/bin/python bench/bench_source_read.py --rounds 3  # a quicker check

Inputs, real data: the twelve 15-minute quickstart sources (the ADS-B sample of the
pinned ``traffic==2.13`` wheel, built by :func:`kuration.sources.samples.build_adsb_sources`)
as Parquet, and the same tables written as CSV by ``pyarrow.csv.write_csv``.

Two ways to get a source's columns and its SHA-256, timed in alternating rounds in
one process (best round of each is printed, and their ratio):

* ``two reads`` (the baseline, what the score pass did before): Arrow parses the
  file from its path, then :func:`kuration.core.jsonio.sha256_file` reads it again;
* ``one read``: ``TimeseriesAdapter._read_arrow`` -- the bytes read once into
  memory, hashed, and parsed from that buffer (:mod:`kuration.sources.identity`).

Target: ``one read / two reads <= 1.0``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JOB = ROOT / "examples" / "adsb_quickstart" / "job.json"


def _inputs(work: Path) -> dict[str, list[Path]]:
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    from kuration.sources.samples import build_adsb_sources

    parquet = build_adsb_sources(work / "src", slice_minutes=15)
    csv = []
    for p in parquet:
        dst = p.with_suffix(".csv")
        pacsv.write_csv(pq.read_table(p), dst)
        csv.append(dst)
    return {"parquet": parquet, "csv": csv}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()

    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    from kuration.contracts.schema import SchemaSpec
    from kuration.core.jsonio import sha256_file
    from kuration.pipeline.spec.job import load_job
    from kuration.sources.base import adapter_from_dict

    job, _ = load_job(JOB)
    schema = job["schema"]
    if not isinstance(schema, SchemaSpec):
        schema = SchemaSpec.from_dict(schema)
    ad = adapter_from_dict(job["adapter"], schema)
    cols = ad._needed_columns()
    ids = pacsv.ConvertOptions(column_types={"icao24": pa.string()})

    def two_reads(f: Path, fmt: str) -> None:
        if fmt == "csv":
            pacsv.read_csv(f, convert_options=ids).select(cols)
        else:
            pq.ParquetFile(f, read_dictionary=["icao24"]).read(columns=cols, use_threads=False)
        sha256_file(f)

    def one_read(f: Path, fmt: str) -> None:
        ad._read_arrow(str(f))

    with tempfile.TemporaryDirectory(prefix="bench-source-read-") as tmp:
        inputs = _inputs(Path(tmp))
        for fmt, files in inputs.items():
            size = sum(f.stat().st_size for f in files) / 2**20
            best = {"two reads": float("inf"), "one read": float("inf")}
            for _ in range(args.rounds):
                for name, fn in (("two reads", two_reads), ("one read", one_read)):
                    t0 = time.perf_counter()
                    for f in files:
                        fn(f, fmt)
                    best[name] = min(best[name], time.perf_counter() - t0)
            ratio = best["one read"] / best["two reads"]
            print(
                f"{fmt:8s} {len(files)} files {size:6.1f} MiB: two reads {best['two reads']:.3f} s, "
                f"one read {best['one read']:.3f} s, ratio {ratio:.2f}"
            )


if __name__ == "__main__":
    main()
