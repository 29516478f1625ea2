"""A multi-node Ray run: two Ray nodes on this machine (``ray start --block``, the second
joined to the first, one CPU each, loopback only, inside the network namespace of
tests/ray_netns.py), one ``kur run --executor ray --ray-address`` whose source tasks run on
both nodes, recorded per node in config.json; its artifact is the local run's.  Both nodes
are stopped by the pids of the processes started here."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.ray_nodes import start_two_nodes, stop_nodes

from kuration.pipeline.spec.job import load_job
from kuration.tools.diff import compare_datasets

pytestmark = pytest.mark.ray

ROOT = Path(__file__).resolve().parents[3]
JOB = ROOT / "examples" / "adsb_quickstart" / "job.json"


@pytest.fixture
def two_nodes(tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    address, env, procs = start_two_nodes(tmp_path / "cluster")
    try:
        yield address, env
    finally:
        stop_nodes(env, procs)


def _kur(args: list[str], env: dict[str, str]) -> None:
    kur = str(Path(sys.executable).with_name("kur"))
    run = subprocess.run(
        [kur, *args], env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert run.returncode == 0, f"stdout:\n{run.stdout}\nstderr:\n{run.stderr}"


@pytest.mark.slow
def test_a_run_on_two_ray_nodes_uses_both_and_matches_a_local_run(
    two_nodes: tuple[str, dict[str, str]], tmp_path: Path, adsb_sources: list[Path]
) -> None:
    address, env = two_nodes
    job, _ = load_job(JOB)
    job["sources"] = [str(p) for p in adsb_sources[:6]]
    job["budget"] = {"train_hours": 1.0, "test_hours": 0.5}
    (tmp_path / "job.json").write_text(json.dumps(job))
    run = ["run", str(tmp_path / "job.json"), "--out"]
    _kur([*run, str(tmp_path / "local")], env)
    ray = ["--executor", "ray", "--workers", "2", "--ray-address", address]
    _kur([*run, str(tmp_path / "ray"), *ray], env)
    config = json.loads((tmp_path / "ray" / "config.json").read_text())
    execution = config["provenance"]["execution"]
    nodes = execution["nodes"]
    assert len(nodes) == 2, nodes  # both nodes ran tasks
    tel = {t["stage"]: t for t in execution["telemetry"]}
    assert sum(n["tasks"] for n in nodes.values()) >= 6
    for stats in nodes.values():
        assert stats["tasks"] >= 1 and stats["wall_s"] > 0 and stats["cpu_s"] > 0
    assert tel["read+segment+features"]["executor"] == "ray"
    res = compare_datasets(tmp_path / "local", tmp_path / "ray")
    assert res["identical"] and not res["changes"], res["changes"]
    assert "provenance.execution.mode" in {c["path"] for c in res["provenance"]}
