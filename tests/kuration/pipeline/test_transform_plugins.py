"""A BatchTransform and a SegmentScorer from a plugin module (written to ``tmp_path`` and
listed in the job's ``plugins``) give the same features and byte-identical shards under
``workers=2`` as under ``workers=1``; each worker process builds the transform once; the
descriptors and the plugin's code digest are recorded.  Real ADS-B sources."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kuration import load_strategy, run_job
from kuration.core.plugins import load_plugins

# small budgets over whole tracks overshoot on purpose here
pytestmark = pytest.mark.filterwarnings("ignore::kuration.errors.BudgetGranularityWarning")


PLUGIN = '''
import os

import numpy as np

from kuration.extend import BatchTransform, SegmentScorer, register_scorer, register_transform


class AbsQuantile(BatchTransform):
    """The q-quantile of |series| over each row's real ticks (lookbehind included)."""

    def __init__(self, q=0.9):
        self.q = float(q)
        with open(os.environ["MEDIA2_LOADS"], "a") as fh:
            fh.write(f"{os.getpid()}\\n")

    def transform(self, batch, ctx):
        tok = ctx.input_token("series")
        x = batch[tok]
        out = []
        for i in range(x.shape[0]):
            v = x[i, : ctx.valid_steps[tok][i]]
            v = v[np.isfinite(v)]
            out.append(float(np.quantile(np.abs(v), self.q)) if v.size else 0.0)
        return {"level": np.array(out)}


class PoolRank(SegmentScorer):
    """Each segment's rank percentile of a feature over the whole pool."""

    def __init__(self, feature):
        self.feature = feature

    def score(self, segments, ctx):
        x = np.array([s.features[self.feature] for s in segments])
        return (np.argsort(np.argsort(x, kind="stable"), kind="stable") + 1) / len(x)


register_transform("plug-abs-quantile", AbsQuantile, inputs={"series": "field"},
                   outputs=["level"], batch_size=3)
register_scorer("plug-pool-rank", PoolRank)
'''

STRATEGY = {
    "define": {"alt_mean": "field:altitude | mean"},
    "transforms": [
        {
            "name": "plug-abs-quantile",
            "inputs": {"series": "field:vertical_rate"},
            "lookbehind": 5,
            "params": {"q": 0.9},
            "outputs": {"level": "climb_q90"},
        }
    ],
    "scorers": [
        {"name": "plug-pool-rank", "params": {"feature": "climb_q90"}, "output": "climb_rank"}
    ],
    "method": "top-k",
    "params": {"by": "climb_rank"},
}


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "plug").mkdir()
    (tmp_path / "plug" / "kur_media2_plug.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path / "plug"))  # spawn workers inherit sys.path
    monkeypatch.setenv("MEDIA2_LOADS", str(tmp_path / "loads.txt"))
    load_plugins(["kur_media2_plug"], include_entry_points=False)
    return "kur_media2_plug"


@pytest.mark.slow
def test_plugin_transform_and_scorer_agree_across_worker_counts(
    plugin, tmp_path, adsb_schema, adsb_adapter, adsb_sources, adsb_job_dict, digests
) -> None:
    job = json.loads(json.dumps(adsb_job_dict))
    job.update(
        sources=[str(p) for p in adsb_sources[:2]],
        plugins=[plugin],
        strategy=STRATEGY,
        budget={"train_hours": 0.1, "test_hours": 0.05},
    )
    mods = job["output"]["modalities"]
    for name in [n for n, m in mods.items() if m["source"].startswith("segment:")]:
        del mods[name]  # the example strategy's features: not in this strategy
    mods["climb_rank"] = {"dtype": "float64", "shape": [], "source": "segment:climb_rank"}
    loads = tmp_path / "loads.txt"
    feats, runs = {}, {}
    for w in (1, 2):
        loads.write_text("")
        runs[w] = run_job(job, tmp_path / f"w{w}", workers=w, executor="process" if w > 1 else None)
        feats[w] = [(s.key, s.features) for s in runs[w].scoring.segments]
        pids = loads.read_text().split()
        assert len(pids) == len(set(pids)) <= w  # built once per runner (per worker process)
    assert feats[1] == feats[2] and len(feats[1]) > 20
    ranks = sorted(f["climb_rank"] for _, f in feats[1])
    assert ranks[-1] == 1.0 and ranks[0] == pytest.approx(1 / len(ranks))
    assert digests(tmp_path / "w1") == digests(tmp_path / "w2")  # byte-identical shards
    text = json.dumps(runs[1].config)
    assert '"plug-abs-quantile"' in text and '"climb_q90"' in text and '"plug-pool-rank"' in text
    assert runs[1].fingerprint == runs[2].fingerprint
    mods = runs[1].config["provenance"]["implementations"]["modules"]
    assert len(mods[plugin]) == 64  # the plugin's source digest


def test_the_run_fingerprint_covers_the_plugin_transform_code(plugin, adsb_schema) -> None:
    from kuration.core.plugins import run_code, used_names

    strategy = load_strategy(STRATEGY, adsb_schema)
    code = run_code(used_names(strategy.to_dict(), "timeseries", "npz"), [plugin])
    assert code["registered"]["batch transform:plug-abs-quantile"]["object"] == (
        "kur_media2_plug.AbsQuantile"
    )
    assert (
        code["registered"]["segment scorer:plug-pool-rank"]["sha256"]
        == (code["plugin_modules"][plugin])
    )
