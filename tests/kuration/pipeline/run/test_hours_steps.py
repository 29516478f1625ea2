"""The hours run as named steps: its telemetry, the plan it records, one metric
compilation per process, and executed islands that follow the plan."""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import kuration.metrics.features as features_mod
from kuration import Pipeline
from kuration.extend import register_metric
from kuration.metrics.features import _METRICS
from kuration.pipeline.run import steps as hours_steps
from kuration.pipeline.run.strategy import _ENGINES

# small budgets over whole tracks overshoot on purpose here
pytestmark = pytest.mark.filterwarnings("ignore::kuration.errors.BudgetGranularityWarning")


def test_every_step_is_short() -> None:
    for name, step in hours_steps.STEPS:
        lines = len(inspect.getsource(step).splitlines())
        assert lines <= 80, (name, lines)


@pytest.fixture(scope="module")
def small_run(tmp_path_factory, adsb_job_dict, adsb_sources):
    job = json.loads(json.dumps(adsb_job_dict))
    job["sources"] = [str(p) for p in adsb_sources[:4]]
    job["budget"] = {"train_hours": 1.0, "test_hours": 0.25}
    out = tmp_path_factory.mktemp("steps") / "ds"
    return job, Pipeline.from_job(job).execute(out)


def test_each_step_records_its_telemetry(small_run) -> None:
    _, run = small_run
    names = [t.stage for t in run.telemetry]
    assert names == [
        "provenance", "read+segment+features", "bin", "candidates", "split", "fill",
        "fingerprint", "shard-plan", "resume-lookup", "stage", "manifest", "config", "publish",
        "commit",
    ]  # fmt: skip
    by = {t.stage: t for t in run.telemetry}
    res = run.result
    assert by["provenance"].rows_out == 4
    assert by["read+segment+features"].rows_out == len(res.scoring.segments)
    assert by["read+segment+features"].island == run.plan.stage("features").island == 0
    assert by["fill"].rows_out == sum(len(v) for v in res.fill.admitted.values())
    stage = by["stage"]
    assert stage.rows_out == len(res.manifest["shards"])
    assert stage.bytes == sum(e["size"] for e in res.manifest["shards"])
    assert (stage.checkpoint_hits, stage.checkpoint_misses) == (0, len(res.manifest["shards"]))
    assert all(t.wall_s >= 0 for t in run.telemetry)


def test_scoring_and_staging_record_where_their_time_went(small_run) -> None:
    _, run = small_run
    by = {t.stage: t for t in run.telemetry}
    score = by["read+segment+features"]
    parts = dict(score.parts_s or ())
    # the fingerprint is the read's own: hashed over the buffer parsed, timed with the read
    assert set(parts) == {"read", "segment", "features"}
    assert all(v > 0 for k, v in parts.items() if k != "segment")
    # no bound by the wall: an executor may read the next source while this one is scored
    staged = dict(by["stage"].parts_s or ())
    assert set(staged) == {"read", "fsync"} and staged["read"] > 0
    assert sum(staged.values()) <= by["stage"].wall_s
    cfg = json.loads((run.result.path / "config.json").read_text())
    rec = {t["stage"]: t for t in cfg["provenance"]["execution"]["telemetry"]}
    assert rec["read+segment+features"]["parts_s"] == parts
    assert "parts_s" not in rec["bin"]  # a step that measured no parts records none


def test_config_records_the_plan_and_the_telemetry(small_run) -> None:
    _, run = small_run
    cfg = json.loads((run.result.path / "config.json").read_text())
    execution = cfg["provenance"]["execution"]
    assert execution["plan"] == json.loads(json.dumps(run.plan.to_dict()))
    recorded = [t["stage"] for t in execution["telemetry"]]
    # config.json is encoded before publication: it records every step but its own and the
    # two that publish it
    assert recorded == [t.stage for t in run.telemetry][:-3]


def test_fill_emits_selection_advances(small_run, tmp_path) -> None:
    job, _ = small_run
    events: list[dict] = []
    Pipeline.from_job(job).options(progress=events.append).write(tmp_path / "ds")
    sel = [e for e in events if e["phase"] == "selection"]
    assert [e["event"] for e in sel] == ["start", "advance", "advance", "complete"]
    assert [e["split"] for e in sel if e["event"] == "advance"] == ["train", "test"]
    phases = {e["phase"] for e in events}
    assert {"provenance", "scoring", "transforms", "scorers", "selection", "writing"} <= phases


def test_metrics_compile_once_per_run(small_run, tmp_path, monkeypatch) -> None:
    job, _ = small_run
    calls: list[str] = []
    real = features_mod.compile_metric

    def counting(expr, schema, **kw):
        calls.append(kw.get("name"))
        return real(expr, schema, **kw)

    monkeypatch.setattr(features_mod, "compile_metric", counting)
    _ENGINES.clear()
    Pipeline.from_job(job).write(tmp_path / "ds")
    n_define = len(job["strategy"]["define"])
    # load_strategy compiles to validate; scoring reuses that engine (it compiled twice before)
    assert len(calls) == n_define
    assert sorted(calls) == sorted(job["strategy"]["define"])


def _hash(root: Path) -> dict[str, str]:
    import hashlib

    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and (p.name == "dataset_manifest.json" or p.parts[-2] in ("train", "test"))
    }


def _level(buf) -> float:
    """A registered metric for the islands test (module scope: its code is identifiable)."""
    return float(buf.n_steps) if hasattr(buf, "n_steps") else 0.0


@pytest.fixture
def island_metric() -> Iterator[str]:
    name = "test_steps_island_metric"
    register_metric(name)(_level)
    yield name
    _METRICS.unregister(name)


def test_a_non_fusible_metric_is_executed_as_a_barrier_with_the_same_bytes(
    small_run, island_metric, tmp_path
) -> None:
    job, _ = small_run
    job = json.loads(json.dumps(job))
    job["strategy"]["registered"] = [island_metric]
    fused = Pipeline.from_job(job).execute(tmp_path / "fused")
    register_metric(
        island_metric,
        clobber=True,
        execution_traits={"scope": "pool", "fusion": "barrier", "state": "pool"},
    )(_level)
    barrier = Pipeline.from_job(job).execute(tmp_path / "barrier")

    assert fused.plan.islands[0] == ("read", "segment", "features")
    assert barrier.plan.islands[0] == ("read", "segment")
    executed = {r: [(t.stage, t.island) for t in run.telemetry][1:3] for r, run in
                (("fused", fused), ("barrier", barrier))}  # fmt: skip
    assert executed["fused"] == [("read+segment+features", 0), ("bin", None)]
    assert executed["barrier"] == [("read+segment", 0), ("features", None)]
    n_seg = len(barrier.result.scoring.segments)
    assert [t.rows_out for t in barrier.telemetry[1:3]] == [n_seg, n_seg]
    assert _hash(barrier.result.path) == _hash(fused.result.path)
