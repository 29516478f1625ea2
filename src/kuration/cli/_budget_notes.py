"""The lines ``kur run`` and ``kur inspect`` print about the strategy and the hours budget.

They read config.json's ``strategy`` and ``results.budget`` blocks, which keep their
durations in seconds; on screen they are hours.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.words import count, were
from ..selection.fill import explain_underfill

__all__ = ["excluded_tracks_line", "hours", "strategy_line", "underfill_lines"]

SPLITS = ("train", "test")


def hours(s: float) -> str:
    """Hours with two decimals; seconds when that would print 0.00 h for a non-zero time."""
    if 0 < s < 18:
        return f"{s:.3g} s"
    return f"{s / 3600:.2f} h"


def strategy_line(strategy: Mapping[str, Any] | None) -> str | None:
    """The strategy's name, selection method and filter count (None without a method).

    ``strategy`` is config.json's ``strategy`` block (``name``, ``method``, ``filters``).
    """
    if not strategy or not strategy.get("method"):
        return None
    n = len(strategy.get("filters") or ())
    filters = "no filters" if not n else f"{n} filter{'s' if n > 1 else ''}"
    return (
        f"strategy: {strategy.get('name') or '(unnamed)'} (method {strategy['method']}, {filters})"
    )


def excluded_tracks_line(budget: Mapping[str, Any], *, has_filters: bool = True) -> str | None:
    """Tracks left out of the pool: those the strategy removed, per split, and (once) those too short.

    ``budget`` is config.json's ``results.budget``: per split ``nonfinite_excluded``
    (tracks whose every segment failed a filter or had a NaN feature, so they got no
    finite priority) and ``nonfinite_excluded_s`` (their seconds), and the global
    ``too_short_excluded`` and ``min_track_seconds``.  ``has_filters``: whether the strategy
    has filters (without any, only a NaN feature leaves a track out).  None when nothing
    was left out.
    """
    parts = []
    for split in SPLITS:
        b = budget.get(split)
        if isinstance(b, Mapping) and b.get("nonfinite_excluded"):
            n, s = b["nonfinite_excluded"], float(b.get("nonfinite_excluded_s", 0.0))
            parts.append(f"{split} {count(n, 'track')} ({hours(s)})")
    out = []
    if parts:
        cause = "the strategy's filters (or a NaN feature)" if has_filters else "a NaN feature"
        out.append(f"{cause} removed " + ", ".join(parts))
    short = budget.get("too_short_excluded")
    if short:
        floor = budget.get("min_track_seconds")
        of = f" ({float(floor):g} s)" if floor is not None else ""
        out.append(f"{count(short, 'track')} {were(short)} shorter than min_track_seconds{of}")
    return "left out of the pool: " + "; ".join(out) if out else None


def underfill_lines(budget: Mapping[str, Any]) -> list[str]:
    """One warning per split that ended below its request, its durations in hours.

    The constraint and its remedy come from :func:`explain_underfill` over the split's
    budget block; the excluded tracks are left to :func:`excluded_tracks_line`.
    """
    lines = []
    for split in SPLITS:
        b = budget.get(split)
        if not isinstance(b, Mapping) or not b.get("binding"):
            continue
        detail = ""
        if "emitted_s" in b and "requested_s" in b:
            _, detail = explain_underfill(
                {**b, "nonfinite_excluded": 0}, emitted_s=float(b["emitted_s"]), duration=hours
            )
        lines.append(
            f"warning: {split} under-filled, binding constraint: {b['binding']} "
            f"({detail or b.get('binding_detail', '')})"
        )
    return lines
