"""The built-in ``frozen_frames`` BatchTransform on a robovet camera (``robovet demo --v3
--clean``, robovet 0.2.2, MIT; a dev dependency), as recorded and with a frozen run
injected: 30 frames of episode 1 replaced by the frame before them, encoded again with
PyAV.  The expected share is computed here from frames PyAV decodes directly."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from kuration import SchemaSpec, Segmenter, load_strategy, score_sources
from kuration.errors import TransformError
from kuration.metrics.media_transforms import frozen_pairs
from kuration.sources.lerobot import LeRobotAdapter

av = pytest.importorskip("av")

BIN = Path(sys.executable).parent
CAM = "observation.images.cam_top"
FROZEN = range(120, 150)  # frames of the shared file (episode 1 holds 98..194)
SCHEMA = {
    "name": "so100",
    "sample_hz": 30,
    "fields": [{"name": "state", "kind": "vector", "dims": 6}],
    "media": {"cam_top": {"shape": [120, 160, 3]}},
}


def _freeze(video: Path, frames: range) -> None:
    """Encode ``video`` again, each frame of ``frames`` replaced by the frame before them."""
    with av.open(str(video)) as src:
        vs = src.streams.video[0]
        tb, rate = vs.time_base, vs.average_rate
        decoded = [(f.pts, f.to_ndarray(format="rgb24")) for f in src.decode(vs)]
    still = decoded[frames.start - 1][1]
    tmp = video.with_suffix(".tmp.mp4")
    with av.open(str(tmp), "w") as dst:
        st = dst.add_stream("libx264", rate=rate, options={"crf": "18"})
        st.width, st.height, st.pix_fmt = still.shape[1], still.shape[0], "yuv420p"
        st.codec_context.time_base = tb
        for i, (pts, img) in enumerate(decoded):
            f = av.VideoFrame.from_ndarray(still if i in frames else img, format="rgb24")
            f.pts, f.time_base = pts, tb
            dst.mux(st.encode(f))
        dst.mux(st.encode(None))
    os.replace(tmp, video)


@pytest.fixture(scope="module")
def demos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("frozen")
    cmd = [str(BIN / "robovet"), "demo", str(tmp / "clean"), "--v3", "--clean"]
    subprocess.run(cmd, check=True, capture_output=True)
    shutil.copytree(tmp / "clean", tmp / "frozen")
    _freeze(tmp / "frozen" / "videos" / CAM / "chunk-000" / "file-000.mp4", FROZEN)
    return {"clean": tmp / "clean", "frozen": tmp / "frozen"}


def _score(root: Path) -> list:
    schema = SchemaSpec.from_dict(SCHEMA)
    adapter = LeRobotAdapter(schema, fields={"state": "observation.state"}, media={"cam_top": CAM})
    strategy = load_strategy(
        {
            "define": {},
            "transforms": [
                {"name": "frozen_frames", "inputs": {"frames": "media:cam_top"}, "lookbehind": 1}
            ],
            "method": "top-k",
            "params": {"by": "frozen_fraction"},
        },
        schema,
    )
    uris = list(adapter.expand(str(root)))
    res = score_sources(schema, adapter, uris, Segmenter(window=30, stride=15), strategy)
    return res.segments


def _expected(root: Path) -> dict[str, np.ndarray]:
    """Each episode's frozen pairs (element t: frame t repeats frame t - 1), from frames
    PyAV decodes straight from the shared file."""
    with av.open(str(root / "videos" / CAM / "chunk-000" / "file-000.mp4")) as c:
        gray = np.stack([f.to_ndarray(format="gray") for f in c.decode(video=0)])
    eps = pq.read_table(root / "meta" / "episodes" / "chunk-000" / "file-000.parquet")
    out = {}
    for ep in eps.to_pylist():
        a = round(ep[f"videos/{CAM}/from_timestamp"] * 30)
        # the episode's first frame has no previous frame: never counted
        out[f"ep{ep['episode_index']:06d}"] = np.r_[False, frozen_pairs(gray[a : a + ep["length"]])]
    return out


@pytest.mark.parametrize("name", ["clean", "frozen"])
def test_frozen_fraction_equals_numpy_on_every_window(demos, name) -> None:
    segments = _score(demos[name])
    want = _expected(demos[name])
    assert len(segments) > 20
    for s in segments:
        frozen = want[s.source_id.split("_")[0]]
        lo = max(s.start_idx, 1)
        assert s.features["frozen_fraction"] == pytest.approx(frozen[lo : s.end_idx].mean())
    worst = max(s.features["frozen_fraction"] for s in segments)
    if name == "clean":
        assert worst == 0.0  # robovet's cameras move, slowly, in every frame
    else:
        flagged = {s.source_id for s in segments if s.features["frozen_fraction"] > 0.5}
        assert worst == pytest.approx(23 / 30) and flagged == {"ep000001_task000"}
    # every injected repeat found, nothing else: 30 frozen pairs, all in episode 1
    counts = {ep: int(f.sum()) for ep, f in want.items()}
    assert counts == {f"ep{i:06d}": 30 if name == "frozen" and i == 1 else 0 for i in range(4)}


def test_frozen_frames_needs_a_media_token() -> None:
    schema = SchemaSpec.from_dict(SCHEMA)
    with pytest.raises(TransformError, match="must be a media: token"):
        load_strategy(
            {
                "define": {},
                "transforms": [{"name": "frozen_frames", "inputs": {"frames": "field:state"}}],
                "method": "top-k",
                "params": {"by": "frozen_fraction"},
            },
            schema,
        )


def test_frozen_pairs_kernel() -> None:
    rng = np.random.default_rng(0)
    f0 = rng.integers(0, 254, (8, 8), dtype=np.uint8)
    f0[0, 0] = 100
    f2 = f0 + rng.integers(0, 3, (8, 8), dtype=np.uint8)  # drift of at most 2 levels
    f2[0, 0] = 100
    f3 = f2.copy()
    f3[0, 0] = 103  # one pixel moves by 3 levels
    got = frozen_pairs(np.stack([f0, f0, f2, f3]))
    assert got.tolist() == [True, True, False]
    assert frozen_pairs(np.stack([f0, f0, f2, f3]), tol=3).tolist() == [True, True, True]
    assert frozen_pairs(f0[None]).shape == (0,)
