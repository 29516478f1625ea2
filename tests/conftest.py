"""Shared fixtures: the real ADS-B sample (traffic==2.13, OpenSky data, MIT) and its example job."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "adsb_quickstart"


@pytest.fixture(scope="session")
def adsb_sources(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The quickstart sample cut into 15-minute Parquet sources (wheel cached in ~/.cache/kuration)."""
    from kuration.sources.samples import build_adsb_sources

    return build_adsb_sources(tmp_path_factory.mktemp("adsb-sources"), slice_minutes=15)


@pytest.fixture(scope="session")
def adsb_job_dict() -> dict:
    """The shipped example job with every part inlined."""
    from kuration.pipeline.job import load_job

    job, _ = load_job(EXAMPLE / "job.json")
    return job


@pytest.fixture(scope="session")
def adsb_schema(adsb_job_dict: dict):
    from kuration import SchemaSpec

    return SchemaSpec.from_dict(adsb_job_dict["schema"])


@pytest.fixture(scope="session")
def adsb_adapter(adsb_job_dict: dict, adsb_schema):
    from kuration.sources import adapter_from_dict

    return adapter_from_dict(adsb_job_dict["adapter"], adsb_schema)


@pytest.fixture
def small_job(adsb_job_dict: dict, adsb_sources: list[Path]) -> dict:
    """The example job on four real sources with small budgets (fast)."""
    job = json.loads(json.dumps(adsb_job_dict))
    job["sources"] = [str(p) for p in adsb_sources[:4]]
    job["budget"] = {"train_hours": 1.0, "test_hours": 0.25}
    return job
