"""config.json's pool parts, computed without a full sort or a Python loop per window:
ranking_examples takes the ends of the ranking with nsmallest/nlargest (the same windows,
in the same order, as the full sort by (-priority, key)), and feature_distributions marks
the windows overlapping an admitted span by array comparisons per (source, entity)
(hypothesis against window-by-window references, with tied, infinite and NaN priorities
and both kinds of window)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kuration.contracts.segment import Segment
from kuration.pipeline.run.summary import feature_distributions, ranking_examples

PRIORITY = st.one_of(
    st.sampled_from([0.0, 1.0, -1.0, math.inf, -math.inf, math.nan]),
    st.floats(-5, 5, allow_nan=False),
)


@st.composite
def pools(draw: st.DrawFn) -> list[Segment]:
    track = draw(st.booleans())
    ent = st.sampled_from(["str:x", "str:y", "str:z"]) if track else st.none()
    keys = draw(
        st.lists(
            st.tuples(st.sampled_from("abc"), ent, st.integers(0, 30)), unique=True, max_size=40
        )
    )
    return [
        Segment(src, start, start + 5, {"f": draw(PRIORITY)}, priority=draw(PRIORITY), entity=e)
        for src, e, start in keys
    ]


def reference(segments: list[Segment], k: int) -> dict[str, list[tuple]]:
    ranked = sorted(
        (s for s in segments if math.isfinite(s.priority)), key=lambda s: (-s.priority, s.key)
    )
    n = min(k, len(ranked) // 2)
    return {"top": [s.key for s in ranked[:n]], "bottom": [s.key for s in ranked[::-1][:n]]}


@settings(max_examples=150, deadline=None)
@given(pools(), st.integers(0, 6))
def test_same_windows_as_the_full_sort(segments: list[Segment], k: int) -> None:
    got = ranking_examples(segments, ["f"], k)
    keys = {
        part: [
            (r["source_id"], r["entity"], r["start_idx"])
            if "entity" in r
            else (r["source_id"], r["start_idx"])
            for r in rows
        ]
        for part, rows in got.items()
    }
    assert keys == reference(segments, k)


def reference_selected(segments: list[Segment], admitted: list[tuple]) -> list[bool]:
    """Window by window: does it overlap an admitted [first, last] of its source (and entity)."""
    return [
        any(
            src == s.source_id
            and (s.entity is None or f"str:{ent}" == s.entity)
            and s.start_idx <= last
            and s.end_idx > first
            for src, ent, first, last in admitted
        )
        for s in segments
    ]


@settings(max_examples=150, deadline=None)
@given(
    pools(),
    st.lists(
        st.tuples(
            st.sampled_from("abcd"),
            st.sampled_from("xyzw"),
            st.integers(0, 30),
            st.integers(0, 12),
        ),
        max_size=6,
    ),
)
def test_distributions_count_the_overlapping_windows(
    segments: list[Segment], spans: list[tuple]
) -> None:
    admitted = [(src, ent, a, a + d) for src, ent, a, d in spans]
    cands = [SimpleNamespace(source_id=s, entity_id=e, first=a, last=b) for s, e, a, b in admitted]
    fill = SimpleNamespace(admitted={"train": cands[::2], "test": cands[1::2]})
    got = feature_distributions(segments, fill, ["f", "g"], bins=4)  # type: ignore[arg-type]
    vals = np.array([s.features["f"] for s in segments], dtype=np.float64)
    ok = np.isfinite(vals)
    if not ok.any():
        assert got == {}
        return
    sel = np.array(reference_selected(segments, admitted), dtype=bool)
    edges = np.array(got["f"]["edges"])
    assert got["f"]["pool"] == np.histogram(vals[ok], bins=edges)[0].tolist()
    assert got["f"]["selected"] == np.histogram(vals[ok & sel], bins=edges)[0].tolist()
    assert "g" not in got  # no window has it
