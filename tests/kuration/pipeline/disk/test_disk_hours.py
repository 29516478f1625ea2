"""Hours runs on the disk-backed pool write what the in-memory runtime writes (real ADS-B data).

Every comparison is against the reference in-memory runtime on the same job: the
shards and ``dataset_manifest.json`` byte for byte (the golden test's hash), and
``config.json`` except the parts that describe how the run executed.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from tests.kuration.pipeline.test_golden import GOLDEN, artifact_hash, quickstart_job

from kuration import Pipeline, run_job
from kuration.errors import PipelineError
from kuration.pipeline.disk.candidates import CandidateStore
from kuration.pipeline.disk.hours import DiskScoringResult, disk_session, disk_steps
from kuration.pipeline.disk.pool import DISK_RUNTIME
from kuration.pipeline.disk.source_record import source_info_doc, source_info_from_doc
from kuration.pipeline.disk.track_columns import TrackColumns
from kuration.pipeline.dispatch.hours import _prepare
from kuration.pipeline.run.scoring import SourceInfo, TrackExtent
from kuration.pipeline.run.steps import STEPS, run_steps
from kuration.pipeline.spec.plan import REFERENCE_RUNTIME
from kuration.selection.candidates import build_candidate_table

HERE = Path(__file__).resolve().parent
STRATEGIES = HERE.parents[3] / "examples" / "adsb_quickstart" / "strategies"
#: what may differ between the runtimes: how the run executed, and when
EXECUTION = ("execution", "started_at", "finished_at")


def _doc(name: str, **kw) -> dict:
    doc = json.loads((STRATEGIES / f"{name}.json").read_text())
    doc.update(kw)
    return doc


def _config(out: Path) -> dict:
    cfg = json.loads((out / "config.json").read_text())
    cfg["provenance"] = {k: v for k, v in cfg["provenance"].items() if k not in EXECUTION}
    cfg["job"] = {k: v for k, v in (cfg["job"] or {}).items() if k != "pool"}
    return cfg


def _both(job: dict, tmp_path: Path, **kw) -> tuple[Path, Path]:
    """``job`` run on the in-memory and on the disk runtime; their artifacts must agree."""
    outs = []
    for pool in ("memory", "disk"):
        out = tmp_path / pool
        run_job({**json.loads(json.dumps(job)), "pool": pool}, out, **kw)
        outs.append(out)
    mem, disk = outs
    assert "index" in _telemetry(disk)  # the plan ran on the disk runtime
    assert artifact_hash(disk) == artifact_hash(mem)
    assert _config(disk) == _config(mem)
    return mem, disk


def _telemetry(out: Path) -> dict:
    cfg = json.loads((out / "config.json").read_text())
    return {t["stage"]: t for t in cfg["provenance"]["execution"]["telemetry"]}


def test_the_quickstart_job_on_disk_is_byte_identical(tmp_path: Path) -> None:
    """The README's job (spans, a group cap, bins) as shipped: the golden artifact."""
    mem, disk = _both(quickstart_job("job"), tmp_path)
    assert artifact_hash(disk) == GOLDEN["job"]
    tele = _telemetry(disk)
    score = tele["read+segment+features"]
    assert score["partitions"] == 12 and score["checkpoint_misses"] == 12
    assert score["bytes"] > 0 and score["rows_out"] == tele["index"]["rows_in"] > 0
    assert "summary" in tele and "index" not in _telemetry(mem)
    assert not (disk / ".kuration_staging").exists()  # the checkpoints went with the staging area


SPANS = {
    "spans of 60 s, mean": {"span_seconds": 60, "clip_aggregate": "mean"},
    "spans of 75 steps, min, short tracks out": {
        "span_steps": 75,
        "clip_aggregate": "min",
        "min_track_seconds": 240,
    },
    "whole tracks, max": {"clip_aggregate": "max"},
}


# whole tracks overshoot the small budgets (the fill says so): the same on both runtimes
@pytest.mark.filterwarnings("ignore::kuration.errors.BudgetGranularityWarning")
@pytest.mark.parametrize("case", sorted(SPANS))
def test_spans_on_disk(small_job, tmp_path: Path, case: str) -> None:
    _both({**small_job, **SPANS[case], "strategy": _doc("top-k")}, tmp_path)


STRATS = {
    "tags, tag coverage, group cap": _doc(
        "balanced-hours",
        tags={
            "turning": {"feature": "turn_p90", "bins": 3, "labels": ["s", "g", "t"]},
            "climb": {"feature": "climb_std", "thresholds": [1.0, 3.0], "labels": ["a", "b", "c"]},
            "site": {"source": {"regex": "([0-1])$"}},
        },
        tag_coverage={"turning": 0.25, "climb": 0.1},
        group={"regex": "([0-1])$"},
        group_cap={"max_overshoot": 1.2},
        filters=[{"filter": "finite"}, {"feature": "speed_p90", "op": ">=", "quantile": 0.2}],
    ),
    "weighted, quantile predicate, lowest": _doc(
        "weighted",
        nan_policy="lowest",
        filters=[{"feature": "speed_p90", "op": ">=", "quantile": 0.25}],
    ),
    "top-k ascending, source filter": _doc(
        "top-k",
        params={"by": "climb_std", "descending": False},
        filters=[{"filter": "source", "regex": "00[0-2]$"}],
    ),
}


@pytest.mark.parametrize("case", sorted(STRATS))
def test_strategies_on_disk(small_job, tmp_path: Path, case: str) -> None:
    _both({**small_job, "strategy": STRATS[case], "span_seconds": 60}, tmp_path)


def _run_to(job: dict, tmp_path: Path, last: str):
    """A prepared hours run of ``job`` with its steps run up to ``last`` (the disk
    runtime's index still open when the plan runs there)."""
    p = Pipeline.from_job(job)
    plan = p.explain()
    sources = [str(s) for s in job["sources"]]
    r = _prepare(p.run_spec(), tmp_path, sources, plan, force=False, resume=False)
    steps = disk_steps(r, STEPS)
    upto = steps[: [n for n, _ in steps].index(last) + 1]
    return r, upto


def test_every_segment_ranks_and_every_candidate_aggregates_as_in_memory(
    small_job, tmp_path: Path
) -> None:
    """The index gives every segment (not only the best) the in-memory priority, and the
    per-source candidate tables concatenate to the whole-pool table (labels re-interned)."""
    job = {**small_job, "strategy": STRATS["tags, tag coverage, group cap"], "span_seconds": 60}
    mem, steps = _run_to({**job, "pool": "memory"}, tmp_path / "m", "candidates")
    run_steps(mem, steps)
    disk, steps = _run_to({**job, "pool": "disk"}, tmp_path / "d", "candidates")
    with disk_session(disk):
        run_steps(disk, steps)
        assert disk.disk.con is None  # closed while the fill runs
        got = disk.disk.reopen().execute("SELECT prio FROM pool ORDER BY rn").fetchnumpy()["prio"]
    segs = mem.pool().segments
    assert np.array_equal(got, np.array([s.priority for s in segs]))
    assert np.isfinite(got).any() and np.isneginf(got).any()  # the filters excluded some
    assert isinstance(disk.scoring, DiskScoringResult) and disk.scoring.segments == []
    assert disk.scoring.sources == mem.scoring.sources
    assert disk.scoring.summary() == mem.scoring.summary()
    assert disk.edges == mem.edges and disk.too_short == mem.too_short
    _same_table(mem.candidates, disk.candidates)
    assert (
        len(disk.candidates.tag_sets) > 2
        and len(set(disk.candidates.source_groups().values())) == 4
    )


def _same_table(a, b) -> None:
    """Equal candidate tables (``b`` may be the disk runtime's store): every column, each
    row's entity id, group label and tag set (codes may differ)."""
    if isinstance(b, CandidateStore):
        b = b.to_table(a.source_ids)
    assert a.empty_excluded == b.empty_excluded
    for col in ("source", "entity", "first", "last", "span", "priority", "present"):
        assert np.array_equal(getattr(a, col), getattr(b, col)), col
    assert np.array_equal(a.features, b.features, equal_nan=True)
    assert a.source_ids == b.source_ids
    ids = [[t.entity_ids[s][e] for s, e in zip(t.source, t.entity, strict=True)] for t in (a, b)]
    assert ids[0] == ids[1] and [type(x) for x in ids[0]] == [type(x) for x in ids[1]]
    assert [a.tag_sets[t] for t in a.tags] == [b.tag_sets[t] for t in b.tags]
    assert [a.groups[g] if g >= 0 else None for g in a.group] == [
        b.groups[g] if g >= 0 else None for g in b.group
    ]


def test_tables_appended_to_the_store_read_back_as_the_whole_table(tmp_path: Path) -> None:
    """Two sources whose tables intern labels in different orders (and entity ids of two
    types) read back from the store as the table built over both at once."""
    from kuration.contracts.segment import Segment

    ext = {
        "a": (TrackExtent("x", 0, 9, 10),),
        "b": (TrackExtent(7, 2, 7, 6), TrackExtent("y", 0, 3, 4)),
    }
    segs = {
        "a": [Segment("a", 0, 5, {"f": 1.0}, tags={"t": "u"}, group="g2", priority=1.0)],
        "b": [
            Segment("b", 0, 4, {"f": 2.0}, tags={"t": "v"}, group="g1", priority=0.5),
            Segment("b", 3, 8, {"f": np.nan}, tags={"t": "u"}, group="g1", priority=2.0),
        ],
    }
    kw = {"how": "mean", "features": ["f"], "span_steps": 3}
    whole, _ = build_candidate_table(ext, segs, **kw)
    store = CandidateStore(tmp_path, ["f"])
    for s in ("a", "b"):
        store.append(build_candidate_table({s: ext[s]}, {s: segs[s]}, **kw)[0])
    with pytest.raises(PipelineError, match="out of source order"):
        store.append(build_candidate_table({"a": ext["a"]}, {"a": segs["a"]}, **kw)[0])
    store.close()
    _same_table(whole, store)
    assert whole.groups == ("g2", "g1") and len(store) == len(whole) == 8
    assert store.pooled_sources() == whole.pooled_sources()
    assert store.source_groups() == whole.source_groups()


def test_source_info_round_trips_over_its_fields() -> None:
    """The checkpoint record rebuilds an equal SourceInfo whatever its fields hold
    (entity ids of several types, an array-valued field)."""
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class Wider(TrackExtent):  # a field added later (e.g. per-span presence) travels too
        present: tuple[int, ...] = ()

    from kuration.pipeline.disk import source_record

    info = SourceInfo(
        "s",
        "/x.parquet",
        100,
        -3,
        "ab" * 32,
        4,
        (TrackExtent("a", 0, 5, 6), TrackExtent(7, 1, 2, 2), TrackExtent(("p", 1.5), 0, 0, 1)),
        {"snap_collisions": 2},
    )
    back = source_info_from_doc(json.loads(json.dumps(source_info_doc(info))))
    assert back == info and info == back and isinstance(back.tracks, TrackColumns)
    assert source_info_doc(back) == source_info_doc(info)  # recorded again as it was
    assert [type(t.entity_id) for t in back.tracks] == [str, int, tuple]
    source_record._CLASSES["Wider"] = Wider
    try:
        wide = dataclasses.replace(info, tracks=(Wider("a", 0, 5, 6, (3, 0, 3)),))
        assert source_info_from_doc(json.loads(json.dumps(source_info_doc(wide)))) == wide
    finally:
        del source_record._CLASSES["Wider"]


def test_explain_names_the_disk_runtime_for_hours(small_job) -> None:
    disk = Pipeline.from_job({**small_job, "pool": "disk"}).explain()
    for kind in ("read", "segment", "features", "bin", "fill", "tracks", "write"):
        assert disk.stage(kind).runtime == DISK_RUNTIME, kind
    assert disk.warnings == ()
    mem = Pipeline.from_job(small_job).explain()
    assert mem.stage("fill").runtime == REFERENCE_RUNTIME and mem.warnings
    other = Pipeline.from_job({**small_job, "pool": "disk", "strategy": _doc("k-center")})
    plan = other.explain()
    assert plan.stage("features").runtime == REFERENCE_RUNTIME
    assert any("pool='disk' requested, but method 'k-center'" in w for w in plan.warnings)
    streamed = Pipeline.from_job({**small_job, "pool": "disk"}).options(streaming=True).explain()
    assert any("streaming=True runs its own" in w for w in streamed.warnings)


def test_a_killed_run_resumes_from_its_partitions(small_job, tmp_path: Path) -> None:
    """SIGKILL after two of four partitions are committed; ``resume`` reuses them (hits)
    and the dataset equals the in-memory one.  A rerun with a ``checkpoint_dir`` reuses
    every partition."""
    job = {**small_job, "strategy": _doc("top-k"), "span_seconds": 60}
    out = tmp_path / "disk"
    args = tmp_path / "args.json"
    args.write_text(json.dumps({"job": {**job, "pool": "disk"}, "out": str(out), "kill_after": 2}))
    env = {**os.environ, "PYTHONPATH": str(HERE)}
    child = subprocess.run(
        [sys.executable, str(HERE / "_hours_pool_child.py"), str(args)], env=env, check=False
    )
    assert child.returncode == -9
    commits = out.glob(".kuration_staging/pool/*/score/*.commit.json")
    assert len([c for c in commits if not c.name.startswith("_stage")]) == 2
    events: list[dict] = []
    run_job({**job, "pool": "disk"}, out, resume=True, progress=events.append)
    score = _telemetry(out)["read+segment+features"]
    assert (score["checkpoint_hits"], score["checkpoint_misses"]) == (2, 2)
    advance = [e for e in events if e["phase"] == "scoring" and e["event"] == "advance"]
    assert [e["current"] for e in advance] == [1, 2, 3, 4]
    run_job({**job, "pool": "memory"}, tmp_path / "mem")
    assert artifact_hash(out) == artifact_hash(tmp_path / "mem")
    kept = {**job, "pool": "disk", "checkpoint_dir": str(tmp_path / "ck")}
    for i in range(2):
        run_job(kept, tmp_path / f"kept{i}")
        score = _telemetry(tmp_path / f"kept{i}")["read+segment+features"]
        assert score["checkpoint_hits"] == (4 if i else 0)
    assert artifact_hash(tmp_path / "kept1") == artifact_hash(tmp_path / "mem")


def test_kur_run_pool_disk_prints_the_summary(small_job, tmp_path: Path, capsys) -> None:
    from kuration.cli.main import main

    path = tmp_path / "job.json"
    (tmp_path / "empty").mkdir()  # a source whose read fails: a miss that leaves no partition
    sources = [*small_job["sources"], str(tmp_path / "empty")]
    job = {**small_job, "sources": sources, "strategy": _doc("top-k"), "span_seconds": 60}
    path.write_text(json.dumps(job))
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--pool", "disk"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "segments: " in out and "segments: 0" not in out
    assert "sources scored: 4/5 (failed 1" in out
    assert "disk pool: 4 source partitions (4 scored, 0 reused" in out
    tele = _telemetry(tmp_path / "out")
    assert tele["read+segment+features"]["checkpoint_misses"] == 5
    assert main(["run", str(path), "--out", str(tmp_path / "mem"), "--pool", "memory"]) == 0
    assert "disk pool" not in capsys.readouterr().out


def test_a_memory_budget_the_pool_exceeds_puts_hours_on_the_disk_pool(
    small_job, tmp_path: Path, monkeypatch
) -> None:
    """A budget below the in-memory hours plan's estimated peak, which the disk pool meets,
    runs the plan there (the same dataset); one the in-memory plan meets keeps it there."""
    from kuration.pipeline.disk import pool as disk_pool
    from kuration.pipeline.spec.budget import estimate_peak

    job = {**small_job, "strategy": _doc("top-k"), "span_seconds": 60}
    p = Pipeline.from_job(job)
    est = estimate_peak(p.run_spec(), job["sources"])
    # the quickstart pool is small: let the index take what the pool would have taken
    monkeypatch.setattr(disk_pool, "INDEX_MEMORY_MIN", est.parts["pool"] // 2)
    p.options(memory_budget=est.in_memory - 1).write(tmp_path / "disk")
    assert "index" in _telemetry(tmp_path / "disk")
    p.options(memory_budget=est.in_memory + 2**30).write(tmp_path / "mem")
    assert "index" not in _telemetry(tmp_path / "mem")
    assert artifact_hash(tmp_path / "disk") == artifact_hash(tmp_path / "mem")


def test_a_remote_write_on_the_disk_pool_reads_back_like_local(
    s3_bucket: str, job_b: dict, base_b
) -> None:
    """The planning steps of a remote run are the disk runtime's too: the bucket receives
    the in-memory local run's shards and manifest, byte for byte."""
    import warnings

    from tests.kuration.pipeline.destination.test_remote_run import _local_bytes, _remote_bytes

    from kuration.errors import BudgetGranularityWarning

    url = f"{s3_bucket}/runs/disk"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetGranularityWarning)
        res = run_job({**job_b, "pool": "disk"}, url)
    stages = [t.stage for t in res.telemetry]
    assert "index" in stages and "summary" in stages
    assert _remote_bytes(url) == _local_bytes(base_b.path)


def test_exact_dedup_on_disk_writes_what_memory_writes(small_job, tmp_path: Path) -> None:
    """A replicated source is a true duplicate: the disk index drops the same windows as the
    in-memory dedup filter, and the datasets agree."""
    from tests.kuration.selection.test_dedup import replicate

    replica = replicate(Path(small_job["sources"][0]), tmp_path, "r1")
    st = _doc("top-k", filters=[{"filter": "finite"}, {"filter": "dedup"}])
    job = {**small_job, "sources": [*small_job["sources"][:2], str(replica)], "strategy": st}
    budget = {"train_hours": 0.5, "test_hours": 0.0}  # every source in train, the copy too
    _both({**job, "span_seconds": 60, "budget": budget}, tmp_path)


def test_score_stage_hands_each_commit_to_keep_before_the_next_source(
    small_job, tmp_path: Path
) -> None:
    """``keep`` sees each partition's commit (with its source record) as soon as the
    source is scored, and only what it returns is kept: the records of all sources are
    never held at once."""
    from kuration.pipeline.disk.checkpoint import StageCheckpoint
    from kuration.pipeline.disk.score import score_stage

    r, _ = _run_to({**small_job, "pool": "disk"}, tmp_path / "d", "candidates")
    events: list[tuple[str, str]] = []

    def keep(uri: str, c):
        events.append(("keep", uri))
        assert "info" in c.meta  # the describe hook's record, not yet dropped
        return dataclasses.replace(c, meta={"source_id": c.meta["source_id"]})

    def progress(ev: dict) -> None:
        if ev["event"] == "advance":
            events.append(("advance", ev["source"]))

    uris = sorted(str(s) for s in small_job["sources"])
    ck = StageCheckpoint(tmp_path / "ck", {"run": 1}, "score")
    kw = dict(batch_rows=64, on_error="raise", durable=False, progress=progress, keep=keep)
    describe = lambda uri, fp, table, segs: {"info": {"n": len(segs)}}  # noqa: E731
    args = (ck, r.adapter, uris, r.segmenter, r.strategy, r.schema)
    scored = score_stage(*args, describe=describe, **kw)
    assert events == [(k, u) for u in uris for k in ("keep", "advance")]
    assert all(set(c.meta) == {"source_id"} for c in scored.commits.values())
    events.clear()  # a rerun reuses every partition: keep sees the stored commits too
    scored = score_stage(*args, describe=describe, **kw)
    assert ck.hits == len(uris) and events == [(k, u) for u in uris for k in ("keep", "advance")]


def test_a_fresh_stage_reads_each_source_once_and_a_rerun_only_fingerprints_it(
    small_job, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the local executor a fresh stage has nothing to reuse: the lead's read (which
    hashes the bytes it decodes) gives each source's fingerprint, so the file is opened
    once, not hashed first for the key; a rerun fingerprints each source, reuses its
    partition and reads nothing.  The partition keys are the same both ways."""
    import kuration.sources.identity as identity
    from kuration.core.executors import LocalExecutor
    from kuration.pipeline.disk.checkpoint import StageCheckpoint
    from kuration.pipeline.disk.score import score_stage

    r, _ = _run_to({**small_job, "pool": "disk"}, tmp_path / "d", "candidates")
    calls: list[tuple[str, str]] = []
    fingerprint, read_local = r.adapter.fingerprint, identity._read_local
    monkeypatch.setattr(
        r.adapter, "fingerprint", lambda u: calls.append(("fp", u)) or fingerprint(u)
    )
    monkeypatch.setattr(
        identity, "_read_local", lambda u: calls.append(("read", u)) or read_local(u)
    )
    uris = sorted(str(s) for s in small_job["sources"])
    ck = StageCheckpoint(tmp_path / "ck", {"run": 1}, "score")
    args = (ck, r.adapter, uris, r.segmenter, r.strategy, r.schema)
    kw = dict(batch_rows=64, on_error="raise", durable=False, executor=LocalExecutor())
    first = score_stage(*args, **kw)
    assert calls == [("read", u) for u in uris] and ck.misses == len(uris)
    assert [first.commits[u].meta["fingerprint"] for u in uris] == list(map(fingerprint, uris))
    calls.clear()
    again = score_stage(*args, **kw)
    assert calls == [("fp", u) for u in uris] and ck.hits == len(uris)
    assert {u: c.key for u, c in again.commits.items()} == {
        u: c.key for u, c in first.commits.items()
    }


def test_explain_names_the_executor_that_scores_on_the_disk_pool(small_job) -> None:
    """With another executor, the plan names it as the scorer of every disk stage (each
    source is a task there) and warns of nothing; ``local`` scores in the lead."""
    p = Pipeline.from_job({**small_job, "pool": "disk"}).options(executor="process", workers=2)
    plan = p.explain()
    scoring = [s for s in plan.stages if s.kind in ("read", "segment", "features")]
    assert {s.executor for s in scoring} == {"process x2"}
    assert {s.runtime for s in scoring} == {DISK_RUNTIME}
    assert plan.stage("write").executor == "process x2"
    assert plan.warnings == ()
    ray = p.options(executor="ray", workers=2).explain()
    assert ray.stage("features").executor == "ray x2" and ray.warnings == ()
    local = p.options(executor="local", workers=1).explain()
    assert local.stage("features").executor == "local (lead reads ahead, 1 scoring thread)"
    assert local.warnings == ()


@pytest.mark.parametrize("parts", ["all", "thirds", "each"])
def test_candidates_built_in_chunks_of_sources_join_to_the_whole_table(
    small_job, tmp_path: Path, monkeypatch, parts: str
) -> None:
    """One table per source, per few sources or for all at once: the same candidates."""
    from kuration.pipeline.disk import hours as disk_hours

    job = {**small_job, "strategy": STRATS["tags, tag coverage, group cap"], "span_seconds": 60}
    mem, steps = _run_to({**job, "pool": "memory"}, tmp_path / "m", "candidates")
    run_steps(mem, steps)
    per_source = Counter(s.source_id for s in mem.pool().segments)
    assert len(per_source) >= 4  # so that a third of the pool holds several sources
    chunk = {"all": 10**9, "thirds": len(mem.pool().segments) // 3, "each": 1}[parts]
    monkeypatch.setattr(disk_hours, "_CHUNK_SEGMENTS", chunk)
    disk, steps = _run_to({**job, "pool": "disk"}, tmp_path / "d", "candidates")
    with disk_session(disk):
        run_steps(disk, steps)
    _same_table(mem.candidates, disk.candidates)
    assert disk.too_short == mem.too_short


def test_a_checkpoint_dir_that_cannot_hold_checkpoints_names_the_option(
    small_job, tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    for where in (blocker, blocker / "below"):
        job = {**small_job, "pool": "disk", "checkpoint_dir": str(where)}
        with pytest.raises(PipelineError, match=r"checkpoint_dir .* cannot be used: a file is in"):
            run_job(job, tmp_path / "out")
        assert not (tmp_path / "out").exists()  # refused before anything was written


def test_the_selection_review_of_a_disk_run_is_the_memory_one(small_job, tmp_path: Path) -> None:
    """hours_selection_review reads the disk runtime's pools and decisions from its
    candidate store after the run (the staging area, checkpoints and index are gone)."""
    job = {**small_job, "strategy": STRATS["tags, tag coverage, group cap"], "span_seconds": 60}
    got = {
        pool: Pipeline.from_job({**job, "pool": pool}).review(tmp_path / pool)
        for pool in ("memory", "disk")
    }
    assert got["disk"] == got["memory"]
    decisions = got["disk"]["splits"]["train"]["decisions"]
    assert {"admitted", "budget-full", "non-finite"} <= set(decisions)


def test_the_tracks_of_a_source_are_read_from_its_partition(small_job, tmp_path: Path) -> None:
    """A disk run keeps each source's tracks in its partition commit: loaded equal to the
    in-memory run's, and refused (naming the source) once that commit is replaced."""
    from kuration.pipeline.disk.source_record import CommittedTracks, loaded_tracks

    mem, steps = _run_to({**small_job, "pool": "memory"}, tmp_path / "m", "read+segment+features")
    run_steps(mem, steps)
    disk, steps = _run_to({**small_job, "pool": "disk"}, tmp_path / "d", "read+segment+features")
    with disk_session(disk):
        run_steps(disk, steps)
        sid = sorted(disk.pool().sources)[0]
        lazy = disk.pool().sources[sid].tracks
        assert isinstance(lazy, CommittedTracks) and len(lazy) == len(
            mem.pool().sources[sid].tracks
        )
        assert loaded_tracks(lazy) == mem.pool().sources[sid].tracks == lazy
        ck = disk.disk.ck
        commit = ck.committed(lazy._name)
        (ck.dir / f"{ck._stem(lazy._name)}.commit.json").write_text(
            json.dumps({**commit.to_dict(), "sha256": "0" * 64})
        )
        with pytest.raises(PipelineError, match="changed while the run read it"):
            lazy.load()


@pytest.mark.slow
def test_the_quickstart_job_on_disk_is_byte_identical_under_every_executor(
    tmp_path: Path, ray_cluster
) -> None:
    """The golden job on the disk pool scored by local, process x1, process x2 and Ray: the
    same partition bytes and source records, the golden shards and manifest, and the
    telemetry and ``r.scoring.execution`` name what scored."""
    from tests.kuration.pipeline.disk.test_disk_pool import EXECUTORS, partitions

    job = {**quickstart_job("job"), "pool": "disk"}
    got = {}
    for name, executor, workers in EXECUTORS:
        ck = tmp_path / name / "ck"
        res = run_job({**job, "checkpoint_dir": str(ck)}, tmp_path / name / "out",
                      executor=executor, workers=workers)  # fmt: skip
        got[name] = partitions(ck)
        assert artifact_hash(tmp_path / name / "out") == GOLDEN["job"], name
        assert isinstance(res.scoring, DiskScoringResult)
        assert res.scoring.execution["executor"] == executor
        score = _telemetry(tmp_path / name / "out")["read+segment+features"]
        assert score["executor"] == executor and score["checkpoint_misses"] == 12
        assert 1 <= score["queue_depth"] <= res.scoring.execution["max_in_flight"]
        assert score["batch_size"] == 1 and dict(score["parts_s"])["fsync"] > 0
    assert len(got["local"]) == 12 and all("info" in m for _, _, m in got["local"].values())
    for name in got:
        assert got[name] == got["local"], name


@pytest.mark.slow
def test_a_run_killed_while_workers_score_resumes_from_what_they_published(
    small_job, tmp_path: Path
) -> None:
    """Two worker processes score; the whole process group (lead and workers) is SIGKILLed
    once the lead has collected two outcomes.  ``resume`` (in the lead, ``local``) reuses
    every partition the workers had published (at least those two) and the dataset equals
    the in-memory one."""
    job = {**small_job, "strategy": _doc("top-k"), "span_seconds": 60, "pool": "disk"}
    out = tmp_path / "disk"
    args = tmp_path / "args.json"
    doc = {"job": job, "out": str(out), "kill_group_after_scored": 2, "workers": 2}
    args.write_text(json.dumps(doc))
    env = {**os.environ, "PYTHONPATH": str(HERE)}
    child = subprocess.run(
        [sys.executable, str(HERE / "_hours_pool_child.py"), str(args)],
        env=env,
        check=False,
        start_new_session=True,  # its own process group: the kill takes its workers too
    )
    assert child.returncode == -9
    commits = out.glob(".kuration_staging/pool/*/score/*.commit.json")
    published = len([c for c in commits if not c.name.startswith("_stage")])
    assert 2 <= published <= 4
    # resumed by the lead alone: the executor is not part of the partitions' key
    run_job(job, out, resume=True, executor="local", workers=1)
    score = _telemetry(out)["read+segment+features"]
    assert (score["checkpoint_hits"], score["checkpoint_misses"]) == (published, 4 - published)
    run_job({**job, "pool": "memory"}, tmp_path / "mem")
    assert artifact_hash(out) == artifact_hash(tmp_path / "mem")


def test_a_checkpoint_dir_on_an_in_memory_run_is_said_to_do_nothing(
    small_job, tmp_path: Path
) -> None:
    """Only the disk pool checkpoints: the option given to an in-memory run warns (naming
    it and the way to the disk pool) instead of being dropped without a word."""
    from kuration.errors import KurationWarning

    job = {**small_job, "span_seconds": 60, "checkpoint_dir": str(tmp_path / "ck")}
    with pytest.warns(KurationWarning, match="checkpoint_dir .* is not used.*pool='disk'"):
        run_job(job, tmp_path / "out")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run_job({**job, "pool": "disk"}, tmp_path / "disk")  # used there: no warning
    assert any((tmp_path / "ck").rglob("*.commit.json"))


def test_directory_sources_that_cannot_be_read_are_skipped_by_both_pools(
    small_job, tmp_path: Path, capsys
) -> None:
    """A folder with no data files fails its read; a folder holding a symbolic link fails
    its fingerprint (on the disk pool before any task: that ended the run). Both are
    skipped with ``on_error="skip"``, recorded alike by both pools, and are a SourceError
    naming the folder with ``on_error="raise"``."""
    from kuration.errors import SourceError

    empty, linked = tmp_path / "empty_dir", tmp_path / "linked_dir"
    empty.mkdir()
    linked.mkdir()
    (linked / "part.parquet").symlink_to(small_job["sources"][0])
    job = {**small_job, "sources": [*small_job["sources"], str(empty), str(linked)]}
    job.update(on_error="skip", span_seconds=60)
    mem, _ = _both(job, tmp_path)
    err = capsys.readouterr().err
    assert err.count("empty_dir: is a directory with no data files") == 2
    assert err.count("linked_dir: refusing to read the symbolic link") == 2
    results = json.dumps(json.loads((mem / "config.json").read_text())["results"])
    assert str(empty) in results and str(linked) in results
    for pool in ("memory", "disk"):
        for folder, why in ((empty, "no data files"), (linked, "symbolic link")):
            one = {**job, "sources": [*small_job["sources"], str(folder)], "on_error": "raise"}
            with pytest.raises(SourceError, match=f"{folder.name}: .*{why}"):
                run_job({**one, "pool": pool}, tmp_path / f"raise-{pool}-{folder.name}")
