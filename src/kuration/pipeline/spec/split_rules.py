"""Pinned and time-based splits (job key ``split``, issue 29): whole sources, never halves.

Without a rule the split is :func:`~kuration.selection.select.assign_splits` (seeded,
stratified by group).  With one:

* ``{"test_sources": ["id", ...]}`` or ``{"test_sources": {"glob": "pattern"}}`` pins the
  named sources (ids; a glob is matched with :func:`fnmatch.fnmatchcase`) to test and every
  other source to train;
* ``{"test_from": T, "gap_seconds": G}`` splits by time: a source whose first tick is at or
  after ``T`` goes to test, one whose last tick is before ``T - G`` to train, and one that
  reaches into ``[T - G, T)`` or straddles ``T`` goes to neither (it is listed as
  excluded).  ``T`` is seconds since the Unix epoch or an ISO 8601 time with a zone.

Either way a source lies in one split only (spec invariant 5).  :func:`split_report` says
whether the result is leak-free by time (the latest train tick plus the gap is before the
first test tick) and how many entities recur in both splits.
"""

from __future__ import annotations

import datetime as _dt
import fnmatch
from collections.abc import Mapping, Sequence
from typing import Any

from ...core.ids import tag_entity_id
from ...errors import PipelineError

__all__ = ["check_split_rule", "rule_splits", "split_report"]


def _epoch(v: Any) -> float:
    if isinstance(v, int | float) and not isinstance(v, bool):
        return float(v)
    try:
        t = _dt.datetime.fromisoformat(str(v).replace("Z", "+00:00"))
    except ValueError:
        raise PipelineError(
            f"split.test_from must be epoch seconds or an ISO 8601 time, got {v!r}", step="split"
        ) from None
    if t.tzinfo is None:
        raise PipelineError(
            f"split.test_from {v!r} names no time zone (add Z or +00:00)", step="split"
        )
    return t.timestamp()


def check_split_rule(rule: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The rule in canonical form (``test_from`` as epoch seconds), checked before any read.

    Raises
    ------
    PipelineError
        Both or neither of ``test_sources`` and ``test_from``, an empty list, a bad time,
        a negative gap or an unknown key.
    """
    if rule is None:
        return None
    extra = sorted(set(rule) - {"test_sources", "test_from", "gap_seconds"})
    if extra:
        raise PipelineError(f"split: unknown keys {extra}", step="split")
    if ("test_sources" in rule) == ("test_from" in rule):
        raise PipelineError(
            "split takes either test_sources (names or a glob) or test_from (a time)",
            step="split",
        )
    if "test_sources" in rule:
        ts = rule["test_sources"]
        ok = (isinstance(ts, list) and ts and all(isinstance(x, str) for x in ts)) or (
            isinstance(ts, Mapping) and set(ts) == {"glob"} and isinstance(ts["glob"], str)
        )
        if not ok:
            raise PipelineError(
                'split.test_sources is a non-empty list of source ids or {"glob": pattern}',
                step="split",
            )
        if "gap_seconds" in rule:
            raise PipelineError("split.gap_seconds goes with test_from", step="split")
        return {"test_sources": ts if isinstance(ts, list) else dict(ts)}
    gap = rule.get("gap_seconds", 0.0)
    if isinstance(gap, bool) or not isinstance(gap, int | float) or not gap >= 0:
        raise PipelineError(f"split.gap_seconds must be >= 0, got {gap!r}", step="split")
    return {"test_from": _epoch(rule["test_from"]), "gap_seconds": float(gap)}


def _extent_s(info: Any, hz: float) -> tuple[float, float]:
    """A source's first and last tick, seconds since the epoch."""
    return info.k0 / hz, (info.k0 + info.n_steps - 1) / hz


def rule_splits(
    rule: Mapping[str, Any], source_ids: Sequence[str], infos: Mapping[str, Any], hz: float
) -> dict[str, str]:
    """Each of ``source_ids`` to ``"train"`` or ``"test"`` by ``rule`` (a checked rule);
    a source in the time gap is left out (no split).

    Raises
    ------
    PipelineError
        A pinned id that is no pooled source, or a glob that matches none.
    """
    if "test_sources" in rule:
        ts = rule["test_sources"]
        if isinstance(ts, Mapping):
            test = {s for s in source_ids if fnmatch.fnmatchcase(s, ts["glob"])}
            if not test:
                raise PipelineError(
                    f"split.test_sources glob {ts['glob']!r} matches no source "
                    f"({len(source_ids)} pooled, e.g. {sorted(source_ids)[:3]})",
                    step="split",
                )
        else:
            missing = sorted(set(ts) - set(source_ids))
            if missing:
                raise PipelineError(
                    f"split.test_sources names {missing}, which are no pooled source "
                    f"({len(source_ids)} pooled, e.g. {sorted(source_ids)[:3]})",
                    step="split",
                )
            test = set(ts)
        return {s: "test" if s in test else "train" for s in sorted(source_ids)}
    t, gap = float(rule["test_from"]), float(rule["gap_seconds"])
    out: dict[str, str] = {}
    for s in sorted(source_ids):
        first, last = _extent_s(infos[s], hz)
        if first >= t:
            out[s] = "test"
        elif last < t - gap:
            out[s] = "train"
    return out


def split_report(
    split_of: Mapping[str, str], source_ids: Sequence[str], infos: Mapping[str, Any], hz: float
) -> dict[str, Any]:
    """Per split its sources' time range, the gap between the latest train tick and the
    first test tick, whether that makes the split leak-free by time, the sources left
    out, and the entities (tagged ids) present in both splits.

    Returns
    -------
    dict
        ``{"train": {"sources", "first_s", "last_s", "entities"}, "test": {...},
        "gap_s", "leak_free_by_time", "excluded_sources", "entities_in_both"}``.
    """
    out: dict[str, Any] = {}
    ents: dict[str, set[str]] = {}
    for split in ("train", "test"):
        sids = [s for s in sorted(source_ids) if split_of.get(s) == split]
        ext = [_extent_s(infos[s], hz) for s in sids]
        ents[split] = {tag_entity_id(tr.entity_id) for s in sids for tr in infos[s].tracks}
        out[split] = {
            "sources": len(sids),
            "first_s": min((a for a, _ in ext), default=None),
            "last_s": max((b for _, b in ext), default=None),
            "entities": len(ents[split]),
        }
    tr_last, te_first = out["train"]["last_s"], out["test"]["first_s"]
    gap = None if tr_last is None or te_first is None else te_first - tr_last - 1.0 / hz
    out["gap_s"] = gap
    out["leak_free_by_time"] = gap is not None and gap >= 0
    out["excluded_sources"] = sorted(s for s in source_ids if s not in split_of)
    out["entities_in_both"] = len(ents["train"] & ents["test"])
    return out
