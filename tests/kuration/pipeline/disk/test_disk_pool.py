"""The disk-backed pool runtime selects exactly what the in-memory path selects (real ADS-B data)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from kuration import Pipeline, PipelineOptions, Segmenter, curate, load_strategy
from kuration.errors import PipelineError
from kuration.pipeline.disk.pool import DISK_RUNTIME, DiskSelection, select_on_disk
from kuration.pipeline.spec.plan import REFERENCE_RUNTIME

STRATEGIES = Path(__file__).resolve().parents[4] / "examples" / "adsb_quickstart" / "strategies"


@pytest.fixture(scope="module")
def parts(adsb_job_dict, adsb_schema, adsb_adapter, adsb_sources):
    seg = Segmenter(**adsb_job_dict["segmenter"], sample_hz=adsb_schema.sample_hz)
    return adsb_schema, adsb_adapter, [str(p) for p in adsb_sources[:6]], seg


def _doc(name: str, **kw) -> dict:
    doc = json.loads((STRATEGIES / f"{name}.json").read_text())
    doc.update(kw)
    return doc


CASES = {
    "top-k": _doc("top-k"),
    "top-k ascending, lowest, filtered": _doc(
        "top-k",
        params={"by": "climb_std", "descending": False},
        nan_policy="lowest",
        filters=[
            {"filter": "source", "regex": "00[0-3]$"},
            {"feature": "speed_p90", "op": "between", "value": [100, 260]},
        ],
    ),
    "top-k with bins, quantile predicates": _doc(
        "top-k",
        bin={"axes": ["turn_p90"], "n_bins": 3},
        filters=[
            {"feature": "altitude_mean", "op": "outside", "quantile": [0.1, 0.2]},
            {"feature": "speed_p90", "op": ">=", "quantile": 0.25},
        ],
    ),
    "uniform-bins": _doc("uniform-bins"),
    "weighted": _doc("weighted"),
    "weighted rank, lowest": _doc(
        "weighted",
        params={"weights": {"turn_p90": 1.0, "climb_std": -0.5}, "normalize": "rank"},
        nan_policy="lowest",
    ),
    "top-k, group cap": _doc(
        "top-k", group={"regex": "([0-2])$"}, group_cap={"max_overshoot": 1.0}
    ),
    "uniform-bins, group cap, filtered": _doc(
        "uniform-bins",
        group={"map": {"adsb_paris_000": "a", "adsb_paris_001": "a"}, "default": "b"},
        group_cap={"max_overshoot": 1.2},
        filters=[{"feature": "speed_p90", "op": ">=", "quantile": 0.25}],
    ),
    "top-k, tag floors": _doc(
        "top-k",
        tags={
            "turning": {"feature": "turn_p90", "bins": 3},
            "climb": {"feature": "climb_std", "thresholds": [1.0, 3.0]},
        },
        tag_coverage={"turning": 0.2, "climb": {"climb_std>=3.0": 6}},
    ),
    "uniform-bins, source tag floors, group cap": _doc(
        "uniform-bins",
        tags={"site": {"source": {"regex": "([0-3])$"}}},
        tag_coverage={"site": {"3": 15, "0": 2}},
        group={"regex": "([0-1])$"},
        group_cap={"max_overshoot": 1.5},
        filters=[{"filter": "finite"}],
    ),
    "uniform-bins within, lowest, finite": _doc(
        "uniform-bins",
        params={"within": {"by": "speed_p90", "descending": False}},
        nan_policy="lowest",
        bin={"axes": ["turn_p90", "altitude_mean"], "n_bins": [3, 5]},
        filters=[{"filter": "finite", "features": ["speed_p90"]}],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("n", [25, 10**6])
def test_disk_selection_equals_the_in_memory_one(parts, case: str, n: int) -> None:
    schema, adapter, sources, seg = parts
    st = load_strategy(CASES[case], schema)
    mem = curate(schema, adapter, sources, seg, st, n, seed=5)
    disk = select_on_disk(schema, adapter, sources, seg, st, n, seed=5, batch_rows=7)
    assert [(s.key, s.priority, s.bin, s.features) for s in disk.selected] == [
        (s.key, s.priority, s.bin, s.features) for s in mem.selected
    ]
    assert disk.n_pool == len(mem.pool) and disk.n_eligible == mem.n_eligible
    assert disk.edges == mem.edges


@pytest.mark.parametrize("n", [7, 40])
def test_group_cap_on_disk_reports_what_memory_does(parts, n: int) -> None:
    """The capped selection carries the same group labels, and the report the same cap and
    per-group eligible and selected counts, as the in-memory count path."""
    schema, adapter, sources, seg = parts
    st = load_strategy(CASES["top-k, group cap"], schema)
    mem = curate(schema, adapter, sources, seg, st, n, seed=2)
    disk = select_on_disk(schema, adapter, sources, seg, st, n, seed=2)
    assert [(s.key, s.group) for s in disk.selected] == [(s.key, s.group) for s in mem.selected]
    rep = disk.groups
    assert rep is not None and rep["cap"] == mem.groups["cap"] == -(-n // rep["groups"])
    assert rep["groups"] == mem.groups["groups"]
    for g, row in mem.groups["per_group"].items():
        assert rep["per_group"][g]["eligible"] == row["eligible"]
        assert rep["per_group"][g]["selected"] == row["selected"]
    # the cap binds: some group is full while another group's rows rank higher overall
    assert any(r["at_cap"] for r in rep["per_group"].values())
    assert disk.to_dict(segments=False)["groups"] == rep


@pytest.mark.parametrize(
    "case", ["top-k, tag floors", "uniform-bins, source tag floors, group cap"]
)
@pytest.mark.parametrize("n", [12, 60])
def test_tags_on_disk_report_what_memory_does(parts, case: str, n: int) -> None:
    """Tag labels on the selected segments and the per-label report (pool, eligible,
    selected, floor, met, why) equal the in-memory count path's."""
    schema, adapter, sources, seg = parts
    st = load_strategy(CASES[case], schema)
    mem = curate(schema, adapter, sources, seg, st, n, seed=3)
    disk = select_on_disk(schema, adapter, sources, seg, st, n, seed=3)
    assert [(s.key, s.tags, s.group) for s in disk.selected] == [
        (s.key, s.tags, s.group) for s in mem.selected
    ]
    assert disk.tags == mem.tags
    # the floors matter: the plain priority order would select something else
    plain = load_strategy({k: v for k, v in CASES[case].items() if k != "tag_coverage"}, schema)
    other = curate(schema, adapter, sources, seg, plain, n, seed=3)
    assert [s.key for s in other.selected] != [s.key for s in mem.selected]


def test_explain_names_the_runtime_and_run_uses_it(parts, tmp_path: Path) -> None:
    schema, adapter, sources, seg = parts
    st = load_strategy(CASES["uniform-bins"], schema)
    p = Pipeline().source(adapter, {"uris": sources}).segment(seg).metrics(st).select(30)
    plan = p.explain()
    assert {s.runtime for s in plan.stages if not s.empty} == {REFERENCE_RUNTIME}
    disk = p.options(pool="disk", checkpoint_dir=str(tmp_path / "ck"))
    dplan = disk.explain()
    assert dplan.stage("select").runtime == DISK_RUNTIME
    assert dplan.stage("features").runtime == DISK_RUNTIME
    assert "runtime=disk-index (duckdb)" in dplan.render()
    assert dplan.stage("features").traits.checkpoint == "partition"
    assert not any("select: runs on" in w for w in dplan.warnings)
    run = disk.execute(tmp_path / "sel.json")
    assert isinstance(run.result, DiskSelection)
    assert [s.key for s in run.result.selected] == [s.key for s in p.run().selected]
    tele = {t.stage: t for t in run.telemetry}
    score = tele["read+segment+features"]
    assert score.partitions == 6 and score.checkpoint_misses == 6 and score.batch_rows == 65536
    assert tele["bin+select"].rows_out == 30
    doc = json.loads((tmp_path / "sel.json").read_text())
    assert doc["runtime"] == DISK_RUNTIME and len(doc["selected"]) == 30
    # a progress display changes no result: the checkpoints are reused
    again = disk.options(progress=lambda ev: None).execute().result
    assert again.checkpoint["hits"] == 6 and again.checkpoint["misses"] == 0
    opts = disk.opts
    assert PipelineOptions.from_dict(opts.to_dict()) == opts


def test_ineligible_plans_stay_in_memory_and_say_why(parts) -> None:
    schema, adapter, sources, seg = parts
    st = load_strategy(_doc("facility-location"), schema)
    p = Pipeline().source(adapter, {"uris": sources}).segment(seg).metrics(st).select(5)
    plan = p.options(pool="disk").explain()
    assert plan.stage("select").runtime == REFERENCE_RUNTIME
    assert any("pool='disk' requested, but method 'facility-location'" in w for w in plan.warnings)
    with pytest.raises(PipelineError, match="disk pool cannot run"):
        select_on_disk(schema, adapter, sources, seg, st, 5)
    with pytest.raises(PipelineError, match="memory_limit"):
        select_on_disk(
            schema,
            adapter,
            sources,
            seg,
            load_strategy(_doc("top-k"), schema),
            5,
            memory_limit="1; DROP TABLE pool",
        )
    with pytest.raises(PipelineError, match="pool must be"):
        p.options(pool="ssd")


def test_job_key_pool_disk(small_job, tmp_path: Path) -> None:
    job = json.loads(json.dumps(small_job))
    job["strategy"] = _doc("top-k")
    job["pool"] = "disk"
    res = Pipeline.from_job(job).select(12).options(checkpoint_dir=str(tmp_path / "ck")).run()
    assert isinstance(res, DiskSelection) and res.n_selected == 12
    assert (tmp_path / "ck" / res.checkpoint["run"] / "score" / "_stage.commit.json").is_file()


@pytest.mark.slow
@pytest.mark.parametrize("digest_bytes", [32, 0])
def test_exact_dedup_on_disk_equals_in_memory(
    parts, tmp_path: Path, monkeypatch, digest_bytes
) -> None:
    """Replicated sources are true duplicates: the digest lookup in DuckDB and the full
    payload comparison drop the same windows as the in-memory filter.  With digests cut
    to zero bytes (zero-padded) every window collides with every other, and only the
    byte-for-byte comparison decides."""
    from tests.kuration.selection.test_dedup import replicate

    from kuration.pipeline.disk import score as disk_score
    from kuration.selection.dedup import window_digest

    monkeypatch.setattr(
        disk_score,
        "window_digest",
        lambda buf: window_digest(buf, digest_bytes).ljust(32, b"\0"),
    )

    schema, adapter, sources, seg = parts
    replica = replicate(Path(sources[0]), tmp_path, "r1")
    corpus = [*sources[:2], str(replica)]
    # the id the run gives the replica: its path relative to the sources' common folder
    replica_id = adapter.assign_source_ids(corpus)[str(replica)]
    for name in ("top-k", "uniform-bins"):
        st = load_strategy(_doc(name, filters=[{"filter": "finite"}, {"filter": "dedup"}]), schema)
        mem = curate(schema, adapter, corpus, seg, st, 10**6, seed=1)
        disk = select_on_disk(schema, adapter, corpus, seg, st, 10**6, seed=1)
        assert [(s.key, s.priority) for s in disk.selected] == [
            (s.key, s.priority) for s in mem.selected
        ]
        assert disk.n_eligible == mem.n_eligible
        assert not any(s.source_id == replica_id for s in disk.selected)
        assert any(s.source_id == replica_id for s in mem.pool)


def test_kur_curate_pool_disk(small_job, tmp_path: Path, capsys) -> None:
    from kuration.cli.main import main

    job = json.loads(json.dumps(small_job))
    job["strategy"] = _doc("top-k")
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    assert main(["curate", str(path), "--n", "4", "--pool", "disk", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["runtime"] == DISK_RUNTIME and doc["n_selected"] == 4
    assert doc["checkpoint"]["root"] is None  # a temporary directory, removed
    assert main(["curate", str(path), "--n", "4", "--pool", "disk"]) == 0
    assert "on the disk pool" in capsys.readouterr().out
    job["strategy"] = CASES["uniform-bins, source tag floors, group cap"]
    path.write_text(json.dumps(job))
    assert main(["curate", str(path), "--n", "12", "--pool", "disk"]) == 0
    out = capsys.readouterr().out
    assert "tag site" in out and "groups (cap " in out
    assert "no (" in out  # the floor of 15 is not met, and the table says why


def test_job_key_checkpoint_dir_is_reused_by_a_rerun(small_job, tmp_path: Path, capsys) -> None:
    """``checkpoint_dir`` in a job resolves against the job file's folder; a second
    ``kur curate`` over unchanged inputs reuses every partition; ``--checkpoint-dir``
    overrides the key."""
    from kuration.cli.main import main

    job = json.loads(json.dumps(small_job))
    job.update(strategy=_doc("top-k"), pool="disk", checkpoint_dir="ck")
    (tmp_path / "jobs").mkdir()
    path = tmp_path / "jobs" / "job.json"
    path.write_text(json.dumps(job))
    runs = []
    for _ in range(2):
        assert main(["curate", str(path), "--n", "4", "--json"]) == 0
        runs.append(json.loads(capsys.readouterr().out))
    assert runs[0]["checkpoint"]["root"] == str(tmp_path / "jobs" / "ck")
    assert runs[0]["checkpoint"]["hits"] == 0 and runs[0]["checkpoint"]["misses"] > 0
    assert runs[1]["checkpoint"]["hits"] == runs[0]["checkpoint"]["misses"]
    assert runs[1]["checkpoint"]["misses"] == 0
    assert runs[1]["selected"] == runs[0]["selected"]
    other = tmp_path / "other"
    assert main(["curate", str(path), "--n", "4", "--json", "--checkpoint-dir", str(other)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["checkpoint"]["root"] == str(other) and doc["checkpoint"]["hits"] == 0


def test_a_memory_budget_the_pool_exceeds_chooses_the_disk_pool(parts, monkeypatch) -> None:
    """Estimated on the real sources: a budget below the in-memory peak but above what the
    disk pool holds (baseline, one source, its index) runs the plan on the disk pool."""
    from kuration.pipeline.disk import pool as disk_pool
    from kuration.pipeline.disk.pool import disk_meets_budget
    from kuration.pipeline.spec.budget import estimate_peak

    schema, adapter, sources, seg = parts
    st = load_strategy(CASES["uniform-bins"], schema)
    p = Pipeline().source(adapter, {"uris": sources}).segment(seg).metrics(st).select(30)
    est = estimate_peak(p.run_spec(), sources)
    base, one = est.parts["baseline"], est.parts["per_source_in_memory"]
    assert disk_meets_budget(est.parts, base + one + 2**20, index_min=2**20) == 2**20
    assert disk_meets_budget(est.parts, base + one + 2**20 - 1, index_min=2**20) is None
    assert disk_meets_budget(est.parts, base + one + 2**30) == disk_pool.INDEX_MEMORY
    # the quickstart pool is small: let the index take what the pool would have taken
    monkeypatch.setattr(disk_pool, "INDEX_MEMORY_MIN", est.parts["pool"] // 2)
    budget = est.in_memory - 1
    run = p.options(memory_budget=budget).execute()
    assert isinstance(run.result, DiskSelection)
    assert run.plan.stage("select").runtime == DISK_RUNTIME
    assert [s.key for s in run.result.selected] == [s.key for s in p.run().selected]
    # a budget the in-memory plan meets keeps it in memory
    assert not isinstance(p.options(memory_budget=est.in_memory + 2**20).run(), DiskSelection)


#: (name, executor, workers): every executor the disk pool's score stage runs on
EXECUTORS = (
    ("local", "local", 1),
    ("process x1", "process", 1),
    ("process x2", "process", 2),
    ("ray x2", "ray", 2),
)


def partitions(root: Path) -> dict[str, tuple[str, int, dict]]:
    """Every partition published under a checkpoint root, by source: the SHA-256 of its Arrow
    file's bytes (read from disk and checked against its commit), its rows and its meta."""
    out = {}
    for path in sorted(root.glob("*/score/p-*.commit.json")):
        doc = json.loads(path.read_text())
        digest = hashlib.sha256((path.parent / doc["file"]).read_bytes()).hexdigest()
        assert digest == doc["sha256"]
        out[doc["name"]] = (digest, doc["rows"], doc["meta"])
    return out


@pytest.mark.slow
def test_partitions_and_selection_are_byte_identical_under_every_executor(
    parts, tmp_path: Path, ray_cluster
) -> None:
    """The count plan (with a dedup filter: the digests are computed where the source is
    scored) on local, process x1, process x2 and Ray: the same partition bytes, the same
    selection, one namespace; the telemetry names what ran."""
    schema, adapter, sources, seg = parts
    doc = _doc("uniform-bins", filters=[{"filter": "finite"}, {"filter": "dedup"}])
    st = load_strategy(doc, schema)
    p = Pipeline().source(adapter, {"uris": sources}).segment(seg).metrics(st).select(40)
    got, runs = {}, set()
    for name, executor, workers in EXECUTORS:
        ck = tmp_path / name
        opts = {"executor": executor, "workers": workers, "checkpoint_dir": str(ck)}
        run = p.options(pool="disk", **opts).execute()
        res = run.result
        assert isinstance(res, DiskSelection)
        got[name] = ([(s.key, s.priority, s.bin, s.features) for s in res.selected], partitions(ck))
        runs.add(res.checkpoint["run"])
        score = {t.stage: t for t in run.telemetry}["read+segment+features"]
        assert score.executor == res.execution["executor"] == executor, name
        assert res.execution["tasks"] == score.checkpoint_misses == len(sources)
        assert 1 <= score.queue_depth <= res.execution["max_in_flight"]
        assert score.batch_size == 1 and dict(score.parts_s)["write"] > 0
        assert res.checkpoint["bytes_written"] > 0
        assert res.to_dict(segments=False)["execution"] == res.execution
    assert len(got["local"][1]) == len(sources) and len(got["local"][0]) == 40
    for name in got:
        assert got[name] == got["local"], name
    assert len(runs) == 1  # the executor is not part of the checkpoint key
    again = p.options(pool="disk", checkpoint_dir=str(tmp_path / "ray x2")).run()
    assert again.checkpoint["hits"] == len(sources) and again.execution["tasks"] == 0
    assert again.execution["queue_depth"] == 0


def test_workers_skip_or_raise_a_failing_source_as_the_lead_does(parts, tmp_path: Path) -> None:
    """A source that does not read: skipped with the same message by a worker as by the
    lead (the message is printed by the lead), or its exception re-raised in the lead."""
    from kuration.core.executors import ProcessExecutor

    schema, adapter, sources, seg = parts
    bad = tmp_path / "broken.parquet"
    bad.write_bytes(b"not parquet")
    corpus = [*sources[:2], str(bad)]
    st = load_strategy(_doc("top-k"), schema)
    local = select_on_disk(schema, adapter, corpus, seg, st, 10)
    with ProcessExecutor(2) as ex:
        remote = select_on_disk(schema, adapter, corpus, seg, st, 10, executor=ex)
        assert list(remote.errors) == [str(bad)] and remote.errors == local.errors
        assert [s.key for s in remote.selected] == [s.key for s in local.selected]
        assert remote.sources == local.sources and remote.execution["executor"] == "process"
        with pytest.raises(type(_read_error(adapter, bad))):
            select_on_disk(schema, adapter, corpus, seg, st, 10, executor=ex, on_error="raise")


def _read_error(adapter, path: Path) -> Exception:
    try:
        adapter.read_table(str(path))
    except Exception as exc:
        return exc
    raise AssertionError("the file reads")


def test_a_describe_hook_that_cannot_travel_is_refused_before_any_task(parts, tmp_path) -> None:
    from kuration.core.executors import ProcessExecutor
    from kuration.pipeline.disk.checkpoint import StageCheckpoint
    from kuration.pipeline.disk.score import score_stage

    schema, adapter, sources, seg = parts
    st = load_strategy(_doc("top-k"), schema)
    ck = StageCheckpoint(tmp_path, {"run": 1}, "score")
    ex = ProcessExecutor(2)
    with pytest.raises(PipelineError, match="module-level function"):
        score_stage(
            ck, adapter, sources, seg, st, schema, batch_rows=64, on_error="skip",
            durable=False, describe=lambda uri, fp, table, segs: {}, executor=ex,
        )  # fmt: skip
    assert ex._pool is None and ex.tasks == 0  # no worker was started


def test_the_index_refuses_a_partition_whose_rows_are_out_of_order(tmp_path: Path) -> None:
    """The index counts canonical row numbers as partitions stream in, which holds only for
    rows in ``start_idx`` order: a partition written otherwise is refused, not misnumbered."""
    import pyarrow as pa

    from kuration.contracts.segment import Segment
    from kuration.errors import DatasetIntegrityError
    from kuration.pipeline.disk.checkpoint import StageCheckpoint
    from kuration.pipeline.disk.index import connect, load_partitions
    from kuration.pipeline.disk.segment_batch import SegmentBatch

    segs = [Segment("s", a, a + 4, {"f": float(a)}) for a in (0, 2, 4)]
    batch = SegmentBatch.from_segments(segs, ["f"], digests=[bytes(32)] * 3).batch
    ck = StageCheckpoint(tmp_path / "ck", {"run": 1}, "score")
    meta = {"source_id": "s", "uri": "s"}
    for name, rows in (("sorted", batch), ("reversed", batch.take(pa.array([2, 1, 0])))):
        c = ck.write(name, "k", batch.schema, [rows], {**meta, "source_id": name})
        con = connect(tmp_path, "64MiB")
        if name == "sorted":
            assert load_partitions(con, ck, {name: c}, 1) == 3
            got = con.execute("SELECT start_idx, rn FROM pool ORDER BY rn").fetchall()
            assert got == [(0, 0), (2, 1), (4, 2)]
        else:
            with pytest.raises(DatasetIntegrityError, match="out of start_idx order"):
                load_partitions(con, ck, {name: c}, 1)
        con.close()
