"""The one line ``kur run`` and ``kur inspect`` print about sources a split rule left out."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from typing import Any

from ..core.words import count

__all__ = ["split_excluded_line"]

SHOWN = 3  # ids named in the line; config.json lists them all


def split_excluded_line(report: Mapping[str, Any] | None) -> str | None:
    """How many sources the job's ``split`` rule put in neither split, why, and the first
    few ids; ``None`` when there is no rule or it left nothing out.

    ``report`` is config.json's ``results.split_report``: ``rule`` (the job's ``split``
    mapping) and ``excluded_sources`` (sorted source ids).
    """
    if not report or not report.get("excluded_sources"):
        return None
    ids, rule = list(report["excluded_sources"]), report.get("rule", {})
    shown = ", ".join(ids[:SHOWN]) + (
        f", ... ({len(ids) - SHOWN} more)" if len(ids) > SHOWN else ""
    )
    if "test_from" in rule:
        t = _dt.datetime.fromtimestamp(float(rule["test_from"]), _dt.UTC).isoformat()
        why = (
            f"each starts before test_from ({t}) but ends within gap_seconds "
            f"({float(rule.get('gap_seconds', 0)):g} s) of it or later, so it fits neither split"
        )
    else:
        why = "the split rule assigns it to neither split"
    return (
        f"split rule excluded {count(len(ids), 'source')} ({shown}): {why}; all listed in "
        "config.json (results.split_report.excluded_sources)"
    )
