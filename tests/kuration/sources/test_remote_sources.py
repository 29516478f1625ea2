"""Remote input sources: a job's ``s3://`` Parquet sources are read through fsspec and
identified by their ETag (never by name) for the run fingerprint and resume."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

import pytest
import s3fs

from kuration import run_job
from kuration.errors import BudgetGranularityWarning, JobError


def _fs() -> s3fs.S3FileSystem:
    opts = json.loads(os.environ["KURATION_STORAGE_OPTIONS"])["s3"]
    return s3fs.S3FileSystem(**opts)


def _run(job: dict[str, Any], out: Path, **kw: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetGranularityWarning)
        return run_job(job, out, **kw)


def test_s3_parquet_sources_match_local_ones_and_are_pinned_by_etag(
    s3_bucket: str, job_b: dict, base_b: Any, adsb_sources: list[Path], tmp_path: Path
) -> None:
    fs = _fs()
    urls = []
    for p in adsb_sources[:4]:
        url = f"{s3_bucket}/sources/{p.name}"
        fs.put_file(str(p), url.removeprefix("s3://"))
        urls.append(url)
    job = {**json.loads(json.dumps(job_b)), "sources": urls}
    res = _run(job, tmp_path / "out")
    # the same shards as the local run: only the sources' identities differ
    for e in base_b.manifest["shards"]:
        assert (tmp_path / "out" / e["path"]).read_bytes() == (base_b.path / e["path"]).read_bytes()
    fps = [s["fingerprint"] for s in res.config["provenance"]["sources"]]
    etags = [fs.info(u.removeprefix("s3://"))["ETag"].strip('"') for u in urls]
    assert fps == [f"etag:{t}" for t in etags]
    again = _run(job, tmp_path / "out", resume=True)
    assert again.resume["reused_shards"] == len(res.manifest["shards"])
    # a source replaced under the same name is another source: nothing is reused
    fs.pipe_file(urls[0].removeprefix("s3://"), (adsb_sources[5]).read_bytes())
    changed = _run(job, tmp_path / "out", resume=True)
    assert changed.resume["reused_shards"] == 0
    assert any("sources" in n for n in changed.resume["notes"])


def test_a_missing_s3_source_is_a_job_error(s3_bucket: str, job_b: dict, tmp_path: Path) -> None:
    job = {**json.loads(json.dumps(job_b)), "sources": [f"{s3_bucket}/nope.parquet"]}
    with pytest.raises(JobError, match="nope.parquet"):
        _run(job, tmp_path / "out")
