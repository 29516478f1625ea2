"""The replicated ADS-B corpus the scale benchmarks run on (bench_e2e, bench_exec, bench_pool, bench_packed).

Run on demand (not part of the test suite)::

    .venv/bin/python bench/corpus.py --check 96     # bytes equal to the per-file builder's
    .venv/bin/python bench/corpus.py --time 1536    # this builder against the per-file one

Definition: the 12 ADS-B quickstart sources (``build_adsb_sources``, 15 min
slices) replicated to ``n_sources`` files.  File ``i`` is replica
``r = i // 12`` of base source ``i % 12``: the same Parquet rows with every
``icao24`` id suffixed ``-r<r>`` (so each replica holds distinct entities),
written with ``pq.write_table``'s defaults as ``r<rrr>-<base name>``; the
rows, times and values are unchanged.

:func:`build_corpus` reads the 12 base files once and, per replica, swaps the
``icao24`` column of the in-memory table (one ``binary_join_element_wise`` over
the column's distinct ids, then a ``take``), so a file costs one Parquet
write.  :func:`build_corpus_per_file` is the earlier builder (read the base
file again for every replica, join over every row); ``--check`` asserts that
both write the same bytes, ``--time`` prints both build times.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import shutil
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

__all__ = ["build_corpus", "build_corpus_per_file", "existing_corpus", "replica_ids"]


def _base(out: Path) -> list[Path]:
    from kuration.sources.samples import build_adsb_sources

    return build_adsb_sources(out / "base", slice_minutes=15)


def _name(out: Path, r: int, base: Path) -> Path:
    return out / f"r{r:03d}-{base.name}"


def replica_ids(ids: pa.ChunkedArray, r: int) -> pa.ChunkedArray:
    """``ids`` with every value suffixed ``-r<r>``, computed over the distinct values only."""
    enc = ids.dictionary_encode().combine_chunks()
    suffixed = pc.binary_join_element_wise(enc.dictionary, pa.scalar(f"r{r}"), "-")
    return pa.chunked_array([suffixed.take(enc.indices)])


def build_corpus(out: Path, n_sources: int, base: list[Path] | None = None) -> list[Path]:
    """The quickstart sources replicated to ``n_sources`` files with distinct entity ids.

    Returns the file paths in replica order (replica 0's 12 files first).  A
    corpus of at least ``n_sources`` files already built in ``out`` (its
    ``corpus.json`` lists every file and its size, written after the last file)
    is reused.  ``base``: the 12 cut quickstart files, when already at hand.
    """
    stamp = out / "corpus.json"
    if stamp.is_file():
        have = json.loads(stamp.read_text())
        paths = [out / name for name in have][:n_sources]
        if len(paths) == n_sources and all(
            p.is_file() and p.stat().st_size == have[p.name] for p in paths
        ):
            return paths
    stamp.unlink(missing_ok=True)
    base = _base(out) if base is None else base
    tables = [pq.read_table(p) for p in base]
    col = [t.schema.get_field_index("icao24") for t in tables]
    out.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    for i in range(n_sources):
        r, src = divmod(i, len(base))
        t = tables[src]
        t = t.set_column(col[src], "icao24", replica_ids(t.column("icao24"), r))
        path = _name(out, r, base[src])
        pq.write_table(t, path)
        files.append(path)
    stamp.write_text(json.dumps({p.name: p.stat().st_size for p in files}))
    return files


def existing_corpus(out: Path, n_sources: int) -> list[Path]:
    """The first ``n_sources`` files of a corpus :func:`build_corpus` already built in ``out``,
    read only (a corpus shared with other benchmarks is never rebuilt or written).

    Raises
    ------
    SystemExit
        ``out`` holds no complete corpus of at least ``n_sources`` files.
    """
    stamp = out / "corpus.json"
    if not stamp.is_file():
        raise SystemExit(f"{out}: no corpus.json (build one with build_corpus)")
    have = json.loads(stamp.read_text())
    paths = [out / name for name in have][:n_sources]
    if len(paths) < n_sources or not all(
        p.is_file() and p.stat().st_size == have[p.name] for p in paths
    ):
        raise SystemExit(f"{out}: fewer than {n_sources} complete corpus files")
    return paths


def build_corpus_per_file(out: Path, n_sources: int, base: list[Path] | None = None) -> list[Path]:
    """The earlier builder (the reference for the bytes): one base read and a row-wise join per file."""
    base = _base(out) if base is None else base
    out.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    for i in range(n_sources):
        r, src = divmod(i, len(base))
        t = pq.read_table(base[src])
        ids = pc.binary_join_element_wise(t.column("icao24"), pa.scalar(f"r{r}"), "-")
        t = t.set_column(t.schema.get_field_index("icao24"), "icao24", ids)
        path = _name(out, r, base[src])
        pq.write_table(t, path)
        files.append(path)
    return files


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", type=int, metavar="N", help="compare both builders' bytes")
    ap.add_argument("--time", type=int, metavar="N", help="time both builders")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="kuration-bench-corpus-"))
    try:
        n = args.check or args.time or 96
        got = {}
        for name, fn in (("replicated", build_corpus), ("per-file", build_corpus_per_file)):
            base = _base(tmp / name)  # the base sample is cut outside the timing
            t0, c0 = time.perf_counter(), time.process_time()
            got[name] = fn(tmp / name, n, base)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            print(f"{name:10s} {n} files: {wall:6.1f} s wall, {cpu:6.1f} s CPU")
        a, b = got["replicated"], got["per-file"]
        same = [p.name for p, q in zip(a, b, strict=True) if filecmp.cmp(p, q, shallow=False)]
        print(f"byte-identical files: {len(same)} of {n}")
        if args.check and len(same) != n:
            raise SystemExit("the builders disagree")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
