"""``kur inspect``, ``kur diff`` and ``kur check``: summarize, compare and gate curated datasets.

The commands behind the parsers in :mod:`kuration.cli.main`, imported only when one runs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from rich.console import Console
from rich.table import Table

from ..core.words import count
from ..tools.check import check_dataset
from ..tools.diff import compare_datasets
from ..tools.inspect import InspectReport, inspect_dataset
from ._budget_notes import hours, underfill_lines
from ._console import report_console
from ._split_note import split_excluded_line

__all__ = ["cmd_check", "cmd_diff", "cmd_inspect", "print_inspect"]


def print_inspect(rep: InspectReport, console: Console) -> None:
    """Render an :class:`InspectReport` as text tables."""
    layout = f" packed into {count(rep.packed_files, 'file')}" if rep.packed_files else ""
    console.print(
        f"[bold]{rep.path}[/]  container={rep.container}{layout} shard_length={rep.shard_length}"
    )
    t = Table(title="splits")
    for col in (
        "split",
        "shards",
        "tracks",
        "sources",
        "hours",
        "requested",
        "admitted",
        "underfill",
    ):
        t.add_column(col, justify="right")
    for split, s in rep.splits.items():
        b = rep.budget.get(split, {})
        t.add_row(
            split,
            str(s["shards"]),
            str(s["tracks"]),
            str(len(s["sources"])),
            hours(s["seconds"]),
            hours(b.get("requested_s", 0)),
            hours(b.get("admitted_s", 0)),
            hours(b.get("underfill_s", 0)),
        )
    console.print(t)
    excluded = split_excluded_line(rep.split_report)
    if excluded:
        console.print(excluded, style="yellow", highlight=False, markup=False)
    for line in underfill_lines(rep.budget):
        console.print(line, style="yellow", highlight=False, markup=False)
    m = Table(title="modalities")
    for col in ("name", "dtype", "shape", "unit", "source"):
        m.add_column(col)
    for name, spec in rep.modalities.items():
        unit = spec.get("unit")
        shown = "-" if unit is None else unit if isinstance(unit, str) else ", ".join(unit)
        m.add_row(name, spec["dtype"], str(tuple(spec["shape"])), shown, spec.get("source", ""))
    m.add_row("_present", "bool", "()", "-", "entity present at the step")
    m.add_row("_time_s", "float64", "()", "s", "time since the Unix epoch")
    console.print(m)
    console.print(f"padding: {rep.padding}")
    console.print(
        f"execution: {_execution(rep.execution)}; kuration {rep.provenance.get('kuration_version')}"
    )
    if rep.errors:
        console.print(f"[yellow]skipped sources:[/] {rep.errors}")
    if rep.verification:
        v = rep.verification
        state = "[green]valid[/]" if v["valid"] else "[red]INVALID[/]"
        console.print(f"verification: {state} ({count(v['checked'], 'shard')} checked)")
        for f in v["failures"]:
            console.print(f"  [red]{f}[/]")


def cmd_inspect(args: argparse.Namespace) -> int:
    """``kur inspect DATASET [--verify] [--json] [--html FILE]``: status 1 when invalid."""
    rep = inspect_dataset(args.dataset, verify=args.verify)
    if args.html:
        from ..read.loaders import Dataset
        from ..tools.report import render_inspect_html, write_html

        ds = Dataset(args.dataset)
        write_html(args.html, render_inspect_html(rep, ds.manifest, ds.config, ds))
        print(
            f"kur inspect: wrote the HTML report to {os.path.abspath(args.html)}", file=sys.stderr
        )
    if args.json:
        print(json.dumps(rep.to_dict(), indent=2, sort_keys=True))
    else:
        print_inspect(rep, report_console())
    return 0 if not rep.verification or rep.verification["valid"] else 1


def cmd_diff(args: argparse.Namespace) -> int:
    """``kur diff LEFT RIGHT [--verify] [--json] [--html FILE]``."""
    d = compare_datasets(args.left, args.right, verify=args.verify)
    if args.html:
        from ..tools.report import render_diff_html, write_html

        write_html(args.html, render_diff_html(d))
        print(f"kur diff: wrote the HTML report to {os.path.abspath(args.html)}", file=sys.stderr)
    if args.json:
        print(json.dumps(d, indent=2, sort_keys=True, default=str))
        return 0
    con = report_console()
    sh = d["shards"]
    same = not (sh["added"] or sh["removed"] or sh["changed"] or d["changes"] or d["splits"])
    if d["identical"]:
        how = "" if "verification" in d else " (manifests compared; --verify reads the files)"
        con.print(
            f"[green]identical[/]: {count(sh['unchanged'], 'shard')}, same configuration{how}"
        )
    elif same and not d["modalities"]:  # only --verify found a difference
        bad = [side for side, v in d["verification"].items() if not v["valid"]]
        con.print(
            f"[yellow]different[/]: the manifests agree ({count(sh['unchanged'], 'shard')}, same "
            f"configuration), but the files of {' and '.join(bad)} do not match them"
        )
        for side in bad:
            for failure in d["verification"][side]["failures"][:20]:
                con.print(f"  {side:<8} {failure}")
    else:
        sh = d["shards"]
        con.print(
            f"[yellow]different[/]: {count(len(sh['added']), 'shard')} added, "
            f"{len(sh['removed'])} removed, "
            f"{len(sh['changed'])} changed, {sh['unchanged']} unchanged"
        )
        for kind in ("added", "removed", "changed"):
            for path in sh[kind][:20]:
                con.print(f"  {kind:<8} {path}")
            if len(sh[kind]) > 20:
                con.print(f"  ... {len(sh[kind]) - 20} more {kind}")
        if d["changes"]:
            t = Table(title="configuration changes")
            for col in ("path", "left", "right"):
                t.add_column(col, overflow="fold")
            for c in d["changes"][:60]:
                t.add_row(
                    c["path"],
                    json.dumps(c.get("left"), default=str)[:80],
                    json.dumps(c.get("right"), default=str)[:80],
                )
            con.print(t)
        for c in d["splits"][:20]:
            con.print(f"  split {c['path']}: {c.get('left')} -> {c.get('right')}")
        for c in d["modalities"]:
            con.print(f"  modality {c['path']}: {c.get('left')} -> {c.get('right')}")
    if "verification" in d:
        for side, v in d["verification"].items():
            con.print(
                f"{side}: {'valid' if v['valid'] else 'INVALID'} ({count(v['checked'], 'shard')})"
            )
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    """``kur check DATASET --policy FILE [--json]``: status 2 when a gate fails."""
    res = check_dataset(args.dataset, args.policy)
    if args.json:
        print(
            json.dumps(
                {"path": res.path, "ok": res.ok, "gates": res.gates, "notes": res.notes}, indent=2
            )
        )
    else:
        for g in res.gates:
            print(f"{'PASS' if g['ok'] else 'FAIL'}  {g['gate']}: {g['detail']}")
        for note in res.notes:
            print(f"NOTE  {note}")
    for g in res.failures:
        print(f"kur check: gate {g['gate']} failed: {g['detail']}", file=sys.stderr)
    return 0 if res.ok else 2


def _execution(ex: dict[str, Any]) -> str:
    """One line: executor, workers and the stages' total wall time (config.json keeps the
    plan and the per-stage telemetry)."""
    tele = ex.get("telemetry") or []
    wall = sum(float(t.get("wall_s") or 0.0) for t in tele if isinstance(t, dict))
    parts = [f"{ex.get('mode', '?')} x{ex.get('workers', '?')}"]
    if tele:
        parts.append(f"{len(tele)} stages in {wall:.2f} s (plan and telemetry in config.json)")
    return ", ".join(parts)
