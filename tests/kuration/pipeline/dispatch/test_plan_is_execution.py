"""explain() is what runs: the plan's stages, runtimes and executors against the telemetry
of the run, for every shipped example and for the memory, disk, streaming and remote runs.

The telemetry is recorded by the code that ran (each runtime stamps the steps it owns), and
:func:`plan_mismatches` lists every contradiction; an empty list is the claim.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from kuration import Pipeline
from kuration.pipeline.disk.pool import DISK_RUNTIME
from kuration.pipeline.spec.plan import (
    REFERENCE_RUNTIME,
    STREAM_RUNTIME,
    PhysicalPlan,
    StageTelemetry,
    plan_mismatches,
)

pytestmark = pytest.mark.filterwarnings(
    "ignore::kuration.errors.BudgetGranularityWarning", "ignore::kuration.errors.KurationWarning"
)

ROOT = Path(__file__).resolve().parents[4]
EXAMPLES = sorted(
    p for p in (ROOT / "examples").rglob("job*.json") if p.parent.name != "strategies"
)


def _check(run) -> None:  # type: ignore[no-untyped-def]
    assert plan_mismatches(run.plan, run.telemetry) == [], run.plan.render()


def test_every_shipped_example_is_listed() -> None:
    names = {str(p.relative_to(ROOT / "examples")) for p in EXAMPLES}
    assert {"adsb_quickstart/job.json", "football/job.json", "video/job.json"} <= names


@pytest.mark.slow
@pytest.mark.parametrize("job", EXAMPLES, ids=lambda p: str(p.relative_to(ROOT / "examples")))
def test_the_plan_of_every_shipped_example_is_what_ran(job: Path, tmp_path: Path) -> None:
    p = Pipeline.from_job(job)
    run = p.execute(tmp_path / "out")
    _check(run)
    assert run.plan == dataclasses.replace(p.explain(), notes=run.plan.notes)


def test_strategy_declared_transforms_and_scorers_are_in_the_plan() -> None:
    """The shipped video example's strategy file declares a transform: explain() said
    "empty seam" although it ran."""
    plan = Pipeline.from_job(ROOT / "examples" / "video" / "job.json").explain()
    assert [c.name for c in plan.stage("transforms").components] == ["motion_energy"]
    assert not plan.stage("transforms").empty


def test_memory_disk_count_and_scorer_runs(small_job: dict, tmp_path: Path) -> None:
    p = Pipeline.from_job(small_job)
    mem = p.execute(tmp_path / "mem")
    _check(mem)
    assert mem.plan.stage("fill").runtime == REFERENCE_RUNTIME
    disk = p.options(pool="disk").execute(tmp_path / "disk")
    _check(disk)
    assert disk.plan.stage("fill").runtime == DISK_RUNTIME
    for q in (p.select(25), p.select(25).options(pool="disk")):
        _check(q.execute())
    scored = p.apply("novelty", params={"features": ["speed_p90", "turn_p90"], "k": 3})
    run = scored.select(25).execute()
    _check(run)
    assert "scorers" in {t.stage for t in run.telemetry}


def test_streaming_says_it_streams(small_job: dict, adsb_time_ordered, tmp_path: Path) -> None:
    job = {**small_job, "sources": [str(s) for s in adsb_time_ordered[:4]]}
    job["output"] = {**job["output"], "container": "parquet"}
    p = Pipeline.from_job(job).options(streaming=True)
    plan = p.explain()
    assert not any("read whole into a TickTable" in w for w in plan.warnings)
    assert plan.stage("read").runtime == STREAM_RUNTIME
    assert "lazily" in plan.stage("read").detail["runtime"]
    run = p.execute(tmp_path / "s")
    _check(run)


def test_a_remote_run(small_job: dict, s3_bucket: str) -> None:
    run = Pipeline.from_job(small_job).execute(f"{s3_bucket}/runs/plan")
    _check(run)


def test_a_contradiction_is_reported() -> None:
    plan = PhysicalPlan.from_dict(
        {
            "mode": "count",
            "stages": [
                {
                    "kind": "bin",
                    "traits": {},
                    "components": [],
                    "runtime": DISK_RUNTIME,
                    "executor": "driver",
                },
                {
                    "kind": "scorers",
                    "traits": {},
                    "components": [],
                    "empty": True,
                    "runtime": REFERENCE_RUNTIME,
                },
            ],
        }
    )
    ran = [
        StageTelemetry("bin", 0.1, runtime=REFERENCE_RUNTIME, executor="ray"),
        StageTelemetry("scorers", 0.1, runtime=REFERENCE_RUNTIME),
    ]
    problems = plan_mismatches(plan, ran)
    assert any("bin: planned on 'disk-index (duckdb)'" in m for m in problems)
    assert any("bin: planned on executor 'driver'" in m for m in problems)
    assert any("scorers: ran" in m for m in problems)
    assert plan_mismatches(plan, []) == ["bin: planned, but no telemetry says it ran"]


def test_an_hours_run_checks_its_write_options_once(
    small_job: dict, tmp_path: Path, monkeypatch
) -> None:
    """``preflight`` ran three times per run (planner, dispatch, the run's preparation); the
    plan's check is now the only one, and the run takes the span it resolved."""
    from kuration.pipeline.dispatch import hours, planner

    calls: list[dict] = []
    real = planner.preflight

    def counted(**kw):  # type: ignore[no-untyped-def]
        calls.append(kw)
        return real(**kw)

    monkeypatch.setattr(planner, "preflight", counted)
    monkeypatch.setattr(hours, "preflight", counted)
    run = Pipeline.from_job({**small_job, "span_seconds": 300}).execute(tmp_path / "o")
    assert len(calls) == 1
    assert run.result.config["pipeline"]["span_steps"] == 300
    assert run.plan.stage("fill").detail["span_steps"] == 300
    with pytest.raises(Exception, match="mutually exclusive"):
        Pipeline.from_job(small_job).write(tmp_path / "o", resume=True, force=True)
