"""Every shipped example (examples/*/job.json) lands within 10% of each requested budget."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import timenet as tn
from kuration import run_job

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = sorted(p.parent.name for p in (ROOT / "examples").glob("*/job.json"))


@pytest.mark.slow
@pytest.mark.parametrize("example", EXAMPLES)
def test_shipped_example_admits_its_request_within_10_percent(
    example: str, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    reg = tmp_path_factory.getbasetemp() / "tn-session-registry"
    monkeypatch.setenv("TIMENET_REGISTRY", str(reg))
    job = ROOT / "examples" / example / "job.json"
    res = run_job(job, tmp_path_factory.mktemp(example) / "out")
    budget = res.config["results"]["budget"]
    requested = json.loads(job.read_text())["budget"]
    for split in ("train", "test"):
        req = requested[f"{split}_hours"] * 3600
        assert budget[split]["requested_s"] == req
        assert abs(budget[split]["admitted_s"] - req) <= 0.1 * req, (split, budget[split])
    if res.config["pipeline"]["adapter"]["type"] == "timenet":
        # units all the way from TimeNet: the run's schema names the catalog's units
        src = res.config["pipeline"]["sources"][0]["uri"]
        ref = src[len("timenet://") :].split("?")[0].split("#")[0]
        catalog = {s.name: s.unit for s in tn.TimeNet([reg]).open(ref).schema.signals}
        for f in res.config["schema"]["fields"]:
            sigs = res.config["pipeline"]["adapter"]["fields"][f["name"]]["signals"]
            assert f["unit"] == catalog[sigs[0]] and {catalog[s] for s in sigs} == {f["unit"]}
