"""The hours fill of the disk runtime: budgets filled from the candidate file, in order.

:func:`fill_on_disk` is :func:`~kuration.selection.fill.fill_budgets` over a
:class:`~kuration.pipeline.disk.candidates.CandidateStore` instead of a table in memory,
with the same admissions, accounting block and decisions:

* each split's pool statistics (seconds, groups and their shortest candidate, sources,
  tag sets) are aggregates over the file, in DuckDB;
* the tag reserve reads each tag set's best candidate;
* admission reads the split's finite candidates in admission order (descending
  priority, then source, tagged entity and span: the store's ``tie`` rank), a page of
  rows at a time (``ORDER BY ... LIMIT``: DuckDB keeps a heap of one page, not a sort of
  the pool), and stops once the budget is full;
* the candidates the group cap refuses go to a small Parquet file per split, not to a
  Python list.

Only admitted rows become :class:`~kuration.selection.candidates.Candidate` objects.
The result's ``pools`` and ``decisions`` (what :func:`kuration.hours_selection_review`
reads) are views that read the store when first used; they hold it, and its folder is
removed when the last of them is gone (:class:`CandidateStore` owns a temporary folder).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ...selection.candidates import REASONS, Candidate, CandidateRows, DecisionMap, Ident
from ...selection.fill import FillResult
from .candidates import CandidateStore, table_of

__all__ = ["DiskDecisions", "DiskPoolRows", "fill_on_disk"]

#: rows of the first admission page; later pages grow 4x up to _MAX_PAGE
_FIRST_PAGE, _MAX_PAGE = 4096, 1 << 17
_WHY = {r: i for i, r in enumerate(REASONS)}


def _sql_text(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _connect(
    store: CandidateStore, split_of: Mapping[str, str], memory_limit: str, count: str = "span"
) -> Any:
    """An in-memory DuckDB over the store's file: view ``c`` of every candidate of a
    source in a split, with its split, length (``steps``) and finite priority (``fin``)."""
    import duckdb

    con = duckdb.connect()
    tmp = store.root / "duckdb.tmp"
    tmp.mkdir(exist_ok=True)
    con.execute(f"SET memory_limit = {_sql_text(memory_limit)}")
    con.execute(f"SET temp_directory = {_sql_text(tmp.as_posix())}")
    con.execute("SET threads = 1")
    sids = [s for s, sp in split_of.items() if sp is not None]
    con.register(
        "_split",
        pa.table({"sid": pa.array(sids, pa.string()), "split": [split_of[s] for s in sids]}),
    )
    con.execute(
        "CREATE TEMP VIEW c AS SELECT p.tie, p.okey, "
        + ("p.present" if count == "present" else "p.last - p.first + 1")
        + " AS steps, "
        "coalesce(p.grp, '') AS g, p.tagset, p.source_id, isfinite(p.priority) AS fin, "
        f"s.split FROM read_parquet({_sql_text(store.path.as_posix())}) p "
        "JOIN _split s ON p.source_id = s.sid"
    )
    return con


@dataclass
class _Pool:
    """One split's pool, as aggregates over the file (what ``fill._Pool`` holds as columns)."""

    split: str
    hz: float
    n_finite: int
    finite_steps: int
    n_nonfinite: int
    nonfinite_steps: int
    shortest: dict[str, int]  # group label ("" for none) -> its shortest finite candidate
    sources: list[str]
    tag_steps: dict[int, int]  # tag set code -> finite steps

    @property
    def groups(self) -> list[str]:
        return sorted(self.shortest)

    @classmethod
    def of(cls, con: Any, split: str, hz: float) -> _Pool:
        q = "FROM c WHERE split = ?"
        ((n_fin, s_fin, n_non, s_non),) = con.execute(
            "SELECT count(*) FILTER (WHERE fin), coalesce(sum(steps) FILTER (WHERE fin), 0), "
            "count(*) FILTER (WHERE NOT fin), coalesce(sum(steps) FILTER (WHERE NOT fin), 0) " + q,
            [split],
        ).fetchall()
        shortest = con.execute(f"SELECT g, min(steps) {q} AND fin GROUP BY g", [split]).fetchall()
        sources = con.execute(f"SELECT DISTINCT source_id {q}", [split]).fetchall()
        tags = con.execute(f"SELECT tagset, sum(steps) {q} AND fin GROUP BY 1", [split]).fetchall()
        return cls(
            split,
            hz,
            int(n_fin),
            int(s_fin),
            int(n_non),
            int(s_non),
            {str(g): int(n) for g, n in shortest},
            sorted(str(s) for (s,) in sources),
            {int(t): int(n) for t, n in tags},
        )

    def tag_universe(
        self, tag_sets: Sequence[frozenset[str]], names: Collection[str] | None
    ) -> list[str]:
        """The pool's tags (only those named ``names``), sorted."""
        sets = [tag_sets[c] for c in sorted(self.tag_steps)]
        return sorted({t for s in sets for t in s if names is None or t.partition("=")[0] in names})


@dataclass(frozen=True)
class _Row:
    steps: int
    group: str
    tagset: int


@dataclass
class _Admission:
    """Running state of one split's fill; rows are named by their ``tie`` rank."""

    pool: _Pool
    cap: float | None
    taken: list[int] = field(default_factory=list)
    rows: dict[int, _Row] = field(default_factory=dict)
    by_group: dict[str, float] = field(default_factory=dict)
    total: float = 0.0
    reserved: float = 0.0
    reserved_ids: set[int] = field(default_factory=set)

    def fits(self, row: _Row) -> bool:
        if self.cap is None:
            return True
        return self.by_group.get(row.group, 0.0) + row.steps / self.pool.hz <= self.cap + 1e-9

    def admit(self, tie: int, row: _Row, *, reserve: bool = False) -> None:
        d = row.steps / self.pool.hz
        self.taken.append(tie)
        self.rows[tie] = row
        self.total += d
        self.by_group[row.group] = self.by_group.get(row.group, 0.0) + d
        if reserve:
            self.reserved += d
            self.reserved_ids.add(tie)


@dataclass
class _Refused:
    """What the group cap refused in one split: count, steps, steps in groups where the
    tag reserve admitted a candidate, and the refused ``tie`` ranks (in ``path``)."""

    path: Any
    n: int = 0
    steps: int = 0
    steps_reserved: int = 0
    writer: Any = None

    def add(self, ties: list[int], steps: list[int], in_reserved: list[bool]) -> None:
        if not ties:
            return
        self.n += len(ties)
        self.steps += sum(steps)
        self.steps_reserved += sum(s for s, r in zip(steps, in_reserved, strict=True) if r)
        page = pa.table({"tie": pa.array(ties, pa.int64())})
        if self.writer is None:
            self.writer = pq.ParquetWriter(self.path, page.schema)
        self.writer.write_table(page)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    def ties(self) -> np.ndarray:
        if not self.n:
            return np.zeros(0, np.int64)
        ties: np.ndarray = pq.read_table(self.path)["tie"].to_numpy()
        return ties


def _rows(con: Any, split: str, ties: Sequence[int]) -> dict[int, _Row]:
    if not ties:
        return {}
    got = con.execute(
        "SELECT tie, steps, g, tagset FROM c WHERE split = ? AND list_contains(?, tie)",
        [split, list(ties)],
    ).fetchall()
    return {int(t): _Row(int(n), str(g), int(ts)) for t, n, g, ts in got}


def _reserve_tags(
    con: Any,
    store: CandidateStore,
    adm: _Admission,
    all_tags: list[str],
    req: float,
    limit: float,
) -> None:
    """Admit each tag's best candidate first, rarest tag (fewest pool seconds) first, while
    the reserve stays within ``limit`` seconds (``fill._reserve_tags``)."""
    pool = adm.pool
    best_of_set = dict(
        con.execute(
            "SELECT c.tagset, min(c.tie) FROM c JOIN (SELECT tagset, max(okey) AS m FROM c "
            "WHERE split = ? AND fin GROUP BY 1) b ON c.tagset = b.tagset AND c.okey = b.m "
            "WHERE c.split = ? AND c.fin GROUP BY 1",
            [pool.split, pool.split],
        ).fetchall()
    )
    if not best_of_set:
        return
    okey = dict(
        con.execute(
            "SELECT tie, okey FROM c WHERE split = ? AND list_contains(?, tie)",
            [pool.split, list(best_of_set.values())],
        ).fetchall()
    )
    rank = {code: (-float(okey[t]), int(t)) for code, t in best_of_set.items()}
    sets = {code: store.tag_sets[code] for code in pool.tag_steps}
    pool_s = {t: sum(n for c, n in pool.tag_steps.items() if t in sets[c]) for t in all_tags}
    best = {t: min(rank[c] for c in sets if t in sets[c])[1] for t in all_tags}
    details = _rows(con, pool.split, sorted(set(best.values())))
    for tag in sorted(all_tags, key=lambda t: (pool_s[t], t)):  # rarest first
        if any(tag in store.tag_sets[adm.rows[p].tagset] for p in adm.taken):
            continue
        tie = best[tag]
        row = details[tie]
        d = row.steps / pool.hz
        if adm.total >= req or adm.reserved + d > limit + 1e-9 or not adm.fits(row):
            continue
        adm.admit(tie, row, reserve=True)


_PAGE = (
    "SELECT tie, okey, steps, g, tagset FROM c WHERE split = ? AND fin "
    "AND (okey < ? OR (okey = ? AND tie > ?)) ORDER BY okey DESC, tie LIMIT ?"
)


def _admit_in_order(con: Any, adm: _Admission, req: float, refused: _Refused) -> None:
    """The split's finite candidates in admission order, a page at a time, admitted while
    the budget is not full, or refused when the group cap says so (``fill_budgets``'s loop)."""
    pool = adm.pool
    reserved_groups = {adm.rows[t].group for t in adm.taken if t in adm.reserved_ids}
    seen = set(adm.taken)
    after, size = (math.inf, -1), _FIRST_PAGE
    while adm.total < req:
        page = con.execute(_PAGE, [pool.split, after[0], after[0], after[1], size]).fetchnumpy()
        ties = page["tie"].tolist()
        no: tuple[list[int], list[int], list[bool]] = ([], [], [])
        cols = (page["steps"].tolist(), page["g"].tolist(), page["tagset"].tolist())
        for tie, steps, g, ts in zip(ties, *cols, strict=True):
            if adm.total >= req:
                break
            if tie in seen:
                continue
            row = _Row(int(steps), str(g), int(ts))
            if adm.fits(row):
                adm.admit(tie, row)
                seen.add(tie)
            else:
                no[0].append(tie)
                no[1].append(row.steps)
                no[2].append(row.group in reserved_groups)
        refused.add(*no)
        if len(ties) < size:
            return
        after, size = (float(page["okey"][-1]), int(ties[-1])), min(size * 4, _MAX_PAGE)


def _budget_block(
    store: CandidateStore, adm: _Admission, refused: _Refused, req: float, all_tags: list[str]
) -> dict[str, Any]:
    """The split's accounting block, key for key ``fill._budget_block``'s."""
    pool, cap, hz = adm.pool, adm.cap, adm.pool.hz
    shortest = {g: n / hz for g, n in pool.shortest.items()}
    starved = [g for g in pool.groups if cap is not None and shortest[g] > cap + 1e-9]
    covered = {t for p in adm.taken for t in store.tag_sets[adm.rows[p].tagset]}
    return {
        "requested_s": req,
        "candidate_s": pool.finite_steps / hz,
        "candidate_tracks": pool.n_finite,
        "admitted_s": adm.total,
        "admitted_tracks": len(adm.taken),
        "underfill_s": max(0.0, req - adm.total),
        "nonfinite_excluded": pool.n_nonfinite,
        "nonfinite_excluded_s": pool.nonfinite_steps / hz,
        "group_cap_s": cap,
        "groups": len(pool.groups),
        "group_cap_excluded": refused.n,
        "group_cap_excluded_s": refused.steps / hz,
        "group_cap_starved": len(starved),
        "shortest_track_s": float(min(shortest.values())) if pool.groups else None,
        "tag_reserved": len(adm.reserved_ids),
        "tag_reserved_s": adm.reserved,
        "tag_reserve_capped_s": refused.steps_reserved / hz,
        "tags_uncovered": [t for t in all_tags if t not in covered],
        "sources": pool.sources,
    }


def _admitted(con: Any, store: CandidateStore, ties: Sequence[int]) -> list[Candidate]:
    """The candidates of ``ties``, in that order, as objects (those rows alone read back)."""
    if not ties:
        return []
    got = con.sql(
        f"SELECT * FROM read_parquet({_sql_text(store.path.as_posix())}) "
        "WHERE list_contains(?, tie)",
        params=[list(ties)],
    ).to_arrow_table()
    sids = sorted(set(got["source_id"].cast(pa.string()).to_pylist()))
    table = table_of(got, store, sids)
    at = {t: i for i, t in enumerate(got["tie"].to_numpy().tolist())}
    return [table.candidate(at[t]) for t in ties]


# ---- the pool and decisions, read when first used -------------------------------------------


class _SplitView:
    """One split's pool in admission order and its decisions, built from the store on first
    use (``fill._decisions``: non-finite rows, then the finite ones in admission order)."""

    def __init__(
        self,
        store: CandidateStore,
        sources: list[str],
        taken: list[int],
        reserved: set[int],
        refused: _Refused,
        n: int,
    ) -> None:
        self.store, self.sources, self.n = store, sources, n
        self._taken, self._reserved, self._refused = taken, reserved, refused
        self._built: tuple[CandidateRows, DecisionMap] | None = None

    def get(self) -> tuple[CandidateRows, DecisionMap]:
        if self._built is None:
            rows = self.store.read(self.sources)
            table = table_of(rows, self.store, self.sources)
            tie = rows["tie"].to_numpy()
            fin = np.isfinite(table.priority)
            okey = rows["okey"].to_numpy()
            finite = np.flatnonzero(fin)
            finite = finite[np.lexsort((tie[finite], -okey[finite]))]
            nonfinite = np.flatnonzero(~fin)
            order = np.concatenate([nonfinite, finite])
            why = np.where(fin[order], _WHY["budget-full"], _WHY["non-finite"]).astype(np.uint8)
            t = tie[order]
            why[np.isin(t, self._refused.ties())] = _WHY["group-cap"]
            why[np.isin(t, np.asarray(self._taken, np.int64))] = _WHY["admitted"]
            why[np.isin(t, np.asarray(sorted(self._reserved), np.int64))] = _WHY["tag-reserve"]
            pool = CandidateRows(table, np.concatenate([finite, nonfinite]))
            self._built = (pool, DecisionMap(table, order, why))
        return self._built


class DiskPoolRows(Sequence[Candidate]):
    """A split's pool (``FillResult.pools``) read from the candidate store when first used."""

    __slots__ = ("_view",)

    def __init__(self, view: _SplitView) -> None:
        self._view = view

    def __len__(self) -> int:
        return self._view.n

    @overload
    def __getitem__(self, i: int) -> Candidate: ...
    @overload
    def __getitem__(self, i: slice) -> list[Candidate]: ...
    def __getitem__(self, i: int | slice) -> Candidate | list[Candidate]:
        return self._view.get()[0][i]

    def __iter__(self) -> Iterator[Candidate]:
        return iter(self._view.get()[0])

    def __repr__(self) -> str:
        return f"DiskPoolRows({len(self)} rows)"


class DiskDecisions(Mapping[Ident, str]):
    """A split's decisions (``FillResult.decisions``) read from the store when first used."""

    __slots__ = ("_view",)

    def __init__(self, view: _SplitView) -> None:
        self._view = view

    def __getitem__(self, key: Ident) -> str:
        return self._view.get()[1][key]

    def __iter__(self) -> Iterator[Ident]:
        return iter(self._view.get()[1])

    def __len__(self) -> int:
        return self._view.n

    def counts(self) -> dict[str, int]:
        """How many candidates each reason holds (reasons with none left out)."""
        return self._view.get()[1].counts()


# ---- the fill ---------------------------------------------------------------------------------


def fill_on_disk(
    store: CandidateStore,
    split_of: Mapping[str, str],
    budgets_s: Mapping[str, float],
    sample_hz: float,
    *,
    max_group_overshoot: float | None = None,
    tag_coverage: bool = False,
    tag_names: Collection[str] | None = None,
    min_tag_frac: float = 0.1,
    memory_limit: str = "32MiB",
    count: str = "span",
) -> FillResult:
    """:func:`~kuration.selection.fill.fill_budgets` over the candidates of ``store``.

    Parameters
    ----------
    store : CandidateStore
        Closed (every chunk appended).
    split_of, budgets_s, sample_hz, max_group_overshoot, tag_coverage, tag_names, min_tag_frac, count
        As for :func:`~kuration.selection.fill.fill_budgets`.
    memory_limit : str
        DuckDB's ``memory_limit`` for the fill's queries (they are aggregates and
        ``LIMIT`` heaps of one page; beyond it DuckDB spills into the store's folder).

    Returns
    -------
    FillResult
        Equal to ``fill_budgets`` over the same candidates: ``admitted`` (objects),
        ``budget``; ``pools`` and ``decisions`` are read from ``store`` when first used.
    """
    hz = float(sample_hz)
    out = FillResult({}, {}, {}, {})
    con = _connect(store, split_of, memory_limit, count)
    try:
        for split, requested in budgets_s.items():
            pool = _Pool.of(con, split, hz)
            req = float(requested)
            cap = None
            if max_group_overshoot is not None and pool.groups:
                cap = float(max_group_overshoot) * req / len(pool.groups)
            adm = _Admission(pool, cap)
            all_tags = pool.tag_universe(store.tag_sets, tag_names)
            if tag_coverage:
                _reserve_tags(con, store, adm, all_tags, req, float(min_tag_frac) * req)
            refused = _Refused(store.root / f"refused-{split}.parquet")
            try:
                _admit_in_order(con, adm, req, refused)
            finally:
                refused.close()
            out.admitted[split] = _admitted(con, store, adm.taken)
            out.budget[split] = _budget_block(store, adm, refused, req, all_tags)
            n = pool.n_finite + pool.n_nonfinite
            view = _SplitView(store, pool.sources, adm.taken, adm.reserved_ids, refused, n)
            out.pools[split], out.decisions[split] = DiskPoolRows(view), DiskDecisions(view)
    finally:
        con.close()
    return out
