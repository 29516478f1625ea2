"""``timenet-build``: build datasets from installed connectors, list the connectors.

::

    timenet-build build org/name[@version] [--registry DIR] [--fetch-from PATH] [--cache-dir DIR]
    timenet-build list

The registry defaults to the first local entry of ``$TIMENET_REGISTRY`` or
``~/.cache/timenet/registry``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

from timenet._cli import OneLineParser, run_guarded
from timenet.errors import TimeNetError

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="timenet-build", description="Build TimeF datasets from installed connectors."
    )
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="build one dataset version into a local registry")
    b.add_argument("ref", help="org/name or org/name@version")
    b.add_argument("--registry", metavar="DIR", help="local registry directory (output)")
    b.add_argument(
        "--fetch-from",
        metavar="PATH",
        help="your own copies: pinned raw files, or a registry holding parent releases",
    )
    b.add_argument("--cache-dir", metavar="DIR", help="download cache for pinned files")
    b.add_argument("--json", action="store_true", help="print the result as JSON")
    sub.add_parser("list", help="list installed connectors")
    return p


def _default_registry() -> str:
    from timenet.registry import default_registries

    for r in default_registries():
        if "://" not in r:  # a URL, file:// included, is read-only
            return r
    raise TimeNetError("no writable local registry configured: pass --registry DIR")


def _run(args: argparse.Namespace) -> int:
    if args.command == "list":
        from timenet.build.discovery import available

        for cls in available().values():
            info = cls().describe()
            parents = f"  parents={','.join(info['parents'])}" if info["parents"] else ""
            print(f"{info['ref']}\tlicense={info['license']}{parents}")
        return 0
    from timenet.build.engine import build

    res = build(
        args.ref,
        args.registry or _default_registry(),
        fetch_from=args.fetch_from,
        cache_dir=args.cache_dir,
    )
    if args.json:
        print(
            json.dumps(
                {
                    "ref": res.ref,
                    "path": str(res.path),
                    "built": res.built,
                    "seconds": round(res.seconds, 3),
                    "counts": res.manifest.counts.model_dump(),
                    "bytes": sum(f.size for f in res.manifest.files),
                    "stats": res.stats,
                }
            )
        )
    else:
        verb = "built" if res.built else "already present (verified)"
        c = res.manifest.counts
        print(
            f"{res.ref} {verb}: {res.path}\n  records={c.records} signals={c.signals} "
            f"samples={c.samples} annotations={c.annotations} tasks={c.tasks} "
            f"bytes={sum(f.size for f in res.manifest.files)} in {res.seconds:.1f}s"
        )
        for k, v in sorted(res.stats.items()):
            print(f"  {k}: {v}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (0 ok, 1 an error, printed on one line)."""
    args = _parser().parse_args(argv)
    return run_guarded("timenet-build", lambda: _run(args), (TimeNetError,))


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
