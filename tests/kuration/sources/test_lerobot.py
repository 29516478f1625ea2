"""LeRobotAdapter on LeRobot v3 datasets written by robovet and rdq (see lerobot_data.py)."""

from __future__ import annotations

import json
import os
import shutil
import warnings
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from lerobot_data import jitter_timestamps, rdq_dataset, robovet_demo, split_data_file

from kuration.contracts.schema import SchemaSpec
from kuration.errors import AdapterError, DataRepairWarning, SourceError
from kuration.sources import adapter_from_dict
from kuration.sources.lerobot import LeRobotAdapter, episode_uri

pytest.importorskip("av", reason="media extra")  # a dev dependency: present in CI

FRAME = {"shape": [30, 40, 3], "layout": "HWC", "pixel_format": "rgb24", "frame_rate": "30"}


def _schema(media: bool = True) -> SchemaSpec:
    return SchemaSpec.from_dict(
        {
            "name": "so100",
            "sample_hz": 30,
            "fields": [
                {"name": "state", "kind": "vector", "dims": 6},
                {"name": "action", "kind": "vector", "dims": 6},
                {"name": "gripper", "kind": "scalar"},
            ],
            **({"media": {"top": FRAME}} if media else {}),
        }
    )


def _adapter(*, media: bool = True, repair: tuple[str, ...] = ()) -> LeRobotAdapter:
    return LeRobotAdapter(
        _schema(media),
        fields={
            "state": "observation.state",
            "action": "action",
            "gripper": "observation.state[gripper]",
        },
        media={"top": "observation.images.cam_top"} if media else {},
        repair=repair,
    )


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return robovet_demo(tmp_path_factory.mktemp("lr") / "clean", clean=True)


@pytest.fixture(scope="module")
def defective(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return robovet_demo(tmp_path_factory.mktemp("lr") / "demo", clean=False)


def _data(root: Path) -> dict[str, np.ndarray]:
    t = pq.read_table(root / "data" / "chunk-000" / "file-000.parquet").to_pydict()
    return {k: np.asarray(v, dtype=np.float64) for k, v in t.items()}


def test_each_episode_is_a_source_with_its_rows_on_the_fps_grid(clean: Path) -> None:
    a = _adapter()
    uris = a.expand(str(clean))
    assert uris == [episode_uri(str(clean), i) for i in range(4)]
    data = _data(clean)
    for ep, uri in enumerate(uris):
        table = a.read_table(uri)
        rows = data["episode_index"] == ep
        n = int(rows.sum())
        assert (table.k0, table.n_steps, table.entity_ids) == (0, n, ("robot",))
        np.testing.assert_array_equal(table.values["state"][:, 0], data["observation.state"][rows])
        np.testing.assert_array_equal(table.values["action"][:, 0], data["action"][rows])
        np.testing.assert_array_equal(
            table.values["gripper"][:, 0, 0], data["observation.state"][rows][:, 5]
        )
        assert table.present.all() and table.counts == {"dropped_frames": 0}
        col = table.media["top"]
        assert col.present.all() and len(col.refs) == n  # one frame per tick, lazily
        assert a.source_id(uri) == f"ep{ep:06d}_task000"


def test_frames_are_addressed_inside_the_shared_video_from_the_window_start(clean: Path) -> None:
    a = _adapter()
    uri = episode_uri(str(clean), 2)
    meta = pq.read_table(next((clean / "meta" / "episodes").rglob("*.parquet"))).to_pylist()[2]
    start = meta["videos/observation.images.cam_top/from_timestamp"]
    col = a.read_table(uri).media["top"]
    assert col.refs[0].uri.endswith("cam_top/chunk-000/file-000.mp4")
    assert float(col.refs[0].time) == pytest.approx(start, abs=1e-6)  # not the file's frame 0
    assert [float(r.time) for r in col.refs[:3]] == pytest.approx(
        [start, start + 1 / 30, start + 2 / 30], abs=1e-6
    )


def test_fingerprint_per_episode_covers_the_shared_files_it_reads(
    clean: Path, tmp_path: Path
) -> None:
    root = tmp_path / "copy"
    shutil.copytree(clean, root)
    a = _adapter()
    uris = a.expand(str(root))
    before = [a.fingerprint(u) for u in uris]
    assert len(set(before)) == 4 and before == [a.fingerprint(u) for u in uris]
    video = root / "videos" / "observation.images.cam_top" / "chunk-000" / "file-000.mp4"
    with open(video, "ab") as fh:  # the shared video's bytes change: every episode's identity does
        fh.write(b"\0")
    after = [a.fingerprint(u) for u in uris]
    assert all(x != y for x, y in zip(before, after, strict=True))
    no_media = _adapter(media=False)
    assert no_media.fingerprint(uris[0]) != after[0]  # a read without cameras reads no video


def test_robovet_defects_are_refused_naming_the_episode(defective: Path) -> None:
    a = _adapter()
    with pytest.raises(SourceError, match=r"stats\.json 'observation\.state'.*quantiles.*'stats'"):
        a.expand(str(defective))
    with pytest.raises(SourceError, match=r"episode 1: stored episode stats of 'action': mean"):
        a.read_table(episode_uri(str(defective), 1))
    with pytest.raises(SourceError, match=r"episode 3: camera .*holds 115 frames for 119"):
        a.read_table(episode_uri(str(defective), 3))
    a.read_table(episode_uri(str(defective), 0))  # the others read
    with (
        pytest.warns(DataRepairWarning),
        pytest.raises(SourceError, match=r"episode 1: camera .*off the 1/30 s grid"),
    ):
        _adapter(repair=("stats",)).read_table(episode_uri(str(defective), 1))


def test_robovet_defects_repaired_on_request_are_warned_and_counted(defective: Path) -> None:
    a = _adapter(repair=("stats", "video_windows"))
    with pytest.warns(DataRepairWarning, match="quantiles"):
        uris = a.expand(str(defective))
    with pytest.warns(DataRepairWarning) as rec:
        t1 = a.read_table(uris[1])
        t3 = a.read_table(uris[3])
    assert {w.message.repair for w in rec} == {"stats", "video_windows"}
    assert t1.counts == {"dropped_frames": 0, "repaired_stats": 1, "repaired_video_windows": 1}
    assert t3.counts["missing_frames:top"] == 4
    assert int(t3.media["top"].present.sum()) == t3.n_steps - 4  # no repeated frame, absent


def test_index_range_lie_is_refused_or_read_by_episode_index(tmp_path: Path) -> None:
    root = rdq_dataset(tmp_path / "lie", meta_length_error={2: 12})
    a = _adapter(media=False)
    with pytest.raises(SourceError, match=r"lengths sum to .*'index_ranges'"):
        a.expand(str(root))
    with pytest.raises(
        SourceError, match=r"episode 2: .*holds 83 rows .*length 95 and index range \[149, 232\)"
    ):
        a.read_table(episode_uri(str(root), 2))
    fixed = _adapter(media=False, repair=("index_ranges",))
    with pytest.warns(DataRepairWarning):
        t = fixed.read_table(fixed.expand(str(root))[2])
    assert t.counts["repaired_index_ranges"] == 1 and t.present.all()


def test_episode_in_another_file_than_the_table_says_2401(tmp_path: Path) -> None:
    root = rdq_dataset(tmp_path / "moved")
    split_data_file(root, first=4)
    a = _adapter(media=False)
    uris = a.expand(str(root))  # totals still add up: the lie is per episode
    a.read_table(uris[3])
    with pytest.raises(
        SourceError, match=r"episode 4: data/chunk-000/file-000\.parquet holds 0 rows"
    ):
        a.read_table(uris[4])
    fixed = _adapter(media=False, repair=("index_ranges",))
    with pytest.warns(DataRepairWarning):
        t = fixed.read_table(uris[4])
    expect = pq.read_table(root / "data" / "chunk-000" / "file-001.parquet").to_pydict()
    rows = np.asarray(expect["episode_index"]) == 4
    np.testing.assert_array_equal(
        t.values["action"][:, 0], np.asarray(expect["action"], dtype=np.float64)[rows]
    )


def test_stale_totals_are_refused_or_ignored_on_request(tmp_path: Path) -> None:
    root = rdq_dataset(tmp_path / "stale")
    info = json.loads((root / "meta" / "info.json").read_text())
    info["total_frames"] -= 37
    (root / "meta" / "info.json").write_text(json.dumps(info))
    with pytest.raises(SourceError, match=r"info\.json total_frames is \d+, the dataset holds"):
        _adapter(media=False).expand(str(root))
    with pytest.warns(DataRepairWarning, match="total_frames"):
        assert len(_adapter(media=False, repair=("totals",)).expand(str(root))) == 6


def test_timestamps_off_the_grid_gaps_and_backward_time(tmp_path: Path) -> None:
    root = rdq_dataset(tmp_path / "time", faults={1: "drop_frames", 4: "reverse_time"})
    jitter_timestamps(root, 2, 0.004)
    a = _adapter(media=False)
    uris = [episode_uri(str(root), i) for i in range(6)]
    t1 = a.read_table(uris[1])  # rdq dropped 15 frames: absent ticks, counted
    assert t1.counts["dropped_frames"] == 15 and int((~t1.present).sum()) == 15
    assert np.isnan(t1.values["state"][~t1.present[:, 0]]).all()
    with pytest.raises(SourceError, match=r"episode 2: \d+ timestamps are more than 0\.0001 s off"):
        a.read_table(uris[2])
    with pytest.warns(DataRepairWarning):
        t2 = _adapter(media=False, repair=("timestamps",)).read_table(uris[2])
    assert t2.counts["snapped_timestamps"] == t2.n_steps
    with pytest.raises(SourceError, match=r"episode 4, row \d+: time does not increase"):
        _adapter(media=False, repair=("timestamps",)).read_table(uris[4])


def test_options_are_checked_and_round_trip() -> None:
    a = _adapter(repair=("stats",))
    b = adapter_from_dict(a.to_dict(), a.schema)
    assert isinstance(b, LeRobotAdapter) and b.to_dict() == a.to_dict()
    with pytest.raises(AdapterError, match="unknown repair"):
        _adapter(repair=("everything",))
    with pytest.raises(AdapterError, match="unmapped schema fields"):
        LeRobotAdapter(_schema(False), fields={"state": "observation.state"})


def test_a_v2_dataset_or_a_wrong_rate_is_refused(clean: Path, tmp_path: Path) -> None:
    root = tmp_path / "v2"
    shutil.copytree(clean, root)
    info = json.loads((root / "meta" / "info.json").read_text())
    (root / "meta" / "info.json").write_text(json.dumps({**info, "codebase_version": "v2.1"}))
    with pytest.raises(SourceError, match="only LeRobot v3"):
        _adapter().expand(str(root))
    schema = SchemaSpec.from_dict({**_schema(False).to_dict(), "sample_hz": 25})
    a = LeRobotAdapter(
        schema,
        fields={
            "state": "observation.state",
            "action": "action",
            "gripper": "observation.state[5]",
        },
    )
    with pytest.raises(SourceError, match="sample_hz 25.0 is not the dataset's fps 30"):
        a.expand(str(clean))
    assert not os.path.exists(root / "meta" / "episodes" / "x")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(_adapter().expand(str(clean))) == 4
