"""Budgets made loud on the real ADS-B sources: a starving group cap, empty and under-filled splits.

The shipped strategy caps every source (its own group) at ``1.5 x budget / n_groups``.
Replicating the 12 quickstart sources (distinct entity ids per copy) multiplies the
groups; with 24 sources and 0.25 h of train, ~19 train groups share 900 s, a cap of
~71 s, and the shortest candidate is 121 s (``min_track_seconds`` is 120): nothing fits.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from kuration import run_job
from kuration.core.jsonio import loads_strict
from kuration.errors import EmptySplitError, GroupCapError

# small budgets filled with whole 15-minute tracks overshoot their request on purpose here
pytestmark = pytest.mark.filterwarnings("ignore::kuration.errors.BudgetGranularityWarning")

BIN = Path(sys.executable).parent


def _replicate(sources: list[Path], copies: int, out: Path) -> list[Path]:
    """``copies`` copies of each source, the entity ids suffixed per copy so none collide."""
    out.mkdir()
    made = []
    for src in sources:
        t = pq.read_table(src)
        col = t.schema.get_field_index("icao24")
        for k in range(copies):
            ids = pc.binary_join_element_wise(t.column(col), pa.scalar(f"c{k}"), "-")
            dst = out / f"{src.stem}_c{k}.parquet"
            pq.write_table(t.set_column(col, "icao24", ids), dst)
            made.append(dst)
    return made


@pytest.fixture(scope="module")
def many_job(tmp_path_factory, adsb_job_dict: dict, adsb_sources: list[Path]) -> dict:
    copies = _replicate(adsb_sources, 2, tmp_path_factory.mktemp("many") / "src")
    job = json.loads(json.dumps(adsb_job_dict))
    job["sources"] = {"glob": str(copies[0].parent / "*.parquet")}
    job["budget"] = {"train_hours": 0.25, "test_hours": 0.0625}
    return job


def test_a_cap_shorter_than_every_track_fails_before_writing(many_job: dict, tmp_path: Path):
    out = tmp_path / "out"
    with pytest.raises(GroupCapError) as info:
        run_job(many_job, out)
    err = info.value
    assert err.split == "train" and err.requested_s == 900.0
    # the cap is the spec's rule, recomputed here from the error's own group count
    assert err.cap_s == pytest.approx(1.5 * 900.0 / err.n_groups)
    assert err.n_groups > 12 and err.cap_s < 120 < err.shortest_s
    msg = str(err)
    assert f"{err.cap_s:.1f} s" in msg and f"{err.shortest_s:g} s" in msg
    for way_out in ("max_group_overshoot", "group_of", "span_seconds"):
        assert way_out in msg
    assert not out.exists()  # planning failed: not even the lease is left


def test_a_failed_plan_leaves_an_existing_empty_folder_empty(many_job: dict, tmp_path: Path):
    out = tmp_path / "empty"
    out.mkdir()
    with pytest.raises(GroupCapError):
        run_job(many_job, out)
    assert list(out.iterdir()) == []  # no .kuration-writer.lock either


def test_relaxing_the_cap_writes_the_full_budget(many_job: dict, tmp_path: Path):
    job = {**many_job, "max_group_overshoot": 10.0}
    res = run_job(job, tmp_path / "out")
    for split, hours in (("train", 0.25), ("test", 0.0625)):
        b = res.config["results"]["budget"][split]
        assert b["emitted_s"] >= hours * 3600 and b["underfill_s"] == 0
        assert b["binding"] is None and b["group_cap_starved"] < b["groups"]


def test_a_split_that_would_end_empty_fails_unless_allowed(
    small_job: dict, adsb_sources: list[Path], tmp_path: Path
):
    job = {**small_job, "sources": [str(adsb_sources[0])]}  # one source: all of it is train
    with pytest.raises(EmptySplitError, match="split 'test'.*allow_empty_split") as info:
        run_job(job, tmp_path / "refused")
    assert info.value.binding == "pool size" and "no source" in str(info.value)
    assert not (tmp_path / "refused").exists()
    res = run_job({**job, "allow_empty_split": True}, tmp_path / "allowed")
    b = res.config["results"]["budget"]["test"]
    assert res.manifest["splits"]["test"]["shards"] == 0 and b["binding"] == "pool size"
    assert res.config["pipeline"]["allow_empty_split"] is True
    assert any(w.startswith("test under-filled: pool size") for w in res.config["warnings"])


def test_allow_empty_split_must_be_a_boolean(small_job: dict, tmp_path: Path):
    from kuration.errors import JobError

    with pytest.raises(JobError, match="allow_empty_split"):
        run_job({**small_job, "allow_empty_split": "yes"}, tmp_path / "out")


@pytest.mark.slow  # two CLI processes, ~6 s
def test_an_underfilled_split_exits_0_and_names_its_binding_constraint(
    small_job: dict, adsb_sources: list[Path], tmp_path: Path
):
    # two sources cannot fill 40 h of train: the pool size binds
    job = {**small_job, "sources": [str(p) for p in adsb_sources[:2]]}
    job["budget"] = {"train_hours": 40.0, "test_hours": 0.0}
    job["max_group_overshoot"] = 100.0
    (tmp_path / "job.json").write_text(json.dumps(job))
    out = tmp_path / "out"
    run = subprocess.run(
        [BIN / "kur", "run", tmp_path / "job.json", "--out", out],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert "train under-filled, binding constraint: pool size" in " ".join(run.stdout.split())
    cfg = loads_strict((out / "config.json").read_bytes(), what="config.json")
    b = cfg["results"]["budget"]["train"]
    assert b["binding"] == "pool size" and b["emitted_s"] < 40 * 3600
    assert cfg["results"]["budget"]["test"]["binding"] is None  # nothing requested
    policy = tmp_path / "policy.json"
    policy.write_text('{"min_budget_utilization": 0.9}')
    check = subprocess.run(
        [BIN / "kur", "check", out, "--policy", policy], capture_output=True, text=True, check=False
    )
    assert check.returncode == 2
    assert "budget_utilization[train]" in check.stdout and "binding constraint: pool size" in (
        check.stdout
    )
    assert "NOTE  train under-filled, binding constraint: pool size" in check.stdout


def test_the_baseline_is_this_programs_own_peak_not_its_parents() -> None:
    """``ru_maxrss`` survives ``fork`` + ``execve``: a ``kur run`` started by a 2 GB test
    runner measured a 2 GB baseline and refused a 2 GB budget it fits in (README's streaming
    example, inside the full suite)."""
    import subprocess
    import sys

    import numpy as np

    ballast = np.ones(400 * 2**20 // 8)  # 400 MiB resident in this process
    ballast += 1.0
    code = "from kuration.pipeline.spec.budget import peak_rss_bytes; print(peak_rss_bytes())"
    # bash forks (a copy of this process's map), then execs python: the case kur meets
    out = subprocess.run(
        ["bash", "-c", f"{sys.executable} -c '{code}'"], capture_output=True, text=True, check=True
    )
    assert int(out.stdout) < 300 * 2**20, out.stdout
    assert ballast[0] == 2.0
