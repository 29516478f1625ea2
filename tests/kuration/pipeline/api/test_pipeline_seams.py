"""``Pipeline.transform`` / ``Pipeline.score`` run: the seam uses join the strategy's
``transforms``/``scorers`` (validated before any data is read) and give what the job file gives."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
from pathlib import Path

import numpy as np
import pytest

from kuration import Pipeline, run_job
from kuration.errors import ScorerError, StrategyError, TransformError
from kuration.pipeline.spec.job import load_job

EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "video" / "job.json"
MOTION = {"inputs": {"frames": "media:frame"}, "lookbehind": 1, "params": {"size": [36, 64]}}


def _carphone_job(video_file) -> dict:
    """The shipped video example on carphone (176x144, 30000/1001 fps, 2-second spans)."""
    job, _ = load_job(EXAMPLE)
    job["sources"] = [str(video_file("carphone_pristine.mp4"))]
    job["schema"]["sample_hz"] = 30000 / 1001
    frame = {"shape": [144, 176, 3], "frame_rate": "30000/1001", "time_base": "1/30000"}
    job["schema"]["media"]["frame"].update(frame)
    job["output"]["modalities"]["frame"]["shape"] = frame["shape"]
    return job


def _bare(job: dict, **strategy) -> Pipeline:
    """The job's pipeline with its strategy's transforms taken out (set as a Strategy, which
    ``metrics`` takes as is: it ranks by a feature that only a seam use adds)."""
    p = Pipeline.from_job(job)
    return p.metrics(dataclasses.replace(p.strategy_, transforms=(), **strategy))


def _digests(root: Path) -> dict[str, str]:
    skip = {"config.json", "dataset.commit.json", ".kuration-writer.lock"}
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name not in skip
    }


@pytest.mark.slow
def test_pipeline_transform_equals_the_job_file_route(tmp_path, video_file) -> None:
    job = _carphone_job(video_file)
    run_job(job, tmp_path / "job", workers=1)
    p = _bare(job).transform("motion_energy", **MOTION)
    assert p.strategy_.to_dict() == Pipeline.from_job(job).strategy_.to_dict()
    assert [c.name for c in p.explain().stage("transforms").components] == ["motion_energy"]
    p.write(tmp_path / "seam")
    job_files = _digests(tmp_path / "job")
    assert any(f.endswith(".npz") for f in job_files)
    assert _digests(tmp_path / "seam") == job_files


def test_a_bad_seam_use_fails_before_any_data_is_read(tmp_path, video_file) -> None:
    job = _carphone_job(video_file)
    job["sources"] = [str(tmp_path / "missing.mp4")]  # never opened: the use fails first
    p = _bare(job)
    with pytest.raises(ScorerError, match="no_such"):
        p.score("novelty", params={"features": ["no_such"]})
    with pytest.raises(TransformError):
        p.transform("motion_energy", inputs={"frames": "media:nope"})
    with pytest.raises(StrategyError, match="already a feature"):
        p.transform("motion_energy", **MOTION).transform("motion_energy", **MOTION)


def test_a_strategy_set_after_seam_uses_gets_them(video_file) -> None:
    job = _carphone_job(video_file)
    doc = copy.deepcopy(job["strategy"])
    doc.pop("transforms")
    p = _bare(job).transform("motion_energy", **MOTION)
    assert [t["name"] for t in p.strategy_.transforms] == ["motion_energy"]
    assert p.metrics(doc).strategy_.to_dict() == p.strategy_.to_dict()


@pytest.mark.slow
def test_pipeline_score_writes_a_feature_the_selection_ranks_by(tmp_path, video_file) -> None:
    p = (
        _bare(_carphone_job(video_file))
        .transform("motion_energy", **MOTION)
        .score("novelty", params={"features": ["motion_energy"], "k": 2}, output="novelty")
        .method("top-k", by="novelty", descending=True)
        .select(3)
    )
    assert [c.name for c in p.explain().stage("scorers").components] == ["novelty"]
    result = p.run()
    pool = result.pool
    energy = np.array([s.features["motion_energy"] for s in pool])
    novelty = np.array([s.features["novelty"] for s in pool])
    # novelty by hand: mean distance to the 2 nearest other segments' standardized energy
    z = (energy - energy.mean()) / energy.std()
    d = np.abs(z[:, None] - z[None, :])
    np.fill_diagonal(d, np.inf)
    np.testing.assert_allclose(novelty, np.sort(d, axis=1)[:, :2].mean(axis=1), rtol=1e-9)
    chosen = [s.features["novelty"] for s in result.selected]
    assert chosen == sorted(novelty.tolist(), reverse=True)[:3]
