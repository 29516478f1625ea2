"""The ``random`` method: seeded draws keyed by identity (hypothesis), one draw per span in
an hours fill, the same bytes on the disk pool, and the control row of ``kur experiment``."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst
from scipy.stats import kstest

from kuration import load_strategy, run_job
from kuration.contracts.segment import Segment
from kuration.errors import StrategyError
from kuration.pipeline.memory.pool import compare_strategies
from kuration.pipeline.spec.job import load_job
from kuration.selection.draws import candidate_key, seeded_uniform, segment_key
from kuration.selection.methods import get_method
from kuration.selection.select import method_seed

ROOT = Path(__file__).resolve().parents[3]
QS = ROOT / "examples" / "adsb_quickstart"


@settings(max_examples=50, deadline=None)
@given(
    keys=hst.lists(hst.text(max_size=12), min_size=1, max_size=40, unique=True),
    seed=hst.integers(0, 2**63 - 1),
    perm_seed=hst.integers(0, 1000),
)
def test_a_draw_depends_on_its_key_and_seed_only(keys: list[str], seed: int, perm_seed: int):
    u = seeded_uniform(seed, keys)
    assert u.dtype == np.float64 and u.shape == (len(keys),)
    assert np.all((u >= 0) & (u < 1))
    perm = np.random.default_rng(perm_seed).permutation(len(keys))
    np.testing.assert_array_equal(seeded_uniform(seed, [keys[i] for i in perm]), u[perm])
    np.testing.assert_array_equal(seeded_uniform(seed, keys[:1]), u[:1])


def test_draws_are_uniform_and_change_with_the_seed() -> None:
    keys = [segment_key("s", None, i) for i in range(5000)]
    a, b = seeded_uniform(0, keys), seeded_uniform(1, keys)
    assert kstest(a, "uniform").pvalue > 1e-3 and kstest(b, "uniform").pvalue > 1e-3
    assert abs(np.corrcoef(a, b)[0, 1]) < 0.05


def test_the_method_takes_no_parameters_and_ignores_features() -> None:
    m = get_method("random")
    with pytest.raises(StrategyError, match="does not take"):
        m.validate({"by": "x"}, ["x"], [])
    segs = [Segment("a", i, i + 2, {"x": float("nan")}) for i in range(4)]
    p = m.priorities(segs, {}, 7, "exclude")
    np.testing.assert_array_equal(
        p, seeded_uniform(7, [segment_key("a", None, i) for i in range(4)])
    )


def _job(sources: list[Path], **keys: object) -> dict:
    job, _ = load_job(QS / "job.json")
    job["sources"] = [str(p) for p in sources[:4]]
    job["budget"] = {"train_hours": 1.0, "test_hours": 0.25}
    job["strategy"] = json.loads((QS / "strategies" / "random.json").read_text())
    job.update(keys)
    return job


def _run(job: dict, out: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_job(job, out)


def test_each_span_gets_its_own_draw_on_real_adsb(adsb_sources, tmp_path: Path) -> None:
    """The fill ranks spans by their own draw (not a mean of window draws, which would
    favour spans of few windows); memory and disk pools write the same bytes; another
    seed gives another selection."""
    res = _run(_job(adsb_sources), tmp_path / "m")
    mseed = method_seed(0, 0)
    pool = [c for c in res.fill.pools["train"] if np.isfinite(c.priority)]
    assert len(pool) > 100
    want = seeded_uniform(
        mseed, [candidate_key(c.source_id, c.entity_id, c.span_index) for c in pool]
    )
    np.testing.assert_array_equal([c.priority for c in pool], want)
    admitted = res.fill.admitted["train"]
    assert [c.priority for c in admitted] == sorted((c.priority for c in admitted), reverse=True)
    disk = _run(_job(adsb_sources, pool="disk"), tmp_path / "d")
    for name in ("dataset_manifest.json",):
        assert (Path(disk.path) / name).read_bytes() == (Path(res.path) / name).read_bytes()
    other = _run(_job(adsb_sources, seed=1), tmp_path / "s1")
    ids = {(c.source_id, c.entity_id, c.span_index) for c in admitted}
    ids1 = {(c.source_id, c.entity_id, c.span_index) for c in other.fill.admitted["train"]}
    assert ids != ids1


def test_an_experiment_reports_every_strategy_against_a_random_control(adsb_sources) -> None:
    from kuration import Pipeline

    job = _job(adsb_sources)
    p = Pipeline.from_job(job)
    sts = [load_strategy(QS / "strategies" / f"{n}.json", p.schema) for n in ("top-k", "k-center")]
    ex = p.compare(sts, 30)
    assert list(ex.results) == ["top-k", "k-center", "random"]
    rows = {r["strategy"]: r for r in ex.comparison}
    assert rows["random"]["vs_random"]["jaccard"] == 1.0
    assert rows["random"]["vs_random"]["cells_covered"] == 0.0
    top = rows["top-k"]
    assert top["vs_random"]["cells_covered"] == pytest.approx(
        top["cells_covered"] - rows["random"]["cells_covered"]
    )
    assert 0.0 <= top["vs_random"]["jaccard"] < 1.0
    # a random strategy in the list is the control itself (no second one is added)
    rnd = load_strategy(QS / "strategies" / "random.json", p.schema)
    pool = list(ex.results["random"].pool)
    again = compare_strategies(pool, [sts[0], rnd], 30)
    assert list(again.results) == ["top-k", "random"]
