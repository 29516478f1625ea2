"""``bench/evidence.py``: the evidence benchmark runs end to end in its quick mode and a
rerun gives the same numbers (it asserts nothing about which arm wins)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

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
