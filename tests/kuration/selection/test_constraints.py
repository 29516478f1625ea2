"""Tag floors and group caps on the count path (kuration.selection.constraints)."""

from __future__ import annotations

import numpy as np
import pytest

from kuration.selection.constraints import constrained_select, resolve_floors


def test_max_flow_routes_a_floor_around_a_full_group() -> None:
    # label A lives in g0 (high priority) and g1; label B only in g0; one slot per group.
    prio = np.array([10.0, 9.0, 1.0])
    tags = {"t": ["A", "B", "A"]}
    groups = ["g0", "g0", "g1"]
    sel = constrained_select(
        prio,
        2,
        tags=tags,
        label_sets={"t": ["A", "B"]},
        floors={"t": {"A": 1, "B": 1}},
        groups=groups,
        max_overshoot=1.0,
    )
    # a greedy reservation of A's best (row 0, g0) would block B; the flow takes row 2 for A
    assert sorted(sel.rows) == [1, 2]
    assert all(e["met"] for e in sel.tag_report["t"]["labels"].values())
    assert sel.group_report["cap"] == 1


def test_caps_are_hard_and_the_shortfall_is_explained() -> None:
    prio = np.arange(10, dtype=float)
    groups = ["big"] * 9 + ["small"]
    sel = constrained_select(prio, 6, groups=groups, max_overshoot=1.0)
    assert len(sel.rows) == 4  # 3 per group, and "small" has only one segment
    assert sel.shortfall == 2 and "group caps" in sel.shortfall_reason
    assert any("at its cap" in r for r in sel.reasons)


def test_floor_larger_than_n_is_reported() -> None:
    prio = np.arange(6, dtype=float)
    sel = constrained_select(
        prio,
        2,
        tags={"t": ["A", "A", "B", "B", "C", "C"]},
        label_sets={"t": ["A", "B", "C"]},
        floors={"t": {"A": 1, "B": 1, "C": 1}},
    )
    rep = sel.tag_report["t"]
    assert len(sel.rows) == 2 and not rep["met"]
    unmet = [lab for lab, e in rep["labels"].items() if not e["met"]]
    assert len(unmet) == 1 and "add up to 3 > n = 2" in rep["labels"][unmet[0]]["why"]


def test_non_finite_rows_are_never_used_for_repair() -> None:
    prio = np.array([5.0, -np.inf, 4.0])
    sel = constrained_select(
        prio,
        3,
        tags={"t": ["A", "B", "A"]},
        label_sets={"t": ["A", "B"]},
        floors={"t": {"B": 1}},
        excluded=[None, "filtered out: x", None],
    )
    assert 1 not in sel.rows and sel.reasons[1] == "rejected: filtered out: x"
    assert sel.tag_report["t"]["labels"]["B"]["why"].startswith("only 0 eligible")


def test_resolve_floors_rounds_fractions_up() -> None:
    out = resolve_floors(
        {"t": 0.1, "u": {"x": 3, "y": 0.34}}, {"t": ["a", "b"], "u": ["x", "y"]}, 7
    )
    assert out == {"t": {"a": 1, "b": 1}, "u": {"x": 3, "y": 3}}


@pytest.mark.parametrize("n", [0, 1, 5])
def test_plain_selection_without_constraints_is_top_n(n: int) -> None:
    prio = np.array([3.0, 1.0, 2.0, 2.0, -np.inf])
    sel = constrained_select(prio, n)
    assert sel.rows == [0, 2, 3, 1][:n]
