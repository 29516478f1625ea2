"""Run a few module-level functions in parallel worker processes that never import ``__main__``.

``multiprocessing``'s spawn start method re-imports the main module in every
worker. A plain script without an ``if __name__ == "__main__":`` guard that
builds a dataset (directly, through ``auto_build`` or a job) then runs its own
top-level code again in the worker, which starts the build again and dies with
"An attempt has been made to start a new process before the current process
has finished its bootstrapping phase". A connector that parses in parallel
uses :func:`run_parallel` instead: each call runs in ``python -m
timenet.build.workers``, which imports only the function's module, so the
caller's script needs no guard (and a notebook or ``python -c`` works too).

Arguments and results travel as pickles in a private temporary directory.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable, Sequence
from importlib import import_module
from pathlib import Path
from typing import Any

from timenet.build.errors import BuildError

__all__ = ["run_parallel"]


def _target(fn: Callable[..., Any]) -> tuple[str, str]:
    """``(module, qualified name)`` of a module-level function, refused otherwise."""
    module, name = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    if not module or module == "__main__" or "<locals>" in name:
        raise BuildError(
            f"run_parallel needs a function importable by name, not {fn!r} "
            "(define it at module level in an importable module)"
        )
    return module, name


def run_parallel(
    calls: Sequence[tuple[Callable[..., Any], tuple[Any, ...]]], *, what: str
) -> list[Any]:
    """Run ``fn(*args)`` for every call, each in its own worker process, all at once.

    Parameters
    ----------
    calls : sequence of (function, args)
        Module-level functions (importable by ``module.qualname``) and their
        positional arguments; both arguments and results must pickle.
    what : str
        What is being run, for error messages.

    Returns
    -------
    list
        The results, in the order of ``calls``.

    Raises
    ------
    BuildError
        If a worker fails; the message names ``what``, the function and the
        worker's error (its last traceback line).
    """
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    with tempfile.TemporaryDirectory(prefix="timenet-workers-") as tmp:
        procs = []
        for i, (fn, args) in enumerate(calls):
            inp, out = Path(tmp) / f"in-{i}.pkl", Path(tmp) / f"out-{i}.pkl"
            inp.write_bytes(pickle.dumps((*_target(fn), tuple(args), list(sys.path))))
            cmd = [sys.executable, "-m", "timenet.build.workers", str(inp), str(out)]
            proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            procs.append((fn, proc, out))
        results = []
        for fn, proc, out in procs:
            _, err = proc.communicate()
            if proc.returncode != 0 or not out.is_file():
                lines = err.decode("utf-8", "replace").strip().splitlines() or ["(no output)"]
                raise BuildError(
                    f"{what}: worker running {fn.__module__}.{fn.__qualname__} failed "
                    f"(exit {proc.returncode}): {lines[-1]}"
                )
            results.append(pickle.loads(out.read_bytes()))
        return results


def _worker(inp: str, out: str) -> int:
    """The worker's entry point: run one pickled call, pickle its result."""
    module, name, args, path = pickle.loads(Path(inp).read_bytes())
    sys.path[:] = path
    try:
        fn: Any = import_module(module)
        for part in name.split("."):
            fn = getattr(fn, part)
        result = fn(*args)
    except BaseException:
        traceback.print_exc()
        return 1
    Path(out).write_bytes(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
    return 0


if __name__ == "__main__":
    raise SystemExit(_worker(sys.argv[1], sys.argv[2]))
