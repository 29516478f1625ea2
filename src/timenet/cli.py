"""``timenet`` command line: list, info, query, accept, download and publish.

Registries come from repeated ``--registry`` options, else ``$TIMENET_REGISTRY``
(colon-separated), else ``~/.cache/timenet/registry``. ``--storage-options``
takes the fsspec options of remote registries as one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from typing import Any

from timenet._cli import OneLineParser, run_guarded
from timenet._jsonio import loads_strict
from timenet.client import TimeNet
from timenet.errors import DocumentError, RegistryError, TimeNetError
from timenet.publish import publish

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
        sp.add_argument(
            "--storage-options",
            metavar="JSON",
            help="fsspec options of remote registries, one JSON object",
        )
        return sp

    add("list", "list datasets and their versions")
    info = add("info", "show the card, access, counts and schema of a version")
    info.add_argument("ref", help="org/name or org/name@version")
    info.add_argument("--json", action="store_true", help="print the whole manifest as JSON")
    q = add("query", "run one read-only SQL SELECT over a version's catalog")
    q.add_argument("ref", help="org/name or org/name@version")
    q.add_argument("sql", help="tables: records, signals, annotations, tasks, lineage")
    q.add_argument("--json", action="store_true", help="one JSON object per row")
    acc = add("accept", "accept the access terms of a version (recorded for this user)")
    acc.add_argument("ref", help="org/name or org/name@version")
    dl = add("download", "copy a verified version into a local registry directory")
    dl.add_argument("ref", help="org/name or org/name@version")
    dl.add_argument("dest", help="destination registry root")
    pub = add("publish", "upload a committed local version to a registry URL")
    pub.add_argument("version_dir", help="a committed version directory <root>/<org>/<name>/<v>")
    pub.add_argument("url", help="registry root URL, e.g. s3://bucket/prefix")
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


def _storage_options(text: str | None) -> dict[str, Any]:
    if text is None:
        return {}
    opts = loads_strict(text, what="--storage-options")
    if not isinstance(opts, dict):
        raise DocumentError("--storage-options", "must be a JSON object")
    return opts


def _info(client: TimeNet, ref: str, as_json: bool) -> None:
    handle = client.resolve(ref)
    m = handle.manifest
    if as_json:
        print(m.to_json())
        return
    c = m.card
    access = m.effective_access
    print(f"{m.ref}  license={c.license}  access={access.level}")
    if c.description:
        print(c.description)
    if c.parents:
        print("parents: " + ", ".join(c.parents))
    if access.requires_acceptance:
        state = "accepted" if client.terms_accepted(handle) else "not accepted"
        print(f"terms ({state}): {access.terms}")
        if access.url:
            print(f"access: {access.url}")
    print(json.dumps(m.counts.model_dump()))
    for s in m.dataset_schema.signals:
        shape = "x".join(map(str, s.shape)) or "scalar"
        rates = ",".join(f"{r:g}" for r in s.rates_hz) or "-"
        extra = " irregular" if s.irregular else ""
        print(
            f"  {s.name}: {s.dtype} {shape} [{s.unit or '1'}] "
            f"rates_hz={rates}{extra} {s.storage} n={s.count}"
        )


def _query(client: TimeNet, ref: str, sql: str, as_json: bool) -> None:
    with client.open(ref) as reader:
        table = reader.query(sql)
    if as_json:
        for row in table.to_pylist():
            print(json.dumps(row, default=str))
        return
    print("\t".join(table.column_names))
    for row in table.to_pylist():
        print("\t".join("" if v is None else str(v) for v in row.values()))


def _run(args: argparse.Namespace) -> int:
    opts = _storage_options(args.storage_options)
    if args.command == "publish":
        print(publish(args.version_dir, args.url, storage_options=opts))
        return 0
    _check_registries(args.registry)
    client = TimeNet(args.registry, storage_options=opts)
    if args.command == "list":
        rows = client.list()
        for row in rows:
            print(f"{row.org}/{row.name}\t{', '.join(row.versions)}\t{row.registry}")
        if not rows:
            print("no datasets found in: " + ", ".join(r.url for r in client.registries))
    elif args.command == "info":
        _info(client, args.ref, args.json)
    elif args.command == "query":
        _query(client, args.ref, args.sql, args.json)
    elif args.command == "accept":
        access = client.accept_terms(args.ref)
        if access.requires_acceptance:
            print(f"accepted ({access.level}): {access.terms}")
            print(f"recorded in {client.terms.path}")
        else:
            print(f"{args.ref} is open: there are no terms to accept")
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
