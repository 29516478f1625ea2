"""The layering is a test: import-linter's contracts (pyproject.toml) hold, catch a forbidden
import, and no module import circle exists in src/."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PACKAGES = ("kuration", "timenet", "timenet_connectors")
LINT_IMPORTS = str(Path(sys.executable).with_name("lint-imports"))


def _lint_imports(config: Path, cwd: Path, pythonpath: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    return subprocess.run(
        [LINT_IMPORTS, "--no-cache", "--no-logo", str(config)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_import_contracts_hold() -> None:
    proc = _lint_imports(ROOT / "pyproject.toml", ROOT, SRC)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


@pytest.mark.parametrize(
    ("module", "line", "contract", "chain"),
    [
        (
            "kuration/selection/binning.py",
            "from ..metrics.features import FeatureEngine",
            "selection never imports the metric DSL (it reads features by name)",
            "kuration.selection.binning -> kuration.metrics.features",
        ),
        (
            "kuration/contracts/tick.py",
            "from ..sources.base import InputAdapter",
            "the contracts never import sources (adapters) or connectors",
            "kuration.contracts.tick -> kuration.sources.base",
        ),
        (
            "kuration/output/spec.py",
            "from ..pipeline.spec.job import load_job",
            "kuration stages: imports point down the pipeline",
            "kuration.output.spec -> kuration.pipeline.spec.job",
        ),
        (
            "timenet/models.py",
            "import kuration.errors",
            "timenet never imports kuration or timenet_connectors",
            "timenet.models -> kuration.errors",
        ),
        (
            "timenet/client.py",
            "from timenet.build import auto_build",
            "timenet's client never imports its build engine (a hook finds it)",
            "timenet.client -> timenet.build",
        ),
    ],
)
def test_a_forbidden_import_is_caught(
    tmp_path: Path, module: str, line: str, contract: str, chain: str
) -> None:
    # a copy of src/ with one deliberate forbidden import, checked with the real config
    tree = tmp_path / "src"
    for pkg in PACKAGES:
        shutil.copytree(SRC / pkg, tree / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    target = tree / module
    target.write_text(target.read_text() + f"\n{line}  # deliberate\n")
    config = tmp_path / "pyproject.toml"
    shutil.copy(ROOT / "pyproject.toml", config)
    proc = _lint_imports(config, tmp_path, tree)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert f"{contract} BROKEN" in out
    assert chain in out


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph.modules):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.find_modules_directly_imported_by(start))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append(
                        (child, iter(sorted(graph.find_modules_directly_imported_by(child))))
                    )
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


@pytest.mark.parametrize("type_only", [False, True], ids=["runtime-imports", "with-type-only"])
def test_no_import_circle_between_modules(type_only: bool) -> None:
    # grimp counts imports inside functions; with type_only it counts those under
    # TYPE_CHECKING too, so a circle cannot hide behind a lazy or an annotation-only import
    graph = grimp.build_graph(
        *PACKAGES, cache_dir=None, exclude_type_checking_imports=not type_only
    )
    assert _cycles(graph) == []


def test_function_and_type_only_imports_are_counted(tmp_path: Path) -> None:
    # the circle check above is only as good as the graph: both kinds of hidden import are edges
    pkg = tmp_path / "circ"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from circ import b\n")
    (pkg / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from circ import a\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        graph = grimp.build_graph("circ", cache_dir=None, exclude_type_checking_imports=False)
    finally:
        sys.path.remove(str(tmp_path))
    assert _cycles(graph) == [["circ.a", "circ.b"]]


def test_the_cycle_finder_finds_a_circle() -> None:
    graph = grimp.ImportGraph()
    for name in ("p", "p.a", "p.b", "p.c"):
        graph.add_module(name)
    graph.add_import(importer="p.a", imported="p.b")
    graph.add_import(importer="p.b", imported="p.c")
    graph.add_import(importer="p.c", imported="p.a")
    assert _cycles(graph) == [["p.a", "p.b", "p.c"]]


def test_no_module_over_800_lines() -> None:
    long = {
        str(p.relative_to(SRC)): n
        for p in sorted(SRC.rglob("*.py"))
        if (n := len(p.read_text().splitlines())) > 800
    }
    assert long == {}


@pytest.mark.parametrize(
    ("statement", "prefix"),
    [("import kuration", "timenet.build"), ("import timenet; timenet.TimeNet", "timenet.build")],
)
def test_import_loads_no_timenet_build_code(statement: str, prefix: str) -> None:
    code = f"{statement}; import sys; print(sorted(m for m in sys.modules if m.startswith({prefix!r})))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"
