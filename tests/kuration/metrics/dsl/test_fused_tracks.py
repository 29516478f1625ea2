"""Track-scoped windows of many entities scored in one pass over stacked tracks must give
the same bits as scoring each entity over its own table (the path they replaced)."""

from __future__ import annotations

import numpy as np
import pytest
from dsl_support import SCHEMA, make_table, random_values
from hypothesis import given, settings
from hypothesis import strategies as hst

from kuration.contracts.buffer import stacked_tracks
from kuration.contracts.segment import Segment, Segmenter
from kuration.metrics.features import FeatureEngine

# every kind of stage that looks back (diff, speed, accel, jerk, heading, angle_delta),
# order statistics, moments, filters, aggregations over the one entity, globals and events
DEFINE = {
    "hp_mean": "field:hp | mean",
    "hp_std": "field:hp | std",
    "temp_var": "field:temp | var",
    "temp_rms": "field:temp | rms",
    "hp_min": "field:hp | min",
    "hp_max": "field:hp | max",
    "hp_median": "field:hp | median",
    "hp_iqr": "field:hp | iqr",
    "temp_p90": "field:temp | p90",
    "hp_count": "field:hp | count",
    "hp_frac": "field:hp | where:>0 | frac",
    "raw_entropy": "field:raw | entropy:8",
    "raw_changes": "field:raw | n_changes",
    "raw_crossings": "field:raw | zero_crossings",
    "hp_diff": "field:hp | diff | sum",
    "hp_path": "field:hp | path_length",
    "speed_mean": "field:pos | speed | mean",
    "speed_p10": "field:pos | speed | present:50 | p10",
    "accel_median": "field:pos3 | accel | median",
    "jerk_rms": "field:pos3 | rms_jerk",
    "geo_speed": "field:geo | speed | max",
    "geo_turn": "field:geo | heading | angle_delta | abs | sum",
    "heading_rate": "field:heading | angular_rate | mean",
    "yaw_delta": "field:yaw | angle_delta | median",
    "hull": "field:pos | hull_area",
    "present": "field:pos | duration_present",
    "nn": "field:pos | nn_dist | mean",
    "formation": "field:pos | formation:speed | mean",
    "fire": "field:buttons | bit:fire | mean",
    "red": "field:team | is:red | frac",
    "n_ent": "field:hp | entities:count | mean",
    "wind": "global:wind | diff | std",
    "goals": "event:goal | sum",
    "rate_of_hp": "feature:hp_mean | mean",
}


def _table(seed: int, t: int, e: int, p_hole: float):
    """Entities that appear and leave at random ticks, with holes, absent ticks, signed
    zeros and missing globals."""
    rng = np.random.default_rng(seed)
    present = np.zeros((t, e), bool)
    for j in range(e):
        a, b = sorted(rng.integers(0, t + 1, 2))
        present[a:b, j] = rng.random(b - a) >= p_hole
    vals = random_values(rng, t, e)
    for k, v in vals.items():
        holes = rng.random((t, e)) < p_hole
        vals[k] = np.where(holes[..., None], np.nan, v)
    zero = rng.random((t, e, 1)) < 0.2
    vals["hp"] = np.where(zero, np.where(rng.random((t, e, 1)) < 0.5, 0.0, -0.0), vals["hp"])
    wind = np.where(rng.random((t, 1)) < p_hole, np.nan, rng.normal(5, 2, (t, 1)))
    glob = {"wind": wind, "phase": rng.integers(0, 2, (t, 1)).astype(float)}
    ids = tuple(f"e{j}" for j in range(e))
    table = make_table(vals, present, globals_=glob, events={"goal": rng.random(t) < 0.3}, ids=ids)
    return table, present, ids


def _segments(present, ids, shapes) -> list[Segment]:
    out: list[Segment] = []
    for length, stride in shapes:
        out += Segmenter(length, stride, scope="track").segments("toy", present, ids)
    return out


def _bits(segs: list[Segment]) -> list[tuple]:
    return [
        (s.entity, s.start_idx, s.end_idx, np.array(list(s.features.values())).view(np.uint64))
        for s in segs
    ]


def _assert_same_bits(fused: list[Segment], per_entity: list[Segment]) -> None:
    assert [s.features.keys() for s in fused] == [s.features.keys() for s in per_entity]
    for a, b in zip(_bits(fused), _bits(per_entity), strict=True):
        assert a[:3] == b[:3]
        np.testing.assert_array_equal(a[3], b[3], err_msg=str(a[:3]))


def _score_both(engine: FeatureEngine, table, present, ids, shapes):
    fused = _segments(present, ids, shapes)
    engine.score_segments(table, fused)
    per_entity = _segments(present, ids, shapes)
    for entity in dict.fromkeys(s.entity for s in per_entity):
        engine.score_segments(table, [s for s in per_entity if s.entity == entity])
    return fused, per_entity


ENGINE = FeatureEngine(DEFINE, SCHEMA)


@settings(max_examples=60, deadline=None)
@given(
    seed=hst.integers(0, 2**32 - 1),
    t=hst.integers(1, 60),
    e=hst.integers(2, 6),
    p_hole=hst.sampled_from([0.0, 0.2, 0.6]),
    shapes=hst.lists(
        hst.tuples(hst.integers(1, 12), hst.integers(1, 7)), min_size=1, max_size=2, unique=True
    ),
)
def test_fused_tracks_equal_per_entity_bits(seed, t, e, p_hole, shapes) -> None:
    table, present, ids = _table(seed, t, e, p_hole)
    assert ENGINE._fusible
    fused, per_entity = _score_both(ENGINE, table, present, ids, shapes)
    _assert_same_bits(fused, per_entity)


@pytest.mark.parametrize("expr", ["field:hp | id:e1 | mean", "field:pos | dist_to:e0 | mean"])
def test_entity_references_keep_the_per_entity_path(expr) -> None:
    engine = FeatureEngine({"hp": "field:hp | mean", "ref": expr}, SCHEMA)
    assert not engine._fusible
    table, present, ids = _table(7, 40, 3, 0.2)
    fused, per_entity = _score_both(engine, table, present, ids, [(8, 3)])
    _assert_same_bits(fused, per_entity)
    if expr.startswith("field:hp | id:"):  # e1's own windows read it; a stacked table could not
        assert any(np.isfinite(s.features["ref"]) for s in fused if s.entity == "str:e1")


def test_stacked_tracks_lays_blocks_end_to_end_on_the_stride() -> None:
    table, present, _ = _table(3, 20, 3, 0.0)
    stacked, offsets = stacked_tracks(table, [(2, 4, 9), (0, 0, 3)], align=3)
    assert offsets.tolist() == [0, 6] and stacked.n_steps == 9
    assert stacked.n_entities == 1
    np.testing.assert_array_equal(stacked.present[:5, 0], present[4:9, 2])
    np.testing.assert_array_equal(stacked.present[6:, 0], present[0:3, 0])
    assert not stacked.present[5, 0] and np.isnan(stacked.values["hp"][5]).all()
    np.testing.assert_array_equal(stacked.values["pos"][6:, 0], table.values["pos"][0:3, 0])
    np.testing.assert_array_equal(stacked.globals["wind"][:5], table.globals["wind"][4:9])
    assert not stacked.events["goal"][5]
