"""Tags and tag-coverage floors on the disk pool (:mod:`kuration.pipeline.disk.pool`).

The in-memory count path labels segments (:func:`~kuration.selection.constraints.assign_tags`),
reserves each tag's floors first and then takes rows by priority under the group cap
(:func:`~kuration.selection.constraints.constrained_select`).  Here the labels are
columns ``t<k>`` of the DuckDB ``pool`` table (a label index, NULL for none), the
selection is a column ``sel``, and every step that touches rows runs in SQL; only
per-label and per-group counts come back to Python, where the floors are allocated
over groups by the same maximum flow as in memory.  The selected rows, their order
and the per-label report equal the in-memory ones.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from ...selection.constraints import max_flow_alloc, source_label
from ...selection.strategy import Strategy
from .index import _col, _edges, _q

__all__ = ["select_with_floors", "tag_pool", "tag_report"]

_ELIG = "prio > -'inf'::DOUBLE"
_ORDER = "prio DESC, rn"  # rn: the canonical (source_id, entity, start_idx) order


def tag_pool(con: Any, st: Strategy) -> dict[str, list[str]]:
    """Add one label column ``t<k>`` per declared tag (in declaration order) and return
    each tag's label set, as :func:`~kuration.selection.constraints.tag_label_sets` does:
    declared labels, or (source tags) the labels of the pool's sources, sorted.

    Feature tags with ``bins`` use equal-frequency edges fitted on the kept rows, with
    ``thresholds`` the count of thresholds at or below the value; a non-finite value
    gets no label.
    """
    sets: dict[str, list[str]] = {}
    for k, (name, spec) in enumerate(st.tags.items()):
        _q(con, f"ALTER TABLE pool ADD COLUMN t{k} BIGINT")
        if "source" in spec:
            sids = [r[0] for r in _q(con, "SELECT DISTINCT source_id FROM pool ORDER BY 1")]
            labs = {sid: source_label(spec["source"], sid) for sid in sids}
            sets[name] = sorted({lab for lab in labs.values() if lab is not None})
            index = {lab: i for i, lab in enumerate(sets[name])}
            hit = [(sid, index[lab]) for sid, lab in labs.items() if lab is not None]
            con.register("_t", pa.table({"sid": [h[0] for h in hit], "t": [h[1] for h in hit]}))
            _q(con, f"UPDATE pool SET t{k} = _t.t FROM _t WHERE pool.source_id = _t.sid")
            con.unregister("_t")
            continue
        c = _col(st, spec["feature"])
        if "bins" in spec:
            parts = [f"({c} > {float(e)!r})::BIGINT" for e in _edges(con, c, int(spec["bins"]))]
        else:
            parts = [f"({c} >= {float(t)!r})::BIGINT" for t in spec["thresholds"]]
        expr = " + ".join(parts) or "0"
        _q(con, f"UPDATE pool SET t{k} = CASE WHEN isfinite({c}) THEN {expr} END")
        sets[name] = list(spec["labels"])
    return sets


def _counts(con: Any, col: str, where: str) -> dict[Any, int]:
    rows = _q(con, f"SELECT {col}, count(*) FROM pool WHERE {where} GROUP BY 1")
    return {r[0]: int(r[1]) for r in rows}


def _group_index(con: Any, capped: bool) -> tuple[str, list[Any]]:
    """The SQL expression of a row's group and the groups of eligible rows, sorted
    (one group of everything without a cap)."""
    if not capped:
        return "0", [0]
    return "grp", sorted(_counts(con, "grp", _ELIG))


def _reserve(
    con: Any,
    tcol: str,
    fl: np.ndarray,
    n: int,
    cap: int,
    grp: tuple[str, list[Any]],
) -> None:
    """Select the highest-ranked rows that meet one tag's floors, spread over the groups
    by the maximum flow of the in-memory path."""
    gexpr, groups = grp
    have = _counts(con, tcol, f"sel AND {tcol} IS NOT NULL")
    deficit = np.maximum(fl - np.array([have.get(i, 0) for i in range(fl.size)]), 0)
    budget = n - int(_q(con, "SELECT count(*) FROM pool WHERE sel")[0][0])
    cand = f"{_ELIG} AND NOT sel AND {tcol} IS NOT NULL"
    if deficit.sum() <= 0 or budget <= 0:
        return
    gi = {g: j for j, g in enumerate(groups)}
    cells = np.zeros((fl.size, len(groups)), dtype=np.int64)
    for lab, g, c in _q(
        con, f"SELECT {tcol}, {gexpr}, count(*) FROM pool WHERE {cand} GROUP BY 1, 2"
    ):
        cells[int(lab), gi[g]] = int(c)
    if not cells.any():
        return
    taken = _counts(con, gexpr, "sel")
    room = np.maximum(cap - np.array([taken.get(g, 0) for g in groups]), 0)
    alloc = max_flow_alloc(deficit, cells, room, budget)
    for lab_i, j in zip(*np.nonzero(alloc), strict=True):
        g = groups[j]
        gcond = "true" if gexpr == "0" else "grp = ?"
        _q(
            con,
            f"UPDATE pool SET sel = true WHERE rn IN (SELECT rn FROM pool WHERE {cand} "
            f"AND {tcol} = {int(lab_i)} AND {gcond} ORDER BY {_ORDER} LIMIT {int(alloc[lab_i, j])})",
            None if gexpr == "0" else [g],
        )


def _fill(con: Any, n: int, cap: int, grp: tuple[str, list[Any]]) -> None:
    """Take unselected eligible rows in rank order until ``n`` are selected, each group
    only up to its cap (what is left of it after the reservations)."""
    gexpr, groups = grp
    left = n - int(_q(con, "SELECT count(*) FROM pool WHERE sel")[0][0])
    if left <= 0:
        return
    taken = _counts(con, gexpr, "sel")
    room = {g: max(cap - taken.get(g, 0), 0) for g in groups}
    con.register("_room", pa.table({"g": groups, "room": list(room.values())}))
    _q(
        con,
        "UPDATE pool SET sel = true WHERE rn IN (SELECT rn FROM (SELECT rn, prio, source_id, "
        f"start_idx, g, ROW_NUMBER() OVER (PARTITION BY g ORDER BY {_ORDER}) AS k FROM "
        f"(SELECT *, {gexpr} AS g FROM pool WHERE {_ELIG} AND NOT sel)) "
        f"JOIN _room USING (g) WHERE k <= room ORDER BY {_ORDER} LIMIT {int(left)})",
    )
    con.unregister("_room")


def select_with_floors(
    con: Any,
    st: Strategy,
    n: int,
    floors: Mapping[str, Mapping[str, int]],
    label_sets: Mapping[str, Sequence[str]],
    cap: int | None,
) -> None:
    """Mark the selection in column ``sel``: each tag's floors reserved in tag-name order,
    then rows by priority, under the group cap ``cap`` (column ``grp``) when given."""
    _q(con, "ALTER TABLE pool ADD COLUMN sel BOOLEAN DEFAULT false")
    _q(con, "UPDATE pool SET sel = false")
    grp = _group_index(con, cap is not None)
    limit = n if cap is None else cap
    names = list(st.tags)
    for tag in sorted(floors):
        labels = list(label_sets[tag]) + [lab for lab in floors[tag] if lab not in label_sets[tag]]
        fl = np.array([floors[tag].get(lab, 0) for lab in labels], dtype=np.int64)
        _reserve(con, f"t{names.index(tag)}", fl, n, limit, grp)
    _fill(con, n, limit, grp)


def tag_report(
    con: Any,
    st: Strategy,
    n: int,
    label_sets: Mapping[str, Sequence[str]],
    floors: Mapping[str, Mapping[str, int]],
    capped: bool,
) -> dict[str, Any]:
    """Per tag and label: pool, eligible and selected rows, and with a floor whether it was
    met and why not (the in-memory report's words)."""
    out: dict[str, Any] = {}
    for k, tag in enumerate(st.tags):
        col = f"t{k}"
        pool, elig, got = (_counts(con, col, w) for w in ("true", _ELIG, "sel"))
        fl = floors.get(tag, {})
        total = sum(fl.values())
        rep: dict[str, Any] = {}
        for i, lab in enumerate(label_sets[tag]):
            row: dict[str, Any] = {
                "pool": pool.get(i, 0),
                "eligible": elig.get(i, 0),
                "selected": got.get(i, 0),
            }
            if lab in fl:
                row.update(floor=int(fl[lab]), met=row["selected"] >= fl[lab])
                if not row["met"]:
                    row["why"] = _why(row, tag, total, n, capped)
            rep[lab] = row
        if None in pool:
            rep["(none)"] = {
                "pool": pool[None],
                "eligible": elig.get(None, 0),
                "selected": got.get(None, 0),
            }
        out[tag] = rep
    return out


def _why(row: Mapping[str, Any], tag: str, total: int, n: int, capped: bool) -> str:
    if row["eligible"] < row["floor"]:
        return f"only {row['eligible']} eligible segments carry this label"
    if total > n:
        return f"the floors of {tag!r} add up to {total} > n = {n}"
    return (
        "group caps leave no room for it"
        if capped
        else "reservations for earlier tags used the room"
    )
