"""``kur explain`` and ``kur operators``: the plan and the operator catalogue, from the CLI.

::

    kur explain JOB.json [--json] [--n N]
    kur operators [--markdown] [--all]

``explain`` compiles the job into a :class:`~kuration.Pipeline` and prints
its :class:`~kuration.PhysicalPlan` as a tree (``--json``: as JSON) without
resolving, fetching or reading any source; ``--n`` plans the count path
(``kur curate``) instead of the job's hours budget.  ``operators`` lists
every built-in operator, analyzer and output preset (``--all``: plugins'
too); ``--markdown`` prints ``docs/operators.md``.
"""

from __future__ import annotations

import argparse
import json

from rich.console import Console
from rich.table import Table

from ..pipeline.operators import get_operator, operators_markdown, registered_operators
from ..pipeline.pipeline import Pipeline

__all__ = ["add_explain", "add_operators"]


def _cmd_explain(args: argparse.Namespace) -> int:
    p = Pipeline.from_job(args.job)
    if args.n is not None:
        p = p.select(args.n)
    plan = p.explain()
    if args.json:
        print(json.dumps(plan.to_dict(), indent=2, sort_keys=True))
    else:
        Console().print(plan.tree())
    return 0


def _cmd_operators(args: argparse.Namespace) -> int:
    if args.markdown:
        print(operators_markdown(builtin_only=not args.all), end="")
        return 0
    t = Table(title="operators")
    for col in ("name", "kind", "parameters", "description"):
        t.add_column(col)
    for name in registered_operators():
        op = get_operator(name)
        if op.builtin or args.all or op.kind == "operator":
            t.add_row(name, op.kind, ", ".join(op.params), op.doc)
    Console().print(t)
    return 0


def add_explain(p: argparse.ArgumentParser) -> None:
    p.add_argument("job", help="job JSON file")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.add_argument("--n", type=int, default=None, help="plan a count selection of N segments")
    p.set_defaults(fn=_cmd_explain)


def add_operators(p: argparse.ArgumentParser) -> None:
    p.add_argument("--markdown", action="store_true", help="print docs/operators.md")
    p.add_argument("--all", action="store_true", help="include plugins' operators")
    p.set_defaults(fn=_cmd_operators)
