"""A source that changes during a run: every read decodes the bytes the run fingerprinted.

The change is made through the run's own progress callback, at the start of the
``writing`` phase (after the score pass, before the stage step rereads the
sources), so it lands between the two reads deterministically.  The run must end
with a :class:`SourceChangedError` naming the source and both digests, before
anything is published; a resumed run never adopts shards made from other bytes.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from kuration import run_job
from kuration.errors import BudgetGranularityWarning, SourceChangedError


def _run(job: dict[str, Any], out: Path, **kw: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetGranularityWarning)
        return run_job(job, out, **kw)


@pytest.fixture(scope="module")
def csv_job(adsb_job_dict: dict, adsb_sources: list[Path], tmp_path_factory: Any) -> dict:
    """The example job over four sources rewritten as CSV files."""
    folder = tmp_path_factory.mktemp("csv-sources")
    paths = []
    for p in adsb_sources[:4]:
        dst = folder / (p.stem + ".csv")
        pacsv.write_csv(pq.read_table(p), dst)
        paths.append(dst)
    job = json.loads(json.dumps(adsb_job_dict))
    job["sources"] = [str(p) for p in paths]
    job["budget"] = {"train_hours": 0.5, "test_hours": 0.1}
    return job


@pytest.fixture
def sources(csv_job: dict, tmp_path: Path) -> tuple[dict, list[Path]]:
    """A private copy of the CSV sources and the job reading them (the tests edit them)."""
    folder = tmp_path / "src"
    folder.mkdir()
    paths = [Path(shutil.copy(p, folder)) for p in csv_job["sources"]]
    job = {**csv_job, "sources": [str(p) for p in paths]}
    return job, paths


def _admitted(root: Path, paths: list[Path]) -> Path:
    """The first source (sorted) with a shard in the dataset at ``root``."""
    manifest = json.loads((root / "dataset_manifest.json").read_text())
    ids = {s["source_id"] for s in manifest["shards"]}
    return next(p for p in sorted(paths) if p.stem in ids)


def _one_value_changed(path: Path) -> None:
    """Rewrite ``path`` with the same rows and one altitude value raised by 100 ft."""
    t = pacsv.read_csv(
        path, convert_options=pacsv.ConvertOptions(column_types={"icao24": "string"})
    )
    alt = t.column("altitude").to_pylist()
    row = next(i for i, v in enumerate(alt) if v is not None)
    alt[row] += 100.0
    import pyarrow as pa

    t = t.set_column(t.column_names.index("altitude"), "altitude", pa.array(alt, pa.float64()))
    pacsv.write_csv(t, path)


def _truncated(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _at_writing(change: Callable[[], None]) -> Callable[[dict], None]:
    """A progress callback that makes ``change`` once, when the writing phase starts."""
    done = []

    def cb(event: dict) -> None:
        if event["phase"] == "writing" and event["event"] == "start" and not done:
            done.append(1)
            change()

    return cb


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


RUNS = {
    "local": {},
    "process": {"workers": 2, "executor": "process"},
    "disk": {"pool": "disk"},
}


@pytest.mark.parametrize("how", sorted(RUNS))
@pytest.mark.parametrize("change", [_one_value_changed, _truncated], ids=["value", "truncate"])
def test_a_source_changed_before_the_stage_fails_and_publishes_nothing(
    sources: tuple[dict, list[Path]],
    tmp_path: Path,
    all_bytes: Callable[[Path], dict[str, bytes]],
    how: str,
    change: Callable[[Path], None],
) -> None:
    job, paths = sources
    out = tmp_path / "out"
    _run(job, out)
    before = all_bytes(out)
    victim = _admitted(out, paths)
    old_sha = _sha(victim)
    kw = dict(RUNS[how])
    if how == "disk":
        kw["checkpoint_dir"] = str(tmp_path / "ck")
    with pytest.raises(SourceChangedError) as info:
        _run(job, out, force=True, progress=_at_writing(lambda: change(victim)), **kw)
    err = info.value
    assert err.source_id == victim.stem
    assert (err.expected, err.actual) == (old_sha, _sha(victim))
    assert old_sha in str(err) and _sha(victim) in str(err) and victim.stem in str(err)
    assert all_bytes(out) == before  # the previous dataset, byte for byte


def test_resume_after_the_original_is_restored_rebuilds_what_other_bytes_made(
    sources: tuple[dict, list[Path]],
    tmp_path: Path,
    digests: Callable[..., dict[str, str]],
) -> None:
    job, paths = sources
    fresh = _run(job, tmp_path / "fresh")
    victim = _admitted(fresh.path, paths)
    original = victim.read_bytes()
    # a run interrupted by the change, then restored and resumed: same bytes as fresh
    out = tmp_path / "out"
    with pytest.raises(SourceChangedError):
        _run(job, out, progress=_at_writing(lambda: _one_value_changed(victim)))
    victim.write_bytes(original)
    resumed = _run(job, out, resume=True)
    assert digests(resumed.path) == digests(fresh.path)
    # a dataset committed from the changed bytes: nothing of it is reused once restored
    _one_value_changed(victim)
    other = _run(job, tmp_path / "other")
    assert digests(other.path) != digests(fresh.path)
    victim.write_bytes(original)
    again = _run(job, other.path, resume=True)
    assert again.config["results"]["resume"]["reused_shards"] == 0
    assert digests(again.path) == digests(fresh.path)


def test_the_score_pass_records_the_digest_of_the_bytes_it_decoded(
    sources: tuple[dict, list[Path]], tmp_path: Path
) -> None:
    job, paths = sources
    res = _run(job, tmp_path / "out")
    recorded = {s["source_id"]: s["sha256"] for s in res.config["pipeline"]["sources"]}
    assert recorded == {p.stem: _sha(p) for p in paths}
    info = res.scoring.sources[paths[0].stem]
    assert info.digest == info.fingerprint == _sha(paths[0])


def test_a_report_does_not_show_a_source_changed_since_the_run(
    sources: tuple[dict, list[Path]], tmp_path: Path
) -> None:
    from kuration.contracts.schema import SchemaSpec
    from kuration.tools.report_data import SourceReader

    job, paths = sources
    res = _run(job, tmp_path / "out")
    schema = SchemaSpec.from_dict(res.config["schema"])
    sid = paths[0].stem
    assert SourceReader(res.config, schema).table(sid) is not None
    old = _sha(paths[0])
    _one_value_changed(paths[0])
    reader = SourceReader(res.config, schema)
    assert reader.table(sid) is None
    assert reader.error is not None and old in reader.error and _sha(paths[0]) in reader.error


def _parquet_value_changed(path: Path) -> None:
    """Rewrite a Parquet source with one altitude value raised by 100 ft."""
    import pyarrow as pa

    t = pq.read_table(path)
    alt = t.column("altitude").to_pylist()
    row = next(i for i, v in enumerate(alt) if v is not None)
    alt[row] += 100.0
    col = pa.array(alt, t.schema.field("altitude").type)
    pq.write_table(t.set_column(t.column_names.index("altitude"), "altitude", col), path)


def test_a_streamed_run_checks_the_source_before_and_after_each_stream(
    adsb_job_dict: dict,
    adsb_time_ordered: list[Path],
    tmp_path: Path,
    all_bytes: Callable[[Path], dict[str, bytes]],
) -> None:
    folder = tmp_path / "src"
    folder.mkdir()
    paths = [Path(shutil.copy(p, folder)) for p in adsb_time_ordered[:4]]
    job = json.loads(json.dumps(adsb_job_dict))
    job["sources"] = [str(p) for p in paths]
    job["budget"] = {"train_hours": 0.5, "test_hours": 0.1}
    job["output"]["container"] = "parquet"  # streamed shard by shard (npz is not)
    out = tmp_path / "out"
    _run(job, out, streaming=True)
    before = all_bytes(out)
    victim = _admitted(out, paths)
    old = _sha(victim)
    with pytest.raises(SourceChangedError) as info:
        change = _at_writing(lambda: _parquet_value_changed(victim))
        _run(job, out, force=True, streaming=True, progress=change)
    assert (info.value.expected, info.value.actual) == (old, _sha(victim))
    assert all_bytes(out) == before


def test_a_packed_run_rereads_the_bytes_it_scored(
    sources: tuple[dict, list[Path]], tmp_path: Path
) -> None:
    job, paths = sources
    job = json.loads(json.dumps(job))
    job["output"]["layout"] = "packed"
    job["output"]["container"] = "parquet"
    out = tmp_path / "out"
    res = _run(job, tmp_path / "calm")
    victim = _admitted(res.path, paths)
    with pytest.raises(SourceChangedError) as info:
        _run(job, out, progress=_at_writing(lambda: _one_value_changed(victim)))
    assert info.value.source_id == victim.stem
    assert not (out / "dataset_manifest.json").exists()


def test_the_dedup_window_reader_rereads_the_bytes_it_scored(
    sources: tuple[dict, list[Path]], tmp_path: Path
) -> None:
    """``dedup`` compares window values read again after scoring (in the ranking step,
    which starts the selection phase)."""
    job, paths = sources
    job = json.loads(json.dumps(job))
    strategies = Path(__file__).resolve().parents[3] / "examples" / "adsb_quickstart"
    doc = json.loads((strategies / "strategies" / "top-k.json").read_text())
    doc["filters"] = [{"filter": "dedup"}]
    job["strategy"] = doc
    victim = sorted(paths)[0]
    done: list[int] = []

    def cb(event: dict) -> None:
        if event["phase"] == "selection" and event["event"] == "start" and not done:
            done.append(1)
            _one_value_changed(victim)

    old = _sha(victim)
    with pytest.raises(SourceChangedError) as info:
        _run(job, tmp_path / "out", progress=cb)
    assert (info.value.expected, info.value.actual) == (old, _sha(victim))
    assert any(str(e.path).endswith("dedup.py") for e in info.traceback)  # not the stage


class _PresentCount:
    """A scorer over window buffers (which the scorer pass reads from the sources again)."""

    def score(self, segments: Any, ctx: Any) -> Any:
        import numpy as np

        return np.array([float(b.present.sum()) for b in ctx.buffers])


def test_the_scorer_buffers_reread_the_bytes_scored_even_when_skipping(
    sources: tuple[dict, list[Path]], tmp_path: Path
) -> None:
    """Scorers with ``needs_buffers`` get windows read again after scoring; a changed
    source ends the run even under ``on_error="skip"`` (skipping it would hide the change)."""
    from kuration.metrics.scorers import register_scorer

    register_scorer("test-present-count", _PresentCount, needs_buffers=True, clobber=True)
    job, paths = sources
    job = json.loads(json.dumps(job))
    strategies = Path(__file__).resolve().parents[3] / "examples" / "adsb_quickstart"
    doc = json.loads((strategies / "strategies" / "top-k.json").read_text())
    doc["scorers"] = [{"name": "test-present-count", "output": "present_n"}]
    doc["params"] = {"by": "present_n"}
    job["strategy"] = doc
    job["on_error"] = "skip"
    victim = sorted(paths)[0]
    done: list[int] = []

    def cb(event: dict) -> None:
        if event["phase"] == "scorers" and event["event"] == "start" and not done:
            done.append(1)
            _truncated(victim)

    old = _sha(victim)
    with pytest.raises(SourceChangedError) as info:
        _run(job, tmp_path / "out", progress=cb)
    assert (info.value.expected, info.value.actual) == (old, _sha(victim))
    assert any(str(e.path).endswith("scorer_pass.py") for e in info.traceback)
