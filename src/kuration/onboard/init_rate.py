"""``kur init``'s time guesses: a numeric time column's unit, and a sample rate that loses no row.

Time unit (:func:`time_unit`): a unit the column's name states (``videoTimeMs``,
``t_us``, ``time_ns``, ``seconds``) wins; else epoch times by magnitude (a
date after 1973 is above 1e17 in ns, 1e14 in us, 1e11 in ms, 1e8 in s); else
relative seconds.  The evidence (values, span, step) is printed.

Sample rate (:func:`choose_rate`): the rate of the median step between
consecutive rows of one entity, written with as few significant digits as
keep every row on its own tick (a "nicer" rate is taken only when it is
within 1% and collides no more rows).  When no such rate exists (steps are
irregular) the rate that keeps the rows (the smallest positive step's) is
proposed next to the median's, each with the collisions it costs.  Runs of
equal stamps (a clock coarser than the sampling) are spread by row order
first (:func:`kuration.sources._retime.retime_runs`), so the rate is then
rows per second.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..core.grid import grid_points
from ..errors import InitError
from ..sources._retime import retime_runs
from .guess import nice_rate
from .header_units import header_unit
from .init_phase import grid_phase

__all__ = ["RateChoice", "choose_rate", "collisions_at", "exact_rate", "time_unit"]

_NAME_UNITS = (
    ("ns", re.compile(r"(^|[_\W]|[a-z])(ns|nanos|nanoseconds?)$", re.I)),
    ("us", re.compile(r"(^|[_\W]|[a-z])(us|usec|micros|microseconds?)$", re.I)),
    ("ms", re.compile(r"(^|[_\W]|[a-z])(ms|msec|millis|milliseconds?)$", re.I)),
    ("s", re.compile(r"(^|[_\W])(s|sec|secs|seconds?)$", re.I)),
)
# epoch times in these units lie above these magnitudes (any date after 1973)
_MAGNITUDE = (("ns", 1e17), ("us", 1e14), ("ms", 1e11), ("s", 1e8))
_WORDS = {"s": "seconds", "ms": "milliseconds", "us": "microseconds", "ns": "nanoseconds"}
SCALE = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
#: share of rows a proposed rate may collide before it counts as losing rows
MAX_COLLIDED = 0.0
#: how far a proposed rate may be from the median step's
RATE_TOL = 1e-4


def _name_unit(name: str) -> str | None:
    # camelCase "videoTimeMs": the unit is the last capitalised word
    parts = re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", name)
    last = parts[-1].lower() if parts else ""
    for unit, pat in _NAME_UNITS:
        if pat.search(name) or (len(parts) > 1 and pat.fullmatch(last)):
            return unit
    return None


def _header_time_unit(name: str, where: str) -> str | None:
    """The s/ms/us/ns unit a bracket ending the header names (``Time [s]``, ``t (msec)``), or
    None when it names no time unit.

    Raises
    ------
    InitError
        The bracket names another time unit (``min``, ``h``, ``day``): ``kur run`` reads
        numeric times in s, ms, us or ns only, and reading minutes as seconds would be
        silently 60 times off.
    """
    from ..core.units import conversion_factor, get_registry, parse_unit

    head = header_unit(name)
    if head is None or head.unit is None:
        return None
    if parse_unit(head.unit).dimensionality != get_registry().second.dimensionality:
        return None
    seconds = conversion_factor(head.unit, "s")
    for unit, scale in SCALE.items():
        if abs(seconds / scale - 1) < 1e-9:
            return unit
    raise InitError(
        f"{where}: time column {name!r} is in {head.text!r} ({head.reading}) by its header; a "
        "numeric time is read in s, ms, us or ns only: write the times in one of those (or as "
        "timestamps), or name another column with --time",
        source=where or None,
    )


def time_unit(
    name: str, values: np.ndarray, forced: str | None = None, *, where: str = ""
) -> tuple[str, str]:
    """The unit of a numeric time column and the evidence, one sentence.

    Parameters
    ----------
    name : str
        The column's name.
    values : ndarray, shape (N,), float64
        Its values (NaN for nulls).
    forced : {"s", "ms", "us", "ns"}, optional
        The user's choice (``--time-unit``, or a time unit in the ``--units`` hints).
    where : str
        The file, for an error.

    Raises
    ------
    InitError
        A unit bracket ending the name that is a time unit other than s/ms/us/ns.
    """
    v = values[np.isfinite(values)]
    lo, hi = (float(v.min()), float(v.max())) if v.size else (0.0, 0.0)
    mag = float(np.median(np.abs(v))) if v.size else 0.0
    seen = f"values {lo:.6g} .. {hi:.6g}"
    if forced is not None:
        return forced, f"{seen}: read as {_WORDS[forced]} (given)"
    named = _name_unit(name)
    if named is not None:
        return named, f"{seen}: read as {_WORDS[named]} (the name says {named})"
    header = _header_time_unit(name, where)
    if header is not None:
        return header, f"{seen}: read as {_WORDS[header]} (the header says {header})"
    for unit, floor in _MAGNITUDE:
        if mag >= floor:
            return unit, (
                f"{seen}: epoch {_WORDS[unit]} (a median of {mag:.3g} is a date after 1973 "
                f"only in {unit})"
            )
    span = hi - lo
    step = _median_step(v)
    if _a_millisecond_timer(name, step):
        return "ms", (
            f"{seen}: relative milliseconds (a span of {span:.6g}, too small for an epoch; "
            f"the median step {step:.6g} is {_timer_evidence(name, step)}: "
            f"{1e3 / step:.4g} Hz over {span / 3.6e6:.3g} h in ms, against "
            f"{1 / step:.4g} Hz over {span / 3600:.3g} h in s; pass --time-unit s for seconds)"
        )
    return "s", (
        f"{seen}: relative seconds (a span of {span:.6g}, too small for an epoch; if these "
        "are milliseconds pass --time-unit ms)"
    )


#: names of a device's running clock, which counts milliseconds more often than seconds
_TIMER = re.compile(r"timer|tick|clock|elapsed|millis", re.I)


def _median_step(v: np.ndarray) -> float:
    d = np.diff(np.sort(v))
    d = d[d > 0]
    return float(np.median(d)) if d.size else 0.0


def _a_millisecond_timer(name: str, step: float) -> bool:
    """Whether relative times with median step ``step`` read better as milliseconds.

    In seconds a step of 1 .. 100 is a rate of 0.01 .. 1 Hz; in milliseconds, 10 ..
    1000 Hz, the usual range of sampled sensors.  Loggers that sample that slowly stamp
    whole seconds, so a fractional step (8.548: a 117 Hz clock counted in ms) or a
    timer-like column name tips it to milliseconds; a whole step with a plain name stays
    seconds.
    """
    if not 1.0 <= step <= 100.0:
        return False
    fractional = abs(step - round(step)) > 1e-3 * step
    return fractional or bool(_TIMER.search(name))


def _timer_evidence(name: str, step: float) -> str:
    if abs(step - round(step)) > 1e-3 * step:
        return "not a whole number of seconds, which slow loggers stamping seconds rarely give"
    return f"whole, and the name {name!r} reads as a device timer"


def collisions_at(t: np.ndarray, ent: np.ndarray, hz: float, offset_s: float | None = None) -> int:
    """Rows that land on a tick already taken by their entity at ``hz``.

    ``t`` and ``ent`` are sorted by (entity, time); ticks as the adapters snap them,
    ``grid_points((t - offset_s) * hz)``.  ``offset_s`` is the adapters'
    ``grid_offset_s``; None (the default) takes the one ``kur init`` proposes for these
    rows at ``hz`` (:func:`~kuration.onboard.init_phase.grid_phase`), so rows stamped
    mid-interval are not counted as colliding at their own rate.  A row that repeats its
    entity's previous time exactly is not counted: the duplicates policy keeps or
    re-times it, and no rate separates it.
    """
    if t.size < 2:
        return 0
    if offset_s is None:
        offset_s = grid_phase(t, hz).offset_s
    k = grid_points((t - offset_s) * hz if offset_s else t * hz)
    return int(((k[1:] == k[:-1]) & (ent[1:] == ent[:-1]) & (t[1:] != t[:-1])).sum())


def _digits(hz: float, d: int) -> float:
    return float(f"{hz:.{d}g}")


def exact_rate(hz: float) -> float:
    """``hz`` with the fewest significant digits (a 1-2-5 rate first) within ``RATE_TOL``."""
    for c in (nice_rate(hz), *(_digits(hz, d) for d in (2, 3, 4, 5, 6, 8))):
        if abs(c / hz - 1) <= RATE_TOL:
            return c
    return hz


@dataclass(frozen=True)
class RateChoice:
    """The proposed rate and its evidence.

    Attributes
    ----------
    hz : float
        The rate the job declares.
    median_hz : float
        1 / the median step (of the re-timed rows when ``retimed``).
    collisions : int
        Rows that collide at ``hz`` (what ``collisions="mean"`` merges).
    median_collisions : int
        Rows that collide at the median step's rate (written with 4 digits).
    retimed : int
        Rows that repeat a stamp and would be re-timed (``duplicates="retime"``).
    regular : bool
        Whether a rate near the median keeps every row.
    lines : tuple of str
    """

    hz: float
    median_hz: float
    collisions: int
    median_collisions: int
    retimed: int
    regular: bool
    lines: tuple[str, ...]


def _stats(t: np.ndarray, ent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(positive steps within entities, per-entity median steps)."""
    same = ent[1:] == ent[:-1]
    d = np.diff(t)
    ok = same & (d > 0)
    steps = d[ok]
    owner = ent[1:][ok]
    meds = np.array([np.median(steps[owner == e]) for e in np.unique(owner)])
    return steps, meds


def choose_rate(
    t: np.ndarray, ent: np.ndarray, *, coarse: bool, forced: float | None = None
) -> RateChoice:
    """A sample rate for times ``t`` (seconds) of entities ``ent``, sorted by (entity, time).

    Parameters
    ----------
    coarse : bool
        Re-time runs of equal stamps by row order first (``duplicates="retime"``).
    forced : float, optional
        The user's rate (``--rate``): its collisions are counted and printed.
    """
    retimed = 0
    if coarse:
        t, retimed = retime_runs(t, ent)
    steps, meds = _stats(t, ent)
    n = t.size
    med = float(np.median(meds))
    r0 = 1.0 / med
    lines = []
    p10, p90 = np.percentile(steps, [10, 90])
    lines.append(
        f"steps: median step {med:.6g} s per entity (over {meds.size} entities: "
        f"{float(meds.min()):.6g} .. {float(meds.max()):.6g} s); all {steps.size} steps: "
        f"p10 {p10:.6g} s, p90 {p90:.6g} s"
        + (f" (after re-timing {retimed} rows that repeat a stamp)" if retimed else "")
    )
    # the fewest digits that stay within RATE_TOL of the median's rate: a rate a little off
    # drifts a tick every 1 / RATE_TOL steps, which leaves a tick empty or collides two rows
    cands = [
        c
        for c in (nice_rate(r0), *(_digits(r0, d) for d in (2, 3, 4, 5, 6, 8)))
        if abs(c / r0 - 1) <= RATE_TOL
    ] or [_digits(r0, 8)]
    cost = {hz: collisions_at(t, ent, hz) for hz in dict.fromkeys(cands)}
    median_hz = cands[0]
    if forced is not None:
        c = collisions_at(t, ent, forced)
        lines.append(
            f"sample rate: {forced:g} Hz (given; the median step's is {median_hz:g} Hz): "
            f"{c} of {n} rows share a tick" + (" and are averaged (collisions: mean)" if c else "")
        )
        return RateChoice(forced, median_hz, c, cost[median_hz], retimed, c == 0, tuple(lines))
    best = next((hz for hz in cost if cost[hz] <= MAX_COLLIDED * n), None)
    if best is not None:
        lines.append(
            f"sample rate: {best:g} Hz = 1 / median step; it keeps every row on its own tick"
        )
        return RateChoice(best, median_hz, cost[best], cost[best], retimed, True, tuple(lines))
    # irregular steps: the median's rate, its collisions merged and counted (collisions:
    # mean); the rate of the smallest step keeps every row on its own tick, but leaves most
    # ticks empty, so it is printed as the alternative
    smallest = float(steps.min())
    k_hz = _digits(1.0 / smallest, 3)
    while collisions_at(t, ent, k_hz) and k_hz < 1e9:
        k_hz = _digits(k_hz * 1.01, 3)
    m_cost = cost[median_hz]
    lines.append(
        f"  steps are irregular: at the median step's rate {median_hz:g} Hz, {m_cost} of {n} "
        f"rows ({m_cost / n:.2%}) share a tick with another row of their entity; they are "
        f"averaged into it and counted (collisions: mean).  At {k_hz:g} Hz (the smallest step, "
        f"{smallest:.6g} s) no row would, but only about {median_hz / k_hz:.0%} of the ticks "
        f"would hold a row: --rate {k_hz:g} chooses it"
    )
    lines.append(f"sample rate: {median_hz:g} Hz = 1 / median step")
    return RateChoice(median_hz, median_hz, m_cost, m_cost, retimed, False, tuple(lines))
