"""The quickstart job on real ADS-B sources gives byte-identical shards and manifests under
every executor: local, process with 1 and 2 workers, and Ray (a session-scoped local
cluster of 2 CPUs).  The job lists a plugin module (written to ``tmp_path``, reached
through ``sys.path``) whose registered metric every worker -- spawn and Ray -- must
import.  Also: the executor's telemetry in config.json, ``explain()``, job keys and CLI."""

from __future__ import annotations

import json
import math
import os
import shutil
import time
from pathlib import Path

import pytest

from kuration import Pipeline, run_job
from kuration.cli.main import main as kur_main
from kuration.core.executors import RayExecutor
from kuration.core.plugins import load_plugins
from kuration.errors import ExecutorError, JobError, PipelineError
from kuration.pipeline.spec.job import load_job
from kuration.tools.diff import compare_datasets

ROOT = Path(__file__).resolve().parents[3]
JOB = ROOT / "examples" / "adsb_quickstart" / "job.json"

PLUGIN = '''
import numpy as np

from kuration.extend import register_metric


@register_metric("s13_exec_gap_frac", clobber=True)
def gap_frac(buf):
    """Fraction of (tick, entity) cells of the window with no report."""
    return float(1.0 - np.mean(buf.present))
'''


@pytest.fixture
def plugin_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, adsb_sources) -> dict:
    """The shipped quickstart job (spans and all) on 5 real sources, smaller budgets, and a
    registered metric from a plugin module that only ``sys.path`` finds."""
    (tmp_path / "plug").mkdir()
    (tmp_path / "plug" / "kur_s13_exec_plug.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path / "plug"))
    load_plugins(["kur_s13_exec_plug"], include_entry_points=False)
    job, _ = load_job(JOB)
    job["sources"] = [str(p) for p in adsb_sources[:5]]
    job["budget"] = {"train_hours": 1.0, "test_hours": 1.0}  # 300 s spans: within 10%
    job["plugins"] = ["kur_s13_exec_plug"]
    job["strategy"]["registered"] = ["s13_exec_gap_frac"]
    job["output"]["modalities"]["gap_frac"] = {
        "dtype": "float64",
        "shape": [],
        "source": "segment:s13_exec_gap_frac",
    }
    return job


@pytest.mark.slow
def test_the_artifact_is_byte_identical_under_every_executor(
    plugin_job: dict, tmp_path: Path, digests, ray_cluster
) -> None:
    runs, got = {}, {}
    for name, executor, workers in (
        ("local", "local", 1),
        ("process1", "process", 1),
        ("process2", "process", 2),
        ("ray", "ray", 2),
    ):
        runs[name] = run_job(plugin_job, tmp_path / name, executor=executor, workers=workers)
        got[name] = digests(tmp_path / name)
    assert len(got["local"]) > 40 and "dataset_manifest.json" in got["local"]
    for name in ("process1", "process2", "ray"):
        assert got[name] == got["local"], name
    gaps = [s.features["s13_exec_gap_frac"] for s in runs["ray"].scoring.segments]
    assert gaps == [s.features["s13_exec_gap_frac"] for s in runs["local"].scoring.segments]
    assert any(0.0 < g < 1.0 for g in gaps)  # the plugin metric ran in the Ray workers
    for name, want in (("local", "local"), ("process2", "process"), ("ray", "ray")):
        execution = runs[name].config["provenance"]["execution"]
        assert execution["mode"] == want
        tel = {t["stage"]: t for t in execution["telemetry"]}
        for stage in ("read+segment+features", "stage"):
            assert tel[stage]["executor"] == want, (name, stage)
            assert 1 <= tel[stage]["queue_depth"] <= max(2, execution["max_in_flight"])
            assert tel[stage]["batch_size"] >= 1
        assert tel["bin"].get("executor") is None  # a barrier runs in the lead process
    # kur diff: the worker count and executor are how the run went, not what it made
    res = compare_datasets(tmp_path / "local", tmp_path / "process2")
    assert res["identical"] and not res["changes"], res["changes"]
    listed = {c["path"] for c in res["provenance"]}
    assert "pipeline.workers" in listed and "provenance.execution.mode" in listed
    assert not [p for p in listed if "wall_s" in p or "parts_s" in p]  # timings are not listed


@pytest.mark.slow
def test_the_disk_pool_artifact_is_byte_identical_under_every_executor(
    plugin_job: dict, tmp_path: Path, digests, ray_cluster
) -> None:
    """The same job on the disk pool: its workers score (the plugin metric imported in each
    spawn and Ray worker) and write; the shards and manifest are the in-memory local run's,
    and the score stage's telemetry names the executor, not the lead."""
    run_job(plugin_job, tmp_path / "memory")
    want = digests(tmp_path / "memory")
    disk = {**plugin_job, "pool": "disk"}
    for name, executor, workers in (
        ("local", "local", 1),
        ("process1", "process", 1),
        ("process2", "process", 2),
        ("ray", "ray", 2),
    ):
        res = run_job(disk, tmp_path / name, executor=executor, workers=workers)
        assert digests(tmp_path / name) == want, name
        execution = res.config["provenance"]["execution"]
        tel = {t["stage"]: t for t in execution["telemetry"]}
        assert "index" in tel  # the plan ran on the disk pool
        for stage in ("read+segment+features", "stage"):
            assert tel[stage]["executor"] == executor, (name, stage)
            assert 1 <= tel[stage]["queue_depth"] <= max(2, execution["max_in_flight"])
        assert res.scoring.execution["tasks"] == 5
        plan = execution["plan"]
        scorer = {s["kind"]: s["executor"] for s in plan["stages"]}["features"]
        assert scorer.startswith(executor) and not plan["warnings"], name


@pytest.mark.slow
def test_ray_tasks_come_back_in_order_with_their_exceptions(ray_cluster) -> None:
    ex = RayExecutor(2, max_in_flight=3)
    outs = [out for _, out in ex.iter_batches(math.sqrt, [9.0, -1.0, 4.0, 1.0])]
    ex.close()  # the session's cluster stays up: this executor did not start it
    assert ray_cluster.is_initialized()
    assert outs[0] == 3.0 and outs[2:] == [2.0, 1.0] and isinstance(outs[1], ValueError)
    assert ex.peak_in_flight == 3
    # a consumer that stops early: closing cancels the tasks not started and waits for the
    # running ones (as a process pool's shutdown does), so no task outlives the run
    ex = RayExecutor(2, max_in_flight=4)
    first = next(iter(ex.iter_batches(time.sleep, [0.0, 2.0, 2.0, 2.0])))
    refs = list(ex._outstanding)
    assert first == (0.0, None) and len(refs) == 3
    ex.close()
    done, _ = ray_cluster.wait(refs, num_returns=3, timeout=0)
    assert len(done) == 3 and not ex._outstanding
    cancelled = 0
    for ref in refs:
        try:
            ray_cluster.get(ref)
        except ray_cluster.exceptions.TaskCancelledError:
            cancelled += 1
    assert cancelled >= 1  # two CPUs: the third sleep had not started
    # a task whose worker dies is not an outcome: the run stops, naming the task
    with pytest.raises(ExecutorError, match="task-three") as info:
        list(RayExecutor(1).iter_batches(os._exit, [3], label=lambda p: "task-three"))
    assert info.value.executor == "ray"


def test_explain_names_each_stage_executor(small_job: dict) -> None:
    plan = Pipeline.from_job(small_job).options(workers=2, executor="process").explain()
    assert plan.stage("features").executor == "process x2"
    assert plan.stage("write").executor == "process x2"
    assert plan.stage("bin").executor == "driver" and plan.stage("fill").executor == "driver"
    assert "executor=process x2" in plan.render()
    local = Pipeline.from_job(small_job).explain()
    assert local.stage("read").executor.startswith("local")
    assert local.stage("write").executor == "local (in the lead)"
    ray = Pipeline.from_job({**small_job, "executor": "ray", "workers": 3}).explain()
    assert ray.stage("segment").executor == "ray x3"
    assert ray.options["executor"] == "ray"


def test_job_keys_name_the_executor(small_job: dict) -> None:
    old = Pipeline.from_job({**small_job, "executor": "process-pool", "workers": 2})
    assert old.opts.executor == "process" and old.opts.to_dict()["executor"] == "process"
    one = Pipeline.from_job({**small_job, "executor": "process"})  # a pool of one worker
    assert one.opts.resolved_executor == "process" and one.opts.workers == 1
    with pytest.raises(JobError, match="executor"):
        Pipeline.from_job({**small_job, "executor": "local", "workers": 2})
    with pytest.raises(JobError, match="executor"):
        Pipeline.from_job({**small_job, "executor": "dask"})
    with pytest.raises(JobError, match="ray_address"):
        Pipeline.from_job({**small_job, "ray_address": "auto"})  # no Ray executor


def test_kur_run_refuses_a_bad_executor_in_one_line(
    small_job: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = tmp_path / "job.json"
    job.write_text(json.dumps(small_job))
    rc = kur_main(
        ["run", str(job), "--out", str(tmp_path / "o"), "--executor", "local", "--workers", "2"]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and len(err) == 1 and "executor 'local' runs one worker" in err[0]
    assert not (tmp_path / "o").exists()
    with pytest.raises(PipelineError, match="ray_address"):
        run_job(small_job, tmp_path / "o", executor="process", ray_address="auto")


# job_b's 0.1 h test split filled with whole 15-minute tracks overshoots on purpose
@pytest.mark.filterwarnings("ignore::kuration.errors.BudgetGranularityWarning")
@pytest.mark.slow
def test_workers_resume_a_local_run_rebuilding_only_damaged_tracks(
    tmp_path: Path, job_b: dict, base_b, digests
) -> None:
    """The parallel stage step reuses in the lead and rebuilds in workers: a local run's
    dataset, two shards damaged, resumed by two worker processes, is byte-identical again."""
    dest = tmp_path / "dest"
    shutil.copytree(base_b.path, dest)
    entries = base_b.manifest["shards"]
    cut, empty = entries[0], entries[-1]
    (dest / cut["path"]).write_bytes((dest / cut["path"]).read_bytes()[: cut["size"] // 2])
    (dest / empty["path"]).write_bytes(b"")
    res = run_job(job_b, dest, resume=True, workers=2, executor="process")
    assert digests(dest) == digests(base_b.path)

    def track(e: dict) -> tuple:
        return (e["split"], e["source_id"], e["entity_id"], e["span_index"])

    damaged = {track(cut), track(empty)}
    n_damaged = sum(1 for e in entries if track(e) in damaged)
    assert res.resume["rebuilt_shards"] == n_damaged
    assert res.resume["reused_shards"] == len(entries) - n_damaged
    stage = {t.stage: t for t in res.telemetry}["stage"]
    assert stage.executor == "process" and stage.checkpoint_misses == n_damaged
