"""``layout="lerobot"``: ``kur run`` writes a LeRobot v3 folder under the commit protocol.

The data come from ``robovet demo --v3 --clean`` (robovet 0.2.2, MIT; installed in the dev
environment) through ``kur init``; the cameras are left out (the layout writes numeric
features).  lerobot itself loads the folder in the slow test, in the cached Python 3.12
environment of tests/lerobot_env.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from kuration import iter_shards
from kuration.cli.main import main as kur_main
from kuration.errors import DatasetIntegrityError, PipelineError
from kuration.output.commit import read_commit
from kuration.pipeline.dispatch import hours
from kuration.pipeline.run import steps as hours_steps
from kuration.read.curated import CuratedDatasetAdapter

BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The robovet demo's job in the ``files`` (npz) and the ``lerobot`` layout."""
    tmp = tmp_path_factory.mktemp("lrjob")
    cmd = [str(BIN / "robovet"), "demo", str(tmp / "demo"), "--v3", "--clean"]
    subprocess.run(cmd, check=True, capture_output=True)
    assert kur_main(["init", str(tmp / "demo"), "--out", str(tmp / "job")]) == 0
    job = json.loads((tmp / "job" / "job.json").read_text())
    out = json.loads((tmp / "job" / "output.json").read_text())
    out["modalities"] = {k: m for k, m in out["modalities"].items() if "cam" not in k}
    paths = {}
    layouts = (
        ("npz", {}),
        ("packed", {"layout": "packed", "container": "parquet"}),
        ("lerobot", {"layout": "lerobot", "container": "parquet"}),
    )
    for name, extra in layouts:
        (tmp / "job" / f"out_{name}.json").write_text(json.dumps({**out, **extra}))
        (tmp / "job" / f"job_{name}.json").write_text(
            json.dumps({**job, "output": f"out_{name}.json"})
        )
        paths[name] = tmp / "job" / f"job_{name}.json"
    return paths


def _run(job: Path, out: Path, *more: str) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # whole episodes against a tiny budget
        return kur_main(["run", str(job), "--out", str(out), *more])


@pytest.fixture(scope="module")
def written(jobs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("lrout")
    for name, job in jobs.items():
        assert _run(job, tmp / name) == 0
    return {name: tmp / name for name in jobs}


def _key(p: tuple) -> tuple:
    e = p[1]
    span = -1 if e["span_index"] is None else e["span_index"]
    return (e["split"], e["source_id"], e["entity_id"], span, e["shard_index"])


def _digests(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
        and not any(part.startswith(".kuration") for part in p.relative_to(root).parts)
        and p.name not in ("config.json", "dataset.commit.json")  # wall time, its digest
    }


def test_a_committed_lerobot_folder_reads_back_as_the_npz_layout(written) -> None:
    lr = written["lerobot"]
    rec, _ = read_commit(lr)
    assert rec is not None and rec["state"] == "committed"
    ours = sorted(iter_shards(lr, with_meta=True), key=_key)
    theirs = sorted(iter_shards(written["npz"], with_meta=True), key=_key)
    assert [_key(p) for p in ours] == [_key(p) for p in theirs] and ours
    for (a, _), (b, _) in zip(ours, theirs, strict=True):
        assert a.keys() == b.keys()
        for k in a:
            assert a[k].dtype == b[k].dtype
            np.testing.assert_array_equal(a[k], b[k])
    tables = {}
    for root in (lr, written["npz"]):
        ad = CuratedDatasetAdapter(root)
        tables[root] = {u.split("#")[1]: ad.read_table(u).values for u in ad.sources()}
    assert tables[lr].keys() == tables[written["npz"]].keys()
    for u, values in tables[lr].items():
        for k, v in values.items():
            np.testing.assert_array_equal(v, tables[written["npz"]][u][k])
    man = json.loads((lr / "dataset_manifest.json").read_text())
    packed = json.loads((written["packed"] / "dataset_manifest.json").read_text())
    digest = {e["shard"]: (e["size"], e["sha256"]) for e in man["shards"]}
    assert digest == {e["shard"]: (e["size"], e["sha256"]) for e in packed["shards"]}
    listed = {f["path"] for f in man["files"]}
    on_disk = {
        p.relative_to(lr).as_posix()
        for d in ("data", "meta", "videos")
        for p in (lr / d).rglob("*")
        if p.is_file()
    }
    assert listed == on_disk and "meta/info.json" in listed
    info = json.loads((lr / "meta" / "info.json").read_text())
    tracks = sorted({(e["split"] != "train", e["source_id"]) for _, e in ours})
    n_train = sum(1 for t in tracks if not t[0])
    assert info["splits"] == {"train": f"0:{n_train}", "test": f"{n_train}:{len(tracks)}"}
    assert info["total_frames"] == sum(e["n_steps"] for _, e in ours)
    assert info["robot_type"] == "so100"  # the source dataset's, as is the task text
    tasks = pq.read_table(lr / "meta" / "tasks.parquet").to_pydict()
    assert tasks["task"] == ["Pick up the cube and place it in the bin."]


def test_a_tampered_file_is_refused(written, tmp_path: Path) -> None:
    for rel in ("data/chunk-000/file-000.parquet", "meta/info.json"):
        copy = tmp_path / rel.replace("/", "_")
        subprocess.run(["cp", "-a", str(written["lerobot"]), str(copy)], check=True)
        p = copy / rel
        data = bytearray(p.read_bytes())
        data[len(data) // 2] ^= 1
        p.write_bytes(bytes(data))
        with pytest.raises(DatasetIntegrityError, match="SHA-256|bytes"):
            list(iter_shards(copy))


def _faulty(name: str, when: str) -> tuple:
    def wrap(step):  # type: ignore[no-untyped-def]
        def run(r):  # type: ignore[no-untyped-def]
            if when == "before":
                raise PipelineError(f"injected fault {when} {name}")
            out = step(r)
            raise PipelineError(f"injected fault {when} {name}")
            return out

        return run

    return tuple((n, wrap(s) if n == name else s) for n, s in hours_steps.STEPS)


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_failed_run_keeps_or_resumes_the_dataset(jobs, written, tmp_path, monkeypatch, when):
    """A committed npz dataset is replaced by the LeRobot folder: a fault before
    publication leaves it byte-identical and readable; one after the first publication
    step leaves state 'writing' (refused), and ``--resume`` ends with the same bytes as
    an uninterrupted run."""
    dest = tmp_path / "ds"
    subprocess.run(["cp", "-a", str(written["npz"]), str(dest)], check=True)
    before = _digests(dest)
    with monkeypatch.context() as m:
        m.setattr(hours, "STEPS", _faulty(hours_steps.PUBLISH_STEP, when))
        assert _run(jobs["lerobot"], dest, "--force") == 1
    if when == "before":
        assert _digests(dest) == before
        assert len(list(iter_shards(dest))) == len(list(iter_shards(written["npz"])))
    else:
        rec, _ = read_commit(dest)
        assert rec is not None and rec["state"] == "writing"
        with pytest.raises(DatasetIntegrityError):
            list(iter_shards(dest))
    assert _run(jobs["lerobot"], dest, "--resume") == 0
    assert _digests(dest) == _digests(written["lerobot"])
    assert not (dest / ".kuration_staging").exists()
    assert not any(p.suffix == ".npz" for p in dest.rglob("*"))  # the old shards are gone


@pytest.mark.slow
def test_the_checkers_pass_and_lerobot_loads_it(written, tmp_path: Path) -> None:
    from lerobot_env import lerobot_python

    lr = written["lerobot"]
    robovet = subprocess.run(
        [str(BIN / "robovet"), "doctor", str(lr)], capture_output=True, text=True
    )
    assert " 0 fail " in robovet.stdout, robovet.stdout
    doctor = subprocess.run(
        [str(BIN / "lerobot-doctor"), "check", str(lr)], capture_output=True, text=True
    )
    assert doctor.returncode == 0 and "[FAIL]" not in doctor.stdout, doctor.stdout
    assert "[ERROR]" not in doctor.stdout
    rdq = subprocess.run([str(BIN / "rdq"), "check", str(lr)], capture_output=True, text=True)
    assert rdq.returncode == 0 and "No problems found" in rdq.stdout, rdq.stdout
    script = Path(__file__).parents[2] / "tools" / "lerobot_load.py"
    out = tmp_path / "frames.npz"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    cmd = [lerobot_python(), str(script), str(lr), str(out), "observation.state", "action"]
    subprocess.run(cmd, check=True, capture_output=True, env=env, timeout=600)
    got = np.load(out)
    shards = sorted(
        iter_shards(lr, with_meta=True), key=lambda p: (p[1]["lerobot_episode"], p[1]["row_start"])
    )
    assert int(got["n"]) == sum(e["n_steps"] for _, e in shards)
    np.testing.assert_array_equal(
        got["observation.state"], np.concatenate([a["state"] for a, _ in shards])
    )
    np.testing.assert_array_equal(got["action"], np.concatenate([a["action"] for a, _ in shards]))


def test_resume_keeps_only_the_files_whose_bytes_still_match(jobs, written, tmp_path) -> None:
    dest = tmp_path / "ds"
    subprocess.run(["cp", "-a", str(written["lerobot"]), str(dest)], check=True)
    good = dest / "data" / "chunk-000" / "file-000.parquet"
    bad = dest / "meta" / "stats.json"
    bad.write_text(bad.read_text().replace("0", "1", 1))
    good_inode = good.stat().st_ino
    assert _run(jobs["lerobot"], dest, "--resume") == 0
    assert _digests(dest) == _digests(written["lerobot"])
    assert good.stat().st_ino == good_inode  # its bytes matched: left in place
    assert len(list(iter_shards(dest))) == len(list(iter_shards(written["lerobot"])))
