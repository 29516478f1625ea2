"""TimeNet's one time base: int64 nanoseconds since the Unix epoch, UTC.

Every time TimeNet stores or hands out is an int64 count of nanoseconds, so
the representable instants are 1677-09-21T00:12:43.145224193Z to
2262-04-11T23:47:16.854775807Z.  The int64 minimum is NumPy's and pandas'
"not a time" and is refused with the rest.  An ISO 8601 instant without a
UTC offset (a *naive* time) is taken as UTC, never as the machine's local
zone, so a dataset reads the same on every machine.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Protocol

import numpy as np

from timenet.errors import SchemaError


class TimedSpec(Protocol):
    """The time fields of :class:`timenet.specs.SignalSpec` read here (that module imports
    this one for the limits, so the class is named by these fields only)."""

    @property
    def rate_hz(self) -> float | None: ...
    @property
    def start_ns(self) -> int: ...
    @property
    def time_origin(self) -> str | None: ...
    @property
    def origin_ns(self) -> int | None: ...


__all__ = [
    "NS_MAX",
    "NS_MIN",
    "check_signal_times",
    "datetime64_to_ns",
    "first_out_of_range",
    "iso_to_ns",
]

NS_MIN = -(2**63) + 1
NS_MAX = 2**63 - 1
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def iso_to_ns(text: str) -> int:
    """Nanoseconds since the Unix epoch of an ISO 8601 instant (naive means UTC).

    Raises
    ------
    SchemaError
        If ``text`` is not ISO 8601 or lies outside the int64-nanosecond range.
    """
    try:
        when = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        raise SchemaError(f"{text!r} is not ISO 8601") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    delta = when - _EPOCH
    ns = (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000
    if not NS_MIN <= ns <= NS_MAX:
        raise SchemaError(f"{text!r} is outside the int64-nanosecond range 1677-09-21..2262-04-11")
    return ns


def first_out_of_range(ns: np.ndarray, offset: int = 0) -> int | None:
    """Index of the first ``ns + offset`` outside ``[NS_MIN, NS_MAX]``, or None.

    Parameters
    ----------
    ns : ndarray, shape (T,), int64, nanoseconds
    offset : int
        Added to every value (a time origin), in nanoseconds; the sum is
        checked without overflowing.
    """
    ns = np.asarray(ns)
    if ns.size == 0:
        return None
    lo = max(NS_MIN, NS_MIN - offset)
    hi = min(NS_MAX, NS_MAX - offset)
    if lo > hi:
        return 0
    bad = np.flatnonzero((ns < lo) | (ns > hi))
    return int(bad[0]) if bad.size else None


_NS_PER = {
    "W": 604_800 * 10**9,
    "D": 86_400 * 10**9,
    "h": 3_600 * 10**9,
    "m": 60 * 10**9,
    "s": 10**9,
    "ms": 10**6,
    "us": 10**3,
    "ns": 1,
}
_SUB_NS = {"ps": 10**3, "fs": 10**6, "as": 10**9}


def datetime64_to_ns(values: np.ndarray) -> tuple[np.ndarray, int | None]:
    """A datetime64 array of any unit as int64 ns, and the first step that does not fit.

    NumPy's own ``astype("datetime64[ns]")`` wraps silently on overflow (and
    its conversions back misbehave near the int64 ends), so the conversion is
    done in integers against each unit's exact limit; NaT counts as out of
    range.

    Returns
    -------
    ns : ndarray, shape (T,), int64, nanoseconds since the epoch (0 where bad)
    bad : int or None
        Index of the first NaT or out-of-range value.
    """
    unit, count = np.datetime_data(values.dtype)
    bad = np.isnat(values)
    raw = values.view(np.int64)
    if unit in ("Y", "M"):  # calendar units: go through days (years beyond 10**6 cannot fit)
        bad |= np.abs(np.where(bad, 0, raw)) > 10**6 * (12 if unit == "M" else 1) // count
        days = np.where(bad, np.zeros(1, values.dtype), values).astype("datetime64[D]")
        raw, unit, count = days.view(np.int64), "D", 1
    if unit in _SUB_NS:
        ns = raw // (_SUB_NS[unit] // count) if _SUB_NS[unit] >= count else raw
    elif unit in _NS_PER:
        limit = NS_MAX // (_NS_PER[unit] * count)
        bad |= (raw > limit) | (raw < -limit)
        ns = np.where(bad, 0, raw) * np.int64(_NS_PER[unit] * count) if limit else raw * 0
    else:
        raise SchemaError(f"datetime64 unit {unit!r} has no fixed length")
    ns = np.where(bad, 0, ns).astype(np.int64)
    hits = np.flatnonzero(bad)
    return ns, (int(hits[0]) if hits.size else None)


def check_signal_times(
    times: Any, spec: TimedSpec, length: int, name: str, record: str
) -> np.ndarray | None:
    """Validate a signal's time axis; returns explicit times as int64 ns (None when regular).

    Raises
    ------
    SchemaError
        For times given with a rate (or missing without one), a dtype other
        than int64/datetime64, a wrong length, times not strictly increasing,
        or a time (or a regular signal's last step) that with ``time_origin``
        leaves the int64-nanosecond range, naming the step.
    """
    if spec.rate_hz is not None:
        if times is not None:
            raise SchemaError(
                "give either spec.rate_hz or explicit times, not both", signal=name, record=record
            )
        last = spec.start_ns + round(max(length - 1, 0) * 1e9 / spec.rate_hz)
        if not NS_MIN <= last + (spec.origin_ns or 0) <= NS_MAX:
            raise SchemaError(
                f"step {length - 1} at {spec.rate_hz:g} Hz from start_ns {spec.start_ns} is "
                "outside the int64-nanosecond range 1677-09-21..2262-04-11 UTC",
                signal=name,
                record=record,
            )
        return None
    if times is None:
        raise SchemaError(
            "spec.rate_hz is None, so explicit times are required", signal=name, record=record
        )
    ts = np.asarray(times)
    bad: int | None = None
    if ts.dtype.kind == "M":
        ts, bad = datetime64_to_ns(ts)
    elif ts.dtype == np.int64:
        bad = first_out_of_range(ts, spec.origin_ns or 0)
    if bad is not None:
        shown = np.asarray(times)[bad]
        raise SchemaError(
            f"time {shown!r} at step {bad} is outside the int64-nanosecond range "
            "1677-09-21..2262-04-11 UTC" + (" (after time_origin)" if spec.time_origin else ""),
            signal=name,
            record=record,
        )
    if ts.dtype != np.int64:
        raise SchemaError(
            f"times must be int64 nanoseconds or datetime64, got {ts.dtype}",
            signal=name,
            record=record,
        )
    if ts.shape != (length,):
        raise SchemaError(
            f"times have shape {ts.shape}, values have {length} steps", signal=name, record=record
        )
    if length > 1:
        unordered = np.flatnonzero(np.diff(ts) <= 0)
        if unordered.size:
            i = int(unordered[0])
            raise SchemaError(
                f"times must be strictly increasing; step {i + 1} ({ts[i + 1]}) does not "
                f"follow step {i} ({ts[i]})",
                signal=name,
                record=record,
            )
    return ts
