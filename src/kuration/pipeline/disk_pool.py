"""The disk-backed pool runtime: a count selection over a pool larger than memory.

``Pipeline.options(pool="disk")`` (job key ``"pool": "disk"``) runs an
eligible count plan (:func:`disk_ineligible`) on this runtime instead of the
reference in-memory one; :meth:`kuration.Pipeline.explain` names the runtime
of each stage.  The runtime:

1. **score** -- reads, windows and scores one source at a time (metrics, then
   transforms) and writes its segments as :class:`SegmentBatch` record
   batches of at most ``batch_rows`` rows into one checkpointed partition per
   source (:class:`~kuration.pipeline.checkpoint.StageCheckpoint`); a
   partition whose key (run fingerprint, source URI and adapter fingerprint)
   matches a valid earlier commit is reused, not recomputed.  With a
   ``dedup`` filter each window's SHA-256 is computed here, from the table
   already in memory.
2. **index** -- loads the partitions into a DuckDB database file inside the
   run's checkpoint namespace, with ``memory_limit`` and a ``temp_directory``
   there, so sorts and window functions spill to disk.
3. **bin+select** -- filters, quantile-bin edges (exact order statistics,
   interpolated as :func:`numpy.quantile` does), joint-bin ranks and the
   stable ``(priority desc, source_id, start_idx)`` order run in SQL.  Exact
   dedup looks digests up in the index and compares a window that shares one
   byte for byte with the distinct windows of that digest seen before it (only
   those are stored in the index; one source is read at a time).
   Only the ``n`` selected rows return to Python.

The selection equals the in-memory path's for the same pool and seed (the
same segments, in the same order, with the same priorities and bins).
``uniform-bins`` draws its seeded shuffle and tie-break for the eligible rows
as numpy does (two float64 arrays of that length: 16 bytes a row); ``weighted``
reads its weighted feature columns of the eligible rows (8 bytes a row and
feature) and normalises them with the in-memory code, so floating-point sums
agree to the last bit.

Methods covered: ``top-k``, ``uniform-bins``, ``weighted``.  Not covered yet
(the plan stays on the reference runtime, and ``explain`` says why): other methods, tags and tag coverage, group caps, whole-pool
scorers and ``near_dedup``.
"""

from __future__ import annotations

import dataclasses
import math
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ..contracts.buffer import build_window
from ..contracts.schema import SchemaSpec
from ..contracts.segment import Segment, Segmenter
from ..errors import EmptyPoolError, KurationError, PipelineError
from ..metrics.transform_exec import TransformRunner
from ..selection.dedup import window_digest, window_payload
from ..selection.methods.base import nan_rows, normalize_columns, rank_nan_lowest
from ..selection.select import method_seed
from ..selection.strategy import Strategy
from ..sources.base import InputAdapter
from .checkpoint import PartitionCommit, StageCheckpoint
from .plan import PlanStage, StageTelemetry
from .segment_batch import SegmentBatch
from .strategy import resolve_uses, strategy_engine

__all__ = ["DISK_RUNTIME", "DiskSelection", "disk_ineligible", "plan_pool", "select_on_disk"]

#: The runtime name :meth:`Pipeline.explain` shows for stages this module runs.
DISK_RUNTIME = "disk-index (duckdb)"
_FILTERS = ("finite", "source", "predicate", "dedup")
_OPS = {"<": "<", "<=": "<=", ">": ">", ">=": ">=", "==": "=", "!=": "<>"}


def _q(con: Any, sql: str, params: Sequence[Any] | None = None) -> list[Any]:
    """Run one statement to completion and return its rows."""
    return list(con.execute(sql, params).fetchall() if params else con.execute(sql).fetchall())


def disk_ineligible(st: Strategy) -> str | None:
    """Why the count plan of ``st`` cannot run on the disk runtime, or None when it can."""
    if st.method not in ("top-k", "uniform-bins", "weighted"):
        return (
            f"method {st.method!r} has no disk-backed reducer (top-k, uniform-bins and weighted do)"
        )
    if st.tags or st.tag_coverage:
        return "tags and tag coverage are not disk-backed yet"
    if st.group_cap:
        return "a group cap is not disk-backed yet"
    if st.scorers:
        return "whole-pool scorers need the pool in memory"
    for f in st.filters:
        name = f.get("filter", "predicate")
        if name not in _FILTERS:
            return f"filter {name!r} is not disk-backed (finite, source, predicate, dedup are)"
    return None


#: the stages the disk runtime runs, and what each does there
_DISK_STAGES = {
    "read": "one source at a time",
    "segment": "windows of one source at a time",
    "features": "SegmentBatch partitions, one checkpointed Arrow IPC file per source",
    "transforms": "per source, inside scoring",
    "bin": "exact quantile edges from order statistics in DuckDB (spills to disk)",
    "select": "filters, joint-bin ranks and the stable top-n order in DuckDB",
}


def plan_pool(
    stages: Sequence[PlanStage], st: Strategy, mode: str, pool: str
) -> tuple[tuple[PlanStage, ...], list[str]]:
    """The planner's choice of runtime: with ``pool="disk"`` and an eligible count plan,
    the stages this runtime covers get :data:`DISK_RUNTIME` (and a ``runtime`` detail);
    otherwise the stages are unchanged and a warning says why the plan stays in memory."""
    if pool != "disk":
        return tuple(stages), []
    why = "an hours budget is not disk-backed yet" if mode != "count" else disk_ineligible(st)
    if why is not None:
        return tuple(stages), [f"pool='disk' requested, but {why}: the reference runtime runs it"]
    out = []
    for s in stages:
        if s.kind in _DISK_STAGES and not s.empty:
            detail = {**dict(s.detail), "runtime": _DISK_STAGES[s.kind]}
            traits = s.traits
            if s.kind == "features":  # one checkpointed partition per source
                traits = traits.model_copy(update={"checkpoint": "partition"})
            s = dataclasses.replace(s, runtime=DISK_RUNTIME, detail=detail, traits=traits)
        out.append(s)
    return tuple(out), []


@dataclass(frozen=True)
class DiskSelection:
    """A count selection made on the disk runtime.

    Attributes
    ----------
    strategy : Strategy
    n_requested, seed : int
    selected : tuple of Segment
        Best first, with features, priority and (with bin axes) bin set.
    n_pool : int
        Segments scored.
    n_eligible : int
        Segments with a finite priority.
    edges : dict of str to list of float
        Interior quantile-bin edges per axis.
    sources : dict
        ``total``, ``scored``, ``failed`` and ``short`` counts.
    errors : dict of str to str
        Skipped source URIs and why.
    checkpoint : dict
        ``root`` (None for a temporary one, removed), ``run`` (the run fingerprint), ``hits``, ``misses``, ``rejected``,
        ``bytes_read``, ``bytes_written``.
    telemetry : tuple of StageTelemetry
    """

    strategy: Strategy
    n_requested: int
    seed: int
    selected: tuple[Segment, ...]
    n_pool: int
    n_eligible: int
    edges: dict[str, list[float]]
    sources: dict[str, int]
    errors: dict[str, str] = field(default_factory=dict)
    checkpoint: dict[str, Any] = field(default_factory=dict)
    telemetry: tuple[StageTelemetry, ...] = ()

    @property
    def n_selected(self) -> int:
        return len(self.selected)

    @property
    def shortfall(self) -> int:
        return self.n_requested - self.n_selected

    def to_dict(self, segments: bool = True) -> dict[str, Any]:
        """JSON-ready summary (with the selected segments when ``segments``)."""
        d: dict[str, Any] = {
            "runtime": DISK_RUNTIME,
            "strategy": self.strategy.to_dict(),
            "n_requested": self.n_requested,
            "n_selected": self.n_selected,
            "seed": self.seed,
            "n_pool": self.n_pool,
            "n_eligible": self.n_eligible,
            "edges": self.edges,
            "sources": dict(self.sources),
            "errors": dict(self.errors),
            "checkpoint": dict(self.checkpoint),
            "telemetry": [t.to_dict() for t in self.telemetry],
        }
        if segments:
            d["selected"] = [s.to_dict() for s in self.selected]
        return d


# ---- stage 1: score into checkpointed partitions ------------------------------------------


def _wants_digests(st: Strategy) -> bool:
    return any(f.get("filter") == "dedup" for f in st.filters)


def _score_source(
    adapter: InputAdapter,
    uri: str,
    segmenter: Segmenter,
    st: Strategy,
    schema: SchemaSpec,
    runner: TransformRunner,
) -> tuple[list[Segment], list[bytes] | None, dict[str, Any]]:
    """One source read, windowed and scored; the digests of its windows when dedup needs them."""
    engine = strategy_engine(st, schema)
    table = adapter.read_table(uri)
    segs = segmenter.segments(table.source_id, table.present)
    if segs:
        engine.score_segments(table, segs)
        if runner.uses:
            try:
                runner.run(table, segs)
            except BaseException:
                runner.reset()
                raise
    digests = None
    if _wants_digests(st):
        digests = [window_digest(build_window(table, s.start_idx, s.end_idx)) for s in segs]
    meta = {"source_id": table.source_id, "uri": uri, "n_steps": table.n_steps, "n": len(segs)}
    return segs, digests, meta


@dataclass
class _Scored:
    commits: dict[str, PartitionCommit] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    batch_rows: int = 0


def _score_stage(
    ck: StageCheckpoint,
    adapter: InputAdapter,
    uris: Sequence[str],
    segmenter: Segmenter,
    st: Strategy,
    schema: SchemaSpec,
    *,
    batch_rows: int,
    on_error: str,
    durable: bool,
) -> _Scored:
    """Every source into its own partition (reused when its key matches a valid commit)."""
    out = _Scored(batch_rows=batch_rows)
    features = list(st.feature_names)
    arrow = SegmentBatch.arrow_schema(features)
    transforms, _ = resolve_uses(st, schema)
    runner = TransformRunner(transforms)
    keys = {}
    for uri in sorted(uris):
        key = ck.partition_key(uri, {"uri": uri, "fingerprint": adapter.fingerprint(uri)})
        hit = ck.lookup(uri, key)
        if hit is not None:
            out.commits[uri], keys[uri] = hit, key
            continue
        try:
            segs, dig, meta = _score_source(adapter, uri, segmenter, st, schema, runner)
        except Exception as exc:
            if on_error == "raise":
                raise
            out.errors[uri] = msg = f"{type(exc).__name__}: {exc}"
            print(f"kuration: skipped source {uri}: {msg}", file=sys.stderr)
            continue
        batches = (b.batch for b in SegmentBatch.split(segs, features, batch_rows, digests=dig))
        out.commits[uri] = ck.write(uri, key, arrow, batches, meta, durable=durable)
        keys[uri] = key
    ck.commit_stage(keys)
    seen: dict[str, str] = {}
    for uri, c in sorted(out.commits.items()):
        sid = c.meta["source_id"]
        if sid in seen:
            raise KurationError(f"two sources share the id {sid!r} ({seen[sid]}, {uri})")
        seen[sid] = uri
    return out


# ---- stage 2: the DuckDB index ------------------------------------------------------------


def _connect(ns: Path, memory_limit: str) -> Any:
    import duckdb

    db = ns / "index.duckdb"
    for p in (db, ns / "index.duckdb.wal"):
        p.unlink(missing_ok=True)  # derived from the partitions: always rebuilt
    con = duckdb.connect(str(db))
    tmp = ns / "duckdb.tmp"
    tmp.mkdir(exist_ok=True)
    _q(con, f"SET memory_limit = '{memory_limit}'")
    _q(con, f"SET temp_directory = '{tmp.as_posix()}'")
    _q(con, "SET threads = 1")
    _q(con, "SET preserve_insertion_order = false")
    return con


def _load(
    con: Any, ck: StageCheckpoint, commits: Mapping[str, PartitionCommit], n_feat: int
) -> int:
    """Stream every partition's batches (verified) into one DuckDB table, in one statement."""
    names = ["source_id", "start_idx", "end_idx", "digest", *(f"f{j}" for j in range(n_feat))]
    schema = pa.schema(
        [
            pa.field("source_id", pa.string()),
            pa.field("start_idx", pa.int64()),
            pa.field("end_idx", pa.int64()),
            pa.field("digest", pa.binary()),
            *(pa.field(f"f{j}", pa.float64()) for j in range(n_feat)),
        ]
    )
    rows = [0]

    def batches() -> Any:
        for _uri, c in sorted(commits.items()):
            for b in ck.read(c):
                cols = [b.column("source_id"), b.column("start_idx"), b.column("end_idx")]
                cols += [b.column("digest").cast(pa.binary())]
                cols += [b.column(5 + j) for j in range(n_feat)]  # the f:<name> columns
                rows[0] += b.num_rows
                yield pa.RecordBatch.from_arrays(cols, names=names)

    reader = pa.RecordBatchReader.from_batches(schema, batches())
    con.register("_parts", reader)
    _q(
        con,
        "CREATE TABLE pool AS SELECT *, (ROW_NUMBER() OVER (ORDER BY source_id, start_idx) - 1) "
        "AS rn, true AS keep FROM _parts",
    )
    con.unregister("_parts")
    return rows[0]


# ---- stage 3: filters, bins and the ranking in SQL ---------------------------------------


def _col(st: Strategy, name: str) -> str:
    return f"f{list(st.feature_names).index(name)}"


def _finite(cols: Sequence[str]) -> str:
    return " AND ".join(f"isfinite({c})" for c in cols) or "true"


def _cond(c: str, op: str, t: Sequence[float]) -> str:
    """A predicate on column ``c`` with thresholds ``t``; a non-finite value fails it."""
    if op == "between":
        inner = f"{c} >= {t[0]!r} AND {c} <= {t[1]!r}"
    elif op == "outside":
        inner = f"{c} < {t[0]!r} OR {c} > {t[1]!r}"
    else:
        inner = f"{c} {_OPS[op]} {t[0]!r}"
    return f"isfinite({c}) AND ({inner})"


def _filter(con: Any, st: Strategy, entry: Mapping[str, Any], read: Any) -> None:
    name = entry.get("filter", "predicate")
    if name == "finite":
        names = entry.get("features") or list(st.feature_names)
        _q(con, f"UPDATE pool SET keep = keep AND {_finite([_col(st, n) for n in names])}")
    elif name == "source":
        rx = re.compile(entry["regex"])
        ids = [r[0] for r in _q(con, "SELECT DISTINCT source_id FROM pool")]
        hit = pa.table(
            {"sid": [s for s in ids if (rx.search(s) is not None) != bool(entry.get("exclude"))]}
        )
        con.register("_ok", hit)
        _q(con, "UPDATE pool SET keep = keep AND source_id IN (SELECT sid FROM _ok)")
        con.unregister("_ok")
    elif name == "predicate":
        c, op = _col(st, entry["feature"]), entry["op"]
        if op == "finite":
            cond = f"isfinite({c})"
        elif "quantile" in entry:  # of the whole pool's finite values, as in memory
            q = entry["quantile"]
            t = _quantiles(con, c, "true", q if isinstance(q, list) else [q])
            cond = "false" if t is None else _cond(c, op, [float(x) for x in t])
        else:
            v = entry["value"]
            cond = _cond(c, op, [float(x) for x in (v if isinstance(v, list) else [v])])
        _q(con, f"UPDATE pool SET keep = keep AND ({cond})")
    else:
        _dedup(con, read)


def _dedup(con: Any, read: Any) -> int:
    """Exact dedup among kept rows: digests looked up in the index; a window whose digest
    is shared is compared byte for byte with the distinct payloads its group has shown so
    far (kept in the index: one per distinct window, not one per row), sources read one
    at a time in canonical order."""
    _q(
        con,
        "CREATE TEMP TABLE shared AS SELECT rn, source_id, start_idx, end_idx, digest FROM pool "
        "WHERE keep AND digest IN (SELECT digest FROM pool WHERE keep GROUP BY digest "
        "HAVING count(*) > 1)",
    )
    _q(con, "CREATE TEMP TABLE reps (digest BLOB, payload BLOB)")
    _q(con, "CREATE TEMP TABLE drops (rn BIGINT)")
    for (sid,) in _q(con, "SELECT DISTINCT source_id FROM shared ORDER BY 1"):
        rows = _q(
            con,
            "SELECT rn, start_idx, end_idx, digest FROM shared WHERE source_id = ? ORDER BY rn",
            [sid],
        )
        table = read(sid)
        known = _q(
            con,
            "SELECT digest, payload FROM reps WHERE digest IN "
            "(SELECT digest FROM shared WHERE source_id = ?)",
            [sid],
        )
        seen: dict[bytes, list[bytes]] = {}
        for d, p in known:
            seen.setdefault(bytes(d), []).append(bytes(p))
        drop, new_d, new_p = [], [], []
        for rn, start, end, d in rows:
            payload = window_payload(build_window(table, start, end))
            group = seen.setdefault(bytes(d), [])
            if payload in group:
                drop.append(rn)
            else:
                group.append(payload)
                new_d.append(bytes(d))
                new_p.append(payload)
        con.register(
            "_new",
            pa.table(
                {"digest": pa.array(new_d, pa.binary()), "payload": pa.array(new_p, pa.binary())}
            ),
        )
        _q(con, "INSERT INTO reps SELECT * FROM _new")
        con.unregister("_new")
        con.register("_drop", pa.table({"rn": pa.array(drop, pa.int64())}))
        _q(con, "INSERT INTO drops SELECT * FROM _drop")
        con.unregister("_drop")
    n = _q(con, "SELECT count(*) FROM drops")[0][0]
    _q(con, "UPDATE pool SET keep = false WHERE rn IN (SELECT rn FROM drops)")
    for t in ("shared", "reps", "drops"):
        _q(con, f"DROP TABLE {t}")
    return int(n)


def _quantiles(con: Any, col: str, where: str, qs: Sequence[float]) -> np.ndarray | None:
    """:func:`numpy.quantile` (linear) of the finite values of ``col`` in the rows
    ``where``, from the same two order statistics numpy interpolates between; None when
    there is no such value."""
    cond = f"({where}) AND isfinite({col})"
    n = int(_q(con, f"SELECT count(*) FROM pool WHERE {cond}")[0][0])
    if n == 0:
        return None
    out = np.empty(len(qs))
    for i, q in enumerate(qs):
        vi = (n - 1) * float(q)
        lo = math.floor(vi)
        ab = _q(con, f"SELECT {col} FROM pool WHERE {cond} ORDER BY {col} LIMIT 2 OFFSET {lo}")
        pair = np.array([ab[0][0], ab[min(1, len(ab) - 1)][0]], dtype=np.float64)
        out[i] = np.quantile(pair, vi - lo)
    return out


def _edges(con: Any, col: str, n_bins: int) -> np.ndarray:
    """Interior equal-frequency edges of the kept finite values of ``col``, as
    :func:`kuration.selection.binning.quantile_bins` computes them."""
    qs = np.linspace(0.0, 1.0, int(n_bins) + 1)[1:-1]
    got = _quantiles(con, col, "keep", qs.tolist()) if qs.size else None
    return np.zeros(0) if got is None else np.unique(got)


def _bins(con: Any, st: Strategy) -> dict[str, list[float]]:
    counts = [st.n_bins] * len(st.bin_axes) if isinstance(st.n_bins, int) else list(st.n_bins)
    edges: dict[str, list[float]] = {}
    for j, (ax, nb) in enumerate(zip(st.bin_axes, counts, strict=True)):
        c = _col(st, ax)
        e = _edges(con, c, int(nb))
        edges[ax] = [float(x) for x in e]
        below = " + ".join(f"({c} > {float(x)!r})::BIGINT" for x in e) or "0"
        _q(con, f"ALTER TABLE pool ADD COLUMN b{j} BIGINT")
        _q(con, f"UPDATE pool SET b{j} = CASE WHEN isfinite({c}) THEN {below} ELSE -1 END")
    return edges


def _lowest(con: Any, bad: str) -> None:
    """nan_policy 'lowest': the ``bad`` kept rows one below the lowest good priority."""
    low = _q(con, f"SELECT min(prio) FROM pool WHERE keep AND NOT ({bad})")[0][0]
    floor = (low if low is not None else 0.0) - 1.0
    _q(con, f"UPDATE pool SET prio = {floor!r} WHERE keep AND ({bad})")


def _kept_columns(con: Any, cols: Sequence[str]) -> np.ndarray:
    """The projected columns ``cols`` of the kept rows in canonical order, shape (M, F)."""
    got = con.execute(f"SELECT {', '.join(cols)} FROM pool WHERE keep ORDER BY rn").fetchnumpy()
    return np.column_stack([np.asarray(got[c], dtype=np.float64) for c in cols])


def _rank_uniform(con: Any, st: Strategy, seed: int, m: int) -> str:
    """uniform-bins: seeded draws as numpy makes them, ranks inside joint bins in SQL."""
    rng = np.random.default_rng(method_seed(st.seed, seed))
    key = rng.permutation(m).astype(np.float64)
    within = st.params.get("within")
    if within is not None:
        x = _kept_columns(con, [_col(st, within["by"])])[:, 0]
        x = -x if within.get("descending", True) else x
        x = np.where(np.isfinite(x), x, np.inf)
        rank = np.empty(m)
        rank[np.lexsort((key, x))] = np.arange(m)
        key = rank
    tb = rng.random(m)
    con.register("_rng", pa.table({"k": np.arange(m), "key": key, "tb": tb}))
    axes = ", ".join(f"b{j}" for j in range(len(st.bin_axes)))
    _q(
        con,
        "CREATE TEMP TABLE ranked AS SELECT p.rn, -((ROW_NUMBER() OVER "
        f"(PARTITION BY {axes} ORDER BY r.key) - 1) + r.tb) AS pr FROM "
        "(SELECT *, ROW_NUMBER() OVER (ORDER BY rn) - 1 AS k FROM pool WHERE keep) p "
        "JOIN _rng r USING (k)",
    )
    con.unregister("_rng")
    _q(con, "UPDATE pool SET prio = ranked.pr FROM ranked WHERE pool.rn = ranked.rn")
    _q(con, "DROP TABLE ranked")
    return " OR ".join(f"b{j} < 0" for j in range(len(st.bin_axes)))


def _rank_weighted(con: Any, st: Strategy, m: int) -> None:
    """weighted: the weighted feature columns of the kept rows (M x F floats) normalised
    and combined by the same numpy code as in memory, written back by canonical row."""
    names = list(st.params["weights"])
    w = np.array([float(st.params["weights"][n]) for n in names])
    raw = _kept_columns(con, [_col(st, n) for n in names])
    bad = nan_rows(raw)
    x = normalize_columns(raw, st.params.get("normalize", "zscore"), fit=~bad)
    prio = rank_nan_lowest(np.where(bad, 0.0, np.nan_to_num(x, nan=0.0) @ w), bad, st.nan_policy)
    con.register("_w", pa.table({"k": np.arange(m), "pr": prio}))
    _q(
        con,
        "UPDATE pool SET prio = w.pr FROM (SELECT rn, ROW_NUMBER() OVER (ORDER BY rn) - 1 AS k "
        "FROM pool WHERE keep) p JOIN _w w USING (k) WHERE pool.rn = p.rn",
    )
    con.unregister("_w")


def _rank(con: Any, st: Strategy, seed: int) -> None:
    """The method's priority of every kept row (``-inf`` for the rest), as in memory."""
    _q(con, "ALTER TABLE pool ADD COLUMN prio DOUBLE")
    _q(con, "UPDATE pool SET prio = -'inf'::DOUBLE")
    m = int(_q(con, "SELECT count(*) FROM pool WHERE keep")[0][0])
    if m == 0:
        return
    if st.method == "weighted":
        _rank_weighted(con, st, m)  # nan_policy applied as in memory
        return
    if st.method == "top-k":
        c = _col(st, st.params["by"])
        v = c if st.params.get("descending", True) else f"-{c}"
        bad = f"NOT isfinite({c})"
        _q(con, f"UPDATE pool SET prio = {v} WHERE keep AND NOT ({bad})")
    else:
        bad = _rank_uniform(con, st, seed, m)
    if st.nan_policy == "exclude":
        _q(con, f"UPDATE pool SET prio = -'inf'::DOUBLE WHERE keep AND ({bad})")
    else:
        _lowest(con, bad)


def _selected(con: Any, st: Strategy, n: int) -> list[Segment]:
    names = list(st.feature_names)
    axes = [f"b{j}" for j in range(len(st.bin_axes))]
    cols = ", ".join(
        ["source_id", "start_idx", "end_idx", "prio", *axes, *(f"f{j}" for j in range(len(names)))]
    )
    rows = _q(
        con,
        f"SELECT {cols} FROM pool WHERE prio > -'inf'::DOUBLE "
        f"ORDER BY prio DESC, source_id, start_idx LIMIT {int(n)}",
    )
    out = []
    k = len(axes)
    for r in rows:
        feats = {
            name: float("nan") if v is None else float(v)
            for name, v in zip(names, r[4 + k :], strict=True)
        }
        b = tuple(int(x) for x in r[4 : 4 + k]) if k else None
        out.append(Segment(r[0], int(r[1]), int(r[2]), feats, b, {}, None, float(r[3])))
    return out


# ---- the runtime ---------------------------------------------------------------------------


def select_on_disk(
    schema: SchemaSpec,
    adapter: InputAdapter,
    sources: Sequence[str],
    segmenter: Segmenter,
    strategy: Strategy,
    n: int,
    *,
    seed: int = 0,
    on_error: str = "skip",
    checkpoint_dir: str | Path | None = None,
    batch_rows: int = 65536,
    memory_limit: str = "256MB",
    durable: bool = True,
    run_key: Mapping[str, Any] | None = None,
) -> DiskSelection:
    """Select ``n`` segments on the disk runtime (see the module docs).

    Parameters
    ----------
    schema, adapter, sources, segmenter, strategy, n, seed, on_error
        As for :func:`kuration.curate`.
    checkpoint_dir : path, optional
        Checkpoint root; a run reuses the valid partitions of an earlier run with
        the same run key.  None: a temporary directory, removed afterwards.
    batch_rows : int
        Rows per :class:`SegmentBatch` (bounds one Arrow batch).
    memory_limit : str
        DuckDB's ``memory_limit`` (it spills beyond it).
    durable : bool
        fsync checkpoint files before publishing their commits.
    run_key : mapping, optional
        Extra run identity (the physical plan); the strategy, schema, adapter,
        segmenter and component fingerprints are always part of it.

    Raises
    ------
    PipelineError
        The strategy is not eligible (:func:`disk_ineligible`), or bad ``n``/``on_error``.
    EmptyPoolError
        No source produced a segment.
    CheckpointError
        A partition fails its checksum when the stage commit is published.
    KurationError
        With ``on_error="raise"``, the first source error; two sources sharing an id.
    """
    why = disk_ineligible(strategy)
    if why is not None:
        raise PipelineError(f"the disk pool cannot run this plan: {why}", step="select")
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise PipelineError(f"n must be an integer >= 0, got {n!r}", step="select")
    if on_error not in ("skip", "raise"):
        raise PipelineError(f"on_error must be 'skip' or 'raise', got {on_error!r}", step="score")
    if not re.fullmatch(r"\d+(\.\d+)?\s*[KMGT]i?B", str(memory_limit)):
        raise PipelineError(f"memory_limit must look like '256MB', got {memory_limit!r}")
    from .._version import __version__
    from ..core.plugins import run_code, used_names

    key = {
        "format": "kuration-disk-pool/1",
        "strategy": strategy.to_dict(),
        "schema": schema.to_dict(),
        "adapter": adapter.to_dict(),
        "segmenter": segmenter.to_dict(),
        "components": {
            "kuration": __version__,
            **run_code(used_names(strategy.to_dict(), adapter.name, "none")),
        },
        "batch_rows": batch_rows,
        **dict(run_key or {}),
    }
    tmp = None if checkpoint_dir is not None else tempfile.mkdtemp(prefix="kuration-pool-")
    root = Path(checkpoint_dir if checkpoint_dir is not None else tmp)  # type: ignore[arg-type]
    try:
        res = _run(
            schema,
            adapter,
            sources,
            segmenter,
            strategy,
            n,
            seed,
            on_error,
            root,
            key,
            batch_rows,
            memory_limit,
            durable,
        )
        if tmp is not None:  # removed below: nothing to point at
            res = dataclasses.replace(res, checkpoint={**res.checkpoint, "root": None})
        return res
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _run(
    schema: SchemaSpec,
    adapter: InputAdapter,
    sources: Sequence[str],
    segmenter: Segmenter,
    st: Strategy,
    n: int,
    seed: int,
    on_error: str,
    root: Path,
    key: Mapping[str, Any],
    batch_rows: int,
    memory_limit: str,
    durable: bool,
) -> DiskSelection:
    t0 = time.perf_counter()
    ck = StageCheckpoint(root, key, "score")
    scored = _score_stage(
        ck,
        adapter,
        [str(u) for u in sources],
        segmenter,
        st,
        schema,
        batch_rows=batch_rows,
        on_error=on_error,
        durable=durable,
    )
    n_pool = sum(int(c.rows) for c in scored.commits.values())
    t1 = time.perf_counter()
    if n_pool == 0:
        raise EmptyPoolError(
            f"no segments: all {len(sources)} sources failed, were shorter than one window "
            "or had no entity in any window",
            errors=dict(scored.errors),
        )
    con = _connect(ck.dir.parent, memory_limit)
    try:
        _load(con, ck, scored.commits, len(st.feature_names))
        t2 = time.perf_counter()
        uris = {c.meta["source_id"]: c.meta["uri"] for c in scored.commits.values()}
        for entry in st.filters:
            _filter(con, st, entry, lambda sid: adapter.read_table(uris[sid]))
        edges = _bins(con, st) if st.bin_axes else {}
        _rank(con, st, seed)
        eligible = int(_q(con, "SELECT count(*) FROM pool WHERE prio > -'inf'::DOUBLE")[0][0])
        selected = _selected(con, st, n)
    finally:
        con.close()
    t3 = time.perf_counter()
    scored_n = sum(1 for c in scored.commits.values() if c.rows)
    tele = (
        StageTelemetry(
            "read+segment+features",
            t1 - t0,
            rows_in=len(sources),
            rows_out=n_pool,
            partitions=len(scored.commits),
            bytes=ck.bytes_written + ck.bytes_read,
            checkpoint_hits=ck.hits,
            checkpoint_misses=ck.misses,
            batch_rows=batch_rows,
        ),
        StageTelemetry(
            "index", t2 - t1, rows_in=n_pool, rows_out=n_pool, partitions=len(scored.commits)
        ),
        StageTelemetry("bin+select", t3 - t2, rows_in=n_pool, rows_out=len(selected)),
    )
    return DiskSelection(
        strategy=st,
        n_requested=n,
        seed=seed,
        selected=tuple(selected),
        n_pool=n_pool,
        n_eligible=eligible,
        edges=edges,
        sources={
            "total": len(sources),
            "scored": scored_n,
            "failed": len(scored.errors),
            "short": len(scored.commits) - scored_n,
        },
        errors=dict(scored.errors),
        checkpoint={
            "root": str(root),
            "run": ck.run_fingerprint,
            "hits": ck.hits,
            "misses": ck.misses,
            "rejected": ck.rejected,
            "bytes_read": ck.bytes_read,
            "bytes_written": ck.bytes_written,
        },
        telemetry=tele,
    )
