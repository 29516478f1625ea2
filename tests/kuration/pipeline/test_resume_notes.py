"""What ``resume`` tells about the destination it found: which sources changed since the
committed run, and staged work another run left there (which it does not reuse)."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from kuration import run_job
from kuration.errors import BudgetGranularityWarning
from kuration.output.commit import changed_sources

STAGING = ".kuration_staging"


def _run(job: dict[str, Any], out: Path, **kw: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetGranularityWarning)
        return run_job(job, out, **kw)


@pytest.fixture
def small(tmp_path: Path, adsb_job_dict: dict, adsb_sources: list[Path]) -> dict[str, Any]:
    """The example job on copies of three real sources (the test may edit them)."""
    job = json.loads(json.dumps(adsb_job_dict))
    src = tmp_path / "src"
    src.mkdir()
    job["sources"] = [str(shutil.copy(p, src / p.name)) for p in adsb_sources[:3]]
    job["budget"] = {"train_hours": 0.2, "test_hours": 0.05}
    return job


def test_the_note_names_the_changed_source(tmp_path: Path, small: dict) -> None:
    dest = tmp_path / "dest"
    base = _run(small, dest)
    edited = Path(small["sources"][1])
    table = pq.read_table(edited)
    pq.write_table(table.slice(0, table.num_rows - 1), edited)  # one row fewer
    sid = next(s["source_id"] for s in base.config["provenance"]["sources"][1:2])
    res = _run(small, dest, resume=True)
    notes = res.resume["notes"]
    assert notes == [f"the committed run has a different fingerprint: changed sources: {sid}"]


def _interrupted(job: dict[str, Any], dest: Path) -> None:
    """Run ``job`` into ``dest`` and stop it (Ctrl-C) while it stages shards."""
    seen = []

    def stop(event: dict[str, Any]) -> None:
        if event["phase"] == "writing" and event["event"] == "advance":
            seen.append(event)
            if len(seen) == 2:
                raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _run(job, dest, progress=stop)


def test_staged_work_of_another_run_is_named_not_hidden(tmp_path: Path, small: dict) -> None:
    dest = tmp_path / "dest"
    _interrupted(small, dest)
    assert not (dest / "dataset.commit.json").exists()
    left = sorted(p for p in (dest / STAGING).rglob("*") if p.is_file())
    assert left  # the interrupted run's staged shards
    other = json.loads(json.dumps(small))
    other["output"]["shard_length"] = 64  # another job
    res = _run(other, dest, resume=True)
    assert res.resume["reused_shards"] == 0
    notes = res.resume["notes"]
    assert (
        notes[0] == "nothing committed or staged by this run there: every shard is written afresh"
    )
    assert notes[1].startswith("staged work of a different run found there (run ")
    assert notes[1].endswith(
        f"; {len(left)} files) is not reused; this run deletes it when it commits"
    )
    assert not (dest / STAGING).exists()  # committed: the other run's staging went with it


def test_changed_sources_marks_new_and_gone_ones() -> None:
    old = [{"source_id": "a", "fingerprint": "1"}, {"source_id": "b", "fingerprint": "2"}]
    new = [{"source_id": "b", "fingerprint": "3"}, {"source_id": "c", "fingerprint": "4"}]
    assert changed_sources(old, new) == ["a (gone)", "b", "c (new)"]
    assert changed_sources(old, old) == []
