"""Counted nouns for the lines kuration prints: "1 track", "2 tracks"."""

from __future__ import annotations

__all__ = ["count", "first_of", "were"]


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun``, in the plural (``plural``, else ``noun + "s"``) unless ``n == 1``."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def were(n: int) -> str:
    """The past tense of *to be* that agrees with a count of ``n``."""
    return "was" if n == 1 else "were"


def first_of(items: list[str], n: int) -> str:
    """The first ``n`` of ``items`` joined by commas, then ``and K more`` for the rest."""
    more = f" and {len(items) - n} more" if len(items) > n else ""
    return f"{', '.join(items[:n])}{more}"
