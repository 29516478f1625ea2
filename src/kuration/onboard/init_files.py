"""``kur init`` on files: a job that loses nothing it does not report.

The rate comes from the rows' own steps (:mod:`.init_rate`), sizes from the
time that holds data (:mod:`.init_plan`); stamps that repeat are re-timed by
row order (``duplicates: retime``), collisions that a rate cannot avoid are
merged and counted (``collisions: mean``), rows without a time are dropped
and counted only when the user says so (``--drop-timeless``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InitError
from .guess import FieldGuess, field_lines, guess_fields
from .init_parts import adapter_options, split_promise, starter_job, starter_strategy
from .init_phase import grid_phase, phase_line
from .init_plan import Presence, presence
from .init_rate import RateChoice, choose_rate, collisions_at
from .inventory import Inventory

__all__ = ["compose_files"]

TEST_SHARE = 0.2
SPAN_FRACTION = 0.05
#: share of steps that repeat a stamp above which stamps are read as coarse
COARSE_REPEATS = 0.05


def _hours(h: float) -> float:
    """Two significant digits, rounded down: a request never exceeds what is there."""
    if h <= 0:
        return 0.0
    r = float(f"{h:.2g}")
    return r if r <= h else float(f"{h * 0.95:.2g}")


def _duplicates(inv: Inventory, given: str | None, lines: list[str]) -> str | None:
    share = inv.repeats / max(inv.rows - 1, 1)
    if given is not None:
        if inv.repeats:
            lines.append(
                f"  {inv.repeats} rows repeat a time of their entity: duplicates {given} (given)"
            )
        return given
    if not inv.repeats:
        return None
    if share >= COARSE_REPEATS:
        lines.append(
            f"  coarse stamps: {inv.repeats} rows ({share:.1%}) repeat the time of the row "
            "before them: the clock is coarser than the sampling.  The rows are re-timed by "
            "row order at their steady rows per second, each stretch between gaps keeping its "
            "first and last stamp (duplicates: retime); --duplicates first keeps one row per "
            "stamp instead"
        )
        return "retime"
    lines.append(
        f"  {inv.repeats} rows repeat a time of their entity: the first is kept and the run "
        "counts the rest (duplicates: first; --duplicates retime spreads them instead)"
    )
    return "first"


def _timeless(inv: Inventory, drop: bool, lines: list[str]) -> None:
    """Refuse rows without a time unless ``drop`` (``--drop-timeless``); else say the job drops them.

    Raises
    ------
    InitError
        Rows without a time and no ``drop``, naming the first of them.
    """
    if not inv.timeless:
        return
    if not drop:
        raise InitError(
            f"{inv.timeless} of {inv.rows} rows have no time (null or NaN in column "
            f"{inv.time_column!r}; first at {'; '.join(inv.timeless_at)}); pass "
            "--drop-timeless to drop them (the run counts them), or fill them in",
            source=inv.inputs[0],
        )
    lines.append(
        f"  {inv.timeless} of {inv.rows} rows have no time: the job drops them and the run "
        "counts them (missing_time: drop)"
    )


def _grid(
    inv: Inventory, opts: Mapping[str, Any], lines: list[str]
) -> tuple[str | None, RateChoice, Presence, float]:
    """The duplicates policy, the rate, where the rows land on its grid (re-timed first
    when stamps are coarse) and the grid's ``grid_offset_s`` (stamps mid-interval)."""
    assert inv.times is not None and inv.entities is not None
    dup = _duplicates(inv, opts.get("duplicates"), lines)
    file_of = np.searchsorted(np.asarray(inv.file_starts), inv.entities, side="right") - 1
    names = [Path(p).name for p in inv.inputs]
    if len(set(names)) < len(names):  # run1/log.csv, run2/log.csv: name them by path
        names = list(inv.inputs)
    rc = choose_rate(
        inv.times,
        inv.entities,
        coarse=dup == "retime",
        forced=opts.get("rate"),
        files=names,
        file_of=file_of,
    )
    lines.extend(rc.lines)
    t = inv.times
    if dup == "retime":
        from ..sources._retime import retime_runs

        t, _n = retime_runs(inv.times, inv.entities)
    gp = grid_phase(t, rc.hz)
    if gp.offset_s:
        without = collisions_at(t, inv.entities, rc.hz, 0.0)
        lines.append(phase_line(gp, rc.hz, t.size, without))
    pres = presence(t, inv.entities, rc.hz, rc.row_step, gp.offset_s)
    lines.extend(pres.lines())
    return dup, rc, pres, gp.offset_s


def _budget(inv: Inventory, pres: Presence, fraction: float, lines: list[str]) -> dict[str, float]:
    """Hours per split: ``fraction`` of the present time in runs at least one window long,
    a fifth of it for test when there are two sources or more.

    Raises
    ------
    InitError
        No run of rows is one window long.
    """
    usable = pres.usable_s()
    if usable <= 0:
        raise InitError(
            f"no run of rows is as long as one window ({pres.window_steps} steps): the data "
            "is too short to curate",
            source=inv.inputs[0],
        )
    test_share = TEST_SHARE if inv.n_sources >= 2 else 0.0
    want_h = fraction * usable / 3600
    budget = {
        "train_hours": _hours(want_h * (1 - test_share)),
        "test_hours": _hours(want_h * test_share),
    }
    lines.append(
        f"budget: train {budget['train_hours']:g} h, test {budget['test_hours']:g} h = "
        f"{fraction:.0%} of {usable / 3600:.3g} h of present time in runs at least one window "
        f"long (not the {pres.span_s / 3600:.3g} h the tracks span)"
    )
    if not test_share:
        lines.append(
            "  no test split: there is one source and a source goes whole to one split; "
            "give two or more files (or records) for a test split"
        )
    return budget


def _adapter(
    inv: Inventory,
    fields: list[FieldGuess],
    out: Path,
    dup: str | None,
    rc: RateChoice,
    offset_s: float,
) -> dict[str, Any]:
    """The timeseries adapter with the policies the rows need: re-time or drop repeated
    stamps, merge collisions the rate cannot avoid, drop timeless rows when told to,
    move the rounding off rows stamped mid-interval."""
    adapter = adapter_options(inv, fields, out)
    adapter.pop("duplicates", None)
    if dup:
        adapter["duplicates"] = dup
    adapter.pop("collisions", None)
    if rc.collisions:
        adapter["collisions"] = "mean"
    if inv.timeless:
        adapter["missing_time"] = "drop"
    if offset_s:
        adapter["grid_offset_s"] = offset_s
    return adapter


def _spans(
    pres: Presence, hz: float, budget: Mapping[str, float], window_s: float, lines: list[str]
) -> float | None:
    """``span_seconds`` when the median track is long next to the smallest request, else
    None; the line saying how close each split can land to its request."""
    reqs = [h * 3600 for h in budget.values() if h > 0]
    # the run admits whole tracks (an entity's first to last row, gaps included): tracks
    # long next to the smallest request are cut into spans
    tracks_s = np.sort(pres.track_steps) / hz
    if not (reqs and tracks_s.size):
        return None
    if tracks_s[tracks_s.size // 2] <= 0.1 * min(reqs):
        lines.append(f"spans: none (whole tracks); {split_promise(reqs, tracks_s[-1], 'track')}")
        return None
    # rows in short bursts: one window per span, since a span reaching over a gap is
    # mostly empty time (empty spans are left out; half-empty ones are not)
    runs_s = float(np.median(pres.run_steps)) / hz
    span = max(float(f"{SPAN_FRACTION * min(reqs):.2g}"), window_s)
    if runs_s < span:
        span = window_s
    lines.append(
        f"spans: tracks are long next to the smallest request (median track "
        f"{tracks_s[tracks_s.size // 2]:.6g} s), so they are cut into {span:g} s spans "
        f"(span_seconds) and {split_promise(reqs, span, 'span')}"
    )
    return span


def compose_files(
    inv: Inventory, out: Path, *, name: str, fraction: float, opts: Mapping[str, Any]
) -> tuple[dict[str, Any], list[str], list[str]]:
    """The job for files, its printed evidence and the columns without a unit.

    Raises
    ------
    InitError
        Rows without a time and no ``drop_timeless``; data too short for one window.
    """
    fields, missing, skipped = guess_fields(inv.columns)
    lines = list(inv.lines)
    _timeless(inv, bool(opts.get("drop_timeless")), lines)
    dup, rc, pres, offset_s = _grid(inv, opts, lines)
    hz = rc.hz
    lines.extend(field_lines(fields, missing, skipped))
    strategy, axes = starter_strategy(fields, bool(inv.entity_column))
    lines.append(f"strategy: metrics {', '.join(strategy['define'])}; uniform-bins on {axes}")
    window_s = pres.window_steps / hz
    budget = _budget(inv, pres, fraction, lines)
    stride = max(1, pres.window_steps // 2)
    job = starter_job(
        inv,
        out,
        name=name,
        fields=fields,
        hz=hz,
        axes=axes,
        adapter=_adapter(inv, fields, out, dup, rc, offset_s),
        segmenter={"window": pres.window_steps, "stride": stride, "unit": "steps"},
        strategy=strategy,
        budget=budget,
        shard_length=pres.window_steps,
        min_track_s=window_s,
    )
    lines.append(
        f"windows: {pres.window_steps} steps ({window_s:.6g} s), stride {stride} steps; "
        f"shards of {pres.window_steps} steps (one window, no padding)"
    )
    span = _spans(pres, hz, budget, window_s, lines)
    if span is not None:
        job["span_seconds"] = span
    return job, lines, missing
