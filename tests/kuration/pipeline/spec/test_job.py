"""End to end on the real ADS-B sources: job -> scored pool -> hours fill -> shards -> reader."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kuration import iter_shards, run_job, shard_entries
from kuration.errors import DatasetExistsError, DatasetIntegrityError, EmptyPoolError

# small budgets filled with whole 15-minute tracks overshoot their request on purpose here
pytestmark = pytest.mark.filterwarnings("ignore::kuration.errors.BudgetGranularityWarning")


def _digests(root: Path) -> dict[str, str]:
    skip = {"config.json", "dataset.commit.json", ".kuration-writer.lock"}
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name not in skip
    }


@pytest.fixture(scope="module")
def small_run(tmp_path_factory, adsb_job_dict, adsb_sources):
    job = json.loads(json.dumps(adsb_job_dict))
    job["sources"] = [str(p) for p in adsb_sources[:4]]
    job["budget"] = {"train_hours": 1.0, "test_hours": 0.25}
    out = tmp_path_factory.mktemp("run") / "ds"
    return job, run_job(job, out)


def test_budgets_are_met_within_one_track(small_run) -> None:
    _, res = small_run
    man = res.manifest
    hz = man["sample_hz"]
    for split in ("train", "test"):
        b = man["budget"][split]
        tracks = {}
        for e in man["shards"]:
            if e["split"] == split:
                key = (e["source_id"], e["entity_id"])
                tracks[key] = tracks.get(key, 0) + e["n_steps"]
        longest = max(tracks.values()) / hz
        assert b["admitted_s"] >= b["requested_s"] or b["underfill_s"] > 0
        assert b["admitted_s"] - b["requested_s"] < longest
        assert b["emitted_s"] == pytest.approx(sum(tracks.values()) / hz)


def test_no_source_in_both_splits(small_run) -> None:
    _, res = small_run
    train = {e["source_id"] for e in res.manifest["shards"] if e["split"] == "train"}
    test = {e["source_id"] for e in res.manifest["shards"] if e["split"] == "test"}
    assert train and test and not (train & test)
    split_of = res.config["results"]["split_of"]
    assert all(split_of[s] == "train" for s in train) and all(split_of[s] == "test" for s in test)


def test_reader_returns_declared_modalities_and_verifies(small_run) -> None:
    _, res = small_run
    man = res.manifest
    n = 0
    for arrays, entry in iter_shards(res.path, with_meta=True):
        n += 1
        assert set(arrays) == set(man["modalities"]) | {"_present", "_time_s"}
        assert arrays["_present"].shape == (entry["n_steps"],)
        assert arrays["_time_s"][0] == entry["start_time_s"]
        assert arrays["position"].shape == (entry["n_steps"], 2)
        assert arrays["onground"].dtype == np.uint8
        assert arrays["altitude"].dtype == np.float32
        data = (res.path / entry["path"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"]
        # absent steps are zero-filled and flagged, present steps carry real coordinates
        pos = arrays["position"]
        assert np.all(pos[~arrays["_present"]] == 0)
        assert np.all(np.abs(pos[arrays["_present"], 0] - 48.8) < 3)
    assert n == len(man["shards"]) > 0


def test_padded_shards_trim_to_their_real_length(small_run) -> None:
    _, res = small_run
    padded = [e for e in shard_entries(res.path) if e["padded"]]
    assert padded
    full = next(iter_shards(res.path, trim=False, with_meta=True, split=padded[0]["split"]))
    assert full[0]["position"].shape[0] in (res.manifest["shard_length"], full[1]["n_steps"])


def test_same_job_twice_is_byte_identical(small_run, tmp_path: Path) -> None:
    job, res = small_run
    again = run_job(job, tmp_path / "again")
    assert _digests(res.path) == _digests(again.path)


def test_a_tampered_shard_is_refused(small_run, tmp_path: Path) -> None:
    import shutil

    _, res = small_run
    copy = tmp_path / "copy"
    shutil.copytree(res.path, copy)  # a moved or copied dataset still loads
    assert sum(1 for _ in iter_shards(copy)) == len(res.manifest["shards"])
    entry = res.manifest["shards"][0]
    p = copy / entry["path"]
    data = bytearray(p.read_bytes())
    data[len(data) // 2] ^= 0xFF
    p.write_bytes(bytes(data))
    with pytest.raises(DatasetIntegrityError, match="SHA-256"):
        list(iter_shards(copy))


def test_a_dataset_being_written_is_refused(small_run, tmp_path: Path) -> None:
    import shutil

    _, res = small_run
    copy = tmp_path / "copy"
    shutil.copytree(res.path, copy)
    commit = json.loads((copy / "dataset.commit.json").read_text())
    commit["state"] = "writing"
    (copy / "dataset.commit.json").write_text(json.dumps(commit))
    with pytest.raises(DatasetIntegrityError, match="state 'writing'"):
        list(iter_shards(copy))


def test_existing_destination_needs_force(small_run) -> None:
    job, res = small_run
    with pytest.raises(DatasetExistsError, match="not empty"):
        run_job(job, res.path)


def test_short_and_failing_sources(small_job, adsb_sources, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    short = tmp_path / "short.parquet"
    table = pq.read_table(adsb_sources[0])
    ts = table.column("timestamp").to_numpy()
    pq.write_table(table.filter(ts < ts.min() + 30_000), short)
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"not parquet at all")
    job = dict(small_job)
    job["sources"] = [*small_job["sources"], str(short), str(broken)]
    res = run_job(job, tmp_path / "out")
    summary = res.config["results"]["scoring"]
    assert summary["sources_failed"] == 1 and str(broken) in summary["errors"]
    # sources of two folders: ids are paths relative to their common folder
    sid = f"{tmp_path.name}/short"
    assert summary["skipped"] == {sid: "shorter than one window (30 ticks < 120)"}


def test_every_source_failing_is_loud(small_job, tmp_path: Path) -> None:
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"garbage")
    job = dict(small_job)
    job["sources"] = [str(bad)]
    with pytest.raises(EmptyPoolError, match="bad.parquet"):
        run_job(job, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_cli_run_and_inspect(small_job, tmp_path: Path) -> None:
    job_path = tmp_path / "job.json"
    job_path.write_text(json.dumps(small_job))
    out = tmp_path / "cli"
    kur = [sys.executable, "-m", "kuration.cli.main"]
    run = subprocess.run(
        [*kur, "run", str(job_path), "--out", str(out)], capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stderr
    assert "sources scored: 4/4" in run.stdout and "shards written" in run.stdout
    ins = subprocess.run(
        [*kur, "inspect", str(out), "--verify", "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert ins.returncode == 0, ins.stderr
    rep = json.loads(ins.stdout)
    assert rep["verification"]["valid"] and rep["splits"]["train"]["shards"] > 0
    again = subprocess.run(
        [*kur, "run", str(job_path), "--out", str(out)], capture_output=True, text=True, check=False
    )
    assert again.returncode == 1 and "not empty" in again.stderr


def test_a_refused_run_writes_nothing(small_job, tmp_path: Path) -> None:
    out = tmp_path / "notes"
    out.mkdir()
    (out / "notes.txt").write_text("not a dataset")
    with pytest.raises(DatasetExistsError, match="--force"):
        run_job(small_job, out)
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
