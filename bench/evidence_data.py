"""The evidence benchmark's data: each domain's sources, split by time, cut into model windows.

A *model window* of one entity ends at tick ``t``: its input is the entity's position at
``t - history, ..., t`` every ``step`` ticks (relative to the position at ``t``), its target
the horizontal position ``horizon`` ticks later.  Every window is made once per source with
numpy and indexed by ``(source, entity, first tick, last tick)``, so a training set chosen
as spans of tracks is a mask over the pool's windows (a window belongs to a span when its
whole extent lies inside it).

Usable time is the unit every training set is measured in: one usable second is one valid
window end (a window whose sampled points are all present, finite and, for aircraft,
airborne), counted at every tick.  Two sets with equal usable hours give a model the same
number of distinct training examples, whatever their spans' length, gaps or ground time.

Data (origins and licenses in the job files): the ADS-B sample of the ``traffic==2.13``
wheel (OpenSky Network, MIT-licensed package) and SkillCorner's open broadcast tracking of
``kloppy==3.19.1`` (BSD-3-Clause), both read through kuration's own job, adapter and cache.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pymap3d

from kuration import Pipeline
from kuration.contracts.buffer import WindowBatch
from kuration.metrics.dsl.compile import compile_metric
from kuration.pipeline.spec.job import resolve_sources

ROOT = Path(__file__).resolve().parents[1]
FT = 0.3048
# a fixed local tangent plane near Paris-CDG/Orly; the metric frame every aircraft is put in
PARIS = (48.86, 2.35, 0.0)


@dataclass(frozen=True)
class Domain:
    """One benchmark task.

    Attributes
    ----------
    name : str
    job : Path
        The example job whose schema, adapter and sources are read.
    pool, test : callable of (index, n_sources) -> bool
        Which sources (in time order) form the training pool and the test set.
    history, step, horizon, vel : int
        Ticks of input history, input sampling step, prediction horizon and the
        constant-velocity baseline's differencing interval.
    train_stride, test_stride : int
        Ticks between the ends of the windows models train and are tested on.
    budgets_h, quick_budgets_h : tuple of float
        Usable hours of the training sets compared.
    tail : dict of str to str
        kuration metrics evaluated over each test window's own entity and extent; a
        window is in the tail when it is in the top decile of any of them.
    span_seconds : float
        Candidate span length of the selections.
    """

    name: str
    job: Path
    pool: Callable[[int, int], bool]
    test: Callable[[int, int], bool]
    history: int
    step: int
    horizon: int
    vel: int
    train_stride: int
    test_stride: int
    budgets_h: tuple[float, ...]
    quick_budgets_h: tuple[float, ...]
    tail: dict[str, str]
    span_seconds: float
    exclude_entities: tuple[str, ...] = ()
    unit: str = "m"
    # validation inside one source: the fractions of its ticks that pool and test take
    pool_slice: tuple[float, float] | None = None
    test_slice: tuple[float, float] | None = None

    @property
    def length(self) -> int:
        """Ticks from a window's first input to its target, inclusive."""
        return self.history + self.horizon + 1


ADSB = Domain(
    name="adsb",
    job=ROOT / "examples" / "adsb_quickstart" / "job.json",
    pool=lambda i, n: i < 8,  # 15-minute sources: the first 2 h
    test=lambda i, n: i >= 9,  # 15 minutes left out, then the last 45 minutes
    history=60,
    step=5,
    horizon=30,
    vel=5,
    train_stride=5,
    test_stride=10,
    budgets_h=(0.5, 1.0, 2.0, 4.0, 6.0),
    quick_budgets_h=(1.0,),
    tail={
        "turn_p90": "field:track | angle_delta | abs | p90",
        "climb_std": "field:vertical_rate | std",
    },
    span_seconds=300.0,
)

FOOTBALL = Domain(
    name="football",
    job=ROOT / "examples" / "football" / "job.json",
    pool=lambda i, n: i == 0,  # the first half; the half-time break is the gap
    test=lambda i, n: i == 1,  # the second half
    history=40,
    step=5,
    horizon=15,
    vel=5,
    train_stride=10,
    test_stride=10,
    budgets_h=(0.05, 0.1, 0.2, 0.3, 0.5),
    quick_budgets_h=(0.2,),
    tail={
        "accel_p90": "field:position | accel | p90",
        "turn_p90": "field:position | heading | angle_delta | abs | p90",
    },
    span_seconds=30.0,
    exclude_entities=("ball",),
)

DOMAINS = {d.name: d for d in (ADSB, FOOTBALL)}


@dataclass
class Windows:
    """Model windows of a set of sources, one row each.

    Attributes
    ----------
    x : ndarray, shape (N, F), float64
        Input positions relative to the last one (metres), horizontal axes along and
        across the last velocity.
    y : ndarray, shape (N, 2), float64
        Horizontal displacement from the last input to the target (metres), same frame.
    cv : ndarray, shape (N, 2), float64
        The constant-velocity prediction of ``y``.
    source : ndarray, shape (N,), int64
        Index into ``source_ids``.
    entity : ndarray, shape (N,), object
    first, last : ndarray, shape (N,), int64
        The window's extent in its source's ticks, inclusive.
    tail : ndarray, shape (N,), bool
    metrics : dict of str to ndarray, shape (N,)
    """

    x: np.ndarray
    y: np.ndarray
    cv: np.ndarray
    source: np.ndarray
    entity: np.ndarray
    first: np.ndarray
    last: np.ndarray
    source_ids: list[str]
    metrics: dict[str, np.ndarray] = field(default_factory=dict)
    tail: np.ndarray | None = None

    def take(self, idx: np.ndarray) -> Windows:
        return Windows(
            self.x[idx],
            self.y[idx],
            self.cv[idx],
            self.source[idx],
            self.entity[idx],
            self.first[idx],
            self.last[idx],
            self.source_ids,
            {k: v[idx] for k, v in self.metrics.items()},
            None if self.tail is None else self.tail[idx],
        )

    def __len__(self) -> int:
        return int(self.x.shape[0])


@dataclass
class Loaded:
    """A domain's pipeline, its pool and test sources, and their tick tables."""

    domain: Domain
    pipeline: Pipeline
    pool_uris: list[str]
    test_uris: list[str]
    tables: dict[str, Any]
    sliced: bool = False  # pool and test carved from one source by time (no SDK scoring)


def load(domain: Domain) -> Loaded:
    """Read the domain's job and every pool and test source (kuration's adapter and cache)."""
    p = Pipeline.from_job(domain.job)
    uris = resolve_sources(p.sources, p.base, adapter=p.adapter)
    n = len(uris)
    pool = [u for i, u in enumerate(uris) if domain.pool(i, n)]
    test = [u for i, u in enumerate(uris) if domain.test(i, n)]
    tables = {u: p.adapter.read_table(u) for u in pool + test}
    if domain.pool_slice is None:
        return Loaded(domain, p, pool, test, tables)
    # one source carved by time: the pool's part, then (after a gap) the test's part
    sliced = {u: _slice(tables[u], domain.pool_slice) for u in pool}
    sliced.update({f"{u}#test": _slice(tables[u], domain.test_slice or (0.0, 1.0)) for u in test})
    return Loaded(domain, p, pool, [f"{u}#test" for u in test], sliced, sliced=True)


def _slice(table: Any, frac: tuple[float, float]) -> Any:
    """The ticks of ``table`` in ``[frac[0], frac[1])`` of its length (same roster)."""
    n = table.present.shape[0]
    a, b = int(frac[0] * n), int(frac[1] * n)
    return dataclasses.replace(
        table,
        values={k: v[a:b] for k, v in table.values.items()},
        present=table.present[a:b],
        globals={k: v[a:b] for k, v in table.globals.items()},
        events={k: v[a:b] for k, v in table.events.items()},
        ints={k: v[a:b] for k, v in table.ints.items()},
        k0=table.k0 + a,
    )


def metric_positions(domain: Domain, table: Any) -> tuple[np.ndarray, np.ndarray]:
    """Positions in metres, shape (T, E, 3), and where an entity is usable, shape (T, E)."""
    pos = table.values["position"]
    if domain.name == "adsb":
        alt = table.values["altitude"][..., 0] * FT
        e, n, u = pymap3d.geodetic2enu(pos[..., 0], pos[..., 1], alt, *PARIS)
        xyz = np.stack([e, n, u], axis=-1)
        ground = table.values["onground"][..., 0]
        ok = table.present & np.isfinite(xyz).all(-1) & (ground == 0)
    else:
        xyz = np.concatenate([pos, np.zeros_like(pos[..., :1])], axis=-1)
        ok = table.present & np.isfinite(pos).all(-1)
    return xyz, ok


def _valid_ends(domain: Domain, ok: np.ndarray) -> np.ndarray:
    """(T, E) bool: a window ending its input at tick t has every sampled point usable."""
    t_n = ok.shape[0]
    out = np.zeros_like(ok)
    lo, hi = domain.history, t_n - domain.horizon
    if hi <= lo:
        return out
    v = np.ones((hi - lo, *ok.shape[1:]), bool)
    offs = [*list(range(-domain.history, 1, domain.step)), -domain.vel, domain.horizon]
    for o in offs:
        v &= ok[lo + o : hi + o]
    out[lo:hi] = v
    return out


def source_windows(
    domain: Domain, table: Any, stride: int, *, tail_metrics: bool = False
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Every valid window of one source at ``stride`` ticks, and the (T, E) valid-end mask.

    Returns
    -------
    cols : dict of str to ndarray
        ``x``, ``y``, ``cv``, ``entity`` (roster index), ``end`` (tick of the last input)
        and, with ``tail_metrics``, one column per tail metric.
    valid : ndarray, shape (T, E), bool
        Every valid window end, at every tick (what usable time counts).
    """
    xyz, ok = metric_positions(domain, table)
    keep = np.array([str(e) not in domain.exclude_entities for e in table.entity_ids])
    valid = _valid_ends(domain, ok) & keep[None, :]
    strided = np.zeros_like(valid)
    strided[::stride] = valid[::stride]
    t_idx, e_idx = np.nonzero(strided)
    offs = np.arange(-domain.history, 1, domain.step)
    last = xyz[t_idx, e_idx]
    x = xyz[t_idx[:, None] + offs[None, :], e_idx[:, None]] - last[:, None, :]
    dims = 3 if domain.name == "adsb" else 2
    y = (xyz[t_idx + domain.horizon, e_idx] - last)[:, :2]
    v = (last - xyz[t_idx - domain.vel, e_idx])[:, :2] / domain.vel
    # a frame along the last velocity: a turn in progress is then linear in the inputs
    rot = _heading_frame(v)
    xy = np.einsum("nij,nkj->nki", rot, x[..., :2])
    x = np.concatenate([xy, x[..., 2:dims]], axis=-1).reshape(len(t_idx), -1)
    y = np.einsum("nij,nj->ni", rot, y)
    cv = np.einsum("nij,nj->ni", rot, v * domain.horizon)
    cols = {"x": x, "y": y, "cv": cv, "entity": e_idx, "end": t_idx}
    if tail_metrics:
        for name, expr in domain.tail.items():
            cols[name] = _window_metric(domain, table, expr, t_idx, e_idx)
    return cols, valid


def _heading_frame(v: np.ndarray) -> np.ndarray:
    """(N, 2, 2) rotations taking each horizontal velocity to (speed, 0); identity at rest."""
    speed = np.linalg.norm(v, axis=1)
    c = np.where(speed > 1e-9, v[:, 0] / np.where(speed > 1e-9, speed, 1.0), 1.0)
    s = np.where(speed > 1e-9, v[:, 1] / np.where(speed > 1e-9, speed, 1.0), 0.0)
    return np.stack([np.stack([c, s], axis=1), np.stack([-s, c], axis=1)], axis=1)


def _window_metric(
    domain: Domain, table: Any, expr: str, ends: np.ndarray, ents: np.ndarray
) -> np.ndarray:
    """A kuration metric over each window's own entity and whole extent (input and target)."""
    metric = compile_metric(expr, table.schema)
    out = np.full(ends.shape, np.nan)
    for e in np.unique(ents):
        rows = np.flatnonzero(ents == e)
        batch = WindowBatch(
            values={k: v[:, e : e + 1] for k, v in table.values.items()},
            present=table.present[:, e : e + 1],
            entity_ids=(table.entity_ids[e],),
            schema=table.schema,
            starts=ends[rows] - domain.history,
            length=domain.length,
            source_id=table.source_id,
        )
        out[rows] = metric.evaluate(batch)
    return out


def windows(
    loaded: Loaded, uris: Sequence[str], stride: int, *, tail_metrics: bool = False
) -> tuple[Windows, dict[str, np.ndarray]]:
    """Windows of ``uris`` and each source's (T, E) valid-end mask (keyed by source id)."""
    d = loaded.domain
    parts: list[dict[str, np.ndarray]] = []
    masks: dict[str, np.ndarray] = {}
    sids: list[str] = []
    for i, u in enumerate(uris):
        table = loaded.tables[u]
        cols, valid = source_windows(d, table, stride, tail_metrics=tail_metrics)
        cols["source"] = np.full(len(cols["end"]), i, np.int64)
        ids = np.array([str(e) for e in table.entity_ids], dtype=object)
        cols["entity"] = ids[cols["entity"]] if len(ids) else cols["entity"].astype(object)
        parts.append(cols)
        sids.append(table.source_id)
        masks[table.source_id] = valid

    def cat(k: str) -> np.ndarray:
        return np.concatenate([p[k] for p in parts])

    ends = cat("end")
    w = Windows(
        x=cat("x"),
        y=cat("y"),
        cv=cat("cv"),
        source=cat("source"),
        entity=cat("entity"),
        first=ends - d.history,
        last=ends + d.horizon,
        source_ids=sids,
        metrics={k: cat(k) for k in d.tail} if tail_metrics else {},
    )
    return w, masks


def mark_tail(test: Windows, domain: Domain, q: float = 0.9) -> np.ndarray:
    """Top decile of any tail metric over the test windows, fixed before any selection."""
    tail = np.zeros(len(test), bool)
    for k in domain.tail:
        m = test.metrics[k]
        thr = np.nanquantile(m, q)
        tail |= np.nan_to_num(m, nan=-np.inf) >= thr
    test.tail = tail
    return tail
