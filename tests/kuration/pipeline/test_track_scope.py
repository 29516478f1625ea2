"""Track-scoped scoring (segmenter ``scope: "track"``): one window per entity, so each track
and span is ranked by its own data.  Generated edge cases for the segmenter and the feature
engine (hypothesis), then the real ADS-B quickstart: the same bytes on every runtime and
executor, spans ranked by their own entity's windows, ``explain()`` and load-time errors."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst

from kuration import Pipeline, SchemaSpec, run_job
from kuration.contracts.buffer import build_window
from kuration.contracts.segment import Segmenter
from kuration.contracts.tick import TickTable
from kuration.core.ids import tag_entity_id
from kuration.errors import JobError, KurationError, PipelineError
from kuration.metrics.features import FeatureEngine
from kuration.metrics.transforms import BatchTransform, register_transform
from kuration.pipeline.spec.job import load_job
from kuration.selection.candidates import aggregate_segments

ROOT = Path(__file__).resolve().parents[3]
JOB = ROOT / "examples" / "adsb_quickstart" / "job.json"

SCHEMA = SchemaSpec.from_dict(
    {
        "sample_hz": 1.0,
        "fields": [
            {"name": "pos", "kind": "vector", "dims": 2, "semantics": "position", "unit": "m"},
            {"name": "x"},
        ],
    }
)
DEFINE = {
    "x_mean": "field:x | mean",
    "n_ent": "field:pos | speed | entities:count | mean",
    "speed_p90": "field:pos | speed | p90",
}


def _table(present: np.ndarray, seed: int) -> TickTable:
    rng = np.random.default_rng(seed)
    t, e = present.shape
    pos = np.cumsum(rng.normal(size=(t, e, 2)), axis=0)
    x = rng.normal(size=(t, e, 1))
    pos[~present] = np.nan
    x[~present] = np.nan
    return TickTable(
        "src", SCHEMA, 0, tuple(f"e{i}" for i in range(e)), {"pos": pos, "x": x}, present
    )


# ---- the segmenter -------------------------------------------------------------------


def test_track_windows_are_per_entity_where_it_is_present() -> None:
    present = np.zeros((10, 3), bool)
    present[0:4, 0] = True  # entity a: ticks 0-3
    present[6:10, 2] = True  # entity c: ticks 6-9; entity b never present
    seg = Segmenter(4, 2, scope="track")
    got = [(s.entity, s.start_idx) for s in seg.segments("s", present, ["a", "b", "c"])]
    assert got == [("str:a", 0), ("str:a", 2), ("str:c", 4), ("str:c", 6)]
    scene = Segmenter(4, 2).segments("s", present)
    assert [s.start_idx for s in scene] == [0, 2, 4, 6] and {s.entity for s in scene} == {None}


def test_scope_is_validated_and_left_out_of_a_scene_dict() -> None:
    with pytest.raises(KurationError, match="scope must be 'scene' or 'track'"):
        Segmenter(4, 2, scope="entity")  # type: ignore[arg-type]
    assert "scope" not in Segmenter(4, 2).to_dict()  # scene jobs keep their recorded bytes
    assert Segmenter(**Segmenter(4, 2, scope="track").to_dict()).scope == "track"
    with pytest.raises(KurationError, match="needs 2 entity ids"):
        Segmenter(2, 1, scope="track").segments("s", np.ones((4, 2), bool), ["a"])


@settings(max_examples=40, deadline=None)
@given(
    present=hst.integers(1, 4).flatmap(
        lambda e: hst.lists(
            hst.lists(hst.booleans(), min_size=e, max_size=e), min_size=6, max_size=24
        )
    ),
    window=hst.integers(2, 6),
    stride=hst.integers(1, 4),
    seed=hst.integers(0, 2**16),
)
def test_a_track_window_scores_its_entity_alone(
    present: list[list[bool]], window: int, stride: int, seed: int
) -> None:
    """Every track window's features equal the entity's window scored on its own
    (``build_window(..., entity=)``), the vectorised and streamed paths alike, and
    ``entities:count`` never sees more than that one entity."""
    mask = np.array(present, bool)
    table = _table(mask, seed)
    seg = Segmenter(window, stride, scope="track")
    segs = seg.segments("src", mask, table.entity_ids)
    engine = FeatureEngine(DEFINE, SCHEMA)
    engine.score_segments(table, segs)
    for s in segs:
        alone = engine.score_window(build_window(table, s.start_idx, s.end_idx, entity=s.entity))
        np.testing.assert_array_equal([s.features[n] for n in DEFINE], [alone[n] for n in DEFINE])
        assert s.features["n_ent"] in (1.0,) or np.isnan(s.features["n_ent"])
    streamed = [w for w, _ in seg.stream("src", [table])]
    assert sorted(w.key for w in streamed) == [s.key for s in segs]


# ---- the real ADS-B quickstart -------------------------------------------------------


def _job(sources: list[Path], scope: str, **keys: object) -> dict:
    job, _ = load_job(JOB)
    job["sources"] = [str(p) for p in sources]
    job["budget"] = {"train_hours": 1.0, "test_hours": 0.25}
    job["segmenter"]["scope"] = scope
    # the default before issue 29: its quality predicates fail every scene window (some
    # aircraft of every scene reach the clamp), and this module compares the two scopes
    job["strategy"] = json.loads((JOB.parent / "strategies" / "turns-and-climbs.json").read_text())
    job["output"]["container"] = "parquet"  # streaming writes no npz
    job.update(keys)
    return job


def _run(job: dict, out: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_job(job, out)


def _bytes(root: Path) -> dict[str, bytes]:
    files = [p for s in ("train", "test") for p in sorted((root / s).glob("*"))]
    return {
        str(p.relative_to(root)): p.read_bytes() for p in [*files, root / "dataset_manifest.json"]
    }


@pytest.fixture(scope="module")
def track_memory(tmp_path_factory: pytest.TempPathFactory, adsb_time_ordered: list[Path]):
    return _run(_job(adsb_time_ordered, "track"), tmp_path_factory.mktemp("track") / "mem")


@pytest.mark.parametrize(
    "keys",
    [
        {"pool": "disk"},
        {"streaming": True},
        {"workers": 2, "executor": "process"},
        {"pool": "disk", "workers": 2, "executor": "process"},
    ],
    ids=["disk", "streaming", "process", "disk-process"],
)
def test_track_scope_is_byte_identical_on_every_runtime(
    keys: dict, track_memory, adsb_time_ordered: list[Path], tmp_path: Path
) -> None:
    other = _run(_job(adsb_time_ordered, "track", **keys), tmp_path / "o")
    assert _bytes(Path(other.path)) == _bytes(Path(track_memory.path))
    assert other.config["results"]["examples"] == track_memory.config["results"]["examples"]
    dist = other.config["results"]["distributions"]
    assert dist == track_memory.config["results"]["distributions"]


@pytest.mark.slow
def test_track_scope_is_byte_identical_on_ray(
    track_memory, adsb_time_ordered: list[Path], tmp_path: Path, ray_cluster
) -> None:
    other = _run(_job(adsb_time_ordered, "track", workers=2, executor="ray"), tmp_path / "r")
    assert _bytes(Path(other.path)) == _bytes(Path(track_memory.path))


def test_each_span_is_ranked_by_its_own_entity(
    track_memory, adsb_time_ordered: list[Path], tmp_path: Path
) -> None:
    """Scene scope gives every span of a source the source's windows (few distinct
    priorities); track scope gives each span its own entity's windows."""
    fill = track_memory.fill
    segs = track_memory.scoring.segments
    assert {s.entity for s in segs} != {None} and None not in {s.entity for s in segs}
    assert all(
        s.features["aircraft_mean"] == 1.0
        for s in segs
        if s.features["aircraft_mean"] == s.features["aircraft_mean"]
    )
    by_source: dict[str, list] = {}
    for s in segs:
        by_source.setdefault(s.source_id, []).append(s)
    for c in fill.admitted["train"][:10]:
        p, _ = aggregate_segments(
            by_source[c.source_id], c.first, c.last, "mean", [], entity=tag_entity_id(c.entity_id)
        )
        assert p == c.priority
    scene = _run(_job(adsb_time_ordered, "scene"), tmp_path / "scene")
    n_track = len({c.priority for c in fill.pools["train"]})
    n_scene = len({c.priority for c in scene.fill.pools["train"]})
    assert n_track > 2 * n_scene, (n_track, n_scene)
    top = track_memory.config["results"]["examples"]["top"][0]
    assert top["entity"].startswith("str:")


class _Ones(BatchTransform):
    def transform(self, batch, ctx):  # type: ignore[no-untyped-def]
        return {"ok": np.ones(len(ctx.segment_ids))}


register_transform(
    "test-track-scope-ones", _Ones, inputs={"x": "field:altitude"}, outputs=["ok"], clobber=True
)


def test_explain_shows_the_scope_and_transforms_are_refused(adsb_time_ordered) -> None:
    job = _job(adsb_time_ordered, "track")
    plan = Pipeline.from_job(job).explain()
    assert "scope = track" in plan.render()

    def detail(p: Pipeline) -> dict:
        return next(s for s in p.explain().to_dict()["stages"] if s["kind"] == "segment")["detail"]

    assert detail(Pipeline.from_job(job))["scope"] == "track"
    assert "scope" not in detail(Pipeline.from_job(_job(adsb_time_ordered, "scene")))
    job["strategy"]["transforms"] = [{"name": "test-track-scope-ones"}]
    Pipeline.from_job({**job, "segmenter": {**job["segmenter"], "scope": "scene"}}).explain()
    with pytest.raises(PipelineError, match="transforms .* scope 'scene', not 'track'"):
        Pipeline.from_job(job).explain()


def test_a_bad_scope_is_a_job_error(adsb_time_ordered) -> None:
    job = _job(adsb_time_ordered, "tracks")
    with pytest.raises(JobError, match="scope"):
        Pipeline.from_job(json.loads(json.dumps(job)))
