"""``filter_scope: "span"`` (issue 29): a window a strategy's filter fails keeps every
candidate overlapping it out, on the real ADS-B quickstart, for the ``random`` method and
a ranked one, with the memory and disk pools writing the same bytes."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from kuration import Segment, run_job
from kuration.errors import JobError, PipelineError
from kuration.pipeline.api.pipeline import Pipeline
from kuration.pipeline.run.scoring import TrackExtent
from kuration.pipeline.spec.job import load_job
from kuration.selection.candidates import aggregate_segments, build_candidate_table

ROOT = Path(__file__).resolve().parents[3]
JOB = ROOT / "examples" / "adsb_quickstart" / "job.json"
#: Fails the windows in the top tenth of turn rate: a few windows of many spans.
FILTER = [{"feature": "turn_p90", "op": "<=", "quantile": 0.9}]


def _strategy(name: str) -> dict:
    st = json.loads((ROOT / "examples" / "adsb_quickstart" / "strategies" / name).read_text())
    st["filters"] = FILTER
    return st


def _job(sources: list[Path], strategy: dict, **keys: object) -> dict:
    job, _ = load_job(JOB)
    job["sources"] = [str(p) for p in sources[:4]]
    job["budget"] = {"train_hours": 1.0, "test_hours": 0.25}
    job["strategy"] = strategy
    job["segmenter"]["scope"] = "scene"  # the windows _touches_failed counts
    job.update(keys)
    return job


def _run(job: dict, out: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_job(job, out)


def _touches_failed(res) -> int:
    """Admitted candidates overlapping at least one window of priority -inf."""
    failed: dict[str, list[tuple[int, int]]] = {}
    for s in res.scoring.segments:
        if s.priority == -np.inf:
            failed.setdefault(s.source_id, []).append((s.start_idx, s.end_idx))
    return sum(
        any(a <= c.last and b > c.first for a, b in failed.get(c.source_id, ()))
        for split in ("train", "test")
        for c in res.fill.admitted[split]
    )


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["random.json", "uniform-bins.json"])
def test_a_failed_window_keeps_its_spans_out(adsb_sources, tmp_path: Path, strategy) -> None:
    st = _strategy(strategy)
    base = _run(_job(adsb_sources, st), tmp_path / "base")
    mem = _run(_job(adsb_sources, st, filter_scope="span"), tmp_path / "mem")
    assert any(s.priority == -np.inf for s in mem.scoring.segments)
    # today's window scope admits spans holding a failed window; span scope never does
    assert _touches_failed(base) > 0
    assert _touches_failed(mem) == 0
    for split in ("train", "test"):
        got, was = mem.config["results"]["budget"][split], base.config["results"]["budget"][split]
        assert got["nonfinite_excluded"] > was["nonfinite_excluded"]
    assert mem.manifest["budget"]["filter_scope"] == "span"
    assert "filter_scope" not in base.manifest["budget"]  # the default records nothing new
    plan = Pipeline.from_job(_job(adsb_sources, st, filter_scope="span")).explain().render()
    assert "filter_scope = span" in plan
    if strategy == "random.json":
        disk = _run(_job(adsb_sources, st, filter_scope="span", pool="disk"), tmp_path / "disk")
        name = "dataset_manifest.json"
        assert (Path(mem.path) / name).read_bytes() == (Path(disk.path) / name).read_bytes()


def test_veto_on_a_built_table() -> None:
    """One -inf window vetoes only the spans it overlaps, for max, mean and min alike."""

    ext = [TrackExtent(entity_id="e", first=0, last=39, n_present=40)]
    # windows [0, 15), [10, 25), [20, 35), [30, 40): the second one failed a filter
    segs = [
        Segment(source_id="s", start_idx=i, end_idx=min(i + 15, 40), priority=p)
        for i, p in zip(range(0, 40, 10), [1.0, -np.inf, 2.0, 3.0], strict=True)
    ]
    for how in ("max", "mean", "min"):
        kw = {"how": how, "features": (), "span_steps": 10}
        plain, _ = build_candidate_table({"s": ext}, {"s": segs}, **kw)
        veto, _ = build_candidate_table({"s": ext}, {"s": segs}, veto=True, **kw)
        assert np.isfinite(plain.priority).all()
        # spans [10, 19] and [20, 29] overlap the failed window; [0, 9] and [30, 39] do not
        assert np.isneginf(veto.priority).tolist() == [False, True, True, False]
        for k, (a, b) in enumerate([(0, 9), (10, 19), (20, 29), (30, 39)]):
            p, _ = aggregate_segments(segs, a, b, how, (), veto=True)
            assert p == veto.priority[k]
        keep = np.isfinite(veto.priority)
        assert veto.priority[keep].tolist() == plain.priority[keep].tolist()


def test_a_bad_filter_scope_is_refused_at_load(adsb_sources) -> None:
    st = _strategy("random.json")
    with pytest.raises(JobError, match="filter_scope"):
        Pipeline.from_job(json.loads(json.dumps(_job(adsb_sources, st, filter_scope="track"))))
    p = Pipeline.from_job(_job(adsb_sources, st))
    with pytest.raises(PipelineError, match="filter_scope"):
        p.sample(hours=1.0, filter_scope="track")
