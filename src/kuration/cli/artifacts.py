"""``kur diff`` and ``kur check``: compare and gate curated datasets."""

from __future__ import annotations

import argparse
import json
import sys

from rich.console import Console
from rich.table import Table

from ..tools.check import check_dataset
from ..tools.diff import compare_datasets

__all__ = ["add_check", "add_diff"]


def _cmd_diff(args: argparse.Namespace) -> int:
    d = compare_datasets(args.left, args.right, verify=args.verify)
    if args.html:
        from ..tools.report import render_diff_html, write_html

        write_html(args.html, render_diff_html(d))
    if args.json:
        print(json.dumps(d, indent=2, sort_keys=True, default=str))
        return 0
    con = Console()
    if d["identical"]:
        con.print(f"[green]identical[/]: {d['shards']['unchanged']} shards, same configuration")
    else:
        sh = d["shards"]
        con.print(
            f"[yellow]different[/]: {len(sh['added'])} shards added, {len(sh['removed'])} removed, "
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
            con.print(f"{side}: {'valid' if v['valid'] else 'INVALID'} ({v['checked']} shards)")
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
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


def add_diff(p: argparse.ArgumentParser) -> None:
    p.add_argument("left", help="a dataset directory or URL (s3://, gs://, az://)")
    p.add_argument("right", help="another dataset directory or URL")
    p.add_argument("--verify", action="store_true", help="also verify every shard of both")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--html", metavar="FILE", help="write a self-contained HTML comparison")
    p.set_defaults(fn=_cmd_diff)


def add_check(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", help="a dataset directory or URL (s3://, gs://, az://)")
    p.add_argument("--policy", required=True, help="quality policy JSON file")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(fn=_cmd_check)
