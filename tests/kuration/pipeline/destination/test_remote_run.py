"""Remote output through fsspec against a real S3 server (moto, loopback).

A remote write reads back byte-identical to a local run of the same job; a second
writer is refused by the remote lease; a ``kur run`` SIGKILLed mid-write leaves a
dataset readers refuse, and ``--resume`` then finishes it byte-identical to an
uninterrupted local run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import s3fs

from kuration import CuratedDatasetAdapter, iter_shards, open_dataset, run_job
from kuration.cli.main import main as cli_main
from kuration.errors import BudgetGranularityWarning, DatasetExistsError, DatasetIntegrityError
from kuration.output.commit import COMMIT_NAME, LOCK_NAME, MANIFEST_NAME, STAGING_NAME

CHILD = Path(__file__).with_name("_remote_fault_child.py")
PUBLISHED = (MANIFEST_NAME,)  # with the shards: what test_golden pins


def _fs() -> s3fs.S3FileSystem:
    opts = json.loads(os.environ["KURATION_STORAGE_OPTIONS"])["s3"]
    fs = s3fs.S3FileSystem(**opts)
    fs.invalidate_cache()
    return fs


def _remote_bytes(url: str) -> dict[str, bytes]:
    """Shards and manifest of the dataset at ``url``, by relative path."""
    fs = _fs()
    base = url.removeprefix("s3://")
    out = {}
    for key in fs.find(base):
        rel = key[len(base) + 1 :]
        if rel in PUBLISHED or rel.split("/")[0] in ("train", "test"):
            out[rel] = fs.cat_file(key)
    return out


def _local_bytes(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
        and (p.name in PUBLISHED or p.relative_to(root).parts[0] in ("train", "test"))
    }


def _quiet_run(job: dict[str, Any], out: str, **kw: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetGranularityWarning)
        return run_job(job, out, **kw)


def _same_arrays(url: str, local: Path) -> None:
    got = list(iter_shards(url, with_meta=True))
    want = list(iter_shards(local, with_meta=True))
    assert [m for _, m in got] == [m for _, m in want]
    for (a, _), (b, _) in zip(got, want, strict=True):
        assert a.keys() == b.keys()
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])


@pytest.mark.slow
def test_remote_write_reads_back_like_local(
    s3_bucket: str,
    job_b: dict,
    base_b: Any,
    job_a: dict,
    gen_a: Any,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    url = f"{s3_bucket}/runs/b"
    res = _quiet_run(job_b, url)
    assert res.path == url
    local = _local_bytes(base_b.path)
    assert _remote_bytes(url) == local  # shards and manifest, byte for byte
    keys = {k.split("/", 2)[-1] for k in _fs().find(url.removeprefix("s3://"))}
    assert LOCK_NAME not in keys and not any(k.startswith(STAGING_NAME) for k in keys)
    _same_arrays(url, base_b.path)
    ds = open_dataset(url + "/" + MANIFEST_NAME)
    assert ds.root == url and len(ds) == len(open_dataset(base_b.path))
    assert ds.shard_path(ds.entries()[0]).startswith(url + "/")
    # a curated dataset read back from the bucket
    adapter = CuratedDatasetAdapter(url)
    first = adapter.sources()[0]
    assert first.startswith(url + "#")
    assert adapter.read_table(first).n_steps > 0
    # kur inspect --verify and kur check on the URL
    assert cli_main(["inspect", url, "--verify", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["verification"]["valid"] and rep["verification"]["checked"] == len(ds)
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"verify": True, "min_shards": 1}))
    assert cli_main(["check", url, "--policy", str(policy)]) == 0
    assert cli_main(["diff", url, str(base_b.path), "--json"]) == 0
    # an unchanged resume reuses every shard, found by the SHA-256 of the remote objects
    again = _quiet_run(job_b, url, resume=True)
    assert again.resume["reused_shards"] == len(ds) and again.resume["rebuilt_shards"] == 0
    assert _remote_bytes(url) == local
    # without resume or force the prefix is protected
    with pytest.raises(DatasetExistsError, match="not empty"):
        _quiet_run(job_b, url)
    # force replaces it with another run: its stale shards are deleted
    _quiet_run(job_a, url, force=True)
    assert _remote_bytes(url) == _local_bytes(gen_a.path)
    assert open_dataset(url).commit["run_fingerprint"] == gen_a.fingerprint


@pytest.mark.parametrize("store", ["gs_bucket", "az_container"])
def test_gcs_and_azure_writes_read_back_like_local(
    store: str, request: pytest.FixtureRequest, job_b: dict, base_b: Any
) -> None:
    """The same run into fake-gcs-server and Azurite (loopback): the lease is one
    conditional create there too, and the dataset is the local run's, byte for byte."""
    from kuration.output.destination import RemoteDestination

    url = f"{request.getfixturevalue(store)}/runs/b"
    _quiet_run(job_b, url)
    dest = RemoteDestination(url, write=False)
    keys = dest.listing()
    published = [k for k in keys if k in PUBLISHED or k.split("/")[0] in ("train", "test")]
    assert {k: dest.read(k) for k in published} == _local_bytes(base_b.path)
    assert LOCK_NAME not in keys and not any(k.startswith(STAGING_NAME) for k in keys)
    _same_arrays(url, base_b.path)


def test_second_writer_is_refused_by_the_remote_lease(s3_bucket: str, job_b: dict) -> None:
    url = f"{s3_bucket}/held"
    fs = _fs()
    lock = f"{url.removeprefix('s3://')}/{LOCK_NAME}"
    fs.pipe_file(lock, b'{"token": "someone else"}')
    with pytest.raises(DatasetExistsError, match="another writer holds"):
        _quiet_run(job_b, url, force=True)
    assert fs.cat_file(lock) == b'{"token": "someone else"}'  # left to its owner
    assert fs.find(url.removeprefix("s3://")) == [lock]  # and nothing else written


def test_resume_of_another_job_is_refused_on_a_remote_prefix(
    s3_bucket: str, job_a: dict, job_b: dict, gen_a: Any
) -> None:
    url = f"{s3_bucket}/other-job"
    _quiet_run(job_a, url)
    before = _remote_bytes(url)
    with pytest.raises(DatasetExistsError, match=f"{url} holds the committed dataset of a diff"):
        _quiet_run(job_b, url, resume=True)
    assert _remote_bytes(url) == before == _local_bytes(gen_a.path)
    keys = {k.split("/", 2)[-1] for k in _fs().find(url.removeprefix("s3://"))}
    assert LOCK_NAME not in keys and not any(k.startswith(STAGING_NAME) for k in keys)
    assert open_dataset(url).commit["run_fingerprint"] == gen_a.fingerprint


def test_reader_refuses_a_dataset_replaced_mid_read(s3_bucket: str, job_b: dict) -> None:
    url = f"{s3_bucket}/moving"
    _quiet_run(job_b, url)
    ds = open_dataset(url)
    it = iter_shards(ds)
    next(it)
    fs = _fs()
    commit = f"{url.removeprefix('s3://')}/{COMMIT_NAME}"
    rec = json.loads(fs.cat_file(commit))
    fs.pipe_file(commit, json.dumps({**rec, "state": "writing"}).encode())  # a writer starts
    with pytest.raises(DatasetIntegrityError, match="changed while it was being read"):
        next(it)


def _killed_run(job_path: Path, url: str, point: str) -> int:
    argv = ["run", str(job_path), "--out", url, "--json", "--resume"]
    proc = subprocess.run(
        [sys.executable, str(CHILD), point, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"},
    )
    return proc.returncode


@pytest.mark.slow
def test_sigkill_during_remote_write_then_resume(
    s3_bucket: str, job_b: dict, base_b: Any, tmp_path: Path
) -> None:
    job_path = tmp_path / "job.json"
    job_path.write_text(json.dumps(job_b))
    url = f"{s3_bucket}/killed"
    fs = _fs()
    base = url.removeprefix("s3://")
    # killed while staging (a first run: nothing committed), then, resumed, killed while
    # moving shards into place (dataset.commit.json says "writing")
    for point, state in (("upload:3", None), ("move:2", "writing")):
        assert _killed_run(job_path, url, point) == -9  # SIGKILL
        fs.invalidate_cache()
        assert f"{base}/{LOCK_NAME}" in fs.find(base)  # a remote lease outlives its writer
        commit = fs.cat_file(f"{base}/{COMMIT_NAME}") if state else None
        assert state is None or json.loads(commit or b"")["state"] == state
        with pytest.raises(DatasetIntegrityError, match="not a kuration dataset|not committed"):
            open_dataset(url)  # readers refuse the interrupted dataset
        with pytest.raises(DatasetExistsError, match="another writer holds"):
            _quiet_run(job_b, url, resume=True)
        fs.rm(f"{base}/{LOCK_NAME}")  # by hand, once no writer owns the destination
    # every shard was staged by the second run; one staged object is then damaged
    keys = set(fs.find(f"{base}/{STAGING_NAME}"))
    recorded = [k for k in keys if k.endswith(".npz") and f"{k}.entry.json" in keys]
    tails = [k.split("/", 5)[-1] for k in recorded]  # <split>/<name>, without the attempt
    in_place = set(fs.find(base))
    staged = sorted(  # the only valid copy of its shard: recorded once, not yet in place
        k
        for k, t in zip(recorded, tails, strict=True)
        if tails.count(t) == 1 and f"{base}/{t}" not in in_place
    )
    data = bytearray(fs.cat_file(staged[0]))
    data[len(data) // 2] ^= 0xFF
    fs.pipe_file(staged[0], bytes(data))  # same name and size, other bytes
    res = _quiet_run(job_b, url, resume=True)
    # moved shards are found in place, the others staged, each by the SHA-256 of its
    # bytes: the damaged one (and the rest of its track) is rebuilt, not trusted by name
    total = len(base_b.manifest["shards"])
    assert res.resume["rebuilt_shards"] >= 1
    assert res.resume["reused_shards"] + res.resume["rebuilt_shards"] == total
    assert res.resume["reused_shards"] >= total // 2
    assert _remote_bytes(url) == _local_bytes(base_b.path)
    _same_arrays(url, base_b.path)
    assert not any(STAGING_NAME in k or LOCK_NAME in k for k in fs.find(base))


@pytest.mark.parametrize("step", ["config", "commit"])
def test_a_failure_at_a_remote_step_keeps_or_names_the_dataset(
    s3_bucket: str, job_a: dict, job_b: dict, base_b: Any, step: str, monkeypatch, capsys
) -> None:
    """The remote steps follow the local order: up to ``config`` the committed dataset stays
    as it was; a failure while publishing leaves ``writing``, named with ``--resume``."""
    from kuration.errors import PipelineError
    from kuration.pipeline.destination import remote as remote_run

    url = f"{s3_bucket}/fail-{step}"
    _quiet_run(job_a, url)
    before = _remote_bytes(url)

    def fail(*args: Any, **kwargs: Any) -> dict[str, Any]:
        raise PipelineError(f"injected fault in {step}")

    target = "step_config" if step == "config" else "step_remote_commit"
    with monkeypatch.context() as m:
        m.setattr(remote_run, target, fail)
        with pytest.raises(PipelineError, match="injected fault"):
            _quiet_run(job_b, url, force=True)
    err = capsys.readouterr().err
    if step == "config":
        assert _remote_bytes(url) == before
        assert open_dataset(url).commit["state"] == "committed"
        assert "state 'writing'" not in err
    else:
        with pytest.raises(DatasetIntegrityError, match="writing"):
            open_dataset(url)
        assert f"{url} is left in state 'writing'" in err and "--resume" in err
    _quiet_run(job_b, url, resume=True)
    assert _remote_bytes(url) == _local_bytes(base_b.path)
