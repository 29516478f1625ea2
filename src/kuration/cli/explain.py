"""``kur explain`` and ``kur operators``: the plan and the operator catalogue, from the CLI.

::

    kur explain JOB.json [--json] [--n N]
    kur operators [--markdown] [--all]

``explain`` compiles the job into a :class:`~kuration.Pipeline` and prints
its :class:`~kuration.pipeline.spec.plan.PhysicalPlan` as a tree (``--json``: as JSON) without
resolving, fetching or reading any source; ``--n`` plans the count path
(``kur curate``) instead of the job's hours budget.  ``operators`` lists
every built-in operator, analyzer and output preset (``--all``: plugins'
too); ``--markdown`` prints ``docs/operators.md``.  The parsers live in
:mod:`kuration.cli.main`; this module is imported only when a command runs.
"""

from __future__ import annotations

import argparse
import json

from rich.table import Table

from ..pipeline.api.operators import get_operator, operators_markdown, registered_operators
from ..pipeline.api.pipeline import Pipeline
from ._console import ReportConsole

__all__ = ["cmd_explain", "cmd_operators"]


def cmd_explain(args: argparse.Namespace) -> int:
    """``kur explain JOB [--json] [--n N]``."""
    p = Pipeline.from_job(args.job)
    if args.n is not None:
        p = p.select(args.n)
    plan = p.explain()
    if args.json:
        print(json.dumps(plan.to_dict(), indent=2, sort_keys=True))
    else:
        ReportConsole().print(plan.tree())
    return 0


def cmd_operators(args: argparse.Namespace) -> int:
    """``kur operators [--markdown] [--all]``."""
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
    ReportConsole().print(t)
    return 0
