"""All windows at once (strided views) equal one window at a time (WindowBuffer over its roster)."""

from __future__ import annotations

import numpy as np
import pytest
from dsl_support import SCHEMA, make_table, random_values
from hypothesis import given, settings
from hypothesis import strategies as st

from kuration import Segmenter
from kuration.extend import FeatureEngine, WindowBatch, build_window, compile_metric

# every token appears at least once
DEFINE = {
    "speed_p90": "field:pos | speed | p90",
    "speed_kt": "field:pos | speed | to:kt | mean",
    "fast_share": "feature:speed_kt | where:>1 | frac",
    "accel_med": "field:pos3 | accel | median",
    "jerk_rms": "field:pos3 | rms_jerk",
    "jerk_max": "field:pos3 | jerk | max",
    "turn": "field:heading | angle_delta | abs | p75",
    "yaw_rate": "field:yaw | angular_rate | rms",
    "course": "field:geo | heading | angle_delta | abs | iqr",
    "norm": "field:pos | diff | norm | var",
    "nn": "field:pos | nn_dist | entities:min | mean",
    "to0": "field:geo | dist_to:0 | max",
    "f_speed": "field:pos | formation:speed | mean",
    "f_spread": "field:geo | formation:spread | max",
    "f_area": "field:pos | formation:area | p50",
    "hull": "field:geo | hull_area",
    "hull_one": "field:pos | id:1 | hull_area",
    "path": "field:pos | present:50 | path_length",
    "full": "field:hp | present | entities:mean | std",
    "full_speed": "field:pos | present | speed | mean",
    "fire": "field:buttons | bit:fire | frac",
    "fire_any": "field:buttons | bit:jump | entities:any | duration_present",
    "fire_all": "field:buttons | bit:jump | entities:all | count",
    "blue": "field:team | is:blue | entities:count | max",
    "team_h": "field:team | entropy",
    "team_changes": "field:team | n_changes",
    "hp_hist": "field:hp | entropy:6",
    "hp_blue": "field:hp | where:team=blue | sum",
    "hp_fire": "field:hp | where:buttons.fire | min",
    "hp_live": "field:hp | where:phase=live | entities:sum | mean",
    "hp_pos": "field:hp | where:>0 | count",
    "hp_med": "field:hp | entities:median | max",
    "hp_cnt": "field:hp | entities:count | mean",
    "raw_zc": "field:raw | zero_crossings",
    "raw_tv": "field:raw | abs | path_length",
    "temp_f": "field:temp | to:degF | p10",
    "wind": "global:wind | diff | abs | mean",
    "goal": "event:goal | frac",
    "goal_s": "event:goal | duration_present",
}


def random_table(seed: int, n: int, e: int):
    rng = np.random.default_rng(seed)
    # entities come and go in runs, with scattered holes
    present = np.zeros((n, e), bool)
    for j in range(e):
        a, b = sorted(rng.integers(0, n + 1, 2))
        present[a:b, j] = True
    present &= rng.random((n, e)) > 0.1
    vals = random_values(rng, n, e)
    for k, v in vals.items():
        vals[k] = np.where((rng.random((n, e)) < 0.05)[..., None], np.nan, v)
    glob = {
        "wind": np.where(rng.random((n, 1)) < 0.1, np.nan, rng.normal(5, 2, (n, 1))),
        "phase": rng.integers(0, 2, (n, 1)).astype(float),
    }
    return make_table(vals, present, globals_=glob, events={"goal": rng.random(n) < 0.2})


def assert_same(batched: dict, per_window: list[dict], starts) -> None:
    for name in batched:
        got = np.asarray(batched[name], dtype=float)
        ref = np.array([w[name] for w in per_window], dtype=float)
        np.testing.assert_allclose(
            got, ref, rtol=1e-9, atol=1e-9, equal_nan=True, err_msg=f"{name} starts={starts}"
        )


@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 40),
    e=st.integers(1, 5),
    length=st.integers(1, 14),
    stride=st.integers(1, 6),
)
@settings(max_examples=20, deadline=None)
def test_batched_equals_per_window_on_random_tables(seed, n, e, length, stride) -> None:
    table = random_table(seed, n, e)
    length = min(length, n)
    eng = FeatureEngine(DEFINE, SCHEMA)
    segs = Segmenter(length, stride).segments("toy", table.present)
    eng.score_segments(table, segs)
    per = [eng.score_window(build_window(table, s.start_idx, s.end_idx)) for s in segs]
    assert_same(
        {k: [s.features[k] for s in segs] for k in DEFINE}, per, [s.start_idx for s in segs]
    )


@given(seed=st.integers(0, 2**32 - 1), data=st.data())
@settings(max_examples=10, deadline=None)
def test_irregular_and_unordered_starts(seed, data) -> None:
    n = 60
    table = random_table(seed, n, 4)
    length = data.draw(st.integers(1, 20))
    starts = data.draw(st.lists(st.integers(0, n - length), min_size=1, max_size=12))
    eng = FeatureEngine(DEFINE, SCHEMA)
    got = eng.score_table(table, starts, length)
    per = [eng.score_window(build_window(table, s, s + length)) for s in starts]
    assert_same(got, per, starts)


def test_chunked_evaluation_equals_one_batch() -> None:
    table = random_table(5, 80, 4)
    starts = np.arange(0, 61, 3)
    eng = FeatureEngine(DEFINE, SCHEMA)
    whole = eng.score_table(table, starts, 20)
    eng.chunk_samples = 20 * 4 * 3  # three windows per chunk
    chunked = eng.score_table(table, starts, 20)
    for k in DEFINE:
        np.testing.assert_allclose(chunked[k], whole[k], rtol=1e-12, equal_nan=True, err_msg=k)


def test_sparse_starts_use_a_gather_not_a_grid() -> None:
    table = random_table(1, 400, 3)
    batch = WindowBatch.from_table(table, [0, 1, 390], 10)
    assert batch.grid.tolist() == [0, 1, 390]
    batch = WindowBatch.from_table(table, [30, 0, 60, 30], 10)
    assert batch.grid.tolist() == [0, 30, 60] and batch.index.tolist() == [1, 0, 2, 1]


def test_views_share_memory_with_the_table() -> None:
    table = random_table(2, 100, 3)
    batch = WindowBatch.from_table(table, np.arange(0, 81, 10), 20)
    v = batch.view(table.values["hp"], offset=1)
    assert v.shape == (9, 19, 3, 1)
    assert np.shares_memory(v, table.values["hp"])
    np.testing.assert_array_equal(v[3], table.values["hp"][31:50])


def test_windows_out_of_range_are_rejected() -> None:
    table = random_table(3, 20, 2)
    with pytest.raises(ValueError, match="do not fit"):
        WindowBatch.from_table(table, [15], 10)
    with pytest.raises(ValueError, match="positive"):
        WindowBatch.from_table(table, [0], 0)


def test_metric_evaluate_matches_call() -> None:
    table = random_table(4, 50, 3)
    m = compile_metric("field:pos | speed | p90", SCHEMA)
    batch = WindowBatch.from_table(table, [0, 7, 21, 30], 20)
    got = m.evaluate(batch)
    ref = [m(build_window(table, s, s + 20)) for s in (0, 7, 21, 30)]
    np.testing.assert_allclose(got, ref, equal_nan=True)
    assert FeatureEngine({"a": "field:hp | mean"}, SCHEMA).score_table(table, [], 5)["a"].shape == (
        0,
    )


def test_entity_absent_in_part_of_the_window_is_masked_not_bridged() -> None:
    pos = np.zeros((8, 2, 2))
    pos[:, 0, 0] = np.arange(8) * 100.0  # 1 m per tick
    pos[:, 1, 0] = 5000.0
    present = np.ones((8, 2), bool)
    present[3:5, 0] = False  # entity 0 leaves for two ticks
    pos[5:, 0, 0] += 10_000.0  # and reappears 100 m further on
    table = make_table({"pos": pos}, present)
    eng = FeatureEngine({"v": "field:pos | speed | max", "n": "field:pos | speed | count"}, SCHEMA)
    got = eng.score_table(table, [0, 1, 2], 6)
    # speeds of entity 0 are 2 m/s except across the gap, which has no speed at all
    np.testing.assert_allclose(got["v"], [2.0, 2.0, 2.0])
    per = [eng.score_window(build_window(table, s, s + 6)) for s in (0, 1, 2)]
    assert_same(got, per, [0, 1, 2])


@pytest.fixture(scope="module")
def adsb_table(adsb_adapter, adsb_sources):
    return adsb_adapter.read_table(str(adsb_sources[5]))


ADSB_DEFINE = {
    "speed_p90": "field:position | speed | p90",
    "turn_p90": "field:track | angle_delta | abs | p90",
    "climb_std": "field:vertical_rate | std",
    "aircraft_mean": "field:position | speed | entities:count | mean",
    "alt_mean": "field:altitude | mean",
    "accel_med": "field:position | accel | median",
    "jerk_rms": "field:position | rms_jerk",
    "course_rate": "field:position | heading | angular_rate | abs | p95",
    "nn_min": "field:position | nn_dist | min",
    "spread": "field:position | formation:spread | mean",
    "area": "field:position | formation:area | max",
    "centroid": "field:position | formation:speed | mean",
    "hull": "field:position | hull_area",
    "path": "field:position | present:50 | path_length",
    "complete": "field:altitude | present | entities:count | mean",
    "ground": "field:onground | where:>0.5 | frac",
    "gs_h": "field:groundspeed | entropy:16",
    "high_s": "field:altitude | where:>20000 | duration_present",
    "vr_zc": "field:vertical_rate | zero_crossings",
    "og_changes": "field:onground | n_changes",
    "gs_kt": "field:position | speed | to:kt | median",
    "gs_ratio": "feature:gs_kt | abs | max",
    "alt_var": "field:altitude | entities:median | var",
    "vr_rms": "field:vertical_rate | rms",
}


def test_batched_equals_per_window_on_real_adsb(adsb_table, adsb_schema) -> None:
    eng = FeatureEngine(ADSB_DEFINE, adsb_schema)
    segs = Segmenter(120, 45).segments(adsb_table.source_id, adsb_table.present)
    assert len(segs) > 15
    eng.score_segments(adsb_table, segs)
    per = [eng.score_window(build_window(adsb_table, s.start_idx, s.end_idx)) for s in segs]
    batched = {k: [s.features[k] for s in segs] for k in ADSB_DEFINE}
    assert_same(batched, per, [s.start_idx for s in segs])
    for k in ("speed_p90", "hull", "area", "nn_min", "gs_h"):
        assert np.isfinite(batched[k]).all(), k
    # a window is scored by strided views: the id of a nearby aircraft resolves too
    one = str(adsb_table.entity_ids[0])
    e1 = FeatureEngine({"alt": f"field:altitude | id:{one} | mean"}, adsb_schema)
    got = e1.score_table(adsb_table, [s.start_idx for s in segs], 120)["alt"]
    alt = np.where(adsb_table.present[:, 0], adsb_table.values["altitude"][:, 0, 0], np.nan)
    for g, s in zip(got, segs, strict=True):
        w = alt[s.start_idx : s.end_idx]
        w = w[~np.isnan(w)]
        assert g == pytest.approx(w.mean() if w.size else np.nan, nan_ok=True)


def test_single_entity_windows_match_pandas_rolling() -> None:
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(8)
    n, length = 300, 25
    hp = rng.normal(size=n) * 10
    hp[rng.random(n) < 0.15] = np.nan
    table = make_table({"hp": hp[:, None, None]}, np.ones((n, 1), bool))
    eng = FeatureEngine(
        {
            "mean": "field:hp | mean",
            "std": "field:hp | std",
            "median": "field:hp | median",
            "p90": "field:hp | p90",
            "max": "field:hp | max",
            "count": "field:hp | count",
        },
        SCHEMA,
    )
    got = eng.score_table(table, np.arange(n - length + 1), length)
    roll = pd.Series(hp).rolling(length, min_periods=1)
    ref = {
        "mean": roll.mean(),
        "std": roll.std(ddof=0),
        "median": roll.median(),
        "p90": roll.quantile(0.9, interpolation="linear"),
        "max": roll.max(),
        "count": roll.count(),
    }
    for k, r in ref.items():
        expect = r.to_numpy()[length - 1 :]
        np.testing.assert_allclose(got[k], expect, rtol=1e-9, atol=1e-9, equal_nan=True, err_msg=k)


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 60),
    length=st.integers(1, 20),
    step=st.integers(1, 7),
    count=st.integers(0, 8),
    offset=st.integers(0, 20),
    data=st.data(),
)
def test_grid_views_equal_sliding_windows(n, length, step, count, offset, data) -> None:
    """A regular grid's window view (one strided view) is window ``g``'s ticks
    ``[s0 + g * step + offset, s0 + g * step + length)``, read-only, for any array layout."""
    length, offset = min(length, n), min(offset, min(length, n))
    s0 = data.draw(st.integers(0, n - length))
    count = min(count, (n - length - s0) // step + 1)
    starts = s0 + step * np.arange(count)
    table = random_table(3, n, 2)
    batch = WindowBatch.from_table(table, starts, length)
    for arr in (
        table.values["hp"],
        table.present,
        np.asfortranarray(table.present),
        table.values["hp"][..., 0].T.copy().T,
    ):
        v = batch.view(arr, offset)
        want = (
            np.stack([arr[s + offset : s + length] for s in batch.grid])
            if count
            else np.zeros((0, length - offset, *arr.shape[1:]), arr.dtype)
        )
        assert v.shape == want.shape and not v.flags.writeable
        np.testing.assert_array_equal(v, want)
