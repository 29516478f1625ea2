"""StageCheckpoint and SegmentBatch: attempt files, checksums, atomic commits, restarts after SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kuration import Segmenter, load_strategy
from kuration.contracts.segment import Segment
from kuration.errors import DatasetIntegrityError
from kuration.pipeline.disk.checkpoint import StageCheckpoint
from kuration.pipeline.disk.pool import select_on_disk
from kuration.pipeline.disk.segment_batch import SegmentBatch

HERE = Path(__file__).resolve().parent
STRATEGIES = HERE.parents[3] / "examples" / "adsb_quickstart" / "strategies"


def _batch(n: int, seed: int = 0) -> pa.RecordBatch:
    rng = np.random.default_rng(seed)
    segs = [Segment(f"s{i % 3}", i, i + 5, {"a": float(rng.normal())}) for i in range(n)]
    return SegmentBatch.from_segments(segs, ["a"]).batch


def test_partition_round_trip_and_reuse(tmp_path: Path) -> None:
    ck = StageCheckpoint(tmp_path, {"run": 1}, "score")
    b = _batch(10)
    key = ck.partition_key("src-a", {"fingerprint": "x"})
    c = ck.write("src-a", key, b.schema, [b], {"n": 10})
    assert c.rows == 10 and (ck.dir / c.file).is_file()
    assert pa.Table.from_batches(list(ck.read(c))).equals(pa.Table.from_batches([b]))
    again = StageCheckpoint(tmp_path, {"run": 1}, "score")
    assert again.lookup("src-a", key) == c and again.hits == 1
    # another input identity (a changed source) is a miss, never a hit
    assert again.lookup("src-a", again.partition_key("src-a", {"fingerprint": "y"})) is None
    assert again.misses == 1 and again.rejected == 0
    assert again.commit_stage({"src-a": key})["partitions"]["src-a"]["sha256"] == c.sha256


def test_corrupted_partition_is_rejected_and_blocks_the_stage_commit(tmp_path: Path) -> None:
    ck = StageCheckpoint(tmp_path, {"run": 1}, "score")
    b = _batch(50)
    key = ck.partition_key("p", {})
    c = ck.write("p", key, b.schema, [b])
    path = ck.dir / c.file
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    path.write_bytes(bytes(raw))
    again = StageCheckpoint(tmp_path, {"run": 1}, "score")
    assert again.lookup("p", key) is None and again.rejected == 1
    with pytest.raises(DatasetIntegrityError, match="score/p.*SHA-256"):
        again.commit_stage({"p": key})
    with pytest.raises(DatasetIntegrityError, match="SHA-256"):
        list(again.read(c))
    assert again.stage_commit() is None


def test_runs_live_in_their_own_namespaces(tmp_path: Path) -> None:
    a = StageCheckpoint(tmp_path, {"run": "a"}, "score")
    b = StageCheckpoint(tmp_path, {"run": "b"}, "score")
    assert a.dir != b.dir and a.dir.parent.parent == b.dir.parent.parent
    x = _batch(3)
    ca = a.write("p", a.partition_key("p", {}), x.schema, [x])
    b.write("p", b.partition_key("p", {}), x.schema, [_batch(4, 1)])
    assert a.lookup("p", a.partition_key("p", {})) == ca  # b never overwrote a's


def test_a_copy_in_a_worker_publishes_into_the_lead_namespace(tmp_path: Path) -> None:
    """A pickled StageCheckpoint is the same namespace with fresh counters: what it writes,
    the lead looks up and commits; the lead counts the bytes it is told were written."""
    import pickle

    lead = StageCheckpoint(tmp_path, {"run": 1}, "score")
    lead.misses = 3
    copy = pickle.loads(pickle.dumps(lead))
    assert (copy.dir, copy.run_fingerprint, copy.misses) == (lead.dir, lead.run_fingerprint, 0)
    b = _batch(8)
    c = copy.write("p", lead.partition_key("p", {}), b.schema, [b])
    assert copy.bytes_written == c.bytes and copy.fsync_s == 0 and lead.bytes_written == 0
    lead.count_written(c)
    assert lead.bytes_written == c.bytes and lead.lookup("p", c.key) == c
    lead.commit_stage({"p": c.key})
    assert lead.fsync_s > 0  # the lead makes the worker's partition durable


@pytest.mark.parametrize("syncfs", [True, False])
def test_the_stage_commit_makes_every_partition_durable_before_it_is_published(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, syncfs: bool
) -> None:
    """The sync calls recorded: writing a partition syncs nothing; the stage commit syncs
    every partition file, its commit and the folder (one syncfs of the filesystem, or one
    fsync each) before its own record is fsynced and renamed into place."""
    from tests.kuration.output.test_commit_fsync import _record_syncs

    from kuration.output import commit

    if not syncfs:
        monkeypatch.setattr(commit, "_syncfs_covers", lambda paths, anchor: False)
    events = _record_syncs(monkeypatch)
    ck = StageCheckpoint(tmp_path, {"run": 1}, "score")
    b = _batch(6)
    made = {n: ck.write(n, ck.partition_key(n, {}), b.schema, [b]) for n in ("p", "q")}
    assert not [e for e in events if e[0] != "replace"]  # no sync per partition
    del events[:]
    ck.commit_stage({n: c.key for n, c in made.items()})
    stage = ck.dir / "_stage.commit.json"
    last = [i for i, e in enumerate(events) if e[0] == "replace" and e[2] == str(stage)]
    assert len(last) == 1 and last[0] == len(events) - 1
    record_sync = events[last[0] - 1]
    assert record_sync[0] == "fsync" and record_sync[1].endswith(".tmp")
    before = events[: last[0] - 1]
    if syncfs:
        assert [e[0] for e in before] == ["syncfs"]
    else:
        files = {str(ck.dir / c.file) for c in made.values()}
        files |= {str(ck._commit_path(n)) for n in made} | {str(ck.dir)}
        assert {e[1] for e in before} == files and len(before) == len(files)
        assert {e[0] for e in before} == {"fsync"}
    assert ck.fsync_s > 0


def test_stray_attempt_files_are_swept_once_when_the_stage_commits(tmp_path: Path) -> None:
    """A killed writer's attempt file (no commit names it) is removed with the stage commit;
    a rebuilt partition's replaced file goes once the new commit is published; files of a
    partition the stage does not expect are left alone."""
    ck = StageCheckpoint(tmp_path, {"run": 1}, "score")
    b = _batch(5)
    first = ck.write("p", ck.partition_key("p", {}), b.schema, [b])
    other = ck.write("q", ck.partition_key("q", {}), b.schema, [b])
    stem = first.file.split(".")[0]
    stray = ck.dir / f"{stem}.{'0' * 32}.arrow"
    stray.write_bytes(b"killed mid-write")
    again = ck.write("p", ck.partition_key("p", {"v": 2}), b.schema, [_batch(6)])
    assert not (ck.dir / first.file).exists() and stray.exists()  # replaced: gone at once
    ck.commit_stage({"p": again.key})
    assert not stray.exists() and (ck.dir / again.file).is_file()
    assert (ck.dir / other.file).is_file()  # not this stage's: left


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 40), st.integers(1, 16))
def test_segment_batch_split_round_trips(n: int, rows: int) -> None:
    segs = [Segment(f"s{i % 4}", 7 * i, 7 * i + 3, {"x": float(i), "y": np.nan}) for i in range(n)]
    parts = list(SegmentBatch.split(segs, ["x", "y"], rows))
    assert all(p.num_rows <= rows for p in parts)
    back = [s for p in parts for s in p.to_segments()]
    want = sorted(segs, key=lambda s: s.key)
    assert [s.key for s in back] == [s.key for s in want]
    assert [s.features["x"] for s in back] == [s.features["x"] for s in want]
    assert all(np.isnan(s.features["y"]) for s in back)
    assert [i[0::2] for p in parts for i in p.ids()] == [s.key for s in want]


def test_sigkill_mid_stage_then_restart_reuses_valid_partitions_only(
    tmp_path: Path, adsb_job_dict, adsb_sources, adsb_schema, adsb_adapter
) -> None:
    job = json.loads(json.dumps(adsb_job_dict))
    job["sources"] = [str(p) for p in adsb_sources[:6]]
    strategy = json.loads((STRATEGIES / "uniform-bins.json").read_text())
    root = tmp_path / "ck"
    args = tmp_path / "args.json"
    args.write_text(
        json.dumps({"job": job, "strategy": strategy, "n": 20, "root": str(root), "kill_after": 3})
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, str(HERE / "_pool_child.py"), str(args)], env=env, capture_output=True
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]
    (stage,) = root.glob("*/score")
    commits = sorted(stage.glob("p-*.commit.json"))
    assert len(commits) == 3 and not (stage / "_stage.commit.json").exists()
    # corrupt one committed partition: the restart must rebuild it, not trust it
    victim = stage / json.loads(commits[0].read_text())["file"]
    raw = bytearray(victim.read_bytes())
    raw[-40] ^= 0x01
    victim.write_bytes(bytes(raw))

    seg = Segmenter(**job["segmenter"], sample_hz=adsb_schema.sample_hz)
    st_ = load_strategy(strategy, adsb_schema)
    res = select_on_disk(
        adsb_schema, adsb_adapter, job["sources"], seg, st_, 20, checkpoint_dir=root
    )
    ck = res.checkpoint
    assert (ck["hits"], ck["rejected"], ck["misses"]) == (2, 1, 4)
    assert (stage / "_stage.commit.json").is_file()
    fresh = select_on_disk(adsb_schema, adsb_adapter, job["sources"], seg, st_, 20)
    assert fresh.checkpoint["hits"] == 0
    assert [(s.key, s.priority, s.bin) for s in res.selected] == [
        (s.key, s.priority, s.bin) for s in fresh.selected
    ]
    # one attempt file per partition is left: the killed and corrupted attempts are swept
    assert len(list(stage.glob("p-*.arrow"))) == 6
