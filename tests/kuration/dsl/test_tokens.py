"""Each grammar token against an independent numpy/scipy reference."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from kuration import MetricCompileError, SchemaSpec, WindowBuffer, compile_metric

SCHEMA = SchemaSpec.from_dict(
    {
        "sample_hz": 2.0,
        "fields": [
            {"name": "pos", "kind": "vector", "dims": 2, "semantics": "position", "unit": "cm"},
            {"name": "heading", "kind": "scalar", "semantics": "angular", "unit": "deg"},
            {"name": "yaw", "kind": "scalar", "semantics": "angular", "unit": "rad"},
            {"name": "hp", "kind": "scalar", "unit": "1"},
            {
                "name": "buttons",
                "kind": "scalar",
                "semantics": "bitmask",
                "dtype": "uint8",
                "bits": {"fire": 0, "jump": 3},
            },
            {"name": "team", "kind": "categorical", "vocab": ["red", "blue", "green"]},
        ],
    }
)


def _buf(values: dict[str, np.ndarray], present: np.ndarray) -> WindowBuffer:
    full = {}
    t, e = present.shape
    for f in SCHEMA.fields:
        v = values.get(f.name, np.zeros((t, e, f.dims)))
        full[f.name] = np.where(present[..., None], v, np.nan)
    return WindowBuffer(full, present, tuple(range(e)), SCHEMA)


def test_angle_delta_wraps() -> None:
    h = np.array([350.0, 5.0, 355.0, 170.0, -170.0])[:, None, None]
    buf = _buf({"heading": h}, np.ones((5, 1), bool))
    vals = compile_metric("field:heading | angle_delta | max", SCHEMA).values(buf)[:, 0, 0]
    np.testing.assert_allclose(vals[1:], [15.0, -10.0, 175.0, 20.0])
    y = np.deg2rad(h)
    yv = compile_metric("field:yaw | angle_delta | max", SCHEMA).values(
        _buf({"yaw": y}, np.ones((5, 1), bool))
    )
    np.testing.assert_allclose(yv[1:, 0, 0], np.deg2rad([15.0, -10.0, 175.0, 20.0]))


def test_speed_converts_units_and_never_bridges_gaps() -> None:
    rng = np.random.default_rng(0)
    pos = rng.normal(size=(6, 2, 2)) * 100  # centimetres
    present = np.ones((6, 2), bool)
    present[2, 0] = False
    buf = _buf({"pos": pos}, present)
    got = compile_metric("field:pos | speed | mean", SCHEMA).values(buf)[..., 0]
    ref = np.linalg.norm(np.diff(pos, axis=0), axis=-1) / 100 * 2.0  # m/s at 2 Hz
    ref = np.vstack([np.full((1, 2), np.nan), ref])
    ref[2, 0] = ref[3, 0] = np.nan  # the gap at t=2 is not bridged by t=1 -> t=3
    np.testing.assert_allclose(got, ref)
    assert compile_metric("field:pos | speed | mean", SCHEMA)(buf) == pytest.approx(np.nanmean(ref))


def test_diff_abs_and_reduces_match_numpy() -> None:
    rng = np.random.default_rng(1)
    hp = rng.normal(size=(20, 3, 1))
    present = rng.random((20, 3)) > 0.2
    buf = _buf({"hp": hp}, present)
    x = np.where(present[..., None], hp, np.nan)[..., 0]
    d = x[1:] - x[:-1]
    dv = np.abs(d[~np.isnan(d)])
    v = x[~np.isnan(x)]
    cases = {
        "field:hp | mean": np.mean(v),
        "field:hp | std": np.std(v),
        "field:hp | min": np.min(v),
        "field:hp | max": np.max(v),
        "field:hp | median": np.median(v),
        "field:hp | p90": np.percentile(v, 90),
        "field:hp | p0": np.min(v),
        "field:hp | diff | abs | mean": np.mean(dv),
        "field:hp | entities:mean | max": np.nanmax(
            np.nanmean(np.where(present, x, np.nan), axis=1)
        ),
        "field:hp | entities:count | mean": present.sum(axis=1).mean(),
        "field:hp | entropy:8": stats.entropy(np.histogram(v, bins=8)[0], base=2),
    }
    for expr, ref in cases.items():
        assert compile_metric(expr, SCHEMA)(buf) == pytest.approx(ref), expr


def test_bits_and_categorical_entropy() -> None:
    btn = np.array([0b0001, 0b1000, 0b1001, 0b0000])[:, None, None].astype(float)
    team = np.array([0, 1, 1, 2])[:, None, None].astype(float)
    buf = _buf({"buttons": btn, "team": team}, np.ones((4, 1), bool))
    assert compile_metric("field:buttons | bit:fire | mean", SCHEMA)(buf) == 0.5
    assert compile_metric("field:buttons | bit:jump | entropy", SCHEMA)(buf) == pytest.approx(1.0)
    assert compile_metric("field:team | entropy", SCHEMA)(buf) == pytest.approx(
        stats.entropy([1, 2, 1], base=2)
    )


def test_constant_signal_is_finite() -> None:
    buf = _buf({"hp": np.full((10, 2, 1), 3.0)}, np.ones((10, 2), bool))
    for red in ("std", "entropy:4", "p25", "median"):
        assert np.isfinite(compile_metric(f"field:hp | {red}", SCHEMA)(buf))


def test_no_valid_sample_is_nan_not_zero() -> None:
    buf = _buf({}, np.zeros((5, 2), bool))
    assert np.isnan(compile_metric("field:hp | mean", SCHEMA)(buf))
    assert np.isnan(compile_metric("field:pos | speed | max", SCHEMA)(buf))


@pytest.mark.parametrize(
    ("expr", "token", "match"),
    [
        ("field:hp | mean_of_all", "mean_of_all", "unknown token"),
        ("field:hp | speeed | mean", "speeed", "did you mean 'speed'"),
        ("field:hp | speed | mean", "speed", "speed needs a position field"),
        ("field:pos | angle_delta | mean", "angle_delta", "angle_delta needs an angular field"),
        ("field:hp | bit:fire | mean", "bit:fire", "needs a bitmask"),
        ("field:buttons | bit:crouch | mean", "bit:crouch", "not declared"),
        ("field:pos | mean", "mean", "2-component vector"),
        ("field:altitude | mean", "field:altitude", "no field 'altitude'"),
        ("field:hp | mean | max", "max", "nothing may follow a reduce"),
        ("field:hp | diff", "diff", "must end with a reduce"),
        ("field:hp | entropy", "entropy", "needs a binning"),
        ("feld:hp | mean", "feld:hp", "expected a source"),
    ],
)
def test_compile_errors_name_the_token(expr: str, token: str, match: str) -> None:
    with pytest.raises(MetricCompileError, match=match) as exc:
        compile_metric(expr, SCHEMA)
    assert exc.value.token == token
    assert exc.value.position == expr.index(token)


def test_geodetic_speed_matches_reported_groundspeed(adsb_adapter, adsb_sources) -> None:
    """On real ADS-B: displacement over 10 s from lat/lon agrees with the reported groundspeed."""
    from kuration import build_window

    table = adsb_adapter.read_table(str(adsb_sources[3]))
    buf = build_window(table, 0, table.n_steps)
    metric = compile_metric("field:position | speed | p50", adsb_adapter.schema)
    one_step = metric.values(buf)[..., 0]
    gs = buf.values["groundspeed"][..., 0] * 0.514444  # kt -> m/s
    ok = ~np.isnan(one_step) & ~np.isnan(gs) & (gs > 50)
    # 1 Hz ADS-B positions are jittery; the median ratio still sits within 5 %
    assert np.median(one_step[ok] / gs[ok]) == pytest.approx(1.0, abs=0.05)
