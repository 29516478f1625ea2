"""The ``mutual_information`` scorer on real football tracking: SkillCorner broadcast tracking
(Bayern Munchen v Borussia Dortmund, 10 Hz, from the TimeNet dataset
kloppy/football-tracking@1.0 built by its connector from the kloppy==3.19.1 sample files,
BSD-3-Clause).

Pairing: observation = a player's position relative to the ball (m, 2-D); action = the
player's next-step velocity ``(p[t+1] - p[t]) * 10 Hz`` (m/s, 2-D); samples pooled over the
players of a 30-second window (the ball is the reference, not a sample)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from kuration import load_strategy
from kuration.metrics.mutual_info import MutualInformationScorer, ksg_mutual_information
from kuration.pipeline.api.count import curate_job
from kuration.pipeline.spec.job import load_job

FOOTBALL = Path(__file__).resolve().parents[3] / "examples" / "football" / "job.json"
MI = {
    "obs": "position",
    "action": "position",
    "reference": "ball",
    "action_as": "next_velocity",
    "k": 3,
}


@pytest.mark.slow
def test_mi_scorer_on_football_weighted_inside_coverage_bins(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    reg = tmp_path_factory.getbasetemp() / "tn-session-registry"  # shared with other tests
    monkeypatch.setenv("TIMENET_REGISTRY", str(reg))
    job, _ = load_job(FOOTBALL)
    job = json.loads(json.dumps(job))
    job["segmenter"] = {"window": 30, "stride": 900, "unit": "seconds"}  # a few windows
    from kuration.pipeline.spec.job import job_components

    schema, _, _ = job_components(job)  # the position's unit comes from the TimeNet catalog
    strategy = load_strategy(
        {
            "define": {"team_speed": "field:position | speed | entities:mean | mean"},
            "scorers": [{"name": "mutual_information", "params": MI, "output": "mi"}],
            "bin": {"axes": ["team_speed"], "n_bins": 2},
            "method": "uniform-bins",
            "params": {"within": {"by": "mi"}},
        },
        schema,
    )
    res = curate_job(job, 2, strategy=strategy)
    mi = {s.key: s.features["mi"] for s in res.pool}
    assert len(mi) >= 6 and all(math.isfinite(v) for v in mi.values())
    # coverage: one per speed bin; quality: the higher-MI segment of each bin
    by_bin: dict = {}
    for s in res.pool:
        by_bin.setdefault(s.bin, []).append(s)
    assert len(by_bin) == 2
    for segs in by_bin.values():
        best = max(segs, key=lambda s: s.features["mi"])
        assert best.key in {s.key for s in res.selected}
    # the estimate reflects the pairing: breaking it (actions shuffled across samples) drops
    # the value to about zero, well below every real segment's estimate
    from kuration import Pipeline
    from kuration.pipeline.spec.job import resolve_sources

    p = Pipeline.from_job(job)
    adapter = p.adapter
    sources = resolve_sources(p.sources, p.base, adapter=adapter)
    seg = res.pool[0]
    table = adapter.read_table(next(u for u in sources if adapter.source_id(u) == seg.source_id))
    from kuration.extend import build_window

    scorer = MutualInformationScorer(**MI)
    obs, act = scorer.samples(build_window(table, seg.start_idx, seg.end_idx))
    assert obs.shape[0] > 1000 and obs.shape[1] == act.shape[1] == 2
    rng = np.random.default_rng(0)
    shuffled = ksg_mutual_information(
        obs, act[rng.permutation(len(act))] + 1e-9 * rng.standard_normal(act.shape)
    )
    print(f"football MI per segment (nats): {sorted(mi.values())}; shuffled: {shuffled:.4f}")
    assert abs(shuffled) < 0.05 < min(mi.values())
