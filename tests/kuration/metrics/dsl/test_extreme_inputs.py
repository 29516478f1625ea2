"""Every token on empty, one-sample, all-NaN and overflowing windows: finite or NaN, never a raise.

The cases are driven by the grammar's token table: a new token without an
example below fails :func:`test_every_token_has_an_example`, and every reduce
is combined with every map, filter and aggregation example that compiles.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from dsl_support import SCHEMA, make_table
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from kuration.errors import MetricCompileError
from kuration.extend import FeatureEngine, build_window, compile_metric
from kuration.metrics.dsl.grammar import TOKENS
from kuration.metrics.dsl.hull import hull_area

BIG = 1.7e308  # finite, within 6 % of the largest float64

#: Expressions ending just before the reduce, one list per source/map/filter/agg token.
PREFIXES: dict[str, list[str]] = {
    "field:<name>": ["field:hp", "field:pos", "field:team", "field:pos3", "field:geo"],
    "global:<name>": ["global:wind", "global:phase"],
    "event:<name>": ["event:goal"],
    "feature:<name>": ["feature:base"],
    "speed": ["field:pos | speed", "field:geo | speed"],
    "accel": ["field:pos3 | accel"],
    "jerk": ["field:pos3 | jerk"],
    "heading": ["field:geo | heading", "field:pos | heading"],
    "angle_delta": ["field:heading | angle_delta"],
    "angular_rate": ["field:yaw | angular_rate"],
    "norm": ["field:pos | norm"],
    "diff": ["field:hp | diff", "field:raw | diff"],
    "abs": ["field:raw | abs"],
    "bit:<bit>": ["field:buttons | bit:fire"],
    "is:<label>": ["field:team | is:blue"],
    "to:<unit>": ["field:hp | to:mm", "field:temp | to:degF"],
    "nn_dist": ["field:pos | nn_dist"],
    "dist_to:<entity>": ["field:geo | dist_to:a", "field:pos | dist_to:b"],
    "formation:speed": ["field:pos | formation:speed"],
    "formation:spread": ["field:geo | formation:spread"],
    "formation:area": ["field:pos | formation:area"],
    "present": ["field:hp | present"],
    "present:<percent>": ["field:hp | present:50"],
    "id:<entity>": ["field:pos | id:b", "field:hp | id:b"],
    "where:<cmp><number>": ["field:hp | where:>0"],
    "where:<field>=<label>": ["field:hp | where:team=blue"],
    "where:<field>.<bit>": ["field:hp | where:buttons.fire"],
    **{
        f"entities:{a}": [f"field:hp | entities:{a}", f"field:team | is:blue | entities:{a}"]
        for a in ("mean", "sum", "min", "max", "median", "std", "count", "any", "all")
    },
}
REDUCE_TEXT = {"p<percent>": "p90", "entropy:<bins>": "entropy:4"}
REDUCES = [REDUCE_TEXT.get(t.spelling, t.spelling) for t in TOKENS if t.role == "reduce"]
BASE = {"base": "field:hp | mean"}
_BASE_METRIC = compile_metric(BASE["base"], SCHEMA, name="base")


def _compiles(expr: str) -> bool:
    try:
        compile_metric(expr, SCHEMA, name="x", features={"base": _BASE_METRIC})
    except MetricCompileError:
        return False
    return True


@functools.cache
def _metrics_of(spelling: str) -> list[str]:
    """Every expression exercising the token ``spelling`` that compiles."""
    if spelling in PREFIXES:
        cands = [f"{p} | {r}" for p in PREFIXES[spelling] for r in REDUCES]
    else:  # a reduce: after the first example of every other token
        r = REDUCE_TEXT.get(spelling, spelling)
        cands = [f"{ps[0]} | {r}" for ps in PREFIXES.values()]
    return [e for e in cands if _compiles(e)]


def _vals(fill: float, dims=(("hp", 1), ("pos", 2), ("pos3", 3), ("raw", 1), ("temp", 1))):
    return {k: np.full((6, 2, d), fill) for k, d in dims}


def _inputs() -> dict[str, tuple[np.ndarray, dict[str, np.ndarray]]]:
    """(presence (T, E), values) of each extreme case; T=6 ticks, entities a and b."""
    one = np.zeros((6, 2), bool)
    one[2, 0] = True
    all_nan = _vals(np.nan, (("hp", 1), ("pos", 2), ("pos3", 3), ("geo", 2), ("raw", 1)))
    alt = np.where((np.arange(6) % 2 == 0)[:, None, None], 1.0, -1.0)
    swing = {k: alt * v for k, v in _vals(BIG).items()}  # every step overflows
    swing["pos"][:, 1] *= -1.0
    b_late = np.ones((6, 2), bool)
    b_late[:4, 1] = False  # entity b only in the last two ticks
    return {
        "empty": (np.zeros((6, 2), bool), {}),
        "one_sample": (one, {}),
        "all_nan": (np.ones((6, 2), bool), all_nan),
        "overflow_steps": (np.ones((6, 2), bool), swing),
        "overflow_same": (np.ones((6, 2), bool), _vals(BIG)),
        "entity_absent": (b_late, _vals(1.0)),
    }


INPUTS = _inputs()


def _check(values: list[float], what: str) -> None:
    bad = [v for v in values if math.isinf(v)]
    assert not bad, f"{what}: infinite metric value {values}"


def _evaluate(eng: FeatureEngine, table, what: str, *, same: bool) -> None:
    """Both paths finite or NaN; equal too unless values overflow (then the order of the
    sums decides which intermediate overflows, and either may be NaN)."""
    batched = eng.score_table(table, [0, 2], 4)
    per = [eng.score_window(build_window(table, s, s + 4)) for s in (0, 2)]
    for name, expr in eng.define.items():
        _check(list(batched[name]), f"{what} {expr!r} batched")
        _check([w[name] for w in per], f"{what} {expr!r} per window")
        if same:
            np.testing.assert_allclose(
                batched[name], [w[name] for w in per], rtol=1e-9, equal_nan=True, err_msg=expr
            )


def test_every_token_has_an_example() -> None:
    for t in TOKENS:
        assert t.spelling in PREFIXES or t.role == "reduce", f"add an example for {t.spelling!r}"
        assert _metrics_of(t.spelling), f"no example of {t.spelling!r} compiles"


@pytest.mark.parametrize("spelling", [t.spelling for t in TOKENS])
def test_token_on_extreme_windows_is_finite_or_nan(spelling: str) -> None:
    define = {**BASE, **{f"m{i}": e for i, e in enumerate(_metrics_of(spelling))}}
    eng = FeatureEngine(define, SCHEMA)
    for case, (present, values) in INPUTS.items():
        table = make_table(values, present, ids=("a", "b"))
        same = not case.startswith("overflow")
        try:
            _evaluate(eng, table, case, same=same)
        except Exception:
            for e in define.values():  # name the one metric that fails
                _evaluate(FeatureEngine({**BASE, "x": e}, SCHEMA), table, case, same=same)
            raise


def test_filter_leaving_no_sample_gives_nan_then_the_value() -> None:
    pos = np.zeros((6, 2, 2))
    pos[:, 1, 0] = np.arange(6) * 100.0  # b moves 1 m per tick (cm)
    present = np.ones((6, 2), bool)
    present[:3, 1] = False  # b is absent from the first window
    table = make_table({"pos": pos}, present, ids=("a", "b"))
    eng = FeatureEngine({"p": "field:pos | id:b | path_length"}, SCHEMA)
    got = eng.score_table(table, [0, 3], 3)["p"]
    np.testing.assert_allclose(got, [np.nan, 2.0], equal_nan=True)
    unknown = FeatureEngine({"p": "field:pos | id:zz | path_length"}, SCHEMA)
    assert np.isnan(unknown.score_table(table, [0, 3], 3)["p"]).all()


def _raw_table(raw: list[float]):
    x = np.asarray(raw, dtype=float).reshape(-1, 1, 1)
    return make_table({"raw": x}, np.ones((x.shape[0], 1), bool))


def _one(expr: str, raw: list[float]) -> float:
    table = _raw_table(raw)
    return float(FeatureEngine({"x": expr}, SCHEMA).score_table(table, [0], len(raw))["x"][0])


def _hist_entropy(v: np.ndarray, bins: int) -> float:
    counts, _ = np.histogram(v, bins=bins)
    return float(stats.entropy(counts, base=2))


def test_entropy_over_a_range_wider_than_the_largest_float() -> None:
    # the input: every diff overflows, so no sample is left
    assert math.isnan(_one("field:raw | diff | entropy:4", [BIG, -BIG, BIG, -BIG]))
    # finite values whose range (max - min) overflows: binned at half scale, exactly
    raw = [-BIG, -1e308, 0.0, 5e307, 1e308, BIG]
    expect = _hist_entropy(np.asarray(raw) * 0.5, 4)
    assert _one("field:raw | entropy:4", raw) == pytest.approx(expect)
    # some diffs overflow, the rest are kept
    raw = [BIG, -BIG, -BIG + 1e292, -BIG + 3e292, -BIG + 4e292]
    finite = np.diff(raw[1:])
    assert _one("field:raw | diff | entropy:4", raw) == pytest.approx(_hist_entropy(finite, 4))


def test_overflowing_samples_are_dropped_and_overflowing_reduces_are_nan() -> None:
    # to:mm of 1.7e308 m overflows: that sample is missing, the finite one stays
    hp = np.array([BIG, 2.0, np.nan]).reshape(3, 1, 1)
    table = make_table({"hp": hp}, np.ones((3, 1), bool))
    eng = FeatureEngine({"mm": "field:hp | to:mm | mean", "n": "field:hp | to:mm | count"}, SCHEMA)
    got = eng.score_table(table, [0], 3)
    assert got["mm"][0] == pytest.approx(2000.0) and got["n"][0] == 1.0
    # a reduce whose result overflows has no value
    assert math.isnan(_one("field:raw | sum", [BIG, BIG]))
    assert math.isnan(_one("field:raw | std", [BIG, -BIG]))
    assert _one("field:raw | max", [BIG, -BIG]) == BIG
    assert _one("field:raw | count", [BIG, -BIG]) == 2.0


def test_hull_of_identical_points_after_a_missing_one_is_zero() -> None:
    p = np.full((2, 12, 2), 3.0)
    p[:, ::2] = np.nan
    np.testing.assert_array_equal(hull_area(p, prefilter=True), [0.0, 0.0])
    wide = np.array([[[BIG, BIG], [-BIG, BIG], [0.0, -BIG]]])
    assert np.isnan(hull_area(wide)).all()
    same = np.full((1, 5, 2), BIG)
    assert hull_area(same, prefilter=True).tolist() == [0.0]


MAGNITUDE = st.sampled_from([1.0, 1e150, 1e300, BIG, 1e-300])


@functools.cache
def _engine_of_all() -> FeatureEngine:
    """One engine over every compiling (example prefix, reduce) pair."""
    every = sorted({e for ps in PREFIXES for e in _metrics_of(ps)})
    return FeatureEngine({**BASE, **{f"m{i}": e for i, e in enumerate(every)}}, SCHEMA)


@given(seed=st.integers(0, 2**32 - 1), scale=MAGNITUDE, p_absent=st.sampled_from([0.0, 0.5, 0.9]))
@settings(max_examples=8, deadline=None)
def test_every_metric_on_random_scaled_tables_is_finite_or_nan(seed, scale, p_absent) -> None:
    rng = np.random.default_rng(seed)
    present = rng.random((8, 3)) >= p_absent
    dims = (("hp", 1), ("pos", 2), ("pos3", 3), ("raw", 1), ("temp", 1), ("yaw", 1))
    # a normal sample times 1.7e308 overflows now and then: those inputs are infinite
    with np.errstate(over="ignore"):
        values = {k: rng.normal(size=(8, 3, d)) * scale for k, d in dims}
    values["raw"] = np.where(rng.random((8, 3, 1)) < 0.2, np.nan, values["raw"])
    table = make_table(values, present, ids=("a", "b", "c"))
    eng = _engine_of_all()
    for name, v in eng.score_table(table, [0, 1, 3], 5).items():
        _check(list(v), eng.define[name])
