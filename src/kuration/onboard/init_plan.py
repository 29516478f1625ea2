"""``kur init``'s sizes from the time that holds data: presence, windows, shards, budget.

A track's wall-clock span says little when its rows come in bursts (a
broadcast feed of a few seconds every few minutes): budgets, windows and
shards sized from it ask for hours that hold no row.  Here every size comes
from the rows themselves, on the grid of the proposed rate:

* presence: per entity, the distinct ticks its rows land on, in seconds
  (``ticks / hz``);
* runs: an entity's rows split where a step exceeds ``GAP_STEPS`` median
  steps; a run's length is its ticks from first to last, plus one;
* window: ``WINDOW_STEPS`` steps, or half the median run when runs are
  shorter (at least ``MIN_WINDOW_STEPS``);
* shard length: the window's steps (a shard holds one window; spans are a whole number
  of shards, so only a track's tail is padded, and init counts those shards);
* budget: ``fraction`` of the present time in runs at least one window long.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..sources._snap import snap_ticks

__all__ = ["Presence", "presence"]

WINDOW_STEPS = 120
MIN_WINDOW_STEPS = 8
GAP_STEPS = 5


@dataclass(frozen=True)
class Presence:
    """What the rows cover on the grid.

    Attributes
    ----------
    hz : float
    present_s : float
        Seconds that hold a row, all entities.
    span_s : float
        Wall-clock seconds of all tracks (first to last row of each entity).
    run_steps : ndarray, shape (R,), int64
        Length of every run, in steps.
    run_present : ndarray, shape (R,), int64
        Ticks holding a row in every run.
    window_steps : int
    track_steps : ndarray, shape (E,), int64
        Every entity's span, first to last row, in steps.
    entity_present : ndarray, shape (E,), int64
        Ticks holding a row, per entity.
    """

    hz: float
    present_s: float
    span_s: float
    run_steps: np.ndarray
    run_present: np.ndarray
    window_steps: int
    track_steps: np.ndarray
    entity_present: np.ndarray

    @property
    def window_s(self) -> float:
        return self.window_steps / self.hz

    def usable_s(self) -> float:
        """Present seconds in runs at least one window long."""
        ok = self.run_steps >= self.window_steps
        return float(self.run_present[ok].sum()) / self.hz

    def lines(self) -> list[str]:
        ok = int((self.run_steps >= self.window_steps).sum())
        med = int(np.median(self.run_steps)) if self.run_steps.size else 0
        share = self.entity_present / np.maximum(self.track_steps, 1)
        lo, mid, hi = (float(x) for x in np.percentile(share, [0, 50, 100]))
        return [
            f"presence: {self.present_s:.6g} s of rows on the grid in {self.span_s:.6g} s of "
            f"tracks ({self.present_s / max(self.span_s, 1e-12):.1%}); {self.run_steps.size} "
            f"runs (split at gaps over {GAP_STEPS} median steps), median {med} steps, "
            f"{ok} at least one window long",
            f"  per entity ({share.size}): {lo:.1%} min, {mid:.1%} median, {hi:.1%} max of its "
            "span holds rows",
        ]


def presence(
    t: np.ndarray,
    ent: np.ndarray,
    hz: float,
    step_s: float | np.ndarray,
    offset_s: float = 0.0,
) -> Presence:
    """Presence, runs and window of rows ``t`` (seconds) of entities ``ent`` at ``hz``.

    ``t``, ``ent`` sorted by (entity, time); ``step_s`` is the median step, seconds: one
    float, or each row's entity's (shape (N,)) when entities step at different rates (a
    10 Hz file's rows in a 100 Hz job are ten ticks apart and still one run); ``offset_s``
    the job's ``grid_offset_s``.
    """
    k = snap_ticks(t, hz, offset_s)[0]  # as the adapters snap them
    new_ent = np.r_[True, ent[1:] != ent[:-1]]
    fresh = new_ent | np.r_[True, k[1:] != k[:-1]]
    k, ent, new_ent = k[fresh], ent[fresh], new_ent[fresh]
    step = np.broadcast_to(np.asarray(step_s, dtype=np.float64), fresh.shape)[fresh]
    gap = np.maximum(GAP_STEPS * step[1:] * hz, 1.5)
    new_run = new_ent | np.r_[True, np.diff(k) > gap]
    starts = np.flatnonzero(new_run)
    ends = np.r_[starts[1:], k.size] - 1
    run_steps = k[ends] - k[starts] + 1
    run_present = ends - starts + 1
    e_starts = np.flatnonzero(new_ent)
    e_ends = np.r_[e_starts[1:], k.size] - 1
    track_steps = k[e_ends] - k[e_starts] + 1
    span_s = float(track_steps.sum()) / hz
    med = float(np.median(run_steps)) if run_steps.size else 0.0
    window = int(min(WINDOW_STEPS, max(MIN_WINDOW_STEPS, med // 2)))
    present = e_ends - e_starts + 1
    return Presence(hz, k.size / hz, span_s, run_steps, run_present, window, track_steps, present)
