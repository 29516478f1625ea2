"""``timenet`` command line: list, info and download over the configured registries.

Registries come from repeated ``--registry`` options, else ``$TIMENET_REGISTRY``
(colon-separated), else ``~/.cache/timenet/registry``.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence

from timenet._cli import OneLineParser, run_guarded
from timenet.client import TimeNet
from timenet.errors import RegistryError, TimeNetError

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="timenet", description="Browse and fetch TimeF datasets.")
    sub = p.add_subparsers(dest="command", required=True)

    def add(name: str, help_text: str) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help_text)
        sp.add_argument(
            "--registry",
            action="append",
            metavar="DIR_OR_URL",
            help="registry to search (repeatable, in order)",
        )
        return sp

    add("list", "list datasets and their versions")
    info = add("info", "show the card, counts and schema of a version")
    info.add_argument("ref", help="org/name or org/name@version")
    info.add_argument("--json", action="store_true", help="print the whole manifest as JSON")
    dl = add("download", "copy a verified version into a local registry directory")
    dl.add_argument("ref", help="org/name or org/name@version")
    dl.add_argument("dest", help="destination registry root")
    return p


def _check_registries(registries: Sequence[str] | None) -> None:
    """A registry named on the command line must exist (the default one may not yet)."""
    for r in registries or ():
        path = r.removeprefix("file://")
        if "://" in path:
            continue
        if not os.path.isdir(path):
            what = "is not a directory" if os.path.exists(path) else "does not exist"
            raise RegistryError(r, f"{what} (--registry)")


def _run(args: argparse.Namespace) -> int:
    _check_registries(args.registry)
    client = TimeNet(args.registry)
    if args.command == "list":
        rows = client.list()
        for row in rows:
            print(f"{row.org}/{row.name}\t{', '.join(row.versions)}\t{row.registry}")
        if not rows:
            print("no datasets found in: " + ", ".join(r.url for r in client.registries))
    elif args.command == "info":
        m = client.info(args.ref)
        if args.json:
            print(m.to_json())
        else:
            c = m.card
            print(f"{m.ref}  license={c.license}  access={c.access.level}")
            if c.description:
                print(c.description)
            if c.parents:
                print("parents: " + ", ".join(c.parents))
            print(json.dumps(m.counts.model_dump()))
            for s in m.dataset_schema.signals:
                shape = "x".join(map(str, s.shape)) or "scalar"
                rates = ",".join(f"{r:g}" for r in s.rates_hz) or "-"
                extra = " irregular" if s.irregular else ""
                print(
                    f"  {s.name}: {s.dtype} {shape} [{s.unit or '1'}] "
                    f"rates_hz={rates}{extra} {s.storage} n={s.count}"
                )
    else:
        path = client.download(args.ref, args.dest)
        print(path)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit status (0 ok, 1 an error, printed on one line)."""
    args = _parser().parse_args(argv)
    return run_guarded("timenet", lambda: _run(args), (TimeNetError,))


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
