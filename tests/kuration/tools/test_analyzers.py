"""Analyzers: registration checks and the audit analyzer against independent statistics."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import ks_2samp, spearmanr

from kuration import Segment
from kuration.errors import ExecutionTraitsError, PipelineError
from kuration.extend import AnalysisSubject, get_analyzer, register_analyzer
from kuration.tools.analyzers import _ANALYZERS, overlapping_rows


def _pool(n: int = 40) -> tuple[Segment, ...]:
    rng = np.random.default_rng(0)
    return tuple(
        Segment(
            f"s{i % 4}",
            10 * i,
            10 * i + 5 + i % 3,
            features={"a": float(rng.normal()), "b": float(i)},
        )
        for i in range(n)
    )


def test_audit_matches_scipy() -> None:
    pool = _pool()
    sel = tuple(range(0, 40, 3))
    subject = AnalysisSubject(
        pool, sel, ("a", "b"), ("a", "b"), {"s0": 500, "s1": 400, "s2": 300, "s3": 200}
    )
    rep = get_analyzer("audit").analyze(subject, {})
    a = np.array([s.features["a"] for s in pool])
    assert rep["n_selected"] == len(sel)
    assert rep["distribution"]["a"]["ks"] == pytest.approx(ks_2samp(a[list(sel)], a).statistic)
    rho = spearmanr(a, [s.n_steps for s in pool]).statistic
    assert rep["duration"]["a"]["segment_duration"]["rho"] == pytest.approx(rho)
    assert 0 < rep["coverage"]["cells_covered"] <= 1


def test_audit_params_are_validated() -> None:
    audit = get_analyzer("audit")
    with pytest.raises(PipelineError, match="does not take"):
        audit.validate({"bins": 3})
    with pytest.raises(PipelineError, match="n_bins"):
        audit.validate({"n_bins": 0})
    with pytest.raises(PipelineError, match="unknown features"):
        audit.analyze(AnalysisSubject(_pool(), (0,), ("a",)), {"features": ["zz"]})


def test_register_analyzer_checks_contract_and_traits() -> None:
    class Stream:
        scope = "stream"

        def validate(self, params):
            pass

        def analyze(self, subject, params):
            return {"n": len(subject.pool)}

    class NoScope(Stream):
        scope = "sideways"

    with pytest.raises(TypeError, match="scope"):
        register_analyzer("test-noscope", NoScope())
    with pytest.raises(ExecutionTraitsError):
        register_analyzer("test-stream", Stream(), execution_traits={"scope": "pool"})
    assert "test-stream" not in _ANALYZERS
    register_analyzer("test-stream", Stream())
    try:
        assert get_analyzer("test-stream").analyze(AnalysisSubject(_pool(3), (), ("a",)), {}) == {
            "n": 3
        }
    finally:
        _ANALYZERS.unregister("test-stream")


def test_overlapping_rows_is_tick_overlap() -> None:
    pool = (Segment("x", 0, 10), Segment("x", 10, 20), Segment("y", 0, 10))
    assert overlapping_rows(pool, [("x", 9, 9)]) == (0,)
    assert overlapping_rows(pool, [("x", 5, 15), ("y", 10, 12)]) == (0, 1)
