"""``kur``: run jobs, inspect datasets, fetch samples.

Exit codes: 0 success, 1 an error (one line ``<prog>: error: ...`` on stderr: a bad
argument, a kuration or TimeNet error, a file-system problem), 2 a failed ``kur check``
gate, 130 Ctrl-C, 141 stdout's reader closed it early (``| head``; one line on stderr).

This module is the parser only: it imports argparse-level modules, and each command's
implementation (``kuration.cli.run``, ``.artifacts``, ``.curate``, ``.explain``, or the
imports inside the small commands below) is imported when that command runs, so ``kur
--help`` and a usage error never load numpy, pyarrow, pydantic or the pipeline
(tests/kuration/cli/test_lazy_cli.py).
"""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import TextIO

from timenet._cli import OneLineParser, run_guarded
from timenet.errors import TimeNetError

from ..errors import KurationError, KurationWarning
from ._args import byte_size, non_negative_int, positive_float, positive_int
from ._epilogs import EPILOGS, HelpFormatter

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


class _Lazy:
    """The command ``kuration.cli.<module>.<name>``, imported when it runs."""

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def resolve(self) -> Callable[[argparse.Namespace], int]:
        """Import the implementation module and return the command function."""
        impl: Callable[[argparse.Namespace], int]
        impl = getattr(importlib.import_module(f"kuration.cli.{self.module}"), self.name)
        return impl

    def __call__(self, args: argparse.Namespace) -> int:
        return int(self.resolve()(args))


def _cmd_sample(args: argparse.Namespace) -> int:
    from ..sources.samples import SAMPLES, build_adsb_sources, fetch_wheel

    if args.action == "fetch":
        path = fetch_wheel(SAMPLES["traffic"])
        print(path)
    else:
        for p in build_adsb_sources(args.out, slice_minutes=args.slice_minutes):
            print(p)
    return 0


def _cmd_export_lerobot(args: argparse.Namespace) -> int:
    from ..tools.lerobot_export import export_lerobot

    info = export_lerobot(args.dataset, args.out, robot_type=args.robot_type)
    print(
        f"wrote LeRobot {info['codebase_version']} dataset {args.out}: "
        f"{info['total_episodes']} episodes, {info['total_frames']} frames at {info['fps']} fps, "
        f"splits {info['splits']}"
    )
    return 0


def _add_export_lerobot(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", help="a curated dataset folder")
    p.add_argument("--out", required=True, help="the LeRobot dataset folder to create")
    p.add_argument("--robot-type", help="info.json robot_type")
    p.set_defaults(fn=_cmd_export_lerobot)


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
    import json

    from ..core.config import json_schema

    if args.markdown:
        from .config_docs import configuration_markdown

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
        "--out",
        help="output directory or s3://, gs://, az:// URL (default: runs/ and the job "
        "file's name less its extension, runs/adsb for adsb.json)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="replace the dataset already there, whatever job made it; it stays "
        "readable until this run publishes, and as it was if the run fails before",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue an interrupted run or repeat the same job, reusing shards whose "
        "checksums match; refused when the committed dataset there is another job's",
    )
    p.add_argument(
        "--workers", type=int, default=None, help="scoring processes (default: the job's)"
    )
    p.add_argument(
        "--executor",
        metavar="NAME",
        default=None,
        help="where the workers run: local, process, ray or a registered executor "
        "(default: the job's; local for one worker, process for more)",
    )
    p.add_argument(
        "--executor-option",
        metavar="KEY=VALUE",
        action="append",
        default=None,
        help="one of the executor's own settings (repeatable; VALUE is read as JSON when it "
        "parses, else as text), e.g. address=ray://host:10001",
    )
    p.add_argument(
        "--ray-address",
        metavar="ADDR",
        default=None,
        help="a running Ray cluster for --executor ray (default: start a local one); "
        "the same as --executor-option address=ADDR",
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
    _pool_arguments(p)
    p.set_defaults(fn=_Lazy("run", "cmd_run"))


def _add_inspect(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "dataset",
        help="dataset directory, its dataset_manifest.json, or a URL (s3://, gs://, az://)",
    )
    p.add_argument("--verify", action="store_true", help="read and check every shard")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--html", metavar="FILE", help="write a self-contained HTML report with plots")
    p.set_defaults(fn=_Lazy("artifacts", "cmd_inspect"))


def _cmd_init(args: argparse.Namespace) -> int:
    from ..onboard.init import init_job

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
        time_unit=args.time_unit,
        duplicates=args.duplicates,
        drop_timeless=args.drop_timeless,
        rate=args.rate,
        time_format=args.time_format,
    )
    for line in res.lines:
        print(line)
    return 0


def _add_init(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "inputs",
        nargs="+",
        metavar="PATH",
        help="CSV, Parquet, GPX, JSON-lines or WFDB (.hea) files, folders of them, or one "
        "timenet:// reference",
    )
    p.add_argument("--out", required=True, help="job folder to write")
    p.add_argument(
        "--units",
        metavar="FILE|JSON",
        help="hint file, or the JSON text itself: an object of column to pint unit",
    )
    p.add_argument(
        "--fraction", type=float, default=0.5, help="share of the data's hours to budget (0.5)"
    )
    p.add_argument("--name", help="dataset (job) name; default the folder's name")
    p.add_argument("--time", help="time column (default: detected)")
    p.add_argument(
        "--time-unit",
        choices=("s", "ms", "us", "ns"),
        help="unit of a numeric time column (default: from its name, else its magnitude)",
    )
    p.add_argument(
        "--time-format",
        metavar="FORMAT",
        help="strptime format of a text time column, e.g. '%%Y-%%m-%%d %%H:%%M:%%S.%%f%%z' "
        "(default: the first common format that reads every value)",
    )
    p.add_argument(
        "--duplicates",
        choices=("retime", "first", "last"),
        help="rows that repeat a time of their entity: re-time them by row order, or keep one",
    )
    p.add_argument(
        "--rate",
        type=float,
        metavar="HZ",
        help="sample rate of files (default: 1 / the mean step over gap-free runs of one "
        "entity, in as few digits as drift under a twentieth of a step)",
    )
    p.add_argument(
        "--drop-timeless",
        action="store_true",
        help="drop rows without a time (the run counts them) instead of stopping",
    )
    p.add_argument("--entity", help="entity column (default: detected)")
    p.add_argument("--registry", action="append", help="TimeNet registry (repeatable)")
    p.add_argument(
        "--force",
        action="store_true",
        help="replace job files already there, or write them into or inside a dataset folder",
    )
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


def _add_diff(p: argparse.ArgumentParser) -> None:
    p.add_argument("left", help="a dataset directory or URL (s3://, gs://, az://)")
    p.add_argument("right", help="another dataset directory or URL")
    p.add_argument("--verify", action="store_true", help="also verify every shard of both")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--html", metavar="FILE", help="write a self-contained HTML comparison")
    p.set_defaults(fn=_Lazy("artifacts", "cmd_diff"))


def _add_check(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", help="a dataset directory or URL (s3://, gs://, az://)")
    p.add_argument(
        "--policy",
        required=True,
        metavar="FILE|JSON",
        help="quality policy: a JSON file, or the JSON object itself (gates below)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(fn=_Lazy("artifacts", "cmd_check"))


def _count_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("job", help="job JSON file (schema, adapter, sources, segmenter)")
    p.add_argument("--n", type=non_negative_int, required=True, help="segments to select")
    p.add_argument(
        "--seed", type=non_negative_int, default=None, help="selection seed (default: the job's)"
    )
    p.add_argument(
        "--workers", type=positive_int, default=None, help="scoring processes (default: the job's)"
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")


def _add_curate(p: argparse.ArgumentParser) -> None:
    _count_arguments(p)
    p.add_argument("--strategy", help="strategy JSON file (default: the job's strategy)")
    _pool_arguments(p)
    p.set_defaults(fn=_Lazy("curate", "cmd_curate"))


def _pool_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--pool",
        choices=("memory", "disk"),
        default=None,
        help="disk: keep the scored pool in checkpointed Arrow partitions and a DuckDB "
        "index (default: the job's pool)",
    )
    p.add_argument(
        "--checkpoint-dir",
        default=None,
        help="where the disk pool keeps its checkpoints, reused by a rerun over unchanged "
        "inputs (default: the job's checkpoint_dir, else a temporary directory; for "
        "kur run, the destination's staging area, kept until the commit for --resume)",
    )


def _add_experiment(p: argparse.ArgumentParser) -> None:
    _count_arguments(p)
    p.add_argument(
        "--strategy",
        action="append",
        required=True,
        help="a strategy JSON file; repeat for each strategy to compare",
    )
    p.set_defaults(fn=_Lazy("curate", "cmd_experiment"))


def _add_explain(p: argparse.ArgumentParser) -> None:
    p.add_argument("job", help="job JSON file")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.add_argument("--n", type=int, default=None, help="plan a count selection of N segments")
    p.set_defaults(fn=_Lazy("explain", "cmd_explain"))


def _add_operators(p: argparse.ArgumentParser) -> None:
    p.add_argument("--markdown", action="store_true", help="print docs/operators.md")
    p.add_argument("--all", action="store_true", help="include plugins' operators")
    p.set_defaults(fn=_Lazy("explain", "cmd_operators"))


# every subcommand: how to add its arguments, and its help line
_COMMANDS: dict[str, tuple[Callable[[argparse.ArgumentParser], None], str]] = {
    "run": (_add_run, "run a curation job"),
    "init": (_add_init, "write a starter job folder from CSV/Parquet files or a TimeNet version"),
    "inspect": (_add_inspect, "summarize a curated dataset"),
    "diff": (_add_diff, "compare two curated datasets"),
    "export-lerobot": (_add_export_lerobot, "write a curated dataset as a LeRobot v3 dataset"),
    "check": (_add_check, "gate a dataset with a quality policy (exit 2 on failure)"),
    "curate": (_add_curate, "select N segments with a strategy"),
    "experiment": (_add_experiment, "compare strategies on one scored pool"),
    "explain": (_add_explain, "print a job's physical plan without reading data"),
    "operators": (_add_operators, "list operators, analyzers and presets"),
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
        add(
            sub.add_parser(
                name, help=help_text, epilog=EPILOGS.get(name), formatter_class=HelpFormatter
            )
        )
    return ap


def _dispatch(prog: str, args: argparse.Namespace) -> int:
    with warnings.catch_warnings():
        # our own warnings are messages to the user: one line each, no source excerpt, and
        # each line once a command: a source read again (a filter's reread) warns again, and
        # Python's once-per-place registry does not stop it (any catch_warnings block resets
        # the registry; a worker's relayed warnings are replayed without one)
        default = warnings.showwarning
        shown: set[str] = set()

        def show(
            message: Warning | str,
            category: type[Warning],
            filename: str,
            lineno: int,
            file: TextIO | None = None,
            line: str | None = None,
        ) -> None:
            if issubclass(category, KurationWarning):
                text = f"{prog}: warning: {message}"
                if text not in shown:
                    shown.add(text)
                    print(text, file=sys.stderr)
            else:
                default(message, category, filename, lineno, file, line)

        warnings.showwarning = show
        # a KurationWarning raised is one the user's filters made an error (PYTHONWARNINGS)
        user = (KurationError, TimeNetError, KurationWarning)
        return run_guarded(prog, lambda: args.fn(args), user)


def main(argv: Sequence[str] | None = None) -> int:
    """``kur``: returns the exit status (0 ok, 1 an error, 2 a failed ``kur check`` gate,
    130 Ctrl-C, 141 stdout closed early by its reader)."""
    return _dispatch("kur", _parser().parse_args(argv))


def _script(command: str) -> Callable[[Sequence[str] | None], int]:
    add, help_text = _COMMANDS[command]

    def entry(argv: Sequence[str] | None = None) -> int:
        ap = OneLineParser(
            prog=f"kur-{command}",
            description=help_text,
            epilog=EPILOGS.get(command),
            formatter_class=HelpFormatter,
        )
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
