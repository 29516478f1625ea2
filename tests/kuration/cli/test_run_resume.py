"""``kur run --resume`` continues the same job only: aimed at another job's committed
dataset, it exits 1 naming what differs and ``--force``, and leaves that dataset as it was."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent

pytestmark = pytest.mark.filterwarnings("ignore::kuration.errors.BudgetGranularityWarning")


def _snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): "dir"
        if p.is_dir()
        else hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
    }


def _kur(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "kur"), *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_resume_of_another_job_exits_1_and_keeps_the_dataset(
    tmp_path: Path, adsb_job_dict: dict, adsb_sources: list[Path]
) -> None:
    job = json.loads(json.dumps(adsb_job_dict))
    job["sources"] = [str(p) for p in adsb_sources[:2]]
    job["budget"] = {"train_hours": 0.2, "test_hours": 0.05}
    other = json.loads(json.dumps(job))
    other["output"]["shard_length"] = 64
    (tmp_path / "adsb.json").write_text(json.dumps(job))
    (tmp_path / "other.json").write_text(json.dumps(other))
    done = _kur("run", "adsb.json", cwd=tmp_path)  # --out defaults to runs/<file stem>
    assert done.returncode == 0, done.stderr
    dest = tmp_path / "runs" / "adsb"
    before = _snapshot(dest)
    refused = _kur("run", "other.json", "--out", "runs/adsb", "--resume", cwd=tmp_path)
    assert refused.returncode == 1
    assert "Traceback" not in refused.stderr
    assert "runs/adsb holds the committed dataset of a different job" in refused.stderr
    assert "output.shard_length" in refused.stderr and "--force" in refused.stderr
    assert _snapshot(dest) == before
    again = _kur("run", "adsb.json", "--resume", "--json", cwd=tmp_path)  # the same job
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["results"]["resume"]["rebuilt_shards"] == 0
    replaced = _kur("run", "other.json", "--out", "runs/adsb", "--force", cwd=tmp_path)
    assert replaced.returncode == 0, replaced.stderr


def test_run_help_says_what_resume_and_force_do() -> None:
    text = _kur("run", "--help", cwd=Path.cwd()).stdout
    flat = " ".join(text.split())
    assert "runs/adsb for adsb.json" in flat
    assert "refused when the committed dataset there is another job's" in flat
    assert "whatever job made it" in flat


def test_not_empty_names_the_job_there_and_offers_out_before_force(
    tmp_path: Path, adsb_job_dict: dict, adsb_sources: list[Path]
) -> None:
    # every example's job file is job.json: both default to runs/job
    job = json.loads(json.dumps(adsb_job_dict))
    job["sources"] = [str(p) for p in adsb_sources[:2]]
    job["budget"] = {"train_hours": 0.2, "test_hours": 0.05}
    job["name"] = "first-example"
    other = json.loads(json.dumps(job))
    other["output"]["shard_length"] = 64
    other["name"] = "second-example"
    for folder, doc in (("a", job), ("b", other)):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "job.json").write_text(json.dumps(doc))
    done = _kur("run", "a/job.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    before = _snapshot(tmp_path / "runs" / "job")
    refused = _kur("run", "b/job.json", cwd=tmp_path)
    assert refused.returncode == 1
    err = refused.stderr
    assert "runs/job is not empty: it holds the committed dataset of another job " in err
    assert "('first-example') (changed settings: output.shard_length)" in err
    assert "--resume" not in err  # it would be refused: another job
    assert err.index("kur run --out DIR") < err.index("kur run --force")
    again = _kur("run", "a/job.json", cwd=tmp_path)  # the same job: resume is the way
    assert again.returncode == 1
    assert "runs/job is not empty (the committed dataset of job 'first-example'); resume" in (
        again.stderr
    )
    assert _snapshot(tmp_path / "runs" / "job") == before
