"""Benchmark remote output: ``kur run --out s3://...`` against the same run written locally.

Run on demand (not part of the test suite)::

    .venv/bin/python bench/bench_remote.py              # the quickstart job (README)
    .venv/bin/python bench/bench_remote.py --repeat 3

A moto S3 server is started on loopback (``moto[server]``, in the ``dev`` extra), so the
figures measure kuration's remote protocol (attempt object + record per shard, a move
per shard, the checksummed resume) over a real HTTP S3 API without network latency; a
real bucket adds its round-trip time per request.  Printed, all measured in one run:

* wall time of the local run and of the remote run (best of ``--repeat``), and their ratio;
* wall time of an unchanged ``--resume`` into the bucket (every shard verified by
  downloading it and hashing its bytes) against the first remote run;
* a SIGKILL after the 5th uploaded shard, then ``--resume``: whether the dataset read
  back from the bucket is byte-identical (shards and manifest) to the local run.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JOB = ROOT / "examples" / "adsb_quickstart" / "job.json"
CHILD = ROOT / "tests" / "kuration" / "pipeline" / "_remote_fault_child.py"


def _server() -> tuple[object, str]:
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    return server, f"http://{host}:{port}"


def _published(files: dict[str, bytes]) -> dict[str, bytes]:
    return {
        k: v
        for k, v in files.items()
        if k == "dataset_manifest.json" or k.split("/")[0] in ("train", "test")
    }


def _timed(fn: object, *args: object, **kw: object) -> float:
    t0 = time.perf_counter()
    fn(*args, **kw)  # type: ignore[operator]
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    server, endpoint = _server()
    os.environ.update(
        AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_DEFAULT_REGION="us-east-1"
    )
    opts = {"client_kwargs": {"endpoint_url": endpoint}}
    os.environ["KURATION_STORAGE_OPTIONS"] = json.dumps({"s3": opts})
    import s3fs

    from kuration import run_job

    warnings.simplefilter("ignore")
    fs = s3fs.S3FileSystem(**opts)
    bucket = f"bench-{uuid.uuid4().hex[:8]}"
    fs.mkdir(bucket)
    tmp = Path(tempfile.mkdtemp(prefix="kuration-bench-remote-"))
    try:
        local_s, remote_s = [], []
        for i in range(args.repeat):
            out = tmp / f"local{i}"
            local_s.append(_timed(run_job, JOB, out))
            remote_s.append(_timed(run_job, JOB, f"s3://{bucket}/run{i}"))
        resume_s = _timed(run_job, JOB, f"s3://{bucket}/run0", resume=True)
        local = _published(
            {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
        )
        n = sum(1 for k in local if k != "dataset_manifest.json")
        # killed after the 5th upload, lease removed by hand, resumed
        url = f"s3://{bucket}/killed"
        argv = ["run", str(JOB), "--out", url, "--json"]
        rc = subprocess.run(
            [sys.executable, str(CHILD), "upload:5", *argv], capture_output=True
        ).returncode
        fs.rm(f"{bucket}/killed/.kuration-writer.lock")
        res = run_job(JOB, url, resume=True)
        fs.invalidate_cache()
        base = f"{bucket}/killed"
        remote = _published({k[len(base) + 1 :]: fs.cat_file(k) for k in fs.find(base)})
        print(f"quickstart job: {n} shards, {sum(map(len, local.values())) / 1e6:.2f} MB")
        print(f"local run   : {min(local_s):6.2f} s (best of {args.repeat})")
        print(
            f"remote run  : {min(remote_s):6.2f} s  -> remote / local = {min(remote_s) / min(local_s):.2f}x"
        )
        print(
            f"resume, all reused: {resume_s:6.2f} s -> / remote run = {resume_s / min(remote_s):.2f}x"
        )
        print(
            f"SIGKILL (rc {rc}) after 5 uploads, --resume reused {res.resume['reused_shards']}"
            f"/{n}: byte-identical to the local run: {remote == local}"
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        server.stop()  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
