"""Golden artifacts: the hours path writes byte-identical shards and manifests.

The values were taken at commit b7e8b07 (the starting commit of issue 12's
hours rewiring, before ``write_dataset`` was split into named steps) by
running each job below with ``kuration.run_job`` from a worktree of that
commit (``PYTHONPATH=<worktree>/src``), and checked equal at the branch's
HEAD before the refactor.  The hash is SHA-256 over the JSON list of sorted
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
    "job": ("99f4f97347188361394bb77cfa6f05a431585d60b61e1e2315073b473f185909", 176),
    "balanced-hours": ("623c68b140efdef4dbd12abea0ef1a15e9a770c0b0f24d1f19d30e0fbbe1fc4d", 166),
    "facility-location": (
        "83ad94268c7dc300096056586131434842bf45b6c8144be891f1dec1a86994ea",
        177,
    ),
    "filter": ("44efe6f624ebc920d11cd7ee8230e063a73a604174c4a23fce5a15f4271513c8", 170),
    "importance": ("41a757c74c2c386b4bed73fbcfe3e33c82b47879a023163c52986179f2c2e806", 172),
    "k-center": ("391ae96681cac0bfa5561b65d406a267c268a6e184b1b0bc7fc683ea8c88b8ce", 171),
    "target-distribution": (
        "3b6e92c82dd0cdf567d09e7dad679a70525cd8225639ce5ac814272140263bf9",
        164,
    ),
    "top-k": ("2d9c08711955d33c6f56d3c0c4a5ef144dbb6079f54b8966d34b9ddc25228120", 174),
    "uniform-bins": ("a3dc65d298a36bc275bfd6e591140ed3cec5c3a8a7fbdf7dd9538ed7b50f7ab3", 173),
    "weighted": ("180fa43af677c18f2dfaadf7c5db68a872e7e77d2ec9b4a0cdb9b3f80442d52e", 172),
}
FOOTBALL_GOLDEN = ("6f56c48c4e4e51302330cd3e264ea3a6bb3f273857bb1f15099df74e92684544", 351)


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
