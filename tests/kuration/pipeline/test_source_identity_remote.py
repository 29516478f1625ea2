"""Remote sources and reuse: only a strong identity authorizes it, and reads are pinned.

An HTTP server on loopback (Python's ``http.server``) serves the sources with or
without an ``ETag``; the moto S3 server (conftest) holds them as objects.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import shutil
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kuration import run_job
from kuration.errors import BudgetGranularityWarning, SourceChangedError


def _run(job: dict[str, Any], out: Path, **kw: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetGranularityWarning)
        return run_job(job, out, **kw)


def _tag(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()[:32] if p.is_file() else ""


def _serve(
    folder: Path,
    etag: bool,
    seen: list[tuple[str, str, int]] | None = None,
    before_get: Callable[[], None] | None = None,
) -> tuple[http.server.ThreadingHTTPServer, str]:
    """Serve ``folder``; with ``etag``, each file's ETag, and ``If-Match`` is honoured
    (412 on a mismatch); ``seen`` collects (method, If-Match, status) of each request;
    ``before_get`` runs when a GET arrives, before it is answered (so a change "between the
    HEAD and the GET" does not race the client's next request)."""

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a: Any, **kw: Any) -> None:
            super().__init__(*a, directory=str(folder), **kw)

        def send_head(self) -> Any:
            if self.command == "GET" and before_get is not None:
                before_get()
            match = self.headers.get("If-Match")
            if etag and match and match != f'"{_tag(folder / self.path.lstrip("/"))}"':
                self.send_error(412)
                return None
            return super().send_head()

        def send_response(self, code: int, message: str | None = None) -> None:
            if seen is not None:
                seen.append((self.command, self.headers.get("If-Match", ""), code))
            super().send_response(code, message)

        def end_headers(self) -> None:
            if (
                etag
                and self.command in ("GET", "HEAD")
                and (tag := _tag(folder / self.path.lstrip("/")))
            ):
                self.send_header("ETag", f'"{tag}"')
            super().end_headers()

        def log_message(self, *a: Any) -> None:  # quiet
            pass

    class Server(http.server.ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request: Any, client_address: Any) -> None:
            pass  # a client that hangs up early (fsspec's range reads) is not a test failure

    server = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


@pytest.fixture
def http_sources(
    adsb_sources: list[Path], adsb_job_dict: dict, tmp_path: Path, request: Any
) -> Iterator[tuple[dict, list[Path]]]:
    folder = tmp_path / "served"
    folder.mkdir()
    paths = [Path(shutil.copy(p, folder)) for p in adsb_sources[:4]]
    server, base = _serve(folder, etag=request.param)
    job = json.loads(json.dumps(adsb_job_dict))
    job["sources"] = [f"{base}/{p.name}" for p in paths]
    job["budget"] = {"train_hours": 0.5, "test_hours": 0.1}
    yield job, paths
    server.shutdown()
    server.server_close()


def _swap_two(paths: list[Path]) -> None:
    """Change the served sources in place (same names): two files exchange their bytes."""
    a, b = paths[0].read_bytes(), paths[1].read_bytes()
    paths[0].write_bytes(b)
    paths[1].write_bytes(a)


def _shards(root: Path) -> dict[str, str]:
    man = json.loads((root / "dataset_manifest.json").read_text())
    return {s["path"]: s["sha256"] for s in man["shards"]}


@pytest.mark.parametrize("http_sources", [False], indirect=True, ids=["no-etag"])
def test_disk_checkpoints_of_a_source_without_identity_are_never_reused(
    http_sources: tuple[dict, list[Path]], tmp_path: Path
) -> None:
    job, paths = http_sources
    ck = str(tmp_path / "ck")
    first = _run(job, tmp_path / "one", pool="disk", checkpoint_dir=ck)
    assert any(w.startswith("no strong source identity") for w in first.config["warnings"])
    _swap_two(paths)  # changed in place: nothing but the bytes says so
    again = _run(job, tmp_path / "two", pool="disk", checkpoint_dir=ck)
    fresh = _run(job, tmp_path / "fresh", pool="disk")
    assert _shards(again.path) == _shards(fresh.path) != _shards(first.path)
    score = {t.stage: t for t in again.telemetry}["read+segment+features"]
    assert score.checkpoint_hits == 0
    assert any(w.startswith("no strong source identity") for w in again.config["warnings"])


@pytest.mark.parametrize("http_sources", [True], indirect=True, ids=["etag"])
def test_disk_checkpoints_of_a_source_with_an_etag_are_reused(
    http_sources: tuple[dict, list[Path]], tmp_path: Path
) -> None:
    job, _ = http_sources
    ck = str(tmp_path / "ck")
    first = _run(job, tmp_path / "one", pool="disk", checkpoint_dir=ck)
    again = _run(job, tmp_path / "two", pool="disk", checkpoint_dir=ck)
    score = {t.stage: t for t in again.telemetry}["read+segment+features"]
    assert score.checkpoint_hits == len(job["sources"])
    assert _shards(again.path) == _shards(first.path)
    assert not any(w.startswith("no strong source identity") for w in again.config["warnings"])


@pytest.mark.parametrize("http_sources", [False], indirect=True, ids=["no-etag"])
def test_an_http_source_changed_before_the_stage_fails_without_an_etag_too(
    http_sources: tuple[dict, list[Path]], tmp_path: Path
) -> None:
    job, paths = http_sources
    old = [hashlib.sha256(p.read_bytes()).hexdigest() for p in paths]

    def cb(event: dict) -> None:
        if event["phase"] == "writing" and event["event"] == "start":
            _swap_two(paths)

    with pytest.raises(SourceChangedError) as info:
        _run(job, tmp_path / "out", progress=cb)
    assert info.value.expected in old[:2] and info.value.actual in old[:2]
    assert not (tmp_path / "out" / "dataset_manifest.json").exists()


def _upload(fs: Any, bucket: str, paths: list[Path]) -> list[str]:
    urls = []
    for p in paths:
        key = f"{bucket.removeprefix('s3://')}/src/{p.name}"
        fs.put_file(str(p), key)
        urls.append(f"s3://{key}")
    return urls


@pytest.mark.parametrize("versioned", [False, True], ids=["etag", "version"])
def test_an_s3_source_overwritten_before_the_stage(
    s3_bucket: str,
    adsb_sources: list[Path],
    adsb_job_dict: dict,
    tmp_path: Path,
    versioned: bool,
    digests: Callable[..., dict[str, str]],
) -> None:
    """An ETag-pinned read fails on the new object; a version-pinned one still reads the
    version the run fingerprinted, so the run ends as if nothing had changed."""
    import os

    import s3fs

    opts = json.loads(os.environ["KURATION_STORAGE_OPTIONS"])["s3"]
    fs = s3fs.S3FileSystem(**opts)
    if versioned:
        fs.make_bucket_versioned(s3_bucket.removeprefix("s3://"))
    urls = _upload(fs, s3_bucket, adsb_sources[:4])
    job = json.loads(json.dumps(adsb_job_dict))
    job["sources"] = urls
    job["budget"] = {"train_hours": 0.5, "test_hours": 0.1}
    calm = _run(job, tmp_path / "calm")
    shards = json.loads((calm.path / "dataset_manifest.json").read_text())["shards"]
    victim = next(
        u for u in sorted(urls) if any(u.endswith(f"/{s['source_id']}.parquet") for s in shards)
    )

    def cb(event: dict) -> None:
        if event["phase"] == "writing" and event["event"] == "start":
            fs.pipe_file(victim.removeprefix("s3://"), adsb_sources[5].read_bytes())

    if versioned:
        res = _run(job, tmp_path / "out", progress=cb)
        assert digests(res.path) == digests(calm.path)
        return
    before = calm.config["pipeline"]["sources"]
    want = next(s["sha256"] for s in before if victim.endswith(f"/{s['source_id']}.parquet"))
    with pytest.raises(SourceChangedError) as info:
        _run(job, tmp_path / "out", progress=cb)
    assert info.value.expected == want and want.startswith("etag:")
    assert info.value.actual.startswith("etag:") and info.value.actual != want
    assert not (tmp_path / "out" / "dataset_manifest.json").exists()


@pytest.mark.parametrize("http_sources", [False], indirect=True, ids=["no-etag"])
def test_a_memory_budget_that_needs_checkpoints_names_the_identity_it_lacks(
    http_sources: tuple[dict, list[Path]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kuration import Pipeline
    from kuration.errors import MemoryBudgetError
    from kuration.pipeline.disk import pool as disk_pool
    from kuration.pipeline.spec.budget import estimate_peak

    job, _ = http_sources
    p = Pipeline.from_job(job)
    est = estimate_peak(p.run_spec(), job["sources"])
    monkeypatch.setattr(disk_pool, "INDEX_MEMORY_MIN", est.parts["pool"] // 2)
    with pytest.raises(MemoryBudgetError, match="no strong identity") as info:
        p.options(memory_budget=est.in_memory - 1).write(tmp_path / "out")
    assert job["sources"][0] in str(info.value)
    assert not (tmp_path / "out" / "dataset_manifest.json").exists()


def test_a_remote_destination_keeps_its_dataset_when_a_source_changes(
    s3_bucket: str, adsb_sources: list[Path], adsb_job_dict: dict, tmp_path: Path
) -> None:
    import os

    import s3fs

    folder = tmp_path / "src"
    folder.mkdir()
    paths = [Path(shutil.copy(p, folder)) for p in adsb_sources[:4]]
    job = json.loads(json.dumps(adsb_job_dict))
    job["sources"] = [str(p) for p in paths]
    job["budget"] = {"train_hours": 0.5, "test_hours": 0.1}
    url = f"{s3_bucket}/ds"
    first = _run(job, url)
    fs = s3fs.S3FileSystem(**json.loads(os.environ["KURATION_STORAGE_OPTIONS"])["s3"])
    root = url.removeprefix("s3://")

    def published() -> dict[str, str]:
        fs.invalidate_cache()
        found = fs.find(root, detail=True)
        return {k: v["ETag"] for k, v in found.items() if ".kuration_staging" not in k}

    before = published()
    ids = {s["source_id"] for s in first.manifest["shards"]}
    victim = next(p for p in sorted(paths) if p.stem in ids)

    def cb(event: dict) -> None:
        if event["phase"] == "writing" and event["event"] == "start":
            victim.write_bytes(adsb_sources[5].read_bytes())

    with pytest.raises(SourceChangedError):
        _run(job, url, force=True, progress=cb)
    assert published() == before


@pytest.mark.parametrize("http_sources", [False], indirect=True, ids=["no-etag"])
def test_kur_run_says_which_checkpoints_cannot_be_reused(
    http_sources: tuple[dict, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kuration.cli.main import main

    job, _ = http_sources
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    args = ["run", str(path), "--out", str(tmp_path / "out"), "--pool", "disk"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetGranularityWarning)
        assert main([*args, "--checkpoint-dir", str(tmp_path / "ck")]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "no strong source identity: 4 source(s)" in out and job["sources"][0] in out


@pytest.mark.parametrize("http_sources", [False], indirect=True, ids=["no-etag"])
def test_kur_curate_on_the_disk_pool_reuses_nothing_without_identity(
    http_sources: tuple[dict, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kuration.cli.main import main

    job, paths = http_sources
    examples = Path(__file__).resolve().parents[3] / "examples" / "adsb_quickstart"
    job = {**job, "strategy": json.loads((examples / "strategies" / "top-k.json").read_text())}
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    args = ["curate", str(path), "--n", "4", "--pool", "disk", "--checkpoint-dir"]
    ck = str(tmp_path / "ck")
    assert main([*args, ck, "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    _swap_two(paths)
    assert main([*args, ck, "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["checkpoint"]["hits"] == 0
    assert again["checkpoint"]["unidentified"] == sorted(job["sources"])
    assert again["selected"] != first["selected"]  # the new bytes, not the old partitions
    assert main([*args, ck]) == 0
    assert "no strong source identity: 4 sources" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("versioned", [False, True], ids=["plain", "versioned"])
def test_a_gcs_source_overwritten_before_the_stage(
    gs_bucket: str,
    adsb_sources: list[Path],
    adsb_job_dict: dict,
    tmp_path: Path,
    versioned: bool,
    digests: Callable[..., dict[str, str]],
) -> None:
    """The read is pinned to the generation the run fingerprinted (fake-gcs-server on
    loopback): a bucket that keeps old generations still yields them; one that does not
    fails the run naming both generations, and publishes nothing."""
    import os

    from gcsfs import GCSFileSystem

    opts = json.loads(os.environ["KURATION_STORAGE_OPTIONS"])["gs"]
    fs = GCSFileSystem(**opts)
    bucket = gs_bucket.removeprefix("gs://")
    if versioned:
        bucket += "-v"
        fs.mkdir(bucket, enable_versioning=True)
    urls = []
    for p in adsb_sources[:4]:
        fs.put_file(str(p), f"{bucket}/src/{p.name}")
        urls.append(f"gs://{bucket}/src/{p.name}")
    job = json.loads(json.dumps(adsb_job_dict))
    job["sources"] = urls
    job["budget"] = {"train_hours": 0.5, "test_hours": 0.1}
    calm = _run(job, tmp_path / "calm")
    shards = json.loads((calm.path / "dataset_manifest.json").read_text())["shards"]
    victim = next(
        u for u in sorted(urls) if any(u.endswith(f"/{s['source_id']}.parquet") for s in shards)
    )
    before = calm.config["pipeline"]["sources"]
    want = next(s["sha256"] for s in before if victim.endswith(f"/{s['source_id']}.parquet"))
    assert want.startswith("version:")

    def cb(event: dict) -> None:
        if event["phase"] == "writing" and event["event"] == "start":
            fs.pipe_file(victim.removeprefix("gs://"), adsb_sources[5].read_bytes())

    if versioned:
        res = _run(job, tmp_path / "out", progress=cb)
        assert digests(res.path) == digests(calm.path)
        return
    with pytest.raises(SourceChangedError) as info:
        _run(job, tmp_path / "out", progress=cb)
    assert info.value.expected == want
    assert info.value.actual.startswith("version:") and info.value.actual != want
    assert victim in str(info.value)
    assert not (tmp_path / "out" / "dataset_manifest.json").exists()


def test_an_http_read_sends_if_match_and_a_replaced_object_fails(
    adsb_sources: list[Path], tmp_path: Path
) -> None:
    """The ETag the read was pinned to goes out as ``If-Match``; the server refuses (412)
    the object replaced since, and the error names both identities."""
    from kuration.core.remote import read_remote, remote_identity

    folder = tmp_path / "served"
    folder.mkdir()
    p = Path(shutil.copy(adsb_sources[0], folder))
    seen: list[tuple[str, str, int]] = []
    swap: list[bytes] = []
    server, base = _serve(folder, True, seen, lambda: swap and p.write_bytes(swap.pop()))
    try:
        url = f"{base}/{p.name}"
        pin = remote_identity(url)
        data, ident = read_remote(url, pin=pin)
        assert data == p.read_bytes() and ident == pin == f"etag:{_tag(p)}"
        assert ("GET", f'"{_tag(p)}"', 200) in seen
        swap.append(adsb_sources[1].read_bytes())  # replaced between the HEAD and the GET
        with pytest.raises(SourceChangedError) as info:
            read_remote(url)
        assert (info.value.expected, info.value.actual) == (pin, f"etag:{_tag(p)}")
        assert ("GET", f'"{pin.removeprefix("etag:")}"', 412) in seen
    finally:
        server.shutdown()
        server.server_close()
