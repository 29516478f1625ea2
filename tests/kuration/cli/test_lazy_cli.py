"""``kur --help``, every subcommand's ``--help`` and a usage error load only the parser:
no numpy, pyarrow, DuckDB, pydantic, pint, rich, TimeNet's client or kuration's stages.
One exception: ``kur check --help`` lists the policy's gates from the policy model, so it
loads that model (``kuration.core.config``, pydantic) and nothing else.

Each check runs in a fresh interpreter and reads ``sys.modules`` afterwards, so it fails
when an eager import comes back, whatever the machine's speed (``bench/bench_startup.py``
measures the time).
"""

from __future__ import annotations

import json
import subprocess
import sys

from kuration.cli import main as cli_main

# top-level packages, and kuration/timenet submodules, that the parser must not load
HEAVY = (
    "numpy",
    "pyarrow",
    "duckdb",
    "torch",
    "pydantic",
    "pint",
    "rich",
    "scipy",
    "pandas",
    "timenet.client",
    "timenet.models",
    "timenet.reader",
    "kuration.core.config",
    "kuration.pipeline",
    "kuration.metrics",
    "kuration.output",
    "kuration.read",
    "kuration.selection",
    "kuration.sources",
    "kuration.tools",
)

# run argv lists through one entry point, then print which HEAVY modules are loaded
_PROBE = """
import json, sys
from kuration.cli import main as m
for entry, argv in json.loads(sys.argv[1]):
    try:
        getattr(m, entry)(argv)
    except SystemExit:
        pass
heavy = json.loads(sys.argv[2])
print(json.dumps(sorted(n for n in sys.modules if n in heavy or n.split(".")[0] in heavy
                        or any(n.startswith(h + ".") for h in heavy))))
"""


def loaded_after(calls: list[tuple[str, list[str]]]) -> list[str]:
    """The HEAVY modules a fresh interpreter has loaded after running ``calls``."""
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(calls), json.dumps(HEAVY)],
        capture_output=True,
        text=True,
        check=True,
    )
    return list(json.loads(out.stdout.splitlines()[-1]))


def _help_calls(names: list[str]) -> list[tuple[str, list[str]]]:
    """``kur NAME --help`` and ``kur-NAME --help`` (where that script exists) for each name."""
    calls = [("main", [name, "--help"]) for name in names]
    calls += [
        (f"{name.replace('-', '_')}_main", ["--help"])
        for name in names
        if hasattr(cli_main, f"{name.replace('-', '_')}_main")
    ]
    return calls


def test_help_and_usage_errors_load_only_the_parser() -> None:
    calls = [("main", ["--help"]), ("main", ["bogus"]), ("main", ["run", "job.json", "--bogus"])]
    calls += [("main", ["check", "dataset"]), ("check_main", ["dataset", "--bogus"])]
    calls += _help_calls([name for name in cli_main._COMMANDS if name != "check"])
    assert loaded_after(calls) == []


def test_check_help_loads_only_the_policy_model() -> None:
    loaded = loaded_after(_help_calls(["check"]))
    assert "kuration.core.config" in loaded
    assert [
        n for n in loaded if n != "kuration.core.config" and n.split(".")[0] != "pydantic"
    ] == []


def test_the_probe_sees_a_command_load_its_implementation() -> None:
    """The same probe, running a command: the check above can fail."""
    loaded = loaded_after([("main", ["schema", "job"])])
    assert "pydantic" in loaded and "kuration.core.config" in loaded


def test_every_lazy_command_resolves_to_its_function() -> None:
    parser = cli_main._parser()
    sub = next(a for a in parser._actions if isinstance(a, cli_main.argparse._SubParsersAction))
    lazy = {}
    for name, p in sub.choices.items():
        fn = p.get_default("fn")
        assert callable(fn), name
        if isinstance(fn, cli_main._Lazy):
            lazy[name] = fn
            impl = fn.resolve()
            assert callable(impl) and impl.__name__ == fn.name, name
    # run, inspect, diff, check, curate, experiment, explain, operators
    assert len(lazy) == 8, sorted(lazy)


# what only some metrics call: scipy submodules (~0.5 s to import; the robot metrics) and
# pymap3d (geodetic positions)
_METRIC_ONLY = ("pymap3d", "scipy.signal", "scipy.stats", "scipy.ndimage")

_IMPORT_PROBE = """
import json, sys
for stmt in json.loads(sys.argv[1]):
    exec(stmt)
print(json.dumps(sorted(n for n in json.loads(sys.argv[2]) if n in sys.modules)))
"""


def metric_only_loaded_after(statements: list[str]) -> list[str]:
    """Which of ``_METRIC_ONLY`` a fresh interpreter has loaded after running ``statements``."""
    out = subprocess.run(
        [sys.executable, "-c", _IMPORT_PROBE, json.dumps(statements), json.dumps(_METRIC_ONLY)],
        capture_output=True,
        text=True,
        check=True,
    )
    return list(json.loads(out.stdout.splitlines()[-1]))


def test_kur_run_imports_leave_scipy_signal_stats_ndimage_pymap3d_unloaded() -> None:
    """``kur run``'s import path (every stage a run may use) stays off the scipy
    submodules that only the robot metrics call, and off pymap3d."""
    assert metric_only_loaded_after(["import kuration.cli.run"]) == []


def test_the_probe_sees_robot_and_geodetic_metrics_load_them() -> None:
    """The same probe after robot metrics and a geodetic kernel run: the check above can fail."""
    loaded = metric_only_loaded_after(
        [
            "import kuration.cli.run",
            "import numpy as np",
            "from kuration.metrics import robot",
            "robot.hampel_z(np.arange(12.0).reshape(6, 2))",
            "robot.action_state_lag(np.random.default_rng(0).random((20, 2)),"
            " np.random.default_rng(1).random((20, 2)), 3)",
            "from kuration.metrics.dsl import kernels",
            "kernels.heading(np.zeros((3, 1, 3)), np.zeros((3, 1, 2)))",
        ]
    )
    assert loaded == ["pymap3d", "scipy.ndimage", "scipy.signal", "scipy.stats"]
