"""``kur init``'s time guesses: a numeric time column's unit, and a sample rate that loses no row.

Time unit (:func:`time_unit`): a unit the column's name states (``videoTimeMs``,
``t_us``, ``time_ns``, ``seconds``) wins; else epoch times by magnitude (a
date after 1973 is above 1e17 in ns, 1e14 in us, 1e11 in ms, 1e8 in s); else
relative seconds.  The evidence (values, span, step) is printed.

Sample rate (:func:`choose_rate`): 1 / the mean step over gap-free runs
(:mod:`.rate_fit`; stamps rounded to whole milliseconds give steps of 16 and
17 ms whose median is not the rate), written with the fewest digits that
drift under a twentieth of a step over the longest track and keep every row on
its own tick; an hourly file gets ``1 / 3600.0`` at full precision.  When
the files' own rates differ (one 100 Hz, one 10 Hz), each is named and the
highest proposed.  When no rate fits (steps are irregular) the median step's
rate is proposed next to the rate that keeps the rows (the smallest positive
step's), each with the collisions it costs.  Runs of equal stamps (a clock
coarser than the sampling) are spread by row order first
(:func:`kuration.sources._retime.retime_runs`), so the rate is then rows per
second.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InitError
from ..sources._retime import retime_runs
from ..sources._snap import snap_ticks
from .header_units import header_unit
from .init_phase import grid_phase
from .rate_fit import StepFit, fit_steps, rate_candidates

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
#: files whose own rates differ by more than this factor are named, each with its rate (and
#: so are files of any two rates when no one rate keeps all their rows)
RATES_DIFFER = 1.01
#: rounded candidates tried for a rate that keeps every row (the unrounded one is tried too)
TRIES = 5


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

    ``t`` and ``ent`` are sorted by (entity, time); ticks as the adapters snap them
    (:func:`~kuration.sources._snap.snap_ticks`).  ``offset_s`` is the adapters'
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
    k = snap_ticks(t, hz, offset_s)[0]
    return int(((k[1:] == k[:-1]) & (ent[1:] == ent[:-1]) & (t[1:] != t[:-1])).sum())


def exact_rate(hz: float, *, longest: int) -> float:
    """``hz`` with the fewest digits that drift under :data:`~.rate_fit.DRIFT_STEPS` of a step
    over ``longest`` steps (the longest track's; see :func:`~.rate_fit.rate_candidates`)."""
    return rate_candidates(1.0 / hz, longest)[0]


@dataclass(frozen=True)
class RateChoice:
    """The proposed rate and its evidence.

    Attributes
    ----------
    hz : float
        The rate the job declares.
    median_hz : float
        1 / the median step (of the re-timed rows when ``retimed``), in few digits.
    collisions : int
        Rows that collide at ``hz`` (what ``collisions="mean"`` merges).
    median_collisions : int
        Rows that collide at ``median_hz``.
    retimed : int
        Rows that repeat a stamp and would be re-timed (``duplicates="retime"``).
    regular : bool
        Whether a rate near the rows' steps keeps every row.
    lines : tuple of str
    row_step : ndarray, shape (N,), float64
        The median step of each row's entity, seconds: where its runs break.
    """

    hz: float
    median_hz: float
    collisions: int
    median_collisions: int
    retimed: int
    regular: bool
    lines: tuple[str, ...]
    row_step: np.ndarray


def _keeping(t: np.ndarray, ent: np.ndarray, fit: StepFit) -> float | None:
    """The first rate near the mean step's, then the median step's, at which no row
    collides; None when none does (irregular steps).

    Only the fewest-digit candidates and the unrounded rate are tried: the others lie
    between them, and each try is a pass over the rows.
    """
    cands: list[float] = []
    for step in (fit.step_s, fit.median_s):
        if step > 0:
            near = rate_candidates(step, fit.longest)
            cands += [*near[:TRIES], near[-1]]
    return next((c for c in dict.fromkeys(cands) if not collisions_at(t, ent, c)), None)


def _own_rate(t: np.ndarray, ent: np.ndarray) -> float | None:
    """The rate that keeps every row of ``t`` and fits its steps, or None (irregular steps,
    or no two distinct times in one entity)."""
    return _keeping(t, ent, fit_steps(t, ent))


def _hz_text(hz: float) -> str:
    """The rate in 6 digits, and the period when 6 digits round the rate (1 / 3600 s)."""
    p = 1.0 / hz
    short = float(f"{hz:.6g}") == hz or float(f"{p:.6g}") != p
    return f"{hz:.6g} Hz" + ("" if short else f" (one row every {p:g} s)")


def _per_file(
    t: np.ndarray, ent: np.ndarray, files: Sequence[str], file_of: np.ndarray
) -> list[tuple[str, float | None]]:
    """Each file's own rate (None where its steps are irregular)."""
    out = []
    for i, name in enumerate(files):
        m = file_of == i
        out.append((name, _own_rate(t[m], ent[m]) if m.sum() > 1 else None))
    return out


def _files_differ(rates: list[tuple[str, float | None]], factor: float) -> bool:
    """Whether two files' own rates differ by more than ``factor``."""
    known = [hz for _n, hz in rates if hz is not None]
    return len(known) >= 2 and max(known) > factor * min(known)


def _mixed_rates(
    t: np.ndarray, ent: np.ndarray, rates: list[tuple[str, float | None]], n: int
) -> tuple[float, int, str]:
    """(the highest file's rate, rows colliding at it, the line saying the files differ)."""
    top = max(hz for _n, hz in rates if hz is not None)
    c = collisions_at(t, ent, top)
    each = ", ".join(
        f"{name} {_hz_text(hz)}" if hz is not None else f"{name} irregular steps"
        for name, hz in rates
    )
    line = (
        f"  the files' sample rates differ: {each}.  One job has one rate: the highest, "
        f"{top:.6g} Hz, is proposed; "
        + (f"{c} of {n} rows share a tick and are averaged" if c else "it keeps every row")
        + ", and a slower file's rows fill only part of their ticks (the presence line "
        "below counts it).  To keep each file at its own rate, run kur init on the files "
        "of one rate at a time"
    )
    return top, c, line


def _steps_line(fit: StepFit, t: np.ndarray, ent: np.ndarray, retimed: int) -> str:
    d = np.diff(t)
    steps = d[(ent[1:] == ent[:-1]) & (d > 0)]
    p10, p90 = np.percentile(steps, [10, 90])
    meds = np.unique(fit.row_step)
    return (
        f"steps: median step {fit.median_s:.6g} s per entity (over {np.unique(ent).size} "
        f"entities: {float(meds.min()):.6g} .. {float(meds.max()):.6g} s); all {steps.size} "
        f"steps: p10 {p10:.6g} s, p90 {p90:.6g} s; mean step over gap-free runs "
        f"{fit.step_s:.6g} s (longest track {fit.longest} steps)"
        + (f" (after re-timing {retimed} rows that repeat a stamp)" if retimed else "")
    )


def choose_rate(
    t: np.ndarray,
    ent: np.ndarray,
    *,
    coarse: bool,
    forced: float | None = None,
    files: Sequence[str] = (),
    file_of: np.ndarray | None = None,
) -> RateChoice:
    """A sample rate for times ``t`` (seconds) of entities ``ent``, sorted by (entity, time).

    Parameters
    ----------
    t : ndarray, shape (N,), float64
    ent : ndarray, shape (N,), int
    coarse : bool
        Re-time runs of equal stamps by row order first (``duplicates="retime"``).
    forced : float, optional
        The user's rate (``--rate``): its collisions are counted and printed.
    files : sequence of str
        The input files, named in the lines when their rates differ.
    file_of : ndarray, shape (N,), int, optional
        Each row's index into ``files``.
    """
    retimed = 0
    if coarse:
        t, retimed = retime_runs(t, ent)
    fit = fit_steps(t, ent)
    n = t.size
    lines = [_steps_line(fit, t, ent, retimed)]
    median_hz = rate_candidates(fit.median_s, fit.longest)[0]
    m_cost = collisions_at(t, ent, median_hz)

    def choice(hz: float, c: int, regular: bool) -> RateChoice:
        return RateChoice(hz, median_hz, c, m_cost, retimed, regular, tuple(lines), fit.row_step)

    if forced is not None:
        c = collisions_at(t, ent, forced)
        lines.append(
            f"sample rate: {forced:g} Hz (given; the rows' steps give {median_hz:.6g} Hz): "
            f"{c} of {n} rows share a tick" + (" and are averaged (collisions: mean)" if c else "")
        )
        return choice(forced, c, c == 0)
    rates = _per_file(t, ent, files, file_of) if len(files) > 1 and file_of is not None else []
    best = None if _files_differ(rates, RATES_DIFFER) else _keeping(t, ent, fit)
    if best is not None:
        lines.append(
            f"sample rate: {_hz_text(best)} = 1 / mean step; it keeps every row on its own tick"
        )
        return choice(best, 0, True)
    if _files_differ(rates, 1.0):  # no one rate fits the files; each fits its own
        top, c, line = _mixed_rates(t, ent, rates, n)
        lines += [line, f"sample rate: {_hz_text(top)} = the highest file's rate"]
        return choice(top, c, c == 0)
    # irregular steps: the median's rate, its collisions merged and counted (collisions:
    # mean); the rate of the smallest step keeps every row on its own tick, but leaves most
    # ticks empty, so it is printed as the alternative
    d = np.diff(t)
    smallest = float(d[(ent[1:] == ent[:-1]) & (d > 0)].min())
    k_hz = float(f"{1.0 / smallest:.3g}")
    while collisions_at(t, ent, k_hz) and k_hz < 1e9:
        k_hz = float(f"{k_hz * 1.01:.3g}")
    lines.append(
        f"  steps are irregular: at the median step's rate {median_hz:.6g} Hz, {m_cost} of {n} "
        f"rows ({m_cost / n:.2%}) share a tick with another row of their entity; they are "
        f"averaged into it and counted (collisions: mean).  At {k_hz:g} Hz (the smallest step, "
        f"{smallest:.6g} s) no row would, but only about {median_hz / k_hz:.0%} of the ticks "
        f"would hold a row: --rate {k_hz:g} chooses it"
    )
    lines.append(f"sample rate: {median_hz:.6g} Hz = 1 / median step")
    return choice(median_hz, m_cost, False)
