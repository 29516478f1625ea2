"""``bench/evidence.py``: the evidence benchmark runs end to end in its quick mode and a
rerun gives the same numbers (it asserts nothing about which arm wins)."""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load_evidence():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("evidence", ROOT / "bench" / "evidence.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("evidence", mod)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
def test_quick_mode_runs_and_reruns_identically(tmp_path: Path) -> None:
    evidence = _load_evidence()
    docs = []
    for i in range(2):
        out = tmp_path / f"run{i}.json"
        md = tmp_path / f"run{i}.md"
        assert evidence.main(["--quick", "--json", str(out), "--write", str(md)]) == 0
        docs.append(json.loads(out.read_text(encoding="utf-8")))
        text = md.read_text(encoding="utf-8")
        assert "## adsb, test" in text and "## football, test" in text
    assert docs[0]["numbers"] == docs[1]["numbers"]
    for domain in ("adsb", "football"):
        nums = docs[0]["numbers"][f"{domain}/test"]
        assert set(nums["errors"]) >= {"random"}
        assert len(nums["errors"]["random"]["1" if domain == "adsb" else "0.2"]) == 3
        # every arm trained on as many usable hours as it was asked for (one span's slack)
        for arm, per in nums["usable_h"].items():
            for budget, got in per.items():
                assert all(float(budget) <= h < float(budget) + 0.2 for h in got), (arm, got)
    rows = docs[0]["tests"][0]
    assert rows and all(0.0 <= r["p_holm"] <= 1.0 and r["p"] <= r["p_holm"] for r in rows)
    for domain, b in (("adsb", "1"), ("football", "0.2")):
        nums = docs[0]["numbers"][f"{domain}/test"]
        # the ORACLE chose its spans to lower ridge's test-tail error: below random's mean
        rand = np.mean([v["ridge/tail"] for v in nums["errors"]["random"][b].values()])
        assert nums["oracle"]["in-sample"][b]["ridge/tail"] < rand
        assert float(b) <= nums["oracle_usable_h"]["in-sample"][b] < float(b) + 0.2


def _load_bench(name: str):  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(ROOT / "bench"))


def test_oracle_ridge_from_sums_is_the_benchmark_ridge() -> None:
    """The ORACLE's closed-form ridge (from per-span sums) predicts what the benchmark's
    StandardScaler + Ridge pipeline predicts, a constant input column included."""
    eo = _load_bench("evidence_oracle")
    es = _load_bench("evidence_stats")
    rng = np.random.default_rng(29)
    x = rng.normal(size=(300, 6)) * [1.0, 50.0, 0.01, 3.0, 1.0, 1.0] + [0, 10, 0, -5, 0, 0]
    x[:, 4] = 7.0  # constant: StandardScaler scales it by 1
    r = x[:, :2] @ rng.normal(size=(2, 2)) + rng.normal(size=(300, 2))
    parts = np.array_split(np.arange(300), 5)  # five "spans", summed as the oracle does
    sums = [
        sum(v)
        for v in zip(
            *[(len(p), x[p].sum(0), x[p].T @ x[p], r[p].sum(0), x[p].T @ r[p]) for p in parts],
            strict=True,
        )
    ]
    coef, icpt = eo.ridge_from_stats(*(np.asarray(v, float)[None] for v in sums))
    test = rng.normal(size=(40, 6))
    want = es.fit_predict("ridge", x, r, [test], quick=True)[0]
    np.testing.assert_allclose(test @ coef[0] + icpt[0], want, rtol=1e-7, atol=1e-7)
