"""The count path on real ADS-B sources: curate, the audit, experiments and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import ks_2samp, spearmanr, wasserstein_distance

from kuration import Segmenter, compare_strategies, curate, load_strategy, run_experiment
from kuration.cli.main import main
from kuration.errors import StrategyError
from kuration.tools.audit import coverage_metrics, distribution_shift, ks_statistic

STRATEGIES = Path(__file__).resolve().parents[4] / "examples" / "adsb_quickstart" / "strategies"


@pytest.fixture(scope="module")
def parts(adsb_job_dict, adsb_schema, adsb_adapter, adsb_sources):
    seg = Segmenter(**adsb_job_dict["segmenter"], sample_hz=adsb_schema.sample_hz)
    return adsb_schema, adsb_adapter, [str(p) for p in adsb_sources[:4]], seg


@pytest.fixture(scope="module")
def curated(parts):
    schema, adapter, sources, seg = parts
    st = load_strategy(STRATEGIES / "balanced-hours.json", schema)
    events: list[dict] = []
    res = curate(schema, adapter, sources, seg, st, 20, seed=0, progress=events.append)
    return res, events


def test_curate_selects_and_accounts(curated) -> None:
    res, events = curated
    assert res.n_selected == 20 and res.shortfall == 0
    assert sum(b["selected"] for b in res.bins) == 20
    assert sum(b["pool"] for b in res.bins) == len(res.pool)
    turning = res.tags["turning"]
    assert set(turning) == {"straight", "gentle", "turning"}
    assert all(v["floor"] == 5 and v["met"] for v in turning.values())  # ceil(0.25 * 20)
    assert res.groups["cap"] >= 1
    assert all(g["selected"] <= res.groups["cap"] for g in res.groups["per_group"].values())
    assert res.scoring["sources_scored"] == 4
    assert {"scoring_s", "selection_s", "report_s"} <= set(res.timing)
    kinds = {(e["phase"], e["event"]) for e in events}
    assert {("scoring", "start"), ("selection", "start"), ("selection", "complete")} <= kinds
    stages = [e["stage"] for e in events if e["phase"] == "selection" and e["event"] == "advance"]
    assert stages == ["groups", "filters", "bins", "method"]
    json.dumps(res.to_dict())  # JSON-ready


def test_audit_matches_scipy(curated, parts) -> None:
    res, _ = curated
    _schema, adapter, sources, _seg = parts
    pool = res.pool
    feats = res.audit["features"]
    assert set(feats) == set(res.strategy.feature_names)
    seg_entry = feats["climb_std"]["segment_duration"]
    assert seg_entry["rho"] is None and "constant" in seg_entry["note"]  # fixed windows
    lengths = {adapter.source_id(u): adapter.read_table(u).n_steps for u in sources}
    x = np.array([s.features["climb_std"] for s in pool])
    d = np.array([lengths[s.source_id] for s in pool])
    src_entry = feats["climb_std"]["source_duration"]
    if np.ptp(d) == 0:
        assert src_entry["rho"] is None
    else:
        assert src_entry["rho"] == pytest.approx(spearmanr(x, d).statistic)
    sel = np.array([s.features["turn_p90"] for s in res.selected])
    allv = np.array([s.features["turn_p90"] for s in pool])
    d = res.distribution["turn_p90"]
    assert d["ks"] == pytest.approx(ks_2samp(sel, allv).statistic)
    assert d["wasserstein"] == pytest.approx(wasserstein_distance(sel, allv))
    assert d["wasserstein_std"] == pytest.approx(wasserstein_distance(sel, allv) / allv.std())


def test_duration_correlation_golden() -> None:
    from kuration import Segment
    from kuration.tools.audit import duration_correlations

    rng = np.random.default_rng(0)
    segs = [
        Segment(f"s{i % 5}", i, i + 10 + i % 3, {"f": float(i % 5 + rng.random())})
        for i in range(40)
    ]
    lengths = {f"s{k}": 100 * (k + 1) for k in range(5)}
    out = duration_correlations(segs, ["f"], lengths)
    f = np.array([s.features["f"] for s in segs])
    seg_d = np.array([s.n_steps for s in segs])
    src_d = np.array([lengths[s.source_id] for s in segs])
    assert out["f"]["segment_duration"]["rho"] == pytest.approx(spearmanr(f, seg_d).statistic)
    assert out["f"]["source_duration"]["rho"] == pytest.approx(spearmanr(f, src_d).statistic)


def test_shift_and_coverage_helpers() -> None:
    a, b = np.array([0.0, 1.0, 2.0, np.nan]), np.array([0.0, 5.0])
    assert ks_statistic(a[:3], b) == pytest.approx(ks_2samp(a[:3], b).statistic)
    d = distribution_shift(a, a[:2])
    assert d["pool_n"] == 3 and d["selected_n"] == 2
    x = np.array([[0.0], [1.0], [2.0], [3.0]])
    cov = coverage_metrics(x, [0, 3])
    z = (x[:, 0] - x.mean()) / x.std()
    assert cov["radius"] == pytest.approx(abs(z[1] - z[0]))
    assert coverage_metrics(x, [])["radius"] is None


def test_experiment_runs_every_method_on_one_pool(parts) -> None:
    schema, adapter, sources, seg = parts
    sts = [load_strategy(p, schema) for p in sorted(STRATEGIES.glob("*.json"))]
    events: list[dict] = []
    ex = run_experiment(schema, adapter, sources, seg, sts, 15, progress=events.append)
    assert [r["strategy"] for r in ex.comparison] == [s.name for s in sts]
    pools = {tuple(s.key for s in r.pool) for r in ex.results.values()}
    assert len(pools) == 1  # the same scored pool for every strategy
    for row in ex.table():
        assert row["n_selected"] <= 15
        for ax in ex.axes:
            assert row[f"ks:{ax}"] is None or 0.0 <= row[f"ks:{ax}"] <= 1.0
    adv = [e for e in events if e["phase"] == "experiment" and e["event"] == "advance"]
    assert [e["strategy"] for e in adv] == [s.name for s in sts]
    # coverage methods cover the pool at least as tightly as ranking by one feature
    by = {r["strategy"]: r for r in ex.comparison}
    kc = compare_strategies(
        list(ex.results["k-center"].pool),
        [sts[[s.name for s in sts].index("k-center")]],
        15,
        axes=["turn_p90", "climb_std", "altitude_mean"],
    ).comparison[0]
    topk = compare_strategies(
        list(ex.results["top-k"].pool),
        [sts[[s.name for s in sts].index("top-k")]],
        15,
        axes=["turn_p90", "climb_std", "altitude_mean"],
    ).comparison[0]
    assert kc["radius"] < topk["radius"]
    assert by["k-center"]["n_selected"] == 15
    json.dumps(ex.to_dict())


def _job_file(tmp_path: Path, job: dict) -> Path:
    p = tmp_path / "job.json"
    p.write_text(json.dumps(job))
    return p


@pytest.mark.parametrize("name", ["k-center", "filter"])
def test_cli_curate_json(name: str, small_job, tmp_path: Path, capsys) -> None:
    job = _job_file(tmp_path, small_job)
    rc = main(
        ["curate", str(job), "--strategy", str(STRATEGIES / f"{name}.json"), "--n", "12", "--json"]
    )
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["method"] == name and out["n_selected"] <= 12
    assert len(out["audit"]["segments"]) == out["n_pool"]
    assert out["timing"]["selection_s"] >= 0 and out["wall_s"] > 0
    if name == "filter":
        bad = [r for r in out["audit"]["segments"] if "filtered out" in r["reason"]]
        assert bad and not any(r["selected"] for r in bad)


def test_cli_curate_tables_and_experiment(small_job, tmp_path: Path, capsys) -> None:
    job = _job_file(tmp_path, small_job)
    assert main(["curate", str(job), "--n", "10"]) == 0
    text = capsys.readouterr().out
    assert "selected 10/10" in text and "per feature" in text
    rc = main(
        [
            "experiment",
            str(job),
            "--strategy",
            str(STRATEGIES / "top-k.json"),
            "--strategy",
            str(STRATEGIES / "facility-location.json"),
            "--n",
            "10",
        ]
    )
    assert rc == 0
    text = capsys.readouterr().out
    assert "facility-location" in text and "top-k" in text
    assert main(["curate", str(job), "--n", "5", "--strategy", str(tmp_path / "nope.json")]) == 1


# ---- the count path runs through the Pipeline (issue 12) ------------------------------------


def test_curate_runs_through_the_pipeline(curated) -> None:
    """``curate`` is a wrapper over Pipeline: every pipeline phase shows in its progress."""
    _, events = curated
    phases = [e["phase"] for e in events if e["event"] == "start"]
    assert phases[:2] == ["provenance", "scoring"]
    assert {"transforms", "scorers", "selection"} <= set(phases)
    prov = [e for e in events if e["phase"] == "provenance" and e["event"] == "advance"]
    assert [e["current"] for e in prov] == [1, 2, 3, 4]


def test_compare_scores_one_pool_and_matches_compare_strategies(parts) -> None:
    from kuration import Pipeline

    schema, adapter, sources, seg = parts
    sts = [load_strategy(STRATEGIES / f"{n}.json", schema) for n in ("top-k", "k-center")]
    events: list[dict] = []
    p = Pipeline().source(adapter, sources).segment(seg).options(seed=3, progress=events.append)
    ex = p.compare(sts, 10)
    starts = [e["phase"] for e in events if e["event"] == "start"]
    # the random control is added to the two strategies (neither is random)
    assert starts.count("scoring") == 1 and starts.count("selection") == len(sts) + 1
    assert list(ex.results) == ["top-k", "k-center", "random"]
    assert starts[0] == "provenance"
    pool = list(next(iter(ex.results.values())).pool)
    ref = compare_strategies(pool, sts, 10, seed=3)
    for name in ex.results:
        assert [s.key for s in ex.results[name].selected] == [
            s.key for s in ref.results[name].selected
        ]
        assert ex.results[name].scoring == ex.scoring
    assert set(ex.timing) == {"scoring_s", "total_s"}
    with pytest.raises(StrategyError, match="at least one"):
        p.compare([], 10)


def test_curate_job_is_from_job_select(small_job, monkeypatch) -> None:
    """``curate_job`` is ``Pipeline.from_job(job).select(n)`` (+ ``.metrics`` for a strategy)."""
    from kuration import Pipeline
    from kuration.pipeline.api import count as count_mod

    built: list[Pipeline] = []
    real_run = Pipeline.run

    def spy(self: Pipeline):
        built.append(self)
        return real_run(self)

    monkeypatch.setattr(Pipeline, "run", spy)
    res = count_mod.curate_job(small_job, 7, strategy=STRATEGIES / "top-k.json", seed=2)
    (p,) = built
    ref = Pipeline.from_job(small_job).metrics(STRATEGIES / "top-k.json").select(7)
    assert p.to_dict() == {**ref.to_dict(), "options": {**ref.opts.to_dict(), "seed": 2}}
    assert res.n_selected == 7 and res.strategy.name == "top-k"


def test_kur_curate_and_experiment_bars_show_every_pipeline_phase(
    small_job, tmp_path: Path, monkeypatch, capsys
) -> None:
    """``kur curate``/``kur experiment`` run the Pipeline: their rich bars get every phase."""
    from kuration.cli import curate as cli_curate

    seen: list[set[str]] = []

    class Recording:
        def __enter__(self):
            seen.append(set())
            return self

        def __exit__(self, *exc) -> None:
            return None

        def __call__(self, ev: dict) -> None:
            seen[-1].add(ev["phase"])

    monkeypatch.setattr(cli_curate, "RichProgress", Recording)
    job = _job_file(tmp_path, small_job)
    assert main(["curate", str(job), "--n", "4", "--json"]) == 0
    top_k = str(STRATEGIES / "top-k.json")
    assert main(["experiment", str(job), "--strategy", top_k, "--n", "4", "--json"]) == 0
    capsys.readouterr()
    pipeline_phases = {"provenance", "scoring", "transforms", "scorers", "selection"}
    assert seen[0] == pipeline_phases
    assert seen[1] == pipeline_phases | {"experiment"}
