"""``bench/corpus.py``: the fast replicated-corpus builder writes the same bytes as the
per-file builder it replaced (so figures measured on either stay comparable), and a
complete corpus is reused rather than rebuilt."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]


def _load_corpus():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("corpus", ROOT / "bench" / "corpus.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("corpus", mod)
    spec.loader.exec_module(mod)
    return mod


corpus = _load_corpus()


def test_replicas_are_byte_identical_to_the_per_file_builder(
    tmp_path: Path, adsb_sources: list[Path]
) -> None:
    n = 14  # replica 0's 12 files and two of replica 1
    fast = corpus.build_corpus(tmp_path / "fast", n, adsb_sources)
    slow = corpus.build_corpus_per_file(tmp_path / "slow", n, adsb_sources)
    assert [p.name for p in fast] == [p.name for p in slow]
    assert [p.read_bytes() for p in fast] == [p.read_bytes() for p in slow]
    base = pq.read_table(adsb_sources[0])
    assert fast[12].name == f"r001-{adsb_sources[0].name}"
    rep = pq.read_table(fast[12])
    assert rep.drop_columns("icao24").equals(base.drop_columns("icao24"))
    want = pc.binary_join_element_wise(base.column("icao24"), "r1", "-")
    assert rep.column("icao24").equals(want)


def test_a_complete_corpus_is_reused_and_a_damaged_one_rebuilt(
    tmp_path: Path, adsb_sources: list[Path]
) -> None:
    files = corpus.build_corpus(tmp_path, 13, adsb_sources)
    mtimes = [p.stat().st_mtime_ns for p in files]
    assert corpus.build_corpus(tmp_path, 12, adsb_sources) == files[:12]  # a built prefix
    assert [p.stat().st_mtime_ns for p in files] == mtimes
    files[3].write_bytes(b"truncated")
    again = corpus.build_corpus(tmp_path, 13, adsb_sources)
    assert again == files and again[3].stat().st_size > len(b"truncated")
    assert pq.read_table(again[3]).num_rows > 0
