"""Crash safety: SIGKILL a real ``kur run`` at many points of its write.

After every kill a reader sees the previous committed generation (kill
before publication), refuses the dataset (kill during publication) or sees
the new one (kill after the final commit) -- never a mix.  ``resume=True``
then finishes with files byte-identical to an uninterrupted run.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kuration import iter_shards, run_job
from kuration.cli.main import main as cli_main
from kuration.errors import DatasetExistsError, DatasetIntegrityError

# small budgets filled with whole 15-minute tracks overshoot their request on purpose here
pytestmark = pytest.mark.filterwarnings("ignore::kuration.errors.BudgetGranularityWarning")

CHILD = Path(__file__).with_name("_fault_child.py")

# (kill point, destination holds the previous generation?, what a reader sees after the kill)
POINTS = [
    ("stage:1", True, "previous"),  # shards are encoded into the staging area first...
    ("stage:12", True, "previous"),
    ("torn:5", True, "previous"),
    ("before:dataset.commit.json:1", True, "previous"),  # ...everything staged, nothing published
    ("move:1", True, "refused"),  # state=writing: staged shards replace the old ones
    ("move:9", True, "refused"),
    ("after:dataset_manifest.json:1", True, "refused"),  # metadata writes
    ("before:dataset.commit.json:2", True, "refused"),  # manifest and config are in place
    ("after:dataset.commit.json:2", True, "new"),
    ("stage:3", False, "refused"),  # a first run into an empty destination
    ("move:3", False, "refused"),
]


def _reader_view(dest: Path) -> tuple[str, list[str]]:
    try:
        metas = [meta["path"] for _, meta in iter_shards(dest, with_meta=True)]
    except DatasetIntegrityError:
        return "refused", []
    return "read", metas


def _plan(tmp_path: Path, items: list[tuple[str, Path, list[str]]], job_path: Path) -> Path:
    plan = [
        {"point": point, "argv": ["run", str(job_path), "--out", str(dest), "--json", *flags]}
        for point, dest, flags in items
    ]
    path = tmp_path / f"plan{len(list(tmp_path.glob('plan*.json')))}.json"
    path.write_text(json.dumps(plan))
    return path


def _serve(plan: Path) -> subprocess.Popen[str]:
    """One process imports kuration once and forks a `kur run` per plan item."""
    return subprocess.Popen(
        [sys.executable, str(CHILD), str(plan)], stdout=subprocess.PIPE, text=True
    )


def _stderr(dest: Path) -> str:
    return Path(str(dest) + ".stderr").read_text(errors="replace")


def test_sigkill_at_many_points_then_resume(
    tmp_path: Path, job_b, gen_a, base_b, digests, all_bytes
) -> None:
    job_path = tmp_path / "job.json"
    job_path.write_text(json.dumps(job_b))
    prev_bytes = all_bytes(gen_a.path)
    prev_paths = [e["path"] for e in gen_a.manifest["shards"]]
    new_paths = [e["path"] for e in base_b.manifest["shards"]]
    assert len(new_paths) > 12

    items = []
    for i, (point, with_prev, _) in enumerate(POINTS):
        dest = tmp_path / f"d{i}"
        if with_prev:
            shutil.copytree(gen_a.path, dest)
        items.append((point, dest, ["--force"]))
    server = _serve(_plan(tmp_path, items, job_path))
    ext = tmp_path / "external"
    shutil.copytree(gen_a.path, ext)
    kur_run = [sys.executable, "-m", "kuration.cli.main", "run", str(job_path)]
    ext_proc = subprocess.Popen(
        [*kur_run, "--out", str(ext), "--force", "--json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while ext_proc.poll() is None and time.monotonic() < deadline:
        if len(list(ext.glob(".kuration_staging/*/train/*_shard*"))) >= 3:
            break
        time.sleep(0.001)
    ext_proc.send_signal(signal.SIGKILL)
    ext_proc.wait(30)

    out, _ = server.communicate(timeout=120)
    status = json.loads(out)
    for i, (point, _, expect) in enumerate(POINTS):
        dest = tmp_path / f"d{i}"
        st = status[str(i)]
        assert os.WIFSIGNALED(st) and os.WTERMSIG(st) == signal.SIGKILL, (point, st, _stderr(dest))
        seen, paths = _reader_view(dest)
        if expect == "previous":
            assert seen == "read" and paths == prev_paths, point
            assert all_bytes(dest) == prev_bytes, point  # byte-identical, not just readable
        elif expect == "new":
            assert seen == "read" and paths == new_paths, point
        else:
            assert seen == "refused", point
        res = run_job(job_b, dest, resume=True)
        assert digests(dest) == digests(base_b.path), point
        assert not (dest / ".kuration_staging").exists()
        if point in ("stage:12", "move:9"):  # the staging journal let resume skip finished tracks
            assert res.resume["reused_shards"] > 0
        if expect == "new":
            assert res.resume["reused_shards"] == len(new_paths)

    seen, paths = _reader_view(ext)
    assert seen == "refused" or paths in (prev_paths, new_paths)
    # `kur run --resume`, in process
    assert cli_main(["run", str(job_path), "--out", str(ext), "--resume", "--json"]) == 0
    assert digests(ext) == digests(base_b.path)


def test_second_writer_is_refused(tmp_path: Path, job_b, gen_a, all_bytes) -> None:
    job_path = tmp_path / "job.json"
    job_path.write_text(json.dumps(job_b))
    dest = tmp_path / "dest"
    shutil.copytree(gen_a.path, dest)
    before = all_bytes(dest)
    server = _serve(_plan(tmp_path, [("pause:dataset.commit.json:1", dest, ["--force"])], job_path))
    ready = Path(str(dest) + ".ready")
    try:
        deadline = time.monotonic() + 60
        while not ready.exists() or not ready.read_text():
            assert server.poll() is None, _stderr(dest)
            assert time.monotonic() < deadline
            time.sleep(0.01)
        with pytest.raises(DatasetExistsError, match="another writer"):
            run_job(job_b, dest, force=True)
        with pytest.raises(DatasetExistsError, match="another writer"):
            run_job(job_b, dest, resume=True)
        # the first writer has planned but not published: the old generation is intact
        assert all_bytes(dest) == before
        assert sum(1 for _ in iter_shards(dest)) == len(gen_a.manifest["shards"])
    finally:
        if ready.exists() and ready.read_text():
            os.kill(int(ready.read_text()), signal.SIGKILL)
        server.communicate(timeout=60)
    assert all_bytes(dest) == before
    # the dead writer's lease went with it
    run_job(job_b, dest, force=True)
    os.remove(ready)
