"""SegmentScorer: the KSG estimator against the analytic Gaussian value, novelty against a
brute-force distance matrix, whole-pool and per-source failures, and selection weighting a
scorer's output with a coverage priority on real ADS-B sources."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import cdist

from kuration import Segment, Segmenter, curate, load_strategy, score_sources
from kuration.errors import ScorerError
from kuration.extend import ScorerContext, SegmentScorer, register_scorer
from kuration.metrics.mutual_info import ksg_mutual_information


def _gaussian(rho: float, n: int, seed: int, dims: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, dims))
    y = rho * x + math.sqrt(1 - rho**2) * rng.standard_normal((n, dims))
    return x, y


# KSG estimator 1, k=3, N=2000: the estimate lies within 0.03 nats of -1/2 log(1 - rho^2)
# (its spread at this N is about 0.01-0.015 nats; Kraskov et al. 2004, fig. 4)
TOL = 0.03


@pytest.mark.parametrize("rho", [0.0, 0.3, 0.6, 0.9])
def test_ksg_matches_the_analytic_gaussian_value(rho: float) -> None:
    x, y = _gaussian(rho, 2000, seed=int(rho * 10))
    truth = -0.5 * math.log(1 - rho**2)
    assert ksg_mutual_information(x, y, k=3) == pytest.approx(truth, abs=TOL)


def test_ksg_two_dimensional_pairs_add_up() -> None:
    """Two independent pairs with correlation 0.8 each: I = -log(1 - 0.64) (twice one pair)."""
    x, y = _gaussian(0.8, 2000, seed=7, dims=2)
    assert ksg_mutual_information(x, y, k=3) == pytest.approx(-math.log(1 - 0.64), abs=2 * TOL)


@settings(max_examples=20, deadline=None)
@given(st.floats(0.05, 0.95), st.integers(-20, 20))
def test_ksg_is_symmetric_and_unchanged_by_a_common_power_of_two_scale(rho, j) -> None:
    x, y = _gaussian(rho, 300, seed=1)
    base = ksg_mutual_information(x, y)
    assert ksg_mutual_information(y, x) == base
    assert ksg_mutual_information(x * 2.0**j, y * 2.0**j) == base


def test_ksg_agrees_with_scikit_learn_mutual_info_regression() -> None:
    """scikit-learn's continuous-continuous estimate is KSG estimator 1 on unit-variance data
    (plus a 1e-10 jitter and a clip at 0): an independent implementation of the same formula."""
    from sklearn.feature_selection import mutual_info_regression

    x, y = _gaussian(0.6, 500, seed=3)
    xs, ys = x / x.std(), y[:, 0] / y[:, 0].std()
    want = mutual_info_regression(xs, ys, n_neighbors=3, random_state=0)[0]
    assert ksg_mutual_information(xs, ys, k=3) == pytest.approx(want, abs=1e-6)


def test_ksg_refuses_bad_input() -> None:
    x, y = _gaussian(0.5, 10, seed=0)
    with pytest.raises(ValueError, match="k must be"):
        ksg_mutual_information(x, y, k=10)
    with pytest.raises(ValueError, match="finite"):
        ksg_mutual_information(np.r_[x[:-1, 0], np.nan], y)


def _pool(adsb_schema, adsb_adapter, adsb_sources, strategy) -> Any:
    seg = Segmenter(window=120, stride=60)
    return score_sources(
        adsb_schema, adsb_adapter, [str(p) for p in adsb_sources[:4]], seg, strategy
    )


DEFINE = {"speed_p90": "field:groundspeed | p90", "climb_p90": "field:vertical_rate | abs | p90"}


def test_novelty_is_the_mean_distance_to_the_k_nearest_standardized(
    adsb_schema, adsb_adapter, adsb_sources
) -> None:
    strategy = load_strategy(
        {
            "define": DEFINE,
            "method": "top-k",
            "params": {"by": "novelty"},
            "scorers": [{"name": "novelty", "params": {"features": list(DEFINE), "k": 4}}],
        },
        adsb_schema,
    )
    res = _pool(adsb_schema, adsb_adapter, adsb_sources, strategy)
    x = np.array([[s.features[f] for f in DEFINE] for s in res.segments])
    ok = np.isfinite(x).all(axis=1)
    z = (x[ok] - x[ok].mean(axis=0)) / x[ok].std(axis=0)
    d = cdist(z, z)
    np.fill_diagonal(d, np.inf)
    want = np.sort(d, axis=1)[:, :4].mean(axis=1)
    got = np.array([s.features["novelty"] for s in res.segments])
    np.testing.assert_allclose(got[ok], want, rtol=1e-10)
    assert np.isnan(got[~ok]).all() and ok.sum() > 20


def test_a_whole_pool_failure_raises(adsb_schema, adsb_adapter, adsb_sources) -> None:
    strategy = load_strategy(
        {
            "define": DEFINE,
            "method": "top-k",
            "params": {"by": "novelty"},
            "scorers": [{"name": "novelty", "params": {"features": ["speed_p90"], "k": 100000}}],
        },
        adsb_schema,
    )
    with pytest.raises(ScorerError, match="scorer 'novelty': needs at least k \\+ 1"):
        _pool(adsb_schema, adsb_adapter, adsb_sources, strategy)


class _BlameOne(SegmentScorer):
    """Blames the first source of the pool once, then scores its own segment count."""

    calls: ClassVar[list[int]] = []

    def __init__(self) -> None:
        self.blamed = False

    def score(self, segments: Sequence[Segment], ctx: ScorerContext) -> np.ndarray:
        _BlameOne.calls.append(len(segments))
        assert ctx.buffers is not None and len(ctx.buffers) == len(segments)
        if not self.blamed:
            self.blamed = True
            raise ScorerError("bad sequences", scorer=ctx.name, source=segments[0].source_id)
        return np.array([float(b.present.sum()) for b in ctx.buffers])


register_scorer("test-blame-one", _BlameOne, needs_buffers=True, clobber=True)


def test_a_failure_naming_a_source_skips_that_source(
    adsb_schema, adsb_adapter, adsb_sources, capsys
) -> None:
    strategy = load_strategy(
        {
            "define": DEFINE,
            "method": "top-k",
            "params": {"by": "present_n"},
            "scorers": [{"name": "test-blame-one", "output": "present_n"}],
        },
        adsb_schema,
    )
    _BlameOne.calls.clear()
    res = _pool(adsb_schema, adsb_adapter, adsb_sources, strategy)
    first = adsb_adapter.source_id(str(adsb_sources[0]))
    assert first not in {s.source_id for s in res.segments} and first not in res.sources
    assert "bad sequences" in res.errors[str(adsb_sources[0])]
    assert _BlameOne.calls[1] == len(res.segments) < _BlameOne.calls[0]
    table = adsb_adapter.read_table(str(adsb_sources[1]))
    s = next(s for s in res.segments if s.source_id == table.source_id)
    assert s.features["present_n"] == table.present[s.start_idx : s.end_idx].sum()
    assert "kuration: skipped source" in capsys.readouterr().err


def test_a_scorer_output_is_weighted_alongside_a_coverage_priority(
    adsb_schema, adsb_adapter, adsb_sources
) -> None:
    """uniform-bins over speed (coverage: every speed bin gets its share) ranks inside each
    bin by the scorer's novelty: each bin keeps its most novel segments."""
    strategy = load_strategy(
        {
            "define": DEFINE,
            "bin": {"axes": ["speed_p90"], "n_bins": 3},
            "scorers": [{"name": "novelty", "params": {"features": list(DEFINE), "k": 4}}],
            "method": "uniform-bins",
            "params": {"within": {"by": "novelty"}},
        },
        adsb_schema,
    )
    res = curate(
        adsb_schema,
        adsb_adapter,
        [str(p) for p in adsb_sources[:4]],
        Segmenter(window=120, stride=60),
        strategy,
        9,
    )
    chosen = {s.key for s in res.selected}
    by_bin: dict[Any, list[Segment]] = {}
    for s in res.pool:
        if math.isfinite(s.features["novelty"]) and math.isfinite(s.features["speed_p90"]):
            by_bin.setdefault(s.bin, []).append(s)
    assert len(by_bin) == 3 and len(chosen) == 9
    for segs in by_bin.values():
        picked = [s for s in segs if s.key in chosen]
        assert len(picked) == 3  # coverage: an equal share per bin
        top = sorted(segs, key=lambda s: -s.features["novelty"])[:3]
        assert {s.key for s in picked} == {s.key for s in top}  # quality: the most novel
