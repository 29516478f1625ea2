"""Plausibility of a numeric time column's ``time_unit``.

A time column of plain numbers says nothing of its unit; the adapter's
``time_unit`` does.  Epoch times read in the wrong unit are off by a factor
1000 (or 10**6, 10**9).  Read in a finer unit than written (``ms`` given,
seconds written), they overflow int64 nanoseconds and are refused; read in a
coarser one (``ms`` given, seconds written: 1633608773 ms), they land in
January 1970 and every row of an entity falls on one or two ticks of the grid,
which no collision policy reports as what it is.  Both cases are named here,
with the unit that reads the values as a date of this era.
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._csvline import row_place
from ..errors import SourceError, TimeRangeError
from ._columns import numeric_except

__all__ = ["check_epoch_unit", "shown_time", "text_time_error", "unit_hint"]

_SECONDS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
#: 1990-01-01 .. 2100-01-01 UTC, in seconds since the epoch: "a date of this era".
_ERA = (631_152_000.0, 4_102_444_800.0)
_SAMPLE = 100_000


def _iso(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).isoformat().replace("+00:00", "Z")


def unit_hint(value: float, unit: str) -> str:
    """`` (read as 'ms' this is 2021-10-07T12:12:53Z: is time_unit right?)``, or ``""``.

    Parameters
    ----------
    value : float
        A raw time, in ``unit``.
    unit : {"s", "ms", "us", "ns"}
        The adapter's ``time_unit``.
    """
    for other, scale in _SECONDS.items():
        s = float(value) * scale
        if other != unit and _ERA[0] <= s <= _ERA[1]:
            return f" (read as {other!r} this is {_iso(s)}: is time_unit {unit!r} right?)"
    return ""


def check_epoch_unit(
    t_sec: np.ndarray,
    by_entity: np.ndarray,
    same: np.ndarray,
    hz: float,
    unit: str,
    column: str,
    src: str,
) -> None:
    """Refuse epoch times read in a unit 1000x (or 10**6, 10**9) too coarse.

    The source is refused when its times lie before 1990, its rows of one
    entity are a median of less than 1/100 step apart on the grid, and the
    times scaled by 1000, 10**6 or 10**9 are all dates of 1990..2100 with a
    median step of 0.1..10 grid steps: epoch times read in the wrong unit, not
    a fast signal averaged down (whose times start near 0).  Times of this era
    return at once.

    Parameters
    ----------
    t_sec : ndarray, shape (N,), float64, seconds as read
    by_entity : ndarray, shape (N,), intp
        Row order grouping the rows by entity, each entity's rows in file order.
    same : ndarray, shape (N - 1,), bool
        Whether consecutive rows of ``by_entity`` are of one entity.
    hz : float
        The schema's ``sample_hz``.

    Raises
    ------
    SourceError
        Naming the column, the unit given and the unit that fits.
    """
    if t_sec.size < 2:
        return
    lo, hi = float(t_sec.min()), float(t_sec.max())
    if hi >= _ERA[0] or lo * 1e9 < _ERA[0]:  # this era, or times near 0 in any unit
        return
    cut = by_entity[: _SAMPLE + 1]  # the median step of the first rows is evidence enough
    steps = np.abs(np.diff(t_sec[cut]))[same[: cut.size - 1]]
    steps = steps[steps > 0]
    if steps.size == 0:
        return
    step = float(np.median(steps)) * hz
    if step >= 0.01:
        return
    for fit, scale in _SECONDS.items():
        factor = scale / _SECONDS[unit]
        if factor < 1e3:  # only units at least 1000x coarser than the one given
            continue
        if _ERA[0] <= lo * factor and hi * factor <= _ERA[1] and 0.1 <= step * factor <= 10:
            raise SourceError(
                f"time column {column!r} read in {unit!r} starts at {_iso(lo)} and its rows of "
                f"one entity are a median {step:.3g} steps apart on the {hz:g} Hz grid (they "
                f"would collapse onto a few ticks); read in {fit!r} they start at "
                f"{_iso(lo * factor)}, {step * factor:.3g} steps apart: set time_unit {fit!r}",
                source=src,
            )


_ZONED = r"(Z|z|[+-][0-9]{2}(:?[0-9]{2})?)$"


def text_time_error(col: pa.Array, name: str, src: str) -> SourceError:
    """Why a time column read as text is not times, naming the row: a value that is
    neither a number nor an ISO 8601 time, numbers and ISO times mixed, times with and
    without a UTC offset mixed, or an ISO time that names no instant (``2020-02-30``, a
    leap second ``23:59:60Z``).

    Arrow types a CSV time column as timestamps only when every value parses as
    one kind: all naive or all with a UTC offset.  A file that mixes them (a
    logger that added ``Z`` after an update) stays text, and so does a column
    with one impossible date.

    Returns
    -------
    SourceError
        Naming the source, the column, the row (0-based, data rows) and its value.
    """
    text = pc.utf8_trim_whitespace(col.cast(pa.string()))
    date = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}"
    clock = r"[T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?"
    number = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"
    is_iso = _matches(text, f"{date}({clock}{_ZONED[:-1]}?)?$")
    is_number = _matches(text, number)
    zoned = _matches(text, date + clock + _ZONED)  # a bare date's "-30" is no offset

    def value(r: int) -> str:
        return repr(text[r].as_py())

    ok = is_iso | is_number
    typos = None if is_iso.any() else numeric_except(col)
    if typos is not None:  # numbers but for a few cells: no time format reads a typo
        r = int(typos[0])
        more = f" (and {typos.size - 1} more cells)" if typos.size > 1 else ""
        return SourceError(
            f"time column {name!r} holds numbers except here: {value(r)} is not a "
            f"number{more}; fix or blank that cell (a row without a time is refused, "
            "or dropped under missing_time: drop)",
            source=src,
            row=r,
        )
    if not ok.all():
        r = int(np.flatnonzero(~ok)[0])
        return SourceError(
            f"time column {name!r} is text and holds {value(r)} there, not a number "
            f"or an ISO 8601 time; {TIME_FORMAT_HINT}",
            source=src,
            row=r,
        )
    if is_number.any() and is_iso.any():
        a, b = int(np.flatnonzero(is_number)[0]), int(np.flatnonzero(is_iso)[0])
        return SourceError(
            f"time column {name!r} mixes numbers ({row_place(src, a)}: {value(a)}) and ISO "
            f"8601 times ({row_place(src, b)}: {value(b)}); write every time one way",
            source=src,
            row=max(a, b),
        )
    if zoned.any() and not zoned.all():
        a, b = int(np.flatnonzero(~zoned)[0]), int(np.flatnonzero(zoned)[0])
        return SourceError(
            f"time column {name!r} mixes times without a UTC offset ({row_place(src, a)}: "
            f"{value(a)}) and with one ({row_place(src, b)}: {value(b)}); naive times "
            "are read as UTC, so give every time an offset, or none",
            source=src,
            row=min(a, b),
        )
    if is_iso.all():
        bad = _first_unparsable(text, pa.timestamp("ns", "UTC" if zoned.all() else None))
        if bad is not None:
            return SourceError(
                f"time column {name!r} holds {value(bad)} there, which names no instant "
                "(a day past its month's end, an hour past 23, a leap second :60 or a "
                "time out of range)",
                source=src,
                row=bad,
            )
    return SourceError(
        f"time column {name!r} is text that does not read as one kind of time (numbers and "
        "ISO 8601 times mixed, or a time Arrow cannot parse); expected numbers or timestamps",
        source=src,
    )


def _first_unparsable(text: pa.Array, typ: pa.DataType) -> int | None:
    """The first row Arrow cannot cast to ``typ`` (None: all cast), by bisection."""
    if _casts(text, typ):
        return None
    lo, hi = 0, len(text)  # the first failure lies in [lo, hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _casts(text.slice(lo, mid - lo), typ):
            lo = mid
        else:
            hi = mid
    return lo


def _casts(text: pa.Array, typ: pa.DataType) -> bool:
    try:
        pc.cast(text, typ)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return False
    return True


def _matches(text: pa.Array, pattern: str) -> np.ndarray:
    hit = pc.fill_null(pc.match_substring_regex(text, pattern), False)
    return np.asarray(hit.to_numpy(zero_copy_only=False), dtype=bool)


def shown_time(col: pa.ChunkedArray, r: int, seconds: float) -> str:
    """Row ``r``'s time as a time: ISO 8601 for a timestamp or an epoch number of this era,
    else seconds."""
    v = col[r].as_py()
    if isinstance(v, dt.datetime):
        return v.isoformat()
    if _ERA[0] <= seconds <= _ERA[1]:
        return _iso(seconds)
    return f"{seconds!r} s"


#: what a text-time error suggests: the adapter option and a few formats
TIME_FORMAT_HINT = (
    "give its format as the adapter option time_format (a strptime format, e.g. "
    "'%Y/%m/%d %H:%M' or '%b %d %Y')"
)


def parse_text_times(col: pa.Array, fmt: str | None, name: str, src: str) -> pa.Array:
    """Text times read with the strptime format ``fmt``, as a ``timestamp[us]`` array
    (UTC; naive text is read as UTC); a date column as its midnights
    (``timestamp[ms]``); any other column, or text without ``fmt``, as it is.

    Arrow's strptime rolls an impossible date over (``2020/02/30`` becomes March 1st),
    so a value whose parse does not print back as the text is checked again with
    Python's strict :func:`datetime.datetime.strptime`.

    Raises
    ------
    SourceError
        The first row that does not match ``fmt`` or names no instant, with its value.
    """
    if pa.types.is_date(col.type):  # a date is its midnight, UTC
        return col.cast(pa.timestamp("ms"))
    if not fmt or not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        return col
    text = pc.utf8_trim_whitespace(col.cast(pa.string()))
    parsed = pc.strptime(text, format=fmt, unit="us", error_is_null=True)
    failed = pc.fill_null(pc.and_(parsed.is_null(), text.is_valid()), False)
    bad = np.flatnonzero(np.asarray(failed.to_numpy(zero_copy_only=False), dtype=bool))
    back = pc.fill_null(pc.equal(pc.strftime(parsed, format=fmt), text), True)
    odd = np.flatnonzero(~np.asarray(back.to_numpy(zero_copy_only=False), dtype=bool))
    for r in sorted(set(odd.tolist()) - set(bad.tolist())):
        try:
            dt.datetime.strptime(text[r].as_py(), fmt)
        except ValueError:
            bad = np.append(bad, r)
            break
    if bad.size:  # Arrow's strptime has no %f: Python's reads what it can, strictly
        parsed = _strptime_rows(text, parsed, np.sort(bad), fmt, name, src)
    return parsed.cast(pa.timestamp("us", "UTC")) if parsed.type.tz is None else parsed


def _strptime_rows(
    text: pa.Array, parsed: pa.Array, rows: np.ndarray, fmt: str, name: str, src: str
) -> pa.Array:
    """``parsed`` (``timestamp[us]``) with ``rows`` read by :func:`datetime.datetime.strptime`
    (fractional seconds ``%f``, which Arrow's strptime lacks), as UTC instants: an offset
    ``%z`` converts, a naive time is UTC.  Each distinct text is parsed once.

    Raises
    ------
    SourceError
        The first of ``rows`` that Python does not read either, with its value.
    """
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    us = np.array(pc.fill_null(parsed.cast(pa.int64()), 0).to_numpy(zero_copy_only=False))
    seen: dict[str, int] = {}
    for r in rows.tolist():
        value = text[r].as_py()
        if value not in seen:
            try:
                t = dt.datetime.strptime(value, fmt)
            except ValueError:
                raise SourceError(
                    f"time column {name!r} holds {value!r} there, which does not read "
                    f"as time_format {fmt!r} or names no instant",
                    source=src,
                    row=int(r),
                ) from None
            t = t.replace(tzinfo=dt.UTC) if t.tzinfo is None else t
            seen[value] = (t - epoch) // dt.timedelta(microseconds=1)
        us[r] = seen[value]
    return pa.array(us, pa.int64(), mask=~np.asarray(text.is_valid())).cast(parsed.type)


def check_ns_range(
    raw: np.ndarray, limit: float, col: pa.Array, name: str, src: str, unit: str = "ns"
) -> None:
    """Refuse times whose magnitude exceeds ``limit`` (in the column's own unit).

    ``limit`` is the largest value that still fits int64 nanoseconds; the
    int64 minimum (NumPy's NaT) is refused with the rest.
    """
    if raw.dtype.kind == "u":
        bad = np.flatnonzero(raw > limit)
    else:
        bad = np.flatnonzero((raw > limit) | (raw < -limit))
    if bad.size:
        r = int(bad[0])
        try:
            v = col[r].as_py()
            shown = v.isoformat() if isinstance(v, dt.datetime) else repr(v)
        except (OverflowError, ValueError):  # beyond what Python datetimes can show
            shown = f"{raw[r]!r} {getattr(col.type, 'unit', '')}".strip()
        # numbers: perhaps the wrong time_unit
        hint = "" if pa.types.is_timestamp(col.type) else unit_hint(float(raw[r]), unit)
        raise TimeRangeError(
            f"time {shown} is outside the int64-nanosecond range 1677-09-21..2262-04-11 UTC" + hint,
            source=src,
            row=r,
            column=name,
        )
