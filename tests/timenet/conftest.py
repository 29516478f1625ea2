"""Shared fixtures for the timenet tests: small datasets and a loopback S3 server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tn_helpers import write_demo


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    """Committed demo version; returns its directory (registry root is tmp_path/'reg')."""
    return write_demo(tmp_path / "reg")


@pytest.fixture(scope="session")
def session_registry(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One registry per test session (``<basetemp>/tn-session-registry``) into which the
    connector tests build the shipped datasets, each once (download cache reused)."""
    return tmp_path_factory.getbasetemp() / "tn-session-registry"


@pytest.fixture(scope="session")
def s3_endpoint() -> Any:
    """A moto S3 server on loopback, for the whole session."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def s3(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Dummy credentials plus a fresh bucket; returns fsspec storage options and bucket name."""
    import uuid

    import s3fs

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    opts = {"client_kwargs": {"endpoint_url": s3_endpoint}, "skip_instance_cache": True}
    bucket = f"tn-{uuid.uuid4().hex[:10]}"
    s3fs.S3FileSystem(**opts).mkdir(bucket)
    return {"storage_options": opts, "bucket": bucket}
