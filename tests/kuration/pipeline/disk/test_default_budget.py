"""The default memory budget: with neither memory_budget nor pool, an eligible plan whose
estimated in-memory peak exceeds a share of the machine's memory runs on the disk runtime,
says so (explain, config.json, the run summary) and writes the same bytes.

The default is lowered here through ``$KURATION_DEFAULT_MEMORY_BUDGET`` (1 MB is below any
process's baseline, so every estimate exceeds it); ``off`` keeps the pool in memory.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kuration import run_job
from kuration.cli.main import main as kur_main
from kuration.errors import PipelineError
from kuration.pipeline.api.pipeline import Pipeline
from kuration.pipeline.disk.pool import DiskSelection
from kuration.pipeline.spec.budget import (
    DEFAULT_BUDGET_ENV,
    DEFAULT_BUDGET_FRACTION,
    default_memory_budget,
)

pytestmark = pytest.mark.filterwarnings("ignore::kuration.errors.BudgetGranularityWarning")


def test_the_default_is_a_share_of_total_memory_not_free_memory(monkeypatch) -> None:
    monkeypatch.delenv(DEFAULT_BUDGET_ENV, raising=False)
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    budget, how = default_memory_budget()  # type: ignore[misc]
    assert budget == int(total * DEFAULT_BUDGET_FRACTION) and "this machine's" in how
    monkeypatch.setenv(DEFAULT_BUDGET_ENV, "2GB")
    assert default_memory_budget() == (2_000_000_000, f"${DEFAULT_BUDGET_ENV}")
    monkeypatch.setenv(DEFAULT_BUDGET_ENV, "off")
    assert default_memory_budget() is None
    monkeypatch.setenv(DEFAULT_BUDGET_ENV, "lots")
    with pytest.raises(PipelineError, match=DEFAULT_BUDGET_ENV):
        default_memory_budget()


def test_an_hours_plan_over_the_default_runs_on_disk_with_the_same_bytes(
    small_job: dict, tmp_path: Path, digests, monkeypatch, capsys
) -> None:
    monkeypatch.setenv(DEFAULT_BUDGET_ENV, "off")
    mem = run_job(small_job, tmp_path / "memory")
    assert "index" not in {t.stage for t in mem.telemetry}
    monkeypatch.setenv(DEFAULT_BUDGET_ENV, "1MB")
    plan = Pipeline.from_job(small_job).explain()
    assert plan.stage("features").runtime != "disk-index (duckdb)"  # decided at run time
    assert any("chosen when the run starts" in n for n in plan.notes), plan.notes
    assert "notes" in plan.render()
    job = tmp_path / "job.json"
    job.write_text(json.dumps(small_job))
    assert kur_main(["run", str(job), "--out", str(tmp_path / "auto")]) == 0
    summary = capsys.readouterr().out
    assert "pool: disk, chosen automatically" in summary and "1 MB" in summary
    assert digests(tmp_path / "auto") == digests(tmp_path / "memory")
    config = json.loads((tmp_path / "auto" / "config.json").read_text())
    recorded = config["provenance"]["execution"]["plan"]
    assert recorded["options"]["pool"] == "disk"
    assert recorded["notes"][0].startswith("pool: disk, chosen automatically")
    assert {s["kind"]: s["runtime"] for s in recorded["stages"]}["fill"] == "disk-index (duckdb)"
    tel = {t["stage"] for t in config["provenance"]["execution"]["telemetry"]}
    assert "index" in tel
    # a pool the user fixed is never overridden by the default
    fixed = run_job({**small_job, "pool": "memory"}, tmp_path / "fixed")
    assert "index" not in {t.stage for t in fixed.telemetry}


def test_a_count_plan_over_the_default_selects_on_disk(small_job: dict, monkeypatch) -> None:
    p = Pipeline.from_job(small_job).select(30)
    monkeypatch.setenv(DEFAULT_BUDGET_ENV, "off")
    want = p.execute()
    assert not isinstance(want.result, DiskSelection)
    assert want.plan.notes == ()  # no budget, no choice
    monkeypatch.setenv(DEFAULT_BUDGET_ENV, "1MB")
    got = p.execute()
    assert isinstance(got.result, DiskSelection)
    assert got.plan.notes[0].startswith("pool: disk, chosen automatically")
    assert [s.key for s in got.result.selected] == [s.key for s in want.result.selected]
    monkeypatch.setenv(DEFAULT_BUDGET_ENV, "100TB")
    kept = p.execute()
    assert not isinstance(kept.result, DiskSelection)
    assert kept.plan.notes[0].startswith(
        "pool: memory, chosen automatically: the estimated in-memory peak"
    )
