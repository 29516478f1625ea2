"""The fault-injection arm: a third of the pool's tracks given recording faults.

Faults are written into the pool's tick tables (the test set stays clean), on a seeded
third of the tracks, each track getting every kind once or more:

* spikes -- single ticks where the position jumps (``spike_m``) and comes back;
* frozen segments -- every field held at its value for ``freeze`` ticks;
* time going back -- a block of ticks replaced by the block before it, reversed;
* dropped frames -- a tenth of the ticks absent;
* a lag between channels -- every field but the position delayed by ``lag`` ticks.

Three arms at equal usable hours: random spans of the clean pool, random spans of the
faulty pool, and random spans of the faulty pool that pass quality filters written as
kuration feature predicates over each span's own entity (the strategy ``QUALITY``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import evidence_arms as ea
import evidence_data as ed
import numpy as np

from kuration.contracts.segment import Segment
from kuration.pipeline.run.strategy import load_strategy
from kuration.selection.select import rank_pool

FAULTS = {
    "adsb": {"spike_m": 3000.0, "freeze": 20, "back": 15, "lag": 10},
    "football": {"spike_m": 8.0, "freeze": 20, "back": 15, "lag": 10},
}


def quality_strategy(domain: ed.Domain) -> dict[str, Any]:
    """Quality predicates over a span's own entity, from physics and the clean pool.

    ADS-B: the speed never reaches the schema's clamp (a position jump: no airliner
    flies 400 m/s) and the track never reverses (heading change under 150 degrees per
    tick); repeated positions are normal in ADS-B (its position messages come about
    every second), so frozen runs are not tested.  Football: no player runs faster than
    12 m/s (a broadcast tracking jump) and the position never repeats for more than two
    ticks (10 Hz tracking of a moving player); players turn on the spot, so reversals are
    not tested.
    """
    if domain.name == "adsb":
        define = {
            "speed_max": "field:position | speed | max",
            "reversal": "field:position | heading | angle_delta | abs | max",
        }
        filters = [
            {"feature": "speed_max", "op": "<", "value": 399.0},
            {"feature": "reversal", "op": "<", "value": 150.0},
        ]
    else:
        define = {
            "speed_max": "field:position | speed | max",
            "frozen": "field:position | speed | where:<0.01 | count",
        }
        filters = [
            {"feature": "speed_max", "op": "<", "value": 12.0},
            {"feature": "frozen", "op": "<=", "value": 2},
        ]
    return {
        "name": "quality-filter",
        "define": define,
        "filters": filters,
        "method": "top-k",
        "params": {"by": "speed_max"},
        "nan_policy": "exclude",
    }


def _deg_per_m(domain: ed.Domain) -> float:
    return 1.0 / 111_000.0 if domain.name == "adsb" else 1.0


def inject(domain: ed.Domain, table: Any, rng: np.random.Generator, share: float = 1 / 3) -> Any:
    """A copy of ``table`` with faults on a ``share`` of its entities (seeded by ``rng``)."""
    f = FAULTS[domain.name]
    vals = {k: v.copy() for k, v in table.values.items()}
    present = table.present.copy()
    n_e = present.shape[1]
    picked = np.flatnonzero(rng.random(n_e) < share)
    scale = f["spike_m"] * _deg_per_m(domain)
    for e in picked.tolist():
        ticks = np.flatnonzero(present[:, e])
        if ticks.size < 4 * f["freeze"]:
            continue
        a, b = int(ticks[0]), int(ticks[-1])
        span = b - a
        # a lag between channels: every field but the position, delayed
        for k in vals:
            if k != "position":
                col = vals[k][a : b + 1, e].copy()
                vals[k][a + f["lag"] : b + 1, e] = col[: span + 1 - f["lag"]]
        for _ in range(max(1, span // 300)):
            t = int(rng.integers(a + 1, b))
            vals["position"][t, e] += scale * rng.choice(
                [-1.0, 1.0], size=vals["position"].shape[-1]
            )
            t = int(rng.integers(a, b - f["freeze"]))
            for k in vals:
                vals[k][t + 1 : t + f["freeze"], e] = vals[k][t, e]
            t = int(rng.integers(a + f["back"], b - f["back"]))
            for k in vals:
                vals[k][t : t + f["back"], e] = vals[k][t - f["back"] : t, e][::-1]
        drop = ticks[rng.random(ticks.size) < 0.1]
        present[drop, e] = False
        for k in vals:
            vals[k][drop, e] = np.nan
    return dataclasses.replace(table, values=vals, present=present)


def faulty_pool(pool: ea.Pool, seed: int = 0) -> ea.Pool:
    """The same pool (same span grid) with faults in its tick tables and windows remade."""
    loaded = pool.loaded
    rng = np.random.default_rng([29, seed])
    tables = dict(loaded.tables)
    for u in loaded.pool_uris:
        tables[u] = inject(loaded.domain, tables[u], rng)
    bad = dataclasses.replace(loaded, tables=tables)
    win, masks = ed.windows(bad, bad.pool_uris, bad.domain.train_stride, tail_metrics=True)
    out = ea.Pool(
        bad, pool.scoring, pool.table, ea.usable_ticks(bad.domain, pool.table, masks), win, masks
    )
    return out


def passing(pool: ea.Pool) -> np.ndarray:
    """Spans that pass the quality strategy's filters (kuration's predicates, track-scoped)."""
    spec = quality_strategy(pool.loaded.domain)
    st = load_strategy(spec, pool.loaded.pipeline.schema)
    feats = ea.track_features(pool, spec["define"])
    t = pool.table
    segs = []
    for i in range(len(t)):
        sid = f"{t.source_ids[t.source[i]]}/{t.entity_ids[t.source[i]][t.entity[i]]}"
        segs.append(
            Segment(
                sid, int(t.first[i]), int(t.last[i]) + 1, {k: float(v[i]) for k, v in feats.items()}
            )
        )
    rank_pool(segs, st, 0)
    return np.array([np.isfinite(s.priority) for s in segs])


def filtered_random(pool: ea.Pool, ok: np.ndarray, seed: int, budget_h: float) -> np.ndarray:
    """Random spans among those passing the filters, to ``budget_h`` usable hours."""
    order = ea.random_order(pool, seed)
    order = order[ok[order]]
    hz = pool.loaded.pipeline.schema.sample_hz
    return ea.truncate(pool, order, round(budget_h * 3600 * hz))
