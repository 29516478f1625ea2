"""``kur run`` names the strategy, what it left out of the pool, and warns of an under-filled
split in hours (config.json keeps seconds)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from kuration.cli._budget_notes import excluded_tracks_line, strategy_line, underfill_lines
from kuration.cli.main import main
from kuration.core.jsonio import loads_strict
from kuration.core.words import count


def test_strategy_line_names_name_method_and_filters() -> None:
    assert strategy_line(None) is None and strategy_line({"name": "x"}) is None
    s = {"name": "q", "method": "uniform-bins", "filters": [{}, {}]}
    assert strategy_line(s) == "strategy: q (method uniform-bins, 2 filters)"
    assert strategy_line({"method": "rank", "filters": []}) == (
        "strategy: (unnamed) (method rank, no filters)"
    )


def test_excluded_line_gives_hours_per_split_and_the_short_tracks_once() -> None:
    budget = {
        "train": {"nonfinite_excluded": 184, "nonfinite_excluded_s": 38292.0},
        "test": {"nonfinite_excluded": 25, "nonfinite_excluded_s": 4951.0},
        "too_short_excluded": 63,
        "min_track_seconds": 120.0,
    }
    line = excluded_tracks_line(budget)
    assert line == (
        "left out of the pool: the strategy's filters (or a NaN feature) removed train 184 "
        "tracks (10.64 h), test 25 tracks (1.38 h); 63 tracks were shorter than "
        "min_track_seconds (120 s)"
    )
    assert (
        excluded_tracks_line({"train": {"nonfinite_excluded": 0}, "too_short_excluded": 0}) is None
    )
    # a strategy without filters leaves tracks out only for a NaN feature
    assert excluded_tracks_line(budget, has_filters=False).startswith(  # type: ignore[union-attr]
        "left out of the pool: a NaN feature removed train 184 tracks"
    )


def test_one_track_is_counted_in_the_singular() -> None:
    budget = {
        "train": {"nonfinite_excluded": 1, "nonfinite_excluded_s": 20.0},
        "test": {"nonfinite_excluded": 2, "nonfinite_excluded_s": 7200.0},
        "too_short_excluded": 1,
        "min_track_seconds": 120.0,
    }
    assert excluded_tracks_line(budget, has_filters=False) == (
        "left out of the pool: a NaN feature removed train 1 track (0.01 h), test 2 tracks "
        "(2.00 h); 1 track was shorter than min_track_seconds (120 s)"
    )


def test_an_underfilled_run_warns_in_hours_and_names_the_strategy(
    small_job: dict, adsb_sources: list[Path], tmp_path: Path, capsys
) -> None:
    job = {**small_job, "sources": [str(p) for p in adsb_sources[:2]]}
    job["budget"] = {"train_hours": 40.0, "test_hours": 0.0}
    job["max_group_overshoot"] = 100.0
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    out = tmp_path / "out"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["run", str(path), "--out", str(out)]) == 0
    ran = " ".join(capsys.readouterr().out.split())
    cfg = loads_strict((out / "config.json").read_bytes(), what="config.json")
    budget, strategy = cfg["results"]["budget"], cfg["strategy"]
    assert f"strategy: {strategy['name']} (method {strategy['method']}" in ran
    b = budget["train"]
    assert b["binding"] == "pool size"
    emitted = f"{b['emitted_s'] / 3600:.2f} h of 40.00 h emitted"
    assert f"warning: train under-filled, binding constraint: pool size ({emitted}" in ran
    assert f"{b['emitted_s']:.0f} s of 144000 s emitted" in b["binding_detail"]  # seconds kept
    assert " s of 144000 s" not in ran
    assert ran.count("shorter than min_track_seconds") == (1 if budget["too_short_excluded"] else 0)
    assert "no finite priority" not in ran
    if b["nonfinite_excluded"]:
        assert f"removed train {count(b['nonfinite_excluded'], 'track')} (" in ran
    assert underfill_lines(budget)[0] in " ".join(ran.split())
