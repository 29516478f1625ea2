"""``kur``: run jobs, inspect datasets, fetch samples.

Exit codes: 0 success, 1 an error (one line ``<prog>: error: ...`` on stderr: a bad
argument, a kuration or TimeNet error, a file-system problem), 2 a failed ``kur check``
gate.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from timenet._cli import OneLineParser, run_guarded
from timenet.errors import TimeNetError

from ..core.progress import RichProgress
from ..errors import KurationError, KurationWarning
from ..pipeline.entry import run_job
from ..pipeline.hours import DatasetWriteResult
from ..tools.inspect import InspectReport, inspect_dataset
from ._args import byte_size, positive_float
from .artifacts import add_check, add_diff
from .curate import add_curate, add_experiment
from .explain import add_explain, add_operators

__all__ = [
    "check_main",
    "curate_main",
    "diff_main",
    "experiment_main",
    "init_main",
    "inspect_main",
    "main",
    "plugin_check_main",
    "run_main",
    "sample_main",
]


def _hours(s: float) -> str:
    return f"{s / 3600:.2f} h"


def _print_run_summary(res: DatasetWriteResult, wall: float, console: Console) -> None:
    sc = res.scoring.summary()
    budget = res.config["results"]["budget"]
    console.print(f"[bold]kuration[/] curated [cyan]{res.path}[/] in {wall:.1f} s")
    console.print(
        f"sources scored: {sc['sources_scored']}/{sc['sources_total']} "
        f"(failed {sc['sources_failed']}, shorter than a window {sc['sources_short']}); "
        f"segments: {sc['segments']}"
    )
    if sc.get("snap_collisions"):
        coll = sc["snap_collisions"]
        console.print(
            f"[yellow]snap collisions[/]: {sum(coll.values())} row(s) in {len(coll)} source(s) "
            f"landed on a tick already taken (collisions="
            f"{res.config['pipeline']['adapter'].get('collisions', 'nearest')}); "
            "per source in config.json"
        )
    t = Table(title="hours budget per split")
    for col in (
        "split",
        "requested",
        "pool",
        "admitted",
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
            _hours(b["requested_s"]),
            _hours(b["candidate_s"]),
            _hours(b["admitted_s"]),
            _hours(b["emitted_s"]),
            _hours(b["underfill_s"]),
            str(b["admitted_tracks"]),
            str(res.manifest["splits"][split]["shards"]),
        )
    console.print(t)
    console.print(
        "[dim]pool: hours of every candidate track (one entity in one source), so concurrent "
        "entities add up; whole tracks are admitted, so a split may exceed its request by less "
        "than one track.[/]"
    )
    for split in ("train", "test"):
        b = budget[split]
        if b.get("binding"):
            console.print(
                f"[yellow]{split} under-filled[/], binding constraint: [bold]{b['binding']}[/] "
                f"({b['binding_detail']})",
                highlight=False,
            )
    reuse = res.config["results"].get("resume", {})
    if reuse.get("requested"):
        console.print(
            f"resume: {reuse.get('reused_shards', 0)} shards reused, "
            f"{reuse.get('rebuilt_shards', 0)} rebuilt"
        )
        if reuse.get("rebuilt_shards"):
            for note in reuse.get("notes", []):
                console.print(f"resume: not reused: {note}", markup=False)
    console.print(
        f"shards written: {len(res.manifest['shards'])} ({res.manifest['container']}, "
        f"{res.manifest['shard_length']} steps each); modalities: "
        f"{', '.join(res.manifest['modalities'])}"
    )
    for uri, err in sorted(sc["errors"].items()):
        console.print(f"[yellow]skipped[/] {uri}: {err}")


def _print_inspect(rep: InspectReport, console: Console) -> None:
    console.print(f"[bold]{rep.path}[/]  container={rep.container} shard_length={rep.shard_length}")
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
            _hours(s["seconds"]),
            _hours(b.get("requested_s", 0)),
            _hours(b.get("admitted_s", 0)),
            _hours(b.get("underfill_s", 0)),
        )
    console.print(t)
    for split, b in sorted(rep.budget.items()):
        if isinstance(b, dict) and b.get("binding"):
            console.print(
                f"[yellow]{split} under-filled[/], binding constraint: [bold]{b['binding']}[/] "
                f"({b['binding_detail']})",
                highlight=False,
            )
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
    console.print(f"execution: {rep.execution}; kuration {rep.provenance.get('kuration_version')}")
    if rep.errors:
        console.print(f"[yellow]skipped sources:[/] {rep.errors}")
    if rep.verification:
        v = rep.verification
        state = "[green]valid[/]" if v["valid"] else "[red]INVALID[/]"
        console.print(f"verification: {state} ({v['checked']} shards checked)")
        for f in v["failures"]:
            console.print(f"  [red]{f}[/]")


def _cmd_run(args: argparse.Namespace) -> int:
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
        )
    wall = time.perf_counter() - start
    if args.json:
        print(
            json.dumps(
                {"path": str(res.path), "wall_s": wall, "results": res.config["results"]}, indent=2
            )
        )
    else:
        _print_run_summary(res, wall, Console())
    return 0


def _cmd_inspect(args: argparse.Namespace) -> int:
    rep = inspect_dataset(args.dataset, verify=args.verify)
    if args.html:
        from ..read.loaders import Dataset
        from ..tools.report import render_inspect_html, write_html

        ds = Dataset(args.dataset)
        write_html(args.html, render_inspect_html(rep, ds.manifest, ds.config, ds))
    if args.json:
        print(json.dumps(rep.to_dict(), indent=2, sort_keys=True))
    else:
        _print_inspect(rep, Console())
    return 0 if not rep.verification or rep.verification["valid"] else 1


def _cmd_sample(args: argparse.Namespace) -> int:
    from ..sources.samples import SAMPLES, build_adsb_sources, fetch_wheel

    if args.action == "fetch":
        path = fetch_wheel(SAMPLES["traffic"])
        print(path)
    else:
        for p in build_adsb_sources(args.out, slice_minutes=args.slice_minutes):
            print(p)
    return 0


def _cmd_plugin_check(args: argparse.Namespace) -> int:
    from ..core.plugins import load_plugins

    res = load_plugins(args.module or ())
    for mod in res.modules:
        print(f"module       {mod}: ok")
    for name in res.loaded:
        print(f"entry point  {name}: ok")
    for fail in res.failures:
        print(f"entry point  {fail.name}: FAILED ({fail.value})")
        print(f"--- {fail.name} ({fail.value}) ---\n{fail.traceback}", file=sys.stderr)
    return 1 if res.failures else 0


def _cmd_schema(args: argparse.Namespace) -> int:
    from ..core.config import json_schema

    if args.markdown:
        from ..pipeline.config_docs import configuration_markdown

        print(configuration_markdown(), end="")
        return 0
    if args.kind is None:
        args.schema_parser.error("name a KIND, or pass --markdown")
    print(json.dumps(json_schema(args.kind), indent=2, sort_keys=True))
    return 0


def _add_schema(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "kind",
        nargs="?",
        choices=["job", "strategy", "output", "schema", "policy"],
        help="which file: a job, a strategy, an output spec, a schema or a kur check policy",
    )
    p.add_argument(
        "--markdown",
        action="store_true",
        help="print docs/configuration.md (every key of every file) instead",
    )
    p.set_defaults(fn=_cmd_schema, schema_parser=p)


def _add_run(p: argparse.ArgumentParser) -> None:
    p.add_argument("job", help="job JSON file")
    p.add_argument(
        "--out", help="output directory or s3://, gs://, az:// URL (default runs/<job name>)"
    )
    p.add_argument("--force", action="store_true", help="replace an existing dataset")
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue an interrupted run (or repeat one), reusing shards whose checksums match",
    )
    p.add_argument(
        "--workers", type=int, default=None, help="scoring processes (default: the job's)"
    )
    p.add_argument(
        "--streaming",
        action="store_true",
        help="read each (time-ordered) source lazily in two passes; same artifact, bounded memory",
    )
    p.add_argument(
        "--memory-budget",
        type=byte_size,
        default=None,
        metavar="SIZE",
        help="fail before reading when the plan's estimated peak exceeds SIZE (2GB, 512MiB)",
    )
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.set_defaults(fn=_cmd_run)


def _add_inspect(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "dataset",
        help="dataset directory, its dataset_manifest.json, or a URL (s3://, gs://, az://)",
    )
    p.add_argument("--verify", action="store_true", help="read and check every shard")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--html", metavar="FILE", help="write a self-contained HTML report with plots")
    p.set_defaults(fn=_cmd_inspect)


def _cmd_init(args: argparse.Namespace) -> int:
    from ..pipeline.init import init_job

    res = init_job(
        args.inputs,
        args.out,
        units=args.units,
        fraction=args.fraction,
        name=args.name,
        time_column=args.time,
        entity_column=args.entity,
        registries=args.registry,
        force=args.force,
    )
    for line in res.lines:
        print(line)
    return 0


def _add_init(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "inputs", nargs="+", metavar="PATH", help="CSV/Parquet files or one timenet:// reference"
    )
    p.add_argument("--out", required=True, help="job folder to write")
    p.add_argument("--units", metavar="FILE", help="hint file: JSON object of column to pint unit")
    p.add_argument(
        "--fraction", type=float, default=0.5, help="share of the data's hours to budget (0.5)"
    )
    p.add_argument("--name", help="dataset (job) name; default the folder's name")
    p.add_argument("--time", help="time column (default: detected)")
    p.add_argument("--entity", help="entity column (default: detected)")
    p.add_argument("--registry", action="append", help="TimeNet registry (repeatable)")
    p.add_argument("--force", action="store_true", help="replace job files already there")
    p.set_defaults(fn=_cmd_init)


def _add_plugin_check(p: argparse.ArgumentParser) -> None:
    p.add_argument("module", nargs="*", help="explicit plugin modules to import too")
    p.set_defaults(fn=_cmd_plugin_check)


def _add_sample(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=["fetch", "build-sources"])
    p.add_argument(
        "--out", default="runs/adsb-sources", help="where build-sources writes Parquet files"
    )
    p.add_argument("--slice-minutes", type=positive_float, default=15.0)
    p.set_defaults(fn=_cmd_sample)


# every subcommand: how to add its arguments, and its help line
_COMMANDS: dict[str, tuple[Callable[[argparse.ArgumentParser], None], str]] = {
    "run": (_add_run, "run a curation job"),
    "init": (_add_init, "write a starter job folder from CSV/Parquet files or a TimeNet version"),
    "inspect": (_add_inspect, "summarize a curated dataset"),
    "diff": (add_diff, "compare two curated datasets"),
    "check": (add_check, "gate a dataset with a quality policy (exit 2 on failure)"),
    "curate": (add_curate, "select N segments with a strategy"),
    "experiment": (add_experiment, "compare strategies on one scored pool"),
    "explain": (add_explain, "print a job's physical plan without reading data"),
    "operators": (add_operators, "list operators, analyzers and presets"),
    "plugin-check": (_add_plugin_check, "load plugins and print the full error of any that fail"),
    "sample": (_add_sample, "fetch the pinned public ADS-B sample"),
    "schema": (_add_schema, "print the JSON Schema of a job, strategy, output or schema file"),
}


def _parser() -> argparse.ArgumentParser:
    ap = OneLineParser(
        prog="kur", description="Curate multi-entity time series into training shards."
    )
    sub = ap.add_subparsers(dest="command", required=True)
    for name, (add, help_text) in _COMMANDS.items():
        add(sub.add_parser(name, help=help_text))
    return ap


def _dispatch(prog: str, args: argparse.Namespace) -> int:
    with warnings.catch_warnings():
        # our own warnings are messages to the user: one line each, no source excerpt
        default = warnings.showwarning

        def show(message, category, filename, lineno, file=None, line=None):  # type: ignore[no-untyped-def]
            if issubclass(category, KurationWarning):
                print(f"{prog}: warning: {message}", file=sys.stderr)
            else:
                default(message, category, filename, lineno, file, line)

        warnings.showwarning = show
        return run_guarded(prog, lambda: args.fn(args), (KurationError, TimeNetError))


def main(argv: Sequence[str] | None = None) -> int:
    """``kur``: returns the exit status (0 ok, 1 an error, 2 a failed ``kur check`` gate)."""
    return _dispatch("kur", _parser().parse_args(argv))


def _script(command: str) -> Callable[[Sequence[str] | None], int]:
    add, help_text = _COMMANDS[command]

    def entry(argv: Sequence[str] | None = None) -> int:
        ap = OneLineParser(prog=f"kur-{command}", description=help_text)
        add(ap)
        return _dispatch(f"kur-{command}", ap.parse_args(argv))

    entry.__name__ = f"{command.replace('-', '_')}_main"
    entry.__doc__ = f"Console script ``kur-{command}``: the same as ``kur {command}``."
    return entry


run_main = _script("run")
init_main = _script("init")
inspect_main = _script("inspect")
diff_main = _script("diff")
check_main = _script("check")
curate_main = _script("curate")
experiment_main = _script("experiment")
plugin_check_main = _script("plugin-check")
sample_main = _script("sample")
explain_main = _script("explain")


if __name__ == "__main__":
    sys.exit(main())
