"""Peer check: the grammar's reduces against tsfresh's own feature calculators.

The reference is ``tsfresh.feature_extraction.feature_calculators`` (tsfresh 0.21.2, MIT),
called directly on the samples a kuration window pools; kuration's side is the batched
engine the pipeline uses (``FeatureEngine.score_segments``), and on hand-built windows
the one-window path (``compile_metric``) too.  Real windows: the ADS-B quickstart sample,
120-tick windows at stride 60, scene scope for pooled reduces and track scope (one
aircraft per window) for the reduces over consecutive pairs.

Tolerance: ``|ours - tsfresh| <= 1e-9 * scale`` with ``scale`` the window's largest
``|x|`` (its square for ``var``, ``sum |x|`` for ``sum``, the largest step for changes,
1 for entropies and fractions); counts are exact.

Where the two definitions differ (compared only where they agree):

* Missing samples.  A kuration reduce pools the valid samples of a window and skips the
  missing ones; tsfresh's calculators take a complete series and most of them return NaN
  as soon as one value is NaN (``mean``, ``median``, ``quantile``, ``binned_entropy``...).
  Pooled reduces are compared with tsfresh on the valid samples; the pair reduces (changes,
  crossings) only on gap-free series, since kuration never pairs samples across a gap.
* Empty windows.  Every kuration reduce is NaN without a valid sample, ``count`` included
  (0 only after a filter); tsfresh's ``length`` is 0 and its ``count_above``/``count_below``
  divide by zero.
* Zero crossings.  tsfresh's ``number_crossing_m(x, 0)`` splits at ``x > 0``, so a zero
  counts as negative (``1, 0, 1`` crosses twice); ``zero_crossings`` counts consecutive pairs
  of strictly opposite sign, zero having no sign (``1, 0, -1`` crosses zero times).
  Compared on series without a zero.
* Units and spellings.  ``entropy:<bins>`` is in bits, ``binned_entropy`` in nats (divided
  by ln 2 here); tsfresh's ``abs_energy`` has no reduce and is checked as ``rms² · count``;
  ``count_above``/``count_below``/``range_count``/``value_count`` are ``where:`` filters
  followed by ``frac`` or ``count``; ``mean_change`` is ``(x[-1] - x[0]) / (n - 1)``, the
  mean of the steps of a gap-free series.  ``n_changes`` has no tsfresh counterpart.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numpy as np
import pytest
import tsfresh.feature_extraction.feature_calculators as fc
from hypothesis import given, settings
from hypothesis import strategies as st

from kuration import SchemaSpec, Segment, Segmenter, TickTable
from kuration.core.ids import tag_entity_id
from kuration.extend import FeatureEngine, build_window, compile_metric

Ref = Callable[[np.ndarray], float]
LN2 = math.log(2.0)
RTOL = 1e-9


def _q(q: float) -> Ref:
    return lambda x: fc.quantile(x, q)


# name -> (reduce text after the field, tsfresh reference, scale kind)
POOLED: dict[str, tuple[str, Ref, str]] = {
    "mean": ("mean", fc.mean, "max"),
    "median": ("median", fc.median, "max"),
    "std": ("std", fc.standard_deviation, "max"),
    "var": ("var", fc.variance, "max2"),
    "min": ("min", fc.minimum, "max"),
    "max": ("max", fc.maximum, "max"),
    "p0": ("p0", _q(0.0), "max"),
    "p10": ("p10", _q(0.1), "max"),
    "p25": ("p25", _q(0.25), "max"),
    "p90": ("p90", _q(0.9), "max"),
    "p100": ("p100", _q(1.0), "max"),
    "iqr": ("iqr", lambda x: fc.quantile(x, 0.75) - fc.quantile(x, 0.25), "max"),
    "rms": ("rms", fc.root_mean_square, "max"),
    "sum": ("sum", fc.sum_values, "sum"),
    "count": ("count", fc.length, "exact"),
    "abs_max": ("abs | max", fc.absolute_maximum, "max"),
    "entropy10": ("entropy:10", lambda x: fc.binned_entropy(x, 10) / LN2, "one"),
    "entropy3": ("entropy:3", lambda x: fc.binned_entropy(x, 3) / LN2, "one"),
}

# per field: a threshold t, a range [a, b) and a value v for the filter-based calculators
THRESHOLDS = {
    "altitude": (10000.0, (2000.0, 6000.0), 0.0),
    "groundspeed": (250.0, (150.0, 300.0), 0.0),
    "vertical_rate": (0.0, (-500.0, 500.0), 0.0),
}


def _filter_features(field: str) -> dict[str, tuple[str, Ref, str]]:
    t, (a, b), v = THRESHOLDS[field]
    return {
        "frac_above": (f"where:>={t} | frac", lambda x: fc.count_above(x, t), "one"),
        "frac_below": (f"where:<={t} | frac", lambda x: fc.count_below(x, t), "one"),
        "range_count": (
            f"where:>={a} | where:<{b} | count",
            lambda x: fc.range_count(x, a, b),
            "exact",
        ),
        "value_count": (f"where:=={v} | count", lambda x: fc.value_count(x, v), "exact"),
    }


# reduces over consecutive samples of one entity, compared on gap-free series
PAIRS: dict[str, tuple[str, Ref, str]] = {
    "abs_sum_changes": ("diff | abs | sum", fc.absolute_sum_of_changes, "steps_sum"),
    "path_length": ("path_length", fc.absolute_sum_of_changes, "steps_sum"),
    "mean_abs_change": ("diff | abs | mean", fc.mean_abs_change, "steps"),
    "mean_change": ("diff | mean", fc.mean_change, "steps"),
}


def _scale(kind: str, x: np.ndarray) -> float:
    a = np.abs(x)
    steps = np.abs(np.diff(x)) if x.size > 1 else np.zeros(1)
    return {
        "max": float(a.max()),
        "max2": float(a.max()) ** 2,
        "sum": float(a.sum()),
        "one": 1.0,
        "exact": 0.0,
        "steps": float(steps.max()),
        "steps_sum": float(steps.sum()),
    }[kind]


def _check(label: str, ours: float, ref: float, kind: str, x: np.ndarray) -> float:
    """Assert agreement within the stated tolerance; return the absolute difference."""
    diff = abs(float(ours) - float(ref))
    assert diff <= RTOL * _scale(kind, x), f"{label}: kuration {ours!r} vs tsfresh {ref!r}"
    return diff


# -- real windows: the ADS-B quickstart sample ----------------------------------------------


@pytest.fixture(scope="module")
def adsb_table(adsb_sources, adsb_adapter) -> TickTable:
    return adsb_adapter.read_table(str(adsb_sources[0]))


def _pooled_define() -> dict[str, str]:
    define = {}
    for field in THRESHOLDS:
        feats = {**POOLED, **_filter_features(field)}
        define.update({f"{field}.{n}": f"field:{field} | {r}" for n, (r, _, _) in feats.items()})
    return define


def test_pooled_reduces_match_tsfresh_on_real_scene_windows(adsb_table, adsb_schema) -> None:
    segs = Segmenter(120, 60).segments(adsb_table.source_id, adsb_table.present)
    FeatureEngine(_pooled_define(), adsb_schema).score_segments(adsb_table, segs)
    compared = 0
    for field in THRESHOLDS:
        feats = {**POOLED, **_filter_features(field)}
        for s in segs:
            v = adsb_table.values[field][s.start_idx : s.end_idx, :, 0]
            x = v[adsb_table.present[s.start_idx : s.end_idx] & ~np.isnan(v)]
            if x.size == 0:
                continue
            for name, (_, ref, kind) in feats.items():
                _check(f"{field}.{name} {s.key}", s.features[f"{field}.{name}"], ref(x), kind, x)
                compared += 1
    assert compared > 3 * 12 * len(POOLED)  # every field, the source's windows with data


def test_pair_reduces_match_tsfresh_on_real_gap_free_tracks(adsb_table, adsb_schema) -> None:
    t = adsb_table
    segs = Segmenter(120, 60, scope="track").segments(t.source_id, t.present, t.entity_ids)
    define = {
        f"{f}.{n}": f"field:{f} | {r}"
        for f in THRESHOLDS
        for n, (r, _, _) in {**PAIRS, "mean": POOLED["mean"]}.items()
    }
    define.update({f"{f}.zero_crossings": f"field:{f} | zero_crossings" for f in THRESHOLDS})
    FeatureEngine(define, adsb_schema).score_segments(t, segs)
    column = {tag_entity_id(e): i for i, e in enumerate(t.entity_ids)}
    gap_free = zero_free = 0
    for field in THRESHOLDS:
        for s in segs:
            x = t.values[field][s.start_idx : s.end_idx, column[str(s.entity)], 0]
            if not (t.present[s.start_idx : s.end_idx, column[str(s.entity)]].all()):
                continue
            if np.isnan(x).any():
                continue
            gap_free += 1
            # a track window holds one aircraft: its pooled mean is that series' mean
            _check(f"{field}.mean {s.key}", s.features[f"{field}.mean"], fc.mean(x), "max", x)
            for name, (_, ref, kind) in PAIRS.items():
                _check(f"{field}.{name} {s.key}", s.features[f"{field}.{name}"], ref(x), kind, x)
            if (x != 0).all():
                ref_zc = fc.number_crossing_m(x, 0)
                assert s.features[f"{field}.zero_crossings"] == ref_zc, (field, s.key)
                zero_free += 1
    assert gap_free > 300
    # the sample's zero-free series never cross zero (a climb levels off at exactly 0 ft/min):
    # the hypothesis test below compares real crossings
    assert zero_free > 300


# -- hand-built windows: edge cases and hypothesis ------------------------------------------

SCHEMA = SchemaSpec.from_dict(
    {"name": "peer", "sample_hz": 1.0, "fields": [{"name": "x", "kind": "scalar"}]}
)
HYPO_POOLED = {
    **{k: POOLED[k] for k in ("mean", "median", "std", "var", "min", "max", "rms", "sum")},
    **{k: POOLED[k] for k in ("count", "p0", "p10", "p90", "p100", "iqr", "entropy10")},
    "p33": ("p33", _q(0.33), "max"),
    "entropy2": ("entropy:2", lambda x: fc.binned_entropy(x, 2) / LN2, "one"),
    "entropy64": ("entropy:64", lambda x: fc.binned_entropy(x, 64) / LN2, "one"),
}
HYPO_DEFINE = {
    **{n: f"field:x | {r}" for n, (r, _, _) in HYPO_POOLED.items()},
    **{n: f"field:x | {r}" for n, (r, _, _) in PAIRS.items()},
    "zero_crossings": "field:x | zero_crossings",
}
ENGINE = FeatureEngine(HYPO_DEFINE, SCHEMA)


def _score(values: np.ndarray, present: np.ndarray) -> dict[str, float]:
    """Features of one window over ``values`` (T, E), absent where ``present`` is false,
    by the batched path; the one-window path must give the same numbers."""
    t, e = present.shape
    vals = np.where(present, values, np.nan)[..., None].astype(np.float64)
    table = TickTable("peer", SCHEMA, 0, tuple(range(e)), {"x": vals}, present, {}, {})
    seg = Segment("peer", 0, t)
    ENGINE.score_segments(table, [seg])
    buf = build_window(table, 0, t)
    for name, expr in HYPO_DEFINE.items():
        one = compile_metric(expr, SCHEMA)(buf)
        assert one == pytest.approx(seg.features[name], rel=1e-12, abs=0, nan_ok=True), name
    return dict(seg.features)


def _check_pooled(ours: dict[str, float], x: np.ndarray) -> None:
    for name, (_, ref, kind) in HYPO_POOLED.items():
        _check(name, ours[name], ref(x), kind, x)
    if x.size:
        energy = ours["rms"] ** 2 * ours["count"]
        assert energy == pytest.approx(fc.abs_energy(x), rel=1e-9, abs=1e-12), "abs_energy"


def test_constant_window_matches_tsfresh() -> None:
    x = np.full((30, 2), 7.25)
    ours = _score(x, np.ones(x.shape, bool))
    _check_pooled(ours, x.ravel())
    assert ours["std"] == ours["var"] == ours["iqr"] == ours["entropy10"] == 0.0
    assert fc.binned_entropy(x.ravel(), 10) == 0.0
    for name, (_, ref, kind) in PAIRS.items():
        _check(name, ours[name], ref(x[:, 0]) if name != "abs_sum_changes" else 0.0, kind, x)
    assert ours["zero_crossings"] == fc.number_crossing_m(x[:, 0], 0) == 0


def test_missing_samples_are_skipped_where_tsfresh_propagates_nan() -> None:
    rng = np.random.default_rng(7)
    x = rng.normal(100.0, 20.0, (40, 3))
    present = rng.random(x.shape) > 0.3
    ours = _score(x, present)
    _check_pooled(ours, x[present])
    raw = np.where(present, x, np.nan).ravel()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for ref in (fc.mean, fc.median, fc.standard_deviation, _q(0.9), fc.root_mean_square):
            assert np.isnan(ref(raw))  # the definitions differ here: tsfresh gives NaN
        assert np.isnan(fc.binned_entropy(raw, 10))


def test_single_sample_and_empty_windows() -> None:
    one = np.zeros((5, 2))
    present = np.zeros((5, 2), bool)
    present[2, 1] = True
    one[2, 1] = -3.5
    ours = _score(one, present)
    _check_pooled(ours, np.array([-3.5]))
    assert ours["std"] == 0.0 and ours["count"] == 1.0
    # no consecutive pair: both sides NaN for the mean change
    assert np.isnan(ours["mean_change"]) and np.isnan(fc.mean_change(np.array([-3.5])))

    empty = _score(np.zeros((5, 2)), np.zeros((5, 2), bool))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for name in ("mean", "median", "p90", "rms", "min", "max", "std"):
            assert np.isnan(empty[name]), name
        for ref in (fc.mean, _q(0.9), fc.root_mean_square, fc.absolute_maximum):
            assert np.isnan(ref(np.zeros(0)))
    # where the definitions differ: no valid sample is NaN here, a length of 0 in tsfresh
    assert np.isnan(empty["count"]) and fc.length(np.zeros(0)) == 0


def test_zero_counts_as_negative_in_tsfresh_and_as_no_sign_here() -> None:
    for series, ts_count in (([1.0, 0.0, -1.0], 1), ([1.0, 0.0, 1.0], 2), ([-1.0, 0.0, 1.0], 1)):
        x = np.array(series)[:, None]
        assert fc.number_crossing_m(x[:, 0], 0) == ts_count
        assert _score(x, np.ones(x.shape, bool))["zero_crossings"] == 0.0
    x = np.array([1.0, -2.0, 3.0, 4.0, -0.5])[:, None]
    assert _score(x, np.ones(x.shape, bool))["zero_crossings"] == fc.number_crossing_m(x[:, 0], 0)


finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False, allow_subnormal=False)


@st.composite
def _windows(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    t = draw(st.integers(2, 40))
    e = draw(st.integers(1, 3))
    flat = draw(st.lists(finite, min_size=t * e, max_size=t * e))
    x = np.array(flat, dtype=np.float64).reshape(t, e)
    if draw(st.booleans()):  # few distinct values: ties, constant runs, bin edges
        x = np.round(x / 2.5e5) * 2.5e5
    present = np.ones((t, e), bool)
    holes = draw(st.lists(st.integers(0, t * e - 1), max_size=t * e // 2))
    present.ravel()[holes] = False
    present.ravel()[draw(st.integers(0, t * e - 1))] = True  # at least one valid sample
    return x, present


@settings(max_examples=60, deadline=None)
@given(_windows())
def test_hypothesis_windows_match_tsfresh(window: tuple[np.ndarray, np.ndarray]) -> None:
    x, present = window
    ours = _score(x, present)
    _check_pooled(ours, x[present])
    if x.shape[1] == 1 and present.all():  # one gap-free series: the pair reduces
        series = x[:, 0]
        for name, (_, ref, kind) in PAIRS.items():
            _check(name, ours[name], ref(series), kind, series)
        if (series != 0).all():
            assert ours["zero_crossings"] == fc.number_crossing_m(series, 0)
