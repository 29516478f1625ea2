"""explain(): the physical plan is data, compiled before any source is opened."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from kuration import Pipeline, TimeseriesAdapter
from kuration.cli.main import main
from kuration.errors import JobError
from kuration.extend import register_metric
from kuration.metrics.features import _METRICS
from kuration.pipeline.spec.plan import PhysicalPlan, StageTelemetry

EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "adsb_quickstart"


class _NeverRead(TimeseriesAdapter):
    """An adapter that fails the moment anything reads a source."""

    def read_table(self, uri: str):  # type: ignore[override]
        raise AssertionError(f"explain() read {uri}")

    def ticks(self, uri: str):  # type: ignore[override]
        raise AssertionError(f"explain() read {uri}")

    def fingerprint(self, uri: str) -> str:
        raise AssertionError(f"explain() fingerprinted {uri}")


@pytest.fixture
def job() -> Pipeline:
    return Pipeline.from_job(EXAMPLE / "job.json")


def test_explain_reads_no_row_of_sources_that_do_not_exist(job: Pipeline, tmp_path: Path) -> None:
    assert job.adapter is not None
    never = _NeverRead(job.adapter.schema, **job.adapter.options())
    p = job.source(never, [str(tmp_path / "not-yet" / f"{i}.parquet") for i in range(3)])
    plan = p.explain()
    assert plan.stage("read").detail["sources"] == "3 listed"
    assert plan.islands[0] == ("read", "segment", "features")
    with pytest.raises(JobError, match="not found"):  # running it does look for them
        p.write(tmp_path / "out")


def test_quickstart_plan_fuses_window_maps_and_marks_barriers(job: Pipeline) -> None:
    plan = job.explain()
    assert [s.kind for s in plan.stages] == [
        "read", "segment", "features", "transforms", "scorers", "bin", "fill", "tracks", "write", "enrich",
    ]  # fmt: skip
    assert plan.islands == (("read", "segment", "features"), ("tracks", "write"))
    assert plan.barriers == ("bin", "fill")
    assert plan.stage("transforms").empty and plan.stage("scorers").empty
    feats = plan.stage("features").components
    assert [c.name for c in feats] == list(job.strategy_.define)  # type: ignore[union-attr]
    assert plan.stage("fill").components[-1].name == "uniform-bins"
    assert plan.stage("write").traits.checkpoint == "partition"
    # one warning per non-empty stage on the reference runtime
    ref = [w for w in plan.warnings if "reference-in-memory" in w]
    assert len(ref) == sum(not s.empty for s in plan.stages)


def test_plan_round_trips_through_json(job: Pipeline) -> None:
    plan = job.select(10).enrich("audit").explain()
    doc = json.loads(json.dumps(plan.to_dict()))
    again = PhysicalPlan.from_dict(doc)
    assert again == plan
    assert again.to_dict() == doc
    assert plan.mode == "count" and plan.stage("enrich").components[0].name == "audit"
    assert "select" in plan.barriers and "enrich" in plan.barriers


@pytest.fixture
def barrier_metric() -> Iterator[str]:
    name = "test_plan_barrier_metric"
    register_metric(name, execution_traits={"scope": "pool", "fusion": "barrier", "state": "pool"})(
        lambda buf: 0.0
    )
    yield name
    _METRICS.unregister(name)


def test_declaring_a_metric_non_fusible_changes_the_islands(job: Pipeline, barrier_metric) -> None:
    doc = job.strategy_.to_dict()  # type: ignore[union-attr]
    doc["registered"] = [barrier_metric]
    plan = job.metrics(doc).explain()
    assert plan.islands == (("read", "segment"), ("tracks", "write"))
    assert plan.barriers[0] == "features"
    assert barrier_metric in plan.stage("features").barrier  # type: ignore[operator]


def test_hours_options_are_checked_by_explain(job: Pipeline) -> None:
    from kuration.errors import OutputSpecError

    with pytest.raises(OutputSpecError, match="clip_aggregate"):
        job.sample(hours=1.0, clip_aggregate="median").explain()


def test_stage_telemetry_round_trips() -> None:
    t = StageTelemetry("read+segment+features", 1.5, rows_in=3, rows_out=40, partitions=3)
    assert StageTelemetry.from_dict(t.to_dict()) == t
    assert set(t.to_dict()) == {
        "stage", "wall_s", "rows_in", "rows_out", "partitions", "bytes",
        "checkpoint_hits", "checkpoint_misses", "queue_depth", "island",
    }  # fmt: skip


def test_stage_telemetry_parts_round_trip() -> None:
    t = StageTelemetry("stage", 2.0, parts_s=(("fsync", 0.5), ("read", 0.25)))
    assert t.to_dict()["parts_s"] == {"fsync": 0.5, "read": 0.25}
    assert StageTelemetry.from_dict(t.to_dict()) == t


def test_kur_explain_prints_a_tree_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", str(EXAMPLE / "job.json")]) == 0
    out = capsys.readouterr().out
    assert "PhysicalPlan" in out and "island 0" in out and "barrier" in out
    assert "uniform-bins" in out and "warnings" in out
    assert main(["explain", str(EXAMPLE / "job.json"), "--json", "--n", "5"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["format"] == "kuration-plan/1" and doc["mode"] == "count"


def test_built_in_adapters_plan_with_declared_traits(job: Pipeline) -> None:
    plan = job.explain()
    assert not [w for w in plan.warnings if "declares no execution_traits" in w and "adapter" in w]
    (read,) = [s for s in plan.stages if s.kind == "read"]
    (adapter,) = read.components
    assert adapter.declared and adapter.traits.scope == "source"
    assert plan.islands[0] == ("read", "segment", "features")
