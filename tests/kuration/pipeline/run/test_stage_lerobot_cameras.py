"""``layout="lerobot"`` with cameras: each admitted episode's video is remuxed when its cut
falls on keyframes, re-encoded otherwise, under the commit protocol.

The data come from ``robovet demo --v3 --clean`` (robovet 0.2.2, MIT; a dev dependency)
through ``kur init``.  robovet starts every episode of its shared MP4s on a keyframe, so
its admitted episodes are remuxed; a copy whose videos were encoded again with keyframes
only at frames 0, 98 and 195 (the first three episode starts) keeps one admitted episode
(frames 98..195) remuxable and makes the others re-encode.  lerobot itself loads both in
the slow test (the cached Python 3.12 environment of tests/lerobot_env.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from kuration import iter_shards
from kuration.cli.main import main as kur_main
from kuration.errors import DatasetIntegrityError, OutputSpecError
from kuration.output.spec import OutputSpec

av = pytest.importorskip("av")

BIN = Path(sys.executable).parent
KEYS = (0, 98, 195)  # frames of the rekeyed copy that are keyframes


def _rekey(video: Path, keys: tuple[int, ...]) -> None:
    """Encode ``video`` again (same frames' timestamps) with keyframes only at ``keys``."""
    with av.open(str(video)) as src:
        vs = src.streams.video[0]
        tb, rate = vs.time_base, vs.average_rate
        frames = [(f.pts, f.to_ndarray(format="rgb24")) for f in src.decode(vs)]
    tmp = video.with_suffix(".tmp.mp4")
    with av.open(str(tmp), "w") as dst:
        opts = {"g": "1000", "crf": "18", "threads": "1", "x264-params": "scenecut=0:forced-idr=1"}
        st = dst.add_stream("libx264", rate=rate, options=opts)
        st.width, st.height, st.pix_fmt = frames[0][1].shape[1], frames[0][1].shape[0], "yuv420p"
        st.codec_context.time_base = tb
        for i, (pts, img) in enumerate(frames):
            f = av.VideoFrame.from_ndarray(img, format="rgb24")
            f.pts = pts
            f.time_base = tb
            if i in keys:
                f.pict_type = av.video.frame.PictureType.I
            dst.mux(st.encode(f))
        dst.mux(st.encode(None))
    os.replace(tmp, video)


def _keyframes(video: Path) -> list[int]:
    with av.open(str(video)) as c:
        pts = sorted((p.pts, p.is_keyframe) for p in c.demux(c.streams.video[0]) if p.size)
    return [i for i, (_, k) in enumerate(pts) if k]


def _jobs(demo: Path, where: Path) -> dict[str, Path]:
    assert kur_main(["init", str(demo), "--out", str(where)]) == 0
    job = json.loads((where / "job.json").read_text())
    out = json.loads((where / "output.json").read_text())
    paths = {}
    for name, extra in (("npz", {}), ("lerobot", {"layout": "lerobot", "container": "parquet"})):
        (where / f"out_{name}.json").write_text(json.dumps({**out, **extra}))
        (where / f"job_{name}.json").write_text(json.dumps({**job, "output": f"out_{name}.json"}))
        paths[name] = where / f"job_{name}.json"
    return paths


def _run(job: Path, out: Path, *more: str) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # whole episodes against a tiny budget
        return kur_main(["run", str(job), "--out", str(out), *more])


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """robovet's clean demo and its rekeyed copy, each in the npz and the lerobot layout."""
    tmp = tmp_path_factory.mktemp("lrcam")
    demo = tmp / "demo"
    cmd = [str(BIN / "robovet"), "demo", str(demo), "--v3", "--clean"]
    subprocess.run(cmd, check=True, capture_output=True)
    rekeyed = tmp / "rekeyed"
    shutil.copytree(demo, rekeyed)
    for video in sorted(rekeyed.glob("videos/*/chunk-000/file-000.mp4")):
        _rekey(video, KEYS)
        assert _keyframes(video) == list(KEYS)
    out = {}
    for name, src in (("demo", demo), ("rekeyed", rekeyed)):
        jobs = _jobs(src, tmp / f"job_{name}")
        for layout, job in jobs.items():
            assert _run(job, tmp / f"{name}_{layout}") == 0
            out[f"{name}_{layout}"] = tmp / f"{name}_{layout}"
        out[f"{name}_job"] = jobs["lerobot"]
    return out


def _by_key(root: Path) -> dict[tuple, dict[str, np.ndarray]]:
    return {
        (e["split"], e["source_id"], e["span_index"] or -1, e["shard_index"]): a
        for a, e in iter_shards(root, with_meta=True)
    }


def _how(root: Path) -> dict[str, str]:
    man = json.loads((root / "dataset_manifest.json").read_text())
    return {e["source_id"]: e["videos"]["cam_top"]["how"] for e in man["shards"]}


def test_keyframe_cuts_are_remuxed_and_read_back_as_the_npz_layout(written) -> None:
    lr = written["demo_lerobot"]
    config = json.loads((lr / "config.json").read_text())
    videos = config["results"]["lerobot_videos"]
    assert videos["remuxed"] == 6 and videos["reencoded"] == 0  # 3 episodes, 2 cameras
    ours, theirs = _by_key(lr), _by_key(written["demo_npz"])
    assert ours.keys() == theirs.keys() and ours
    for k, a in ours.items():
        assert a.keys() == theirs[k].keys() and "cam_top" in a
        for name in a:
            assert a[name].dtype == theirs[k][name].dtype
            np.testing.assert_array_equal(a[name], theirs[k][name], err_msg=name)
    info = json.loads((lr / "meta" / "info.json").read_text())
    assert info["features"]["observation.images.cam_top"]["dtype"] == "video"
    assert (
        info["video_path"] == "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
    )
    eps = pq.read_table(lr / "meta" / "episodes" / "chunk-000" / "file-000.parquet").to_pylist()
    for ep in eps:
        pre = "videos/observation.images.cam_wrist/"
        assert ep[pre + "file_index"] == ep["episode_index"]
        assert ep[pre + "from_timestamp"] == 0.0
        assert ep[pre + "to_timestamp"] == pytest.approx(ep["length"] / info["fps"])
    listed = {f["path"] for f in json.loads((lr / "dataset_manifest.json").read_text())["files"]}
    assert {p.relative_to(lr).as_posix() for p in lr.glob("videos/**/*.mp4")} <= listed


def test_cuts_off_keyframes_are_reencoded(written) -> None:
    lr = written["rekeyed_lerobot"]
    videos = json.loads((lr / "config.json").read_text())["results"]["lerobot_videos"]
    assert videos["per_camera"]["observation.images.cam_top"] == {"remuxed": 1, "reencoded": 2}
    how = _how(lr)
    assert how == {
        "ep000001_task000": "remuxed",  # frames 98..195: keyframe to keyframe
        "ep000002_task000": "reencoded",  # ends at frame 332, not a keyframe
        "ep000003_task000": "reencoded",  # starts at frame 332
    }
    ours, theirs = _by_key(lr), _by_key(written["rekeyed_npz"])
    assert ours.keys() == theirs.keys()
    for k, a in ours.items():
        np.testing.assert_array_equal(a["state"], theirs[k]["state"])
        np.testing.assert_array_equal(a["_present_cam_top"], theirs[k]["_present_cam_top"])
        diff = np.abs(a["cam_top"].astype(int) - theirs[k]["cam_top"])
        if how[k[1]] == "remuxed":
            assert diff.max() == 0
        else:  # the codec's loss at CRF 10, never a shifted or missing frame
            assert 0 < diff.mean() < 3.0


def test_reruns_and_workers_write_the_same_bytes(written, tmp_path: Path) -> None:
    job = written["rekeyed_job"]
    assert _run(job, tmp_path / "again", "--workers", "2", "--executor", "process") == 0
    for rel in ("videos", "data", "meta"):
        for p in sorted((written["rekeyed_lerobot"] / rel).rglob("*")):
            if p.is_file():
                q = tmp_path / "again" / p.relative_to(written["rekeyed_lerobot"])
                assert p.read_bytes() == q.read_bytes(), p


def test_a_changed_video_is_refused(written, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(written["demo_lerobot"], copy)
    video = next(copy.glob("videos/observation.images.cam_top/chunk-000/file-001.mp4"))
    data = bytearray(video.read_bytes())
    data[len(data) // 2] ^= 1
    video.write_bytes(bytes(data))
    with pytest.raises(DatasetIntegrityError, match="SHA-256|bytes"):
        list(iter_shards(copy))


def test_resume_rewrites_only_a_changed_video(written, tmp_path: Path) -> None:
    dest = tmp_path / "ds"
    shutil.copytree(written["rekeyed_lerobot"], dest)
    cams = dest / "videos" / "observation.images.cam_top" / "chunk-000"
    bad, good = cams / "file-002.mp4", cams / "file-001.mp4"
    bad.write_bytes(bad.read_bytes()[:-10])
    good_inode = good.stat().st_ino
    assert _run(written["rekeyed_job"], dest, "--resume") == 0
    for p in sorted((written["rekeyed_lerobot"] / "videos").rglob("*.mp4")):
        assert p.read_bytes() == (dest / p.relative_to(written["rekeyed_lerobot"])).read_bytes()
    assert good.stat().st_ino == good_inode  # its bytes matched: left in place
    assert len(list(iter_shards(dest))) == len(list(iter_shards(written["rekeyed_lerobot"])))


def test_a_camera_must_be_rgb_uint8() -> None:
    spec = {
        "layout": "lerobot",
        "container": "parquet",
        "presence_mask": True,
        "shard_length": 10,
        "modalities": {"cam": {"dtype": "uint8", "shape": [8, 8, 1], "source": "media:cam"}},
    }
    with pytest.raises(OutputSpecError, match="RGB cameras"):
        OutputSpec.from_dict(spec)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["demo", "rekeyed"])
def test_the_checkers_pass_and_lerobot_decodes_our_frames(written, tmp_path, name) -> None:
    from lerobot_env import lerobot_python

    lr = written[f"{name}_lerobot"]
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
    keys = ["observation.state", "observation.images.cam_top", "observation.images.cam_wrist"]
    subprocess.run(
        [lerobot_python(), str(script), str(lr), str(out), *keys],
        check=True,
        capture_output=True,
        env=env,
        timeout=600,
    )
    got = np.load(out)
    shards = sorted(
        iter_shards(lr, with_meta=True), key=lambda p: (p[1]["lerobot_episode"], p[1]["row_start"])
    )
    assert int(got["n"]) == sum(e["n_steps"] for _, e in shards)
    np.testing.assert_array_equal(
        got["observation.state"], np.concatenate([a["state"] for a, _ in shards])
    )
    for cam in ("cam_top", "cam_wrist"):
        ours = np.concatenate([a[cam][: e["n_steps"]] for a, e in shards])
        theirs = got[f"observation.images.{cam}"].transpose(0, 2, 3, 1)  # float CHW in [0, 1]
        np.testing.assert_array_equal(np.rint(theirs * 255).astype(np.uint8), ours)
