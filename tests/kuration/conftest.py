"""Fixtures for the output layer: small jobs on the real ADS-B sources and committed datasets."""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

SKIP_DIGEST = {"config.json", "dataset.commit.json", ".kuration-writer.lock"}


def _digests(root: Path, skip: set[str] = SKIP_DIGEST) -> dict[str, str]:
    """SHA-256 of every file under ``root`` except run-specific metadata (timestamps)."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name not in skip
    }


def _all_bytes(root: Path) -> dict[str, bytes]:
    """Every published file's bytes: all but the writer lock (its content is the holder's
    pid), temp files and the staging area a killed or failed writer left behind (never
    read by readers, reused or removed by the next run)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
        and p.name != ".kuration-writer.lock"
        and ".tmp-" not in p.name
        and ".kuration_staging" not in p.parts
    }


@pytest.fixture(scope="session")
def digests() -> Callable[..., dict[str, str]]:
    """``digests(root)``: SHA-256 per file, leaving out config, commit and lock (timestamps)."""
    return _digests


@pytest.fixture(scope="session")
def all_bytes() -> Callable[[Path], dict[str, bytes]]:
    """``all_bytes(root)``: every published file's bytes (no lock, no temp files)."""
    return _all_bytes


def _quiet_run(job: dict[str, Any], out: Path) -> Any:
    """``run_job`` for the session fixtures: their 0.1 h test split filled with whole
    15-minute tracks overshoots on purpose, so the overshoot warning is expected here."""
    from kuration import run_job
    from kuration.errors import BudgetGranularityWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetGranularityWarning)
        return run_job(job, out)


@pytest.fixture(scope="session")
def job_b(adsb_job_dict: dict, adsb_sources: list[Path]) -> dict[str, Any]:
    """The example job on four real sources, 0.5 h train and 0.1 h test."""
    job = json.loads(json.dumps(adsb_job_dict))
    job["sources"] = [str(p) for p in adsb_sources[:4]]
    job["budget"] = {"train_hours": 0.5, "test_hours": 0.1}
    return job


@pytest.fixture(scope="session")
def job_a(job_b: dict) -> dict[str, Any]:
    """A different run over the same sources (other shard length): the 'previous generation'."""
    job = json.loads(json.dumps(job_b))
    job["output"]["shard_length"] = 100
    return job


@pytest.fixture(scope="session")
def base_b(tmp_path_factory: pytest.TempPathFactory, job_b: dict):
    """An uninterrupted run of ``job_b``."""
    return _quiet_run(job_b, tmp_path_factory.mktemp("base") / "b")


@pytest.fixture(scope="session")
def gen_a(tmp_path_factory: pytest.TempPathFactory, job_a: dict):
    """A committed dataset of ``job_a``."""
    return _quiet_run(job_a, tmp_path_factory.mktemp("gen") / "a")


QUICK_CONTAINERS = ("npz", "json", "hdf5", "parquet")


@pytest.fixture(scope="session")
def quick(tmp_path_factory: pytest.TempPathFactory, job_b: dict) -> dict[str, Path]:
    """``quick[container]``: the shipped job on four real sources (0.5 h train, 0.1 h test)
    written as that container; all four hold the same shards."""
    root = tmp_path_factory.mktemp("quick")
    out = {}
    for name in QUICK_CONTAINERS:
        job = json.loads(json.dumps(job_b))
        job["output"]["container"] = name
        out[name] = _quiet_run(job, root / name).path
    return out


@pytest.fixture(scope="session")
def s3_endpoint() -> Any:
    """A real S3 server (moto's, on loopback, a free port) for the whole session."""
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def s3_bucket(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch, request: Any) -> str:
    """``s3://<bucket>`` of a fresh bucket on the loopback server; dummy credentials and
    the endpoint (``KURATION_STORAGE_OPTIONS``) are set in the environment, so child
    processes (``kur run``) reach it too."""
    import re
    import uuid

    import s3fs

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    opts = {"client_kwargs": {"endpoint_url": s3_endpoint}}
    monkeypatch.setenv("KURATION_STORAGE_OPTIONS", json.dumps({"s3": opts}))
    name = re.sub(r"[^a-z0-9]", "-", request.node.name.lower())[:40].strip("-")
    bucket = f"{name}-{uuid.uuid4().hex[:8]}"
    s3fs.S3FileSystem(**opts).mkdir(bucket)
    return f"s3://{bucket}"
