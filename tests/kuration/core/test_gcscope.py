"""fewer_full_collections: the oldest generation waits inside the scope, and the
thresholds found on entry come back, also after a failure (and after a failed run)."""

from __future__ import annotations

import gc
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kuration import run_job
from kuration.core.gcscope import OLDEST_THRESHOLD, fewer_full_collections
from kuration.errors import KurationError
from kuration.sources.samples import build_adsb_sources

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def thresholds() -> Iterator[tuple[int, ...]]:
    old = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    try:
        yield gc.get_threshold()
    finally:
        gc.set_threshold(*old)


def test_raised_inside_restored_after(thresholds: tuple[int, ...]) -> None:
    with fewer_full_collections():
        assert gc.get_threshold() == (700, 10, OLDEST_THRESHOLD)
    assert gc.get_threshold() == thresholds


def test_restored_when_the_body_raises(thresholds: tuple[int, ...]) -> None:
    with pytest.raises(RuntimeError), fewer_full_collections():
        raise RuntimeError("boom")
    assert gc.get_threshold() == thresholds


def test_disabled_collector_and_higher_threshold_left_alone(thresholds: tuple[int, ...]) -> None:
    gc.disable()
    try:
        with fewer_full_collections():
            assert gc.get_threshold() == thresholds
    finally:
        gc.enable()
    gc.set_threshold(700, 10, 5000)
    with fewer_full_collections():
        assert gc.get_threshold() == (700, 10, 5000)
    assert gc.get_threshold() == (700, 10, 5000)


def test_a_run_inside_the_scope_and_restored(thresholds: tuple[int, ...], tmp_path: Path) -> None:
    """The quickstart run happens with the raised threshold (seen from its progress
    events); after it, and after a run that fails, the thresholds are the ones before."""
    seen: set[tuple[int, ...]] = set()

    def progress(*_: object, **__: object) -> None:
        seen.add(gc.get_threshold())

    run_job(ROOT / "examples" / "adsb_quickstart" / "job.json", tmp_path / "out", progress=progress)
    assert seen == {(700, 10, OLDEST_THRESHOLD)}
    assert gc.get_threshold() == thresholds
    src = build_adsb_sources(tmp_path / "src", slice_minutes=15)[0]
    rows = pq.read_table(src)
    at = rows.schema.get_field_index("timestamp")
    times = pa.array([None, *rows.column(at).to_pylist()[1:]], rows.schema.field(at).type)
    bad = tmp_path / "bad.parquet"  # a null time in its first row: the read fails
    pq.write_table(rows.set_column(at, rows.schema.field(at), times), bad)
    qs = ROOT / "examples" / "adsb_quickstart"
    job = json.loads((qs / "job.json").read_text())
    for name in (v for v in job.values() if isinstance(v, str) and v.endswith(".json")):
        shutil.copy(qs / name, tmp_path / name)
    job["sources"] = [str(bad)]
    (tmp_path / "job.json").write_text(json.dumps(job))
    seen.clear()
    with pytest.raises(KurationError):
        run_job(tmp_path / "job.json", tmp_path / "out2", progress=progress)
    assert seen == {(700, 10, OLDEST_THRESHOLD)}  # it failed inside the scope
    assert gc.get_threshold() == thresholds
