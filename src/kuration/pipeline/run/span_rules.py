"""The budget-unit rules applied to freshly cut candidates (issue 29), on every runtime.

After :func:`~kuration.selection.candidates.build_candidate_table` cuts tracks into
candidates (in memory once, on the disk pool a chunk of sources at a time):

* ``min_span_seconds``: candidates shorter than ``ceil(min_span_seconds * sample_hz)``
  steps are dropped (counted as ``short_spans_excluded``); the length compared is the one
  the budget counts: the span's extent, or under ``budget_time: "present"`` the steps where
  its entity is present (a 10-minute span holding 8 s of data is 8 s long there);
* the ``random`` method: each candidate's own seeded draw replaces the aggregate of its
  windows' draws (:func:`~kuration.selection.draws.draw_candidates`);
* ``tie_break: "seed"``: each candidate gets a seeded order key
  (:attr:`CandidateTable.tie <kuration.selection.candidates.CandidateTable>`) that
  orders equal priorities before the names do.

Every rule reads only the candidate's own (source, entity, span) and the run's seeds,
so a chunk gives the same rows as the whole table.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ...selection.candidates import Candidate, CandidateTable
from ...selection.draws import candidate_keys, draw_candidates, seeded_ranks
from ...selection.select import method_seed

if TYPE_CHECKING:
    from .state import HoursRun

__all__ = [
    "apply_span_rules",
    "drop_short",
    "merge_adjacent",
    "min_span_steps",
    "present_planned",
    "unit_record",
]


def min_span_steps(min_span_seconds: float, hz: float) -> int:
    """Steps a candidate needs: ``ceil(min_span_seconds * hz)`` (at least 1)."""
    return max(1, math.ceil(float(min_span_seconds) * float(hz) - 1e-9))


def drop_short(
    table: CandidateTable, min_steps: int, count: str = "span"
) -> tuple[CandidateTable, int]:
    """``table`` without its rows of fewer than ``min_steps`` steps, and how many went.

    ``count`` says which steps: ``"span"`` every step of the row's extent, ``"present"``
    only those where its entity is present (``CandidateTable.present``).  Rosters, groups
    and tag sets are kept as they are (indices stay valid).
    """
    length = table.present if count == "present" else table.n_steps
    keep = length >= int(min_steps)
    gone = int(keep.size - keep.sum())
    if not gone:
        return table, 0
    cols = ("source", "entity", "first", "last", "span", "priority", "group", "tags", "present")
    out = CandidateTable(
        source_ids=table.source_ids,
        entity_ids=table.entity_ids,
        feature_names=table.feature_names,
        features=table.features[keep],
        groups=table.groups,
        tag_sets=table.tag_sets,
        empty_excluded=table.empty_excluded,
        tie=None if table.tie is None else table.tie[keep],
        **{c: getattr(table, c)[keep] for c in cols},
    )
    return out, gone


def apply_span_rules(r: HoursRun, table: CandidateTable) -> CandidateTable:
    """``table`` after the run's ``min_span_seconds``, ``random`` and ``tie_break`` rules
    (see the module docs); ``r.short_spans`` counts the rows dropped."""
    sel = r.sel
    if sel.min_span_seconds > 0:
        steps = min_span_steps(sel.min_span_seconds, r.hz)
        table, gone = drop_short(table, steps, sel.budget_time)
        r.short_spans += gone
    seed = method_seed(r.strategy.seed, r.opts.seed)
    if r.strategy.method == "random":
        draw_candidates(table, seed)
    if sel.tie_break == "seed":
        keys = candidate_keys(
            table.source_ids, table.entity_ids, table.source, table.entity, table.span
        )
        # a seed of its own, so the tie order is not the random method's own draw
        table.tie = seeded_ranks(seed ^ 0x5EED, keys)
    return table


def present_planned(r: HoursRun) -> list[Any]:
    """``r.admitted`` with each shard entry's ``n_steps`` replaced by the ticks its entity is
    present (``budget_time: "present"``: what the split's emitted seconds count)."""
    from ...selection.presence import present_ticks

    pool = r.pool()
    out = []
    for split, c, entries in r.admitted:
        tracks = pool.sources[c.source_id].tracks
        lo = np.array([e["start_idx"] for e in entries], np.int64)
        hi = lo + np.array([e["n_steps"] for e in entries], np.int64) - 1
        n = present_ticks(tracks, np.full(lo.size, c.entity_index, np.int64), lo, hi)
        out.append(
            (split, c, [{**e, "n_steps": int(k)} for e, k in zip(entries, n.tolist(), strict=True)])
        )
    return out


def merge_adjacent(admitted: Sequence[Candidate]) -> list[Candidate]:
    """Admitted spans of one track that touch, written as one (``merge_adjacent_spans``).

    Spans of one ``(source_id, entity_index)`` are sorted by ``first``; a span that starts
    the tick after the previous one's ``last`` joins it.  The merged candidate is the first
    span's (its ``span_index``, ``first``, priority and features: its id in the manifest is
    that span's) with the last span's ``last``.  Merged tracks come in the order of their
    first span's admission; a span that touches no other is returned as it is.
    """
    by_track: dict[tuple[str, int], list[tuple[int, Candidate]]] = {}
    for i, c in enumerate(admitted):
        by_track.setdefault((c.source_id, c.entity_index), []).append((i, c))
    out: list[tuple[int, Candidate]] = []
    for spans in by_track.values():
        spans.sort(key=lambda x: x[1].first)
        head_i, head = spans[0]
        for i, c in spans[1:]:
            if c.first == head.last + 1:
                head, head_i = dataclasses.replace(head, last=c.last), min(head_i, i)
                continue
            out.append((head_i, head))
            head_i, head = i, c
        out.append((head_i, head))
    out.sort(key=lambda x: x[0])
    return [c for _, c in out]


def unit_record(r: HoursRun, with_counts: bool = False) -> dict[str, Any]:
    """The budget-unit options that differ from their defaults (run record, config and
    manifest; a run at the defaults records the bytes it always did), with the count of
    short spans dropped for the manifest's budget block (``with_counts``).  The manifest's
    budget block holds no split rule (readers take its mappings for splits): the rule is
    in the run record and ``config.json`` (``results.split_report.rule``)."""
    out = r.sel.unit_options()
    if with_counts:
        out.pop("split", None)
        if "min_span_seconds" in out:
            out["short_spans_excluded"] = r.short_spans
    return out
