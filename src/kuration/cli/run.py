"""``kur run``: run a job's hours budget and print what was written.

The command behind the parser in :mod:`kuration.cli.main`; imported only when
``kur run`` runs, so ``kur --help`` never loads the pipeline.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from ..core.progress import RichProgress
from ..core.words import count
from ..errors import JobError
from ..pipeline.api.entry import run_job
from ..pipeline.dispatch.hours import DatasetWriteResult
from ._budget_notes import excluded_tracks_line, hours, strategy_line, underfill_lines
from ._console import report_console
from ._split_note import split_excluded_line

__all__ = ["cmd_run", "print_run_summary"]


def _disk_pool_line(res: DatasetWriteResult) -> str | None:
    """How the disk pool scored the sources (None when the run held its pool in memory)."""
    stages = {t.stage: t for t in res.telemetry}
    score = stages.get("read+segment+features")
    if "index" not in stages or score is None:
        return None
    # a source whose read failed was a checkpoint miss too, but left no partition
    parts, hits = score.partitions or 0, score.checkpoint_hits or 0
    return (
        f"disk pool: {count(parts, 'source partition')} ({parts - hits} scored, {hits} reused from "
        f"checkpoints; {score.executor}), ranked and filled through a DuckDB index"
    )


def print_run_summary(res: DatasetWriteResult, wall: float, console: Console) -> None:
    """Render the results of a run: scoring counts, the hours budget per split, shards."""
    sc = res.scoring.summary()
    budget = res.config["results"]["budget"]
    console.print(f"[bold]kuration[/] curated [cyan]{res.path}[/] in {wall:.1f} s")
    console.print(
        f"sources scored: {sc['sources_scored']}/{sc['sources_total']} "
        f"(failed {sc['sources_failed']}, shorter than a window {sc['sources_short']}); "
        f"segments: {sc['segments']}"
    )
    strategy = strategy_line(res.config.get("strategy"))
    if strategy:
        console.print(strategy, highlight=False, markup=False)
    pool = _disk_pool_line(res)
    if pool:
        console.print(pool)
    plan = res.config.get("provenance", {}).get("execution", {}).get("plan") or {}
    for note in plan.get("notes", ()):  # how the planner chose the runtime
        console.print(note)
    for warning in res.config.get("warnings", ()):
        if warning.startswith("no strong source identity"):
            console.print(f"[yellow]checkpoints[/]: {warning}", highlight=False)
    if sc.get("snap_collisions"):
        coll = sc["snap_collisions"]
        console.print(
            f"[yellow]snap collisions[/]: {count(sum(coll.values()), 'row')} in "
            f"{count(len(coll), 'source')} "
            f"landed on a tick already taken (collisions="
            f"{res.config['pipeline']['adapter'].get('collisions', 'nearest')}); "
            "per source in config.json"
        )
    if sc.get("row_policies"):
        tot: dict[str, int] = {}
        for c in sc["row_policies"].values():
            for k, v in c.items():
                tot[k] = tot.get(k, 0) + v
        words = {
            "retimed": "re-timed by row order (duplicates=retime)",
            "duplicates_dropped": "dropped as repeated times (duplicates)",
            "timeless_dropped": "dropped without a time (missing_time=drop)",
        }
        console.print(
            "[yellow]rows[/]: "
            + "; ".join(f"{v} {words.get(k, k)}" for k, v in sorted(tot.items()))
            + "; per source in config.json (results.scoring.row_policies)"
        )
    t = Table(title="hours budget per split")
    for col in (
        "split",
        "requested",
        "pool",
        "admitted",
        "present",
        "emitted",
        "underfill",
        "tracks",
        "shards",
    ):
        t.add_column(col, justify="right")
    for split in ("train", "test"):
        b = budget[split]
        t.add_row(
            split,
            hours(b["requested_s"]),
            hours(b["candidate_s"]),
            hours(b["admitted_s"]),
            hours(b.get("present_s", b["admitted_s"])),
            hours(b["emitted_s"]),
            hours(b["underfill_s"]),
            str(b["admitted_tracks"]),
            str(res.manifest["splits"][split]["shards"]),
        )
    console.print(t)
    console.print(
        "[dim]pool: hours of every candidate track (one entity in one source), so concurrent "
        "entities add up; whole tracks are admitted, so a split may exceed its request by less "
        "than one track; present: the part of the admitted hours at which the entity is "
        "present.[/]"
    )
    if budget.get("empty_spans_excluded"):
        console.print(
            f"spans left out: {budget['empty_spans_excluded']} (the entity is present at none "
            "of their ticks)"
        )
    filters = (res.config.get("strategy") or {}).get("filters")
    tracks = excluded_tracks_line(budget, has_filters=bool(filters))
    if tracks:
        console.print(tracks, highlight=False, markup=False)
    excluded = split_excluded_line(res.config["results"].get("split_report"))
    if excluded:
        console.print(excluded, style="yellow", highlight=False, markup=False)
    for line in underfill_lines(budget):
        console.print(line, style="yellow", highlight=False, markup=False)
    reuse = res.config["results"].get("resume", {})
    if reuse.get("requested"):
        console.print(
            f"resume: {count(reuse.get('reused_shards', 0), 'shard')} reused, "
            f"{reuse.get('rebuilt_shards', 0)} rebuilt"
        )
        if reuse.get("rebuilt_shards"):
            for note in reuse.get("notes", []):
                console.print(f"resume note: {note}", markup=False)
    files = res.manifest.get("files") or ()
    packed = f" packed into {count(len(files), 'file')}" if files else ""
    if res.manifest.get("layout") == "lerobot":
        packed = f" rows of a LeRobot v3 folder of {count(len(files), 'file')}"
    console.print(
        f"shards written: {len(res.manifest['shards'])} ({res.manifest['container']}{packed}, "
        f"{res.manifest['shard_length']} steps each); modalities: "
        f"{', '.join(res.manifest['modalities'])}"
    )
    for uri, err in sorted(sc["errors"].items()):
        console.print(f"[yellow]skipped[/] {uri}: {err}")


def _executor_options(pairs: list[str] | None) -> dict[str, Any] | None:
    """``--executor-option KEY=VALUE`` flags as a mapping (a VALUE that parses as JSON is
    read as JSON, else kept as text).

    Raises
    ------
    JobError
        A flag without ``=``.
    """
    if not pairs:
        return None
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise JobError(f"--executor-option takes KEY=VALUE, got {pair!r}")
        try:
            out[key] = json.loads(value)
        except ValueError:
            out[key] = value
    return out


def cmd_run(args: argparse.Namespace) -> int:
    """``kur run JOB [--out DIR] [--force | --resume] [--workers N] [--executor E] [--json]``."""
    out = args.out or str(Path("runs") / Path(args.job).stem)
    start = time.perf_counter()
    with RichProgress() as prog:
        res = run_job(
            args.job,
            out,
            force=args.force,
            resume=args.resume,
            workers=args.workers,
            progress=prog,
            streaming=True if args.streaming else None,
            memory_budget=args.memory_budget,
            executor=args.executor,
            ray_address=args.ray_address,
            executor_options=_executor_options(args.executor_option),
            pool=args.pool,
            checkpoint_dir=args.checkpoint_dir,
        )
    wall = time.perf_counter() - start
    if args.json:
        print(
            json.dumps(
                {"path": str(res.path), "wall_s": wall, "results": res.config["results"]}, indent=2
            )
        )
    else:
        print_run_summary(res, wall, report_console())
    return 0
