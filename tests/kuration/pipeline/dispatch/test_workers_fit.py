"""Small jobs choose their workers: a derived process pool too small to pay for its start
is not started; the plan says so and the artifact is the one-worker run's."""

from __future__ import annotations

import json
from pathlib import Path

from kuration import Pipeline, run_job
from kuration.pipeline.dispatch.workers_fit import (
    SOURCES_PER_WORKER,
    countable_sources,
    pool_too_small,
)
from kuration.pipeline.spec.logical import PipelineOptions


def test_the_rule() -> None:
    two = PipelineOptions(workers=2)
    assert "3 source(s) run in the lead" in (pool_too_small(two, 3) or "")
    assert pool_too_small(two, 2 * SOURCES_PER_WORKER) is None  # enough sources
    assert pool_too_small(two, None) is None  # not counted yet
    assert pool_too_small(PipelineOptions(workers=2, executor="process"), 3) is None  # named
    assert pool_too_small(PipelineOptions(workers=1), 3) is None
    assert countable_sources(["a.csv", "b.csv"]) == 2
    assert countable_sources({"uris": ["a.csv"]}) == 1
    assert countable_sources(["data/*.csv"]) is None
    assert countable_sources({"sample": "adsb-paris"}) is None


def test_explain_and_run_keep_a_small_job_in_the_lead(small_job: dict, tmp_path: Path) -> None:
    plan = Pipeline.from_job(small_job).options(workers=2).explain()
    assert plan.stage("features").executor.startswith("local")
    assert any("4 source(s) run in the lead" in n for n in plan.notes)
    named = Pipeline.from_job(small_job).options(workers=2, executor="process").explain()
    assert named.stage("features").executor == "process x2"
    job = {**small_job, "span_seconds": 60}
    two = run_job(job, tmp_path / "two", workers=2)
    one = run_job(job, tmp_path / "one", workers=1)
    config = json.loads((two.path / "config.json").read_text())
    text = json.dumps(config)
    assert "4 source(s) run in the lead with one worker" in text
    assert (two.path / "dataset_manifest.json").read_bytes() == (
        one.path / "dataset_manifest.json"
    ).read_bytes()
