"""Strategy JSON: validation before any data, round trips, resolved defaults."""

from __future__ import annotations

import json

import pytest
from _selection_pools import DEFINE, SCHEMA, strategy

from kuration import load_strategy
from kuration.errors import MetricCompileError, StrategyError


def test_round_trip_with_every_block() -> None:
    s = strategy(
        filters=[{"feature": "a", "op": ">", "value": -3}, {"filter": "finite"}],
        bin={"axes": ["a", "b"], "n_bins": [3, 2]},
        method="uniform-bins",
        tags={
            "level": {"feature": "c", "thresholds": [0.0]},
            "src": {"source": {"regex": r"src(\d)"}},
        },
        group={"map": {"src0": "g0"}, "default": "rest"},
        tag_coverage={"level": 0.2, "src": {"1": 2}},
        group_cap={"max_overshoot": 1.5},
        seed=3,
    )
    d = s.to_dict()
    assert d["bin"]["n_bins"] == [3, 2]
    assert d["tags"]["level"]["labels"] == ["c<0.0", "c>=0.0"]
    assert d["filters"][0] == {"filter": "predicate", "feature": "a", "op": ">", "value": -3}
    again = load_strategy(json.loads(json.dumps(d)), SCHEMA)
    assert again == s


def test_coverage_methods_write_their_resolved_features() -> None:
    s = strategy(method="k-center", bin={"axes": ["b"], "n_bins": 2})
    assert s.params["features"] == ["b"]
    s = strategy(method="facility-location")
    assert s.params["features"] == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ({"method": "top-k", "params": {"by": "a"}, "colour": 1}, "unknown key .colour."),
        ({"method": "nope"}, "unknown selection method"),
        ({"method": "top-k", "params": {"by": "zz"}}, "needs 'by'"),
        ({"method": "uniform-bins", "bin": {"axes": ["zz"]}}, "not a defined feature"),
        ({"method": "uniform-bins", "bin": {"axes": ["a"], "n_bins": [2, 2]}}, "counts for 1"),
        ({"method": "top-k", "params": {"by": "a"}, "filters": [{"op": ">"}]}, "needs 'filter'"),
        (
            {"method": "top-k", "params": {"by": "a"}, "filters": [{"filter": "nope"}]},
            "unknown filter",
        ),
        (
            {"method": "top-k", "params": {"by": "a"}, "filters": [{"feature": "a", "op": "~"}]},
            "op must be",
        ),
        (
            {"method": "top-k", "params": {"by": "a"}, "tag_coverage": {"x": 1}},
            "not a declared tag",
        ),
        (
            {
                "method": "top-k",
                "params": {"by": "a"},
                "tags": {"t": {"feature": "a", "bins": 2}},
                "tag_coverage": {"t": 1.5},
            },
            "fractional floor",
        ),
        (
            {
                "method": "top-k",
                "params": {"by": "a"},
                "tags": {"t": {"feature": "a", "bins": 2}},
                "tag_coverage": {"t": {"q9": 1}},
            },
            "not one of its labels",
        ),
        ({"method": "top-k", "params": {"by": "a"}, "group_cap": {}}, "needs a 'group'"),
        (
            {"method": "top-k", "params": {"by": "a"}, "group": {"regex": "("}},
            "regex",
        ),
        (
            {
                "method": "top-k",
                "params": {"by": "a"},
                "group": {"regex": "x"},
                "group_cap": {"max_overshoot": 0.5},
            },
            "greater than or equal to 1",
        ),
        (
            {"method": "top-k", "params": {"by": "a"}, "seed": -1},
            r"seed.*greater than or equal to 0",
        ),
    ],
)
def test_invalid_strategies_fail_at_load(spec: dict, match: str) -> None:
    with pytest.raises(StrategyError, match=match):
        strategy(**spec)


def test_bad_metric_fails_at_load() -> None:
    with pytest.raises(MetricCompileError):
        load_strategy(
            {
                "define": {**DEFINE, "d": "field:nope | mean"},
                "method": "top-k",
                "params": {"by": "a"},
            },
            SCHEMA,
        )


def test_example_strategies_load(adsb_schema) -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parents[3] / "examples" / "adsb_quickstart" / "strategies"
    files = sorted(root.glob("*.json"))
    methods = {load_strategy(p, adsb_schema).method for p in files}
    assert {
        "uniform-bins",
        "top-k",
        "weighted",
        "target-distribution",
        "filter",
        "k-center",
        "facility-location",
        "importance",
    } <= methods


def test_a_negative_strategy_seed_is_refused_by_run_and_explain(
    tmp_path, adsb_job_dict, capsys
) -> None:
    """The job's own ``seed`` was checked, the strategy's not: a negative one failed with a
    traceback after scoring, and ``kur explain`` accepted it."""
    from kuration.cli.main import main

    job = json.loads(json.dumps(adsb_job_dict))
    job["strategy"]["seed"] = -3
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    for argv in (["explain", str(path)], ["run", str(path), "--out", str(tmp_path / "ds")]):
        assert main(argv) == 1, argv
        err = capsys.readouterr().err
        assert "strategy.seed: input should be greater than or equal to 0, got -3" in err, err
    assert not (tmp_path / "ds").exists()
