"""Pinned and time-based splits (job key ``split``): rules checked at load, whole sources
per split, the leak report; generated sources (hypothesis) and the real ADS-B recording."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst

from kuration import Pipeline, run_job
from kuration.errors import JobError, PipelineError
from kuration.pipeline.run.scoring import TrackExtent
from kuration.pipeline.spec.job import load_job
from kuration.pipeline.spec.split_rules import check_split_rule, rule_splits, split_report

ROOT = Path(__file__).resolve().parents[4]
JOB = ROOT / "examples" / "adsb_quickstart" / "job.json"


@pytest.mark.parametrize(
    ("rule", "match"),
    [
        ({}, "either test_sources"),
        ({"test_sources": ["a"], "test_from": 0}, "either test_sources"),
        ({"test_sources": []}, "non-empty list"),
        ({"test_sources": ["a"], "gap_seconds": 5}, "goes with test_from"),
        ({"test_from": "2021-10-07T13:30:00"}, "no time zone"),
        ({"test_from": "yesterday"}, "ISO 8601"),
        ({"test_from": 10, "gap_seconds": -1}, ">= 0"),
        ({"test_from": 10, "gap": 1}, "unknown keys"),
    ],
)
def test_bad_rules_are_named(rule: dict, match: str) -> None:
    with pytest.raises(PipelineError, match=match):
        check_split_rule(rule)


def test_iso_times_become_epoch_seconds() -> None:
    got = check_split_rule({"test_from": "2021-10-07T13:30:00Z", "gap_seconds": 900})
    assert got == {"test_from": 1633613400.0, "gap_seconds": 900.0}


sources = hst.lists(
    hst.tuples(hst.integers(0, 1000), hst.integers(1, 300), hst.sets(hst.integers(0, 5))),
    min_size=1,
    max_size=12,
)


@settings(max_examples=60, deadline=None)
@given(
    srcs=sources, t=hst.integers(0, 1300), gap=hst.integers(0, 200), hz=hst.sampled_from([1, 10])
)
def test_a_time_rule_keeps_whole_sources_apart(srcs, t: int, gap: int, hz: int) -> None:
    infos = {
        f"s{i:02d}": SimpleNamespace(
            k0=k0 * hz, n_steps=n * hz, tracks=tuple(TrackExtent(e, 0, 0, 1) for e in sorted(ents))
        )
        for i, (k0, n, ents) in enumerate(srcs)
    }
    ids = sorted(infos)
    rule = check_split_rule({"test_from": t, "gap_seconds": gap})
    assert rule is not None
    split = rule_splits(rule, ids, infos, hz)
    for s, sp in split.items():
        first, last = infos[s].k0 / hz, (infos[s].k0 + infos[s].n_steps - 1) / hz
        assert (first >= t) if sp == "test" else (last < t - gap)
    rep = split_report(split, ids, infos, hz)
    assert rep["excluded_sources"] == [s for s in ids if s not in split]
    if rep["train"]["sources"] and rep["test"]["sources"]:
        assert rep["leak_free_by_time"] and rep["gap_s"] >= gap - 1.0 / hz
    ents = {
        sp: {x.entity_id for s in ids if split.get(s) == sp for x in infos[s].tracks}
        for sp in ("train", "test")
    }
    assert rep["entities_in_both"] == len(ents["train"] & ents["test"])


# ---- the real ADS-B recording ------------------------------------------------------------


def _job(sources: list[Path], **keys: object) -> dict:
    job, _ = load_job(JOB)
    job["sources"] = [str(p) for p in sources]
    job["budget"] = {"train_hours": 1.0, "test_hours": 0.5}
    job.update(keys)
    return job


def _run(job: dict, out: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_job(job, out)


def test_pinned_and_time_splits_on_real_adsb(adsb_sources, tmp_path: Path) -> None:
    pinned = _run(_job(adsb_sources, split={"test_sources": {"glob": "*_01[01]"}}), tmp_path / "p")
    so = pinned.config["results"]["split_of"]
    assert {s for s, sp in so.items() if sp == "test"} == {"adsb_paris_010", "adsb_paris_011"}
    assert {e["source_id"] for e in pinned.manifest["shards"] if e["split"] == "test"} <= {
        "adsb_paris_010",
        "adsb_paris_011",
    }
    rep = pinned.config["results"]["split_report"]
    assert rep["leak_free_by_time"] and rep["entities_in_both"] > 0  # aircraft recur
    rule = {"test_from": "2021-10-07T13:30:00Z", "gap_seconds": 900}
    by_time = _run(_job(adsb_sources, split=rule), tmp_path / "t")
    disk = _run(_job(adsb_sources, split=rule, pool="disk"), tmp_path / "d")
    assert (Path(by_time.path) / "dataset_manifest.json").read_bytes() == (
        Path(disk.path) / "dataset_manifest.json"
    ).read_bytes()
    rep = by_time.config["results"]["split_report"]
    assert rep["excluded_sources"] == ["adsb_paris_005"] and rep["gap_s"] >= 900
    assert rep["rule"] == {"test_from": 1633613400.0, "gap_seconds": 900.0}
    assert "split" not in by_time.manifest["budget"]  # readers take its mappings for splits
    assert set(by_time.config["results"]["budget"]) >= {"train", "test"}
    assert "split" not in by_time.config["results"]["budget"]
    test_starts = [e["start_time_s"] for e in by_time.manifest["shards"] if e["split"] == "test"]
    train_ends = [
        e["start_time_s"] + e["n_steps"]
        for e in by_time.manifest["shards"]
        if e["split"] == "train"
    ]
    assert min(test_starts) >= 1633613400.0 > max(train_ends) + 899
    plain = _run(_job(adsb_sources[:4]), tmp_path / "plain")
    assert "split_report" not in plain.config["results"]
    assert "split" not in plain.manifest["budget"]


def test_a_rule_naming_no_source_fails_loud(adsb_sources, tmp_path: Path) -> None:
    with pytest.raises(PipelineError, match="no pooled source"):
        _run(_job(adsb_sources[:4], split={"test_sources": ["adsb_paris_099"]}), tmp_path / "x")
    with pytest.raises(JobError, match="split"):
        Pipeline.from_job(json.loads(json.dumps(_job(adsb_sources, split={"test_from": "soon"}))))
    p = Pipeline.from_job(_job(adsb_sources[:4]))
    with pytest.raises(PipelineError, match="either test_sources"):
        p.sample(hours=1.0, split={})
