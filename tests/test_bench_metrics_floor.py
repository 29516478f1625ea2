"""``bench/metrics_floor.py``: the floor of ``bench_metrics.py``'s feature pass computes the
engine's features, bit for bit, at the strides the benchmark measures and at a stride where
the engine slides the median; its timer sees every part."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from kuration import SchemaSpec, Segmenter
from kuration.extend import FeatureEngine
from kuration.pipeline.spec.job import load_job
from kuration.sources import adapter_from_dict

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, mod)
    spec.loader.exec_module(mod)
    return mod


floor = _load("metrics_floor")
bench_metrics = _load("bench_metrics")


@pytest.fixture(scope="module")
def tables(adsb_sources: list[Path]) -> list:
    job, _ = load_job(bench_metrics.JOB)
    schema = SchemaSpec.from_dict(job["schema"])
    adapter = adapter_from_dict(job["adapter"], schema)
    return [adapter.read_table(str(p)) for p in adsb_sources[:3]], schema


@pytest.mark.parametrize("stride", [60, 10, 5, 1])
def test_floor_features_are_the_engines_bits(tables, stride: int) -> None:
    tabs, schema = tables
    engine = FeatureEngine(bench_metrics.DEFINE, schema)
    seg = Segmenter(120, stride)
    checked = 0
    for t in tabs:
        segs = seg.segments(t.source_id, t.present)
        grid = seg.starts(t.n_steps)
        engine.score_segments(t, segs)
        got = floor.floor_pass(t.values, t.sample_hz, grid, 120)
        idx = np.searchsorted(grid, [s.start_idx for s in segs])
        for name in bench_metrics.DEFINE:
            want = np.array([s.features[name] for s in segs])
            assert want.view(np.uint64).tolist() == got[name][idx].view(np.uint64).tolist(), name
            checked += int(np.isfinite(want).sum())
    assert checked > 10 * len(tabs) * len(bench_metrics.DEFINE)


def test_the_timer_sees_every_feature(tables) -> None:
    tabs, _ = tables
    t = tabs[0]
    timer = floor.Timer()
    out = floor.floor_pass(t.values, t.sample_hz, Segmenter(120, 10).starts(t.n_steps), 120, timer)
    assert set(out) == set(bench_metrics.DEFINE)
    parts = set(timer.spent)
    assert set(floor.STAGE) <= parts and {"climb_std", "gs_max", "ground_frac"} <= parts
    assert all(v >= 0 for v in timer.spent.values())
