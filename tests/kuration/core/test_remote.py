"""URL policy of remote data (kuration.core.remote): which schemes are read and written,
storage options from the environment, object identity, a clear error per refusal."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from kuration import open_dataset, run_job
from kuration.cli.main import main as cli_main
from kuration.core.remote import (
    is_url,
    local_path,
    object_identity,
    open_url,
    storage_options,
    url_scheme,
)
from kuration.errors import MissingExtraError, UnsupportedURLError


def test_local_paths_and_file_urls_are_not_remote(tmp_path: Path) -> None:
    assert not is_url(tmp_path) and not is_url(str(tmp_path)) and not is_url("runs/b")
    assert not is_url("file:///tmp/x") and url_scheme("file:///tmp/x") is None
    assert url_scheme("S3://b/p") == "s3" and is_url("gs://b/p") and is_url("az://c/p")
    assert local_path("file:///tmp/a%20b/ds") == "/tmp/a b/ds" and local_path(tmp_path) == str(
        tmp_path
    )


@pytest.mark.filterwarnings("ignore::kuration.errors.BudgetGranularityWarning")
def test_a_file_url_is_a_local_destination_and_dataset(small_job: dict, tmp_path: Path) -> None:
    res = run_job(small_job, f"file://{tmp_path}/ds")
    assert res.path == tmp_path / "ds" and (tmp_path / "ds" / "dataset.commit.json").is_file()
    assert len(open_dataset(f"file://{tmp_path}/ds")) == len(res.manifest["shards"])


@pytest.mark.parametrize(
    "url", ["ftp://host/run", "sftp://host/run", "ssh://host/run", "http://host/run", "smb://h/r"]
)
def test_writing_to_a_mutating_or_read_only_scheme_is_refused(url: str) -> None:
    scheme = url.split("://")[0]
    with pytest.raises(UnsupportedURLError, match=f"cannot write to {scheme}://") as exc:
        open_url(url, write=True)
    assert exc.value.scheme == scheme and exc.value.url == url


def test_kur_run_refuses_an_ftp_destination_in_one_line(
    small_job: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = tmp_path / "job.json"
    job.write_text(json.dumps(small_job))
    assert cli_main(["run", str(job), "--out", "ftp://example.org/runs/b"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("kur: error: ftp://example.org/runs/b: cannot write to ftp://")


def test_readers_refuse_ftp_and_run_job_refuses_sftp(small_job: dict) -> None:
    with pytest.raises(UnsupportedURLError, match="cannot read from ftp://"):
        open_dataset("ftp://example.org/runs/b")
    with pytest.raises(UnsupportedURLError, match="sftp://"):
        run_job(small_job, "sftp://example.org/runs/b")


def test_storage_options_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KURATION_STORAGE_OPTIONS", raising=False)
    assert storage_options("s3") == {}
    opts = {"s3": {"client_kwargs": {"endpoint_url": "http://127.0.0.1:1"}}}
    monkeypatch.setenv("KURATION_STORAGE_OPTIONS", json.dumps(opts))
    assert storage_options("s3") == opts["s3"] and storage_options("gcs") == {}
    monkeypatch.setenv("KURATION_STORAGE_OPTIONS", "{not json")
    with pytest.raises(UnsupportedURLError, match="KURATION_STORAGE_OPTIONS is not JSON"):
        storage_options("s3")
    monkeypatch.setenv("KURATION_STORAGE_OPTIONS", '{"s3": 3}')
    with pytest.raises(UnsupportedURLError, match="map a protocol to an object"):
        storage_options("s3")


def test_a_missing_backend_names_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib
    from types import MappingProxyType

    reg = importlib.import_module("fsspec.registry")  # the module (fsspec.registry is its dict)
    monkeypatch.setitem(sys.modules, "gcsfs", None)  # as if the [gcs] extra were not installed
    # and fsspec had not loaded it yet (it keeps a class it imported once)
    loaded = {k: v for k, v in reg._registry.items() if k not in {"gs", "gcs"}}
    monkeypatch.setattr(reg, "_registry", loaded)
    monkeypatch.setattr(reg, "registry", MappingProxyType(loaded))
    with pytest.raises(MissingExtraError, match=r"gcsfs: pip install 'kuration-sdk\[gcs\]'"):
        open_url("gs://bucket/run", write=True)


def test_object_identity_prefers_a_version_and_never_a_name() -> None:
    assert object_identity({"ETag": '"abc"', "VersionId": "v1"}) == "version:v1"
    assert object_identity({"ETag": '"abc"', "VersionId": "null"}) == "etag:abc"
    assert object_identity({"generation": 17, "md5Hash": "x"}) == "version:17"
    assert object_identity({"name": "bucket/a.parquet", "size": 3}) == ""


def test_streaming_into_a_remote_destination_is_refused_before_reading(small_job: dict) -> None:
    from kuration.errors import StreamingError

    job = {**small_job, "output": {**small_job["output"], "container": "parquet"}}
    with pytest.raises(StreamingError, match="streaming=True writes a local destination"):
        run_job(job, "s3://bucket/run", streaming=True)


def test_packed_output_into_a_remote_destination_is_refused(small_job: dict) -> None:
    from kuration.errors import OutputSpecError

    out = {**small_job["output"], "container": "parquet", "layout": "packed"}
    with pytest.raises(OutputSpecError, match="layout='packed' writes a local destination"):
        run_job({**small_job, "output": out}, "s3://bucket/run")
