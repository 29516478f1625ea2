"""``kur curate`` and ``kur experiment``: the count path from the command line.

::

    kur curate JOB.json [--strategy S.json] --n N [--seed S] [--workers W] [--json]
    kur experiment JOB.json --strategy A.json --strategy B.json ... --n N [--json]

Both read the job's schema, adapter, sources and segmenter; ``--strategy``
replaces the job's strategy.  ``--json`` prints the full result (with the
per-segment audit for ``curate``) instead of tables.  The parsers live in
:mod:`kuration.cli.main`; this module is imported only when a command runs.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from rich.console import Console
from rich.table import Table

from ..core.progress import RichProgress
from ..core.words import count
from ..pipeline.api.count import CurationResult, ExperimentResult, curate_job, experiment_job
from ..pipeline.disk.pool import DiskSelection
from ._console import ReportConsole, report_console

__all__ = ["cmd_curate", "cmd_experiment", "print_curation", "print_experiment"]


def _f(v: Any, nd: int = 3) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{nd}f}"
    return str(v)


def print_curation(res: CurationResult, wall: float, console: Console) -> None:
    """Render a :class:`CurationResult` as text tables."""
    t = res.timing
    console.print(
        f"[bold]kuration[/] selected {res.n_selected}/{res.n_requested} segments with "
        f"[cyan]{res.strategy.name}[/] ({res.strategy.method}) in {wall:.2f} s "
        f"(scoring {t.get('scoring_s', 0.0):.2f} s, selection {t['selection_s'] * 1000:.1f} ms)"
    )
    sc = res.scoring or {}
    if sc:
        console.print(
            f"sources scored: {sc['sources_scored']}/{sc['sources_total']} "
            f"(failed {sc['sources_failed']}, no window {sc['sources_short']}); "
            f"pool: {count(len(res.pool), 'segment')}, eligible: {res.n_eligible}"
        )
    if res.shortfall:
        console.print(f"[yellow]shortfall[/] {res.shortfall}: {res.shortfall_reason}")
    d = Table(title="selected vs pool, per feature")
    for col in ("feature", "pool mean", "selected mean", "KS", "W1/std"):
        d.add_column(col, justify="right")
    for name, row in res.distribution.items():
        d.add_row(
            name,
            _f(row["pool_mean"]),
            _f(row["selected_mean"]),
            _f(row["ks"]),
            _f(row["wasserstein_std"]),
        )
    console.print(d)
    if res.bins:
        b = Table(title=f"per bin ({', '.join(res.strategy.bin_axes)})")
        for col in ("bin", "pool", "eligible", "selected"):
            b.add_column(col, justify="right")
        for row in res.bins:
            b.add_row(
                ",".join(map(str, row["bin"])),
                str(row["pool"]),
                str(row["eligible"]),
                str(row["selected"]),
            )
        console.print(b)
    _print_tags(res.tags, console)
    if res.groups:
        g = Table(title="groups" + (f" (cap {res.groups['cap']})" if "cap" in res.groups else ""))
        for col in ("group", "pool", "eligible", "selected"):
            g.add_column(col, justify="right")
        for name, row in res.groups["per_group"].items():
            g.add_row(name, str(row["pool"]), str(row["eligible"]), str(row["selected"]))
        console.print(g)
    for uri, err in sorted(sc.get("errors", {}).items()):
        console.print(f"[yellow]skipped[/] {uri}: {err}")


def _print_tags(tags: dict[str, Any], console: Console) -> None:
    """One table per tag: pool, eligible and selected per label, floors and whether met."""
    for tag, labels in tags.items():
        tt = Table(title=f"tag {tag}")
        for col in ("label", "pool", "eligible", "selected", "floor", "met"):
            tt.add_column(col, justify="right")
        for lab, row in labels.items():
            tt.add_row(
                lab,
                str(row["pool"]),
                str(row["eligible"]),
                str(row["selected"]),
                _f(row.get("floor")),
                {True: "yes", False: f"[red]no[/] ({row.get('why')})"}.get(row.get("met"), "-"),
            )
        console.print(tt)


def print_experiment(res: ExperimentResult, wall: float, console: Console) -> None:
    """Render an :class:`ExperimentResult` comparison table."""
    console.print(
        f"[bold]kuration[/] experiment: {count(len(res.results), 'strategy', 'strategies')}, "
        f"n = {res.n_requested}, "
        f"{wall:.2f} s (scoring {res.timing.get('scoring_s', 0.0):.2f} s)"
    )
    c = Table(title="coverage of the pool (z-scored axes); vs random: minus the random control's")
    cols = ("strategy", "method", "selected", "select ms", "radius", "mean NN", "cells hit")
    for col in (*cols, "vs random: mean NN", "cells hit", "Jaccard"):
        c.add_column(col, justify="right")
    for row in res.comparison:
        vs = row.get("vs_random") or {}
        c.add_row(
            row["strategy"],
            row["method"],
            str(row["n_selected"]),
            f"{row['selection_s'] * 1000:.1f}",
            _f(row["radius"], 2),
            _f(row["mean_nn"], 2),
            _f(row["cells_covered"], 2),
            _f(vs.get("mean_nn"), 2),
            _f(vs.get("cells_covered"), 2),
            _f(vs.get("jaccard"), 2),
        )
    console.print(c)
    d = Table(title="selected vs pool per axis: KS statistic / Wasserstein-1 over pool std")
    d.add_column("strategy", justify="right")
    for ax in res.axes:
        d.add_column(ax, justify="right")
    for row in res.comparison:
        d.add_row(
            row["strategy"],
            *[f"{_f(row[f'ks:{ax}'], 2)}/{_f(row[f'w1std:{ax}'], 2)}" for ax in res.axes],
        )
    console.print(d)


def cmd_curate(args: argparse.Namespace) -> int:
    """``kur curate``: select ``--n`` segments and print the result."""
    start = time.perf_counter()
    with RichProgress() as prog:
        res = curate_job(
            args.job,
            args.n,
            strategy=args.strategy,
            seed=args.seed,
            workers=args.workers,
            progress=prog,
            pool=args.pool,
            checkpoint_dir=args.checkpoint_dir,
        )
    wall = time.perf_counter() - start
    if args.json:
        print(json.dumps({"wall_s": wall, **res.to_dict()}, indent=2))
    elif isinstance(res, DiskSelection):
        _print_disk(res, wall, report_console())
    else:
        print_curation(res, wall, report_console())
    return 0


def _print_disk(res: DiskSelection, wall: float, console: Console) -> None:
    """A disk-pool selection: counts, checkpoint reuse and per-stage telemetry."""
    ck = res.checkpoint
    console.print(
        f"[bold]kuration[/] selected {res.n_selected}/{res.n_requested} segments with "
        f"[cyan]{res.strategy.name}[/] ({res.strategy.method}) on the disk pool in {wall:.2f} s; "
        f"pool: {count(res.n_pool, 'segment')}, eligible: {res.n_eligible}; checkpoints: "
        f"{ck['hits']} reused, {ck['misses']} built ({ck['rejected']} rejected) "
        f"under {ck['root'] or 'a temporary directory'}"
    )
    if ck.get("unidentified") and ck.get("root"):
        first, n = ck["unidentified"][0], len(ck["unidentified"])
        console.print(
            f"[yellow]checkpoints[/]: no strong source identity: {count(n, 'source')}, "
            f"e.g. {first}, scored afresh and never reused",
            highlight=False,
        )
    t = Table(title="stages")
    for col in ("stage", "wall s", "rows in", "rows out", "partitions"):
        t.add_column(col)
    for s in res.telemetry:
        t.add_row(s.stage, f"{s.wall_s:.2f}", str(s.rows_in), str(s.rows_out), str(s.partitions))
    console.print(t)
    _print_tags(res.tags or {}, console)
    if res.groups:
        g = Table(title=f"groups (cap {res.groups['cap']})")
        for col in ("group", "eligible", "selected", "at cap"):
            g.add_column(col, justify="right")
        for name, row in res.groups["per_group"].items():
            at_cap = "yes" if row["at_cap"] else "no"
            g.add_row(name, str(row["eligible"]), str(row["selected"]), at_cap)
        console.print(g)


def cmd_experiment(args: argparse.Namespace) -> int:
    """``kur experiment``: compare strategies on one scored pool."""
    start = time.perf_counter()
    with RichProgress() as prog:
        res = experiment_job(
            args.job, args.strategy, args.n, seed=args.seed, workers=args.workers, progress=prog
        )
    wall = time.perf_counter() - start
    if args.json:
        print(json.dumps({"wall_s": wall, **res.to_dict()}, indent=2))
    else:
        # a wide table: never squeeze it below 132 columns (pipes default to 80)
        print_experiment(res, wall, ReportConsole(width=max(ReportConsole().width, 132)))
    return 0
