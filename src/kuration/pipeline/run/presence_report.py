"""How much of an hours run's time holds data: the presence lines of config.json's budget.

The hours budget counts each admitted track or span by its length on the tick grid
(``n_steps / sample_hz``, the length of the shards written), whether or not its entity is
present at every tick: an aircraft that drops out of coverage for a minute inside a
5-minute span still makes 5 minutes of shards, with the minute marked absent
(``_present``).  A span where the entity is present at *no* tick is no candidate at all
(:func:`~kuration.selection.candidates.build_candidate_table` drops it and counts it).
:func:`presence_budget` adds both facts to the budget block that config.json records
(``results.budget``), so that the hours a split holds can be read against the present
data they hold.  The manifest's budget block is left as it was (its bytes are part of
every dataset's identity).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...selection.presence import present_ticks

__all__ = ["presence_budget"]


def presence_budget(
    budget: Mapping[str, Any],
    admitted: Sequence[tuple[str, Any, Sequence[Mapping[str, Any]]]],
    tracks: Mapping[str, Sequence[Any]],
    hz: float,
    empty_spans: int,
) -> dict[str, Any]:
    """The manifest's budget block with the presence accounting added.

    Parameters
    ----------
    budget : mapping
        The manifest's ``budget`` block: run-wide keys and one block per split.
    admitted : sequence of (split, Candidate, shard entries)
        The shard plan (``HoursRun.admitted``): each admitted candidate (``source_id``,
        ``entity_index``, ``first``, ``last``) and its shards (``start_idx``, ``n_steps``).
    tracks : mapping of source id to sequence of TrackExtent
        Each source's tracks in roster order (``entity_index`` indexes them).
    hz : float
        Steps per second.
    empty_spans : int
        Spans left out because their entity is present at none of their ticks.

    Returns
    -------
    dict
        ``budget`` with ``empty_spans_excluded`` (after ``too_short_excluded``) and, per
        split, ``present_s`` (seconds at which the admitted candidates' entities are
        present, next to ``admitted_s``) and ``emitted_present_s`` (the same within the
        shards written, next to ``emitted_s``).
    """
    rows: list[tuple[str, int, int, int, str, int]] = []  # source, entity, lo, hi, split, kind
    for split, c, entries in admitted:
        rows.append((c.source_id, c.entity_index, c.first, c.last, split, 0))
        rows.extend(
            (
                c.source_id,
                c.entity_index,
                e["start_idx"],
                e["start_idx"] + e["n_steps"] - 1,
                split,
                1,
            )
            for e in entries
        )
    ticks = _present(rows, tracks)
    splits = np.array([r[4] for r in rows], dtype=object)
    kinds = np.array([r[5] for r in rows], np.int64)
    out: dict[str, Any] = {}
    for key, value in budget.items():
        out[key] = value
        if key == "too_short_excluded":
            out["empty_spans_excluded"] = int(empty_spans)
    out.setdefault("empty_spans_excluded", int(empty_spans))
    for split, block in budget.items():
        if not isinstance(block, Mapping):
            continue
        sums = [int(ticks[(splits == split) & (kinds == kind)].sum()) for kind in (0, 1)]
        out[split] = _insert_after(
            _insert_after(dict(block), "admitted_s", "present_s", sums[0] / hz),
            "emitted_s",
            "emitted_present_s",
            sums[1] / hz,
        )
    return out


def _present(
    rows: Sequence[tuple[str, int, int, int, str, int]], tracks: Mapping[str, Sequence[Any]]
) -> np.ndarray:
    """Present ticks of each row's ``[lo, hi]``, one :func:`present_ticks` call per source."""
    out = np.zeros(len(rows), np.int64)
    if not rows:
        return out
    src = np.array([r[0] for r in rows], dtype=object)
    cols = np.array([r[1:4] for r in rows], np.int64)
    for sid in sorted(set(src.tolist())):
        at = np.flatnonzero(src == sid)
        out[at] = present_ticks(tracks[sid], cols[at, 0], cols[at, 1], cols[at, 2])
    return out


def _insert_after(block: dict[str, Any], after: str, key: str, value: float) -> dict[str, Any]:
    """``block`` with ``key`` placed right after ``after`` (at the end when it is missing)."""
    out: dict[str, Any] = {}
    for k, v in block.items():
        out[k] = v
        if k == after:
            out[key] = value
    out.setdefault(key, value)
    return out
