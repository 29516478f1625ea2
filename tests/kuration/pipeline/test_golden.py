"""Golden artifacts: the hours path writes byte-identical shards and manifests.

The values were first taken at commit b7e8b07 (the starting commit of
issue 12's hours rewiring, before ``write_dataset`` was split into named
steps) by running each job below with ``kuration.run_job`` from a worktree of
that commit (``PYTHONPATH=<worktree>/src``), and the refactor reproduced them.
They were retaken once, on purpose, when every shard gained the reserved
``_time_s``/``_entity`` arrays and the manifest a unit per modality (issue 17);
file counts did not change.  The hash is SHA-256 over the JSON list of sorted
``(relative path, sha256)`` pairs of every shard file under ``train/`` and
``test/`` plus ``dataset_manifest.json`` (``config.json``,
``dataset.commit.json``, the lock and the ``.kuration_*`` marker carry
timestamps, pids or versions and are left out).

The quickstart job runs once as shipped and once per strategy under
``examples/adsb_quickstart/strategies/`` substituted for its own; every one
of them is an hours job (``budget``), so each goes through the hours path.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from kuration import run_job

ROOT = Path(__file__).resolve().parents[3]
QS = ROOT / "examples" / "adsb_quickstart"
FOOTBALL = ROOT / "examples" / "football"

GOLDEN = {
    "balanced-hours": (
        "d4b80e5fb396d103a0aaa932251a7c01339c9f0d5185032e6087150ba5ba2d4a",
        166,
    ),
    "facility-location": (
        "cd4e89487c9dc6a3b1a35bc609b293619b8deb73f4ddb403604f445bdb951dfb",
        177,
    ),
    "filter": (
        "e69dd112f441a06b9a4e9aeefbf5f1a16d4d3d5618e81afe327ec4c92f32dda9",
        170,
    ),
    "importance": (
        "f3f00388cde62fe35595541ebdfb4b01a422a71a2b07ad7022b3617b0159446e",
        172,
    ),
    "job": (
        "3157bfda48185ec161ef9a51941f640bfc02400ffd540d5138bdabeb982ac1f8",
        176,
    ),
    "k-center": (
        "24072aa76b5db38379a51330836e6c1723fadf77d19bf73176e31f00804373e3",
        171,
    ),
    "target-distribution": (
        "de187459eb621f2fd6072fd6d6bc25eaa8dc27b5cd7c8dda7bf5dac1ff7babf2",
        164,
    ),
    "top-k": (
        "09112698c65dafe9de803943562033d846cfa3960002f39f26aed57cfa832342",
        174,
    ),
    "uniform-bins": (
        "3d8c0ef48af034d08f81a6e57288721d551941c5f97cc0200315e3aff7771c9d",
        173,
    ),
    "weighted": (
        "891e9db5a6d28bc91d8551fc50dc0b627d76d14c642df635693ca01479895bb9",
        172,
    ),
}
FOOTBALL_GOLDEN = ("e11177959545200fbb7c51b83239afa1e6f47335311f799987daee95d61ecd28", 351)


def artifact_hash(out: Path) -> tuple[str, int]:
    """SHA-256 of the sorted (path, sha256) list of the shards and the manifest; file count."""
    rows = []
    for p in sorted(out.rglob("*")):
        rel = p.relative_to(out).as_posix()
        if p.is_file() and (rel == "dataset_manifest.json" or rel.split("/")[0] in SPLIT_DIRS):
            rows.append((rel, hashlib.sha256(p.read_bytes()).hexdigest()))
    return hashlib.sha256(json.dumps(sorted(rows)).encode()).hexdigest(), len(rows)


SPLIT_DIRS = ("train", "test")


def quickstart_job(strategy: str) -> dict:
    job = json.loads((QS / "job.json").read_text())
    if strategy != "job":
        job["strategy"] = str(QS / "strategies" / f"{strategy}.json")
    for key in ("schema", "output", "strategy"):
        job[key] = str(QS / job[key])
    return job


def test_every_quickstart_strategy_is_covered() -> None:
    assert sorted(GOLDEN) == sorted(["job", *(p.stem for p in (QS / "strategies").glob("*.json"))])


@pytest.mark.slow
@pytest.mark.parametrize("strategy", sorted(GOLDEN))
def test_quickstart_golden(strategy: str, tmp_path: Path) -> None:
    job = quickstart_job(strategy)
    assert "budget" in job  # the hours path
    run_job(job, tmp_path / "out")
    assert artifact_hash(tmp_path / "out") == GOLDEN[strategy]


@pytest.mark.slow
def test_football_golden(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # the same session registry as tests/kuration/sources/test_timenet_adapter.py: built once
    reg = tmp_path_factory.getbasetemp() / "tn-session-registry"
    monkeypatch.setenv("TIMENET_REGISTRY", str(reg))
    run_job(FOOTBALL / "job.json", tmp_path / "fb")
    assert artifact_hash(tmp_path / "fb") == FOOTBALL_GOLDEN
