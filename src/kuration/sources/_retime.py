"""Duplicate (entity, time) rows: keep one, or re-time coarse stamps by row order.

A logger whose clock is coarser than its sampling writes runs of rows with one
stamp (a PPG sampled 100 times a second, stamped by a 15.6 ms timer: 36% of
its steps are 0 and the rest 15 or 16 ms).  Those rows are consecutive
samples, not duplicates; keeping one per stamp loses a third of the signal,
and spreading each run only up to the next stamp leaves steps of 5 to 16 ms
that collide on any grid.  ``duplicates="retime"`` re-times by row order: the
rows of one *stretch* (an entity's rows with no step over ``GAP_STEPS``
median steps) are placed at a steady rate from the stretch's first stamp to
its last, ``t_first + i * (t_last - t_first) / (n - 1)``.  Row order is kept,
the stretch's ends keep their stamps, and the step is the stretch's rows per
second; the largest distance between a row's new time and its stamp is
returned so that it can be reported.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["DUPLICATE_POLICIES", "drop_timeless", "resolve_duplicates", "retime_runs"]

#: the adapters' ``duplicates`` option
DUPLICATE_POLICIES = ("raise", "first", "last", "retime")
#: a step longer than this many median steps ends a stretch
GAP_STEPS = 10


def retime_runs(t: np.ndarray, ent: np.ndarray) -> tuple[np.ndarray, int]:
    """Re-time rows by row order within stretches of each entity.

    Parameters
    ----------
    t : ndarray, shape (N,), float64, seconds
        Times sorted by (entity, time, file row).
    ent : ndarray, shape (N,), int
        Entity codes, in the same order.

    Returns
    -------
    t_new : ndarray, shape (N,), float64, seconds
        Strictly increasing within each stretch of more than one distinct stamp.
    retimed : int
        Rows that repeated the stamp of the row before them (what the policy resolves).
    """
    n = t.size
    if n < 2:
        return t.copy(), 0
    same_ent = ent[1:] == ent[:-1]
    step = np.diff(t)
    repeats = int((same_ent & (step == 0)).sum())
    if not repeats:
        return t.copy(), 0
    pos = step[same_ent & (step > 0)]
    med = float(np.median(pos)) if pos.size else 0.0
    new = np.r_[True, ~same_ent | (step > GAP_STEPS * med)]
    starts = np.flatnonzero(new)
    ends = np.r_[starts[1:], n] - 1
    lengths = ends - starts + 1
    dt = np.where(lengths > 1, (t[ends] - t[starts]) / np.maximum(lengths - 1, 1), 0.0)
    idx = np.arange(n) - np.repeat(starts, lengths)
    out = np.repeat(t[starts], lengths) + idx * np.repeat(dt, lengths)
    return out, repeats


def drop_timeless(table: pa.Table, column: str) -> tuple[pa.Table, int, np.ndarray | None]:
    """The rows whose time is null (or NaN) removed, their count and the file rows kept
    (shape (K,), intp; None when none is dropped) (``missing_time="drop"``; the run
    reports the count as ``timeless_dropped``)."""
    col = table.column(column)
    ok = pc.is_valid(col)
    if pa.types.is_floating(col.type):
        ok = pc.and_(ok, pc.invert(pc.fill_null(pc.is_nan(col), True)))
    n_bad = table.num_rows - int(pc.sum(ok).as_py() or 0)
    if not n_bad:
        return table, 0, None
    kept = np.flatnonzero(np.asarray(ok.to_numpy(zero_copy_only=False), dtype=bool))
    return table.filter(ok), n_bad, kept


def resolve_duplicates(
    policy: str,
    order: np.ndarray,
    t_sec: np.ndarray,
    ent: np.ndarray,
    error: Callable[[int, int], Exception],
) -> tuple[np.ndarray, np.ndarray | None, dict[str, int]]:
    """Apply a ``duplicates`` policy to rows sorted by (entity, time, row).

    Parameters
    ----------
    policy : {"raise", "first", "last", "retime"}
    order : ndarray, shape (N,), intp
        Row order sorted by (entity, time, file row).
    t_sec : ndarray, shape (N,), float64, seconds, in file order
    ent : ndarray, shape (N,), int, entity codes in file order
    error : callable
        ``error(row, n_duplicates)`` builds the exception of ``"raise"``.

    Returns
    -------
    order : ndarray
        Without the dropped rows (``first``/``last``).
    t_new : ndarray or None
        The re-timed times in file order (``retime``), else None.
    counts : dict
        ``retimed`` or ``duplicates_dropped`` when any.
    """
    e_s, t_s = ent[order], t_sec[order]
    dup = (e_s[1:] == e_s[:-1]) & (t_s[1:] == t_s[:-1])
    if not dup.any():
        return order, None, {}
    if policy == "retime":
        t_new, n = retime_runs(t_s, e_s)
        out = t_sec.copy()
        out[order] = t_new
        return order, out, {"retimed": n}
    if policy == "raise":
        raise error(int(order[1:][dup].min()), int(dup.sum()))
    keep = np.ones(order.size, dtype=bool)
    if policy == "first":
        keep[1:][dup] = False
    else:
        keep[:-1][dup] = False
    return order[keep], None, {"duplicates_dropped": int(dup.sum())}
