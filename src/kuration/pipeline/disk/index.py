"""The DuckDB index of the disk-backed pool (:mod:`kuration.pipeline.disk.pool`).

One table ``pool`` holds every scored segment: ``source_id``, ``entity`` (the
tagged id of a track-scoped window's entity, NULL for a scene window), ``start_idx``,
``end_idx``, ``digest``, one ``f<j>`` column per projected feature (in the
strategy's feature order), the canonical row number ``rn`` and ``keep``
(passes the filters so far); binning adds ``b<j>`` per axis and ranking
``prio``.  Each function reproduces one step of the in-memory selection
(:func:`kuration.selection.select.rank_pool`) in SQL, so the selected rows and
their priorities are the same.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ...contracts.buffer import build_window
from ...contracts.segment import Segment
from ...errors import DatasetIntegrityError
from ...selection.dedup import window_payload
from ...selection.draws import seeded_uniform, segment_key
from ...selection.methods.base import nan_rows, normalize_columns, rank_nan_lowest
from ...selection.select import method_seed
from ...selection.strategy import Strategy
from .checkpoint import PartitionCommit, StageCheckpoint

__all__ = [
    "apply_filter",
    "bin_pool",
    "cap_groups",
    "connect",
    "load_partitions",
    "n_eligible",
    "rank_pool_sql",
    "top_rows",
]

#: rows gathered from the partitions into each batch the index load hands DuckDB
_LOAD_ROWS = 4096
_OPS = {"<": "<", "<=": "<=", ">": ">", ">=": ">=", "==": "=", "!=": "<>"}


def _q(con: Any, sql: str, params: Sequence[Any] | None = None) -> list[Any]:
    """Run one statement to completion and return its rows."""
    return list(con.execute(sql, params).fetchall() if params else con.execute(sql).fetchall())


# ---- loading ------------------------------------------------------------


def connect(ns: Path, memory_limit: str, *, fresh: bool = True) -> Any:
    """The index database of namespace ``ns``: a new one (``fresh``, any earlier file
    removed), or the one an earlier connection of this run built and closed."""
    import duckdb

    db = ns / "index.duckdb"
    for p in (db, ns / "index.duckdb.wal") if fresh else ():
        p.unlink(missing_ok=True)  # derived from the partitions: always rebuilt
    con = duckdb.connect(str(db))
    tmp = ns / "duckdb.tmp"
    tmp.mkdir(exist_ok=True)
    _q(con, f"SET memory_limit = '{memory_limit}'")
    _q(con, f"SET temp_directory = '{tmp.as_posix()}'")
    _q(con, "SET threads = 1")
    _q(con, "SET preserve_insertion_order = false")
    return con


def load_partitions(
    con: Any, ck: StageCheckpoint, commits: Mapping[str, PartitionCommit], n_feat: int
) -> int:
    """Stream every partition's batches (verified) into one DuckDB table, in one statement.

    Partitions stream in source id order and each holds its source's segments in
    canonical order (``start_idx``; ``entity`` then ``start_idx`` for track-scoped
    windows), so the canonical row number ``rn`` (sources by id, then that order) is
    counted here as the rows go by: no window over the whole pool is sorted (its memory
    grew with the pool, up to the index's ``memory_limit``).

    Raises
    ------
    DatasetIntegrityError
        A partition's file fails its SHA-256, or its rows are not in canonical order.
    """
    names = ["source_id", "entity", "start_idx", "end_idx", "digest"]
    names += [*(f"f{j}" for j in range(n_feat)), "rn", "keep"]
    schema = pa.schema(
        [
            pa.field("source_id", pa.string()),
            pa.field("entity", pa.string()),
            pa.field("start_idx", pa.int64()),
            pa.field("end_idx", pa.int64()),
            pa.field("digest", pa.binary()),
            *(pa.field(f"f{j}", pa.float64()) for j in range(n_feat)),
            pa.field("rn", pa.int64()),
            pa.field("keep", pa.bool_()),
        ]
    )
    rows = [0]
    failed: list[BaseException] = []  # what stopped the stream (DuckDB wraps it)

    def batches() -> Any:
        try:
            yield from numbered()
        except BaseException as exc:  # a Ctrl-C too: DuckDB would only quote it
            failed.append(exc)
            raise

    def numbered() -> Any:
        parts: list[pa.RecordBatch] = []
        held = 0
        for c in sorted(commits.values(), key=lambda c: c.meta["source_id"]):
            last: tuple[str, int] = ("", -(2**63))
            for b in ck.read(c):
                ent = b.column("entity").fill_null("").to_pylist()
                start = b.column("start_idx").to_numpy().tolist()
                keys = [last, *zip(ent, start, strict=True)]
                if any(k1 < k0 for k0, k1 in itertools.pairwise(keys)):
                    raise DatasetIntegrityError(
                        f"checkpoint {ck.stage}/{c.name}: rows out of start_idx order "
                        "(canonical: by entity, then start_idx)"
                    )
                last = keys[-1]
                parts.append(b)
                held += b.num_rows
                if held >= _LOAD_ROWS:  # a few large batches: DuckDB pays per batch
                    yield joined(parts)
                    parts, held = [], 0
        if parts:
            yield joined(parts)

    def joined(parts: list[pa.RecordBatch]) -> pa.RecordBatch:
        t = pa.Table.from_batches(parts).combine_chunks()
        n = t.num_rows
        cols = [t.column(c) for c in ("source_id", "entity", "start_idx", "end_idx")]
        cols += [t.column("digest").cast(pa.binary())]
        cols += [t.column(5 + j) for j in range(n_feat)]  # the f:<name> columns
        cols += [pa.array(np.arange(rows[0], rows[0] + n, dtype=np.int64))]
        cols += [pa.array(np.ones(n, bool))]
        rows[0] += n
        return pa.Table.from_arrays(cols, names=names).combine_chunks().to_batches()[0]

    reader = pa.RecordBatchReader.from_batches(schema, batches())
    con.register("_parts", reader)
    try:
        _q(con, "CREATE TABLE pool AS SELECT * FROM _parts")
    except Exception as exc:
        if failed:
            raise failed[0] from exc
        raise
    finally:
        con.unregister("_parts")
    return rows[0]


# ---- filters, bins and the ranking ---------------------------------------


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


def apply_filter(con: Any, st: Strategy, entry: Mapping[str, Any], read: Any) -> None:
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
        exact_dedup(con, read)


def exact_dedup(con: Any, read: Any) -> int:
    """Exact dedup among kept rows: digests looked up in the index; a window whose digest
    is shared is compared byte for byte with the distinct payloads its group has shown so
    far (kept in the index: one per distinct window, not one per row), sources read one
    at a time in canonical order."""
    _q(
        con,
        "CREATE TEMP TABLE shared AS SELECT rn, source_id, entity, start_idx, end_idx, digest "
        "FROM pool "
        "WHERE keep AND digest IN (SELECT digest FROM pool WHERE keep GROUP BY digest "
        "HAVING count(*) > 1)",
    )
    _q(con, "CREATE TEMP TABLE reps (digest BLOB, payload BLOB)")
    _q(con, "CREATE TEMP TABLE drops (rn BIGINT)")
    for (sid,) in _q(con, "SELECT DISTINCT source_id FROM shared ORDER BY 1"):
        rows = _q(
            con,
            "SELECT rn, start_idx, end_idx, digest, entity FROM shared WHERE source_id = ? "
            "ORDER BY rn",
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
        for rn, start, end, d, ent in rows:
            payload = window_payload(build_window(table, start, end, entity=ent))
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


def bin_pool(con: Any, st: Strategy) -> dict[str, list[float]]:
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


def _rank_random(con: Any, st: Strategy, seed: int, m: int) -> None:
    """random: each kept row's seeded draw, keyed by its stable id as in memory."""
    got = con.execute(
        "SELECT source_id, entity, start_idx FROM pool WHERE keep ORDER BY rn"
    ).fetchall()
    keys = (segment_key(s, e, a) for s, e, a in got)
    prio = seeded_uniform(method_seed(st.seed, seed), keys)
    con.register("_w", pa.table({"k": np.arange(m), "pr": prio}))
    _q(
        con,
        "UPDATE pool SET prio = w.pr FROM (SELECT rn, ROW_NUMBER() OVER (ORDER BY rn) - 1 AS k "
        "FROM pool WHERE keep) p JOIN _w w USING (k) WHERE pool.rn = p.rn",
    )
    con.unregister("_w")


def rank_pool_sql(con: Any, st: Strategy, seed: int) -> None:
    """The method's priority of every kept row (``-inf`` for the rest), as in memory."""
    _q(con, "ALTER TABLE pool ADD COLUMN prio DOUBLE")
    _q(con, "UPDATE pool SET prio = -'inf'::DOUBLE")
    m = int(_q(con, "SELECT count(*) FROM pool WHERE keep")[0][0])
    if m == 0:
        return
    if st.method == "weighted":
        _rank_weighted(con, st, m)  # nan_policy applied as in memory
        return
    if st.method == "random":
        _rank_random(con, st, seed, m)
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


def cap_groups(
    con: Any, st: Strategy, n: int, group_of: Mapping[str, str]
) -> tuple[int, dict[str, Any]]:
    """The group cap of the count path (:func:`~kuration.selection.constraints.constrained_select`):
    each row's group in a column ``grp``, and the cap
    (:func:`kuration.pipeline.disk.tags.select_with_floors` selects under it).

    Parameters
    ----------
    group_of : mapping of source id to group label
        Every source id in the pool.

    Returns
    -------
    cap : int
        ``ceil(max_overshoot * n / G)`` over the G groups of eligible rows (0 without any).
    groups : dict
        Per group (sorted by name): ``eligible`` rows.
    """
    con.register("_g", pa.table({"sid": list(group_of), "grp": list(group_of.values())}))
    _q(con, "ALTER TABLE pool ADD COLUMN grp VARCHAR")
    _q(con, "UPDATE pool SET grp = _g.grp FROM _g WHERE pool.source_id = _g.sid")
    con.unregister("_g")
    rows = _q(con, "SELECT grp, count(*) FROM pool WHERE prio > -'inf'::DOUBLE GROUP BY grp")
    eligible = {str(g): int(c) for g, c in sorted(rows)}
    assert st.group_cap is not None  # called only under a group cap
    over = float(st.group_cap["max_overshoot"])
    cap = math.ceil(over * n / len(eligible)) if eligible else 0
    return cap, eligible


def top_rows(
    con: Any,
    st: Strategy,
    n: int,
    where: str | None = None,
    label_sets: Mapping[str, Sequence[str]] | None = None,
) -> list[Segment]:
    """The ``n`` eligible rows of highest priority (ties by canonical row) that also meet
    ``where`` (``sel``, the marked selection); with ``label_sets``,
    each segment's tags from the ``t<k>`` label columns."""
    names = list(st.feature_names)
    axes = [f"b{j}" for j in range(len(st.bin_axes))]
    tags = list(label_sets or {})
    cols = ", ".join(
        [
            "source_id",
            "start_idx",
            "end_idx",
            "prio",
            "entity",
            *axes,
            *(f"f{j}" for j in range(len(names))),
            *(f"t{k}" for k in range(len(tags))),
        ]
    )
    rows = _q(
        con,
        f"SELECT {cols} FROM pool WHERE prio > -'inf'::DOUBLE AND ({where or 'true'}) "
        f"ORDER BY prio DESC, rn LIMIT {int(n)}",
    )
    out = []
    k, f = len(axes), len(names)
    for r in rows:
        feats = {
            name: float("nan") if v is None else float(v)
            for name, v in zip(names, r[5 + k : 5 + k + f], strict=True)
        }
        b = tuple(int(x) for x in r[5 : 5 + k]) if k else None
        labels = {
            t: label_sets[t][int(v)]  # type: ignore[index]
            for t, v in zip(tags, r[5 + k + f :], strict=True)
            if v is not None
        }
        seg = Segment(r[0], int(r[1]), int(r[2]), feats, b, labels, None, float(r[3]), r[4])
        out.append(seg)
    return out


def n_eligible(con: Any) -> int:
    """Rows with a finite priority."""
    return int(_q(con, "SELECT count(*) FROM pool WHERE prio > -'inf'::DOUBLE")[0][0])
