"""``kur init``'s dry read: the job's read stage on its sources, before the job is written.

Every row a source holds ends up in one of: a present tick (kept, possibly
re-timed: ``duplicates="retime"``), a merged collision (``collisions="mean"``:
counted), a dropped duplicate (``"first"``/``"last"``: counted), a dropped
timeless row (``missing_time="drop"``: counted).  :func:`dry_read` reads the
first ``MAX_SOURCES`` sources as ``kur run`` will (same adapter, same options)
and checks that the counts add up to the rows; a row that went nowhere, or
a read that fails, stops ``kur init`` before it writes anything.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..errors import InitError, KurationError
from ..pipeline.spec.job import job_components, load_job

__all__ = ["DryRead", "dry_read"]

MAX_SOURCES = 8


@runtime_checkable
class _ReadsRows(Protocol):
    """An adapter that reads a source's raw rows (the file adapters: timeseries, mcap)."""

    def _read_arrow(self, uri: str) -> Any: ...


class DryRead(dict[str, int]):
    """Totals of the dry read: ``rows``, ``kept``, ``retimed``, ``merged``, ``duplicates_dropped``,
    ``timeless_dropped``, ``collisions_dropped``, ``sources`` (read) and ``of`` (all)."""

    @property
    def dropped(self) -> int:
        return self["duplicates_dropped"] + self["timeless_dropped"] + self["collisions_dropped"]


def dry_read(job: Mapping[str, Any], out: Path) -> tuple[DryRead, list[str]]:
    """Read the job's first sources with its adapter; totals and the printed lines.

    Raises
    ------
    InitError
        The read fails (the run would), or rows are lost without a count.
    """
    raw, _base = load_job(dict(job))
    _schema, adapter, _seg = job_components(raw)
    uris = [str((out / s).resolve()) if "://" not in s else s for s in raw["sources"]]
    res = DryRead(
        rows=0,
        kept=0,
        retimed=0,
        merged=0,
        duplicates_dropped=0,
        timeless_dropped=0,
        collisions_dropped=0,
        sources=0,
        of=len(uris),
    )
    if not isinstance(adapter, _ReadsRows):
        raise InitError(f"the proposed job's adapter {adapter.name!r} has no raw rows to dry-read")
    merge = getattr(adapter, "collisions", "nearest") == "mean"
    for uri in uris[:MAX_SOURCES]:
        try:
            rows = adapter._read_arrow(uri)[0].num_rows
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # counted below, not repeated
                table = adapter.read_table(uri)
        except KurationError as exc:
            raise InitError(f"the proposed job fails to read {uri}: {exc}", source=uri) from exc
        c = dict(table.counts)
        kept = int(table.present.sum())
        coll = int(c.get("snap_collisions", 0))
        res["rows"] += rows
        res["kept"] += kept
        res["retimed"] += int(c.get("retimed", 0))
        res["merged" if merge else "collisions_dropped"] += coll
        res["duplicates_dropped"] += int(c.get("duplicates_dropped", 0))
        res["timeless_dropped"] += int(c.get("timeless_dropped", 0))
        res["sources"] += 1
        silent = rows - kept - coll - c.get("duplicates_dropped", 0) - c.get("timeless_dropped", 0)
        if silent:
            raise InitError(
                f"the proposed job would lose {silent} row(s) of {uri} without a count "
                f"({rows} rows, {kept} kept, {coll} collided); this is a kur init bug",
                source=uri,
            )
    what = "every source" if res["sources"] == res["of"] else f"{res['sources']} of {res['of']}"
    n = max(res["rows"], 1)
    lines = [
        f"dry read ({what}, as kur run reads them): {res['rows']} rows, {res['kept']} kept "
        f"on their own tick ({res['kept'] / n:.2%})"
        + (f", {res['retimed']} re-timed (duplicates: retime)" if res["retimed"] else "")
        + (
            f", {res['merged']} merged into a shared tick (collisions: mean)"
            if res["merged"]
            else ""
        )
        + (f"; dropped: {res.dropped} ({res.dropped / n:.2%})" if res.dropped else "; none dropped")
    ]
    for key, why in (
        ("duplicates_dropped", "repeat a time of their entity (duplicates)"),
        ("timeless_dropped", "have no time (missing_time: drop)"),
        ("collisions_dropped", "share a tick (collisions: nearest)"),
    ):
        if res[key]:
            lines.append(f"  {res[key]} row(s) {why}")
    return res, lines
