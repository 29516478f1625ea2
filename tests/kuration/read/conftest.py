"""A quickstart dataset written by the real pipeline in every built-in container."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

CONTAINERS = ("npz", "json", "hdf5", "parquet")


@pytest.fixture(scope="session")
def quick(tmp_path_factory: pytest.TempPathFactory, job_b: dict) -> dict[str, Path]:
    """``quick[container]``: the shipped job on four real sources (0.5 h train, 0.1 h test)
    written as that container; all four hold the same shards."""
    from kuration import run_job

    root = tmp_path_factory.mktemp("quick")
    out = {}
    for name in CONTAINERS:
        job = json.loads(json.dumps(job_b))
        job["output"]["container"] = name
        out[name] = run_job(job, root / name).path
    return out
