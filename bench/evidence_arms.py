"""The evidence benchmark's training sets: one scored pool, every arm selected in process.

Two ways of scoring the same candidate spans (the job's ``span_seconds`` cut of every
track of the pool):

* ``scene`` -- kuration's hours path as shipped: :func:`score_sources` windows whole
  sources, :func:`apply_strategy` ranks them, :func:`build_candidate_table` gives each span
  its source's windows' priority (the job's ``clip_aggregate``, ``min_track_seconds``,
  groups) and :func:`fill_budgets` admits spans (group caps included);
* ``track`` -- each span is one segment scored by the strategy's own metrics over its own
  entity only (kuration's metric engine on that entity's ticks), then ranked by the
  strategy's method (:func:`rank_pool`); spans are admitted by priority.

The ``random`` arm admits the same candidate spans in a seeded uniform order.  Every arm
stops at the same rule, counted in usable time (:mod:`evidence_data`): spans are taken in
the arm's admission order until their usable seconds reach the budget.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import pickle
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import evidence_data as ed
import numpy as np

from kuration import __version__
from kuration.contracts.buffer import WindowBatch
from kuration.contracts.segment import Segment
from kuration.metrics.dsl.compile import compile_metric
from kuration.pipeline.memory.pool import merged_pool_strategy
from kuration.pipeline.run.scoring import _track_extents, score_sources
from kuration.pipeline.run.strategy import load_strategy
from kuration.selection.candidates import CandidateTable, build_candidate_table
from kuration.selection.draws import draw_candidates
from kuration.selection.fill import fill_budgets
from kuration.selection.select import apply_strategy, method_seed, rank_pool
from kuration.selection.strategy import Strategy

CACHE = Path(__file__).resolve().parent / ".cache" / "evidence"


@dataclass(frozen=True)
class Arm:
    """One selection arm: a strategy, how its spans are scored, and its job options."""

    name: str
    strategy: Mapping[str, Any] | None  # None: the random arm
    # "scene" / "sdk-track": kuration's hours path with the segmenter's scope; "track": the
    # harness's own span-as-segment scoring; "track-random": random among filter passes;
    # "guided": evidence_guided's spans; "tail-mix": see tail_mix
    scope: str = "scene"
    clip_aggregate: str = "mean"
    min_track_seconds: float = 0.0
    group_cap: bool = True
    veto: bool = False  # the job's filter_scope "span": a failed window keeps its span out
    share: float = 0.0  # "tail-mix": the budget's share given to the top-ranked spans


@dataclass
class Pool:
    """A domain's scored pool: segments, per-source info, spans and their usable seconds."""

    loaded: ed.Loaded
    scoring: Any  # scene-scoped
    table: CandidateTable  # the span grid (no priorities) every arm chooses from
    usable: np.ndarray  # (n_spans,) usable ticks of each span
    windows: ed.Windows  # pool windows at the training stride
    masks: dict[str, np.ndarray]
    span_features: dict[str, np.ndarray] | None = None  # track-scoped, per span
    track_scoring: Any = None  # the SDK's track-scoped scoring (segmenter scope "track")
    # the validation-guided arms' spans, arm -> budget (evidence_guided.select_all)
    guided: dict[str, dict[float, np.ndarray]] | None = None


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def score_pool(
    loaded: ed.Loaded, strategies: Sequence[Strategy], *, scope: str = "scene", cache: bool = True
) -> Any:
    """Score the pool once with every feature any arm needs (cached on disk by content)."""
    p = loaded.pipeline
    merged = merged_pool_strategy(strategies)
    seg = dataclasses.replace(p.segmenter, scope=scope)
    fps = [p.adapter.fingerprint(u) for u in loaded.pool_uris]
    # the scoring code's module and version too: a pickle names the classes it holds
    key = _digest(
        [merged.to_dict(), seg.to_dict(), scope, fps, score_sources.__module__, __version__]
    )
    path = CACHE / f"{loaded.domain.name}-scoring-{key}.pkl"
    if cache and path.is_file():
        try:
            return pickle.loads(path.read_bytes())
        except (ImportError, AttributeError, pickle.UnpicklingError, EOFError):
            pass  # written by other code: score again
    res = score_sources(p.schema, p.adapter, loaded.pool_uris, seg, merged)
    if cache:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(pickle.dumps(res))
        tmp.replace(path)
    return res


def span_grid(loaded: ed.Loaded, scoring: Any) -> CandidateTable:
    """Every span of every track of the pool (the job's span length), no filter."""
    hz = loaded.pipeline.schema.sample_hz
    steps = round(loaded.domain.span_seconds * hz)
    table, _ = build_candidate_table(
        {sid: info.tracks for sid, info in scoring.sources.items()},
        {},
        how="mean",
        features=(),
        min_steps=1,
        span_steps=steps,
    )
    return table


def usable_ticks(
    domain: ed.Domain, table: CandidateTable, masks: Mapping[str, np.ndarray]
) -> np.ndarray:
    """Valid window ends whose whole window lies inside each span (cumulative-sum lookups)."""
    out = np.zeros(len(table), np.int64)
    csum = {
        sid: np.vstack([np.zeros((1, m.shape[1]), np.int64), np.cumsum(m, axis=0)])
        for sid, m in masks.items()
    }
    for i in range(len(table)):
        sid = table.source_ids[table.source[i]]
        c = csum[sid]
        lo = int(table.first[i]) + domain.history
        hi = int(table.last[i]) - domain.horizon + 1
        if hi > lo:
            e = int(table.entity[i])
            out[i] = c[hi, e] - c[lo, e]
    return out


def build_pool(
    loaded: ed.Loaded,
    strategies: Sequence[Strategy],
    track_strategies: Sequence[Strategy] = (),
    *,
    cache: bool = True,
) -> Pool:
    d = loaded.domain
    if loaded.sliced:  # tables carved by time: spans from their own extents, no SDK scoring
        scoring, track = _extents_only(loaded), None
    else:
        scoring = score_pool(loaded, strategies, cache=cache)
        track = None
        if track_strategies:
            track = score_pool(loaded, track_strategies, scope="track", cache=cache)
    win, masks = ed.windows(loaded, loaded.pool_uris, d.train_stride, tail_metrics=True)
    table = span_grid(loaded, scoring)
    return Pool(
        loaded, scoring, table, usable_ticks(d, table, masks), win, masks, track_scoring=track
    )


def _extents_only(loaded: ed.Loaded) -> Any:
    """A stand-in for a scoring result that holds only each pool table's track extents."""
    sources = {}
    for u in loaded.pool_uris:
        tab = loaded.tables[u]
        info = SimpleNamespace(tracks=_track_extents(tab.present, tab.entity_ids))
        sources[tab.source_id] = info
    return SimpleNamespace(sources=sources, segments=[])


# ---- track-scoped span features ---------------------------------------------------------


def track_features(pool: Pool, define: Mapping[str, str]) -> dict[str, np.ndarray]:
    """Each span's features over its own entity only: kuration's metrics on one entity's ticks.

    Spans of one source are evaluated together, entity by entity, as windows of the span
    length (the source padded with absent ticks so that the last span fits).
    """
    t = pool.table
    schema = pool.loaded.pipeline.schema
    metrics = {k: compile_metric(v, schema, name=k) for k, v in define.items()}
    out = {k: np.full(len(t), np.nan) for k in define}
    by_sid = {pool.loaded.tables[u].source_id: pool.loaded.tables[u] for u in pool.loaded.pool_uris}
    span = round(pool.loaded.domain.span_seconds * schema.sample_hz)
    for s_idx, sid in enumerate(t.source_ids):
        tab = by_sid[sid]
        rows = np.flatnonzero(t.source == s_idx)
        pad = span
        vals = {
            k: np.concatenate([v, np.full((pad, *v.shape[1:]), np.nan)])
            for k, v in tab.values.items()
        }
        present = np.concatenate([tab.present, np.zeros((pad, *tab.present.shape[1:]), bool)])
        for e in np.unique(t.entity[rows]):
            r = rows[t.entity[rows] == e]
            batch = WindowBatch(
                values={k: v[:, e : e + 1] for k, v in vals.items()},
                present=present[:, e : e + 1].copy(),
                entity_ids=(tab.entity_ids[e],),
                schema=tab.schema,
                starts=t.first[r],
                length=span,
                source_id=sid,
            )
            # a span shorter than the grid's (a track's end) must not read past its last tick
            batch.present[:] = present[:, e : e + 1]
            for k, m in metrics.items():
                out[k][r] = m.evaluate(batch)
    return out


# ---- admission orders -------------------------------------------------------------------


def _scene_order(
    pool: Pool, arm: Arm, strategy: Strategy, seed: int, budget_ticks: int
) -> np.ndarray:
    """Span rows in the SDK fill's admission order, the request raised until usable time suffices."""
    loaded, hz = pool.loaded, pool.loaded.pipeline.schema.sample_hz
    scoring = pool.track_scoring if arm.scope == "sdk-track" else pool.scoring
    segs = [s.copy() for s in scoring.segments]
    apply_strategy(segs, strategy, seed)
    by_source: dict[str, list[Segment]] = {}
    for s in segs:
        by_source.setdefault(s.source_id, []).append(s)
    group_of = None
    table, _ = build_candidate_table(
        {sid: info.tracks for sid, info in scoring.sources.items()},
        by_source,
        how=arm.clip_aggregate,
        features=(),
        min_steps=max(1, int(np.ceil(arm.min_track_seconds * hz))),
        span_steps=round(loaded.domain.span_seconds * hz),
        group_of=group_of,
        veto=arm.veto,
    )
    if strategy.method == "random":  # each span its own draw, as the hours path does
        draw_candidates(table, method_seed(strategy.seed, seed))
    index = {pool.table.ident(i): i for i in range(len(pool.table))}
    split_of = {sid: "train" for sid in table.source_ids}
    cap = None
    if arm.group_cap and strategy.group_cap:
        cap = float(strategy.group_cap.get("max_overshoot") or 1.5)
    request = budget_ticks / hz
    order = np.zeros(0, np.int64)
    for _ in range(12):
        fill = fill_budgets(table, split_of, {"train": request}, hz, max_group_overshoot=cap)
        adm = fill.admitted["train"]
        cand_rows = [index[c.ident()] for c in adm]
        order = np.array(cand_rows, np.int64)
        got = int(pool.usable[order].sum()) if order.size else 0
        if got >= budget_ticks or len(adm) >= int(np.isfinite(table.priority).sum()):
            break
        request *= max(1.1, budget_ticks / max(got, 1))
    return order


def _track_order(pool: Pool, strategy: Strategy, seed: int) -> np.ndarray:
    """Span rows by priority of the strategy's method over track-scoped span segments."""
    t = pool.table
    feats = pool.span_features or {}
    segs = []
    for i in range(len(t)):
        sid = f"{t.source_ids[t.source[i]]}/{t.entity_ids[t.source[i]][t.entity[i]]}"
        f = {k: float(feats[k][i]) for k in strategy.feature_names}
        segs.append(Segment(sid, int(t.first[i]), int(t.last[i]) + 1, f))
    rank_pool(segs, strategy, seed)
    pr = np.array([s.priority for s in segs])
    ok = np.flatnonzero(np.isfinite(pr))
    # ties by span position (the grid's row order): stable sort of -priority
    return ok[np.argsort(-pr[ok], kind="stable")]


def random_order(pool: Pool, seed: int) -> np.ndarray:
    """Every span in a uniform order drawn from ``seed``."""
    return np.random.default_rng([20291, seed]).permutation(len(pool.table))


def spread_order(pool: Pool, seed: int) -> np.ndarray:
    """Random spans, round-robin over tracks: one span of every track before a second of any.

    Spans of one track are near-duplicates (the same aircraft, minutes apart); spreading a
    small budget over more tracks gives a model more distinct examples.
    """
    order = random_order(pool, seed)
    t = pool.table
    track = t.source.astype(np.int64)[order] * 1_000_000 + t.entity.astype(np.int64)[order]
    rank = np.zeros(order.size, np.int64)
    seen: dict[int, int] = {}
    for i, k in enumerate(track.tolist()):
        rank[i] = seen.get(k, 0)
        seen[k] = rank[i] + 1
    return order[np.argsort(rank, kind="stable")]


def truncate(pool: Pool, order: np.ndarray, budget_ticks: int) -> np.ndarray:
    """The admitted prefix of ``order``: spans until their usable ticks reach the budget."""
    if order.size == 0:
        return order
    c = np.cumsum(pool.usable[order])
    k = int(np.searchsorted(c, budget_ticks)) + 1
    return order[: min(k, order.size)]


def select(pool: Pool, arm: Arm, seed: int, budget_h: float) -> np.ndarray:
    """Span rows the arm admits at ``budget_h`` usable hours with ``seed``."""
    hz = pool.loaded.pipeline.schema.sample_hz
    ticks = round(budget_h * 3600 * hz)
    if arm.strategy is None:
        return truncate(pool, random_order(pool, seed), ticks)
    if arm.scope == "guided":  # chosen once per size (evidence_guided), seed-independent
        assert pool.guided is not None, "evidence_guided.select_all first"
        return pool.guided[arm.name][budget_h]
    if arm.scope == "spread-random":  # every track's first drawn span, then every second...
        return truncate(pool, spread_order(pool, seed), ticks)
    st = load_strategy(dict(arm.strategy), pool.loaded.pipeline.schema)
    if arm.scope == "track":
        return truncate(pool, _track_order(pool, st, seed), ticks)
    if arm.scope == "track-random":  # uniform among the spans the strategy's filters pass
        passed = np.zeros(len(pool.table), bool)
        passed[_track_order(pool, st, 0)] = True
        order = random_order(pool, seed)
        return truncate(pool, order[passed[order]], ticks)
    if arm.scope == "dedup-first":  # random among the filters' passes, near duplicates last
        kept = np.zeros(len(pool.table), bool)
        kept[_track_order(pool, st, 0)] = True
        base = dataclasses.replace(st, filters=tuple(f for f in st.filters if not _is_dedup(f)))
        ok = np.zeros(len(pool.table), bool)
        ok[_track_order(pool, base, 0)] = True
        order = random_order(pool, seed)
        return truncate(
            pool, np.concatenate([order[kept[order]], order[ok[order] & ~kept[order]]]), ticks
        )
    if arm.scope == "tail-mix":
        return tail_mix(pool, _track_order(pool, st, 0), arm.share, seed, ticks)
    return truncate(pool, _scene_order(pool, arm, st, seed, ticks), ticks)


def _is_dedup(f: Mapping[str, Any]) -> bool:
    return f.get("filter") in ("dedup", "near_dedup")


def tail_mix(pool: Pool, ranked: np.ndarray, share: float, seed: int, ticks: int) -> np.ndarray:
    """Tail-seeking with a floor on the average: the top of ``ranked`` (span rows, best
    first) to ``share`` of the budget's usable ticks, the rest random among the other
    ranked spans (those the strategy's filters pass) in the seed's uniform order."""
    head = truncate(pool, ranked, round(share * ticks)) if share > 0 else ranked[:0]
    rest = np.zeros(len(pool.table), bool)
    rest[ranked] = True
    rest[head] = False
    order = random_order(pool, seed)
    return truncate(pool, np.concatenate([head, order[rest[order]]]), ticks)


def window_mask(pool: Pool, spans: np.ndarray) -> np.ndarray:
    """Pool windows lying wholly inside one of ``spans``."""
    t, w = pool.table, pool.windows
    src_of = {sid: i for i, sid in enumerate(w.source_ids)}
    keep = np.zeros(len(w), bool)
    key = {}
    for i in spans.tolist():
        sid = t.source_ids[t.source[i]]
        ent = str(t.entity_ids[t.source[i]][t.entity[i]])
        key.setdefault((src_of[sid], ent), []).append((int(t.first[i]), int(t.last[i])))
    if not key:
        return keep
    groups: dict[tuple[int, str], np.ndarray] = {}
    for j, k in enumerate(zip(w.source.tolist(), w.entity.tolist(), strict=True)):
        if k in key:
            groups.setdefault(k, []).append(j)  # type: ignore[arg-type]
    for k, idx in groups.items():
        ix = np.asarray(idx)
        for a, b in key[k]:
            keep[ix[(w.first[ix] >= a) & (w.last[ix] <= b)]] = True
    return keep
