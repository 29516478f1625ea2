"""FeatureEngine: define order, feature references, registered metrics, batched scoring."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent / "dsl"))
from dsl_support import SCHEMA, make_buf, make_table, random_values

from kuration import Segment, load_strategy
from kuration.errors import MetricCompileError, StrategyError
from kuration.extend import FeatureEngine, build_window, register_metric, registered_metrics
from kuration.metrics.features import _METRICS


@pytest.fixture
def table():
    rng = np.random.default_rng(0)
    present = rng.random((60, 4)) > 0.2
    return make_table(random_values(rng, 60, 4), present)


@pytest.fixture
def temp_metric():
    names: list[str] = []

    def reg(name, fn):
        register_metric(name)(fn)
        names.append(name)
        return fn

    yield reg
    for n in names:
        _METRICS.unregister(n)


def test_features_read_earlier_features(table) -> None:
    eng = FeatureEngine(
        {
            "speed": "field:pos | speed | mean",
            "speed_kmh": "feature:speed | to:km/h | max",
            "fast": "feature:speed_kmh | where:>1 | count",
        },
        SCHEMA,
    )
    assert eng.feature_names == ("speed", "speed_kmh", "fast")
    assert eng.compiled["speed_kmh"].unit == "km/h"
    buf = build_window(table, 0, 30)
    out = eng.score_window(buf)
    assert out["speed_kmh"] == pytest.approx(out["speed"] * 3.6)
    assert out["fast"] == (1.0 if out["speed_kmh"] > 1 else 0.0)


def test_a_feature_alone_recomputes_its_dependency(table) -> None:
    eng = FeatureEngine({"a": "field:hp | max", "b": "feature:a | abs | mean"}, SCHEMA)
    buf = build_window(table, 5, 25)
    assert eng.compiled["b"](buf) == pytest.approx(abs(eng.compiled["a"](buf)))
    assert eng.compiled["b"].deps == {"a": eng.compiled["a"]}


@pytest.mark.parametrize(
    ("define", "match"),
    [
        ({"a": "feature:b | mean", "b": "field:hp | mean"}, "'b', which is defined later"),
        ({"a": "feature:a | mean"}, "reads itself"),
        ({"a": "field:hp | mean", "b": "feature:aa | mean"}, "no feature 'aa'.*did you mean 'a'"),
        ({"a": "field:hp | mean", "b": "feature:a | speed | mean"}, "position"),
        ({"a": "field:hp | mean", "b": "feature:a | n_changes"}, "time series"),
        ({"a": "field:hp | mean", "b": "feature:a | present | mean"}, "selects entities"),
        ({"a": "field:hp | mean", "b": "feature:a | diff | mean"}, "time series"),
    ],
)
def test_bad_feature_references_fail_at_compile(define, match) -> None:
    with pytest.raises(MetricCompileError, match=match):
        FeatureEngine(define, SCHEMA)


def test_load_strategy_rejects_a_forward_reference() -> None:
    spec = {
        "define": {"ratio": "feature:speed | mean", "speed": "field:pos | speed | mean"},
        "method": "top-k",
        "params": {"by": "ratio"},
    }
    with pytest.raises(MetricCompileError, match="defined later") as exc:
        load_strategy(spec, SCHEMA)
    assert exc.value.metric == "ratio" and exc.value.token == "feature:speed"


def test_registered_metrics_run_per_window(table, temp_metric) -> None:
    def hp_range(buf):
        v = buf.values["hp"][..., 0][buf.valid("hp")]
        return float(v.max() - v.min()) if v.size else math.nan

    temp_metric("test_hp_range", hp_range)
    assert "test_hp_range" in registered_metrics()
    eng = FeatureEngine({"hp_max": "field:hp | max"}, SCHEMA, ["test_hp_range"])
    assert eng.feature_names == ("hp_max", "test_hp_range")
    segs = [Segment("toy", s, s + 20) for s in (0, 10, 40)]
    eng.score_segments(table, segs)
    for s in segs:
        ref = eng.score_window(build_window(table, s.start_idx, s.end_idx))
        assert s.features == pytest.approx(ref, nan_ok=True)
        assert list(s.features) == ["hp_max", "test_hp_range"]


def test_registered_metric_returning_inf_is_stored_as_nan(table, temp_metric) -> None:
    temp_metric("test_overflowing", lambda buf: float(buf.n_steps) * 1e308 * 10)
    temp_metric("test_minus_inf", lambda buf: -math.inf)
    eng = FeatureEngine({}, SCHEMA, ["test_overflowing", "test_minus_inf"])
    segs = [Segment("toy", 0, 20)]
    eng.score_segments(table, segs)
    assert all(math.isnan(v) for v in segs[0].features.values())
    assert all(math.isnan(v) for v in eng.score_window(build_window(table, 0, 20)).values())


def test_unknown_or_colliding_registered_metric_fails_at_load(temp_metric) -> None:
    with pytest.raises(StrategyError, match="unknown registered metric 'no_such_metric'"):
        FeatureEngine({}, SCHEMA, ["no_such_metric"])
    spec = {
        "define": {"a": "field:hp | mean"},
        "registered": ["no_such_metric"],
        "method": "top-k",
        "params": {"by": "a"},
    }
    with pytest.raises(StrategyError, match="no_such_metric"):
        load_strategy(spec, SCHEMA)
    temp_metric("a_dup", lambda buf: 0.0)
    with pytest.raises(StrategyError, match="collides"):
        FeatureEngine({"a_dup": "field:hp | mean"}, SCHEMA, ["a_dup"])
    with pytest.raises(ValueError, match="already registered"):
        register_metric("a_dup")(lambda buf: 1.0)


def test_score_segments_groups_lengths_and_matches_score_window(table) -> None:
    eng = FeatureEngine(
        {
            "v": "field:pos | speed | p90",
            "n": "field:hp | entities:count | mean",
            "share": "feature:n | where:>2 | frac",
        },
        SCHEMA,
    )
    segs = [
        Segment("toy", 0, 10),
        Segment("toy", 5, 35),
        Segment("toy", 3, 13),
        Segment("toy", 30, 60),
        Segment("toy", 20, 30),
    ]
    eng.score_segments(table, segs)
    for s in segs:
        ref = eng.score_window(build_window(table, s.start_idx, s.end_idx))
        for k, v in ref.items():
            assert s.features[k] == pytest.approx(v, rel=1e-12, nan_ok=True), (k, s.key)


def test_score_window_on_a_hand_built_buffer() -> None:
    hp = np.arange(12, dtype=float).reshape(6, 2, 1)
    buf = make_buf({"hp": hp}, np.ones((6, 2), bool))
    eng = FeatureEngine({"m": "field:hp | mean", "top": "field:hp | entities:max | p50"}, SCHEMA)
    assert eng.score_window(buf) == {"m": 5.5, "top": 6.0}
    assert eng.to_dict() == {"define": dict(eng.define), "registered": []}
