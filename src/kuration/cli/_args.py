"""argparse value types that refuse out-of-range numbers when the command line is parsed,
so a bad flag is one usage line and no work has been done yet."""

from __future__ import annotations

import argparse
import math

__all__ = ["byte_size", "non_negative_int", "positive_float", "positive_int"]


def _int(text: str, low: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"must be an integer >= {low}, got {value}")
    return value


def non_negative_int(text: str) -> int:
    """An integer >= 0 (a count, a seed)."""
    return _int(text, 0)


def positive_int(text: str) -> int:
    """An integer >= 1 (workers)."""
    return _int(text, 1)


def positive_float(text: str) -> float:
    """A finite number > 0 (a duration)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    return value


def byte_size(text: str) -> int:
    """A size in bytes: ``2GB``, ``512MiB`` or a plain number (``--memory-budget``)."""
    from ..core.config import check_memory_budget
    from ..errors import JobError

    try:
        return check_memory_budget(int(text) if text.isdigit() else text)
    except JobError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
