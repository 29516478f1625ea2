"""Pipeline: a Python pipeline reproduces the quickstart job byte for byte, progress phases,
enrich, the count path, job compilation and immutability."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from kuration import OutputSpec, Pipeline, curate, run_job
from kuration.errors import JobError, PipelineError

EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "adsb_quickstart"
SKIP = {"config.json", "dataset.commit.json", ".kuration-writer.lock"}


def _digests(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name not in SKIP
    }


def _quickstart_in_python(events: list[dict[str, Any]]) -> Pipeline:
    """The quickstart job, written with the builder (and its output policy from the preset)."""
    job = json.loads((EXAMPLE / "job.json").read_text())
    modalities = json.loads((EXAMPLE / "output.json").read_text())["modalities"]
    return (
        Pipeline()
        .source(
            job["adapter"],
            {"sample": "adsb-paris", "slice_minutes": 15},
            schema=EXAMPLE / "schema.json",
        )
        .segment(window=120, stride=60, unit="seconds", scope="track")
        .metrics(EXAMPLE / "strategy.json")
        .sample(
            hours=4.0,
            test_hours=1.0,
            clip_aggregate="mean",
            min_track_seconds=120,
            span_seconds=300,
        )
        .output({"preset": "npz-128-pad", "modalities": modalities})
        .options(seed=0, progress=events.append)
        .enrich("audit")
    )


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("pipeline")
    events: list[dict[str, Any]] = []
    run = _quickstart_in_python(events).execute(root / "python")
    job = run_job(EXAMPLE / "job.json", root / "job")
    return {"run": run, "job": job, "events": events, "root": root}


def test_python_pipeline_reproduces_the_quickstart_job_byte_for_byte(quickstart) -> None:
    py, job = _digests(quickstart["root"] / "python"), _digests(quickstart["root"] / "job")
    assert "dataset_manifest.json" in py
    assert sum(k.endswith(".npz") for k in py) > 100
    assert py == job
    assert quickstart["run"].result.fingerprint == quickstart["job"].fingerprint


def test_every_progress_phase_starts_and_completes_in_order(quickstart) -> None:
    events = quickstart["events"]
    phases = ["provenance", "scoring", "transforms", "scorers", "selection", "writing"]
    for ph in phases:
        kinds = [e["event"] for e in events if e["phase"] == ph]
        assert kinds[0] == "start" and kinds[-1] == "complete", ph
    firsts = [next(i for i, e in enumerate(events) if e["phase"] == ph) for ph in phases]
    assert firsts == sorted(firsts)
    for ph in ("provenance", "scoring", "writing"):  # these advance per source
        adv = [e for e in events if e["phase"] == ph and e["event"] == "advance"]
        assert adv and adv[-1]["current"] == adv[-1]["total"] and "source" in adv[-1]
    empty = [e for e in events if e["phase"] in ("transforms", "scorers")]
    assert all(e["total"] == 0 for e in empty) and len(empty) == 4


def test_telemetry_matches_the_written_dataset(quickstart) -> None:
    run, job = quickstart["run"], quickstart["job"]
    tel = {t.stage: t for t in run.telemetry}
    # the hours steps report their own telemetry (kuration.pipeline.run.steps.STEPS)
    assert set(tel) >= {"provenance", "read+segment+features", "bin", "fill", "stage", "enrich"}
    write = tel["stage"]
    shards = job.manifest["shards"]
    assert write.rows_out == len(shards)
    assert write.bytes == sum(e["size"] for e in shards)
    assert write.checkpoint_misses == len(shards) and write.checkpoint_hits == 0
    assert tel["read+segment+features"].rows_out == len(run.result.scoring.segments)
    assert all(t.wall_s >= 0 for t in run.telemetry)
    assert run.plan.mode == "hours"
    json.dumps(run.to_dict())


def test_enrich_audit_reports_on_the_admitted_windows(quickstart) -> None:
    audit = quickstart["run"].analyses["audit"]
    res = quickstart["run"].result
    assert audit["n_pool"] == len(res.scoring.segments)
    assert 0 < audit["n_selected"] <= audit["n_pool"]
    assert set(audit["distribution"]) == set(res.scoring.segments[0].features)
    assert audit["coverage"]["cells_covered"] is not None


def test_from_job_compiles_to_the_same_pipeline_as_the_builder() -> None:
    built = _quickstart_in_python([]).options(progress=None)
    compiled = Pipeline.from_job(EXAMPLE / "job.json")
    a, b = built.to_dict(), compiled.to_dict()
    a.pop("enrich")
    b.pop("enrich")
    assert a == b
    assert compiled.job is not None and compiled.job["name"] == "adsb-paris-quickstart"
    preset = Pipeline.from_job(EXAMPLE / "job-preset.json")
    assert preset.output_spec == OutputSpec.from_dict(
        json.loads((EXAMPLE / "output.json").read_text())
    )
    assert preset.explain().to_dict() == compiled.explain().to_dict()


def test_from_job_errors_are_job_errors(tmp_path: Path) -> None:
    job = json.loads((EXAMPLE / "job.json").read_text())
    job["output"] = {"preset": "no-such-preset", "modalities": {}}
    job["schema"] = str(EXAMPLE / "schema.json")
    job["strategy"] = str(EXAMPLE / "strategy.json")
    p = tmp_path / "job.json"
    p.write_text(json.dumps(job))
    with pytest.raises(ValueError, match="no-such-preset"):
        Pipeline.from_job(p)
    job["output"] = str(EXAMPLE / "output.json")
    job["budget"] = {"train_hours": 1.0, "weeks": 2}
    p.write_text(json.dumps(job))
    with pytest.raises(JobError, match="budget"):
        Pipeline.from_job(p)


def test_builders_return_new_pipelines_and_validate_early() -> None:
    base = Pipeline.from_job(EXAMPLE / "job.json")
    counted = base.select(7)
    assert base.selection is not None and base.selection.to_dict()["mode"] == "hours"
    assert counted.selection.to_dict() == {"mode": "count", "n": 7}
    with pytest.raises(PipelineError, match="transform"):
        base.transform("no-such-transform")
    with pytest.raises(PipelineError, match="score"):
        base.score("no-such-scorer")
    with pytest.raises(PipelineError, match="metrics"):
        Pipeline().metrics(EXAMPLE / "strategy.json")
    with pytest.raises(PipelineError, match="executor"):
        base.options(executor="dask")
    with pytest.raises(PipelineError, match="ray_address"):
        base.options(executor="process", ray_address="auto")
    with pytest.raises(PipelineError, match="unknown options"):
        base.sample(hours=1.0, budget_weeks=2)
    with pytest.raises(PipelineError, match="analyzer"):
        base.enrich("no-such-analyzer")
    with pytest.raises(PipelineError, match="source, segment, metrics"):
        Pipeline().explain()
    with pytest.raises(PipelineError, match="run"):
        base.run()


def test_count_path_matches_curate_and_the_audit_analyzer(
    adsb_job_dict, adsb_schema, adsb_adapter, adsb_sources
) -> None:
    sources = [str(p) for p in adsb_sources[:4]]
    events: list[dict[str, Any]] = []
    p = (
        Pipeline()
        .source(adsb_adapter, sources)
        .segment(**adsb_job_dict["segmenter"])
        .metrics(adsb_job_dict["strategy"])
        .select(20)
        .options(progress=events.append)
        .enrich("audit")
    )
    run = p.execute()
    ref = curate(adsb_schema, adsb_adapter, sources, p.segmenter, p.strategy_, 20, seed=0)
    assert [s.key for s in run.result.selected] == [s.key for s in ref.selected]
    audit = run.analyses["audit"]
    # the analyzer reproduces the audit select_segments computes itself
    assert audit["distribution"] == ref.distribution
    assert audit["duration"] == ref.audit["features"]
    phases = {e["phase"] for e in events}
    assert phases == {"provenance", "scoring", "transforms", "scorers", "selection"}
    assert [e for e in events if e["phase"] == "selection" and e["event"] == "advance"]
    assert run.plan.mode == "count" and "select" in run.plan.barriers


# small_job's small budgets filled with whole 15-minute tracks overshoot on purpose
@pytest.mark.filterwarnings("ignore::kuration.errors.BudgetGranularityWarning")
def test_review_and_write_on_both_paths(small_job: dict, tmp_path: Path) -> None:
    p = Pipeline.from_job(small_job)
    review = p.review(tmp_path / "hours")
    assert set(review["reasons"]) >= {"admitted", "budget-full"}
    assert (tmp_path / "hours" / "dataset_manifest.json").is_file()
    with pytest.raises(PipelineError, match="path"):
        p.review()
    counted = p.select(5)
    res = counted.write(tmp_path / "selection.json")
    doc = json.loads((tmp_path / "selection.json").read_text())
    assert doc["n_selected"] == res.n_selected == 5
    assert len(doc["audit"]["segments"]) == len(res.pool)
    assert counted.review()["selected"] == doc["selected"]


def test_logical_parts_round_trip() -> None:
    from kuration import CountSelection, HoursSelection, PipelineOptions
    from kuration.pipeline.spec.logical import SeamUse

    hours = HoursSelection(2.0, 0.5, clip_aggregate="mean", span_seconds=300.0, group_of={"a": "g"})
    opts = PipelineOptions(workers=3, seed=7, on_error="raise", durable=False)
    for obj in (hours, CountSelection(12), opts, SeamUse("audit", {"n_bins": 3})):
        doc = json.loads(json.dumps(obj.to_dict()))
        assert type(obj).from_dict(doc) == obj
    assert opts.to_dict()["executor"] == "process"
    # the older name still loads (config.json and job files written before "process")
    old = PipelineOptions.from_dict({**opts.to_dict(), "executor": "process-pool"})
    assert old == opts and old.resolved_executor == "process"
    assert PipelineOptions(executor="process-pool").executor == "process"
    ray = PipelineOptions(workers=2, executor="ray", ray_address="auto")
    assert PipelineOptions.from_dict(json.loads(json.dumps(ray.to_dict()))) == ray


def test_pipeline_round_trips_through_from_dict(adsb_adapter) -> None:
    """to_dict/from_dict: adapter by registered name, segmenter, strategy, selection, output,
    encoder, seams and options (the progress callback is given back separately)."""
    events: list[dict[str, Any]] = []
    hours = _quickstart_in_python(events).options(workers=2, on_error="raise")
    count = (
        Pipeline()
        .source(adsb_adapter, {"uris": ["/nowhere/a.csv", "/nowhere/b.csv"]})
        .segment(window=60, stride=30)
        .metrics(EXAMPLE / "strategy.json")
        .method("top-k", by="speed_p90")
        .select(9)
        .enrich("audit", n_bins=3)
    )
    for p in (hours, count):
        doc = json.loads(json.dumps(p.to_dict()))
        back = Pipeline.from_dict(doc, base=p.base, progress=p.opts.progress)
        assert back.to_dict() == p.to_dict() and back.base == p.base
        for part in ("schema", "segmenter", "strategy_", "selection", "output_spec", "opts"):
            assert getattr(back, part) == getattr(p, part), part
        assert back.adapter.to_dict() == p.adapter.to_dict()
        assert back.explain().to_dict() == p.explain().to_dict()  # plans without reading
    assert Pipeline.from_dict(hours.to_dict()).opts.progress is None
    with pytest.raises(PipelineError, match="mode"):
        Pipeline.from_dict({**count.to_dict(), "selection": {"mode": "all"}})
    with pytest.raises(PipelineError, match="malformed"):
        Pipeline.from_dict({**count.to_dict(), "selection": {"mode": "count"}})
