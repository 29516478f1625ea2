"""A span where its entity is never present is no candidate: dropped, counted in config.json's
budget (``empty_spans_excluded``), never written; the budget's ``present_s`` and
``emitted_present_s`` are the present ticks the written shards hold (``_present``).

A small generated source (an aircraft seen for 5 minutes, gone for 23, seen for 5 more)
pins the arithmetic, in memory and streamed; the 3-hour ADS-B recording (traffic==2.13
sample, one source) is the real case: a quarter of its 5-minute spans are empty."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kuration import Pipeline
from kuration.cli.main import main
from kuration.errors import BudgetGranularityWarning
from kuration.sources.samples import build_adsb_sources

T0_MS = 1_633_608_000_000  # 2021-10-07, the sample's day


def _rows(entity: str, ticks: np.ndarray, climb: float) -> dict[str, Any]:
    n = ticks.size
    return {
        "timestamp": T0_MS + ticks * 1000,
        "icao24": [entity] * n,
        "latitude": 48.5 + ticks * 1e-3,
        "longitude": 2.3 + np.sin(ticks / 50.0) * 0.1,
        "altitude": 10_000.0 + climb * ticks,
        "groundspeed": np.full(n, 300.0),
        "track": (ticks * 2.0) % 360.0,
        "vertical_rate": np.full(n, climb * 60.0),
        "onground": np.zeros(n, bool),
    }


@pytest.fixture(scope="module")
def gappy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """2,000 s at 1 Hz: ``gone`` present at ticks 0-299 and 1700-1999, ``here`` throughout;
    rows in time order (so it streams)."""
    parts = [
        _rows("gone", np.r_[0:300, 1700:2000], 5.0),
        _rows("here", np.arange(2000), -3.0),
    ]
    cols = {k: np.concatenate([np.asarray(p[k]) for p in parts]) for k in parts[0]}
    table = pa.table(cols)
    table = table.take(np.argsort(cols["timestamp"], kind="stable"))
    path = tmp_path_factory.mktemp("gappy") / "gappy.parquet"
    pq.write_table(table, path)
    return path


def _job(base: dict[str, Any], sources: list[Path], train_h: float) -> dict[str, Any]:
    j = json.loads(json.dumps(base))
    j.update(
        sources=[str(p) for p in sources],
        budget={"train_hours": train_h, "test_hours": 0.0},
        span_seconds=300,
        min_track_seconds=60,
        allow_empty_split=True,
        on_error="raise",
    )
    j["output"]["container"] = "parquet"
    return j


def _write(j: dict[str, Any], out: Path, **opts: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetGranularityWarning)
        return Pipeline.from_job(j).options(**opts).write(out)


def _present_in_shards(root: Path, manifest: dict[str, Any]) -> dict[tuple, int]:
    """Per (entity, span): present steps read back from the written shards."""
    out: dict[tuple, int] = {}
    for e in manifest["shards"]:
        t = pq.read_table(root / e["path"], columns=["_present"])
        n = int(
            np.asarray(t.column("_present").to_numpy(zero_copy_only=False))[: e["n_steps"]].sum()
        )
        key = (e["entity_id"], e["span_index"])
        out[key] = out.get(key, 0) + n
    return out


def test_empty_spans_are_dropped_counted_and_streamed_alike(
    adsb_job_dict: dict, gappy: Path, tmp_path: Path, digests
) -> None:
    j = _job(adsb_job_dict, [gappy], train_h=1.0)  # room for every span
    mem = _write(j, tmp_path / "mem")
    streamed = _write(j, tmp_path / "stream", streaming=True, stream_batch_rows=256)
    assert digests(tmp_path / "stream") == digests(tmp_path / "mem")
    for res in (mem, streamed):
        assert res.config["results"]["budget"] == mem.config["results"]["budget"]
    budget = mem.config["results"]["budget"]
    # gone's extent [0, 1999] makes 7 spans of 300; spans 1-4 ([300, 1499]) are empty
    assert budget["empty_spans_excluded"] == 4
    got = _present_in_shards(tmp_path / "mem", mem.manifest)
    assert got == {
        **{("str:gone", k): n for k, n in ((0, 300), (5, 100), (6, 200))},
        **{("str:here", k): 300 if k < 6 else 200 for k in range(7)},
    }
    train = budget["train"]
    # admitted time counts whole spans (the shards written), present time what they hold
    assert train["admitted_s"] == train["emitted_s"] == (300 * 2 + 200) + (6 * 300 + 200)
    assert train["present_s"] == train["emitted_present_s"] == sum(got.values())
    # the manifest's own budget block is as before: no presence keys
    assert "empty_spans_excluded" not in mem.manifest["budget"]
    assert "present_s" not in mem.manifest["budget"]["train"]


def test_an_empty_span_is_never_admitted_before_a_present_one(
    adsb_job_dict: dict, gappy: Path, tmp_path: Path
) -> None:
    # a budget of 4 spans: before, empty spans with a finite priority (the windows hold
    # ``here``) competed for it on equal terms
    res = _write(_job(adsb_job_dict, [gappy], train_h=1200 / 3600), tmp_path / "out")
    got = _present_in_shards(tmp_path / "out", res.manifest)
    assert min(got.values()) > 0, got


@pytest.mark.slow
def test_the_3_hour_recording_admits_no_empty_span(
    adsb_job_dict: dict, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    (src,) = build_adsb_sources(tmp_path_factory.mktemp("adsb-3h"), slice_minutes=180)
    res = _write(_job(adsb_job_dict, [src], train_h=2.0), tmp_path / "out")
    budget = res.config["results"]["budget"]
    train = budget["train"]
    # measured: 356 of the 1,439 spans of 5 minutes (25%) hold no present tick
    n_all = train["candidate_tracks"] + budget["empty_spans_excluded"]
    assert budget["empty_spans_excluded"] > 0.2 * n_all
    got = _present_in_shards(tmp_path / "out", res.manifest)
    assert len(got) == train["admitted_tracks"] and min(got.values()) > 0
    assert train["emitted_present_s"] == sum(got.values())  # 1 Hz
    assert 0 < train["present_s"] < train["admitted_s"]


def test_kur_run_prints_the_present_hours_and_the_empty_spans(
    adsb_job_dict: dict, gappy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = tmp_path / "job.json"
    job.write_text(json.dumps(_job(adsb_job_dict, [gappy], train_h=1.0)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetGranularityWarning)
        assert main(["run", str(job), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "spans left out: 4 (the entity is present at none of their ticks)" in out
    row = next(line for line in out.splitlines() if "train" in line and " h" in line)
    # requested 1 h; admitted and emitted 2,800 s (0.78 h), of which 2,600 s (0.72 h) present
    cells = [c.strip() for c in row.strip("│ ").split("│")]
    assert cells[1:6] == ["1.00 h", "0.78 h", "0.78 h", "0.72 h", "0.78 h"]
